# Shared by tests/gui_smoke.sh and docs/screenshots.sh (source it): a virtual X server and
# the viewer in it, cleaned up on exit.
#   start_xvfb DISPLAY [WxH]  start Xvfb there (a screen of WxH, default 1600x1000) and
#                             export DISPLAY
#   start_viewer BIN FILE...  run `BIN view FILE...` in a fresh HOME; sets APP and WIN
#                             (fails if no window appears within 30 s)

XVFB=
APP=
cleanup_xvfb() {
    [[ -n $APP ]] && kill "$APP" 2>/dev/null
    [[ -n $XVFB ]] && kill "$XVFB" 2>/dev/null
    true
}
trap cleanup_xvfb EXIT

start_xvfb() {
    Xvfb "$1" -screen 0 "${2:-1600x1000}x24" >/dev/null 2>&1 &
    XVFB=$!
    export DISPLAY=$1
    sleep 1
}

start_viewer() {
    local bin=$1
    shift
    HOME=$(mktemp -d) "$bin" view "$@" >/dev/null 2>&1 &
    APP=$!
    WIN=
    for _ in $(seq 1 60); do
        WIN=$(xdotool search --onlyvisible --pid "$APP" 2>/dev/null | head -1 || true)
        [[ -n $WIN ]] && return 0
        kill -0 "$APP" 2>/dev/null || { echo "the viewer exited before opening a window" >&2; return 1; }
        sleep 0.5
    done
    echo "no viewer window after 30 s" >&2
    return 1
}
