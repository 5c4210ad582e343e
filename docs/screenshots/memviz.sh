#!/usr/bin/env bash
# Screenshots of the memory_viz views (docs/screenshots/*-1000x700.png, *-1920x1080.png):
# segments coloured by stack with a CUDA graph's private pool, markers with a hovered note,
# Nsight's NVTX lanes, every device as small multiples, the allocation bands with one
# selected, the icicle, the timeline stacked by category. The real window under Xvfb (a
# fresh server per shot), driven by xdotool (tests/xvfb.sh).
#
#   [ONLY=NAME] [SIZES="1000x700 1920x1080"] docs/screenshots/memviz.sh [BINARY]
#                                           (default: target/debug/vramscope)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-target/debug/vramscope}
OUT=docs/screenshots
CS336=../shared/traces/real/snapshot-cs336-magma27/memory_snapshot.pickle
# The bottom tabs' centres (x) on a file with allocations.
TAB_CATEGORIES=195 TAB_ALLOCATIONS=282 TAB_FLAME=355 TAB_SEGMENTS=425

# shellcheck source=tests/xvfb.sh
source tests/xvfb.sh

# shot NAME W H FILE ACTIONS: open FILE at W×H, run the shell function ACTIONS (W, H, WIN
# set), capture.
shot() {
    local name=$1 file=$4 actions=$5
    W=$2 H=$3
    # ONLY=NAME makes just the shots whose names start with NAME.
    [[ $name == "${ONLY:-}"* ]] || return 0
    # The last shot's server gone first (a new one would find its lock and exit).
    for _ in $(seq 1 50); do [[ -e /tmp/.X97-lock ]] || break; sleep 0.2; done
    start_xvfb :97 2000x1200
    start_viewer "$BIN" "$file"
    xdotool windowsize --sync "$WIN" "$W" "$H" || true
    xdotool windowfocus --sync "$WIN" || true
    sleep 5
    "$actions"
    sleep 1.5
    import -window "$WIN" "$OUT/$name"
    echo "wrote $OUT/$name"
    kill "$APP" "$XVFB" 2>/dev/null || true
    wait "$APP" "$XVFB" 2>/dev/null || true
    APP= XVFB=
}
# tab X: click the bottom tab at X; the tabs' row after (measured, as the panel's height
# follows the window's) in TABS.
tab() {
    xdotool mousemove "$1" "$(tab_row "$WIN" "$H")" sleep 0.5 click 1 sleep 1.5
    TABS=$(tab_row "$WIN" "$H")
}

# Segments at the snapshot: coloured by stack, the private pool framed; the pointer left
# on the toolbar (over the status bar its tooltip would cover the rows).
segments() {
    tab "$TAB_SEGMENTS"
    xdotool mousemove 497 $((TABS + 32)) sleep 0.5 click 1 sleep 1.5 mousemove $((W / 2)) 91
}
# The pointer on the graph capture's user_metadata notes (0.674 of the plot's width).
markers() { xdotool mousemove $((74 + (W - 86) * 674 / 1000)) 116 sleep 1.5; }
# Nsight: zoomed (W) onto the CUDA rows at 2.83 s, NVTX lanes under the chart.
lanes() {
    xdotool mousemove $((74 + (W - 86) * 989 / 1000)) $((H - 450)) sleep 0.5 \
        key --delay 150 w w w w w w w w w w sleep 1
}
# A real trace with the CPU and cuda:0: small multiples, the pointer on one.
multiples() { xdotool mousemove $((W * 45 / 100)) 160 sleep 1; }
# The allocation bands of a real snapshot: a long-lived band clicked (its stacks at the
# right), another hovered.
allocations() {
    tab "$TAB_ALLOCATIONS"
    xdotool mousemove $((W * 29 / 100)) $((TABS + (H - TABS) * 70 / 100)) sleep 0.5 click 1 sleep 1 \
        mousemove $((W * 22 / 100)) $((TABS + (H - TABS) * 55 / 100)) sleep 1
}
# Its icicle at the peak, the pointer on a frame.
flame() {
    tab "$TAB_FLAME"
    xdotool mousemove $((W * 30 / 100)) $((TABS + 75)) sleep 1
}
# The timeline stacked by category (the toolbar's "by category", right-aligned), a click
# in step 2, the pointer in step 0, the Categories panel.
categories() {
    tab "$TAB_CATEGORIES"
    xdotool mousemove $((W - 150)) 91 sleep 0.5 click 1 sleep 1.5
    TABS=$(tab_row "$WIN" "$H")
    local y=$(((TABS - 120) * 60 / 100 + 120))
    xdotool mousemove $((74 + (W - 86) * 79 / 100)) "$y" sleep 0.5 click 1 sleep 1 \
        mousemove $((74 + (W - 86) * 50 / 100)) "$y" sleep 1
}

for size in ${SIZES:-1000x700 1920x1080}; do
    w=${size%x*} h=${size#*x}
    shot "segments-$size.png" "$w" "$h" tests/fixtures/snapshot/graphs.pickle segments
    shot "markers-$size.png" "$w" "$h" tests/fixtures/snapshot/graphs.pickle markers
    shot "nsight-lanes-$size.png" "$w" "$h" tests/fixtures/nsight/cuda-memory.sqlite lanes
    shot "multiples-$size.png" "$w" "$h" \
        ../shared/traces/real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz multiples
    shot "allocations-$size.png" "$w" "$h" "$CS336" allocations
    shot "flame-$size.png" "$w" "$h" "$CS336" flame
    shot "categories-$size.png" "$w" "$h" tests/fixtures/categories/c01_lm_adamw.json.gz categories
done
