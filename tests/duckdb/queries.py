#!/usr/bin/env python3
"""The queries of docs/FORMAT.md, run with DuckDB on a `vramscope export --format parquet`
directory; prints their results as JSON for tests/e2e/export_duckdb.rs to check against
`summary`.

    tests/duckdb/queries.py EXPORT_DIR

Exits 3 when duckdb is not importable (the Rust test skips then, except in CI).
"""
import json
import sys

try:
    import duckdb
except ImportError:
    print("duckdb is not importable: pip install duckdb", file=sys.stderr)
    sys.exit(3)

out = sys.argv[1]
con = duckdb.connect()
con.execute(f"CREATE VIEW memory_events AS SELECT * FROM read_parquet('{out}/memory_events.parquet')")
con.execute(f"CREATE VIEW ops AS SELECT * FROM read_parquet('{out}/ops.parquet')")

# Per-rank peak: the largest allocated total of any device of the rank.
per_rank = con.execute("""
    SELECT rank, max(allocated_bytes) AS peak_bytes, count(*) AS events
    FROM memory_events GROUP BY rank ORDER BY rank
""").fetchall()

# Per input and device: peak and events.
per_device = con.execute("""
    SELECT path, device, max(allocated_bytes) AS peak_bytes, count(*) AS events
    FROM memory_events GROUP BY path, device ORDER BY path, device
""").fetchall()

# Top ops by bytes live at the worst rank's peak: allocations made at or before the peak
# on that device and not freed by then, by the op they were made in.
top_ops = con.execute("""
    WITH peak AS (
        SELECT path, device, ts_ns, allocated_bytes
        FROM memory_events WHERE allocated_bytes IS NOT NULL
        ORDER BY allocated_bytes DESC, ts_ns LIMIT 1
    ),
    paired AS (
        SELECT m.*, lead(m.ts_ns) OVER (PARTITION BY m.path, m.device, m.addr ORDER BY m.ts_ns)
               AS next_ts
        FROM memory_events m JOIN peak p USING (path, device)
        WHERE m.kind IN ('alloc', 'free') AND m.addr IS NOT NULL
    )
    SELECT coalesce(op, '(outside ops)') AS op, sum(bytes) AS live_bytes, count(*) AS blocks
    FROM paired, peak
    WHERE paired.kind = 'alloc' AND paired.ts_ns <= peak.ts_ns
      AND (next_ts IS NULL OR next_ts > peak.ts_ns)
    GROUP BY 1 ORDER BY live_bytes DESC LIMIT 10
""").fetchall()

ops_per_path = con.execute("SELECT path, count(*) FROM ops GROUP BY path ORDER BY path").fetchall()

print(json.dumps({
    "per_rank": [{"rank": r, "peak_bytes": p, "events": n} for r, p, n in per_rank],
    "per_device": [{"path": a, "device": d, "peak_bytes": p, "events": n}
                   for a, d, p, n in per_device],
    "top_ops": [{"op": o, "live_bytes": b, "blocks": n} for o, b, n in top_ops],
    "ops_per_path": [{"path": a, "ops": n} for a, n in ops_per_path],
}))
