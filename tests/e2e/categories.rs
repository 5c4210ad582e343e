//! Memory categories end to end (issue 18): the composition at the peak in `summary`
//! (JSON and text) on every input there is, checked against torch's own memory profiler
//! on the committed runs, and the `categories` command's CSV and JSON.

use std::path::{Path, PathBuf};

use crate::support::{
    fixtures, read_json, shared_traces, temp_dir, vramscope, vramscope_json, vramscope_ok,
};

/// Every file under `dir` (recursively) that is not a generator, a note or a truth file.
fn candidate_inputs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.to_string_lossy().into_owned();
        if p.is_dir() {
            candidate_inputs(&p, out);
        } else if ![
            ".py",
            ".md",
            ".txt",
            ".csv",
            ".sh",
            ".truth.json",
            ".key_averages.json",
        ]
        .iter()
        .any(|end| name.ends_with(end))
        {
            out.push(p);
        }
    }
}

const CATEGORY_NAMES: [&str; 9] = [
    "parameter",
    "optimizer_state",
    "input",
    "temporary",
    "activation",
    "gradient",
    "autograd_detail",
    "unknown",
    "before_trace",
];

#[test]
fn the_composition_at_the_peak_sums_to_the_peak_on_every_input() {
    let mut files = Vec::new();
    candidate_inputs(&shared_traces(), &mut files);
    candidate_inputs(&fixtures(), &mut files);
    files.sort();
    let mut checked = 0;
    for f in &files {
        let path = f.to_string_lossy();
        let out = vramscope(&["summary", "--format", "json", &path]);
        if !out.status.success() {
            continue; // not an input (damaged fixtures, expected outputs)
        }
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        for d in doc["devices"].as_array().expect("devices") {
            let name = format!("{path} {}", d["device"]);
            let Some(peak) = d["peak_allocated_bytes"].as_i64() else {
                assert!(d.get("composition_at_peak").is_none(), "{name}");
                continue;
            };
            let c = d["composition_at_peak"]
                .as_object()
                .unwrap_or_else(|| panic!("{name}: none"));
            assert!(!c.is_empty(), "{name}");
            let mut sum = 0;
            for (k, v) in c {
                let v = v.as_i64().expect("bytes");
                assert!(CATEGORY_NAMES.contains(&k.as_str()), "{name}: {k}");
                assert!(v > 0, "{name}: {k} = {v} (absent means 0)");
                sum += v;
            }
            assert_eq!(sum, peak, "{name}");
            checked += 1;
        }
    }
    // 59 device peaks (of 80 files, the rest no inputs) when written; more only add.
    assert!(
        checked >= 59,
        "only {checked} device peaks checked of {} files",
        files.len()
    );
}

#[test]
fn summary_json_matches_torch_on_the_committed_runs() {
    let dir = fixtures().join("categories");
    let mut runs = 0;
    for e in std::fs::read_dir(&dir).expect("fixtures").flatten() {
        let truth_path = e.path();
        let Some(base) = truth_path
            .to_string_lossy()
            .strip_suffix(".truth.json")
            .map(str::to_owned)
        else {
            continue;
        };
        let truth = read_json(&truth_path);
        let doc = vramscope_json(&["summary", &format!("{base}.json.gz")]);
        let got = &doc["devices"][0]["composition_at_peak"];
        let mut want = truth["composition_at_peak"].clone();
        if truth["args"]["no_stack"].as_bool() == Some(true) && !truth["args"]["opt"].is_null() {
            // torch without stacks calls AdamW's two moments `parameter`: the weights are
            // one copy of its gradients (collector/tests/categories.rs says it in full).
            let gradients = want["gradient"].as_i64().expect("gradients");
            assert_eq!(want["parameter"].as_i64(), Some(3 * gradients), "{base}");
            want["parameter"] = gradients.into();
            want["optimizer_state"] = (2 * gradients).into();
        }
        let peak = truth["peak_allocated_bytes"].as_i64().expect("peak");
        let error: i64 = CATEGORY_NAMES
            .iter()
            .map(|k| (got[k].as_i64().unwrap_or(0) - want[k].as_i64().unwrap_or(0)).abs())
            .sum();
        assert!(error * 20 <= peak, "{base}: Σ|err| {error} of {peak}");
        runs += 1;
    }
    assert_eq!(runs, 64);
}

#[test]
fn the_text_summary_lists_the_categories_largest_first() {
    let c04 = fixtures().join("categories/c04_lm_ckpt_adam.json.gz");
    let text = vramscope_ok(&["summary", &c04.to_string_lossy()]);
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("  at the peak"))
        .take(6)
        .collect();
    assert_eq!(
        lines[0],
        "  at the peak      optimizer_state 1.25 MiB (42%)"
    );
    assert_eq!(lines[1].trim(), "autograd_detail 1.06 MiB (36%)");
    assert_eq!(lines[5].trim(), "input 2.00 KiB (<1%)");
}

#[test]
fn categories_csv_follows_the_allocated_curve() {
    let c01 = fixtures().join("categories/c01_lm_adamw.json.gz");
    let path = c01.to_string_lossy();
    let csv = vramscope_ok(&["categories", &path]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "device,time_us,parameter,optimizer_state,input,temporary,activation,gradient,autograd_detail,unknown,before_trace"
        )
    );
    let sums: Vec<i64> = lines
        .map(|l| {
            l.split(',')
                .skip(2)
                .map(|v| v.parse::<i64>().expect("bytes"))
                .sum()
        })
        .collect();
    let summary = vramscope_json(&["summary", &path]);
    let d = &summary["devices"][0];
    // One row per memory event (3,126: no decimation), the curve's peak and final value.
    assert_eq!(
        sums.len() as i64,
        d["memory_events"].as_i64().expect("events")
    );
    assert_eq!(
        sums.iter().max().copied(),
        d["peak_allocated_bytes"].as_i64()
    );
    assert_eq!(sums.last().copied(), d["final_allocated_bytes"].as_i64());
}

#[test]
fn categories_json_goes_to_a_file_with_dash_o() {
    let c02 = fixtures().join("categories/c02_cnn_sgdm.json.gz");
    let dir = temp_dir("categories");
    let dest = dir.join("c02.json");
    let out = vramscope(&[
        "categories",
        "--format",
        "json",
        "-o",
        &dest.to_string_lossy(),
        &c02.to_string_lossy(),
    ]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let doc = read_json(&dest);
    assert_eq!(doc["categories"].as_array().map(Vec::len), Some(9));
    let dev = &doc["devices"][0];
    assert_eq!(dev["device"], "cpu");
    assert_eq!(dev["events"], 506);
    let times = dev["times_us"].as_array().expect("times");
    let bytes = dev["bytes"].as_array().expect("bytes");
    assert_eq!((times.len(), bytes.len()), (506, 506));
    // At the peak (3,227,656 B) the oneDNN scratch buffers torch calls unknown: 271,360 B.
    let peak_row = bytes
        .iter()
        .max_by_key(|r| {
            r.as_array()
                .expect("row")
                .iter()
                .filter_map(|v| v.as_i64())
                .sum::<i64>()
        })
        .expect("rows");
    assert_eq!(peak_row[7], 271_360);
}

#[test]
fn categories_of_a_file_that_is_no_input_fail_with_its_name() {
    let dir = temp_dir("categories-bad");
    let bad = dir.join("notes.json");
    std::fs::write(&bad, "{\"traceEvents\": [").expect("write");
    let out = vramscope(&["categories", &bad.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("notes.json"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
