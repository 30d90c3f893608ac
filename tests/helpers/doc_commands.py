"""The command and Python blocks of README.md and the documentation site, and the rules that say which run here and
why the others are skipped (tests/docs/test_commands.py runs them; other tests run a page's part the same way)."""
from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HUB = "downloads model weights from the Hugging Face Hub"

#: (pattern searched in the command, "run" or "skip", reason); the first match decides
RULES: list[tuple[str, str, str]] = [
    (r"^(\.venv/bin/)?pip install", "skip", "installs packages (network; changes the environment)"),
    (r"^python -m venv", "skip", "makes a virtualenv (.ci/run runs the set-up lines in a fresh one)"),
    (r"^(\w+=\S+ )?(\.venv/bin/)?python -m pytest", "skip", "runs this test suite itself"),
    (r"^(\.venv/bin/)?python tests/helpers/run_from_clone\.py", "skip", "runs this test suite itself, from a copy of the "
     "repository"),
    (r"^(\.venv/bin/)?mkdocs build", "skip", "tests/docs/test_site.py builds the site with --strict"),
    (r"^(TS2_DATA=\S+ )?ts2 demo\b", "skip", "serves until stopped; tests/demo/test_app.py (with TS2_DATA) and "
                                             "test_browser.py drive the app"),
    (r"accelerate launch --num_processes 8|--num_machines 2", "skip", "needs 8 GPUs / two nodes, and " + HUB),
    (r"^accelerate launch .*score tifa .*--model llava-hf/", "skip", "needs a GPU, and " + HUB),
    (r"^ACCELERATE_USE_CPU=1 accelerate launch .*score clip_score(?!.*--model)", "skip",
     "the default CLIP (openai/clip-vit-base-patch16) " + HUB + "; tests/scoring/test_runner.py runs 2 CPU processes on a "
     "tiny local CLIP"),
    (r"^(TS2_DATA=\S+ )?ts2 release\b", "skip", "tests/tables/test_release.py runs the README's release commands against a "
     "loopback stand-in of the Hub and GitHub (the real ones are downloads)"),
    (r"benchmarks/bench_vqa\.py --compare prefix-cache", "skip", "minutes of CPU; tests/models/test_prefix_cache.py runs "
     "this command with 1 image and 1 repeat"),
    (r"benchmarks/gpu\.sh|benchmarks/bench_engines\.py", "skip", "minutes of CPU (or a GPU); "
     "tests/project/test_benchmark_scripts.py runs gpu.sh --dry-run and bench_engines.py --quick"),
    (r"^vllm serve|^export OPENAI_BASE_URL", "skip", "starts / points at a GPU model server (vLLM)"),
    (r"^ts2 score .*--engine ray --ray-address 127\.0\.0\.1:PORT$", "skip", "joins a two-node Ray cluster on loopback, "
     "and the default CLIP " + HUB + "; tests/scoring/test_ray_cluster.py runs this very command (PORT and a tiny "
     "local CLIP filled in) on such a cluster"),
    (r"^(RAY_\w+=\S+ )*(ray (start|get-auth-token|up|exec|rsync-down|down)|ts2 score .*--engine ray)", "skip",
     "starts / joins a Ray cluster (or makes its token), and the default models " + HUB +
     "; tests/scoring/test_ray_data.py runs the Ray engine on a local Ray with a tiny local CLIP"),
    (r"^(docker|kubectl) ", "skip", "builds an image / drives a Kubernetes cluster (KubeRay)"),
    (r"^(\w+=\S+ )?ts2 serve\b", "skip", "serves until stopped; tests/rewards/test_serve.py runs the service on loopback "
     "with a tiny local CLIP"),
    (r"^ts2 score \S+ .*--model openai:", "skip", "needs a served model; tests/models/test_openai_compat.py and test_judges.py run "
     "ts2 score against a loopback OpenAI-compatible server"),
    (r"^ts2 tifa-bench generate --pipeline \S+/", "skip", HUB + " (a diffusers pipeline); "
     "tests/tifa_bench/test_generate.py runs a tiny pipeline built from configs"),
    (r"tifa-bench score .*(--model \S+/|--images images/)", "skip", HUB + " and needs generated images; "
     "tests/cli/test_tifa_bench.py scores with a tiny local BLIP"),
    (r"^ts2 tifa-bench report runs/", "skip", "reads the runs of the commands above; tests/cli/test_tifa_bench.py "
     "runs report on tiny-model runs"),
    (r"^ts2 tifa-bench stats --text-inputs tifa_v1\.0_", "skip", "reads the TIFA v1.0 files (a download); "
     "tests/tifa_bench/test_tifa_bench.py and tests/cli/test_tifa_bench.py run stats on same-format fixtures"),
    (r"^ts2 report .*--ratings ratings\.csv", "skip", "needs a ratings file; tests/docs/test_human_agreement_page.py runs it "
     "with a generated same-format ratings.csv"),
    (r"^ts2 correlate\b", "skip", "tests/docs/test_human_agreement_page.py runs the README's correlate commands on generated "
     "same-format ratings files"),
    (r"^ts2 score \S+ .*--model (?!\.|/)\S+/\S+", "skip", HUB + " (a Hub model id)"),
    (r"^ts2 score \S+ .*--pretrained openai", "skip", HUB + " (open_clip's OpenAI weights)"),
    (r"^ts2 score (?!.*--model)", "skip", HUB + " (the scorer's default model); tests/ts2/test_scoring_from_hub.py runs "
     "ts2 score without --data-dir (and with --meta) on a tiny CLIP against a loopback stand-in of the Hub dataset"),
    (r"^ts2 card\b.*--ratings tifa160=tifa160", "skip", "downloads TIFA160; tests/report/test_card.py runs ts2 card on a "
     "generated TIFA160-format file"),
    (r"^ts2 submit \S+ .*--push", "skip", "opens a pull request on the Hub (network, a token); tests/ts2/test_submission.py "
     "pushes to a loopback stand-in of the Hub and reads the pull request back"),
    (r"^hf ", "skip", "the Hub's own CLI: logs in / creates the leaderboard's dataset repository (network, a token)"),
    (r"^ts2 leaderboard --submissions [\w.-]+/[\w.-]+@", "skip", "reads a Hub dataset (network); "
     "tests/report/test_community.py reads one at a pinned revision from a loopback stand-in of the Hub"),
    (r"^ts2 seg plan\b", "skip", "needs a text model (a served one, or " + HUB + "); tests/ts2/test_seg_synth.py runs "
     "plan against a loopback OpenAI-compatible server with a scripted reply"),
    (r"^(ts2|accelerate launch .*ts2\S*) seg generate\b", "skip", "a diffusers pipeline " + HUB + " (and GPUs); "
     "tests/ts2/test_seg_synth.py generates with a tiny random Stable Diffusion built from configs, "
     "tests/ts2/test_seg_generate.py on two accelerate processes"),
    (r"^ts2 seg check\b", "skip", "needs a VQA judge (" + HUB + ", or a served model); tests/ts2/test_seg_synth.py runs "
     "check against a loopback judge"),
    (r"^ts2 seg push\b", "skip", "uploads to the Hub (network, a token); tests/ts2/test_seg_synth.py tests everything up "
     "to the upload call"),
    (r"^ts2 dataset unpack my-segs-download|^ts2 meta \S+ --metadata my_segs_again/", "skip", "reads a download of "
     "what ts2 seg push sends (network); tests/ts2/test_seg_push.py unpacks a dry run's folder and runs ts2 meta "
     "on it"),
    (r"^ts2 seg build raw/|^ts2 meta clip_scores\.csv --metadata built/", "skip", "reads what the Synth commands "
     "above write; tests/ts2/test_seg_synth.py and examples/07_build_your_own_segs.ipynb run the chain end to end"),
    (r"^ts2 elements \S+\.(jsonl|json|csv) ", "skip", "reads a metric's per-question records or EvalMuse predictions and "
     "the EvalMuse labels (a download); the tests of ts2 elements run built SEGs and EvalMuse on files made in the "
     "test, and examples/08_which_error.ipynb runs all three offline"),
    (r"^ts2 (meta|reproduce|report|answers-to-scores|card|submit|leaderboard|seg build|elements)\b", "run", ""),
]


