#!/usr/bin/env python3
"""Exactness check for speed work: two vramscope binaries must print the same bytes.

    python3 bench/compare.py BASE_BINARY NEW_BINARY [EXTRA_INPUT ...]

Runs `table` (json, json unsorted, csv, text) and `summary` (json, text) — plus `live --at peak`
for allocator snapshots — with both binaries on every trace under ../shared/traces,
tests/fixtures and samples/ (and any EXTRA_INPUT, e.g. the 111 MB benchmark trace), and on
damaged copies of a few real traces: cut at seeded random offsets (plain and gzip), bytes
overwritten with JSON-significant characters (quotes, brackets, backslashes, commas, invalid
UTF-8), so the error paths (message, byte offset, exit code) are compared too. Exit code,
stdout and stderr must be identical; the first differences are printed. Exit 1 on any.
"""

import gzip
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "traces")
READABLE = (".json", ".json.gz", ".pickle", ".sqlite", ".gz")
# Damaged copies are made from these (relative to ../shared/traces).
DAMAGE_FROM = [
    "torch-cpu/t2.json.gz",
    "real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz",
    "real/tracelens-mi300-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
    "real/snapshot-cs336-magma27/memory_snapshot.pickle",
]
CUTS_PER_FILE = 12
EDITS_PER_FILE = 24
EDIT_BYTES = [b'"', b"}", b"{", b"]", b"[", b"\\", b",", b":", b"x", b"\xff", b" ", b"\n", b"0", b"-"]


def inputs(extra):
    found = []
    for top in (SHARED, os.path.join(ROOT, "tests", "fixtures"), os.path.join(ROOT, "samples")):
        for d, _, files in os.walk(top):
            for f in sorted(files):
                if f.endswith(READABLE) and ".rows." not in f:
                    found.append(os.path.join(d, f))
    return sorted(found) + list(extra)


def commands(path):
    if path.endswith(".pickle"):
        return [["summary", path, "--format", "json"], ["summary", path],
                ["live", path, "--at", "peak", "--format", "json"], ["table", path, "--format", "json"]]
    return [["table", path, "--format", "json"], ["table", path, "--format", "json", "--sort", "none"],
            ["table", path, "--format", "csv"], ["table", path], ["summary", path, "--format", "json"],
            ["summary", path], ["summary", path, "--salvage", "--format", "json"]]


def damaged(workdir):
    rng = random.Random(20261202)
    made = []
    for rel in DAMAGE_FROM:
        src = os.path.join(SHARED, rel)
        if not os.path.exists(src):
            continue
        raw = open(src, "rb").read()
        plain = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        stem = os.path.basename(rel).split(".")[0]
        ext = ".pickle" if rel.endswith(".pickle") else ".json"
        for i in range(CUTS_PER_FILE):
            at = rng.randrange(1, len(plain))
            made.append(write(workdir, f"{stem}.cut{i}{ext}", plain[:at]))
            if ext == ".json" and i % 3 == 0:
                made.append(write(workdir, f"{stem}.cut{i}{ext}.gz", gzip.compress(plain)[: rng.randrange(20, len(raw))]))
        for i in range(EDITS_PER_FILE):
            data = bytearray(plain)
            for _ in range(1 + i % 3):
                at = rng.randrange(len(data))
                data[at:at + 1] = rng.choice(EDIT_BYTES)
            made.append(write(workdir, f"{stem}.edit{i}{ext}", bytes(data)))
    return made


def write(workdir, name, data):
    path = os.path.join(workdir, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def run(binary, args):
    p = subprocess.run([binary] + args, capture_output=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    base, new, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory(prefix="vramscope-compare-") as workdir:
        jobs = [args for path in inputs(extra) for args in commands(path)]
        jobs += [args for path in damaged(workdir) for args in commands(path)[:2] + commands(path)[-1:]]
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda a: (a, run(base, a), run(new, a)), jobs))
    bad = [(a, b, n) for a, b, n in results if b != n]
    for args, b, n in bad[:10]:
        print("DIFFERENT:", " ".join(args))
        for what, x, y in (("exit", b[0], n[0]), ("stdout", b[1], n[1]), ("stderr", b[2], n[2])):
            if x != y:
                print(f"  {what}: base {str(x)[:300]!r}\n  {' ' * len(what)}  new  {str(y)[:300]!r}")
    errors = sum(1 for _, b, _ in results if b[0] != 0)
    print(f"{len(results)} runs compared ({errors} of them errors in the base), {len(bad)} different")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
