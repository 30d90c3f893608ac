"""TIFA v1.0 benchmark of text-to-image models: data (``data``), image generation with diffusers (``generate``),
scoring through the runner with the TIFA scorer (``scoring``), Table 4 numbers (``results``) and the report
(``leaderboard``). Import the submodule you need; nothing heavy is imported here."""
