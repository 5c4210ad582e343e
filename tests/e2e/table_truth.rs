//! `vramscope table` against torch's own `key_averages()` output, row by row and column by
//! column, on every trace that has a `*.key_averages.json` beside it.

use std::path::Path;

use serde_json::Value;

use crate::support::*;

/// Compare one trace's table with torch's numbers. Returns a description of the first
/// differences, or None.
fn compare(trace: &Path, truth: &Path) -> Option<String> {
    let trace_str = trace.to_str().expect("utf-8 path");
    let got = vramscope_json(&["table", trace_str, "--sort", "none"]);
    let want = read_json(truth);
    let want = want
        .get("key_averages")
        .expect("key_averages in truth file");
    if &got == want {
        return None;
    }
    let (got, want) = (
        got.as_array().expect("array"),
        want.as_array().expect("array"),
    );
    let mut diffs = vec![format!(
        "{}: {} rows vs torch's {}",
        trace.display(),
        got.len(),
        want.len()
    )];
    for (g, w) in got.iter().zip(want).filter(|(g, w)| g != w).take(5) {
        diffs.push(format!("  got  {g}\n  want {w}"));
    }
    Some(diffs.join("\n"))
}

fn check_dir(dir: &Path, at_least: usize) {
    let pairs = truth_pairs(dir);
    assert!(
        pairs.len() >= at_least,
        "expected ≥ {at_least} truth files in {}",
        dir.display()
    );
    let failures: Vec<String> = pairs.iter().filter_map(|(t, k)| compare(t, k)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn shared_torch_truth_is_matched_exactly() {
    check_dir(&shared_traces().join("torch-cpu"), 3);
}

#[test]
fn project_torch_truth_is_matched_exactly() {
    // Made with gen_truth.py and gen_extra.py (tests/fixtures/torch-cpu/README.md): stacks,
    // schedules, checkpointing, a second allocating thread, nested same-name ranges,
    // memory outside any op, tensorboard_trace_handler output, ATen overload names
    // (capture_overload_names=True: rows keyed and folded by the name without the overload).
    check_dir(&fixtures().join("torch-cpu"), 23);
}

#[test]
fn bundled_sample_matches_its_truth() {
    check_dir(&repo_root().join("samples"), 1);
}

#[test]
fn default_sort_is_torchs_table_order() {
    // torch's table(sort_by="self_cpu_memory_usage") is a stable descending sort of the
    // key_averages order; its first column of names is in the *.table.txt beside the trace.
    let dir = shared_traces().join("torch-cpu");
    let trace = dir.join("t2.json.gz");
    let table = std::fs::read_to_string(dir.join("t2.table.txt")).expect("table.txt");
    let torch_names: Vec<&str> = table
        .lines()
        .skip(3)
        .take_while(|l| !l.starts_with('-'))
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .find(|s| !s.is_empty())
                .expect("name")
        })
        .collect();
    assert_eq!(torch_names.len(), 20);
    let ours = vramscope_json(&["table", trace.to_str().expect("path"), "--limit", "20"]);
    let ours: Vec<&str> = ours
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["name"].as_str().expect("name"))
        .collect();
    assert_eq!(ours, torch_names);
}

#[test]
fn text_table_looks_like_torchs() {
    // t2 (torch's plain names) and o01 (capture_overload_names=True: names without overloads).
    for (dir, base) in [
        (shared_traces().join("torch-cpu"), "t2"),
        (fixtures().join("torch-cpu"), "o01_mlp_overload"),
    ] {
        let trace = dir.join(format!("{base}.json.gz"));
        let text = vramscope_ok(&["table", trace.to_str().expect("path"), "--limit", "20"]);
        let torch =
            std::fs::read_to_string(dir.join(format!("{base}.table.txt"))).expect("table.txt");
        // Same name column and memory cells as torch printed (torch also prints time columns).
        for (ours, theirs) in text.lines().skip(3).zip(torch.lines().skip(3)).take(20) {
            let name_ours = &ours[..55];
            let name_theirs = &theirs[..55];
            assert_eq!(name_ours, name_theirs, "{base}");
            let cells: Vec<&str> = ours
                .split("  ")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            let torch_cells: Vec<&str> = theirs
                .split("  ")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            // ours: name, CPU Mem, Self CPU Mem, calls; torch: name, 5 time columns, CPU Mem,
            // Self CPU Mem, calls
            assert_eq!(
                cells[1..],
                torch_cells[torch_cells.len() - 3..],
                "{ours}\n{theirs}"
            );
        }
        assert!(text.contains("Self CPU Mem") && text.contains("# of Calls"));
    }
}

