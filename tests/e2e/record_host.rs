//! `vramscope record` and host memory: a missing NVML still records the tree's RSS; PSS
//! beside RSS, so forked workers sharing pages are counted once; and every child that lives
//! one sampling interval is seen, however briefly it lives.

use std::process::Command;

use crate::record_support::*;
use crate::support::*;

#[test]
fn without_nvml_the_program_runs_and_host_memory_is_recorded() {
    let dir = record_dir("no-nvml");
    let out = Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args([
            "record",
            "--nvml-lib",
            "/nonexistent/libnvidia-ml.so.1",
            "-o",
            "run.vsr",
        ])
        .args(["--interval-ms", "20", "--"])
        .arg(python3())
        .arg("-c")
        .arg("import time; x = bytearray(64 << 20); time.sleep(0.5)")
        .current_dir(&dir)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("libnvidia-ml"), "{stderr}");
    let s = summary_json(&dir.join("run.vsr"));
    assert!(s["nvml"].as_array().is_some_and(Vec::is_empty));
    // The child touched 64 MiB: the tree's RSS shows it.
    assert!(
        s["host_rss_peak_bytes"]
            .as_u64()
            .is_some_and(|r| r > 64 * MIB),
        "{s}"
    );
    // Its report shows the host memory, not an empty page.
    let report = dir.join("report");
    vramscope_ok(&[
        "report",
        dir.join("run.vsr").to_str().expect("utf-8"),
        "-o",
        report.to_str().expect("utf-8"),
    ]);
    let md = std::fs::read_to_string(report.join("report.md")).expect("report.md");
    assert!(
        md.contains("### Host memory of the recorded processes"),
        "{md}"
    );
    assert!(
        md.contains("| peak RSS |") && md.contains("| peak PSS |"),
        "{md}"
    );
    assert!(!md.contains("nothing to say about memory"), "{md}");
    let png = std::fs::metadata(report.join("memory-host.png")).expect("the host chart");
    assert!(png.len() > 10_000, "a drawn chart: {} bytes", png.len());
    let svg = std::fs::read_to_string(report.join("memory-host.svg")).expect("svg");
    assert!(svg.contains("PSS") && svg.contains("peak RSS"), "labelled");
    let header = &lines(&dir.join("run.vsr"))[0];
    assert!(
        header["nvml_unavailable"]
            .as_str()
            .is_some_and(|w| w.contains("libnvidia-ml"))
    );

    // VRAMSCOPE_NVML_LIB names the library when --nvml-lib is not given.
    let script = dir.join("script.json");
    std::fs::write(&script, plain_gpu_script().to_string()).expect("script");
    let out = Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(["record", "-o", "env.vsr", "--", "true"])
        .env("VRAMSCOPE_NVML_LIB", fake_nvml())
        .env("VRAMSCOPE_FAKE_NVML_SCRIPT", &script)
        .current_dir(&dir)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        summary_json(&dir.join("env.vsr"))["nvml"][0]["peak_used_bytes"],
        GIB
    );
}

/// `vramscope record` without NVML (host memory only) of `python3 -c CODE`, sampled every
/// `interval_ms`; the recording's path and stderr.
fn record_python(name: &str, interval_ms: &str, code: &str) -> (std::path::PathBuf, String) {
    let dir = record_dir(name);
    let out = Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(["record", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"])
        .args(["-o", "run.vsr", "--interval-ms", interval_ms, "--"])
        .arg(python3())
        .arg("-c")
        .arg(code)
        .current_dir(&dir)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (dir.join("run.vsr"), stderr)
}

#[test]
fn forked_workers_sharing_pages_are_counted_once_by_pss() {
    // A parent fills 192 MiB, then forks three workers that keep it (copy-on-write, as
    // DataLoader workers keep the dataset) for a second: RSS counts the pages four times,
    // PSS once.
    let code = "import os, time\n\
                data = b'\\x01' * (192 << 20)\n\
                kids = []\n\
                for _ in range(3):\n    \
                    pid = os.fork()\n    \
                    if pid == 0:\n        time.sleep(1.0); os._exit(0)\n    \
                    kids.append(pid)\n\
                for k in kids: os.waitpid(k, 0)\n";
    let (path, stderr) = record_python("pss", "20", code);
    let s = summary_json(&path);
    let rss = s["host_rss_peak_bytes"].as_u64().expect("RSS");
    let pss = s["host_pss_peak_bytes"].as_u64().expect("PSS");
    assert!(rss > 4 * 192 * MIB, "four processes hold the pages: {rss}");
    assert!(
        pss > 192 * MIB && pss < 192 * MIB + 96 * MIB,
        "the pages once, plus four interpreters: {pss}"
    );
    assert_eq!(s["host_processes_max"], 4, "{s}");
    assert!(stderr.contains(", PSS "), "{stderr}");
    assert!(stderr.contains("(4 processes at most)"), "{stderr}");
    let text = vramscope_ok(&["summary", path.to_str().expect("utf-8")]);
    assert!(text.contains("host PSS peak"), "{text}");
    assert!(text.contains("up to 4 at once"), "{text}");
}

#[test]
fn every_child_living_one_interval_is_seen() {
    // Four children one after another, each holding its own size for 150 ms (three
    // sampling intervals): each size shows in the tree's RSS. Rebuilding the tree only once
    // a second saw one or two of them.
    let sizes_mib = [40u64, 80, 120, 160];
    let code = format!(
        "import subprocess, sys\n\
         for mib in {sizes_mib:?}:\n    \
             subprocess.run([sys.executable, '-c', \
             f'import time; x = b\"\\\\x01\" * ({{mib}} << 20); time.sleep(0.15)'])\n"
    );
    let (path, _) = record_python("short-children", "50", &code);
    let rss: Vec<u64> = samples(&path)
        .iter()
        .filter_map(|l| l["rss"].as_u64())
        .collect();
    for mib in sizes_mib {
        // The child's bytes, plus two interpreters (parent and child) and the shell.
        let seen = rss.iter().any(|&r| r >= mib * MIB && r < (mib + 38) * MIB);
        assert!(seen, "the {mib} MiB child: {:?}", mib_of(&rss));
    }
}

fn mib_of(bytes: &[u64]) -> Vec<u64> {
    bytes.iter().map(|b| b / MIB).collect()
}
