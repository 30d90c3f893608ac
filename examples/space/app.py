"""Hugging Face Space entry point of the TS2 demo (``python app.py``); the app is ``scorers.demo`` of the installed
ts2-evaluate package (requirements.txt), and ``ts2 demo`` runs the same app locally.

No variable is needed to show the leaderboard: the release tables are downloaded once through ``scorers.tables.release``
(pinned revisions, sha256-verified, kept in the Hugging Face cache) and images come from the Hub dataset
``saxon/T2IScoreScore`` at the same pinned revision. Optional settings (Space variables): ``TS2_DATA`` (a local copy
of the release tables), ``TS2_DATA_DIR`` (a folder with images/ and tables), ``TS2_METADATA`` / ``TS2_SCORES_CSV`` /
``TS2_PAPER_TABLE`` (individual table files), ``TS2_CLIP_MODEL``, ``TS2_VLM``, ``TS2_QG_MODEL``,
``TS2_MAX_UPLOAD_MB``, ``TS2_SUBMISSIONS`` (the community leaderboard: a Hub dataset ``OWNER/NAME@REVISION`` whose
``submissions/`` are verified and listed in the Leaderboard tab).
"""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from scorers.demo import AppConfig, build_app, launch_kwargs  # noqa: E402

if __name__ == "__main__":
    config = AppConfig.from_env()
    # On a Space, GRADIO_SERVER_NAME/PORT come from the environment; only the upload limit is set here.
    build_app(config).launch(**launch_kwargs(config, local=False))
