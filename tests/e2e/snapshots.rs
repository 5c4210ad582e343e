//! Every reporter's output, byte for byte, on small committed inputs: the text a user sees
//! (summary, table, live, check, diff in text and markdown, CSV) is snapshot-tested, so a
//! change to any of it shows up in review. The numbers in these files are checked against
//! independent truth elsewhere (table_truth, real_traces, snapshot); here what is guarded
//! is the rendering, and that the same input always gives the same bytes.

use std::process::Output;

use crate::support::*;

fn fixture(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

/// stdout of a run, with the exit code first (so a changed exit code is a changed snapshot).
fn shown(out: Output) -> String {
    format!(
        "exit {}\n{}{}",
        out.status.code().map_or("signal".into(), |c| c.to_string()),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn check(name: &str, args: &[&str]) {
    let first = shown(vramscope(args));
    let second = shown(vramscope(args));
    assert_eq!(first, second, "{name}: the same input gives the same bytes");
    assert_expected(name, &first);
}

#[test]
fn summaries() {
    check(
        "summary-trace.txt",
        &["summary", &fixture("torch-cpu/k01_mlp_s1.json.gz")],
    );
    check(
        "summary-snapshot.txt",
        &["summary", &fixture("snapshot/oom.pickle")],
    );
    check(
        "summary-multi-gpu.json",
        &[
            "summary",
            &fixture("snapshot/multi_gpu.pickle"),
            "--format",
            "json",
        ],
    );
    check(
        "summary-nsight.txt",
        &["summary", &fixture("nsight/cuda-memory.sqlite")],
    );
}

#[test]
fn tables() {
    let trace = fixture("torch-cpu/k05_lm_ckpt.json.gz");
    check("table.txt", &["table", &trace, "--limit", "12"]);
    check(
        "table-count.csv",
        &["table", &trace, "--sort", "count", "--format", "csv"],
    );
    check(
        "table-window.txt",
        &[
            "table",
            &trace,
            "--from-us",
            "1000",
            "--to-us",
            "4000",
            "--limit",
            "8",
        ],
    );
    check(
        "table-nsight.txt",
        &["table", &fixture("nsight/cuda-memory.sqlite")],
    );
}

#[test]
fn live_blocks() {
    let snap = fixture("snapshot/oom.pickle");
    check("live-peak.txt", &["live", &snap]);
    check(
        "live-oom.json",
        &["live", &snap, "--at", "oom", "--format", "json"],
    );
    check(
        "live-trace.txt",
        &[
            "live",
            &fixture("torch-cpu/x03_outside_op.json.gz"),
            "--limit",
            "6",
        ],
    );
}

#[test]
fn gates_and_diffs() {
    let snap = fixture("snapshot/oom.pickle");
    check("check-over.txt", &["check", &snap, "--max-peak", "100MiB"]);
    check("check-ok.txt", &["check", &snap, "--max-peak", "1GiB"]);
    let (a, b) = (
        fixture("torch-cpu/k06_lm_sched.json.gz"),
        fixture("torch-cpu/k08_lm_ckpt_sched.json.gz"),
    );
    check("diff.txt", &["diff", &a, &b, "--limit", "10"]);
    check(
        "diff.md",
        &[
            "diff", &a, &b, "--format", "markdown", "--align", "step", "--limit", "10",
        ],
    );
}
