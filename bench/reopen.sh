#!/usr/bin/env bash
# Benchmark: reopening the pack of a multi-gigabyte trace (issue 16: the `.vsr` reopens in
# <= 10 % of the original's load time). Packs the trace, then times `summary` and `table` on
# the original and on the pack in interleaved rounds, checks both print the same answer, and
# writes the "Reopening the pack" table of docs/PERFORMANCE.md (between its markers).
#
#   bench/reopen.sh [TRACE.json]     # default /tmp/big/t10g.json, made by gen_trace if missing
#   RUNS=3                           # rounds (default 3)
#   TARGET_BYTES=10000000000         # size of the trace made when missing
#   MAX_LOAD=1.0                     # wait for a quiet machine first (default 1.0)
#   SKIP_BUILD=1                     # use the binaries already built
set -euo pipefail
cd "$(dirname "$0")/.."
TRACE=${1:-/tmp/big/t10g.json}
PACK=${TRACE%.json}.vsr
RUNS=${RUNS:-3}
DOC=${DOC:-docs/PERFORMANCE.md}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=$TARGET/release/vramscope
SEED=../shared/traces/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cargo build --release -p vramscope >/dev/null
  cargo build --release -p vramscope-collector --example gen_trace >/dev/null
fi
if [ ! -f "$TRACE" ]; then
  mkdir -p "$(dirname "$TRACE")"
  "$TARGET/release/examples/gen_trace" "$SEED" "$TRACE" --target-bytes "${TARGET_BYTES:-10000000000}"
fi

. bench/quiet.sh
wait_for_quiet

TIMES=$(mktemp)
trap 'rm -f "$TIMES" /tmp/vramscope-reopen-*' EXIT
# One timed run: label, then the command; appends "label seconds rss_kib" to $TIMES.
timed() {
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o /tmp/vramscope-reopen-time "$@" >"/tmp/vramscope-reopen-$label.out"
  echo "$label $(cat /tmp/vramscope-reopen-time)" >>"$TIMES"
}
# The pack is made by this build (its stored answers are trusted only from the build that
# wrote them), timed once.
timed pack "$BIN" pack "$TRACE" -o "$PACK" --force
for _ in $(seq "$RUNS"); do
  timed summary-original "$BIN" summary "$TRACE" --format json
  timed summary-pack "$BIN" summary "$PACK" --format json
  timed table-original "$BIN" table "$TRACE" --format json
  timed table-pack "$BIN" table "$PACK" --format json
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

section=$(python3 - "$TIMES" "$TRACE" "$PACK" "$RUNS" "$LOAD_BEFORE" "$LOAD_AFTER" <<'PY'
import datetime, json, os, statistics, sys
times, trace, pack, runs, load_before, load_after = sys.argv[1:]
rows = {}
for line in open(times):
    label, seconds, rss = line.split()
    rows.setdefault(label, []).append((float(seconds), int(rss)))
def answer(label):
    doc = json.load(open(f"/tmp/vramscope-reopen-{label}.out"))
    # Where the answer came from is all that may differ (summary; table is a list of rows).
    if isinstance(doc, dict):
        for key in ("file", "packed"):
            doc.pop(key, None)
    return doc
for command in ("summary", "table"):
    assert answer(f"{command}-original") == answer(f"{command}-pack"), f"{command}: the pack's answer differs"
def cell(label):
    t = [s for s, _ in rows[label]]
    return f"{min(t):.2f}–{max(t):.2f} s" if len(t) > 1 else f"{t[0]:.2f} s"
out = ["<!-- reopen:begin (written by bench/reopen.sh) -->",
       f"`{os.path.basename(trace)}` ({os.path.getsize(trace)/1e9:.2f} GB) packed by this build in "
       f"{rows['pack'][0][0]:.1f} s (peak RSS {rows['pack'][0][1]/2**20:.1f} GiB) into "
       f"{os.path.getsize(pack)/2**20:.2f} MiB; then the original and the pack alternately, {runs} "
       "rounds (both print the same JSON but the `file` and `packed` fields: checked):", "",
       "| reopening | original | pack | pack / original (medians) | peak RSS (pack) | |",
       "|---|---:|---:|---:|---:|---|"]
for command in ("summary", "table"):
    o = statistics.median(s for s, _ in rows[f"{command}-original"])
    p = statistics.median(s for s, _ in rows[f"{command}-pack"])
    rss = max(r for _, r in rows[f"{command}-pack"]) / 1024
    ratio = p / o
    out.append(f"| `{command}` | {cell(command + '-original')} | {cell(command + '-pack')} | "
               f"**{ratio:.1%}** | {rss:.0f} MiB | {'met' if ratio <= 0.10 else '**not met**'} |")
out += ["", f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
        f"{os.cpu_count()} CPUs; load average {load_before} before, {load_after} after.",
        "<!-- reopen:end -->"]
print("\n".join(out))
PY
)
python3 - "$DOC" "$section" <<'PY'
import re, sys
doc, section = sys.argv[1], sys.argv[2]
text = open(doc).read()
pattern = re.compile(r"<!-- reopen:begin.*?<!-- reopen:end -->", re.S)
if not pattern.search(text):
    sys.exit(f"{doc} has no reopen markers")
open(doc, "w").write(pattern.sub(lambda _: section, text))
PY
echo "$section"
