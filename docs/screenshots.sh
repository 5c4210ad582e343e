#!/usr/bin/env bash
# Regenerate the viewer screenshots in docs/: run the real binary in a virtual X server
# (Xvfb), drive it with xdotool, capture the window with ImageMagick's `import`.
#
#   docs/screenshots.sh [BINARY]      (default: target/release/vramscope)
#
# Needs: xvfb xauth libgl1 libglx-mesa0 libgl1-mesa-dri libx11-xcb1 libxcursor1 libxi6
#        libxrandr2 libxkbcommon-x11-0 imagemagick xdotool  (see README.md)
# and ../shared/traces beside the repository for the real traces it opens.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/vramscope}
OUT=${OUT:-docs}
TRACES=../shared/traces
DISPLAY_NUM=${DISPLAY_NUM:-:91}
W=1440 H=900

Xvfb "$DISPLAY_NUM" -screen 0 1600x1000x24 >/dev/null 2>&1 &
XVFB=$!
APP=
cleanup() { [[ -n $APP ]] && kill "$APP" 2>/dev/null; kill "$XVFB" 2>/dev/null; }
trap cleanup EXIT
export DISPLAY=$DISPLAY_NUM
sleep 1
# A throwaway home: no recent files or settings from the user's own runs.
export HOME
HOME=$(mktemp -d)

# start FILE... : run the viewer, wait for its window, print nothing; sets APP and WIN.
start() {
    "$BIN" view "$@" >/dev/null 2>&1 &
    APP=$!
    WIN=$(xdotool search --sync --onlyvisible --pid "$APP" | head -1)
    xdotool windowsize "$WIN" $W $H windowmove "$WIN" 0 0
    sleep "${SETTLE:-4}"
}
stop() { kill "$APP"; wait "$APP" 2>/dev/null || true; APP=; }
shot() { sleep 1; import -window "$WIN" "$OUT/$1"; echo "wrote $OUT/$1"; }
click() { xdotool mousemove --window "$WIN" "$1" "$2" click 1; sleep 1; }
key() { xdotool key --window "$WIN" "$@"; sleep 1; }

# 1. A real GPU training trace: timeline, peak, cache, steps, the per-op table.
start "$TRACES/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz"
xdotool mousemove --window "$WIN" 880 330
shot viewer-timeline.png
# 2. Shift-drag a range over one step: the table follows it.
xdotool mousemove --window "$WIN" 380 300 keydown shift mousedown 1 mousemove --window "$WIN" 640 300 \
    mouseup 1 keyup shift
sleep 2
xdotool mousemove --window "$WIN" 900 800
shot viewer-range.png
stop

# 3. An allocator snapshot with OOMs: the inspector at the first OOM, then the segments.
start tests/fixtures/snapshot/oom.pickle
click 420 60   # the OOM link in the summary strip
shot viewer-oom-inspector.png
stop