#[test]
fn csv_and_json_agree() {
    let trace = shared_traces().join("torch-cpu/t3.json.gz");
    let path = trace.to_str().expect("path");
    let json = vramscope_json(&["table", path]);
    let csv = vramscope_ok(&["table", path, "--format", "csv"]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "name,calls,self_cpu_memory_usage,cpu_memory_usage,self_device_memory_usage,device_memory_usage"
        )
    );
    let rows: Vec<&str> = lines.collect();
    let json = json.as_array().expect("rows");
    assert_eq!(rows.len(), json.len());
    for (line, row) in rows.iter().zip(json) {
        let want = format!(
            "{},{},{},{},{},{}",
            row["name"].as_str().expect("name"),
            row["calls"],
            row["self_cpu_memory_usage"],
            row["cpu_memory_usage"],
            row["self_device_memory_usage"],
            row["device_memory_usage"]
        );
        assert_eq!(*line, want);
    }
}

#[test]
fn time_window_selects_one_step() {
    let trace = shared_traces().join("torch-cpu/t2.json.gz");
    let path = trace.to_str().expect("path");
    // The steps' start and end, from the trace itself.
    let doc = read_json(&trace);
    let events = doc["traceEvents"].as_array().expect("events");
    let ts = |e: &Value, k: &str| e.get(k).and_then(Value::as_f64);
    let start = events
        .iter()
        .filter_map(|e| ts(e, "ts"))
        .fold(f64::INFINITY, f64::min);
    let step = |n: u32| {
        let e = events
            .iter()
            .find(|e| e["name"] == format!("ProfilerStep#{n}"))
            .expect("step");
        let s = ts(e, "ts").expect("ts") - start;
        (s, s + ts(e, "dur").expect("dur"))
    };
    let (s1, e1) = step(1);
    let (s2, _) = step(2);
    // Just inside step 1: a window that ends before step 2 starts.
    let (from, to) = (
        format!("{:.3}", s1 + 0.001),
        format!("{:.3}", (e1 + s2) / 2.0 - 0.001),
    );
    let rows = vramscope_json(&[
        "table",
        path,
        "--from-us",
        &from,
        "--to-us",
        &to,
        "--sort",
        "none",
    ]);
    let rows = rows.as_array().expect("rows");
    let step_row = rows
        .iter()
        .find(|r| r["name"] == "ProfilerStep*")
        .expect("step row");
    assert_eq!(step_row["calls"], 1);
    // The whole trace has 4 steps; the window's memory is a part of the whole.
    let whole = vramscope_json(&["table", path, "--sort", "none"]);
    let whole_step = whole
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["name"] == "ProfilerStep*")
        .expect("row")
        .clone();
    assert_eq!(whole_step["calls"], 4);
    let calls = |rows: &[Value]| {
        rows.iter()
            .map(|r| r["calls"].as_u64().expect("calls"))
            .sum::<u64>()
    };
    let total_whole = calls(whole.as_array().expect("rows"));
    let total_window = calls(rows);
    assert!(
        total_window > total_whole / 8 && total_window < total_whole / 2,
        "{total_window} of {total_whole}"
    );
    // A window over everything is the whole table.
    let all = vramscope_json(&[
        "table",
        path,
        "--from-us",
        "-1",
        "--to-us",
        "1e12",
        "--sort",
        "none",
    ]);
    assert_eq!(all, whole);
}
