#!/usr/bin/env python3
"""Python baseline for bench/run.sh: the same work as `vramscope table` and `vramscope summary`,
done the obvious way (json.load of the whole trace, then plain Python over the event list).

    python3 bench/baseline.py table   TRACE   # key_averages() memory rows, JSON list on stdout
    python3 bench/baseline.py summary TRACE   # per-device memory summary, JSON on stdout
    python3 bench/baseline.py load    TRACE   # json.load only (what the other two start with)

TRACE may be plain or gzip JSON; gzip is recognised by its magic bytes, not by the file name.

`table` follows torch.profiler's key_averages() memory rules (torch/autograd/profiler_util.py
and torch/profiler/_memory_profiler.py as exported to Chrome traces):
  * a `[memory]` instant event is attributed to every CPU-side span (cpu_op, user_annotation,
    runtime, python_function, ...) whose [ts, ts + dur] contains it, on any thread;
  * memory events inside no span become `[memory]` pseudo-ops of their own;
  * spans are nested per thread into a tree (sorted by start, longest first); a child with
    the same name as its only-child parent is merged into the parent;
  * rows are keyed by (name, is_user_annotation), `ProfilerStep#N` becomes `ProfilerStep*`,
    Python frames take part in the tree but get no row;
  * self = total − the children's totals.
"""

import bisect
import gzip
import json
import sys

# Span categories that torch counts as CPU-side events (memory is attributed to them).
CPU_CATEGORIES = frozenset(
    {"cpu_op", "Operator", "user_annotation", "cuda_runtime", "Runtime", "cuda_driver", "python_function"}
)
# Names torch drops from key_averages().
FILTERED_NAMES = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
# c10 DeviceType numbers: host-side memory (CPU, MKLDNN, OpenGL... as torch groups them)
# and device memory (CUDA, HIP, XPU, PrivateUse1).
CPU_DEVICE_TYPES = frozenset({0, 2, 5})
DEVICE_DEVICE_TYPES = frozenset({1, 6, 12, 20})


def load(path):
    """json.load a plain or gzip trace, recognising gzip by its magic bytes."""
    with open(path, "rb") as f:
        magic = f.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        return json.load(f)


def ns(us):
    """Trace timestamps are µs with ns decimals; integer ns."""
    return round(us * 1000)


class Span:
    __slots__ = ("name", "start", "end", "thread", "cpu", "dev", "python", "annotation", "children", "parent")

    def __init__(self, name, start, end, thread, cpu, dev, python, annotation):
        self.name = name
        self.start = start
        self.end = end
        self.thread = thread
        self.cpu = cpu
        self.dev = dev
        self.python = python
        self.annotation = annotation
        self.children = []
        self.parent = None


def split_bytes(device_type, nbytes):
    """(cpu bytes, device bytes) of one memory event."""
    if device_type in CPU_DEVICE_TYPES:
        return nbytes, 0
    if device_type in DEVICE_DEVICE_TYPES:
        return 0, nbytes
    return 0, 0


