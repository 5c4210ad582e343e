//! `vramscope diff`: a trace against itself changes nothing; two real traces differ by
//! exactly what `summary` and `table` say of each.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::support::*;

fn diff_json(a: &Path, b: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "diff",
        a.to_str().expect("utf-8 path"),
        b.to_str().expect("utf-8 path"),
    ];
    args.extend(extra);
    vramscope_json(&args)
}

const COLUMNS: [&str; 5] = [
    "calls",
    "self_cpu_memory_usage",
    "cpu_memory_usage",
    "self_device_memory_usage",
    "device_memory_usage",
];

/// `table --format json --sort none`, summed by name.
fn table_by_name(path: &Path) -> BTreeMap<String, [i64; 5]> {
    let rows = vramscope_json(&["table", path.to_str().expect("utf-8"), "--sort", "none"]);
    let mut out: BTreeMap<String, [i64; 5]> = BTreeMap::new();
    for r in rows.as_array().expect("rows") {
        let v = out
            .entry(r["name"].as_str().expect("name").to_owned())
            .or_default();
        for (i, c) in COLUMNS.iter().enumerate() {
            v[i] += r[*c].as_i64().expect("number");
        }
    }
    out
}

fn delta(change: &Value) -> i64 {
    change["delta"].as_i64().expect("delta")
}

#[test]
fn a_trace_against_itself_changes_nothing() {
    for path in [
        shared_traces().join("torch-cpu/t5.json.gz"),
        shared_traces()
            .join("real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz"),
    ] {
        for align in ["start", "step"] {
            let d = diff_json(&path, &path, &["--align", align]);
            let devices = d["devices"].as_array().expect("devices");
            assert!(!devices.is_empty());
            for dev in devices {
                for key in ["peak_allocated_bytes", "final_allocated_bytes"] {
                    assert_eq!(delta(&dev[key]), 0, "{key}");
                }
                assert_eq!(dev["peak_allocated_at_us"]["delta"].as_f64(), Some(0.0));
            }
            let ops = d["ops"].as_array().expect("ops");
            assert!(ops.len() > 10);
            for op in ops {
                for c in COLUMNS {
                    assert_eq!(delta(&op[c]), 0, "{} {c}", op["name"]);
                    assert_eq!(op[c]["a"], op[c]["b"]);
                }
            }
        }
    }
}

#[test]
fn deltas_are_the_differences_of_summary_and_table() {
    let a = shared_traces().join("torch-cpu/t2.json.gz");
    let b = shared_traces().join("torch-cpu/t3.json.gz");
    let d = diff_json(&a, &b, &[]);
    assert_eq!(d["sorted_by"], "self_cpu_memory_usage");

    // Devices: peak and final from `summary` of each file.
    let (sa, sb) = (
        vramscope_json(&["summary", a.to_str().expect("utf-8")]),
        vramscope_json(&["summary", b.to_str().expect("utf-8")]),
    );
    let device = |s: &Value, name: &str| -> Value {
        s["devices"]
            .as_array()
            .expect("devices")
            .iter()
            .find(|x| x["device"] == name)
            .cloned()
            .expect("device")
    };
    for dev in d["devices"].as_array().expect("devices") {
        let name = dev["device"].as_str().expect("name");
        let (da, db) = (device(&sa, name), device(&sb, name));
        for key in ["peak_allocated_bytes", "final_allocated_bytes"] {
            let (va, vb) = (da[key].as_i64().expect("a"), db[key].as_i64().expect("b"));
            assert_eq!(dev[key]["a"].as_i64(), Some(va));
            assert_eq!(dev[key]["b"].as_i64(), Some(vb));
            assert_eq!(delta(&dev[key]), vb - va, "{name} {key}");
        }
    }

    // Ops: every name of either table, deltas equal to B − A (absent = 0).
    let (ta, tb) = (table_by_name(&a), table_by_name(&b));
    let ops = d["ops"].as_array().expect("ops");
    let mut names: Vec<&String> = ta.keys().chain(tb.keys()).collect();
    names.sort();
    names.dedup();
    assert_eq!(ops.len(), names.len());
    let zero = [0; 5];
    for op in ops {
        let name = op["name"].as_str().expect("name");
        let va = ta.get(name).unwrap_or(&zero);
        let vb = tb.get(name).unwrap_or(&zero);
        for (i, c) in COLUMNS.iter().enumerate() {
            assert_eq!(delta(&op[*c]), vb[i] - va[i], "{name} {c}");
        }
        assert_eq!(
            op["self_cpu_memory_usage"]["a"].is_null(),
            !ta.contains_key(name)
        );
    }
    // Largest absolute change of self CPU memory first.
    let keys: Vec<u64> = ops
        .iter()
        .map(|o| delta(&o["self_cpu_memory_usage"]).unsigned_abs())
        .collect();
    assert!(keys.windows(2).all(|w| w[0] >= w[1]), "{keys:?}");
    assert!(keys[0] > 0);
}

