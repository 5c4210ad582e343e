//! Helpers for the `vramscope record` tests: running it against the fake libnvidia-ml,
//! reading a recording's lines, waiting for files.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

pub const GIB: u64 = 1 << 30;
pub const MIB: u64 = 1 << 20;

/// `tests/fixtures/record/NAME`.
pub fn script_path(name: &str) -> String {
    fixtures()
        .join("record")
        .join(name)
        .to_str()
        .expect("utf-8 path")
        .to_owned()
}

/// `vramscope record ARGS -- CMD` in `dir`, with the fake NVML library and `script`.
pub fn record_command(dir: &Path, script: &Value, args: &[&str], cmd: &[&str]) -> Command {
    let script_file = dir.join("fake-nvml.json");
    std::fs::write(&script_file, script.to_string()).expect("write script");
    let mut c = Command::new(env!("CARGO_BIN_EXE_vramscope"));
    c.arg("record")
        .arg("--nvml-lib")
        .arg(fake_nvml())
        .args(args)
        .arg("--")
        .args(cmd)
        .env("VRAMSCOPE_FAKE_NVML_SCRIPT", &script_file)
        // The fixtures' Python must not leave __pycache__ folders in the source tree.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(dir)
        .stdin(Stdio::null());
    c
}

/// Run it to the end.
pub fn record(dir: &Path, script: &Value, args: &[&str], cmd: &[&str]) -> Output {
    let out = record_command(dir, script, args, cmd)
        .output()
        .expect("run vramscope record");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    out
}

/// Start it in the background.
pub fn start_record(dir: &Path, script: &Value, args: &[&str], cmd: &[&str]) -> Child {
    record_command(dir, script, args, cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vramscope record")
}

/// One GPU with a constant memory curve and no processes.
pub fn plain_gpu_script() -> Value {
    serde_json::json!({"devices": [{
        "name": "Fake GPU", "uuid": "GPU-11111111-0000", "total": 80 * GIB,
        "used": [[0, GIB]]
    }]})
}

/// Every line of a recording, parsed (a last line cut short is skipped).
pub fn lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The sample lines.
pub fn samples(path: &Path) -> Vec<Value> {
    lines(path)
        .into_iter()
        .filter(|l| l.get("gpus").is_some())
        .collect()
}

/// The end line, if the recording was finalised.
pub fn end_line(path: &Path) -> Option<Value> {
    lines(path).into_iter().find_map(|l| l.get("end").cloned())
}

/// The notes.
pub fn notes(path: &Path) -> Vec<String> {
    lines(path)
        .iter()
        .filter_map(|l| l.get("note").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// Wait until `f` gives something (at most 20 s).
pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The program's pid from the recording's header, once written.
pub fn header_pid(path: &Path) -> u32 {
    wait_for("the recording's header", || {
        let first = std::fs::read_to_string(path).ok()?;
        let header: Value = serde_json::from_str(first.lines().next()?).ok()?;
        header["pid"].as_u64().map(|p| p as u32)
    })
}

/// A pid written by a test program into `path`.
pub fn read_pid(path: &Path) -> u32 {
    wait_for(&path.display().to_string(), || {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    })
}

/// Send `signal` (a name: TERM, KILL) to `pid`.
pub fn kill(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// `vramscope summary FILE --format json`.
pub fn summary_json(path: &Path) -> Value {
    vramscope_json(&["summary", path.to_str().expect("utf-8 path")])
}

/// A fresh directory for one record test.
pub fn record_dir(name: &str) -> PathBuf {
    temp_dir(&format!("record-{name}"))
}

/// The value of a `/proc/PID/status`-style line, e.g. `SigBlk`.
pub fn status_field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(str::trim)
}

/// Run `python3 ARGS` and require it to succeed (a test's fixture script).
pub fn run_python(args: &[&str]) {
    let out = Command::new(python3())
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The real python3 executable. `python3` on PATH may be a shim (pyenv runs bash
/// subprocesses that carry the script's arguments before it execs Python), and the fake
/// NVML would see those transient processes too.
pub fn python3() -> String {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let out = Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .expect("python3 is needed by the record tests");
            String::from_utf8(out.stdout)
                .expect("utf-8")
                .trim()
                .to_owned()
        })
        .clone()
}
