//! DuckDB on `export --format parquet` (issue 19): the queries of docs/FORMAT.md
//! (`tests/duckdb/queries.py`) give `summary`'s numbers — per rank the peak allocated,
//! per input and device the peak and the number of memory events, per input the ops.
//! Skips with a message when duckdb is not importable, except in CI (`.ci/run` installs
//! it and sets VRAMSCOPE_CI), where it must run.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::support::{repo_root, shared_traces, temp_dir, vramscope_json, vramscope_ok};

#[test]
fn duckdb_queries_give_summary_numbers() {
    let dir = temp_dir("parquet-duckdb");
    let out = dir.join("export");
    let real = shared_traces().join("real");
    let cpu = shared_traces().join("torch-cpu");
    let inputs = [
        cpu.join("t2.json.gz"),
        cpu.join("t3.json.gz"),
        real.join("hta-df-index-resolver-rank1"),
        real.join("kineto-resnet50-torch19-w0"),
    ];
    let mut args: Vec<&str> = vec!["export"];
    args.extend(inputs.iter().map(|p| p.to_str().expect("utf-8")));
    args.extend(["--format", "parquet", "-o", out.to_str().expect("utf-8")]);
    vramscope_ok(&args);
    let script = repo_root().join("tests/duckdb/queries.py");
    let ran = Command::new("python3")
        .arg(&script)
        .arg(&out)
        .output()
        .expect("run python3");
    if ran.status.code() == Some(3) && std::env::var_os("VRAMSCOPE_CI").is_none() {
        eprintln!(
            "SKIPPED duckdb_queries_give_summary_numbers: duckdb is not importable here \
             (pip install duckdb); CI runs it"
        );
        return;
    }
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "queries.py failed: {stderr}");
    let got: Value = serde_json::from_slice(&ran.stdout).expect("JSON");

    args[0] = "summary";
    args.truncate(args.len() - 4);
    let fleet = vramscope_json(&args);
    let mut want_rank: BTreeMap<Option<i64>, i64> = BTreeMap::new();
    let mut want_device: BTreeMap<(String, String), (i64, u64)> = BTreeMap::new();
    for input in fleet["inputs"].as_array().expect("inputs") {
        let path = input["path"].as_str().expect("path").to_owned();
        for d in input["devices"].as_array().expect("devices") {
            let peak = d["peak_allocated_bytes"].as_i64().expect("peak");
            let events = d["memory_events"].as_u64().expect("events");
            let device = d["device"].as_str().expect("device").to_owned();
            want_device.insert((path.clone(), device), (peak, events));
            let best = want_rank.entry(input["rank"].as_i64()).or_insert(peak);
            *best = (*best).max(peak);
        }
    }
    let got_rank: BTreeMap<Option<i64>, i64> = got["per_rank"]
        .as_array()
        .expect("per_rank")
        .iter()
        .map(|r| (r["rank"].as_i64(), r["peak_bytes"].as_i64().expect("peak")))
        .collect();
    assert_eq!(got_rank, want_rank);
    assert!(want_rank.contains_key(&Some(1)), "{want_rank:?}");
    let got_device: BTreeMap<(String, String), (i64, u64)> = got["per_device"]
        .as_array()
        .expect("per_device")
        .iter()
        .map(|r| {
            let key = (
                r["path"].as_str().expect("path").to_owned(),
                r["device"].as_str().expect("device").to_owned(),
            );
            (
                key,
                (
                    r["peak_bytes"].as_i64().expect("peak"),
                    r["events"].as_u64().expect("events"),
                ),
            )
        })
        .collect();
    assert_eq!(got_device, want_device);
    assert!(want_device.len() >= 6, "{want_device:?}");
    // The worst rank's peak: what was live there sums to at most its allocated total.
    let live: i64 = got["top_ops"]
        .as_array()
        .expect("top_ops")
        .iter()
        .map(|r| r["live_bytes"].as_i64().expect("bytes"))
        .sum();
    let worst = want_rank.values().max().copied().expect("a peak");
    assert!(live > 0 && live <= worst, "{live} of {worst}");
}
