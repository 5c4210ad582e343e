#!/usr/bin/env python3
"""Timing and report for bench/shapes.sh (issue 41): `summary` and `table` on every shape of
bench/shapes_make.sh side by side with the Python reference (bench/baseline.py), interleaved
round by round, and the "Input shapes" table of docs/PERFORMANCE.md (between its markers).

    python3 bench/shapes.py VS SHAPES_DIR OUT_DIR DOC   (settings from the environment, see shapes.sh)

Every command runs under `/usr/bin/time -f "%e %M %U %S"`: its wall time is taken with
`time.perf_counter` around it (finer than %e's 10 ms), its peak RSS from %M, its CPU time from %U + %S. Medians and
minimums of the timed rounds; peak RSS the largest. Each shape's first round is a check round
(outputs compared, not timed).
"""

import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = sys.executable
# Targets of issue 41.
TARGET_VS_PYTHON = 50.0
TARGET_SNAPSHOT_VS_PYTHON = 20.0
TARGET_RSS_PER_FILE = 0.1
TARGET_RANKS = 0.8
TRACE_SHAPES = {
    "current": "torch CPU LM training (bench/run.sh's trace)",
    "mem": "memory-event dense (torch CPU, small allocations)",
    "ops": "op dense, no memory events (torch CPU)",
    "stack": "stack heavy (with_stack, 24 nested modules)",
    "gpu": "GPU: H100 owlv2-large (TraceLens), replayed",
}


def run(argv, out_path=None):
    """(wall seconds, peak RSS KiB, CPU seconds) of one run; stdout to out_path (or nowhere)."""
    rss_file = "/tmp/vramscope-shapes-rss.txt"
    with open(out_path or os.devnull, "wb") as out:
        t0 = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%e %M %U %S", "-o", rss_file] + argv, stdout=out, check=True)
        wall = time.perf_counter() - t0
    _, rss, user, system = open(rss_file).read().split()[-4:]
    return wall, int(rss), float(user) + float(system)


def rounds(commands, runs, out):
    """Each command once unchecked-for-time (outputs kept in out/ID.json), then `runs[kind]`
    timed rounds interleaved. Returns {id: (median, min, max_rss, median CPU seconds)}."""
    times = {c: [] for c in commands}
    cpu = {c: [] for c in commands}
    rss = {c: 0 for c in commands}
    for cid, (argv, _) in commands.items():
        _, m, _ = run(argv, os.path.join(out, cid + ".json"))
        rss[cid] = m
    for r in range(max(runs.values())):
        for cid, (argv, kind) in commands.items():
            if r < runs[kind]:
                t, m, c = run(argv)
                times[cid].append(t)
                cpu[cid].append(c)
                rss[cid] = max(rss[cid], m)
        print(f"  round {r + 1} done", file=sys.stderr)
    return {c: (statistics.median(t), min(t), rss[c], statistics.median(cpu[c])) for c, t in times.items() if t}


def load(out, cid):
    return json.load(open(os.path.join(out, cid + ".json")))


def same_table(out):
    """The reference's rows are vramscope's; vramscope's other rows (torch's key_averages()
    has rows for GPU kernels, memcpy and memset, which the reference leaves out) hold no
    memory. (equal, the number of those other rows)"""
    vs, py = load(out, "vs_table"), load(out, "py_table")
    py_keys = {json.dumps(r, sort_keys=True) for r in py}
    vs_keys = {json.dumps(r, sort_keys=True) for r in vs}
    names = {r["name"] for r in py}
    other = [r for r in vs if r["name"] not in names]
    memory = ("cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage")
    ok = py_keys <= vs_keys and len(vs) - len(other) == len(py) and not any(r[k] for r in other for k in memory)
    return ok, len(other)


def same_summary(out):
    v, p = load(out, "vs_summary"), load(out, "py_summary")
    keys = ("memory_events", "peak_allocated_bytes", "final_allocated_bytes")
    pd = [d for d in p["devices"] if d["memory_events"]]
    vd = [d for d in v["devices"] if d["memory_events"]]
    return len(vd) == len(pd) and all(all(a[k] == b[k] for k in keys) for a, b in zip(vd, pd))


def trace_shape(vs, path, out, runs):
    commands = {
        "vs_summary": ([vs, "summary", path, "--format", "json"], "vs"),
        "vs_table": ([vs, "table", path, "--format", "json", "--sort", "none"], "vs"),
        "py_summary": ([PY, os.path.join(HERE, "baseline.py"), "summary", path], "py"),
        "py_table": ([PY, os.path.join(HERE, "baseline.py"), "table", path], "py"),
    }
    res = rounds(commands, runs, out)
    facts = load(out, "py_summary")
    vsum = load(out, "vs_summary")
    ops = vsum.get("ops", 0)
    return {
        "bytes": os.path.getsize(path),
        "events": facts["events"],
        "memory_events": facts["memory_events"],
        "ops": ops,
        "times": res,
        "same_table": same_table(out)[0],
        "kernel_rows": same_table(out)[1],
        "same_summary": same_summary(out),
    }