#: (pattern searched in the Python block, "run" or "skip", reason); the first match decides
PY_RULES: list[tuple[str, str, str]] = [
    (r"release(_download)?\.path\(", "skip", "downloads the release tables; tests/tables/test_release.py runs this block against a "
     "loopback stand-in of the Hub and GitHub"),
    (r"load_ts2\(", "skip", "needs a TS2 image folder (and datasets < 4 for its third way); tests/ts2/test_dataset.py "
     "and tests/ts2/test_export.py build and export the configs from a generated data dir"),
    (r"RemoteReward\(", "skip", "needs a running `ts2 serve`; tests/rewards/test_serve.py and test_serve.py query one on "
     "loopback with RemoteReward"),
    (r"rewards\.load\(", "skip", "needs a GPU (device=\"cuda\") and " + HUB + "; tests/rewards/test_api.py runs the "
     "API on tiny local reward models"),
    (r"CLIPScore\(|evaluate_modules/clip_score", "skip", HUB + "; tests/metrics/test_embedding.py and "
     "test_embedding_modules.py run the scorers and modules on a tiny local CLIP"),
    (r"ChatVLM\(|TextLM\(", "skip", "needs a GPU (device=\"cuda\") and " + HUB + "; tests/metrics/test_qga_models.py and "
     "test_qga_generation.py run them on tiny local models"),
    (r"plan_segs\(|generate_seg_images\(", "skip", "needs a text model, a diffusers pipeline and a judge (" + HUB +
     "); tests/ts2/test_seg_synth.py and examples/07_build_your_own_segs.ipynb run these functions on tiny models"),
    (r"ray\.cluster_utils", "skip", "starts a two-node Ray cluster and waits for Enter; tests/helpers/ray_cluster.py "
     "starts the same cluster for tests/scoring/test_ray_cluster.py"),
    (r"^from scorers import ts2_meta|evaluate_modules/ts2_meta|parse_viescore|llava_tifa\.records\.csv", "run", ""),
]


