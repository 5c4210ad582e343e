#!/usr/bin/env python3
"""Make a many-rank test set from one real trace: N gzip copies, each with its own
distributedInfo.rank, allocation sizes and totals multiplied by a per-rank integer
factor (1-4, and 5 for rank N // 3, so the worst rank is known), and its own clock
(baseTimeNanoseconds one second further per rank).

    bench/make_ranks.py [--ranks N] [--trace TRACE] OUTDIR

Prints the worst rank and its expected peak allocated (bytes) on stdout as
`worst RANK PEAK_BYTES`. Files are rank_{R}.json.gz; 1,024 copies of t2 take ~43 MB.
"""
import argparse
import gzip
import json
import os


def factor(rank, ranks):
    return 5 if rank == ranks // 3 else 1 + (rank * 7 % 13) // 4


def scaled(trace, rank, ranks):
    m = factor(rank, ranks)
    for e in trace["traceEvents"]:
        if e.get("name") == "[memory]":
            args = e.get("args", {})
            for key in ("Bytes", "Total Allocated", "Total Reserved"):
                if isinstance(args.get(key), int):
                    args[key] *= m
    trace["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": ranks}
    if isinstance(trace.get("baseTimeNanoseconds"), int):
        trace["baseTimeNanoseconds"] += rank * 1_000_000_000
    return trace


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--trace", default="/work/shared/traces/torch-cpu/t2.json.gz")
    parser.add_argument("outdir")
    a = parser.parse_args()
    with gzip.open(a.trace, "rb") as f:
        text = f.read()
    base_peak = max(
        e["args"]["Total Allocated"]
        for e in json.loads(text)["traceEvents"]
        if e.get("name") == "[memory]"
    )
    os.makedirs(a.outdir, exist_ok=True)
    for rank in range(a.ranks):
        trace = scaled(json.loads(text), rank, a.ranks)
        path = os.path.join(a.outdir, f"rank_{rank}.json.gz")
        with gzip.open(path, "wb", compresslevel=1) as f:
            f.write(json.dumps(trace).encode())
    worst = a.ranks // 3
    print(f"worst {worst} {base_peak * factor(worst, a.ranks)}")


if __name__ == "__main__":
    main()
