#!/usr/bin/env bash
# The rank grid's screenshots in docs/screenshots/: the real binary in a virtual X server
# on 64 ranks made by bench/make_ranks.py from a real trace (t2), at 1000x700 and
# 1920x1080: the linked cursor put on the ruler, the pointer over a cell (its readout).
#
#   docs/rank-grid-screenshots.sh [BINARY]   (default: target/debug/vramscope)
#
# Needs what docs/screenshots.sh needs, and ../shared/traces beside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/debug/vramscope}
OUT=${OUT:-docs/screenshots}
RANKS=${RANKS:-$(mktemp -d)}
DISPLAY_NUM=${DISPLAY_NUM:-:93}
[ -e "$RANKS/rank_0.json.gz" ] || python3 bench/make_ranks.py --ranks 64 \
    --trace ../shared/traces/torch-cpu/t2.json.gz "$RANKS"

# shellcheck source=tests/xvfb.sh
source tests/xvfb.sh
Xvfb "$DISPLAY_NUM" -screen 0 2000x1200x24 >/dev/null 2>&1 &
XVFB=$!
export DISPLAY=$DISPLAY_NUM
sleep 1

for size in 1000x700 1920x1080; do
    w=${size%x*}
    h=${size#*x}
    start_viewer "$BIN" "$RANKS"
    xdotool windowsize --sync "$WIN" "$w" "$h"
    xdotool windowfocus --sync "$WIN"
    sleep "${SETTLE:-20}"   # 64 ranks read on all cores (a debug build on a busy machine)
    # The ruler, 45% along: the linked cursor; then the pointer on a cell of the worst
    # rank's third of the grid.
    xdotool mousemove --window "$WIN" $((160 + (w - 170) * 45 / 100)) $((h - 14)) click 1
    sleep 1
    xdotool mousemove --window "$WIN" $((160 + (w - 170) * 62 / 100)) $((h * 45 / 100))
    sleep 2
    import -window "$WIN" "$OUT/rank-grid-$size.png"
    echo "wrote $OUT/rank-grid-$size.png ($(identify -format '%wx%h' "$OUT/rank-grid-$size.png"))"
    kill "$APP"
    wait "$APP" 2>/dev/null || true
    APP=
done
