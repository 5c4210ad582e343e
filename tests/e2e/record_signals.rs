//! `vramscope record` and signals: Ctrl-C at a real (pseudo-)terminal reaches the program
//! once and vramscope waits for it; a signal sent to vramscope alone is forwarded once; the
//! live status line shows on a terminal and not elsewhere.

use std::process::Command;

use serde_json::Value;

use crate::record_support::*;
use crate::support::*;

#[test]
fn ctrl_c_at_a_terminal_reaches_the_program_once_and_the_run_is_finalised() {
    let dir = record_dir("ctrl-c");
    let script = dir.join("fake-nvml.json");
    std::fs::write(&script, plain_gpu_script().to_string()).expect("script");
    let (ready, result) = (dir.join("ready"), dir.join("result"));
    let out = Command::new(python3())
        .arg(script_path("pty_run.py"))
        .arg(&ready)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_vramscope"))
        .args([
            "record",
            "--interval-ms",
            "20",
            "-o",
            "run.vsr",
            "--nvml-lib",
        ])
        .arg(fake_nvml())
        .arg("--")
        .arg(python3())
        .arg(script_path("signal_child.py"))
        .args([&ready, &result])
        .env("VRAMSCOPE_FAKE_NVML_SCRIPT", &script)
        .current_dir(&dir)
        .output()
        .expect("python3 runs the pseudo-terminal");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).expect("pty_run JSON");
    let output = run["output"].as_str().unwrap_or_default();
    assert_eq!(run["sent_ctrl_c"], true, "{output}");
    // The program's exit code, not vramscope's death by SIGINT.
    assert_eq!(run["status"], 5, "{output}");
    let received = std::fs::read_to_string(&result).expect("the program wrote its count");
    assert_eq!(received, "SIGINT", "exactly one SIGINT, from the terminal");
    let path = dir.join("run.vsr");
    assert_eq!(end_line(&path).expect("finalised")["exit_code"], 5);
    assert!(
        notes(&path)
            .iter()
            .any(|n| n.contains("SIGINT from the terminal")),
        "{:?}",
        notes(&path)
    );
    // On a terminal the live status is drawn, and cleared for the summary.
    assert!(output.contains("vramscope: recording "), "{output}");
    assert!(output.contains("\r\x1b[2K"), "{output}");
    assert!(output.contains("the program exited with 5"), "{output}");
}

#[test]
fn a_signal_to_vramscope_alone_is_forwarded_once() {
    let dir = record_dir("forward");
    let (ready, result) = (dir.join("ready"), dir.join("result"));
    let child = script_path("signal_child.py");
    let vs = start_record(
        &dir,
        &plain_gpu_script(),
        &["--interval-ms", "20", "-o", "run.vsr"],
        &[
            &python3(),
            &child,
            ready.to_str().expect("utf-8"),
            result.to_str().expect("utf-8"),
        ],
    );
    read_pid(&ready);
    kill("TERM", vs.id());
    let out = vs.wait_with_output().expect("vramscope ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert_eq!(std::fs::read_to_string(&result).expect("count"), "SIGTERM");
    let path = dir.join("run.vsr");
    assert_eq!(end_line(&path).expect("finalised")["exit_code"], 5);
    let notes = notes(&path);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("SIGTERM from pid ") && n.ends_with("forwarded to the program")),
        "{notes:?}"
    );
    // stderr is a pipe here: no live status line, only the summary.
    assert!(!stderr.contains("vramscope: recording "), "{stderr}");
    assert!(!stderr.contains('\r'), "{stderr}");
    assert!(stderr.contains("vramscope: recorded run.vsr"), "{stderr}");
}
