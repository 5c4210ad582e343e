#!/usr/bin/env python3
"""The "Scaling" section of docs/PERFORMANCE.md from bench/scale.sh's raw results.

    python3 bench/scale_report.py OUT_DIR BASE DOC NOTE VS
"""

import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

BEGIN, END = "<!-- scale:begin (written by bench/scale.sh) -->", "<!-- scale:end -->"
TARGET_TIME_RATIO = 1.25  # summary time ≤ 1.25× linear from the smallest size
TARGET_RSS_RATIO = 0.1  # peak RSS ≤ 0.1× the file


def runs(out, name):
    path = os.path.join(out, name + ".tsv")
    if not os.path.exists(path):
        return []
    return [(float(t), int(k) * 1024) for t, k in (line.split() for line in open(path) if line.strip())]


def peaks(summary):
    return {d["device"]: (d["memory_events"], d["peak_allocated_bytes"], d["peak_reserved_bytes"]) for d in summary["devices"]}


def check(base, other, copies):
    """Same peaks as the base, memory events × copies, on every device."""
    b, o = peaks(base), peaks(other)
    return b.keys() == o.keys() and all(
        o[k][0] == copies * b[k][0] and o[k][1:] == b[k][1:] for k in b
    )


def gen_text(r):
    cpu = f" ({r['gen_cpu_rate']:.0f} MB/s of CPU time)" if r["gen_cpu_rate"] else ""
    return f"{r['gen_rate']:.0f} MB/s{cpu}"


def mib(n):
    return f"{n / 2**20:,.0f} MiB"


def main():
    out, base_path, doc, note, vs = sys.argv[1:6]
    load = lambda n: json.load(open(os.path.join(out, n)))
    base = load("base.json")
    x3_ok = check(base, load("x3.json"), 3)
    rows = []
    sizes = sorted(int(re.search(r"bytes-(\d+)", p).group(1)) for p in glob.glob(os.path.join(out, "bytes-*.txt")))
    for size in sizes:
        nbytes = int(open(os.path.join(out, f"bytes-{size}.txt")).read())
        gen = open(os.path.join(out, f"gen-{size}.txt")).read()
        copies = int(re.search(r": (\d+) copies", gen).group(1))
        gen_rate = float(re.search(r"\((\d+) MB/s", gen).group(1))
        cpu = re.search(r"(\d+) MB/s of CPU time", gen)
        gen_cpu_rate = float(cpu.group(1)) if cpu else None
        v = runs(out, f"vs-{size}")
        p = runs(out, f"py-{size}")
        rows.append(
            dict(
                bytes=nbytes,
                copies=copies,
                gen_rate=gen_rate,
                gen_cpu_rate=gen_cpu_rate,
                t=statistics.median(t for t, _ in v),
                t_min=min(t for t, _ in v),
                rss=max(r for _, r in v),
                n=len(v),
                ok=check(base, load(f"vs-{size}.json"), copies),
                py_t=statistics.median(t for t, _ in p) if p else None,
                py_rss=max(r for _, r in p) if p else None,
                events=load(f"vs-{size}.json")["events"],
            )
        )
    first = rows[0] if rows else None
    lines = [
        BEGIN,
        "## Scaling: `summary` of 100 MB, 2 GB and 10 GB traces",
        "",
        "`bench/gen_trace.rs` (a collector example, built on demand) writes the steps of a real trace",
        f"(`{os.path.basename(base_path)}`: {base['events']:,} events, {base['memory_events']:,} memory events,",
        f"{base['steps']} steps) again and again: times shifted by the base's length, steps renumbered,",
        "fresh addresses, `Total Allocated`/`Total Reserved` moved by the base's net change per copy",
        "(0 for this steady-state base), linking ids shifted. `bench/scale.sh` times `vramscope summary",
        "--format json` on each size (one trace on disk at a time), peak RSS from `/usr/bin/time`.",
        "\"time / linear\" is the seconds per byte over those of the smallest size; \"same answer\" says",
        "every device's peak allocated and reserved equal the base's and its memory events are",
        "copies × the base's.",
        "",
        f"Check of the generator: a 3× copy gives the base's peaks with 3× the memory events: **{x3_ok}**.",
        "",
        "| trace | copies | events | generated at | `summary` time | time / linear | peak RSS | RSS / file | same answer | Python `summary` |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        lin = (r["t"] / r["bytes"]) / (first["t"] / first["bytes"])
        py = "(does not fit in memory)" if r["py_t"] is None else (
            f"{r['py_t']:.1f} s, {mib(r['py_rss'])}: **{r['py_t'] / r['t']:.1f}×** slower")
        times = f"{r['t']:.2f} s" + (f" (min {r['t_min']:.2f} s, {r['n']} runs)" if r["n"] > 1 else "")
        lines.append(
            f"| {r['bytes'] / 1e9:.2f} GB | {r['copies']} | {r['events']:,} | {gen_text(r)} | "
            f"{times} | {lin:.2f}× | {mib(r['rss'])} | {r['rss'] / r['bytes']:.3f}× | {r['ok']} | {py} |"
        )
    lines.append("")
    if len(rows) > 1:
        worst_lin = max((r["t"] / r["bytes"]) / (first["t"] / first["bytes"]) for r in rows[1:])
        worst_rss = max(r["rss"] / r["bytes"] for r in rows[1:])
        gen_min = min(r["gen_cpu_rate"] or r["gen_rate"] for r in rows)
        lines += [
            "| target | measured | |",
            "|---|---|---|",
            f"| `summary` time ≤ {TARGET_TIME_RATIO}× linear from the smallest size | {worst_lin:.2f}× | "
            f"{'met' if worst_lin <= TARGET_TIME_RATIO else 'not met'} |",
            f"| peak RSS ≤ {TARGET_RSS_RATIO}× the file (2 GB and up) | {worst_rss:.3f}× | "
            f"{'met' if worst_rss <= TARGET_RSS_RATIO else 'not met'} |",
            f"| generator ≥ 200 MB/s | {gen_min:.0f} MB/s (slowest size; of CPU time where measured) | "
            f"{'met' if gen_min >= 200 else 'not met'} |",
            "",
        ]
    load_avg = open("/proc/loadavg").read().split()[:3]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines += [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} CPUs, load average "
        f"{' '.join(load_avg)} at the end; `{vs}` at commit {commit}. {note}".rstrip(),
        "Rerun: `bench/scale.sh` (raw results in `bench/out/scale/`).",
        END,
    ]
    text = open(doc).read()
    section = "\n".join(lines) + "\n"
    if BEGIN in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) + 1 :]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    open(doc, "w").write(text)
    print(section)


if __name__ == "__main__":
    main()
