//! Bad input gets one clear line naming the file, what is wrong and where; exit code 1
//! (2 for usage errors); never a panic.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use crate::support::*;

fn expect_failure(args: &[&str], code: i32, needles: &[&str]) -> String {
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

/// A UTF-8 byte-order mark and any amount of leading whitespace (here past the sniffer's
/// first 4 KiB) are not content: the trace and the Nsight export read exactly as without
/// them, gzip or not. A file of whitespace alone says so.
#[test]
fn a_byte_order_mark_and_leading_whitespace_read_normally() {
    let dir = temp_dir("bom");
    let inputs = [
        ("trace.json", shared_traces().join("torch-cpu/t2.json.gz")),
        ("nsys.json", shared_traces().join("nsys-cpu/run.json")),
    ];
    for (name, path) in inputs {
        let plain = read_maybe_gz(&path);
        let want = |args: &[&str]| {
            let mut v = vramscope_json(args);
            if let Some(o) = v.as_object_mut() {
                o.remove("file");
                o.remove("compressed");
            }
            v
        };
        let original = dir.join(name);
        std::fs::write(&original, &plain).expect("write");
        let original_text = original.to_str().expect("utf-8");
        let summary = want(&["summary", original_text]);
        let table = vramscope_json(&["table", original_text, "--sort", "none"]);
        let mut padded = b"\xEF\xBB\xBF".to_vec();
        padded.extend(std::iter::repeat_n(b' ', 5000));
        padded.extend(b"\n\t\r\n");
        padded.extend(&plain);
        for (variant, bytes) in [
            ("bom", [&b"\xEF\xBB\xBF"[..], &plain].concat()),
            ("padded", padded.clone()),
            ("padded-gz", gzip(&padded)),
        ] {
            let file = dir.join(format!("{variant}-{name}"));
            std::fs::write(&file, &bytes).expect("write");
            let text = file.to_str().expect("utf-8");
            assert_eq!(want(&["summary", text]), summary, "{variant} {name}");
            let rows = vramscope_json(&["table", text, "--sort", "none"]);
            assert_eq!(rows, table, "{variant} {name}");
        }
    }
    let blank = dir.join("blank.json");
    std::fs::write(&blank, vec![b' '; 10_000]).expect("write");
    expect_failure(
        &["summary", blank.to_str().expect("utf-8")],
        1,
        &["blank.json", "10000 bytes are whitespace and nothing else"],
    );
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).expect("gzip");
    gz.finish().expect("gzip")
}

/// Totals below zero are shown as the source gives them and counted in a warning: a trace
/// whose `Total Allocated` goes negative, and reserved memory freed before it was reserved
/// (a `[segment]` release first, as Nsight rows out of order give).
#[test]
fn totals_below_zero_are_kept_and_named() {
    let dir = temp_dir("negative");
    let event = |name: &str, ts: u32, args: &str| {
        format!(
            r#"{{"ph":"i","s":"t","cat":"cpu_instant_event","name":"{name}","pid":1,"tid":1,"ts":{ts},"args":{{{args},"Device Type":1,"Device Id":0}}}}"#
        )
    };
    let trace = format!(
        r#"{{"traceEvents":[{{"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,"ts":0,"dur":10}},{},{},{},{}]}}"#,
        event("[segment]", 1, r#""Bytes":-2097152,"Addr":4096"#),
        event(
            "[memory]",
            2,
            r#""Bytes":512,"Addr":4096,"Total Allocated":512"#
        ),
        event(
            "[memory]",
            3,
            r#""Bytes":-1536,"Addr":8192,"Total Allocated":-1024"#
        ),
        event("[segment]", 4, r#""Bytes":2097152,"Addr":4096"#),
    );
    let path = dir.join("negative.json");
    std::fs::write(&path, trace).expect("write");
    let summary = vramscope_json(&["summary", path.to_str().expect("utf-8")]);
    let device = &summary["devices"][0];
    assert_eq!(device["final_allocated_bytes"], -1024, "{summary}");
    assert_eq!(device["peak_allocated_bytes"], 512, "{summary}");
    let warnings = summary["warnings"].as_object().expect("warnings");
    let (text, count) = warnings
        .iter()
        .find(|(k, _)| k.contains("below zero"))
        .expect("a warning names the totals below zero");
    // Reserved is below zero after the first three records, allocated after the last two.
    assert!(text.contains("inconsistent"), "{text}");
    assert_eq!(count.as_u64(), Some(4), "{summary}");
}

/// A crafted trace cannot drive the terminal: escape sequences, `\r` and C1 controls in op
/// names reach stdout and error lines as visible `\u001b` text, so no line can be faked or
/// rewritten; JSON stays valid and reads back the name whole.
#[test]
fn control_characters_from_input_are_shown_not_obeyed() {
    let dir = temp_dir("escapes");
    let name = "aten::mm\u{1b}[2J\rok: cuda:0 within the limit\u{9b}31m\nok: a line of its own";
    let trace = serde_json::json!({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
         "ts": 5, "args": {"Bytes": 1_048_576, "Total Allocated": 1_048_576, "Addr": 4096,
                           "Device Type": 0, "Device Id": -1}}
    ]});
    let path = dir.join("crafted.json");
    std::fs::write(&path, trace.to_string()).expect("write");
    let p = path.to_str().expect("utf-8");
    let raw = |out: &[u8]| {
        out.contains(&0x1b) || out.contains(&b'\r') || out.windows(2).any(|w| w == [0xC2, 0x9B])
    };
    for args in [
        vec!["summary", p],
        vec!["table", p],
        vec!["live", p],
        vec!["check", p, "--max-peak", "1KiB"],
        vec!["diff", p, p, "--format", "markdown"],
    ] {
        let out = vramscope(&args);
        assert!(
            !raw(&out.stdout),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!raw(&out.stderr), "{args:?}");
    }
    let table = vramscope_ok(&["table", p]);
    assert!(table.contains("aten::mm\\u001b[2J\\u000dok"), "{table}");
    assert!(table.contains("\\nok: a ..."), "{table}");
    for args in [vec!["table", p], vec!["summary", p], vec!["live", p]] {
        let text = vramscope_ok(&args);
        assert!(
            !text.lines().any(|l| l.starts_with("ok:")),
            "{args:?}: {text}"
        );
    }
    let check = vramscope(&["check", p, "--max-peak", "1KiB"]);
    let line = String::from_utf8_lossy(&check.stdout);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.starts_with("over the limit"), "{line}");
    assert!(line.contains("\\u009b31m"), "{line}");
    // JSON is untouched: serde escapes the controls itself, and the name reads back whole.
    let rows = vramscope_json(&["table", p]);
    assert!(
        rows.as_array()
            .expect("rows")
            .iter()
            .any(|r| r["name"] == name),
        "{rows}"
    );
}
