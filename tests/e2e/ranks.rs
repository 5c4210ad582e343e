//! Many ranks at once (issue 19): `summary`, `check` and `report` of several inputs and of
//! directories. The rank set is made here from a real fixture: each rank's copy has its
//! allocation sizes and totals multiplied by its own factor, so the worst rank and the
//! skew are known, and checked against an independent reading of the files written.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{fixtures, read_maybe_gz, temp_dir, vramscope, vramscope_json, vramscope_ok};

/// Each rank's factor on allocation sizes: rank 5 is the worst (9×); the peaks' median is
/// the mean of the middle two factors, (3 + 4) / 2.
const FACTORS: [i64; 8] = [3, 1, 4, 1, 5, 9, 2, 6];

fn base_trace() -> Value {
    let path = fixtures().join("torch-cpu/k01_mlp_s1.json.gz");
    serde_json::from_slice(&read_maybe_gz(&path)).expect("fixture JSON")
}

/// The trace of a rank: sizes and totals times `factor`; `distributedInfo` when `rank`.
fn rank_trace(base: &Value, rank: Option<i64>, factor: i64) -> Value {
    let mut trace = base.clone();
    if let Some(events) = trace["traceEvents"].as_array_mut() {
        for e in events.iter_mut().filter(|e| e["name"] == "[memory]") {
            for key in ["Bytes", "Total Allocated", "Total Reserved"] {
                if let Some(v) = e["args"][key].as_i64() {
                    e["args"][key] = Value::from(v * factor);
                }
            }
        }
    }
    if let Some(rank) = rank {
        trace["distributedInfo"] =
            serde_json::json!({"backend": "nccl", "rank": rank, "world_size": 8});
    }
    trace
}

