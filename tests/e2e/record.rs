//! `vramscope record`: samples through the fake libnvidia-ml (loaded by nvml-wrapper's real
//! path), per-process attribution to the recorded tree only, MIG, exit codes, kills of the
//! program and of vramscope, bad output paths, `--force`, a full disk (host memory and a
//! missing NVML: record_host.rs).

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::record_support::*;

#[test]
fn samples_are_attributed_to_the_recorded_tree_only() {
    let dir = record_dir("attribution");
    let worker = script_path("worker.py");
    let d = dir.to_str().expect("utf-8");
    // A process outside the recorded tree that the fake reports on both GPUs.
    let mut foreign = Command::new(python3())
        .args([&worker, d, "foreign-proc", "30"])
        .spawn()
        .expect("start the foreign process");
    let foreign_pid = foreign.id();
    let script = json!({"devices": [
        {"name": "Fake H200", "uuid": "GPU-aaaaaaaa-0000", "total": 141 * GIB,
         "reserved": 512 * MIB,
         "used": [[0, 2 * GIB], [300, 6 * GIB], [900, 3 * GIB]],
         "processes": [
            {"argv_has": "worker-a", "used": [[0, GIB]]},
            {"argv_has": "worker-b", "used": [[0, 512 * MIB], [300, 2 * GIB]], "kind": "both"},
            {"argv_has": "worker-c"},
            {"pid": 1, "used": [[0, 4 * GIB]], "kind": "graphics"},
            {"argv_has": "foreign-proc", "used": [[0, 8 * GIB]]}]},
        {"name": "Fake H200", "uuid": "GPU-bbbbbbbb-0001", "total": 141 * GIB,
         "memory_error": 4,
         "mig": [
            {"name": "MIG 3g.70gb", "uuid": "MIG-1", "total": 70 * GIB, "used": [[0, 5 * GIB]],
             "processes": [{"argv_has": "worker-a", "used": [[0, 256 * MIB]], "gpu_instance_id": 1}]},
            {"name": "MIG 3g.70gb", "uuid": "MIG-2", "total": 70 * GIB, "used": [[0, 7 * GIB]],
             "processes": [{"argv_has": "foreign-proc", "used": [[0, GIB]], "gpu_instance_id": 2}]}]}
    ]});
    let program = format!(
        "{py} {worker} {d} worker-a 1.5 & {py} {worker} {d} worker-b 1.5 & {py} {worker} {d} worker-c 1.5 & wait",
        py = python3()
    );
    let out = record(
        &dir,
        &script,
        &["--interval-ms", "50", "-o", "run.vsr"],
        &["sh", "-c", &program],
    );
    let _ = foreign.kill();
    let _ = foreign.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let pids: BTreeSet<u64> = ["worker-a", "worker-b", "worker-c"]
        .iter()
        .map(|w| u64::from(read_pid(&dir.join(format!("{w}.pid")))))
        .collect();
    let path = dir.join("run.vsr");

    // Raw lines: NVML's identity total = used + free + reserved holds in every reading, and
    // no reading ever names a process outside the tree.
    let samples = samples(&path);
    assert!(samples.len() >= 10, "{} samples", samples.len());
    for s in &samples {
        let g0 = &s["gpus"][0];
        let sum = g0["used"].as_u64().unwrap_or(0)
            + g0["free"].as_u64().unwrap_or(0)
            + g0["driver_reserved"].as_u64().unwrap_or(0);
        assert_eq!(sum, 141 * GIB, "{g0}");
        // No total when every tree process NVML lists has no memory reading: early on,
        // worker-c (listed without memory) can be running before worker-a and -b exec.
        let all_unreported = g0["pids"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|p| p[1].is_null());
        match g0["procs"].as_u64() {
            Some(p) => assert!(p <= 3 * GIB, "{g0}"),
            None => assert!(all_unreported, "{g0}"),
        }
        for g in s["gpus"].as_array().expect("gpus") {
            for p in g["pids"].as_array().into_iter().flatten() {
                let pid = p[0].as_u64().expect("pid");
                assert!(pid != 1 && pid != u64::from(foreign_pid), "{g}");
            }
        }
        let g1 = &s["gpus"][1];
        assert_eq!(g1["used"], 12 * GIB, "sum of the MIG instances: {g1}");
        assert_eq!(g1["total"], 140 * GIB, "{g1}");
        assert_eq!(g1["mig"].as_array().map(Vec::len), Some(2), "{g1}");
    }
    let header = &lines(&path)[0];
    assert_eq!(header["devices"][1]["mig"], true);
    assert_eq!(header["devices"][0]["name"], "Fake H200");

    let s = summary_json(&path);
    let gpu0 = &s["nvml"][0];
    assert_eq!(gpu0["device"], "cuda:0");
    assert_eq!(gpu0["peak_used_bytes"], 6 * GIB);
    assert_eq!(
        gpu0["peak_process_bytes"],
        3 * GIB,
        "worker-a 1 GiB + worker-b 2 GiB"
    );
    assert_eq!(gpu0["driver_reserved_bytes"], 512 * MIB);
    let procs = gpu0["processes"].as_array().expect("processes");
    let seen: BTreeSet<u64> = procs.iter().filter_map(|p| p["pid"].as_u64()).collect();
    assert_eq!(seen, pids, "exactly the three workers");
    let peak_of = |name: &str| {
        let pid = u64::from(read_pid(&dir.join(format!("{name}.pid"))));
        procs
            .iter()
            .find(|p| p["pid"] == pid)
            .map(|p| p["peak_bytes"].clone())
            .expect("listed")
    };
    assert_eq!(peak_of("worker-a"), json!(GIB));
    assert_eq!(peak_of("worker-b"), json!(2 * GIB));
    assert_eq!(
        peak_of("worker-c"),
        Value::Null,
        "listed without its memory"
    );
    let gpu1 = &s["nvml"][1];
    assert_eq!(
        gpu1["peak_process_bytes"],
        256 * MIB,
        "worker-a's MIG instance only"
    );
    assert!(s["host_rss_peak_bytes"].as_u64().is_some_and(|r| r > MIB));
    let notes = notes(&path).join("\n");
    assert!(notes.contains("without their memory"), "{notes}");
    assert!(notes.contains("unreadable under MIG"), "{notes}");
    assert!(stderr.contains("this program 3.00 GiB"), "{stderr}");
}

