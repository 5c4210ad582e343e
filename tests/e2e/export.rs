//! `vramscope export --format perfetto`: valid Chrome trace-event JSON whose memory
//! counters peak where `summary` says, and which vramscope reads back with every op.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::support::*;

/// Check every event against the trace-event format; return the counters' maxima by name.
fn check_events(doc: &Value) -> BTreeMap<String, f64> {
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
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(phases.get("X").copied().unwrap_or(0) > 0, "{phases:?}");
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
        // vramscope reads its own export back: a Chrome trace with the same ops.
        let back = vramscope_json(&["summary", out.to_str().expect("utf-8")]);
        assert_eq!(back["ops"], summary["ops"], "{}", path.display());
        assert_eq!(back["steps"], summary["steps"], "{}", path.display());
        assert!(
            back["warnings"].as_object().is_none_or(|w| w.is_empty()),
            "{back}"
        );
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
