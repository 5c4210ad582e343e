#!/usr/bin/env python3
"""Pack size ratios: `vramscope pack` on real traces, snapshots and Nsight exports, and on the
big benchmark trace when it exists. Writes the pack section of docs/PERFORMANCE.md.

Usage: bench/pack.py [EXTRA_INPUT ...]   (builds the release binary first)

For every input: its size on disk, its content size (decompressed), the pack's size, the
ratios, the time to pack, and the time of `summary` on the original and on the pack (median
of RUNS runs), so "how much smaller" and "what does it cost" sit side by side. The script
also checks that the pack's summary and table equal the original's.
"""

import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces"
BIN = ROOT / "target" / "release" / "vramscope"
RUNS = int(os.environ.get("RUNS", "5"))


def content_bytes(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        n = 0
        with gzip.open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                n += len(chunk)
        return n
    return path.stat().st_size


def timed(args):
    start = time.perf_counter()
    out = subprocess.run(args, capture_output=True, check=True)
    return time.perf_counter() - start, out.stdout


def median_time(args):
    return statistics.median(timed(args)[0] for _ in range(RUNS))


def comparable(path, command):
    _, out = timed([str(BIN), command, str(path), "--format", "json"] + (["--sort", "none"] if command == "table" else []))
    doc = json.loads(out)
    if isinstance(doc, dict):
        doc.pop("file", None)
        doc.pop("packed", None)
    return doc


def inputs(extra):
    found = []
    for d in sorted(p for p in (SHARED / "real").iterdir() if p.is_dir()):
        found += sorted(p for p in d.iterdir() if p.name.endswith((".json.gz", ".pickle")))
    found += [SHARED / "nsys-cpu" / "run.sqlite", SHARED / "torch-cpu" / "t5.json.gz"]
    for big in ["/tmp/bench/big.json", "/tmp/bench/big.json.gz", "/tmp/bench/snapshot-1m.pickle"]:
        if Path(big).exists():
            found.append(Path(big))
    found += [Path(e) for e in extra]
    return found


def human(n):
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(inputs(sys.argv[1:])):
            out = Path(tmp) / f"{i}.vsr"
            pack_s = statistics.median(
                timed([str(BIN), "pack", str(path), "-o", str(out), "--force"])[0]
                for _ in range(max(1, RUNS // 2))
            )
            same = all(comparable(path, c) == comparable(out, c) for c in ["summary", "table"])
            disk, content, packed = path.stat().st_size, content_bytes(path), out.stat().st_size
            rows.append(
                dict(
                    name=path.name,
                    disk=disk,
                    content=content,
                    packed=packed,
                    pack_s=pack_s,
                    orig_s=median_time([str(BIN), "summary", str(path)]),
                    packed_s=median_time([str(BIN), "summary", str(out)]),
                    table_orig_s=median_time([str(BIN), "table", str(path)]),
                    table_packed_s=median_time([str(BIN), "table", str(out)]),
                    same=same,
                )
            )
            print(rows[-1], file=sys.stderr)
    write_doc(rows)


def write_doc(rows):
    lines = [
        "<!-- pack:begin (written by bench/pack.py) -->",
        "## Packs",
        "",
        "`vramscope pack FILE -o OUT` on every real trace, snapshot and Nsight export in",
        "`../shared/traces` (and the big benchmark trace and snapshot when present). \"× smaller\" is",
        "the input's size on disk over the pack's (most inputs are already gzip); \"vs content\" is the",
        "decompressed content over the pack. `summary` and `table` times are medians of "
        f"{RUNS} runs on the original and on the pack; \"same\" says the pack's `summary` and",
        "`table` JSON equal the original's.",
        "",
        "| input | on disk | content | pack | × smaller | vs content | pack time | `summary` original | `summary` pack | `table` original | `table` pack | same |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| `{r['name']}` | {human(r['disk'])} | {human(r['content'])} | {human(r['packed'])} | "
            f"{r['disk'] / r['packed']:.1f}× | {r['content'] / r['packed']:.0f}× | {r['pack_s'] * 1000:.0f} ms | "
            f"{r['orig_s'] * 1000:.0f} ms | {r['packed_s'] * 1000:.0f} ms | "
            f"{r['table_orig_s'] * 1000:.0f} ms | {r['table_packed_s'] * 1000:.0f} ms | {'yes' if r['same'] else '**NO**'} |"
        )
    disk = sum(r["disk"] for r in rows)
    packed = sum(r["packed"] for r in rows)
    load = open("/proc/loadavg").read().split()[:3]
    lines += [
        "",
        f"All inputs together: {human(disk)} on disk, {human(packed)} packed ({disk / packed:.1f}× smaller).",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} CPUs, "
        f"load average {' '.join(load)} at the end.",
        "<!-- pack:end -->",
    ]
    doc = ROOT / "docs" / "PERFORMANCE.md"
    text = doc.read_text()
    section = "\n".join(lines) + "\n"
    if "<!-- pack:begin" in text:
        head, rest = text.split("<!-- pack:begin", 1)
        tail = rest.split("<!-- pack:end -->", 1)[1].lstrip("\n")
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    doc.write_text(text)


if __name__ == "__main__":
    main()
