//! A writer stopped by SIGINT or SIGTERM leaves no temporary behind, and the old output as
//! it was; vramscope dies of the signal, as it would have without the clean-up (a shell
//! sees 130 / 143). The test-only `VRAMSCOPE_TEST_PAUSE_WRITE_MS` holds the write with its
//! temporary complete on disk, so the signal comes exactly mid-write.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::record_support::kill;
use crate::support::*;

/// How long the write is held: far longer than the test needs to see its temporary.
const PAUSE_MS: &str = "60000";

/// Give up on anything here after this long (a hang is a failure, not a stuck test).
const DEADLINE: Duration = Duration::from_secs(60);

/// Start `vramscope ARGS` with its write held.
fn start(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(args)
        .env("VRAMSCOPE_TEST_PAUSE_WRITE_MS", PAUSE_MS)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start vramscope")
}

/// Wait for an entry of `dir` whose name starts with `prefix` (the temporary).
fn wait_for_entry(child: &mut Child, dir: &Path, prefix: &str) -> String {
    let start = Instant::now();
    loop {
        let found = std::fs::read_dir(dir)
            .expect("list")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with(prefix));
        if let Some(name) = found {
            return name;
        }
        if start.elapsed() > DEADLINE || child.try_wait().expect("poll").is_some() {
            let _ = child.kill();
            panic!("no {prefix}… in {} while writing", dir.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether this process ignores signal `number` (its children inherit that).
fn ignored_here(number: i32) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:"));
    mask.and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m >> (number - 1) & 1 == 1)
}

/// Wait for the child to end, killing it past the deadline.
fn wait(child: &mut Child) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll") {
            return status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("vramscope did not end after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}

#[test]
fn a_signal_mid_pack_removes_the_temporary_and_keeps_the_old_pack() {
    let input = fixtures().join("torch-cpu/k06_lm_sched.json.gz");
    for (signal, number) in [("INT", 2), ("TERM", 15)] {
        if ignored_here(number) {
            // Started ignoring it (a script's background job ignores SIGINT): so is
            // vramscope, which inherits that, and the signal would not end it.
            eprintln!("SIG{signal} is ignored by this test's process: not sent");
            continue;
        }
        let dir = temp_dir(&format!("signal-pack-{signal}"));
        let out = dir.join("p.vsr");
        std::fs::write(&out, b"the old pack").expect("write");
        let args = [
            "pack",
            input.to_str().expect("p"),
            "-o",
            out.to_str().expect("p"),
            "--force",
        ];
        let mut child = start(&args);
        let temp = wait_for_entry(&mut child, &dir, ".p.vsr.pack-");
        assert!(
            temp.starts_with(&format!(".p.vsr.pack-{}-", child.id())),
            "{temp}"
        );
        // The temporary is complete (a gzip member), held before its rename.
        kill(signal, child.id());
        let status = wait(&mut child);
        assert_eq!(status.signal(), Some(number), "SIG{signal}: {status:?}");
        assert_eq!(names(&dir), ["p.vsr"], "SIG{signal}: no temporary left");
        assert_eq!(std::fs::read(&out).expect("read"), b"the old pack");
    }
}

#[test]
fn a_signal_mid_report_removes_the_new_directory_and_keeps_the_old_report() {
    let input = fixtures().join("torch-cpu/k01_mlp_s1.json.gz");
    let p = input.to_str().expect("p");
    let dir = temp_dir("signal-report");
    let report = dir.join("report");
    vramscope_ok(&["report", p, "-o", report.to_str().expect("p")]);
    let before: Vec<(String, Vec<u8>)> = names(&report)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(report.join(&n)).expect("read");
            (n, bytes)
        })
        .collect();
    let args = ["report", p, "-o", report.to_str().expect("p"), "--force"];
    let mut child = start(&args);
    // The report is built in `.report.report-PID-N` beside it.
    let staging = wait_for_entry(&mut child, &dir, ".report.report-");
    assert!(dir.join(&staging).is_dir(), "{staging}");
    kill("TERM", child.id());
    let status = wait(&mut child);
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert_eq!(names(&dir), ["report"], "no temporary directory left");
    let after: Vec<(String, Vec<u8>)> = names(&report)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(report.join(&n)).expect("read");
            (n, bytes)
        })
        .collect();
    assert!(after == before, "the old report is untouched");
    assert!(before.len() >= 3, "{} files", before.len());
}

#[test]
fn a_signal_vramscope_was_started_ignoring_leaves_the_write_to_finish() {
    // As a script's background job starts: SIGINT ignored (`trap '' INT`, kept across
    // `exec`). The write, held a moment, then goes on and replaces the old pack.
    let input = fixtures().join("torch-cpu/k06_lm_sched.json.gz");
    let dir = temp_dir("signal-ignored");
    let out = dir.join("p.vsr");
    std::fs::write(&out, b"the old pack").expect("write");
    let script = format!(
        "trap '' INT; exec '{}' pack '{}' -o '{}' --force",
        env!("CARGO_BIN_EXE_vramscope"),
        input.display(),
        out.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .env("VRAMSCOPE_TEST_PAUSE_WRITE_MS", "1500")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sh");
    wait_for_entry(&mut child, &dir, ".p.vsr.pack-");
    kill("INT", child.id());
    let status = wait(&mut child);
    assert!(status.success(), "{status:?}");
    assert_eq!(names(&dir), ["p.vsr"]);
    let written = std::fs::read(&out).expect("read");
    assert!(
        written.starts_with(&[0x1f, 0x8b]),
        "the new pack (gzip) replaced the old"
    );
}
