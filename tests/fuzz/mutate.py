#!/usr/bin/env python3
"""Mutation fuzzing of the vramscope binary: real inputs of every format vramscope reads
(profiler traces, allocator snapshots, recordings, packs, Nsight exports) are damaged —
bytes flipped, cut, spliced, repeated, numbers replaced by extreme ones, gzipped or not;
or their gzip container: bad CRC-32/ISIZE at the end of a multi-MB member, several
members, bytes after the last one, two documents in one file, small bombs —
and fed to each command. Every run must end with exit 0 or 1 (2 for usage; check: 0-3), never a
panic, an abort (stack overflow) or a hang, and an error must name the file.

    tests/fuzz/mutate.py [--binary target/debug/vramscope] [--cases N | --seconds S] [--seed K]

A fixed seed and case count repeat the same inputs (.ci/run runs a short fixed set).
Failing inputs are kept in the output directory (default: a temporary one) to rerun.
"""
import argparse
import gzip
import os
import pickle
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
F = ROOT / "tests" / "fixtures"
SEEDS = [
    F / "torch-cpu" / "k01_mlp_s1.json.gz",
    F / "torch-cpu" / "x03_outside_op.json.gz",
    F / "snapshot" / "oom.pickle",
    F / "snapshot" / "ring.pickle",
    F / "snapshot" / "expandable.pickle",
    F / "snapshot" / "multi_gpu.pickle",
    F / "recording" / "v1-train.vsr",
    F / "recording" / "v1-killed.vsr",
    # Packs of format version 2 (JSON-array columns), which this version still reads.
    F / "pack" / "oom.v2.vsr",
    F / "pack" / "k02_mlp_stack.v2.vsr",
    F / "nsight" / "cuda-memory.sqlite",
    # torch's memory timeline exports: the plot and the raw events.
    F / "memory-timeline" / "mlp-adam-cpu.timeline.json",
    F / "memory-timeline" / "mlp-adam-cpu.timeline.raw.json.gz",
    ROOT / "samples" / "cs336-transformer-snapshot.pickle",
]
# An endless recursive query, as the body of a view named like an nsys table.
ENDLESS = ("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) "
           "SELECT x AS start, x AS end, 0 AS deviceId, x AS address, 512 AS bytes, "
           "0 AS memKind, 0 AS memoryOperationType, 1 AS globalPid, 59 AS eventType, "
           "'spin' AS text, 1 AS globalTid, x AS id, 'v' AS value FROM r")
EXTREMES = [0, -1, 2**31, 2**63, 2**64, -(2**63), 1e308, -1e308, 10**30, "NaN", "1e999"]


def hostile_seeds(out):
    """Inputs made to hang the reader or exhaust its memory (issue 17), small: the nsys
    fixture with tables replaced by endless views, a database of views alone, and pickles
    that flood the reader's mark stack and value stack with one-byte opcodes."""
    made = []
    for name, script in [
        ("view-memory", "DROP TABLE CUDA_GPU_MEMORY_USAGE_EVENTS; "
                        f"CREATE VIEW CUDA_GPU_MEMORY_USAGE_EVENTS AS {ENDLESS};"),
        ("view-nvtx", f"DROP TABLE NVTX_EVENTS; CREATE VIEW NVTX_EVENTS AS {ENDLESS}; "
                      f"CREATE VIEW spin AS {ENDLESS};"),
    ]:
        path = out / f"seed-{name}.sqlite"
        shutil.copyfile(F / "nsight" / "cuda-memory.sqlite", path)
        db = sqlite3.connect(path)
        db.executescript(script)
        db.close()
        made.append(path.read_bytes())
    only_views = out / "seed-only-views.sqlite"
    only_views.unlink(missing_ok=True)
    db = sqlite3.connect(only_views)
    db.executescript(f"CREATE VIEW StringIds AS {ENDLESS}; CREATE VIEW NVTX_EVENTS AS {ENDLESS};")
    db.close()
    made.append(only_views.read_bytes())
    made.append(b"\x80\x02" + b"(" * 100_000)  # past MAX_OPEN_MARKS (65,536)
    made.append(b"\x80\x02" + b"N" * ((1 << 20) + 1000))  # past MAX_STACK_VALUES (1 Mi)
    made.append(b"\x80\x04" + b"(N]}" * 300_000 + b".")  # marks, values and slots mixed
    return made + issue40_seeds()


