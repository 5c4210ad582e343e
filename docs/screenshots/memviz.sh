#!/usr/bin/env bash
# Screenshots of the memory_viz views (docs/screenshots/*-1000x700.png, *-1920x1080.png):
# segments coloured by stack with a private pool, markers with a hovered note, Nsight's
# NVTX lanes, every device as small multiples. The real window under Xvfb, driven by
# xdotool; positions are fractions of the window so both sizes work.
#
#   docs/screenshots/memviz.sh [BINARY]      (default: target/debug/vramscope)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-target/debug/vramscope}
OUT=docs/screenshots
DISPLAY_NUM=${DISPLAY_NUM:-:94}
Xvfb "$DISPLAY_NUM" -screen 0 2000x1200x24 >/dev/null 2>&1 &
XVFB=$!
APP=
trap '[[ -n $APP ]] && kill $APP 2>/dev/null; kill $XVFB 2>/dev/null; true' EXIT
export DISPLAY=$DISPLAY_NUM
sleep 1

# start W H FILE...: the viewer at W×H, loaded.
start() {
    local w=$1 h=$2
    shift 2
    HOME=$(mktemp -d) "$BIN" view "$@" >/dev/null 2>&1 &
    APP=$!
    WIN=
    for _ in $(seq 1 60); do
        WIN=$(xdotool search --onlyvisible --pid "$APP" 2>/dev/null | head -1 || true)
        [[ -n $WIN ]] && break
        sleep 0.5
    done
    xdotool windowsize --sync "$WIN" "$w" "$h"
    xdotool windowmove --sync "$WIN" 0 0
    xdotool windowfocus --sync "$WIN" || true
    W=$w H=$h
    sleep 4
}
stop() { kill "$APP"; wait "$APP" 2>/dev/null || true; APP=; }
# at FX FY: move to a fraction of the window.
at() { xdotool mousemove --window "$WIN" "$(echo "$W * $1 / 1" | bc)" "$(echo "$H * $2 / 1" | bc)"; sleep 0.6; }
# px X Y: move to a position in points.
px() { xdotool mousemove --window "$WIN" "$1" "$2"; sleep 0.6; }
click() { xdotool click 1; sleep 1.5; }
shot() { sleep 1; import -window "$WIN" "$OUT/$1"; echo "wrote $OUT/$1"; }

for size in 1000x700 1920x1080; do
    w=${size%x*} h=${size#*x}
    # Segments coloured by stack at the snapshot, a CUDA graph's private pool framed.
    start "$w" "$h" tests/fixtures/snapshot/graphs.pickle
    px "${SNAPSHOT_X:-250}" "$(( h - ${SNAPSHOT_DY:-305} ))"; click
    px "${SEGMENTS_X:-193}" "$(( h - ${TABS_DY:-340} ))"; click
    at 0.6 0.95
    shot "segments-$size.png"
    # Markers: the pointer on the graph capture's notes.
    at "${NOTE_FX:-0.62}" 0.205
    sleep 1
    shot "markers-$size.png"
    stop
    # Nsight: NVTX lanes under the chart, zoomed onto the first steps.
    start "$w" "$h" tests/fixtures/nsight/cuda-memory.sqlite
    at 0.5 0.3
    for _ in 1 2 3 4 5 6 7 8; do xdotool key w; sleep 0.2; done
    at 0.3 0.3
    shot "nsight-lanes-$size.png"
    stop
    # Small multiples: a real trace with the CPU and cuda:0, the pointer on the CPU's.
    start "$w" "$h" ../shared/traces/real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz
    at 0.45 0.16
    shot "multiples-$size.png"
    stop
done
