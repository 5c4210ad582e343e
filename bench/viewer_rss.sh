#!/usr/bin/env bash
# The viewer's peak memory and load time on one file: `vramscope view FILE` in a virtual X
# server, until the process's CPU time stops growing (loaded and idle), then its peak RSS
# (VmHWM) and current RSS from /proc, and a screenshot to look at.
#
#   bench/viewer_rss.sh FILE [SCREENSHOT.png]     # needs Xvfb and ImageMagick's import
#   VS=path/to/vramscope bench/viewer_rss.sh FILE
#   EARLY_S=3 bench/viewer_rss.sh FILE   # also a screenshot EARLY_S seconds after start
#                                          # (the overview while the file is read), to
#                                          # SCREENSHOT with -early before .png
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=$1
SHOT=${2:-/tmp/vramscope-viewer-rss.png}
VS=${VS:-target/release/vramscope}
# Settled: CPU time grew by under SETTLED_TICKS clock ticks in each of SETTLED_POLLS polls.
SETTLED_TICKS=5
SETTLED_POLLS=4
POLL_S=0.5
MAX_POLLS=1200 # 10 minutes

source tests/xvfb.sh
start_xvfb :77
start=$(date +%s.%N)
HOME=$(mktemp -d) "$VS" view "$FILE" >/dev/null 2>&1 &
APP=$!
previous=0
quiet=0
if [[ -n "${EARLY_S:-}" ]]; then
    sleep "$EARLY_S"
    import -window root "${SHOT%.png}-early.png"
    echo "screenshot ${EARLY_S} s after start: ${SHOT%.png}-early.png"
fi
for i in $(seq 1 "$MAX_POLLS"); do
    sleep "$POLL_S"
    ticks=$(awk '{print $14 + $15}' "/proc/$APP/stat")
    if ((ticks - previous < SETTLED_TICKS && i > 6)); then quiet=$((quiet + 1)); else quiet=0; fi
    previous=$ticks
    ((quiet >= SETTLED_POLLS)) && break
done
end=$(date +%s.%N)
hwm_kib=$(awk '/VmHWM/ {print $2}' "/proc/$APP/status")
rss_kib=$(awk '/VmRSS/ {print $2}' "/proc/$APP/status")
import -window root "$SHOT"
file_bytes=$(stat -c %s "$FILE")
python3 - "$FILE" "$file_bytes" "$hwm_kib" "$rss_kib" "$start" "$end" "$SETTLED_POLLS" "$POLL_S" "$SHOT" <<'PY'
import sys
f, size, hwm, rss, t0, t1, polls, poll, shot = sys.argv[1:]
size, hwm, rss = int(size), int(hwm) * 1024, int(rss) * 1024
settled = float(t1) - float(t0) - int(polls) * float(poll)
print(f"{f}: {size / 1e9:.2f} GB; peak RSS {hwm / 2**30:.2f} GiB ({hwm / size:.2f}x the file), "
      f"{rss / 2**30:.2f} GiB once loaded; settled after ~{settled:.1f} s; screenshot {shot}")
PY
