"""Hugging Face Space entry point of the TS2 demo (``python app.py``); the app is ``scorers.demo`` of the installed
ts2-evaluate package (requirements.txt), and ``ts2 demo`` runs the same app locally.

Settings come from environment variables (Space variables): ``TS2_HUB_DATASET`` (dataset with metadata.csv,
released_scores.csv, paper_table2.csv and images/), ``TS2_DATA_DIR`` / ``TS2_METADATA`` / ``TS2_SCORES_CSV`` /
``TS2_PAPER_TABLE`` (local files instead), ``TS2_CLIP_MODEL``, ``TS2_VLM``, ``TS2_MAX_UPLOAD_MB``.
"""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from scorers.demo import AppConfig, build_app, launch_kwargs  # noqa: E402

if __name__ == "__main__":
    config = AppConfig.from_env()
    # On a Space, GRADIO_SERVER_NAME/PORT come from the environment; only the upload limit is set here.
    build_app(config).launch(**launch_kwargs(config, local=False))