def issue40_seeds():
    """The shapes of issue 40: a snapshot repeating references to one block and to one
    entry (past the records budget), sizes near 2^64; JSON as Python reads it (keys and
    traceEvents given twice, a lone surrogate, a device id of 2^64, baseTimeNanoseconds =
    i64::MAX); names carrying markdown, HTML, bidi and control characters, a formula, a
    long name; a zip under a trace's name."""
    frames = [{"filename": "train.py", "line": 1, "name": "forward"}]
    block = {"address": 1 << 32, "size": 512, "requested_size": 512,
             "state": "active_allocated", "frames": frames}
    entry = {"action": "alloc", "addr": 1 << 32, "size": 512, "stream": 0, "time_us": 1,
             "frames": frames}
    def snapshot(blocks, entries, total=2 << 20):
        seg = {"device": 0, "address": 1 << 32, "total_size": total, "allocated_size": 512,
               "active_size": 512, "requested_size": 512, "stream": 0,
               "segment_type": "large", "blocks": blocks}
        return pickle.dumps({"segments": [seg], "device_traces": [entries]}, protocol=2)
    made = [
        snapshot([block] * 200_000, [entry]),
        snapshot([block], [entry] * 200_000),
        snapshot([block], [dict(entry, size=2**64 - 1)], total=2**64 - 4096),
    ]
    def mem(ts, b, dev="0"):
        return ('{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,'
                f'"ts":{ts},"args":{{"Bytes":{b},"Total Allocated":{b},"Addr":4096,'
                f'"Device Type":1,"Device Id":{dev}}}}}')
    op = '{"ph":"X","cat":"cpu_op","name":"%s","pid":1,"tid":1,"ts":0,"dur":10}'
    names = ["aten::mm` ![x](https://e/x.png) <img src=x onerror=alert(1)> \\u001b[2J\\u0007"
             "\\u202egnp\\u2066\\u2028\\nok: forged", "=HYPERLINK(\\\"http://e\\\")",
             "aten::" + "x" * 20_000, "aten::mm \\udcff"]
    events = ",".join([op % n for n in names] + [mem(5, 1 << 20), mem(6, 1 << 20, "18446744073709551616"),
                                               mem('1,"ts":7', '1,"Bytes":2')])
    made.append(('{"baseTimeNanoseconds":9223372036854775807,"traceEvents":[%s],'
                 '"traceEvents":[%s]}' % (events, events)).encode())
    made.append(b"PK\x03\x04\x14\x00" + b"\0" * 64)
    return made


def mutate(rng, data):
    d = bytearray(data)
    if d[:2] == b"\x1f\x8b" and rng.random() < 0.7:
        d = bytearray(gzip.decompress(bytes(d)))  # damage the JSON, not the deflate stream
    kind = rng.choice(["flip", "cut", "splice", "repeat", "number"])
    for _ in range(rng.randint(1, 8)):
        if not d:
            break
        i = rng.randrange(len(d))
        if kind == "flip":
            d[i] = rng.randrange(256)
        elif kind == "cut":
            del d[i:]
            break
        elif kind == "splice":
            j = rng.randrange(len(d))
            d[i:i] = d[j : j + rng.randint(1, 64)]
        elif kind == "repeat":
            d[i:i] = d[i : i + rng.randint(1, 200)] * rng.randint(2, 5)
        else:
            d[i : i + rng.randint(1, 3)] = str(rng.choice(EXTREMES)).encode()
    if rng.random() < 0.3:
        d = bytearray(gzip.compress(bytes(d), 1))
    return bytes(d)


def gz_members(rng, content):
    """The content as 1 to 5 gzip members, cut anywhere (RFC 1952: one content)."""
    cuts = sorted(rng.randrange(len(content) + 1) for _ in range(rng.randint(0, 4)))
    bounds = [0] + cuts + [len(content)]
    return b"".join(gzip.compress(content[a:b], rng.choice([1, 6])) for a, b in zip(bounds, bounds[1:]))


