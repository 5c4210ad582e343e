//! `vramscope export --format perfetto`: valid Chrome trace-event JSON whose memory
//! counters peak where `summary` says, and which vramscope reads back with every op.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::support::*;

/// Check every event against the trace-event format; return the counters' maxima by name.
fn check_events(doc: &Value) -> BTreeMap<String, f64> {
    let maxima = check_counters(doc);
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    assert!(events.iter().any(|e| e["ph"] == "X"), "ops as slices");
    maxima
}

/// Like [`check_events`], for sources without ops (recordings).
fn check_counters(doc: &Value) -> BTreeMap<String, f64> {
    assert_eq!(doc["displayTimeUnit"], "ms");
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    let mut maxima: BTreeMap<String, f64> = BTreeMap::new();
    let mut phases: BTreeMap<&str, usize> = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph is a string");
        *phases.entry(ph).or_default() += 1;
        assert!(e["name"].is_string(), "{e}");
        assert!(e["ts"].as_f64().is_some_and(f64::is_finite), "{e}");
        assert!(
            e["pid"].is_i64() && e["tid"].is_i64(),
            "integer pid/tid: {e}"
        );
        match ph {
            "X" => assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}"),
            "C" => {
                let args = e["args"].as_object().expect("counter args");
                assert!(!args.is_empty());
                for v in args.values() {
                    let v = v.as_f64().expect("numeric counter value");
                    let name = e["name"].as_str().expect("name").to_owned();
                    let m = maxima.entry(name).or_insert(f64::MIN);
                    *m = m.max(v);
                }
            }
            "M" => {
                let name = e["name"].as_str().expect("name");
                assert!(name == "process_name" || name == "thread_name", "{e}");
                assert!(e["args"]["name"].is_string(), "{e}");
            }
            "i" => {
                assert!(
                    matches!(e["s"].as_str(), Some("t" | "g")),
                    "instant scope: {e}"
                );
                if e["s"] == "t" {
                    // torch's memory records: bytes and the device, as torch writes them.
                    let name = e["name"].as_str().expect("name");
                    assert!(
                        ["[memory]", "[OutOfMemory]", "[segment]"].contains(&name),
                        "{e}"
                    );
                    assert!(e["args"]["Bytes"].is_i64(), "{e}");
                    assert!(e["args"]["Device Type"].is_i64(), "{e}");
                }
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(phases.get("M").copied().unwrap_or(0) > 0, "{phases:?}");
    maxima
}

fn export(path: &Path, name: &str) -> std::path::PathBuf {
    let out = temp_dir(name).join("out.json");
    vramscope_ok(&[
        "export",
        path.to_str().expect("utf-8"),
        "--format",
        "perfetto",
        "-o",
        out.to_str().expect("utf-8"),
    ]);
    out
}

#[test]
fn perfetto_export_is_valid_and_keeps_the_peaks_and_the_ops() {
    let traces = shared_traces();
    for (path, name) in [
        (
            traces.join(
                "real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
            ),
            "export-bert",
        ),
        (traces.join("torch-cpu/t2.json.gz"), "export-t2"),
        (
            traces.join("real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz"),
            "export-resnet",
        ),
    ] {
        let out = export(&path, name);
        let maxima = check_events(&read_json(&out));
        let summary = vramscope_json(&["summary", path.to_str().expect("utf-8")]);
        for d in summary["devices"].as_array().expect("devices") {
            let device = d["device"].as_str().expect("device");
            for (field, series) in [
                ("peak_allocated_bytes", "allocated"),
                ("peak_reserved_bytes", "reserved"),
            ] {
                let counter = maxima.get(&format!("{device} {series}")).copied();
                match d[field].as_i64() {
                    Some(peak) => assert_eq!(counter, Some(peak as f64), "{device} {series}"),
                    None => assert_eq!(counter, None, "{device} {series}"),
                }
            }
        }
        // vramscope reads its own export back: a Chrome trace with the same ops, memory,
        // peaks (bytes, when, in which op), GPUs and per-op table.
        let out_text = out.to_str().expect("utf-8");
        let back = vramscope_json(&["summary", out_text]);
        for key in [
            "ops",
            "steps",
            "memory_events",
            "memory_events_in_ops",
            "gpus",
            "rank",
        ] {
            assert_eq!(back[key], summary[key], "{key}: {}", path.display());
        }
        assert_eq!(
            same_devices(&back["devices"]),
            same_devices(&summary["devices"]),
            "{}",
            path.display()
        );
        assert!(
            back["warnings"].as_object().is_none_or(|w| w.is_empty()),
            "{back}"
        );
        let table = |p: &str| vramscope_json(&["table", p, "--sort", "none"]);
        assert_eq!(table(out_text), table(path.to_str().expect("utf-8")));
    }
}

/// A summary's devices without where their totals came from: an export writes the totals
/// a legacy trace lacked, so they read back as the trace's own — and the memory no event
/// names at the peak, `unknown` under rebuilt totals, reads back as `before_trace`: the two
/// are counted together.
fn same_devices(devices: &Value) -> Value {
    let mut devices = devices.clone();
    for d in devices.as_array_mut().into_iter().flatten() {
        let Some(o) = d.as_object_mut() else { continue };
        o.remove("totals");
        if let Some(c) = o
            .get_mut("composition_at_peak")
            .and_then(Value::as_object_mut)
        {
            let unnamed: i64 = ["unknown", "before_trace"]
                .iter()
                .filter_map(|k| c.remove(*k).and_then(|v| v.as_i64()))
                .sum();
            c.insert("unnamed".into(), unnamed.into());
        }
        // What decided the unnamed bytes is the same (nothing), whichever word they take.
        if let Some(c) = o
            .get_mut("composition_evidence")
            .and_then(Value::as_object_mut)
        {
            let unnamed: Vec<Value> = ["unknown", "before_trace"]
                .iter()
                .filter_map(|k| c.remove(*k))
                .collect();
            c.insert("unnamed".into(), unnamed.into());
        }
    }
    devices
}

/// Allocator snapshots and OOMs survive the round trip too: every allocation, free, segment
/// and OOM comes back with the same peaks (the allocator's state at the snapshot itself and
/// the requested sizes, which the trace-event format cannot hold, do not).
#[test]
fn a_snapshot_exported_reads_back_with_the_same_memory() {
    for path in [
        fixtures().join("snapshot/oom.pickle"),
        fixtures().join("snapshot/multi_gpu.pickle"),
        shared_traces().join("real/snapshot-cs336-magma27/memory_snapshot.pickle"),
    ] {
        let out = export(&path, "export-snapshot");
        check_counters(&read_json(&out));
        let summary = vramscope_json(&["summary", path.to_str().expect("utf-8")]);
        let back = vramscope_json(&["summary", out.to_str().expect("utf-8")]);
        assert_eq!(
            back["memory_events"],
            summary["memory_events"],
            "{}",
            path.display()
        );
        // The requested sizes (beside the allocator's blocks) stay in the snapshot.
        let blocks_only = |v: &Value| {
            let mut v = v["devices"].clone();
            for d in v.as_array_mut().into_iter().flatten() {
                // The categories of a snapshot's blocks come from their allocation stacks,
                // which the trace-event format does not hold.
                if let Some(o) = d.as_object_mut() {
                    o.retain(|k, _| !k.contains("requested") && !k.starts_with("composition_"));
                }
            }
            v
        };
        assert_eq!(
            blocks_only(&back),
            blocks_only(&summary),
            "{}",
            path.display()
        );
        let live = |p: &Path| {
            let v = vramscope_json(&["live", p.to_str().expect("utf-8")]);
            (
                v["allocated_bytes"].clone(),
                v["live_bytes"].clone(),
                v["at_us"].clone(),
            )
        };
        assert_eq!(live(&out), live(&path), "{}", path.display());
    }
}

#[test]
fn counter_series_are_bounded_and_keep_the_peak() {
    // The largest trace here (28k memory events) is under the cap, so this checks the bound
    // and the peak end to end; decimation itself is unit-tested in analysis::decimate.
    let path = shared_traces().join("real/hta-df-index-resolver-rank1/df_index_resolver.json.gz");
    let out = export(&path, "export-hta");
    let doc = read_json(&out);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for e in doc["traceEvents"].as_array().expect("events") {
        if e["ph"] == "C" {
            *counts
                .entry(e["name"].as_str().expect("name").to_owned())
                .or_default() += 1;
        }
    }
    assert!(counts.contains_key("cuda:1 allocated"), "{counts:?}");
    assert!(counts.values().all(|&n| n <= 100_001), "{counts:?}");
    let summary = vramscope_json(&["summary", path.to_str().expect("utf-8")]);
    let maxima = check_events(&doc);
    assert_eq!(
        maxima.get("cuda:1 allocated").copied(),
        summary["devices"][0]["peak_allocated_bytes"].as_f64()
    );
}

#[test]
fn export_needs_a_known_format_and_a_writable_output() {
    let path = shared_traces().join("torch-cpu/t2.json.gz");
    let p = path.to_str().expect("utf-8");
    assert_eq!(
        vramscope(&["export", p, "--format", "csv", "-o", "/tmp/x"])
            .status
            .code(),
        Some(2)
    );
    let out = vramscope(&[
        "export",
        p,
        "--format",
        "perfetto",
        "-o",
        "/nonexistent-dir/out.json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent-dir/out.json"));
}

#[test]
fn nvml_samples_become_counter_tracks() {
    // GIVEN a recording with NVML samples of two GPUs and host RSS, as `record` writes it
    let dir = temp_dir("export-nvml");
    let rec = dir.join("run.vsr");
    let mut lines = vec![
        r#"{"vramscope_recording":1,"start_unix_ns":1764671000000000000,"command":["python","t.py"],"devices":[{"index":0,"name":"NVIDIA H200","total_bytes":150754820096},{"index":1}]}"#.to_owned(),
    ];
    let mut want = [0u64; 3];
    for i in 0..200u64 {
        let used0 = (1 << 30) + ((i * 7919) % 101) * (1 << 20);
        let procs0 = used0 - (300 << 20);
        let used1 = (2 << 30) + (i % 13) * (1 << 22);
        want = [want[0].max(used0), want[1].max(procs0), want[2].max(used1)];
        lines.push(format!(
            r#"{{"t_ns":{},"gpus":[{{"index":0,"used":{used0},"total":150754820096,"procs":{procs0}}},{{"index":1,"used":{used1}}}],"rss":{}}}"#,
            i * 100_000_000,
            (500 << 20) + i * 4096
        ));
    }
    lines.push(r#"{"t_ns":20000000000,"end":{"exit_code":0}}"#.to_owned());
    std::fs::write(&rec, lines.join("\n") + "\n").expect("write");
    // WHEN exported
    let out = export(&rec, "export-nvml-out");
    let maxima = check_counters(&read_json(&out));
    // THEN each sampled quantity is a counter track with the samples' maximum
    assert_eq!(
        maxima.get("cuda:0 NVML used"),
        Some(&(want[0] as f64)),
        "{maxima:?}"
    );
    assert_eq!(
        maxima.get("cuda:0 NVML used by the recorded processes"),
        Some(&(want[1] as f64))
    );
    assert_eq!(maxima.get("cuda:1 NVML used"), Some(&(want[2] as f64)));
    assert!(!maxima.contains_key("cuda:1 NVML used by the recorded processes"));
    assert_eq!(
        maxima.get("host RSS of the recorded processes"),
        Some(&(((500 << 20) + 199 * 4096) as f64))
    );
    let summary = vramscope_json(&["summary", rec.to_str().expect("utf-8")]);
    assert_eq!(summary["nvml"][0]["peak_used_bytes"], want[0], "{summary}");
    assert_eq!(summary["nvml"][0]["peak_process_bytes"], want[1]);
    assert_eq!(summary["nvml"][1]["peak_used_bytes"], want[2]);
}

/// Nsight exports survive the round trip: the CUDA memory rows come back as segment events
/// inside the same NVTX ranges and runtime calls (the ranges are `nvtx` slices), on the same
/// devices in the same order, with the same peaks.
#[test]
fn an_nsight_export_reads_back_with_the_same_memory_and_ops() {
    let path = fixtures().join("nsight/cuda-memory.sqlite");
    let out = export(&path, "export-nsight");
    let summary = vramscope_json(&["summary", path.to_str().expect("utf-8")]);
    let back = vramscope_json(&["summary", out.to_str().expect("utf-8")]);
    for key in [
        "ops",
        "steps",
        "memory_events",
        "memory_events_in_ops",
        "gpus",
    ] {
        assert_eq!(back[key], summary[key], "{key}");
    }
    assert!(
        summary["memory_events_in_ops"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    assert_eq!(
        same_devices(&back["devices"]),
        same_devices(&summary["devices"])
    );
    let table = |p: &Path| vramscope_json(&["table", p.to_str().expect("utf-8"), "--sort", "none"]);
    let rows = table(&path);
    assert!(rows.as_array().is_some_and(|r| r.len() > 10), "{rows}");
    assert_eq!(table(&out), rows);
}
