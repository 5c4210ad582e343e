#!/usr/bin/env bash
# The allocation view and the flame graph on a real allocator snapshot with stacks
# (../shared/traces/real/snapshot-cs336-magma27), at 1000x700 and 1920x1080:
#   docs/screenshots/allocations.sh [BINARY]     (default: target/release/vramscope)
# Same tools as docs/screenshots.sh (Xvfb, xdotool, ImageMagick's import).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-target/release/vramscope}
OUT=docs/screenshots
FILE=../shared/traces/real/snapshot-cs336-magma27/memory_snapshot.pickle
DISPLAY_NUM=${DISPLAY_NUM:-:93}

Xvfb "$DISPLAY_NUM" -screen 0 2000x1200x24 >/dev/null 2>&1 &
XVFB=$!
APP=
trap '[[ -n $APP ]] && kill $APP 2>/dev/null; kill $XVFB 2>/dev/null; true' EXIT
export DISPLAY=$DISPLAY_NUM
sleep 1

move() { xdotool mousemove --window "$WIN" "$1" "$2"; sleep 0.5; }
click() { move "$1" "$2"; xdotool click 1; sleep 1; }
shot() { sleep 1; import -window "$WIN" "$OUT/$1"; echo "wrote $OUT/$1 ($(identify -format '%wx%h' "$OUT/$1"))"; }
# drag X0 Y0 X1 Y1 with the primary button (the bottom panel's edge).
drag() {
    move "$1" "$2"; xdotool mousedown 1; sleep 0.3
    move "$3" "$(( ($2 + $4) / 2 ))"; move "$3" "$4"; xdotool mouseup 1; sleep 0.5
}

for size in 1000x700 1920x1080; do
    W=${size%x*}; H=${size#*x}
    HOME=$(mktemp -d) "$BIN" view "$FILE" >/dev/null 2>&1 &
    APP=$!
    WIN=
    for _ in $(seq 1 60); do
        WIN=$(xdotool search --onlyvisible --pid "$APP" 2>/dev/null | head -1 || true)
        [[ -n $WIN ]] && break
        sleep 0.5
    done
    xdotool windowsize --sync "$WIN" "$W" "$H"; xdotool windowfocus --sync "$WIN"; sleep 4
    # The bottom panel's top edge (330 points above the status bar) up to 40 % of the height.
    drag $(( W / 2 )) $(( H - 22 - 333 )) $(( W / 2 )) $(( H * 35 / 100 ))
    "${TABS:-true}"
    shot "alloc-probe-$size.png"
    kill "$APP"; wait "$APP" 2>/dev/null || true; APP=
done
