"""The submission wing of the TS2 layer: :mod:`~scorers.ts2.submission.folder` (write and verify a leaderboard
submission folder), :mod:`~scorers.ts2.submission.rescore` (``ts2 submit --verify --rescore N``) and
:mod:`~scorers.ts2.submission.hub` (every Hub read and write of a submission: the pull request of
``ts2 submit --push``, the leaderboard's download at a pinned revision)."""
