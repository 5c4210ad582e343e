//! `vramscope check`'s contract for CI: exit codes 0 / 1 / 2 / 3, the JSON document, and
//! colour only where it is asked for (NO_COLOR, --color, never into a pipe).

use std::process::{Command, Output};

use serde_json::Value;

use crate::bad_input::expect_failure;
use crate::support::*;

fn t2() -> String {
    shared_traces()
        .join("torch-cpu/t2.json.gz")
        .to_str()
        .expect("utf-8")
        .to_owned()
}

fn nomem() -> String {
    shared_traces()
        .join("real/kineto-resnet50-2021-01-nomem/worker0.pt.trace.json.gz")
        .to_str()
        .expect("utf-8")
        .to_owned()
}

/// t2's only device and its allocated peak, read from `summary --format json`.
fn t2_peak() -> (String, i64) {
    let summary = vramscope_json(&["summary", &t2()]);
    let devices = summary["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), 1, "t2 records the host only");
    let d = &devices[0];
    let peak = d["peak_allocated_bytes"].as_i64().expect("a peak");
    (d["device"].as_str().expect("device").to_owned(), peak)
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exit code")
}

#[test]
fn exit_codes_tell_within_over_unreadable_and_no_data_apart() {
    let (_, peak) = t2_peak();
    assert_eq!(peak, 13_412_088, "the trace changed");
    let t2 = t2();
    // At the peak, in scientific notation, passes; one byte below fails.
    assert_eq!(
        code(&vramscope(&["check", &t2, "--max-peak", "1.3412088e7"])),
        0
    );
    assert_eq!(
        code(&vramscope(&["check", &t2, "--max-peak", "1.3412087e7"])),
        1
    );
    // 13M is binary (13,631,488 B, above the peak), 13MB decimal (13,000,000 B, below).
    assert_eq!(code(&vramscope(&["check", &t2, "--max-peak", "13M"])), 0);
    assert_eq!(code(&vramscope(&["check", &t2, "--max-peak", "13MB"])), 1);
    // An input that cannot be read is 2, not "over the limit".
    let dir = temp_dir("check-codes");
    let cut = dir.join("cut.json");
    let real = read_maybe_gz(&shared_traces().join("torch-cpu/t2.json.gz"));
    std::fs::write(&cut, &real[..real.len() / 2]).expect("write");
    let cut = cut.to_str().expect("utf-8");
    expect_failure(&["check", cut, "--max-peak", "1G"], 2, &[cut, "byte"]);
    let missing = dir.join("missing.json");
    let missing = missing.to_str().expect("utf-8");
    expect_failure(&["check", missing, "--max-peak", "1G"], 2, &[missing]);
    // No memory events: nothing to judge, 3, with the reason on stderr.
    let stderr = expect_failure(
        &["check", &nomem(), "--max-peak", "1G"],
        3,
        &["no allocated or reserved memory recorded", "profile_memory"],
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // No memory on the device asked for is 3 as well, a device the trace lacks too (the
    // README's table; a fleet says the same).
    expect_failure(
        &["check", &t2, "--max-peak", "1G", "--device", "cuda:0"],
        3,
        &["no memory recorded on cuda:0: the input has cpu"],
    );
    assert_eq!(
        code(&vramscope(&[
            "check",
            &t2,
            "--max-peak",
            "13M",
            "--device",
            "cpu"
        ])),
        0
    );
}

fn check_json(args: &[&str], expected_code: i32) -> Value {
    let mut all = vec!["check"];
    all.extend(args);
    all.extend(["--format", "json"]);
    let out = vramscope(&all);
    assert_eq!(code(&out), expected_code, "{all:?}: {out:?}");
    serde_json::from_slice(&out.stdout).expect("a JSON document")
}

#[test]
fn json_states_inputs_limits_devices_verdict_and_failures() {
    let (device, peak) = t2_peak();
    let t2 = t2();
    let over = check_json(&[&t2, "--max-peak", "13MB"], 1);
    assert_eq!(over["inputs"][0]["file"], t2.as_str());
    assert_eq!(over["inputs"][0]["format"], "pytorch-chrome-trace");
    assert_eq!(over["limits"]["max_peak_bytes"], 13_000_000);
    assert_eq!(over["verdict"], "over");
    let devices = over["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), 1);
    assert_eq!(devices[0]["device"], device.as_str());
    assert_eq!(devices[0]["peak"], "allocated");
    assert_eq!(devices[0]["peak_bytes"], peak);
    assert_eq!(devices[0]["peak_op"], "aten::nll_loss_forward");
    assert_eq!(devices[0]["within_limit"], false);
    let failures = over["failures"].as_array().expect("failures");
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0]["device"], device.as_str());
    assert_eq!(failures[0]["limit"], "max_peak");
    assert_eq!(failures[0]["value_bytes"], peak);
    assert_eq!(failures[0]["over_by_bytes"], peak - 13_000_000);
    // The peak time agrees with summary's.
    let summary = vramscope_json(&["summary", &t2]);
    assert_eq!(
        devices[0]["peak_at_us"],
        summary["devices"][0]["peak_allocated_at_us"]
    );

    let ok = check_json(&[&t2, "--max-peak", "1GiB"], 0);
    assert_eq!(ok["verdict"], "ok");
    assert_eq!(ok["failures"].as_array().map(Vec::len), Some(0));
    assert_eq!(ok["devices"][0]["within_limit"], true);

    let none = check_json(&[&nomem(), "--max-peak", "1GiB"], 3);
    assert_eq!(none["verdict"], "no_data");
    assert_eq!(none["devices"].as_array().map(Vec::len), Some(0));
}

/// `vramscope ARGS` with `NO_COLOR` set or removed.
fn with_no_color(args: &[&str], no_color: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vramscope"));
    command.args(args).env_remove("NO_COLOR");
    if let Some(v) = no_color {
        command.env("NO_COLOR", v);
    }
    command.output().expect("run vramscope")
}

/// `text` without SGR escapes (`ESC [ … m`).
fn strip_styles(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find('m').expect("an SGR sequence ends in m");
        rest = &rest[i + end + 1..];
    }
    out + rest
}

