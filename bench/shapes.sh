#!/usr/bin/env bash
# Speed and memory on every shape of input (issue 41): `summary` and `table` on each shape of
# bench/shapes_make.sh side by side with the Python reference (bench/baseline.py) in
# interleaved rounds, the 1.2M-entry snapshot against tests/fixtures/snapshot/replay.py, the
# 1,024 rank traces against one of them, `report --html` on two shapes, and peak RSS at 2 GB
# on the shapes in BIG_SHAPES. Writes the "Input shapes" section of docs/PERFORMANCE.md
# (between its markers) through bench/shapes.py.
#
#   bench/shapes.sh                               # everything (~15 min on 2 busy cores)
#   ONLY="mem ops" bench/shapes.sh                # some parts: current mem ops stack gpu
#                                                 #   snapshot ranks report big
#   BIG_SHAPES="current mem" bench/shapes.sh      # the 2 GB copies (made, timed, deleted)
#
# Environment: SHAPES (the corpus, default /tmp/vramscope-shapes), RUNS (vramscope runs per
# command, default 5), PY_RUNS (Python runs, default 2), RANK_RUNS / SINGLE_RUNS (fleet runs,
# single-file runs a round: 3 / 5), REPORT_SHAPES (default "current gpu"), BIG_SHAPES
# (default "current mem stack"), BIG_RUNS (default 2), KEEP_BIG=1, MAX_LOAD (wait for a 1-minute
# load below it; default 1.0), SKIP_BUILD=1, DOC.
set -euo pipefail
cd "$(dirname "$0")/.."
export SHAPES=${SHAPES:-/tmp/vramscope-shapes}
export BIG_SHAPES=${BIG_SHAPES:-current mem stack}
DOC=${DOC:-docs/PERFORMANCE.md}
VS=${CARGO_TARGET_DIR:-target}/release/vramscope
OUT=bench/out/shapes
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    cargo build --release -p vramscope
    cargo build --release -p vramscope-collector --example gen_trace
fi
bench/shapes_make.sh
mkdir -p "$OUT"
. bench/quiet.sh
wait_for_quiet
export MAX_LOAD NPROC=$(nproc)
python3 bench/shapes.py "$VS" "$SHAPES" "$OUT" "$DOC"
