#!/usr/bin/env bash
# The GPU checks of `vramscope record` (issue 5), as one prepared script for a lent GPU
# machine (the `device` tool's `run`). It needs no Rust there: carry the release binary.
#
#   here:   cargo build --release && mkdir -p target/gpu && strip -o target/gpu/vramscope target/release/vramscope
#   device: run(command="bench/gpu/run.sh", carry=["target/gpu/vramscope"], timeout_s=420)
#
# It writes to $OUT (default ./gpu-out): the machine's facts, two recordings made with
# `record --torch-memory` (a real training run, and a run that dies of a real CUDA OOM),
# their summaries and reports, and a torch.profiler CUDA trace with torch's own
# key_averages() beside it, checked against `vramscope table`. Small enough to bring back
# and commit to samples/ and tests/fixtures/ (see bench/gpu/README.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
V=${VRAMSCOPE:-target/gpu/vramscope}
log() { echo "== $*"; }

log machine
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.csv"
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))" | tee "$OUT/torch.txt"

log "record: a real training run (20 steps)"
"$V" record --torch-memory --interval-ms 20 -o "$OUT/train.vsr" --force -- \
    python3 bench/gpu/train.py --steps 20 2>&1 | tail -20
echo "exit ${PIPESTATUS[0]}" | tee "$OUT/train.exit"

log "record: a run that dies of a CUDA OOM"
"$V" record --torch-memory --interval-ms 20 -o "$OUT/oom.vsr" --force -- \
    python3 bench/gpu/train.py --oom 2>&1 | tail -20
echo "exit ${PIPESTATUS[0]}" | tee "$OUT/oom.exit"

for r in train oom; do
    log "summary $r"
    "$V" summary "$OUT/$r.vsr" | tee "$OUT/$r.summary.txt"
    "$V" summary "$OUT/$r.vsr" --format json > "$OUT/$r.summary.json"
    "$V" report "$OUT/$r.vsr" -o "$OUT/$r-report" > /dev/null
    "$V" pack "$OUT/$r.vsr" -o "$OUT/$r.packed.vsr" --force
done
"$V" live "$OUT/oom.vsr" --at oom | head -30 | tee "$OUT/oom.live.txt"

log "torch.profiler on CUDA: key_averages() truth for vramscope table"
python3 bench/gpu/train.py --steps 3 --layers 2 --dim 256 --seq 128 --batch 8 \
    --profile "$OUT/cuda-lm.json" > /dev/null 2>&1
gzip -9f "$OUT/cuda-lm.json"
"$V" table "$OUT/cuda-lm.json.gz" --sort none --format json > "$OUT/cuda-lm.vramscope.json"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
got = json.load(open(f"{out}/cuda-lm.vramscope.json"))
want = json.load(open(f"{out}/cuda-lm.key_averages.json"))["key_averages"]
print("table == key_averages:", got == want, f"({len(got)} rows vs {len(want)})")
for g, w in zip(got, want):
    if g != w:
        print("  first difference:\n   got ", g, "\n   want", w)
        break
PY
"$V" summary "$OUT/cuda-lm.json.gz" | tee "$OUT/cuda-lm.summary.txt"
ls -la "$OUT"
