#!/usr/bin/env bash
# The rank grid's memory: peak RSS of `vramscope view DIR` on 1,024 rank traces
# (bench/make_ranks.py from t2; the grid keeps each rank's summary and 512 buckets per
# device) against `vramscope view` of one of them (one tab: the whole recording, its
# timeline and pyramids), both in a virtual X server, side by side. Prints the figures
# for docs/PERFORMANCE.md.
#
#   bench/rank_grid.sh [DIR]
#
# DIR defaults to /tmp/vramscope-ranks-1024 (made when missing: ~2 min, 65 MB).
# Environment: VRAMSCOPE (default target/debug/vramscope), WAIT (seconds each window is
# given to load, default 90), DISPLAY_NUM (default :94), SHOT (a directory: the screen
# is captured there before each viewer is stopped, to check it had loaded).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp/vramscope-ranks-1024}
BIN=${VRAMSCOPE:-target/debug/vramscope}
WAIT=${WAIT:-90}
DISPLAY_NUM=${DISPLAY_NUM:-:94}
[ -d "$DIR" ] || python3 bench/make_ranks.py --ranks 1024 "$DIR"
Xvfb "$DISPLAY_NUM" -screen 0 1600x1000x24 >/dev/null 2>&1 &
XVFB=$!
trap 'kill $XVFB 2>/dev/null || true' EXIT
export DISPLAY=$DISPLAY_NUM
sleep 1

# peak_rss_mb ARGS...: run the viewer WAIT seconds, stop it, print its peak RSS (MB).
peak_rss_mb() {
    local log
    log=$(mktemp)
    HOME=$(mktemp -d) /usr/bin/time -v "$BIN" view "$@" > /dev/null 2> "$log" &
    local timer=$!
    sleep "$WAIT"
    # SHOT=DIR: the screen just before stopping, to check the load had finished.
    [ -z "${SHOT:-}" ] || import -window root "$SHOT/$(date +%s%N).png"
    pkill -TERM -P "$timer" || true
    wait "$timer" 2>/dev/null || true
    awk -F': ' '/Maximum resident set size/ {printf "%.1f\n", $2 / 1024}' "$log"
    rm -f "$log"
}

one=$(peak_rss_mb "$DIR/rank_0.json.gz")
grid=$(peak_rss_mb "$DIR")
printf 'binary                 %s\n' "$BIN"
printf 'cores                  %s (load %s)\n' "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)"
printf 'view rank_0.json.gz    peak RSS %s MB\n' "$one"
printf 'view DIR (%d ranks)  peak RSS %s MB (%.2f x)\n' "$(ls "$DIR" | wc -l)" "$grid" "$(echo "$grid / $one" | bc -l)"