def key_averages(trace):
    events = trace["traceEvents"]

    # Memory events: [time_ns, bytes, device_type, thread, attributed?]
    mems = []
    for e in events:
        if e.get("name") == "[memory]" and e.get("ph") == "i":
            a = e["args"]
            mems.append([ns(e["ts"]), a["Bytes"], a["Device Type"], e.get("tid"), False])
    by_time = sorted(mems, key=lambda m: m[0])
    times = [m[0] for m in by_time]

    spans = []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        name = e.get("name")
        if name in FILTERED_NAMES or cat not in CPU_CATEGORIES:
            continue
        start = ns(e["ts"])
        end = start + ns(e["dur"])
        cpu = dev = 0
        for k in range(bisect.bisect_left(times, start), bisect.bisect_right(times, end)):
            m = by_time[k]
            c, d = split_bytes(m[2], m[1])
            cpu += c
            dev += d
            m[4] = True
        if name.startswith("ProfilerStep#"):
            name = "ProfilerStep*"
        spans.append(
            Span(name, start, end, e.get("tid"), cpu, dev, cat == "python_function", cat == "user_annotation")
        )

    for time_ns, nbytes, device_type, thread, attributed in mems:
        if not attributed:
            c, d = split_bytes(device_type, nbytes)
            spans.append(Span("[memory]", time_ns, time_ns, thread, c, d, False, False))

    # Nest per thread: sorted by start, longer (enclosing) spans first.
    spans.sort(key=lambda s: (s.start, -s.end))
    by_thread = {}
    for s in spans:
        by_thread.setdefault(s.thread, []).append(s)
    for thread_spans in by_thread.values():
        stack = []
        for s in thread_spans:
            while stack:
                p = stack[-1]
                if s.start >= p.end or s.end > p.end:
                    stack.pop()
                else:
                    p.children.append(s)
                    s.parent = p
                    break
            stack.append(s)

    # Merge a child into its parent when it is the parent's only child with the same name.
    while True:
        kept = []
        merged = False
        for s in spans:
            p = s.parent
            if p is not None and p.name == s.name and len(p.children) == 1:
                p.children = s.children
                for c in s.children:
                    c.parent = p
                merged = True
            else:
                kept.append(s)
        spans = kept
        if not merged:
            break

    rows = {}
    for s in spans:
        if s.python:
            continue
        r = rows.get((s.name, s.annotation))
        if r is None:
            r = rows[(s.name, s.annotation)] = {
                "name": s.name,
                "calls": 0,
                "self_cpu_memory_usage": 0,
                "cpu_memory_usage": 0,
                "self_device_memory_usage": 0,
                "device_memory_usage": 0,
            }
        r["calls"] += 1
        r["cpu_memory_usage"] += s.cpu
        r["device_memory_usage"] += s.dev
        r["self_cpu_memory_usage"] += s.cpu - sum(c.cpu for c in s.children)
        r["self_device_memory_usage"] += s.dev - sum(c.dev for c in s.children)
    return list(rows.values())


def summary(trace):
    """Per device: peak allocated (the trace's `Total Allocated`, else a running sum of `Bytes`),
    final allocated, peak reserved, number of memory events."""
    per_device = {}
    for e in trace["traceEvents"]:
        if e.get("name") != "[memory]" or e.get("ph") != "i":
            continue
        a = e["args"]
        key = (a.get("Device Type", 0), a.get("Device Id", -1))
        per_device.setdefault(key, []).append(
            (ns(e["ts"]), a.get("Bytes", 0), a.get("Total Allocated"), a.get("Total Reserved"))
        )
    devices = []
    for (device_type, device_id), mems in sorted(per_device.items()):
        mems.sort(key=lambda m: m[0])  # stable: trace order breaks ties
        have_totals = all(m[2] is not None for m in mems)
        allocated = 0
        peak = None
        peak_reserved = None
        for _, nbytes, total_allocated, total_reserved in mems:
            allocated = total_allocated if have_totals else allocated + nbytes
            if peak is None or allocated > peak:
                peak = allocated
            if total_reserved is not None and (peak_reserved is None or total_reserved > peak_reserved):
                peak_reserved = total_reserved
        devices.append(
            {
                "device_type": device_type,
                "device_id": device_id,
                "memory_events": len(mems),
                "peak_allocated_bytes": peak or 0,
                "final_allocated_bytes": allocated,
                "peak_reserved_bytes": peak_reserved,
                "totals": "trace" if have_totals else "reconstructed",
            }
        )
    return {
        "events": len(trace["traceEvents"]),
        "memory_events": sum(d["memory_events"] for d in devices),
        "devices": devices,
    }


def main(argv):
    if len(argv) != 3 or argv[1] not in ("table", "summary", "load"):
        sys.stderr.write("usage: baseline.py {table|summary|load} TRACE\n")
        return 2
    trace = load(argv[2])
    if argv[1] == "load":
        print(len(trace["traceEvents"]))
        return 0
    result = key_averages(trace) if argv[1] == "table" else summary(trace)
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