#[test]
fn colour_only_when_asked_and_the_same_text_underneath() {
    let t2 = t2();
    for args in [
        &["check", t2.as_str(), "--max-peak", "1G"][..],
        &["check", t2.as_str(), "--max-peak", "1M"],
        &["summary", t2.as_str()],
    ] {
        // Into a pipe: plain, whatever NO_COLOR says.
        let plain = with_no_color(args, None);
        assert!(!plain.stdout.contains(&0x1b), "{args:?}");
        let plain = String::from_utf8(plain.stdout).expect("utf-8");
        let never = with_no_color(&[args, &["--color", "never"]].concat(), None);
        assert_eq!(String::from_utf8_lossy(&never.stdout), plain);
        // --color always colours, and takes nothing else away.
        let always = with_no_color(&[args, &["--color", "always"]].concat(), Some("1"));
        let always = String::from_utf8(always.stdout).expect("utf-8");
        assert!(always.contains("\x1b["), "{args:?}: {always}");
        assert_eq!(strip_styles(&always), plain, "{args:?}");
        // NO_COLOR turns auto off even where --color auto is given.
        let auto = with_no_color(&[args, &["--color", "auto"]].concat(), Some("1"));
        assert_eq!(String::from_utf8_lossy(&auto.stdout), plain);
    }
    let always = with_no_color(
        &["check", &t2, "--max-peak", "1M", "--color", "always"],
        None,
    );
    let text = String::from_utf8_lossy(&always.stdout);
    assert!(
        text.starts_with("\x1b[1m\x1b[31mover the limit\x1b[0m: cpu"),
        "{text}"
    );
    let always = with_no_color(&["check", &t2, "--max-peak", "1G", "--color=always"], None);
    let text = String::from_utf8_lossy(&always.stdout);
    assert!(text.starts_with("\x1b[1m\x1b[32mok\x1b[0m: cpu"), "{text}");
}

#[test]
fn a_recording_without_allocations_is_judged_by_nvml_or_host_memory() {
    // A `record` recording with NVML and host readings but no allocator data: nothing to
    // judge by default (exit 3, naming what does), NVML's or the host's peak when asked,
    // each equal to `summary`'s.
    let rec = fixtures().join("recording/v1-train.vsr");
    let rec = rec.to_str().expect("utf-8");
    let summary = vramscope_json(&["summary", rec]);
    let out = vramscope(&["check", rec, "--max-peak", "1GiB"]);
    assert_eq!(code(&out), 3);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`check --of nvml` judges"), "{err}");
    let nvml = summary["nvml"].as_array().expect("nvml");
    let process = nvml[0]["peak_process_bytes"]
        .as_i64()
        .expect("process peak");
    let over = check_json(&[rec, "--max-peak", "1GiB", "--of", "nvml"], 1);
    assert_eq!(over["devices"][0]["peak"], "nvml_process");
    assert_eq!(over["devices"][0]["peak_bytes"].as_i64(), Some(process));
    // Where NVML gives no per-process memory, the device's used memory.
    let device = nvml[1]["peak_used_bytes"].as_i64().expect("used peak");
    assert_eq!(over["devices"][1]["peak"], "nvml_device");
    assert_eq!(over["devices"][1]["peak_bytes"].as_i64(), Some(device));
    let limit = (process + 1).to_string();
    check_json(&[rec, "--max-peak", &limit, "--of", "nvml"], 0);
    let host = summary["host_rss_peak_bytes"].as_i64().expect("host peak");
    let doc = check_json(
        &[rec, "--max-peak", &(host - 1).to_string(), "--of", "host"],
        1,
    );
    assert_eq!(doc["devices"][0]["device"], "cpu");
    assert_eq!(doc["failures"][0]["over_by_bytes"].as_i64(), Some(1));
    // An input without host readings: no data, saying so.
    let out = vramscope(&["check", &t2(), "--max-peak", "1GiB", "--of", "host"]);
    assert_eq!(code(&out), 3);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no host memory readings"));
}