def doc_pages() -> list[Path]:
    """README.md and every page of the site (docs/**/*.md), without docs/_incoming (other branches' notes) and
    docs/assets (generated tables)."""
    pages = sorted(p for p in (ROOT / "docs").rglob("*.md")
                   if not {"_incoming", "assets"} & set(p.relative_to(ROOT / "docs").parts[:1]))
    return [ROOT / "README.md"] + pages


def page_name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the block, code) for every ```python block."""
    return [(text[:block.start()].count("\n") + 1, block.group(1))
            for block in re.finditer(r"```python\n(.*?)```", text, re.S)]


def classify_python(code: str) -> tuple[str, str] | None:
    for pattern, action, reason in PY_RULES:
        if re.search(pattern, code, re.M):
            return action, reason
    return None


def readme_commands(text: str) -> list[tuple[int, str]]:
    """(line of the block, command) for every command of every ```bash block of one page."""
    commands = []
    for block in re.finditer(r"```(?:bash|sh|shell|console)\n(.*?)```", text, re.S):
        line = text[:block.start()].count("\n") + 1
        for raw in block.group(1).replace("\\\n", " ").splitlines():
            words = shlex.split(raw, comments=True)
            if words:  # shlex.join single-quotes a word holding "$TS2_DATA/...": give the shell back its expansion
                commands.append((line, re.sub(r"'([^'\"\\]*\$[^'\"\\]*)'", r'"\1"', shlex.join(words))))
    return commands


def classify(command: str) -> tuple[str, str] | None:
    for pattern, action, reason in RULES:
        if re.search(pattern, command):
            return action, reason
    return None


def block_env(release: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1", MPLBACKEND="Agg", TS2_DATA=str(release))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env
