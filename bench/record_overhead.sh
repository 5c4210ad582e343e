#!/usr/bin/env bash
# Benchmark: what `vramscope record` itself costs while a program runs. vramscope's own CPU
# time (user + system of all its threads, from getrusage(RUSAGE_SELF) at the end of the run,
# written into the recording's end line; the recorded program's time is not in it) per second
# of recording, at --interval-ms 10 and 100, with the fake libnvidia-ml (8 GPUs) and with no
# NVML at all (host memory only), interleaved round by round. Writes the "record" section of
# docs/PERFORMANCE.md (between its markers).
#
#   bench/record_overhead.sh                 # 5 rounds of 15 s per configuration
#   ROUNDS=3 DURATION=10 bench/record_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-target}
[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --release -p vramscope -p vramscope-fake-nvml >/dev/null
exec python3 bench/record_overhead.py "$TARGET/release/vramscope" "$TARGET/release/libfake_nvml.so" \
  "${DOC:-docs/PERFORMANCE.md}" "${ROUNDS:-5}" "${DURATION:-15}"
