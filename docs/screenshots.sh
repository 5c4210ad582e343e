#!/usr/bin/env bash
# Regenerate the viewer screenshots in docs/: run the real binary in a virtual X server
# (Xvfb), drive it with xdotool (XTEST input, as a user's mouse and keyboard), capture the
# window with ImageMagick's `import`.
#
#   docs/screenshots.sh [BINARY]              (default: target/release/vramscope)
#   SIZE=1000x700 docs/screenshots.sh [BINARY]
#
# Without SIZE the window is the 1440x900 the viewer opens with and the pictures go to
# docs/*.png; with SIZE=WxH the window is resized to it and they go to
# docs/screenshots/NAME-WxH.png (1000x700 is the smallest size the viewer is laid out for).
#
# Needs: xvfb xauth libgl1 libglx-mesa0 libgl1-mesa-dri libx11-xcb1 libxcursor1 libxi6
#        libxrandr2 libxkbcommon-x11-0 imagemagick xdotool  (see README.md)
# and ../shared/traces beside the repository for the real traces it opens.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/vramscope}
TRACES=../shared/traces
DISPLAY_NUM=${DISPLAY_NUM:-:91}
W=${SIZE:-}; W=${W%x*}; H=${SIZE:-}; H=${H#*x}
W=${W:-1440}; H=${H:-900}
if [[ -n ${SIZE:-} ]]; then OUT=${OUT:-docs/screenshots}; SUFFIX="-${SIZE}"; else OUT=${OUT:-docs}; SUFFIX=; fi

# Positions are written for a layout whose bottom panel's top is at 547 (its tabs at 558)
# and moved to the window's: the menu, tabs and summary strip stay at the top left; the
# bottom panel's height is a share of the window's (40 %, at most 330 points), so its top
# (PT) is measured (tab_row, in tests/xvfb.sh) when a file opens and after each tab click; the plot spans 74 points from
# the left to 12 from the right, from the toolbar to the bottom panel.
PT=547
measure() { PT=$(( $(tab_row "$WIN" "$H") - 11 )); }
# The bottom tabs' centres (x) on a file with allocations (on one without, Categories,
# Allocations, Flame and Segments are not there).
TAB_SEGMENTS=425
TAB_COMPARE_NO_ALLOCATIONS=190
# Rows below the Segments panel's toolbar sit a line lower where its summary line wraps
# (under about 1200 points wide).
WRAP=$(( W < 1200 ? 15 : 0 ))
bx() { echo "$1"; }                                                # left-anchored x
by() { local y=$(( $1 - 547 + PT )); echo $(( y < H - 10 ? y : H - 10 )); }  # bottom panel
tx() { echo $(( 74 + ($1 - 74) * (W - 86) / (1440 - 86) )); }     # a time on the plot
ty() { echo $(( 100 + ($1 - 100) * (PT - 100) / (547 - 100) )); }  # a height on the plot
fx() { echo $(( $1 * W / 1440 )); }                      # a share of the width

# shellcheck source=tests/xvfb.sh
source tests/xvfb.sh
start_xvfb "$DISPLAY_NUM" "$(( W > 1600 ? W : 1600 ))x$(( H > 1000 ? H : 1000 ))"

# start FILE... : run the viewer, size and focus its window (keys need focus: there is no
# window manager), let it load and draw.
start() {
    start_viewer "$BIN" "$@"
    xdotool windowsize --sync "$WIN" "$W" "$H" || true
    xdotool windowfocus --sync "$WIN"
    sleep "${SETTLE:-4}"
    measure
}
stop() { kill "$APP"; wait "$APP" 2>/dev/null || true; APP=; }
move() { xdotool mousemove --window "$WIN" "$1" "$2"; sleep 0.4; }
click() { move "$1" "$2"; xdotool click 1; sleep "${WAIT:-1}"; }
shot() {
    local f="$OUT/${1%.png}$SUFFIX.png"
    sleep 1; import -window "$WIN" "$f"; echo "wrote $f ($(identify -format '%wx%h' "$f"))"
}
# shift_drag X0 X1 Y: select a range on the timeline.
shift_drag() {
    move "$1" "$3"; xdotool keydown shift; sleep 0.3; xdotool mousedown 1; sleep 0.3
    move $(( ($1 + $2) / 2 )) "$3"; move "$2" "$3"; xdotool mouseup 1; sleep 0.3; xdotool keyup shift; sleep 2
}

# 1. A real 2-GPU training run: timeline (allocated, reserved, the cache between them,
#    steps, the peak), the summary strip, the per-op table, a hover readout.
start "$TRACES/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz"
move "$(tx 905)" "$(ty 330)"
shot viewer-timeline.png
# 2. Shift-drag over step 3: the table of that range; a row marks when its op ran.
shift_drag "$(tx 380)" "$(tx 640)" "$(ty 300)"
click 60 "$(by 670)"          # the second row of the table
move "$(tx 1000)" "$(ty 260)"   # in the plot, under the multiples
shot viewer-range.png
stop

# 3. An allocator snapshot with OOMs: the OOM link inspects the first one (its verdict
#    first), then the segments at that instant.
start tests/fixtures/snapshot/oom.pickle
click 760 60
move "$(fx 1100)" "$(by 800)"
shot viewer-oom.png
click "$TAB_SEGMENTS" "$(by 558)"   # the Segments tab
measure
move "$(fx 1100)" "$(by 800)"
shot viewer-segments.png
stop

# 4. Two runs of the same model (num_workers 0 and 4), overlaid, with the per-op diff.
#    Two files open as two tabs (three or more, or a directory, as a rank grid).
start "$TRACES"/real/kineto-resnet50-torch19-w0/*.json.gz "$TRACES"/real/kineto-resnet50-torch19-w4/*.json.gz
click "$TAB_COMPARE_NO_ALLOCATIONS" "$(by 558)"   # Compare: the other run is picked and overlaid
measure
move "$(tx 640)" "$(ty 250)"
shot viewer-compare.png
stop

# 5. The light theme on a real allocator snapshot, its segments by free bytes.
start "$TRACES/real/snapshot-cs336-magma27/memory_snapshot.pickle"
click "$TAB_SEGMENTS" "$(by 558)"   # Segments
measure                       # (in the dark theme: tab_row looks for light text)
click 205 "$(( $(by 636) + WRAP ))"  # order: free bytes
click 54 12; click 100 63     # View › Light theme
move "$(fx 1300)" "$(ty 300)"
shot viewer-light.png
stop

# 6. The capacity line of an H100 (from the trace's deviceProperties), on by default.
start "$TRACES/real/tracelens-h100-qwen-0.5b/"*.json.gz
move "$(tx 700)" "$(ty 300)"
shot viewer-capacity.png
stop
