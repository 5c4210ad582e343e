"""The "Input shapes" section of docs/PERFORMANCE.md from bench/shapes.py's results (issue 41):
one table, a row per shape, and the targets met or missed. Used by bench/shapes.py; rerun
bench/shapes.sh rather than editing the numbers by hand."""

import datetime
import re
import subprocess

from shapes import (
    TARGET_RANKS,
    TARGET_RSS_PER_FILE,
    TARGET_SNAPSHOT_VS_PYTHON,
    TARGET_VS_PYTHON,
    TRACE_SHAPES,
)

BEGIN = "<!-- shapes:begin (written by bench/shapes.sh) -->"
END = "<!-- shapes:end -->"


def secs(t):
    return f"{t * 1000:.0f} ms" if t < 1 else f"{t:.2f} s"


def mib(kib):
    return f"{kib / 1024:.0f} MiB"


def verdict(ok):
    return "met" if ok else "**missed**"


def trace_row(name, r):
    t = r["times"]
    mb = r["bytes"] / 1e6
    kb = r["bytes"] / 1e3
    cells = [f"`{name}`: {TRACE_SHAPES[name]}", f"{mb:.0f} MB",
             f"{r['ops'] / kb:.2f} / {r['memory_events'] / kb:.2f}"]
    ratios = []
    for cmd in ("summary", "table"):
        v, p = t[f"vs_{cmd}"], t[f"py_{cmd}"]
        ratio = p[0] / v[0]
        ratios.append(ratio)
        cells += [f"{secs(v[0])} vs {secs(p[0])}", f"**{ratio:.1f}×** ({p[3] / v[3]:.1f}×)"]
    rss = max(t["vs_summary"][2], t["vs_table"][2])
    cells += [f"{mib(t['vs_summary'][2])} / {mib(t['vs_table'][2])} ({rss * 1024 / r['bytes']:.3f}×)",
              ("yes" if r["same_summary"] and r["same_table"] else "**no**")
              + (f" (+{r['kernel_rows']} device rows, 0 B)" if r.get("kernel_rows") else "")]
    ok = min(ratios) >= TARGET_VS_PYTHON
    cells.append(f"{verdict(ok)} (≥ {TARGET_VS_PYTHON:.0f}×)")
    return "| " + " | ".join(cells) + " |", ok, min(ratios)


def rows(results):
    out, misses = [], []
    for name in TRACE_SHAPES:
        if name in results:
            line, ok, ratio = trace_row(name, results[name])
            out.append(line)
            if not ok:
                misses.append(f"`{name}` {ratio:.1f}×")
    if "snapshot" in results:
        r = results["snapshot"]
        v, p = r["times"]["vs_summary"], r["times"]["py_summary"]
        ratio = p[0] / v[0]
        out.append(f"| `snapshot`: allocator snapshot, torch's layout, 1.2M entries | {r['bytes'] / 1e6:.0f} MB "
                   f"| — | {secs(v[0])} vs {secs(p[0])} (pickle.load + replay.py) | **{ratio:.1f}×** | — | — "
                   f"| {mib(v[2])} ({v[2] * 1024 / r['bytes']:.3f}×) "
                   f"| {'yes' if r['same_summary'] else '**no**'} "
                   f"| {verdict(ratio >= TARGET_SNAPSHOT_VS_PYTHON)} (≥ {TARGET_SNAPSHOT_VS_PYTHON:.0f}×; "
                   f"the target is for ≥ 500 MB) |")
    if "ranks" in results:
        r = results["ranks"]
        out.append(f"| `ranks`: {r['inputs']:,} rank traces (t2, gzip) | {r['content'] / 1e6:.0f} MB of content "
                   f"| — | `summary DIR` {secs(r['fleet_s'])} ({r['content'] / 1e6 / r['fleet_s']:.0f} MB/s) vs one "
                   f"file {secs(r['single_s'])} ({r['one_bytes'] / 1e6 / r['single_s']:.0f} MB/s) "
                   f"| **{r['ratio']:.2f}×** of one file's throughput | — | — | {mib(r['rss'])} | — "
                   f"| {verdict(r['ratio'] >= TARGET_RANKS)} (≥ {TARGET_RANKS}×) |")
        if r["ratio"] < TARGET_RANKS:
            misses.append(f"`ranks` {r['ratio']:.2f}×")
    for key in sorted(k for k in results if k.startswith("big-")):
        r = results[key]
        t = r["times"]
        rss = max(t["vs_summary"][2], t["vs_table"][2])
        ratios = [t[c][2] * 1024 / r["bytes"] for c in ("vs_summary", "vs_table")]
        ok = max(ratios) <= TARGET_RSS_PER_FILE
        out.append(f"| `{key}`: `{key[4:]}` replayed to 2 GB | {r['bytes'] / 1e9:.2f} GB | — "
                   f"| {secs(t['vs_summary'][0])} | (Python does not fit) | {secs(t['vs_table'][0])} | — "
                   f"| {mib(t['vs_summary'][2])} / {mib(t['vs_table'][2])} "
                   f"(**{ratios[0]:.3f}× / {ratios[1]:.3f}×**) | — "
                   f"| {verdict(ok)} (RSS ≤ {TARGET_RSS_PER_FILE}× the file) |")
        if not ok:
            misses.append(f"`{key}` RSS {max(ratios):.3f}×")
        del rss
    return out, misses


