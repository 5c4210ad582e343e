#!/usr/bin/env bash
# vramscope benchmark: `table` and `summary` on a large real trace, side by side with a Python
# baseline doing the same work (bench/baseline.py) and with serde_json parse-only of the same
# bytes (collector/examples/serde_parse_only.rs). Writes docs/PERFORMANCE.md.
#
#   bench/run.sh [TRACE]
#
# TRACE defaults to /tmp/bench/big.json, which is generated when missing (a real torch.profiler
# trace of a small CPU training run, ~110 MB; needs `pip install torch`, takes about a minute).
# A gzip copy (gzip -6, next to the plain file) is measured too, for vramscope only.
#
# Environment:
#   CARGO_TARGET_DIR  where cargo builds (default ./target)
#   RUNS              timed runs per vramscope command (default 10)
#   PY_RUNS           timed runs per Python command (default 3)
#   PYTHON            the Python interpreter (default python3)
#   BENCH_NOTE        a sentence about the machine to put in the report (e.g. "shared VM")
#   MAX_LOAD          wait (up to 10 min) until the 1-minute load average is below this
#                     before timing (default 1.0; the machine is shared)
#   SKIP_BUILD=1      use the binaries already in the target dir instead of running cargo
#   PERF=1            also profile `vramscope table` with perf and add the top symbols
#   DOC               where to write the report (default docs/PERFORMANCE.md)
# The runs being compared are interleaved: every round runs each command once, so a busy
# spell on the shared machine hits all of them alike; medians and minimums are reported.
# Raw results (times per run, outputs, logs) go to bench/out/ (git-ignored).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
DEFAULT_TRACE=/tmp/bench/big.json
TRACE=${1:-$DEFAULT_TRACE}
RUNS=${RUNS:-10}
PY_RUNS=${PY_RUNS:-3}
PYTHON=${PYTHON:-python3}
DOC=${DOC:-docs/PERFORMANCE.md}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.tsv "$OUT"/*.txt "$OUT"/perf.data*

say() { printf '\n== %s\n' "$*" >&2; }

# --- the trace --------------------------------------------------------------------------------
if [[ ! -f $TRACE ]]; then
    if [[ $TRACE != "$DEFAULT_TRACE" ]]; then
        echo "no such trace: $TRACE" >&2
        exit 1
    fi
    say "generating $TRACE (torch.profiler, CPU training run, 44 steps)"
    "$PYTHON" -c 'import torch' 2>/dev/null || "$PYTHON" -m pip install torch
    mkdir -p "$(dirname "$TRACE")"
    "$PYTHON" ../shared/traces/torch-cpu/gen_truth.py "$TRACE" --steps 44 --layers 4 --dim 256 --seq 128
fi

is_gzip() { [[ $(head -c2 "$1" | od -An -tx1 | tr -d ' \n') == 1f8b ]]; }
if is_gzip "$TRACE"; then
    GZ=$TRACE
    PLAIN=$OUT/$(basename "${TRACE%.gz}")
    [[ $PLAIN == *.json ]] || PLAIN=$PLAIN.json
    say "inflating $GZ to $PLAIN"
    gzip -dc "$GZ" >"$PLAIN"
else
    PLAIN=$TRACE
    GZ=$TRACE.gz
    if [[ ! -f $GZ || $GZ -ot $PLAIN ]]; then
        say "compressing $PLAIN to $GZ (gzip -6)"
        gzip -6 -c "$PLAIN" >"$GZ.tmp" && mv "$GZ.tmp" "$GZ"
    fi
fi
# torch's own key_averages(), written by gen_truth.py next to the trace.
TRUTH=${PLAIN%.json}.key_averages.json
[[ -f $TRUTH ]] || TRUTH=${TRACE%.json*}.key_averages.json

# --- build ------------------------------------------------------------------------------------
VS=$TARGET/release/vramscope
PARSE_ONLY=$TARGET/release/examples/serde_parse_only
if [[ ${SKIP_BUILD:-0} == 1 ]]; then
    for bin in "$VS" "$PARSE_ONLY"; do
        [[ -x $bin ]] || { echo "SKIP_BUILD=1 but $bin is missing" >&2; exit 1; }
    done
    BUILD_NOTE="binaries not rebuilt (SKIP_BUILD=1); vramscope built $(date -u -r "$VS" '+%Y-%m-%d %H:%M UTC')"
else
    say "building release into $TARGET"
    cargo build --release -p vramscope
    cargo build --release -p vramscope-collector --example serde_parse_only
    BUILD_NOTE="built by this run"
fi

# --- correctness: both implementations must agree with torch and with each other --------------
say "checking outputs"
"$VS" table "$PLAIN" --format json --sort none >"$OUT/vramscope.table.json"
"$VS" table "$GZ" --format json --sort none >"$OUT/vramscope.table.gz.json"
"$VS" summary "$PLAIN" --format json >"$OUT/vramscope.summary.json"
"$PYTHON" bench/baseline.py table "$PLAIN" >"$OUT/baseline.table.json"
"$PYTHON" bench/baseline.py summary "$PLAIN" >"$OUT/baseline.summary.json"
"$PYTHON" - "$OUT" "$TRUTH" >"$OUT/checks.txt" <<'EOF'
import json, os, sys
out, truth_path = sys.argv[1], sys.argv[2]
load = lambda n: json.load(open(os.path.join(out, n)))
vs, vs_gz, py = load("vramscope.table.json"), load("vramscope.table.gz.json"), load("baseline.table.json")
key = lambda rows: sorted(json.dumps(r, sort_keys=True) for r in rows)
lines = []
if os.path.exists(truth_path):
    truth = json.load(open(truth_path))["key_averages"]
    lines.append(f"- Python baseline `table` == torch `key_averages()` ({len(truth)} rows, as a list, in order): "
                 f"**{py == truth}**")
    lines.append(f"- vramscope `table --sort none` == torch `key_averages()` (as a list, in order): "
                 f"**{vs == truth}**; the .json.gz input gives the same rows: **{vs_gz == vs}**")
else:
    lines.append(f"- no torch truth file ({truth_path}); compared the two implementations only")
lines.append(f"- vramscope `table` == Python baseline `table` (same rows): **{key(vs) == key(py)}**")
vsum, psum = load("vramscope.summary.json"), load("baseline.summary.json")
agree = len(vsum["devices"]) == len(psum["devices"]) and all(
    v["device_type"] == p["device_type"] and v["memory_events"] == p["memory_events"]
    and v["peak_allocated_bytes"] == p["peak_allocated_bytes"]
    and v["final_allocated_bytes"] == p["final_allocated_bytes"]
    for v, p in zip(vsum["devices"], psum["devices"]))
lines.append(f"- vramscope `summary` == Python baseline `summary` (per device: memory events, peak and final "
             f"allocated): **{agree}**")
print("\n".join(lines))
EOF
cat "$OUT/checks.txt" >&2

# --- timing -----------------------------------------------------------------------------------
# Wait for a quiet machine (other builds share these cores), then time all commands in
# interleaved rounds: round r runs every vramscope command and, for r <= PY_RUNS, every Python
# command, each once, after one warm-up round. Peak RSS: the largest of three runs under
# /usr/bin/time (it is nearly deterministic).
. bench/quiet.sh
wait_for_quiet
RESULTS=$OUT/results.tsv
VS="$VS" PY="$PYTHON" PLAIN="$PLAIN" GZ="$GZ" "$PYTHON" - "$OUT" "$RUNS" "$PY_RUNS" >"$RESULTS" <<'PY'
import json, os, statistics, subprocess, sys, time
out, runs, py_runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
vs, py, plain, gz = os.environ["VS"], os.environ["PY"], os.environ["PLAIN"], os.environ["GZ"]
commands = [  # id, label, input, argv, is_python
    ("vs_table", "vramscope table --format json", plain, [vs, "table", plain, "--format", "json"], False),
    ("vs_summary", "vramscope summary --format json", plain, [vs, "summary", plain, "--format", "json"], False),
    ("py_table", "python baseline.py table", plain, [py, "bench/baseline.py", "table", plain], True),
    ("py_summary", "python baseline.py summary", plain, [py, "bench/baseline.py", "summary", plain], True),
    ("py_load", "python baseline.py load (json.load only)", plain, [py, "bench/baseline.py", "load", plain], True),
    ("vs_table_gz", "vramscope table --format json (.json.gz)", gz, [vs, "table", gz, "--format", "json"], False),
    ("vs_summary_gz", "vramscope summary --format json (.json.gz)", gz, [vs, "summary", gz, "--format", "json"], False),
]


def once(argv):
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


times = {c[0]: [] for c in commands}
for c in commands:  # warm-up round
    once(c[3])
for r in range(max(runs, py_runs)):
    for cid, _, _, argv, is_py in commands:
        if r < (py_runs if is_py else runs):
            times[cid].append(once(argv))
    print(f"round {r + 1} done", file=sys.stderr)
json.dump(times, open(os.path.join(out, "times.json"), "w"), indent=1)
for cid, label, path, argv, _ in commands:
    rss = 0
    for _ in range(3):
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", os.path.join(out, "rss.txt")] + argv,
                       stdout=subprocess.DEVNULL, check=True)
        rss = max(rss, int(open(os.path.join(out, "rss.txt")).read().split()[-1]))
    t = times[cid]
    print(f"{cid}\t{label}\t{path}\t{statistics.median(t)}\t{min(t)}\t{rss}")
PY
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

say "serde_json parse-only"
"$PARSE_ONLY" "$PLAIN" "$RUNS" | tee "$OUT/parse_only.txt" >&2
/usr/bin/time -f %M -o "$OUT/rss.txt" "$PARSE_ONLY" "$PLAIN" 1 >/dev/null
PARSE_RSS=$(tail -n1 "$OUT/rss.txt")

# --- where the time goes (optional) -----------------------------------------------------------
if [[ ${PERF:-0} == 1 ]] && command -v perf >/dev/null; then
    say "perf record: vramscope table"
    perf record -q -F 2999 -g -o "$OUT/perf.data" -- "$VS" table "$PLAIN" --format json >/dev/null 2>&1
    perf report -i "$OUT/perf.data" --no-children --sort symbol --stdio -g none --percent-limit 1.5 2>/dev/null |
        grep -E '^ +[0-9]' | sed -E 's/[ -]+$//' | cut -c1-130 | head -25 >"$OUT/perf.txt" || true
fi

# --- the report -------------------------------------------------------------------------------
say "writing $DOC"
MACHINE_CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)
MACHINE_MEM=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT + uncommitted changes"
BENCH_NOTE=${BENCH_NOTE:-}
NPROC=$(nproc)
KERNEL=$(uname -r)
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
PYVER=$("$PYTHON" --version 2>&1)
RUSTC=$(rustc --version)
export BUILD_NOTE MACHINE_CPU MACHINE_MEM COMMIT BENCH_NOTE NPROC KERNEL DATE PYVER RUSTC
export LOAD_BEFORE LOAD_AFTER
export PLAIN GZ TRACE RUNS PY_RUNS PARSE_RSS TRUTH
mkdir -p "$(dirname "$DOC")"
"$PYTHON" - "$OUT" "$DOC" <<'EOF'
import json, os, sys
out, doc = sys.argv[1], sys.argv[2]
E = os.environ
rows = {}
for line in open(os.path.join(out, "results.tsv")):
    i, label, path, med, tmin, rss = line.rstrip("\n").split("\t")
    rows[i] = dict(label=label, path=path, t=float(med), tmin=float(tmin), rss=int(rss) * 1024,
                   size=os.path.getsize(path))
po = dict(kv.split("=") for kv in open(os.path.join(out, "parse_only.txt")).read().split())
json_bytes = int(po["bytes"])
po_t = float(po["median_s"])
po_min = float(po["best_s"])
po_rss = int(E["PARSE_RSS"]) * 1024
summary = json.load(open(os.path.join(out, "vramscope.summary.json")))
checks = open(os.path.join(out, "checks.txt")).read().strip()

MB = 1e6
def mib(b): return f"{b / 2**20:.0f} MiB"
def fmt_t(t): return f"{t * 1000:.0f} ms" if t < 1 else f"{t:.2f} s"
def mbps(t): return json_bytes / MB / t

def line(i, py=None, base="1× (baseline)"):
    r = rows[i]
    rss_ratio = f"{r['rss'] / r['size']:.2f}×"
    if r["size"] != json_bytes:  # gzip input: also relative to the JSON it holds
        rss_ratio += f" of the .gz, {r['rss'] / json_bytes:.2f}× of the JSON"
    vs_py = f"**{rows[py]['t'] / r['t']:.1f}×** faster" if py else base
    return (f"| `{r['label']}` | {fmt_t(r['t'])} (min {fmt_t(r['tmin'])}) | {mbps(r['t']):.0f} | {mib(r['rss'])} | {rss_ratio} | "
            f"{vs_py} | {po_t / r['t'] * 100:.0f} % |")

def verdict(ok): return "met" if ok else "**missed**"
def ratios(k):  # k = "t" (medians) or "tmin" (minimums)
    p = po_t if k == "t" else po_min
    return (min(rows["py_table"][k] / rows["vs_table"][k], rows["py_summary"][k] / rows["vs_summary"][k]),
            min(p / rows["vs_table"][k], p / rows["vs_summary"][k]))
t_ratio, thr = ratios("t")
t_ratio_min, thr_min = ratios("tmin")
rss = max(rows["vs_table"]["rss"], rows["vs_summary"]["rss"]) / json_bytes

# Issue 16's target for `table` and `summary` against the Python baseline.
GOAL_X = 50
need = max(po_t / (rows["py_table"]["t"] / GOAL_X), po_t / (rows["py_summary"]["t"] / GOAL_X))
ceiling = (": faster than serde_json alone can deserialize the events on one thread, so it takes\n"
           "parsing on several threads or skipping the bytes the analyses never use."
           if need > 1 else ".")
note = E["BENCH_NOTE"]
perf_path = os.path.join(out, "perf.txt")
perf = open(perf_path).read().rstrip() if os.path.exists(perf_path) else ""
gz_size = os.path.getsize(E["GZ"])
d = summary["devices"]
mem_line = ", ".join(f"{x['device']}: peak {x['peak_allocated_bytes']:,} B" for x in d)

md = f"""<!-- traces:begin (written by bench/run.sh) -->
## Chrome traces: `table` and `summary`

How fast `vramscope table` and `vramscope summary` read a large real trace, against a Python
baseline doing the same work and against `serde_json` parsing the same bytes and nothing else.
Written by `bench/run.sh`; rerun it rather than editing the numbers by hand.

### Result

| target | measured | |
|---|---|---|
| ≥ {GOAL_X}× faster than the Python baseline (issue 16; the first wave's target was 25×) | {t_ratio:.1f}× (the lower of `table`, `summary`; {t_ratio_min:.1f}× from minimum times) | {verdict(t_ratio >= GOAL_X)} |
| ≥ 70 % of serde_json parse-only throughput | {thr * 100:.0f} % (the lower of `table`, `summary`; {thr_min * 100:.0f} % from minimum times) | {verdict(thr >= 0.70)} |
| peak RSS ≤ 0.3× the file size | {rss:.2f}× (the higher of `table`, `summary`) | {verdict(rss <= 0.3)} |

On this machine serde_json parse-only of the file (no analysis, no output) is
{rows['py_table']['t'] / po_t:.1f}× faster than the Python `table` and {rows['py_summary']['t'] / po_t:.1f}× faster
than the Python `summary`: Python's time is mostly `json.load`, a C parser ({fmt_t(rows['py_load']['t'])}
for `json.load` alone, {fmt_t(rows['py_table']['t'])} for the whole `table`). {GOAL_X}× therefore needs `table` in ≤ {fmt_t(rows['py_table']['t'] / GOAL_X)}
({json_bytes / MB / (rows['py_table']['t'] / GOAL_X):.0f} MB/s, {po_t / (rows['py_table']['t'] / GOAL_X) * 100:.0f} % of parse-only) and `summary` in
≤ {fmt_t(rows['py_summary']['t'] / GOAL_X)} ({po_t / (rows['py_summary']['t'] / GOAL_X) * 100:.0f} % of parse-only){ceiling}

### Numbers

Input: `{E['PLAIN']}`, {json_bytes:,} bytes ({json_bytes / MB:.1f} MB) of JSON, {summary['events']:,} trace
events ({summary['ops']:,} ops, {summary['memory_events']:,} memory events, {summary['steps']} steps; {mem_line}).
The gzip rows read the same trace compressed with `gzip -6`: {gz_size:,} bytes ({gz_size / MB:.1f} MB).

MB/s is MB (10^6 bytes) of JSON text per second of wall time, for the gzip rows too, so all rows
compare; times are medians (and minimums) of {E['RUNS']} runs (vramscope) and {E['PY_RUNS']} runs (Python), run in
interleaved rounds (each round runs every command once) after one warm-up round, with the file
in the page cache; peak RSS is the maximum resident set size
(`/usr/bin/time -f %M`), the largest of 3 runs. "vs serde parse-only" is the serde_json
parse-only time divided by the command's time, i.e. the command's throughput as a share of
parse-only throughput.

| command | median time | MB/s | peak RSS | peak RSS / file size | vs Python | vs serde parse-only |
|---|---:|---:|---:|---|---|---:|
{line("vs_table", "py_table")}
{line("vs_summary", "py_summary")}
{line("py_table")}
{line("py_summary")}
{line("py_load", base="(Python's parse alone)")}
| `serde_json::from_slice` parse-only (`serde_parse_only` example) | {fmt_t(po_t)} (min {fmt_t(po_min)}) | {mbps(po_t):.0f} | {mib(po_rss)} | {po_rss / json_bytes:.2f}× (file read into memory first) | {rows['py_table']['t'] / po_t:.1f}× vs `table` | 100 % |
{line("vs_table_gz", "py_table")}
{line("vs_summary_gz", "py_summary")}

"vs Python" for the gzip rows is against the Python baseline on the plain JSON (Python reading the
.gz would only be slower), so it includes the cost of inflating the file.

#### What each command does

- `vramscope table T --format json`: reads the trace and prints torch's `key_averages()` memory
  table (calls, self/total CPU and device memory per op) as JSON.
- `vramscope summary T --format json`: reads the trace and prints per-device peak, final and
  reserved memory, the op running at the peak, and the trace facts.
- `python bench/baseline.py table T`: `json.load` of the whole file, then torch's
  `key_averages()` memory rules in plain Python (memory events attributed to the CPU spans that
  contain them, per-thread span tree, same-name only-child merge, self = total − children),
  rows printed as JSON.
- `python bench/baseline.py summary T`: `json.load`, then per device the peak of
  `Total Allocated` (a running sum of `Bytes` where the trace has no totals), final allocated,
  peak reserved and the number of memory events.
- `serde_parse_only`: `collector/examples/serde_parse_only.rs`; the file is read into memory
  first (not timed), then `serde_json::from_slice` into a typed struct of borrowed events
  (ph, name, cat as `Cow<str>`; pid, tid; ts, dur as f64; the memory fields of args), the median
  of {E['RUNS']} parses. This is the floor for anything that parses the JSON with serde.

#### Correctness

The timed commands compute the same answers (checked by `bench/run.sh` on every run):

{checks}
"""
if perf:
    md += f"""
#### Where vramscope's time goes

`perf record -g` of `vramscope table` on the plain JSON, self time by symbol (≥ 1.5 %):

```
{perf}
```
"""
md += f"""
### Machine

- date: {E['DATE']}
- CPU: {E['MACHINE_CPU']}, `nproc` = {E['NPROC']}; memory {E['MACHINE_MEM']}; Linux {E['KERNEL']}
- {E['RUSTC']}; {E['PYVER']}; timed in interleaved rounds by `bench/run.sh`
- load average (1, 5, 15 min): {E['LOAD_BEFORE']} before timing, {E['LOAD_AFTER']} after
- vramscope: working tree at commit {E['COMMIT']}, release profile, {E['BUILD_NOTE']}
"""
if note:
    md += f"- note: {note}\n"
md += f"""
### How to rerun

```sh
bench/run.sh                   # /tmp/bench/big.json, generated first if missing (pip install torch)
bench/run.sh path/to/trace.json[.gz]
RUNS=20 PY_RUNS=5 PERF=1 BENCH_NOTE="quiet 16-core box" bench/run.sh
```

The default trace is made by
`python3 ../shared/traces/torch-cpu/gen_truth.py /tmp/bench/big.json --steps 44 --layers 4 --dim 256 --seq 128`
(a real `torch.profiler` trace of a 4-layer transformer LM training on CPU, with
`profile_memory=True, record_shapes=True`; it also writes torch's own `key_averages()` next to
it as `big.key_averages.json`). Raw measurements are left in `bench/out/`.
"""
# Only this script's section is rewritten; everything else in the file (the title, the
# sections other scripts and helpers write between their own markers) stays as it is.
import os, re
md = md.rstrip() + "\n<!-- traces:end -->"
text = open(doc).read() if os.path.exists(doc) else "# Performance\n"
ours = re.compile(r"<!-- traces:begin.*?<!-- traces:end -->", re.S)
if ours.search(text):
    md = ours.sub(lambda _: md, text)
else:  # first run with markers: keep the title and the other sections, drop the old text
    others = [m.group(0) for m in re.finditer(r"<!-- (\w+):begin.*?<!-- \1:end -->", text, re.S)]
    md = "# Performance\n\n" + md + "".join("\n\n" + o for o in others) + "\n"
open(doc, "w").write(md if md.endswith("\n") else md + "\n")
EOF
say "done: $DOC"
