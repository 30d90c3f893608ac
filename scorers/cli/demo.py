"""``ts2 demo``: run the interactive Gradio demo (leaderboard, SEG explorer, score your image, report card) on 127.0.0.1.

The app itself is ``scorers.demo`` (installed with the package; the Hugging Face Space's ``examples/space/app.py``
imports the same package); this command only resolves its settings and launches it.
"""
from __future__ import annotations

import argparse
import os

from scorers.cli._options import add_command
from scorers.cli._validate import number, port


def register(subparsers: argparse._SubParsersAction) -> None:
    demo = add_command(subparsers, "demo", run_demo, help="run the interactive Gradio demo on 127.0.0.1")
    demo.add_argument("--data-dir", help="TS2 data dir (metadata.csv, images/, optionally released_scores.csv)")
    demo.add_argument("--scores-csv", help="released per-image scores (row-aligned with the metadata)")
    demo.add_argument("--metadata", help="metadata.csv (default: the data dir's, beside its released_scores.csv, "
                                          "else the release's)")
    demo.add_argument("--paper", help="paper_table2.csv (metric names and families)")
    demo.add_argument("--port", type=port, default=7860, help="port to listen on")
    demo.add_argument("--host", default="127.0.0.1", help="interface to listen on (127.0.0.1: this machine only)")
    demo.add_argument("--clip-model", help="CLIP checkpoint for CLIPScore: local dir or Hub id "
                                           "(default openai/clip-vit-base-patch16)")
    demo.add_argument("--vlm", help="VQA model for TIFA/DSG (when the installed scorers provide them)")
    demo.add_argument("--qg-model", help="text LM that writes TIFA questions for new prompts "
                                         "(e.g. tifa-benchmark/llama2_tifa_question_generation)")
    demo.add_argument("--max-upload-mb", type=number(0, 10_000), default=10.0, help="upload size limit in MB")
    demo.add_argument("--share", action="store_true",
                      help="also serve through a temporary public *.gradio.live link (gradio's share tunnel; needs "
                           "network, and anyone with the link can use the demo)")


def _load_demo():
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    try:
        from scorers import demo
        from scorers.demo import ui  # noqa: F401  (imports gradio)
    except ImportError as error:
        from scorers.cli._extras import install_hint

        raise FileNotFoundError(f"{error}; " + install_hint("demo")) from None
    return demo


def check_port_free(host: str, port: int) -> None:
    """Refuse a port another program listens on, naming ``--port`` (gradio's own message names an environment
    variable), before the app and its tables load."""
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gradio's own probe
        try:
            probe.bind((host, port))
        except OSError as error:
            other = port + 1 if port < 65535 else 7860
            raise ValueError(f"--port {port}: cannot listen on {host}:{port} ({error.strerror or error}; another "
                             f"program may be using it); pass another port, e.g. --port {other}") from None


def run_demo(args: argparse.Namespace) -> int:
    """Leaderboard of the published metrics (+ your own scores CSV), a SEG explorer, a score-your-image tab and a
    report-card tab (ts2 card's JSON). Tables default to --data-dir, then the TS2 release: $TS2_DATA (a local copy),
    the Hugging Face cache, or one pinned, verified download; images then come from the release's Hub dataset.
    """
    check_port_free(args.host, args.port)
    space = _load_demo()
    settings = {"max_upload_mb": args.max_upload_mb}
    if args.clip_model:
        settings["clip_model"] = args.clip_model
    if args.vlm:
        settings["vlm"] = args.vlm
    if args.qg_model:
        settings["qg_model"] = args.qg_model
    config = space.AppConfig.resolve(
        data_dir=args.data_dir, scores_csv=args.scores_csv, metadata=args.metadata, paper_table=args.paper, **settings,
    )
    app = space.build_app(config)
    kwargs = space.launch_kwargs(config, port=args.port)
    kwargs["server_name"] = args.host
    # gradio's own start-up lines ("set `share=True` in `launch()`") speak to Python users: this command prints its
    # own; with --share gradio is left to print the public link it creates
    kwargs["share"] = bool(args.share)
    kwargs["quiet"] = not args.share
    print(f"ts2 demo: serving on http://{args.host}:{args.port}/ (Ctrl+C to stop)"
          + ("; creating a public share link..." if args.share else ""), flush=True)
    app.launch(**kwargs)
    return 0
