#!/usr/bin/env bash
# Scaling benchmark: `vramscope summary` on traces of ~100 MB, 2 GB and 10 GB made by
# bench/gen_trace.rs from one real trace's steps, with wall time and peak RSS, their ratios
# to the 100 MB run, and the Python baseline where it fits in memory. Writes the "Scaling"
# section of docs/PERFORMANCE.md (between its markers).
#
#   bench/scale.sh [BASE.json[.gz]]     # default: the HTA df_index_resolver trace (2x V100)
#
# Environment:
#   SIZES        target sizes in bytes (default "107000000 2000000000 10000000000")
#   SCRATCH      where the one generated trace lives (default /tmp/vramscope-scale); it is
#                deleted after each size, so only one is on disk at a time
#   MIN_FREE_GB  refuse a size that would leave less than this free (default 25)
#   VS           the vramscope binary (default target/release/vramscope, built unless SKIP_BUILD=1)
#   GEN          the generator (default target/release/examples/gen_trace, built likewise)
#   RUNS         timed runs at the smallest size (default 3; larger sizes run once)
#   BENCH_NOTE   a sentence about the machine and build for the report
#   DOC          the report (default docs/PERFORMANCE.md)
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:-../shared/traces/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz}
SIZES=${SIZES:-"107000000 2000000000 10000000000"}
SCRATCH=${SCRATCH:-/tmp/vramscope-scale}
MIN_FREE_GB=${MIN_FREE_GB:-25}
RUNS=${RUNS:-3}
DOC=${DOC:-docs/PERFORMANCE.md}
VS=${VS:-target/release/vramscope}
GEN=${GEN:-target/release/examples/gen_trace}
OUT=bench/out/scale
mkdir -p "$OUT" "$SCRATCH"
rm -f "$OUT"/*
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    cargo build --release -p vramscope
    cargo build --release -p vramscope-collector --example gen_trace
fi
TRACE=$SCRATCH/scale.json
trap 'rm -f "$TRACE" "$TRACE.tmp"' EXIT

timed() { # timed NAME CMD...: one run, "seconds max_rss_kib" appended to $OUT/NAME.tsv
    local name=$1
    shift
    /usr/bin/time -f "%e %M" -o "$OUT/time.tmp" "$@" >"$OUT/$name.json"
    cat "$OUT/time.tmp" >>"$OUT/$name.tsv"
}

# The base itself, and a 3x copy: the same peak, three times the events.
timed base "$VS" summary "$BASE" --format json
"$GEN" "$BASE" "$TRACE" --copies 3 --force >"$OUT/gen-x3.txt"
timed x3 "$VS" summary "$TRACE" --format json
rm -f "$TRACE"

for size in $SIZES; do
    free_kib=$(df -k --output=avail "$SCRATCH" | tail -1)
    if ((free_kib / 1024 / 1024 - size / 1000000000 < MIN_FREE_GB)); then
        echo "skipping $size bytes: only $((free_kib / 1024 / 1024)) GiB free" >&2
        continue
    fi
    "$GEN" "$BASE" "$TRACE" --target-bytes "$size" --force | tee "$OUT/gen-$size.txt"
    bytes=$(stat -c %s "$TRACE")
    echo "$bytes" >"$OUT/bytes-$size.txt"
    runs=1
    [[ $size == "${SIZES%% *}" ]] && runs=$RUNS
    # The Python baseline holds the whole document (~6.3x the file): only where that fits
    # in half of the memory available now.
    avail_kib=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
    python=0
    ((bytes / 1024 * 7 < avail_kib / 2)) && python=1
    for _ in $(seq "$runs"); do
        timed "vs-$size" "$VS" summary "$TRACE" --format json
        if ((python)); then
            timed "py-$size" python3 bench/baseline.py summary "$TRACE"
        fi
    done
    rm -f "$TRACE"
done

python3 bench/scale_report.py "$OUT" "$BASE" "$DOC" "${BENCH_NOTE:-}" "$VS"
