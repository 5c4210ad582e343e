# Sourced by the benchmarks. wait_for_quiet: wait (up to 10 min) until the 1-minute load
# average is below MAX_LOAD (default 1.0) — other builds share these cores — then set
# LOAD_BEFORE to the load averages the timing starts at.
wait_for_quiet() {
  MAX_LOAD=${MAX_LOAD:-1.0}
  for _ in $(seq 60); do
    awk -v max="$MAX_LOAD" '{ exit !($1 < max) }' /proc/loadavg && break
    echo "load $(cut -d' ' -f1-3 /proc/loadavg) is above $MAX_LOAD; waiting" >&2
    sleep 10
  done
  LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
}