def damage_gzip(rng, data):
    """Damage the container rather than the content: a bad CRC-32 or ISIZE at the end of a
    member of up to several MB, several members, bytes after the last member, two documents
    in one file, or a small bomb (with a low --max-decompressed-size). Returns the bytes and
    the extra arguments for the command."""
    content = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    kind = rng.choice(["crc", "isize", "members", "trailing", "concat", "bomb"])
    if kind in ("crc", "isize"):
        # Whitespace after a JSON document (or a pickle's STOP) is legal: a multi-MB member.
        padded = content + b" " * rng.randrange(4 << 20)
        d = bytearray(gz_members(rng, padded) if rng.random() < 0.3 else gzip.compress(padded, 1))
        d[len(d) - (8 if kind == "crc" else 4) + rng.randrange(4)] ^= 1 << rng.randrange(8)
        return bytes(d), []
    if kind == "members":
        return gz_members(rng, content), []
    if kind == "trailing":
        tail = rng.choice([b"\0" * rng.randint(1, 512), rng.randbytes(rng.randint(1, 64)), b"\x1f", b"garbage\n"])
        return gz_members(rng, content) + tail, []
    if kind == "concat":
        twice = content + rng.choice([b"", b"\n", b" \r\n"]) + content
        return (gzip.compress(twice, 1) if rng.random() < 0.5 else twice), []
    at = rng.randrange(len(content) + 1)
    bomb = content[:at] + rng.choice([b" ", b"\0", b"["]) * (rng.randint(2, 16) << 20) + content[at:]
    return gzip.compress(bomb, 9), ["--max-decompressed-size", rng.choice(["1MiB", "4MiB", "64KiB"])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(ROOT / "target" / "debug" / "vramscope"))
    ap.add_argument("--cases", type=int, default=0, help="inputs to try (default: until --seconds)")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="vramscope-fuzz-"))
    out.mkdir(parents=True, exist_ok=True)
    case = out / "case.bin"
    commands = [
        ["summary", "{}", "--format", "json"],
        ["table", "{}", "--format", "json"],
        ["live", "{}", "--at", "peak"],
        ["live", "{}", "--at", "oom"],
        ["live", "{}", "--at", "123.5"],
        ["report", "{}", "-o", str(out / "report"), "--force"],
        ["export", "{}", "--format", "perfetto", "-o", str(out / "perfetto.json"), "--force"],
        ["pack", "{}", "-o", str(out / "packed.vsr"), "--force"],
        ["diff", "{}", str(ROOT / "samples" / "transformer-lm-train-cpu.json.gz")],
        ["check", "{}", "--max-peak", "1MiB"],
        ["advise", "{}", "--capacity", "1MiB"],
        ["simulate", "{}"],
        ["simulate", "{}", "--capacity", "1MiB", "--allocator-conf", "expandable_segments:True"],
    ]
    rng = random.Random(args.seed)
    seeds = [p.read_bytes() for p in SEEDS if p.exists()] + hostile_seeds(out)
    # Packs are made by this binary from the seeds, so they follow its format version.
    for src in (SEEDS[0], SEEDS[2]):
        packed = out / f"seed-{src.stem}.vsr"
        r = subprocess.run([args.binary, "pack", str(src), "-o", str(packed), "--force"], capture_output=True)
        if r.returncode == 0:
            seeds.append(packed.read_bytes())
    deadline = time.time() + args.seconds
    runs = failures = 0
    while (runs < args.cases) if args.cases else (time.time() < deadline):
        seed, extra = rng.choice(seeds), []
        if rng.random() < 0.25:
            data, extra = damage_gzip(rng, seed)
        else:
            data = mutate(rng, seed)
        case.write_bytes(data)
        cmd = [args.binary] + [a.replace("{}", str(case)) for a in rng.choice(commands)] + extra
        runs += 1
        try:
            r = subprocess.run(cmd, capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            failures += 1
            kept = out / f"hang-{failures}.bin"
            os.replace(case, kept)
            print(f"HANG (30 s): {cmd[1]} {kept}", flush=True)
            continue
        err = r.stderr.decode(errors="replace")
        usage = r.returncode == 2 and "usage" not in err.lower() and "vramscope:" in err
        # check: 1 is "over the limit", 2 an input it cannot read, 3 no memory data to judge.
        check = cmd[1] == "check"
        must_name_the_file = (2, 3) if check else (1,)
        # (check's 2 is allowed whatever its message says: an unreadable Nsight export's
        # message names the CUDA_GPU_MEMORY_USAGE_EVENTS table, which the usage test reads
        # as a usage error's word.)
        bad = r.returncode not in ((0, 1, 2, 3) if check else (0, 1)) and not usage
        if bad or "panicked" in err or "overflow" in err:
            failures += 1
            kept = out / f"crash-{failures}.bin"
            os.replace(case, kept)
            print(f"CRASH (exit {r.returncode}): {' '.join(cmd[1:2])} {kept}\n{err[-600:]}", flush=True)
        elif r.returncode in must_name_the_file and err and str(case) not in err:
            failures += 1
            kept = out / f"unnamed-{failures}.bin"
            os.replace(case, kept)
            print(f"ERROR WITHOUT THE FILE NAME: {cmd[1]} {kept}: {err.strip()[-300:]}", flush=True)
    print(f"fuzz: {runs} inputs, {failures} failures (seed {args.seed}; kept in {out})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
