#!/usr/bin/env bash
# GPU figures in one run (under 8 minutes on one GPU), one line per figure:
#   clipscore bf16    images/s of clip_score's default path (the batched runner) vs the image tower alone
#   qwen-vl prefix    the shared image prefix's speed-up over per-question prefill (Qwen2-VL-shaped model)
#   pickscore / hpsv2 / imagereward bf16   pairs/s in batches, real-size architectures
#   ts2 serve         requests/s at concurrency 16 (Ray Serve, dynamic batching)
# Every model is built from its config with seeded random weights (the compute is the real models'; nothing is
# downloaded), so it runs on a machine without network. Each benchmark's full output goes to $GPU_LOGS (default a
# temp folder, printed at the end).
#
#   bash benchmarks/gpu.sh              # on a GPU machine (CUDA), bf16
#   bash benchmarks/gpu.sh --dry-run    # on CPU, tiny sizes: checks the script and prints the same lines
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0
PYTHON="${PYTHON:-python}"
LOGS="${GPU_LOGS:-$(mktemp -d -t ts2-gpu-figures-XXXXXX)}"
mkdir -p "$LOGS"

case "${1:-}" in
  --dry-run)
    DRY=1; MODE="dry run: CPU, tiny sizes (the figures mean nothing)"
    CLIP=(--model tiny --device cpu --images 32 --unique-images 8 --image-size 64 --batch-size 16 --num-workers 0
          --baseline-images 4)
    QWEN=(--images 1 --repeats 1 --max-new-tokens 2)
    REWARDS=(--size mini --device cpu --images 8 --batch-size 4)
    SERVE=(--requests 32);;
  "")
    DRY=0; MODE="GPU"
    "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu.sh: no CUDA device (use --dry-run on CPU)')"
    CLIP=(--model ViT-B-16 --device cuda --images 8192 --unique-images 512 --image-size 512 --batch-size 256
          --num-workers "$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))" --baseline-images 64 --repeats 2)
    QWEN=(--images 16 --repeats 2 --device cuda --precision bf16)
    REWARDS=(--size real --device cuda --images 1024 --batch-size 64)
    SERVE=(--requests 640 --num-gpus 1);;
  *)
    echo "usage: bash benchmarks/gpu.sh [--dry-run]" >&2; exit 2;;
esac

step() {  # step NAME COMMAND...: run one benchmark, its output to $LOGS/NAME.log; stop with its tail on failure
  local name="$1"; shift
  local status=0
  "$@" >"$LOGS/$name.log" 2>&1 || status=$?
  # bench_vqa exits 1 when the two ways' answers differ: that is part of its figure line (below), not a failure
  if [ "$status" != 0 ] && ! { [ "$name" = qwen ] && [ "$status" = 1 ]; }; then
    echo "gpu.sh: $name failed ($*); last lines of $LOGS/$name.log:" >&2
    tail -n 20 "$LOGS/$name.log" >&2
    exit 1
  fi
}

grab() {  # grab NAME SED-EXPRESSION: the first line of $LOGS/NAME.log the expression prints, or fail naming it
  local found
  found="$(sed -nE "$2" "$LOGS/$1.log" | head -n 1)"
  if [ -z "$found" ]; then
    echo "gpu.sh: no figure found in $LOGS/$1.log" >&2; tail -n 20 "$LOGS/$1.log" >&2; exit 1
  fi
  printf '%s' "$found"
}

start=$SECONDS
if [ "$DRY" = 1 ]; then DEVICE="cpu"; else DEVICE="$("$PYTHON" -c "import torch; print(torch.cuda.get_device_name())")"; fi
echo "gpu.sh: $MODE; $DEVICE; $(date -u +%Y-%m-%dT%H:%MZ); logs in $LOGS"

step clipscore "$PYTHON" benchmarks/bench_embedding.py --precision bf16 "${CLIP[@]}"
runner="$(grab clipscore 's/^batched runner, uint8 *: *([0-9.]+) img\/s.*/\1/p')"
tower="$(grab clipscore 's/^model only .*: *([0-9.]+) img\/s.*/\1/p')"
echo "clipscore bf16: default path ${runner} img/s, image tower alone ${tower} img/s ($(awk -v a="$runner" -v b="$tower" 'BEGIN{printf "%.0f%%", 100*a/b}') of the tower)"

step qwen "$PYTHON" benchmarks/bench_vqa.py --compare prefix-cache --family qwen2_vl "${QWEN[@]}"
echo "qwen-vl shared prefix: $(grab qwen 's/^(speed-up [0-9.]+x; answers identical: [A-Za-z]+)$/\1/p') (per-question prefill $(grab qwen 's/^per-question prefill: *([0-9.]+ questions\/s).*/\1/p'), shared $(grab qwen 's/^shared image prefix: *([0-9.]+ questions\/s).*/\1/p'))"

step rewards "$PYTHON" benchmarks/bench_rewards.py --only speed --precision bf16 --batched-only \
  --scorers pickscore,hpsv2,imagereward "${REWARDS[@]}"
for name in pickscore hpsv2 imagereward; do
  echo "$name bf16: $(grab rewards "s/^ *$name +batched +([0-9.]+) pairs\/s.*/\1/p") pairs/s (batched)"
done

step serve "$PYTHON" benchmarks/bench_serve.py "${SERVE[@]}"
echo "ts2 serve: $(grab serve 's/^concurrency 16: *([0-9.]+) requests\/s.*/\1/p') requests/s at concurrency 16 ($(grab serve 's/^concurrency  1: *([0-9.]+) requests\/s.*/\1/p') at 1)"

echo "gpu.sh: done in $((SECONDS - start)) s"
