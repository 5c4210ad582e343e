#!/usr/bin/env bash
# Regenerate the viewer screenshots in docs/: run the real binary in a virtual X server
# (Xvfb), drive it with xdotool (XTEST input, as a user's mouse and keyboard), capture the
# window with ImageMagick's `import`.
#
#   docs/screenshots.sh [BINARY]      (default: target/release/vramscope)
#
# Needs: xvfb xauth libgl1 libglx-mesa0 libgl1-mesa-dri libx11-xcb1 libxcursor1 libxi6
#        libxrandr2 libxkbcommon-x11-0 imagemagick xdotool  (see README.md)
# and ../shared/traces beside the repository for the real traces it opens.
# Positions below are for the 1440x900 window the viewer opens with.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/vramscope}
OUT=${OUT:-docs}
TRACES=../shared/traces
DISPLAY_NUM=${DISPLAY_NUM:-:91}

# shellcheck source=tests/xvfb.sh
source tests/xvfb.sh
start_xvfb "$DISPLAY_NUM"

# start FILE... : run the viewer, focus its window (keys need focus: there is no window
# manager), let it load and draw.
start() {
    start_viewer "$BIN" "$@"
    xdotool windowfocus --sync "$WIN"
    sleep "${SETTLE:-4}"
}
stop() { kill "$APP"; wait "$APP" 2>/dev/null || true; APP=; }
move() { xdotool mousemove --window "$WIN" "$1" "$2"; sleep 0.4; }
click() { move "$1" "$2"; xdotool click 1; sleep "${WAIT:-1}"; }
shot() { sleep 1; import -window "$WIN" "$OUT/$1"; echo "wrote $OUT/$1 ($(identify -format '%wx%h' "$OUT/$1"))"; }
# shift_drag X0 X1 Y: select a range on the timeline.
shift_drag() {
    move "$1" "$3"; xdotool keydown shift; sleep 0.3; xdotool mousedown 1; sleep 0.3
    move $(( ($1 + $2) / 2 )) "$3"; move "$2" "$3"; xdotool mouseup 1; sleep 0.3; xdotool keyup shift; sleep 2
}

# 1. A real 2-GPU training run: timeline (allocated, reserved, the cache between them,
#    steps, the peak), the summary strip, the per-op table, a hover readout.
start "$TRACES/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz"
move 905 330
shot viewer-timeline.png
# 2. Shift-drag over step 3: the table of that range; a row marks when its op ran.
shift_drag 380 640 300
click 60 670          # the second row of the table
move 1000 200
shot viewer-range.png
stop

# 3. An allocator snapshot with OOMs: the OOM link inspects the first one (its verdict
#    first), then the segments at that instant.
start tests/fixtures/snapshot/oom.pickle
click 760 60
move 1100 800
shot viewer-oom.png
click 193 558         # the Segments tab
move 1100 800
shot viewer-segments.png
stop

# 4. Two runs of the same model (num_workers 0 and 4), overlaid, with the per-op diff.
#    Two inputs open as a rank grid: each run opens from its cuda:0 row's label.
start "$TRACES"/real/kineto-resnet50-torch19-w0/*.json.gz "$TRACES"/real/kineto-resnet50-torch19-w4/*.json.gz
WAIT=6 click 83 147   # w0's cuda:0 row
click 50 35           # back to the grid (its tab)
WAIT=6 click 83 195   # w4's cuda:0 row
click 190 558         # the Compare tab: the other run is picked and overlaid
move 640 250
shot viewer-compare.png
stop

# 5. The light theme on a real allocator snapshot, its segments by free bytes.
start "$TRACES/real/snapshot-cs336-magma27/memory_snapshot.pickle"
click 54 12; click 100 63     # View › Light theme
click 193 558                 # Segments
click 205 636                 # order: free bytes
move 1300 300
shot viewer-light.png
stop
