#!/usr/bin/env bash
# Many ranks at once: `summary` of 1,024 rank traces (bench/make_ranks.py from t2) against
# `summary` of one of them, as content throughput (decompressed MB/s), and peak RSS of the
# fleet run (/usr/bin/time -v). Prints the figures for docs/PERFORMANCE.md.
#
#   bench/ranks.sh [DIR]
#
# DIR defaults to /tmp/vramscope-ranks-1024 (made when missing: ~2 min, 65 MB).
# Environment: VRAMSCOPE (the binary; default target/debug/vramscope — the release build
# takes too long on the shared 2-core machine, so the ratio is debug vs debug), RUNS (timed
# single-file runs, default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp/vramscope-ranks-1024}
BIN=${VRAMSCOPE:-target/debug/vramscope}
RUNS=${RUNS:-20}
if [ ! -d "$DIR" ]; then
    python3 bench/make_ranks.py --ranks 1024 "$DIR"
fi
files=("$DIR"/*.json.gz)
count=${#files[@]}
one=${files[0]}
content_bytes=0
for f in "${files[@]}"; do
    content_bytes=$((content_bytes + $(gzip -dc "$f" | wc -c)))
done
one_bytes=$(gzip -dc "$one" | wc -c)

# Single file: the median of RUNS runs (process start included, as a user pays it).
times=()
for _ in $(seq "$RUNS"); do
    start=$(date +%s.%N)
    "$BIN" summary "$one" > /dev/null
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc -l)")
done
single_s=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')

# The fleet: one run, timed with its peak RSS.
log=$(mktemp)
/usr/bin/time -v "$BIN" summary "$DIR" --format json > "$log.json" 2> "$log"
fleet_s=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; print s}' "$log")
rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
worst=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); w=d['worst']; print(w['rank'], w['peak_allocated_bytes'], round(d['skew']['max_over_median'],3))" "$log.json")
rm -f "$log" "$log.json"

single_mbs=$(echo "$one_bytes / $single_s / 1000000" | bc -l)
fleet_mbs=$(echo "$content_bytes / $fleet_s / 1000000" | bc -l)
printf 'binary            %s\n' "$BIN"
printf 'cores             %s (load %s)\n' "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)"
printf 'inputs            %d (%.1f MB of content, gzip)\n' "$count" "$(echo "$content_bytes / 1000000" | bc -l)"
printf 'single file       %.3f s for %.2f MB: %.1f MB/s (median of %d)\n' "$single_s" "$(echo "$one_bytes / 1000000" | bc -l)" "$single_mbs" "$RUNS"
printf 'all %-14d%.2f s: %.1f MB/s, %.2f x the single-file throughput\n' "$count" "$fleet_s" "$fleet_mbs" "$(echo "$fleet_mbs / $single_mbs" | bc -l)"
printf 'peak RSS          %.1f MB\n' "$(echo "$rss_kb / 1024" | bc -l)"
printf 'worst, peak, skew %s\n' "$worst"
