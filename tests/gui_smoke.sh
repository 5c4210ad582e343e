#!/usr/bin/env bash
# Smoke test of the real viewer window: start a virtual X server, open the sample in
# `vramscope view`, wait for its window, capture it and check that it drew something
# (a GL context under Mesa's llvmpipe, the timeline, the table) and is still running.
# The egui_kittest tests cover behaviour without a display; this covers the window,
# GL and X11 that they cannot.
#
#   tests/gui_smoke.sh [BINARY]        (default target/debug/vramscope)
#
# Needs xvfb xauth libgl1 libglx-mesa0 libgl1-mesa-dri libx11-xcb1 libxcursor1 libxi6
# libxrandr2 libxkbcommon-x11-0 imagemagick xdotool (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/debug/vramscope}
SHOT=${SHOT:-$(mktemp -d)/viewer.png}
DISPLAY_NUM=${DISPLAY_NUM:-:93}

# shellcheck source=tests/xvfb.sh
source tests/xvfb.sh
start_xvfb "$DISPLAY_NUM"
start_viewer "$BIN" samples/transformer-lm-train-cpu.json.gz
sleep 4   # load the sample and draw a few frames
import -window "$WIN" "$SHOT"
kill -0 "$APP" 2>/dev/null || { echo "gui smoke: the viewer died after opening its window" >&2; exit 1; }
colors=$(identify -format '%k' "$SHOT")
size=$(identify -format '%wx%h' "$SHOT")
echo "gui smoke: window $size, $colors colours ($SHOT)"
# An empty or failed GL surface is one or two colours; the drawn viewer has hundreds.
(( colors > 100 )) || { echo "gui smoke: the window looks blank" >&2; exit 1; }
