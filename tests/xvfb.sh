# Shared by tests/gui_smoke.sh and docs/screenshots.sh (source it): a virtual X server and
# the viewer in it, cleaned up on exit.
#   start_xvfb DISPLAY [WxH]  start Xvfb there (a screen of WxH, default 1600x1000) and
#                             export DISPLAY
#   start_viewer BIN FILE...  run `BIN view FILE...` in a fresh HOME; sets APP and WIN
#                             (fails if no window appears within 30 s)

XVFB=
APP=
cleanup_xvfb() {
    # `|| true`: under `set -e` a failed kill (the process already gone) would make the
    # script's exit status 1 after it passed.
    [[ -n $APP ]] && kill "$APP" 2>/dev/null || true
    [[ -n $XVFB ]] && kill "$XVFB" 2>/dev/null || true
}
trap cleanup_xvfb EXIT

start_xvfb() {
    Xvfb "$1" -screen 0 "${2:-1600x1000}x24" >/dev/null 2>&1 &
    XVFB=$!
    export DISPLAY=$1
    # Until the server answers (up to 15 s): on two loaded cores it can take longer than a
    # fixed second, and a viewer started before it exits at once.
    for _ in $(seq 1 60); do
        xdotool getdisplaygeometry >/dev/null 2>&1 && return 0
        sleep 0.25
    done
    echo "Xvfb on $1 did not answer within 15 s" >&2
    return 1
}

start_viewer() {
    local bin=$1
    shift
    local log
    log=$(mktemp)
    HOME=$(mktemp -d) "$bin" view "$@" >/dev/null 2>"$log" &
    APP=$!
    WIN=
    for _ in $(seq 1 60); do
        WIN=$(xdotool search --onlyvisible --pid "$APP" 2>/dev/null | head -1 || true)
        [[ -n $WIN ]] && return 0
        if ! kill -0 "$APP" 2>/dev/null; then
            echo "the viewer exited before opening a window; its last words:" >&2
            tail -n 20 "$log" >&2
            return 1
        fi
        sleep 0.5
    done
    echo "no viewer window after 30 s" >&2
    return 1
}

# tab_row WIN H: the y of the viewer's bottom tabs (their labels' middle) in window WIN of
# height H, as drawn now. The bottom panel's height follows the window's (40 %, at most
# 330 points), so positions in it are found, not assumed: the first light pixel below y=150 in the column of the first
# tab's label ("Ops", x 16..32), where nothing above the tabs draws (the plot and its
# labels start right of it). Dark theme only.
tab_row() {
    local f y
    f=$(mktemp --suffix=.png)
    import -window "$1" "$f"
    y=$(convert "$f" -crop "16x$(($2 - 150))+16+150" +repage -colorspace gray -threshold 50% txt:- |
        awk -F'[,:]' '/#FFFFFF|white|gray\(255\)/ { print $2; exit }')
    rm -f "$f"
    echo $((150 + ${y:-0} + 6))
}
