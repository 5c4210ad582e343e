//! `vramscope check`: the CI gate passes just at the peak and fails one byte below it,
//! per device, on real traces; sizes parse; mistakes are usage errors. Exit codes and
//! JSON: `check_codes.rs`.

use std::path::Path;

use crate::support::*;

/// (device, judged peak) from `summary --format json`: allocated, else reserved.
fn peaks(path: &Path) -> Vec<(String, i64)> {
    let summary = vramscope_json(&["summary", path.to_str().expect("utf-8 path")]);
    summary["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .filter_map(|d| {
            let peak = d["peak_allocated_bytes"]
                .as_i64()
                .or_else(|| d["peak_reserved_bytes"].as_i64())?;
            Some((d["device"].as_str()?.to_owned(), peak))
        })
        .collect()
}

fn check(path: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["check", path.to_str().expect("utf-8 path")];
    args.extend(extra);
    vramscope(&args)
}

fn code(out: &std::process::Output) -> i32 {
    out.status.code().expect("exit code")
}

#[test]
fn limit_at_the_peak_passes_and_one_byte_below_fails() {
    let traces = shared_traces();
    for path in [
        traces.join("torch-cpu/t2.json.gz"),
        traces.join("real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz"),
        fixtures().join("nsight/cuda-memory.sqlite"),
    ] {
        let peaks = peaks(&path);
        assert!(!peaks.is_empty(), "{}", path.display());
        let worst = peaks.iter().map(|p| p.1).max().expect("a peak");
        let at = worst.to_string();
        let below = (worst - 1).to_string();
        let pass = check(&path, &["--max-peak", &at]);
        assert_eq!(code(&pass), 0, "{}: {pass:?}", path.display());
        let stdout = String::from_utf8_lossy(&pass.stdout);
        assert!(
            stdout.starts_with("ok: ") && stdout.lines().count() == 1,
            "{stdout}"
        );
        let fail = check(&path, &["--max-peak", &below]);
        assert_eq!(code(&fail), 1, "{}: {fail:?}", path.display());
        let stdout = String::from_utf8_lossy(&fail.stdout);
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        assert!(stdout.contains(&format!("({worst} B)")), "{stdout}");
        assert!(stdout.contains("exceeds"), "{stdout}");
    }
}

#[test]
fn device_selects_one_device() {
    let path = shared_traces()
        .join("real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz");
    let peaks = peaks(&path);
    let gpu = peaks.iter().find(|p| p.0 == "cuda:0").expect("cuda:0").1;
    let cpu = peaks.iter().find(|p| p.0 == "cpu").expect("cpu").1;
    assert!(cpu < gpu);
    // Between the two peaks: the GPU fails, the host alone passes.
    let limit = (gpu - 1).to_string();
    assert_eq!(code(&check(&path, &["--max-peak", &limit])), 1);
    assert_eq!(
        code(&check(&path, &["--max-peak", &limit, "--device", "0"])),
        1
    );
    let host = check(&path, &["--max-peak", &limit, "--device", "-1"]);
    assert_eq!(code(&host), 0, "{host:?}");
    assert!(String::from_utf8_lossy(&host.stdout).contains("cpu"));
    // A device the trace does not have has no memory to judge.
    assert_eq!(
        code(&check(&path, &["--max-peak", &limit, "--device", "7"])),
        3
    );
}

#[test]
fn sizes_in_units() {
    // t2's host peak is 13,412,088 B: 12.79 MiB, 13.41 MB.
    let path = shared_traces().join("torch-cpu/t2.json.gz");
    let peak = peaks(&path)[0].1;
    assert_eq!(peak, 13_412_088, "the trace changed");
    for (limit, expected) in [
        ("13MiB", 0),
        ("12.7MiB", 1),
        ("13.5MB", 0),
        ("13.4MB", 1),
        ("1GiB", 0),
        ("0.01GiB", 1),
        ("0.02GiB", 0),
        ("512KiB", 1),
    ] {
        assert_eq!(
            code(&check(&path, &["--max-peak", limit])),
            expected,
            "{limit}"
        );
    }
}

#[test]
fn bad_sizes_are_usage_errors_and_no_memory_is_exit_3() {
    let path = shared_traces().join("torch-cpu/t2.json.gz");
    for bad in ["40 gigs", "-1GiB", "", "GiB", "1.2.3GB"] {
        let out = check(&path, &[&format!("--max-peak={bad}")]);
        assert_eq!(code(&out), 2, "{bad}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!(
                "invalid size '{bad}': expected e.g. 10GiB, 512MB, 1.5e9"
            )),
            "{bad}"
        );
    }
    let missing = vramscope(&["check", path.to_str().expect("utf-8")]);
    assert_eq!(code(&missing), 2);
    let nomem = shared_traces().join("real/kineto-resnet50-2021-01-nomem/worker0.pt.trace.json.gz");
    let out = check(&nomem, &["--max-peak", "1GiB"]);
    assert_eq!(code(&out), 3);
    assert!(out.stdout.is_empty(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no allocated or reserved memory recorded"),
        "{stderr}"
    );
}