#[test]
fn text_and_markdown_name_the_biggest_change() {
    let a = shared_traces().join("torch-cpu/t2.json.gz");
    let b = shared_traces().join("torch-cpu/t3.json.gz");
    let d = diff_json(&a, &b, &[]);
    let first = d["ops"][0]["name"].as_str().expect("name").to_owned();
    let (a, b) = (a.to_str().expect("utf-8"), b.to_str().expect("utf-8"));
    let text = vramscope_ok(&["diff", a, b, "--limit", "3"]);
    assert!(text.contains("peak allocated"), "{text}");
    assert!(text.contains(&first), "{text}");
    assert!(text.contains("3 ops, largest absolute change of self_cpu_memory_usage first"));
    let md = vramscope_ok(&["diff", a, b, "--format", "markdown"]);
    assert!(md.contains("| Name | Self CPU A |"), "{md}");
    assert!(md.contains(&format!("| `{first}` |")), "{md}");
    // Bad choices are usage errors.
    assert_eq!(
        vramscope(&["diff", a, b, "--align", "middle"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(vramscope(&["diff", a]).status.code(), Some(2));
}

#[test]
fn diff_chart_draws_both_runs_with_their_peaks() {
    // GIVEN a run and the same model with activation checkpointing (real torch traces)
    let a = fixtures().join("torch-cpu/k06_lm_sched.json.gz");
    let b = fixtures().join("torch-cpu/k08_lm_ckpt_sched.json.gz");
    let dir = temp_dir("diff-chart");
    let (png, svg) = (dir.join("cmp.png"), dir.join("cmp.svg"));
    for (chart, align) in [(&png, "start"), (&svg, "step")] {
        // WHEN diffed with a chart (JSON on stdout stays parseable)
        let d = diff_json(
            &a,
            &b,
            &["--align", align, "--chart", chart.to_str().expect("p")],
        );
        assert!(d["ops"].is_array(), "{d}");
    }
    // THEN the PNG is an image and the SVG labels each run's peak as `summary` has it
    let bytes = std::fs::read(&png).expect("png");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    let text = std::fs::read_to_string(&svg).expect("svg");
    assert!(text.contains("A: k06_lm_sched.json.gz") && text.contains("first step"));
    for run in [&a, &b] {
        let s = vramscope_json(&["summary", run.to_str().expect("p")]);
        let peak = s["devices"][0]["peak_allocated_bytes"]
            .as_i64()
            .expect("peak");
        let label = format!("peak {}", iec_size(peak));
        assert!(text.contains(&label), "{label} in the chart");
    }
    // and the same inputs draw the same bytes
    let again = dir.join("again.png");
    diff_json(&a, &b, &["--chart", again.to_str().expect("p")]);
    assert_eq!(std::fs::read(&again).expect("png"), bytes);
}

#[test]
fn diff_chart_of_runs_without_memory_is_an_error() {
    let nomem = shared_traces().join("real/kineto-resnet50-2021-01-nomem/worker0.pt.trace.json.gz");
    let p = nomem.to_str().expect("p");
    let out = temp_dir("diff-chart-none").join("x.png");
    let r = vramscope(&["diff", p, p, "--chart", out.to_str().expect("p")]);
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("nothing to chart"));
}

/// IEC sizes as vramscope prints them ("768.01 KiB"), written out here independently.
fn iec_size(n: i64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", units[i])
    }
}

/// Runs that do not compare like for like say so first: a run without memory events, and
/// runs with memory on no device in common (an allocator snapshot against a CPU trace).
#[test]
fn a_diff_says_when_the_runs_share_no_memory_to_compare() {
    let traces = shared_traces();
    let nomem = traces.join("real/kineto-resnet50-2021-01-nomem/worker0.pt.trace.json.gz");
    let cpu = repo_root().join("samples/transformer-lm-train-cpu.json.gz");
    let cuda = repo_root().join("samples/cs336-transformer-snapshot.pickle");
    let path = |p: &std::path::Path| p.to_str().expect("utf-8").to_owned();
    let (nomem, cpu, cuda) = (path(&nomem), path(&cpu), path(&cuda));

    let json = vramscope_json(&["diff", &nomem, &cpu]);
    assert_eq!(
        json["notes"],
        serde_json::json!([{"kind": "no_memory_events", "run": "a"}]),
        "{json}"
    );
    let text = vramscope_ok(&["diff", &nomem, &cpu]);
    assert!(text.contains("note: A has no memory events"), "{text}");

    let json = vramscope_json(&["diff", &cuda, &cpu]);
    assert_eq!(
        json["notes"],
        serde_json::json!([{"kind": "no_device_in_common", "a": ["cuda:0"], "b": ["cpu"]}]),
        "{json}"
    );
    let md = vramscope_ok(&["diff", &cuda, &cpu, "--format", "markdown"]);
    assert!(
        md.contains("**note:** the runs share no device (A: cuda:0; B: cpu)"),
        "{md}"
    );

    // Like for like: no notes, and the JSON has no "notes" key.
    let json = vramscope_json(&["diff", &cpu, &cpu]);
    assert!(json.get("notes").is_none(), "{json}");
}
