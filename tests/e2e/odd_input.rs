//! Inputs that are odd but not broken: a byte-order mark and leading whitespace, totals
//! below zero, control characters in names. Each reads, and what is odd is said, never
//! obeyed.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::bad_input::expect_failure;
use crate::support::*;

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

/// Run `vramscope ARGS` with `fixture` fed through the FIFO `fifo` by another thread;
/// fail the test if it has not ended in 20 s (an input opened twice waits forever).
fn through_fifo(fifo: &std::path::Path, fixture: &std::path::Path, args: &[&str]) -> Output {
    let _ = std::fs::remove_file(fifo);
    let made = Command::new("mkfifo").arg(fifo).status();
    assert!(made.expect("mkfifo runs").success());
    let (from, to) = (fixture.to_owned(), fifo.to_owned());
    std::thread::Builder::new()
        .name("fifo-writer".into())
        .spawn(move || {
            let _ = std::fs::write(&to, std::fs::read(&from).expect("fixture"));
        })
        .expect("spawn");
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run vramscope");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("vramscope {args:?} still waiting on the FIFO after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// A FIFO (or /dev/stdin) gives its bytes once: `summary` and `table` read it once and say
/// what a file of the same bytes says; an Nsight SQLite export, which SQLite must seek in,
/// is refused with what to do.
#[test]
fn inputs_that_are_pipes_are_read_once() {
    let dir = temp_dir("fifo-inputs");
    let fifo = dir.join("pipe");
    let p = fifo.to_str().expect("utf-8");
    // A pack of this build, whose stored summary and table `summary` and `table` look for.
    let pack = dir.join("k01.vsr");
    let trace = fixtures().join("torch-cpu/k01_mlp_s1.json.gz");
    vramscope_ok(&[
        "pack",
        trace.to_str().expect("utf-8"),
        "-o",
        pack.to_str().expect("utf-8"),
    ]);
    for fixture in [
        "torch-cpu/k01_mlp_s1.json.gz",
        "snapshot/oom.pickle",
        "recording/v1-train.vsr",
        "pack/oom.v2.vsr",
        "k01.vsr",
    ] {
        let file = if fixture == "k01.vsr" {
            pack.clone()
        } else {
            fixtures().join(fixture)
        };
        let f = file.to_str().expect("utf-8");
        for cmd in ["summary", "table"] {
            let got = through_fifo(&fifo, &file, &[cmd, p, "--format", "json"]);
            let stderr = String::from_utf8_lossy(&got.stderr);
            assert!(got.status.success(), "{cmd} {fixture}: {stderr}");
            let mut got: serde_json::Value = serde_json::from_slice(&got.stdout).expect("JSON");
            let mut want = vramscope_json(&[cmd, f]);
            for doc in [&mut got, &mut want] {
                if let Some(o) = doc.as_object_mut() {
                    o.remove("file");
                    o.remove("packed");
                }
            }
            assert_eq!(got, want, "{cmd} {fixture}");
        }
    }
    let sqlite = fixtures().join("nsight/cuda-memory.sqlite");
    let got = through_fifo(&fifo, &sqlite, &["summary", p]);
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert_eq!(got.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(p), "{stderr}");
    assert!(
        stderr.contains("SQLite seeks in the file, so it must be a regular file; save it to a file and pass that"),
        "{stderr}"
    );
}
