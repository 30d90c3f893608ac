"""``ts2 demo``: run the interactive Gradio demo (leaderboard, SEG explorer, score your image, report card) on 127.0.0.1.

The app itself is ``scorers.demo`` (installed with the package; the Hugging Face Space's ``examples/space/app.py``
imports the same package); this command only resolves its settings and launches it.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from scorers.cli._options import add_command
from scorers.cli._validate import number, port


def register(subparsers: argparse._SubParsersAction) -> None:
    demo = add_command(subparsers, "demo", run_demo, help="run the interactive Gradio demo on 127.0.0.1")
    demo.add_argument("--data-dir", help="TS2 data dir (metadata.csv, images/, optionally released_scores.csv)")
    demo.add_argument("--scores-csv", help="released per-image scores (row-aligned with the metadata)")
    demo.add_argument("--metadata", help="metadata.csv (default: the data dir's, beside its released_scores.csv, "
                                          "else the release's)")
    demo.add_argument("--paper", dest="paper_table", help="paper_table2.csv (metric names and families)")
    demo.add_argument("--port", type=port, default=7860, help="port to listen on")
    demo.add_argument("--host", default="127.0.0.1", help="interface to listen on (127.0.0.1: this machine only)")
    demo.add_argument("--clip-model", help="CLIP checkpoint for CLIPScore: local dir or Hub id "
                                           "(default openai/clip-vit-base-patch16)")
    demo.add_argument("--vlm", help="VQA model for TIFA/DSG (when the installed scorers provide them)")
    demo.add_argument("--qg-model", help="text LM that writes TIFA questions for new prompts "
                                         "(e.g. tifa-benchmark/llama2_tifa_question_generation)")
    demo.add_argument("--submissions", metavar="PATH_OR_REPO[@REVISION]",
                      help="community leaderboard: the submissions to verify and list in the Leaderboard tab (as "
                           "ts2 leaderboard --submissions)")
    demo.add_argument("--max-upload-mb", type=number(0, 10_000), default=10.0, help="upload size limit in MB")
    demo.add_argument("--annotations", metavar="FILE",
                      help="ANNOTATIONS CSV for the Build a SEG tab (ts2 seg build's input; each tick is saved there)")
    demo.add_argument("--images", dest="seg_images", metavar="DIR",
                      help="folder the ANNOTATIONS file_name values are relative to (default: the file's folder)")
    demo.add_argument("--seg-plan", metavar="PLAN",
                      help="plan file of ts2 seg plan: its elements become the tab's checkboxes")
    demo.add_argument("--seg-review", metavar="REVIEW",
                      help="review list of ts2 seg check: its images are shown first")
    demo.add_argument("--share", action="store_true",
                      help="also serve through a temporary public *.gradio.live link (gradio's share tunnel; needs "
                           "network, and anyone with the link can use the demo)")


def _load_demo():
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    try:
        from scorers import demo
        from scorers.demo import ui  # noqa: F401  (imports gradio)
    except ImportError as error:
        from scorers.errors import install_hint

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


def check_demo_arguments(args: argparse.Namespace):
    """Everything that can be checked before the app loads, in one line naming the flag: the port, the folders and
    tables (each read and checked as the app will read it), and the model names (an existing path, or a Hub id;
    ``--clip-model`` takes a folder or an ``owner/name`` id). Returns the resolved :class:`scorers.demo.AppConfig`."""
    from scorers.demo.config import AppConfig, check_tables
    from scorers.models.loading import check_model_source

    check_port_free(args.host, args.port)
    for flag, value in (("--clip-model", args.clip_model), ("--vlm", args.vlm), ("--qg-model", args.qg_model)):
        check_model_source(value, flag=flag)
    if args.clip_model and "/" not in args.clip_model and not os.path.exists(os.path.expanduser(args.clip_model)):
        raise ValueError(f"--clip-model {args.clip_model}: no such folder, and not a Hub id (owner/name, e.g. "
                         "openai/clip-vit-base-patch16)")
    settings = {"max_upload_mb": args.max_upload_mb}
    for name in ("clip_model", "vlm", "qg_model", "submissions"):
        if getattr(args, name):
            settings[name] = getattr(args, name)
    for flag, name in (("--annotations", "annotations"), ("--images", "seg_images"), ("--seg-plan", "seg_plan"),
                       ("--seg-review", "seg_review")):
        value = getattr(args, name, None)
        if value:
            kind = "folder" if name == "seg_images" else "file"
            if not (os.path.isdir(value) if kind == "folder" else os.path.isfile(value)):
                raise ValueError(f"{flag} {value}: no such {kind}")
            settings[name] = Path(value)
    if settings.get("seg_images") and not settings.get("annotations"):
        raise ValueError("--images: give --annotations too (the ANNOTATIONS file whose images these are)")
    if args.submissions:
        from scorers.ts2.submission.hub import check_submissions_source

        check_submissions_source(args.submissions)  # a typo is one line now, not a message in the tab
    config = AppConfig.resolve(data_dir=args.data_dir, scores_csv=args.scores_csv, metadata=args.metadata,
                               paper_table=args.paper_table, **settings)
    check_tables(config)
    if config.annotations is not None:  # the Build a SEG tab's files, read as the tab reads them
        from scorers.demo.seg_builder.annotations import open_annotations

        open_annotations(config)
    return config


def go_offline_unless_the_hub_answers() -> None:
    """One probe of the Hugging Face Hub (at most :data:`scorers.tables.release_download.PROBE_TIMEOUT_S` seconds in all),
    unless ``HF_HUB_OFFLINE=1`` already says not to ask: when it does not answer, the demo runs from the local cache
    (release tables, images, models) and says so in one line, instead of retrying the Hub for each."""
    from scorers.demo.config import hub_probe, work_offline

    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE"):
        return
    reason = hub_probe()
    if reason is not None:
        work_offline()
        print(f"ts2 demo: the Hugging Face Hub is not reachable ({reason}); working offline: release tables, images "
              "and models come from the local cache only", file=sys.stderr, flush=True)


def run_demo(args: argparse.Namespace) -> int:
    """Leaderboard of the published metrics (+ your own scores CSV), a SEG explorer, a score-your-image tab, a
    report-card tab (ts2 card's JSON) and a Build a SEG tab (--annotations: tick what each image gets wrong, saved into
    that file; see ts2 seg build). Tables default to --data-dir, then the TS2 release: $TS2_DATA (a local copy),
    the Hugging Face cache, or one pinned, verified download; images then come from the release's Hub dataset.
    Offline (HF_HUB_OFFLINE=1, or no answer from the Hub within 3 s at start-up): everything from the local cache.
    """
    config = check_demo_arguments(args)
    go_offline_unless_the_hub_answers()
    space = _load_demo()
    app = space.build_app(config)
    kwargs = space.launch_kwargs(config, port=args.port)
    kwargs["server_name"] = args.host
    # gradio's own start-up lines ("set `share=True` in `launch()`") speak to Python users: this command prints its
    # own; with --share gradio is left to print the public link it creates
    kwargs["share"] = bool(args.share)
    kwargs["quiet"] = not args.share
    kwargs["prevent_thread_lock"] = True  # this command waits, so that Ctrl+C stops it with one line of its own
    app.launch(**kwargs)
    print(f"ts2 demo: serving on http://{args.host}:{args.port}/ (Ctrl+C to stop)", flush=True)
    try:
        while getattr(app, "is_running", False):
            time.sleep(0.2)
    except KeyboardInterrupt:
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):  # gradio's "Closing server running on port: ..."
            app.close()
        print("ts2 demo: stopped", file=sys.stderr)
    return 0
