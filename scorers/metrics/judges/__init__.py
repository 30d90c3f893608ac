"""Judge metrics (the "caption/judge" family of TS2 Table 2): a VLM or LLM writes a rating and its rationale.

* ``viescore`` -- VIEScore (Ku et al., 2023): a VLM rates semantic consistency 0-10; score = SC / 10.
* ``llmscore`` -- LLMScore (Lu et al., 2023): a VLM describes the image (global + objects), a text LLM compares the
  descriptions with the prompt: error count (lower is better) and an overall 1-100 rating.
* ``parsing`` -- reading ratings out of messy replies (JSON, code fences, "Score: 7/10", the paper's line format).

Rules only (prompts, parsers, score formulas): models come in as backends (``scorers.models``), local or served.
"""
