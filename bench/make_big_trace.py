#!/usr/bin/env python3
"""Make a large PyTorch profiler trace for the viewer benchmark by replicating a real one.

    python3 bench/make_big_trace.py OUT.json [--base TRACE.json.gz] [--target-bytes N]

The base (default: the HTA df_index_resolver trace in ../shared/traces, a real 2-GPU
training run of torch ~1.13 with profile_memory=1: 216k events, 28k [memory] events on
cuda:1, 5 ProfilerSteps, 53.7 MB of JSON) is written again and again, each copy shifted in
time by the trace's length plus 1 ms and with its ProfilerStep#N renumbered, until the file
reaches the target size (default 1 GiB). Memory events keep their `Total Allocated` /
`Total Reserved` (each copy replays the same curve), so the result has the shape of a long
real run: ~4 M events, ~0.5 M memory events, ~95 steps. Streams its output; the file goes
wherever OUT says (keep it under /tmp, never in the repository).
"""

import argparse
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BASE = os.path.join(
    HERE, "..", "..", "shared", "traces", "real", "hta-df-index-resolver-rank1", "df_index_resolver.json.gz"
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--base", default=DEFAULT_BASE)
    ap.add_argument("--target-bytes", type=int, default=1 << 30)
    args = ap.parse_args()

    opener = gzip.open if args.base.endswith(".gz") else open
    with opener(args.base, "rt") as f:
        base = json.load(f)
    events = base["traceEvents"]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + e.get("dur", 0) for e in timed)
    shift_us = (t1 - t0) + 1000
    steps = sorted({int(e["name"].split("#")[1]) for e in events if str(e.get("name", "")).startswith("ProfilerStep#")})
    first_step, n_steps = (steps[0], len(steps)) if steps else (0, 0)
    # Metadata events (ph M) are written once; everything with a time is replicated.
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    header = {k: v for k, v in base.items() if k != "traceEvents"}

    written = 0
    with open(args.out, "w") as out:
        head = json.dumps(header)[:-1] + ', "traceEvents": ['
        out.write(head)
        written += len(head)
        first = True
        for e in meta:
            s = json.dumps(e, separators=(",", ":"))
            out.write(("" if first else ",\n") + s)
            first = False
            written += len(s) + 2
        copy = 0
        while written < args.target_bytes:
            dt = copy * shift_us
            for e in body:
                e2 = dict(e)
                if isinstance(e2.get("ts"), (int, float)):
                    e2["ts"] = e2["ts"] + dt
                name = e2.get("name")
                if isinstance(name, str) and name.startswith("ProfilerStep#"):
                    n = int(name.split("#")[1])
                    e2["name"] = "ProfilerStep#%d" % (first_step + copy * n_steps + (n - first_step))
                s = json.dumps(e2, separators=(",", ":"))
                out.write(("" if first else ",\n") + s)
                first = False
                written += len(s) + 2
            copy += 1
            print("copy %d: %.0f MB" % (copy, written / 1e6), file=sys.stderr)
        out.write("]}\n")
    print("wrote %s: %d copies of %s, %d bytes" % (args.out, copy, os.path.basename(args.base), os.path.getsize(args.out)))


if __name__ == "__main__":
    main()
