#!/usr/bin/env bash
# Screenshots of the memory_viz views (docs/screenshots/*-1000x700.png, *-1920x1080.png):
# segments coloured by stack with a CUDA graph's private pool, markers with a hovered note,
# Nsight's NVTX lanes, every device as small multiples. The real window under Xvfb (a
# fresh server per shot), driven by xdotool.
#
#   docs/screenshots/memviz.sh [BINARY]      (default: target/debug/vramscope)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-target/debug/vramscope}
OUT=docs/screenshots

# shot NAME W H "ACTIONS" FILE: open FILE at W×H, run ACTIONS (xdotool words), capture.
shot() {
    local name=$1 w=$2 h=$3 actions=$4 file=$5
    Xvfb :97 -screen 0 2000x1200x24 >/dev/null 2>&1 &
    local xvfb=$!
    sleep 1
    DISPLAY=:97 HOME=$(mktemp -d) "$BIN" view "$file" >/dev/null 2>&1 &
    local app=$! win=
    for _ in $(seq 1 60); do
        win=$(DISPLAY=:97 xdotool search --onlyvisible --pid "$app" 2>/dev/null | head -1 || true)
        [[ -n $win ]] && break
        sleep 0.5
    done
    DISPLAY=:97 xdotool windowsize --sync "$win" "$w" "$h" || true
    DISPLAY=:97 xdotool windowfocus --sync "$win" || true
    sleep 5
    # shellcheck disable=SC2086
    [[ -n $actions ]] && DISPLAY=:97 xdotool $actions
    sleep 1.5
    DISPLAY=:97 import -window "$win" "$OUT/$name"
    echo "wrote $OUT/$name"
    kill "$app" "$xvfb" 2>/dev/null || true
    wait "$app" "$xvfb" 2>/dev/null || true
}

for size in ${SIZES:-1000x700 1920x1080}; do
    w=${size%x*} h=${size#*x}
    # Segments tab, its Snapshot button: coloured by stack, the private pool framed.
    shot "segments-$size.png" "$w" "$h" \
        "mousemove 425 $((h - 342)) sleep 0.5 click 1 sleep 1.5 mousemove 497 $((h - 310)) sleep 0.5 click 1 sleep 1.5 mousemove 600 $((h - 20))" \
        tests/fixtures/snapshot/graphs.pickle
    # The pointer on the graph capture's user_metadata notes (0.674 of the plot's width).
    shot "markers-$size.png" "$w" "$h" \
        "mousemove $((74 + (w - 86) * 674 / 1000)) 116 sleep 1.5" tests/fixtures/snapshot/graphs.pickle
    # Nsight: zoomed (W) onto the CUDA rows at 2.83 s, NVTX lanes under the chart.
    shot "nsight-lanes-$size.png" "$w" "$h" \
        "mousemove $((74 + (w - 86) * 989 / 1000)) $((h - 450)) sleep 0.5 key --delay 150 w w w w w w w w w w sleep 1" \
        tests/fixtures/nsight/cuda-memory.sqlite
    # A real trace with the CPU and cuda:0: small multiples, the pointer on one.
    shot "multiples-$size.png" "$w" "$h" "mousemove $((w * 45 / 100)) 160 sleep 1" \
        ../shared/traces/real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz
done
