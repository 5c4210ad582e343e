"""The runner of bench/record_overhead.sh (see there). Prints and writes a markdown section.

    python3 bench/record_overhead.py VRAMSCOPE LIBFAKE_NVML DOC ROUNDS DURATION_S
"""
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

binary, fake, doc, rounds, duration = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
GIB = 1 << 30
# A DGX-like node: 8 GPUs, each listing the recorded program (the fake's loader's child) and
# three processes outside the tree (attribution must check and reject them every sample).
script = {"devices": [
    {"name": "Fake H200", "uuid": "GPU-%08d-0000" % i, "total": 141 * GIB, "reserved": GIB // 2,
     "used": [[0, 10 * GIB]],
     "processes": [{"children_of_loader": True, "used": [[0, 8 * GIB]]},
                   {"pid": 1, "used": [[0, GIB]]},
                   {"pid": 4_000_001 + i, "used": [[0, GIB]]},
                   {"pid": 4_100_001 + i, "used": [[0, GIB]], "kind": "graphics"}]}
    for i in range(8)]}
work = tempfile.mkdtemp(prefix="vramscope-record-bench-")
script_path = os.path.join(work, "fake-nvml.json")
with open(script_path, "w") as f:
    json.dump(script, f)
configs = [("fake NVML, 8 GPUs", 100, fake), ("fake NVML, 8 GPUs", 10, fake),
           ("no NVML (host only)", 100, "/nonexistent/libnvidia-ml.so.1"),
           ("no NVML (host only)", 10, "/nonexistent/libnvidia-ml.so.1")]
results = {i: [] for i in range(len(configs))}
load_before = os.getloadavg()
for r in range(rounds):
    order = list(range(len(configs)))
    order = order[r % len(order):] + order[:r % len(order)]  # rotate, so no config always runs first
    for i in order:
        name, interval, lib = configs[i]
        out = os.path.join(work, "run-%d.vsr" % i)
        env = dict(os.environ, VRAMSCOPE_FAKE_NVML_SCRIPT=script_path)
        p = subprocess.Popen([binary, "record", "--force", "-o", out, "--interval-ms", str(interval),
                              "--nvml-lib", lib, "--", "sleep", str(duration)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, name
        end, samples = None, 0
        with open(out) as f:
            for line in f:
                v = json.loads(line)
                if "end" in v:
                    end = v
                elif "gpus" in v:
                    samples += 1
                    if lib == fake:
                        assert len(v["gpus"]) == 8 and v["gpus"][0]["procs"] == 8 * GIB, v
        cpu_ns = end["end"]["vramscope_cpu_ns"]
        wall_ns = end["t_ns"]
        # wait4 counts vramscope and the `sleep` it reaped: an upper bound that must agree.
        outside_ns = int((usage.ru_utime + usage.ru_stime) * 1e9)
        results[i].append({"cpu_ns": cpu_ns, "pct": 100.0 * cpu_ns / wall_ns, "per_sample_us": cpu_ns / max(samples, 1) / 1000,
                           "samples": samples, "wait4_pct": 100.0 * outside_ns / wall_ns})
load_after = os.getloadavg()

rows = []
for i, (name, interval, _) in enumerate(configs):
    rs = results[i]
    pct = [x["pct"] for x in rs]
    per = [x["per_sample_us"] for x in rs]
    w4 = [x["wait4_pct"] for x in rs]
    rows.append("| %s | %d ms | %.2f %% (min %.2f %%) | %.0f µs (min %.0f µs) | %d | %.2f %% |" % (
        name, interval, statistics.median(pct), min(pct), statistics.median(per), min(per),
        statistics.median([x["samples"] for x in rs]), statistics.median(w4)))
target = statistics.median([x["pct"] for x in results[0]])
# Fixed cost (start-up, NVML init, the end) and cost per sample, from the two intervals.
split = []
for slow, fast in ((0, 1), (2, 3)):
    med = lambda i, k: statistics.median([x[k] for x in results[i]])  # noqa: E731
    per = (med(fast, "cpu_ns") - med(slow, "cpu_ns")) / max(med(fast, "samples") - med(slow, "samples"), 1)
    fixed = med(slow, "cpu_ns") - per * med(slow, "samples")
    split.append("%s: %.0f µs per sample, %.1f ms per run that does not grow with the sampling rate" % (configs[slow][0], per / 1000, fixed / 1e6))
section = """<!-- record:begin (written by bench/record_overhead.sh) -->
## `vramscope record` overhead

vramscope's own CPU time while it records (user + system of all its threads, from
`getrusage(RUSAGE_SELF)` at the end of the run, kept in the recording's end line as
`vramscope_cpu_ns`; the recorded program's time is not in it), as a share of one core, per
second of recording. The program is `sleep %(duration).0f`; each configuration ran %(rounds)d
times, interleaved round by round (the order rotated each round); medians, minimums in
brackets. "fake NVML" is fake-nvml/ answering for 8 GPUs, each listing the recorded program
and three processes outside its tree; it stands in for the driver's own cost, which on real
hardware adds the time of the NVML calls (memory info and two process lists per GPU per
sample). The wait4 column is the same run measured from outside (os.wait4: vramscope plus the
`sleep` it reaped), which must agree.

| NVML | interval | vramscope CPU, %% of one core | CPU per sample | samples | wait4 |
|---|---:|---:|---:|---:|---:|
%(rows)s

From the two intervals (the CPU-per-sample column also carries what does not depend on the
rate: start-up, NVML's initialisation, the walk of /proc once a second, the end):
%(split)s.

Target ≤ 1 %% of one core at 100 ms: %(verdict)s (%(target).2f %%). Measured %(date)s on %(cpus)d CPUs,
load average %(lb).1f before and %(la).1f after (a machine shared with other jobs).
<!-- record:end -->""" % {
    "duration": duration, "rounds": rounds, "rows": "\n".join(rows), "split": "; ".join(split),
    "verdict": "met" if target <= 1.0 else "**missed**", "target": target,
    "date": datetime.date.today(), "cpus": os.cpu_count(), "lb": load_before[0], "la": load_after[0]}
print(section)
text = open(doc).read() if os.path.exists(doc) else "# Performance\n"
pattern = re.compile(r"<!-- record:begin.*?<!-- record:end -->", re.S)
text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
with open(doc, "w") as f:
    f.write(text)
