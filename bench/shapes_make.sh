#!/usr/bin/env bash
# The benchmark corpus of input shapes (issue 41), generated, never committed. Each shape is
# a real torch or GPU trace (or a snapshot in torch's layout) replayed to about TARGET_BYTES
# by bench/gen_trace.rs; bench/shapes.sh times them. Made only where missing.
#
#   bench/shapes_make.sh                  # all shapes into $SHAPES (~700 MB, ~5 min)
#   bench/shapes_make.sh current gpu      # some of them
#   BIG=2000000000 bench/shapes_make.sh big-current   # the 2 GB copy of a shape
#
# Shapes (file under $SHAPES):
#   current.json   bench/run.sh's trace: gen_truth.py, a 4-layer transformer LM training on
#                  CPU (profile_memory, record_shapes), 44 steps, ~110 MB as torch wrote it
#   mem.json       memory-event dense (bench/shapes_torch.py mem, replayed)
#   ops.json       op dense without memory events (shapes_torch.py ops, replayed)
#   stack.json     stack heavy: with_stack, ~50 long Python frames over each op (shapes_torch.py stack)
#   gpu.json       GPU: the H100 owlv2-large TraceLens trace (kernels, CUDA runtime, memcpy,
#                  memory events on cuda:0) replayed
#   snapshot.pickle  an allocator snapshot of SNAPSHOT_ENTRIES trace entries in torch's shape
#                  (gen_snapshots.py --big N --torch-shaped)
#   ranks/         1,024 rank traces of ~600 KB of content (bench/make_ranks.py from t2)
#   big-NAME.json  NAME replayed to BIG bytes (only when asked for by name)
#
# Environment: SHAPES (default /tmp/vramscope-shapes), TARGET_BYTES (default 100000000),
# SNAPSHOT_ENTRIES (default 1200000), BIG (default 2000000000), GEN (the gen_trace binary,
# built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPES=${SHAPES:-/tmp/vramscope-shapes}
TARGET_BYTES=${TARGET_BYTES:-100000000}
SNAPSHOT_ENTRIES=${SNAPSHOT_ENTRIES:-1200000}
BIG=${BIG:-2000000000}
GEN=${GEN:-${CARGO_TARGET_DIR:-target}/release/examples/gen_trace}
GPU_BASE=../shared/traces/real/tracelens-h100-owlv2-large/google_owlv2-large-patch14-ensemble__1016001.json.gz
mkdir -p "$SHAPES"
[[ -x $GEN ]] || cargo build --release -p vramscope-collector --example gen_trace

replayed() { # replayed NAME BASE: BASE replayed to TARGET_BYTES as NAME.json
    "$GEN" "$2" "$SHAPES/$1.json" --target-bytes "$TARGET_BYTES" --force >"$SHAPES/$1.gen.txt"
}

make() {
    local name=$1 out
    case $name in
        ranks) out=$SHAPES/ranks ;;
        snapshot) out=$SHAPES/snapshot.pickle ;;
        *) out=$SHAPES/$name.json ;;
    esac
    [[ -e $out ]] && return
    echo "making $out" >&2
    case $name in
        current)
            python3 ../shared/traces/torch-cpu/gen_truth.py "$out" --steps 44 --layers 4 --dim 256 --seq 128 2>/dev/null ;;
        mem | ops | stack)
            [[ -f $SHAPES/$name.base.json ]] ||
                python3 bench/shapes_torch.py "$name" "$SHAPES/$name.base.json" 2>/dev/null
            replayed "$name" "$SHAPES/$name.base.json"
            rm -f "$SHAPES/$name.base.json" ;;
        gpu) replayed gpu "$GPU_BASE" ;;
        snapshot)
            python3 tests/fixtures/snapshot/gen_snapshots.py "$SHAPES/snap" --big "$SNAPSHOT_ENTRIES" --torch-shaped
            mv "$SHAPES/snap/big.pickle" "$out" && rmdir "$SHAPES/snap" ;;
        ranks) python3 bench/make_ranks.py --ranks 1024 "$out" >/dev/null ;;
        big-*)
            make "${name#big-}"
            "$GEN" "$SHAPES/${name#big-}.json" "$out" --target-bytes "$BIG" --force >"$SHAPES/$name.gen.txt" ;;
        *) echo "unknown shape: $name" >&2; exit 2 ;;
    esac
}

shapes=("$@")
[[ ${#shapes[@]} -gt 0 ]] || shapes=(current mem ops stack gpu snapshot ranks)
for s in "${shapes[@]}"; do make "$s"; done
ls -la "$SHAPES" >&2