#[test]
fn the_exit_code_is_the_programs() {
    let dir = record_dir("exit-codes");
    for (i, (cmd, code, signal)) in [
        ("exit 0", 0, None),
        ("exit 3", 3, None),
        ("kill -KILL $$", 137, Some(9)),
        ("kill -TERM $$", 143, Some(15)),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("run-{i}.vsr");
        let out = record(
            &dir,
            &plain_gpu_script(),
            &["--interval-ms", "10", "-o", &name],
            &["sh", "-c", cmd],
        );
        assert_eq!(out.status.code(), Some(code), "{cmd}");
        let path = dir.join(&name);
        let end = end_line(&path).expect("finalised");
        match signal {
            Some(s) => assert_eq!(end["signal"], s, "{cmd}"),
            None => assert_eq!(end["exit_code"], code, "{cmd}"),
        }
        assert!(end["vramscope_cpu_ns"].as_u64().is_some());
        let s = summary_json(&path);
        assert_eq!(s["format"], "vramscope-recording");
        assert_eq!(s["nvml"][0]["peak_used_bytes"], GIB);
    }
    // A program that cannot be started: the shell's codes, the reason, and no recording
    // left to make the next run stop at "exists".
    let out = record(
        &dir,
        &plain_gpu_script(),
        &["-o", "missing.vsr"],
        &["no-such-program-vs"],
    );
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot run no-such-program-vs") && stderr.contains("no recording"),
        "{stderr}"
    );
    assert!(!dir.join("missing.vsr").exists());
    let again = record(&dir, &plain_gpu_script(), &["-o", "missing.vsr"], &["true"]);
    assert_eq!(again.status.code(), Some(0));
    let out = record(&dir, &plain_gpu_script(), &["-o", "dir.vsr"], &["/"]);
    assert_eq!(
        out.status.code(),
        Some(126),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A file that is there but not executable: 126, the reason, and no recording (it once
    // ran the exec step, kept a recording and said the recording was complete).
    let script = dir.join("not-executable.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").expect("script");
    let program = format!("./{}", script.file_name().expect("name").to_string_lossy());
    for (name, cmd) in [("dir2.vsr", "/"), ("noexec.vsr", program.as_str())] {
        let out = record(&dir, &plain_gpu_script(), &["-o", name], &[cmd]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(126), "{cmd}: {stderr}");
        assert!(stderr.contains(&format!("cannot run {cmd}")), "{stderr}");
        assert!(stderr.contains("no recording was kept"), "{stderr}");
        assert!(!stderr.contains("complete"), "{stderr}");
        assert!(!dir.join(name).exists(), "{cmd}: a recording was left");
    }
}

/// `vramscope record --interval-ms 20 -o run.vsr -- sleep 30` in a fresh directory: vramscope,
/// the recording, and the program's pid once the header is written.
fn record_sleep(name: &str) -> (std::process::Child, std::path::PathBuf, u32) {
    let dir = record_dir(name);
    let vs = start_record(
        &dir,
        &plain_gpu_script(),
        &["--interval-ms", "20", "-o", "run.vsr"],
        &["sleep", "30"],
    );
    let path = dir.join("run.vsr");
    let pid = header_pid(&path);
    (vs, path, pid)
}

#[test]
fn a_program_killed_mid_run_leaves_a_complete_recording() {
    let (mut vs, path, pid) = record_sleep("kill-program");
    std::thread::sleep(Duration::from_millis(600));
    kill("KILL", pid);
    let status = vs.wait().expect("vramscope ends");
    assert_eq!(status.code(), Some(137));
    let end = end_line(&path).expect("finalised after the kill");
    assert_eq!(end["signal"], 9);
    assert!(samples(&path).len() >= 5);
}

#[test]
fn vramscope_killed_mid_run_loses_at_most_the_last_flush() {
    let (mut vs, path, child) = record_sleep("kill-vramscope");
    std::thread::sleep(Duration::from_millis(1500));
    let killed_at_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as i64;
    kill("KILL", vs.id());
    let _ = vs.wait();
    // The program outlives vramscope (its outcome is not vramscope's to decide).
    kill("KILL", child);
    let all = lines(&path);
    assert!(
        end_line(&path).is_none(),
        "no end line: vramscope was killed"
    );
    let start = all[0]["start_unix_ns"].as_i64().expect("start");
    let last_t = samples(&path)
        .iter()
        .filter_map(|s| s["t_ns"].as_i64())
        .max()
        .expect("samples were flushed");
    // At most FLUSH_INTERVAL (500 ms) plus one interval is lost; 1 s of slack for a loaded
    // machine's scheduling.
    let lost_ms = (killed_at_ns - start - last_t) / 1_000_000;
    assert!(lost_ms < 500 + 20 + 1000, "{lost_ms} ms of samples lost");
    let s = summary_json(&path);
    let warnings = s["warnings"].as_object().expect("warnings");
    assert!(
        warnings.keys().any(|k| k.contains("not finalised")),
        "{warnings:?}"
    );
    assert!(s["nvml"][0]["samples"].as_u64().is_some_and(|n| n >= 10));
}

#[test]
fn bad_output_paths_stop_before_the_program_runs_and_force_replaces() {
    let dir = record_dir("outputs");
    let marker = dir.join("ran");
    let touch = format!("touch {}", marker.display());
    let script = plain_gpu_script();
    let out = record(
        &dir,
        &script,
        &["-o", "/nonexistent-dir/x.vsr"],
        &["sh", "-c", &touch],
    );
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot create /nonexistent-dir/x.vsr"));
    assert!(
        !marker.exists(),
        "the program must not run without its recording"
    );

    let existing = dir.join("old.vsr");
    std::fs::write(&existing, "keep me").expect("write");
    let out = record(&dir, &script, &["-o", "old.vsr"], &["sh", "-c", &touch]);
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&existing).expect("read"), "keep me");
    assert!(!marker.exists());

    let out = record(
        &dir,
        &script,
        &["-o", "old.vsr", "--force"],
        &["sh", "-c", &touch],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(marker.exists());
    assert_eq!(summary_json(&existing)["nvml"][0]["peak_used_bytes"], GIB);

    // The default name: vramscope-<program>-<vramscope's pid>.vsr, here.
    let out = record(&dir, &script, &[], &["true"]);
    assert_eq!(out.status.code(), Some(0));
    let named: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("vramscope-true-") && n.ends_with(".vsr"))
        .collect();
    assert_eq!(named.len(), 1, "{named:?}");
}

