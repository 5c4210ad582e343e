#!/usr/bin/env bash
# Checks docs/FORMAT.md's Spark example by hand (not in CI: it needs `pip install pyspark`
# and a Java runtime): two "nodes" of 4 ranks each exported to node=NAME directories, read
# back as one table by PySpark; each rank's max(allocated_bytes) must equal `summary`'s
# peak and the row counts summary's memory events and ops.
#
#   tests/spark/check.sh [BINARY]     (default target/debug/vramscope)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:-target/debug/vramscope}")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 bench/make_ranks.py --ranks 8 "$WORK/ranks" >/dev/null
mkdir -p "$WORK/n1" "$WORK/n2"
for r in 0 1 2 3; do mv "$WORK/ranks/rank_$r.json.gz" "$WORK/n1/"; done
mv "$WORK"/ranks/rank_*.json.gz "$WORK/n2/"
for n in n1 n2; do "$BIN" export "$WORK/$n" --format parquet -o "$WORK/parquet/node=$n" >/dev/null; done
"$BIN" summary "$WORK/n1" "$WORK/n2" --format json > "$WORK/summary.json"
python3 - "$WORK" <<'PY' 2>/dev/null
import json, sys
from pyspark.sql import SparkSession, functions as F
work = sys.argv[1]
spark = (SparkSession.builder.master("local[1]").appName("vramscope-check")
         .config("spark.ui.enabled", "false").getOrCreate())
root = f"{work}/parquet"
# The example of docs/FORMAT.md, as written there.
ev = spark.read.option("basePath", root).parquet(f"{root}/*/memory_events.parquet")
ops = spark.read.option("basePath", root).parquet(f"{root}/*/ops.parquet")
peaks = {r["rank"]: r["peak_bytes"] for r in
         ev.groupBy("rank").agg(F.max("allocated_bytes").alias("peak_bytes")).collect()}
summary = json.load(open(f"{work}/summary.json"))
want = {i["rank"]: max(d["peak_allocated_bytes"] for d in i["devices"]) for i in summary["inputs"]}
events = sum(d["memory_events"] for i in summary["inputs"] for d in i["devices"])
assert peaks == want, (peaks, want)
assert ev.count() == events, (ev.count(), events)
assert sorted(r["node"] for r in ev.select("node").distinct().collect()) == ["n1", "n2"]
print(f"spark: {len(peaks)} ranks' peaks = summary's; {ev.count()} memory events, "
      f"{ops.count()} ops over 2 node directories")
PY
