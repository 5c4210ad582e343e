//! Bad input gets one clear line naming the file, what is wrong and where; exit code 1
//! (2 for usage errors); never a panic.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use crate::support::*;

pub(crate) fn expect_failure(args: &[&str], code: i32, needles: &[&str]) -> String {
    let out = vramscope(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{args:?}: missing {n:?} in {stderr}");
    }
    stderr
}

#[test]
fn broken_files_are_named_with_a_position() {
    let dir = temp_dir("bad");
    let real = read_maybe_gz(&shared_traces().join("torch-cpu/t2.json.gz"));
    let cut_at = real.len() * 3 / 5;
    let cases: Vec<(&str, Vec<u8>, &[&str])> = vec![
        (
            "not-json.json",
            b"hello, world".to_vec(),
            &["not-json.json", "not a format vramscope reads"],
        ),
        ("empty.json", Vec::new(), &["empty.json", "empty"]),
        (
            "truncated.json",
            real[..cut_at].to_vec(),
            &["truncated.json", "ends early", "at byte"],
        ),
        (
            "shape.json",
            br#"{"foo": 1, "bar": [1,2]}"#.to_vec(),
            &["shape.json", "traceEvents"],
        ),
        (
            "syntax.json",
            br#"{"traceEvents": [{"ph": "X",, }]}"#.to_vec(),
            &["syntax.json", "invalid JSON", "at byte 28"],
        ),
        (
            "binary.bin",
            vec![0u8, 159, 146, 150, 1, 2, 3],
            &["binary.bin", "byte 0x00"],
        ),
    ];
    for (name, bytes, needles) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        for cmd in ["summary", "table"] {
            let stderr = expect_failure(&[cmd, path.to_str().expect("path")], 1, needles);
            assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
        }
    }
    // The cut-off position is reported exactly.
    let truncated = dir.join("truncated.json");
    let stderr = expect_failure(&["summary", truncated.to_str().expect("p")], 1, &[]);
    assert!(stderr.contains(&format!("at byte {cut_at}")), "{stderr}");
}

#[test]
fn missing_and_unreadable_paths() {
    expect_failure(
        &["summary", "/nonexistent/trace.json"],
        1,
        &["/nonexistent/trace.json", "cannot read"],
    );
    let dir = temp_dir("dir-as-file");
    expect_failure(&["table", dir.to_str().expect("p")], 1, &["cannot read"]);
}