def snapshot_shape(vs, path, out, runs):
    replay = os.path.join(ROOT, "tests", "fixtures", "snapshot", "replay.py")
    commands = {
        "vs_summary": ([vs, "summary", path, "--format", "json"], "vs"),
        "py_summary": ([PY, replay, path], "py"),
    }
    res = rounds(commands, runs, out)
    v, p = load(out, "vs_summary"), load(out, "py_summary")
    same = all(
        (d["peak_allocated_bytes"], d["final_allocated_bytes"], d["peak_reserved_bytes"])
        == (p[d["device"]]["peak_allocated"], p[d["device"]]["final_allocated"], p[d["device"]]["peak_reserved"])
        for d in v["devices"]
    )
    return {"bytes": os.path.getsize(path), "times": res, "same_summary": same}


def ranks_shape(vs, directory, out, runs):
    import gzip

    files = sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".json.gz"))
    content = sum(len(gzip.open(f).read()) for f in files)
    one = files[0]
    commands = {"fleet": ([vs, "summary", directory, "--format", "json"], "fleet")}
    for i in range(runs["single_per_round"]):
        commands[f"single{i}"] = ([vs, "summary", one, "--format", "json"], "fleet")
    res = rounds(commands, {"fleet": runs["fleet"]}, out)
    singles = [t[0] for c, t in res.items() if c.startswith("single")]
    single = statistics.median(singles)
    one_bytes = len(gzip.open(one).read())
    fleet = res["fleet"][0]
    return {
        "inputs": len(files),
        "content": content,
        "one_bytes": one_bytes,
        "fleet_s": fleet,
        "single_s": single,
        "ratio": (content / fleet) / (one_bytes / single),
        "rss": res["fleet"][2],
    }


def big_shape(vs, path, out, runs):
    commands = {
        "vs_summary": ([vs, "summary", path, "--format", "json"], "vs"),
        "vs_table": ([vs, "table", path, "--format", "json"], "vs"),
    }
    return {"bytes": os.path.getsize(path), "times": rounds(commands, runs, out)}


def report_shape(vs, path, out, runs):
    html = os.path.join(out, "report.html")
    commands = {
        "vs_summary": ([vs, "summary", path, "--format", "json"], "vs"),
        "report": ([vs, "report", path, "--html", html, "--force"], "vs"),
    }
    res = rounds(commands, runs, out)
    return {"bytes": os.path.getsize(path), "times": res, "html_bytes": os.path.getsize(html)}


def main():
    vs, shapes, out_root, doc = sys.argv[1:5]
    env = os.environ
    runs = {"vs": int(env.get("RUNS", 5)), "py": int(env.get("PY_RUNS", 2))}
    results = {"load_before": open("/proc/loadavg").read().split()[:3]}
    todo = env.get("ONLY", "current mem ops stack gpu snapshot ranks report big").split()
    for name in [n for n in TRACE_SHAPES if n in todo]:
        out = os.path.join(out_root, name)
        os.makedirs(out, exist_ok=True)
        print(f"== {name}", file=sys.stderr)
        results[name] = trace_shape(vs, os.path.join(shapes, name + ".json"), out, runs)
    if "snapshot" in todo:
        out = os.path.join(out_root, "snapshot")
        os.makedirs(out, exist_ok=True)
        print("== snapshot", file=sys.stderr)
        results["snapshot"] = snapshot_shape(vs, os.path.join(shapes, "snapshot.pickle"), out, runs)
    if "ranks" in todo:
        out = os.path.join(out_root, "ranks")
        os.makedirs(out, exist_ok=True)
        print("== ranks", file=sys.stderr)
        r = {"fleet": int(env.get("RANK_RUNS", 3)), "single_per_round": int(env.get("SINGLE_RUNS", 5))}
        results["ranks"] = ranks_shape(vs, os.path.join(shapes, "ranks"), out, r)
    if "report" in todo:
        for name in env.get("REPORT_SHAPES", "current gpu").split():
            out = os.path.join(out_root, "report-" + name)
            os.makedirs(out, exist_ok=True)
            print(f"== report {name}", file=sys.stderr)
            results["report-" + name] = report_shape(vs, os.path.join(shapes, name + ".json"), out, {"vs": 3})
    if "big" in todo:
        for name in env.get("BIG_SHAPES", "").split():
            path = os.path.join(shapes, f"big-{name}.json")
            subprocess.run([os.path.join(HERE, "shapes_make.sh"), f"big-{name}"], check=True)
            out = os.path.join(out_root, "big-" + name)
            os.makedirs(out, exist_ok=True)
            print(f"== big {name}", file=sys.stderr)
            results["big-" + name] = big_shape(vs, path, out, {"vs": int(env.get("BIG_RUNS", 2))})
            if env.get("KEEP_BIG") != "1":
                os.remove(path)
    results["load_after"] = open("/proc/loadavg").read().split()[:3]
    json.dump(results, open(os.path.join(out_root, "results.json"), "w"), indent=1)
    sys.path.insert(0, HERE)
    import shapes_report

    shapes_report.write(results, doc, env)


if __name__ == "__main__":
    main()