/// `record ARGS -- CMD` in `dir` with its writes limited to 4 KiB (SIGXFSZ ignored, so a
/// write past it fails with EFBIG as one on a full disk fails with ENOSPC). `/dev/full`
/// did this until outputs that are devices were refused.
fn record_on_a_full_disk(
    dir: &std::path::Path,
    args: &[&str],
    cmd: &[&str],
) -> std::process::Output {
    let inner = record_command(dir, &plain_gpu_script(), args, cmd);
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("trap '' XFSZ; ulimit -f 8; exec \"$0\" \"$@\"")
        .arg(inner.get_program())
        .args(inner.get_args())
        .envs(inner.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(dir)
        .stdin(std::process::Stdio::null());
    c.output().expect("run vramscope record")
}

#[test]
fn a_full_disk_never_hides_the_programs_outcome() {
    let dir = record_dir("disk-full");
    let args = ["-o", "run.vsr", "--force", "--interval-ms", "2"];
    let out = record_on_a_full_disk(&dir, &args, &["sh", "-c", "sleep 0.5; exit 5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("cannot write run.vsr"), "{stderr}");
    assert!(stderr.contains("the program exited with 5"), "{stderr}");
    // A program that succeeded with its recording cut: vramscope's own failure code, so a
    // script does not take the cut file for a whole one.
    let out = record_on_a_full_disk(&dir, &args, &["sh", "-c", "sleep 0.5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("incomplete"), "{stderr}");
    assert!(stderr.contains("the program exited with 0"), "{stderr}");
}

#[test]
fn the_program_starts_with_a_clean_signal_state() {
    let dir = record_dir("signal-state");
    let out = record(
        &dir,
        &plain_gpu_script(),
        &["-o", "run.vsr"],
        &["cat", "/proc/self/status"],
    );
    assert_eq!(out.status.code(), Some(0));
    let status = String::from_utf8_lossy(&out.stdout);
    // vramscope blocks the signals it reads from a signalfd; the program must not inherit
    // that mask, nor Rust's ignored SIGPIPE.
    assert_eq!(
        status_field(&status, "SigBlk"),
        Some("0000000000000000"),
        "{status}"
    );
    let ignored = |status: &str| {
        u64::from_str_radix(status_field(status, "SigIgn").expect("SigIgn"), 16).expect("hex")
            & 0x7fff_ffff
    };
    let sigpipe = 1 << (13 - 1);
    assert_eq!(ignored(&status) & sigpipe, 0, "SIGPIPE ignored: {status}");
    // Otherwise the program ignores what vramscope's own parent made it ignore (a shell's
    // background job ignores SIGINT), as it would without vramscope.
    let own = std::fs::read_to_string("/proc/self/status").expect("own status");
    assert_eq!(ignored(&status), ignored(&own) & !sigpipe, "{status}");
    // Same pid as the header says: the exec step became the program.
    let pid: u32 = status_field(&status, "Pid")
        .expect("Pid")
        .parse()
        .expect("pid");
    assert_eq!(header_pid(&dir.join("run.vsr")), pid);
}