#[test]
fn cut_gzip_fails_cleanly_and_salvage_keeps_the_prefix() {
    let gz = std::fs::read(
        shared_traces()
            .join("real/tracelens-h100-qwen-0.5b/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
    )
    .expect("read");
    let dir = temp_dir("cutgz");
    let path = dir.join("qwen-cut.json.gz");
    std::fs::write(&path, &gz[..gz.len() / 2]).expect("write");
    let p = path.to_str().expect("p");
    expect_failure(&["summary", p], 1, &["qwen-cut.json.gz", "gzip"]);
    let full = vramscope_json(&[
        "summary",
        &shared_traces()
            .join("real/tracelens-h100-qwen-0.5b/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
            .to_string_lossy(),
    ]);
    let out = vramscope(&["summary", p, "--salvage", "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("ends early"));
    let salvaged: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let (n, total) = (
        salvaged["events"].as_u64().expect("n"),
        full["events"].as_u64().expect("n"),
    );
    assert!(n > total / 4 && n < total, "{n} of {total}");
    assert!(salvaged["truncated_at_byte"].as_u64().is_some());
}

#[test]
fn hostile_inputs_end_quickly_without_panics() {
    let dir = temp_dir("hostile");
    let mut deep = String::from("{\"traceEvents\": [");
    deep.push_str(&"[".repeat(100_000));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("deep.json", deep.into_bytes()),
        ("nan.json", br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": NaN, "dur": 1}]}"#.to_vec()),
        ("bigint.json", br#"{"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": 99999999999999999999999999, "Device Type": 0}}]}"#.to_vec()),
        ("hugets.json", br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": 1e300, "dur": 1e300}]}"#.to_vec()),
        ("negdur.json", br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": 5, "dur": -3}]}"#.to_vec()),
    ];
    for (name, bytes) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        let out = vramscope(&["summary", path.to_str().expect("p")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(matches!(out.status.code(), Some(0 | 1)), "{name}: {stderr}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let t2 = shared_traces().join("torch-cpu/t2.json.gz");
    let t2 = t2.to_str().expect("p");
    expect_failure(
        &["table", t2, "--sort", "cpu_time_total"],
        2,
        &["unknown sort key"],
    );
    expect_failure(
        &["table", t2, "--from-us", "10", "--to-us", "5"],
        2,
        &["--from-us"],
    );
    expect_failure(&["table"], 2, &["Usage"]);
    expect_failure(&["frobnicate"], 2, &[]);
    expect_failure(&["table", t2, "--format", "yaml"], 2, &[]);
}

#[test]
fn a_closed_pipe_ends_quietly() {
    // 30,000 distinct ops: far more table than a pipe buffer holds.
    let dir = temp_dir("pipe");
    let trace = dir.join("many-ops.json");
    let events: Vec<String> = (0..30_000)
        .map(|i| format!(r#"{{"ph": "X", "cat": "cpu_op", "name": "op_{i}", "pid": 1, "tid": 1, "ts": {i}, "dur": 1}}"#))
        .collect();
    std::fs::write(
        &trace,
        format!("{{\"traceEvents\": [{}]}}", events.join(",")),
    )
    .expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(["table", trace.to_str().expect("p"), "--format", "csv"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::io::stderr().flush();
}

#[test]
fn live_on_a_trace_without_memory_names_the_file_and_the_fix() {
    // A real trace profiled without profile_memory=True: nothing to list, and the one line
    // says which file and why (exit 1); an unknown device is a usage error (exit 2).
    let dir = shared_traces().join("real/kineto-resnet50-2021-01-nomem");
    let trace = std::fs::read_dir(&dir)
        .expect("the no-memory trace")
        .map(|e| e.expect("entry").path())
        .find(|p| p.to_string_lossy().ends_with(".json.gz"))
        .expect("a .json.gz");
    let t = trace.to_str().expect("path");
    let name = trace
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let stderr = expect_failure(
        &["live", t, "--at", "peak"],
        1,
        &[&name, "profile_memory=True"],
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    let sample = repo_root().join("samples/transformer-lm-train-cpu.json.gz");
    let s = sample.to_str().expect("path");
    expect_failure(
        &["live", s, "--device", "7"],
        2,
        &["transformer-lm-train-cpu.json.gz", "no device 7"],
    );
}

#[test]
fn absurd_timestamps_are_clamped_and_counted() {
    // A trace whose clock jumps by 1.8e16 µs: durations computed from it would overflow
    // i64 ns. Times are clamped to ±146 years, counted in the warnings, and every command
    // still answers.
    let dir = temp_dir("absurd-times");
    let path = dir.join("absurd.json");
    std::fs::write(
        &path,
        br#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": -9000000000000000, "dur": 5},
  {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 9000000000000000,
   "args": {"Device Type": 0, "Device Id": -1, "Addr": 1, "Bytes": 64, "Total Allocated": 64, "Total Reserved": 0}}
]}"#,
    )
    .expect("write");
    let p = path.to_str().expect("path");
    let summary = vramscope(&["summary", p]);
    let stdout = String::from_utf8_lossy(&summary.stdout);
    let stderr = String::from_utf8_lossy(&summary.stderr);
    assert_eq!(summary.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("3 timestamps beyond ±146 years clamped"),
        "{stdout}"
    );
    for args in [
        vec!["table", p],
        vec!["live", p, "--at", "peak"],
        vec!["export", p, "--format", "perfetto", "-o"],
    ] {
        let mut args = args;
        let out_path = dir.join("out.json");
        let out_str = out_path.to_str().expect("path").to_owned();
        if args.last() == Some(&"-o") {
            args.push(&out_str);
        }
        let out = vramscope(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

#[test]
fn archives_under_a_trace_name_are_named_with_the_way_out() {
    // GIVEN the first bytes of a zip, a zstd and an xz file, each named like a gzip trace
    let dir = temp_dir("archives");
    for (magic, format, next) in [
        (&b"PK\x03\x04\x14\x00"[..], "zip", "unpack it (unzip)"),
        (
            &b"\x28\xb5\x2f\xfd\x04\x58"[..],
            "zstd",
            "decompress it (zstd -d)",
        ),
        (&b"\xfd7zXZ\x00\x00\x04"[..], "xz", "decompress it (xz -d)"),
    ] {
        let path = dir.join(format!("{format}.json.gz"));
        std::fs::write(&path, magic).expect("write");
        let p = path.to_str().expect("utf-8");
        // WHEN read, THEN the error names the container and what to do
        expect_failure(
            &["summary", p],
            1,
            &[
                p,
                &format!("it is a {format} file, whatever its name says; {next}"),
            ],
        );
    }
}
