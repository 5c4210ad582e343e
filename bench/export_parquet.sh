#!/usr/bin/env bash
# `export --format parquet` against `summary` on the same ~100 MB trace, side by side in
# the same run (alternating, so load on the shared machine hits both alike): the median
# of RUNS runs each and their ratio (the target: export at most 2x summary). Then the
# peak RSS of exporting many ranks (bench/make_ranks.py), which must stay bounded.
# Prints the figures for docs/PERFORMANCE.md.
#
#   bench/export_parquet.sh [WORKDIR]
#
# WORKDIR defaults to ${TMPDIR:-/tmp}/vramscope-export-bench (the trace, ~100 MB, made when missing with
# bench/make_big_trace.py; the rank set with make_ranks.py; exports written there and
# removed). Environment: VRAMSCOPE (default target/debug/vramscope: the release build
# takes too long on the shared 2-core machine, so both sides are the same debug build,
# dependencies optimised), RUNS (default 5), RANKS (default 256).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-${TMPDIR:-/tmp}/vramscope-export-bench}
BIN=${VRAMSCOPE:-target/debug/vramscope}
RUNS=${RUNS:-5}
RANKS=${RANKS:-256}
mkdir -p "$WORK"
TRACE="$WORK/big-100mb.json"
if [ ! -f "$TRACE" ]; then
    python3 bench/make_big_trace.py "$TRACE" --target-bytes 100000000 >&2
fi
seconds() { # the command's wall seconds
    local start end
    start=$(date +%s.%N)
    "$@" > /dev/null
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
summary_t=()
export_t=()
for _ in $(seq "$RUNS"); do
    summary_t+=("$(seconds "$BIN" summary "$TRACE")")
    export_t+=("$(seconds "$BIN" export "$TRACE" --format parquet -o "$WORK/out" --force)")
done
summary_s=$(printf '%s\n' "${summary_t[@]}" | median)
export_s=$(printf '%s\n' "${export_t[@]}" | median)
sizes=$(du -b "$WORK"/out/*.parquet | awk '{printf "%s %.1f MB; ", $2, $1/1e6}' | sed "s|$WORK/out/||g")
rows=$("$BIN" export "$TRACE" --format parquet -o "$WORK/out" --force)
rm -rf "$WORK/out"

RANKDIR="$WORK/ranks-$RANKS"
if [ ! -d "$RANKDIR" ]; then
    python3 bench/make_ranks.py --ranks "$RANKS" "$RANKDIR" > /dev/null
fi
log=$(mktemp)
/usr/bin/time -v "$BIN" export "$RANKDIR" --format parquet -o "$WORK/ranks-out" --force > /dev/null 2> "$log"
ranks_s=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; print s}' "$log")
rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
log1=$(mktemp)
one=$(ls "$RANKDIR"/*.json.gz | head -1)
/usr/bin/time -v "$BIN" export "$one" --format parquet -o "$WORK/one-out" --force > /dev/null 2> "$log1"
rss1_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log1")
rm -rf "$log" "$log1" "$WORK/ranks-out" "$WORK/one-out"

printf 'binary            %s\n' "$BIN"
printf 'cores             %s (load %s)\n' "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)"
printf 'trace             %.1f MB\n' "$(echo "$(stat -c %s "$TRACE") / 1000000" | bc -l)"
printf 'summary           %.2f s (median of %d)\n' "$summary_s" "$RUNS"
printf 'export parquet    %.2f s (median of %d): %.2f x summary\n' "$export_s" "$RUNS" "$(echo "$export_s / $summary_s" | bc -l)"
printf 'export wrote      %s\n' "$rows"
printf 'files             %s\n' "$sizes"
printf '%d ranks export   %.1f s, peak RSS %.1f MB (one rank alone: %.1f MB)\n' "$RANKS" "$ranks_s" "$(echo "$rss_kb / 1024" | bc -l)" "$(echo "$rss1_kb / 1024" | bc -l)"