def report_lines(results):
    lines = []
    for key in sorted(k for k in results if k.startswith("report-")):
        r = results[key]
        s, h = r["times"]["vs_summary"], r["times"]["report"]
        lines.append(f"- `report --html` of `{key[7:]}` ({r['bytes'] / 1e6:.0f} MB): {secs(h[0])} "
                     f"(min {secs(h[1])}; {h[0] / s[0]:.1f}× `summary`'s {secs(s[0])} in the same rounds), "
                     f"peak RSS {mib(h[2])}, report.html {r['html_bytes'] / 1e6:.2f} MB")
    return lines


def write(results, doc, env):
    table, misses = rows(results)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    runs, py_runs = env.get("RUNS", "5"), env.get("PY_RUNS", "2")
    section = "\n".join([
        BEGIN,
        "## Input shapes (issue 41)",
        "",
        "`bench/shapes.sh` makes a corpus of input shapes (`bench/shapes_make.sh`: real torch or GPU",
        "traces replayed to ~100 MB by `gen_trace`, nothing committed) and times `summary` and `table`",
        "(`--format json`) on each, side by side with the Python reference (`bench/baseline.py`: `json.load`",
        "and torch's attribution rules), in interleaved rounds: each round runs every command of the shape",
        f"once; medians of {runs} vramscope runs and {py_runs} Python runs after a check round; \"×\" is",
        "Python's median wall time over vramscope's (in brackets: of CPU time, user + system). Peak RSS from `/usr/bin/time -f %M`, the largest run. \"same\" says",
        "vramscope's table has the reference's rows (as a set; its rows for GPU kernels, memcpy and memset,",
        "which the reference leaves out, hold no memory) and their summaries agree per device",
        "(memory events, peak and final allocated). Ops: the spans `summary` counts as ops.",
        "",
        "| shape | size | ops / memory events per KB | `summary` vs Python | × | `table` vs Python | × "
        "| peak RSS `summary` / `table` (× file) | same | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
        *table,
        "",
        *report_lines(results),
        "",
        f"Missed: {', '.join(misses) if misses else 'none'} (see below for why).",
        f"Measured {when} at commit {commit}, release build, on {env.get('NPROC', '2')} CPUs shared with "
        f"other engineers' builds: load average {' '.join(results['load_before'])} before, "
        f"{' '.join(results['load_after'])} after (`MAX_LOAD={env.get('MAX_LOAD', '1.0')}`): only the ratios "
        "measured in the same rounds mean much. Rerun: `bench/shapes.sh` (raw results in `bench/out/shapes/`).",
        END,
    ])
    text = open(doc).read()
    if BEGIN.split(" (")[0] in text:
        text = re.sub(r"<!-- shapes:begin.*?<!-- shapes:end -->", lambda _: section, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    open(doc, "w").write(text)
    print(section)