/// The largest `Total Allocated` of a trace's memory events: its peak, read independently.
fn peak_of(path: &Path) -> i64 {
    let trace: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON");
    trace["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["name"] == "[memory]")
        .filter_map(|e| e["args"]["Total Allocated"].as_i64())
        .max()
        .expect("memory events")
}

/// Eight ranks: 0–5 carry their rank inside (`node0/trace-aN.json`), 6 and 7 only in the
/// file name (`node1/rank-6.json`, `node1/deep/worker_rank7.json`); one file that is no
/// trace. Returns the directory and each rank's file.
fn rank_set(name: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = temp_dir(name);
    let base = base_trace();
    let mut files = Vec::new();
    for (rank, factor) in (0..).zip(FACTORS) {
        let (path, inside) = match rank {
            6 => (dir.join("node1/rank-6.json"), None),
            7 => (dir.join("node1/deep/worker_rank7.json"), None),
            r => (dir.join(format!("node0/trace-a{r}.json")), Some(r)),
        };
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let trace = rank_trace(&base, inside, factor);
        std::fs::write(&path, serde_json::to_vec(&trace).expect("JSON")).expect("write");
        files.push(path);
    }
    std::fs::write(dir.join("node1/notes.txt"), "not a trace\n").expect("write");
    (dir, files)
}

fn median(values: &[i64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
    }
}

#[test]
fn summary_of_a_rank_directory_names_the_worst_rank_and_the_skew() {
    let (dir, files) = rank_set("ranks-summary");
    let peaks: Vec<i64> = files.iter().map(|f| peak_of(f)).collect();
    let worst = (0..peaks.len()).max_by_key(|&i| peaks[i]).expect("ranks");
    let skew = peaks[worst] as f64 / median(&peaks);
    let doc = vramscope_json(&["summary", dir.to_str().expect("utf-8")]);
    // Ranks from inside (0–5) and from the file names (6, 7), in rank order.
    let inputs = doc["inputs"].as_array().expect("inputs");
    let ranks: Vec<i64> = inputs
        .iter()
        .map(|i| i["rank"].as_i64().expect("rank"))
        .collect();
    assert_eq!(ranks, (0..8).collect::<Vec<i64>>());
    for (input, (file, peak)) in inputs.iter().zip(files.iter().zip(&peaks)) {
        assert_eq!(input["path"], file.display().to_string());
        assert_eq!(input["devices"][0]["peak_allocated_bytes"], *peak);
    }
    assert_eq!(worst, 5);
    assert_eq!(doc["worst"]["rank"], 5);
    assert_eq!(doc["worst"]["path"], files[5].display().to_string());
    assert_eq!(doc["worst"]["device"], "cpu");
    assert_eq!(doc["worst"]["peak_allocated_bytes"], peaks[5]);
    assert_eq!(peaks[5], 9 * 5_333_760);
    let measured = doc["skew"]["max_over_median"].as_f64().expect("skew");
    assert!((measured - skew).abs() < 1e-9, "{measured} vs {skew}");
    assert!((skew - 9.0 / 3.5).abs() < 1e-9);
    assert_eq!(doc["skipped_files"], 1);
    assert_eq!(doc["ooms"], serde_json::json!([]));
    // The per-device objects are a single-file summary's, field for field.
    let single = vramscope_json(&["summary", files[2].to_str().expect("utf-8")]);
    assert_eq!(inputs[2]["devices"], single["devices"]);
    // Text: a row per rank, the worst and the skew.
    let text = vramscope_ok(&["summary", dir.to_str().expect("utf-8")]);
    assert!(text.starts_with("8 inputs (1 file skipped"), "{text}");
    assert!(
        text.contains(&format!("rank 5 ({}) cpu, 45.78 MiB", files[5].display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("\nskew           {skew:.3}× (max over median")),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn files_and_directories_mix_and_one_file_keeps_its_summary() {
    let (dir, files) = rank_set("ranks-mix");
    let f = |p: &Path| p.to_str().expect("utf-8").to_owned();
    let doc = vramscope_json(&["summary", &f(&files[7]), &f(&dir.join("node0"))]);
    let ranks: Vec<i64> = doc["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|i| i["rank"].as_i64().expect("rank"))
        .collect();
    assert_eq!(ranks, [0, 1, 2, 3, 4, 5, 7]);
    assert_eq!(doc["skipped_files"], 0);
    // One file: today's summary (the goldens pin it byte for byte).
    let one = vramscope_ok(&["summary", &f(&files[0])]);
    assert!(
        one.starts_with(&format!("{}\n  format", files[0].display())),
        "{one}"
    );
    // A directory holding one trace is still a fleet.
    let fleet = vramscope_ok(&["summary", &f(&dir.join("node1/deep"))]);
    assert!(fleet.starts_with("1 input\n"), "{fleet}");
    // A directory with no input is an error naming what was skipped.
    let empty = temp_dir("ranks-empty");
    std::fs::write(empty.join("a.txt"), "x").expect("write");
    let out = vramscope(&["summary", &f(&empty)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 other files skipped"));
    std::fs::remove_dir_all(&dir).expect("clean up");
    std::fs::remove_dir_all(&empty).expect("clean up");
}

#[test]
fn check_over_many_ranks_names_every_rank_over_the_limit() {
    let (dir, files) = rank_set("ranks-check");
    let d = dir.to_str().expect("utf-8");
    let base = peak_of(&files[1]); // factor 1
    // Between 5× and 6×: ranks 5 (9×) and 7 (6×) are over, worst first.
    let limit = (base * 5 + base / 2).to_string();
    let out = vramscope(&["check", d, "--max-peak", &limit]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("over the limit: 2 inputs over"),
        "{text}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "  rank 5 {} cpu peak allocated",
            files[5].display()
        )),
        "{text}"
    );
    assert!(
        lines[2].starts_with(&format!("  rank 7 {} cpu", files[7].display())),
        "{text}"
    );
    assert_eq!(lines.len(), 3, "{text}");
    let json = vramscope(&["check", d, "--max-peak", &limit, "--format", "json"]);
    assert_eq!(json.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let mut over: Vec<(i64, i64)> = doc["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| {
            (
                f["rank"].as_i64().expect("rank"),
                f["value_bytes"].as_i64().expect("bytes"),
            )
        })
        .collect();
    over.sort();
    assert_eq!(over, [(5, 9 * base), (7, 6 * base)]);
    assert_eq!(doc["verdict"], "over");
    assert_eq!(doc["devices"].as_array().expect("devices").len(), 8);
    // Above the worst: 0. An unreadable rank: 2, naming it.
    let ok = vramscope(&["check", d, "--max-peak", &(9 * base).to_string()]);
    assert_eq!(ok.status.code(), Some(0));
    std::fs::write(dir.join("node0/trace-a9.json"), "{\"traceEvents\": [").expect("write");
    let bad = vramscope(&["check", d, "--max-peak", "1GiB"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("trace-a9.json"));
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn report_of_a_rank_directory_starts_with_the_ranks() {
    let (dir, _files) = rank_set("ranks-report");
    let out_dir = temp_dir("ranks-report-out").join("r");
    vramscope_ok(&[
        "report",
        dir.join("node1").to_str().expect("utf-8"),
        "-o",
        out_dir.to_str().expect("utf-8"),
    ]);
    let md = std::fs::read_to_string(out_dir.join("report.md")).expect("report.md");
    // The first section, right under the title.
    assert!(md.starts_with("# vramscope report\n\n## Ranks\n"), "{md}");
    assert!(md.contains("2 inputs (1 file skipped"), "{md}");
    // rank 7 (6×) is worse than rank 6 (2×).
    assert!(
        md.contains("- **worst**: rank 7 (worker_rank7.json) cpu, 30.52 MiB"),
        "{md}"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
    std::fs::remove_dir_all(out_dir.parent().expect("parent")).expect("clean up");
}

#[test]
fn a_deep_unrelated_subtree_is_skipped_with_a_warning() {
    // GIVEN a rank directory that also holds a tree 40 levels deep (a venv, a cache)
    let (dir, _) = rank_set("deep-subtree");
    let mut deep = dir.join("cache");
    for level in 0..40 {
        deep = deep.join(format!("d{level}"));
    }
    std::fs::create_dir_all(&deep).expect("deep tree");
    // WHEN summarized
    let out = vramscope(&["summary", dir.to_str().expect("utf-8"), "--format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // THEN the ranks are read, and a warning says what was not searched and what to do
    assert!(out.status.success(), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["inputs"].as_array().map(Vec::len), Some(8));
    assert!(
        stderr.contains("1 directories more than 32 levels below the directory named not searched"),
        "{stderr}"
    );
    assert!(
        stderr.contains("name a deeper directory itself to read them"),
        "{stderr}"
    );
}
