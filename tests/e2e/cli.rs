//! The command line as ripgrep, memray and hyperfine users expect it: values with units
//! everywhere, the units policy and exit codes in --help, shell completions, `live` rows
//! that fit a terminal and start at user code, and a clear word when there is no display.

use std::process::Command;

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

fn magma27() -> String {
    shared_traces()
        .join("real/snapshot-cs336-magma27/memory_snapshot.pickle")
        .to_str()
        .expect("utf-8")
        .to_owned()
}

#[test]
fn times_and_devices_take_units_and_names() {
    let t2 = t2();
    // t2's peak, in µs after the start, from summary.
    let summary = vramscope_json(&["summary", &t2]);
    let peak_us = summary["devices"][0]["peak_allocated_at_us"]
        .as_f64()
        .expect("peak time");
    let at_peak = vramscope_json(&["live", &t2]);
    assert_eq!(at_peak["at_us"].as_f64(), Some(peak_us));
    // The same instant as plain µs, in ms and in s: the same answer.
    let plain = vramscope_json(&["live", &t2, "--at", &format!("{peak_us}")]);
    let ms = vramscope_json(&["live", &t2, "--at", &format!("{}ms", peak_us / 1e3)]);
    let s = vramscope_json(&["live", &t2, "--at", &format!("{}s", peak_us / 1e6)]);
    assert_eq!(plain["at_us"].as_f64(), Some(peak_us));
    for other in [&ms, &s] {
        assert_eq!(other["groups"], plain["groups"]);
        assert_eq!(other["allocated_bytes"], at_peak["allocated_bytes"]);
    }
    // Devices by name or ordinal.
    let by_name = vramscope_json(&["live", &t2, "--device", "cpu"]);
    let by_ordinal = vramscope_json(&["live", &t2, "--device", "-1"]);
    assert_eq!(by_name, by_ordinal);
    assert_eq!(by_name["device"], "cpu");
    // A table window in ms is the window in µs.
    let window = |from: &str, to: &str| {
        vramscope_json(&[
            "table",
            &t2,
            "--from-us",
            from,
            "--to-us",
            to,
            "--sort",
            "none",
        ])
    };
    let in_ms = window("300ms", "0.5s");
    assert_eq!(in_ms, window("300000", "500000"));
    assert_ne!(in_ms, vramscope_json(&["table", &t2, "--sort", "none"]));
    // Mistakes say what was expected.
    expect_failure(
        &["live", &t2, "--at", "later"],
        2,
        &["invalid instant 'later'", "expected peak, oom, end"],
    );
    expect_failure(
        &["live", &t2, "--device", "gpu0"],
        2,
        &["invalid device 'gpu0': expected e.g. 0, cuda:0, cpu"],
    );
    expect_failure(
        &["table", &t2, "--from-us", "1h"],
        2,
        &["invalid time '1h': expected e.g. 1.5ms, 250us, 2s"],
    );
}

#[test]
fn help_states_units_and_exit_codes() {
    let help = vramscope_ok(&["--help"]);
    for needle in [
        "binary units everywhere (1 KiB = 1024 B, MiB, GiB)",
        "keep\ntorch's own labels",
        "10G or 10GiB = 10 x 2^30 B, 10GB = 10 x 10^9 B",
        "Exit codes:",
        "--color <WHEN>",
    ] {
        assert!(help.contains(needle), "--help lacks {needle:?}:\n{help}");
    }
    let check = vramscope_ok(&["check", "--help"]);
    for needle in [
        "3 no memory data to judge",
        "2 the input\n",
        "--format <FORMAT>",
    ] {
        let flat = check.replace("\n          ", " ");
        assert!(
            check.contains(needle) || flat.contains(needle.trim_end()),
            "check --help lacks {needle:?}:\n{check}"
        );
    }
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "complete -F _vramscope"),
        ("zsh", "#compdef vramscope"),
        ("fish", "complete -c vramscope"),
    ] {
        let script = vramscope_ok(&["completions", shell]);
        assert!(script.contains(marker), "{shell}: {marker}");
        for word in ["summary", "check", "max-peak", "completions"] {
            assert!(script.contains(word), "{shell} completes {word}");
        }
        // The hidden exec step of record is not offered.
        assert!(!script.contains("__record-exec"), "{shell}");
    }
    expect_failure(&["completions", "tcsh"], 2, &["tcsh"]);
}

#[test]
fn live_rows_fit_100_columns_and_start_at_user_code() {
    let magma = magma27();
    let text = vramscope_ok(&["live", &magma, "--limit", "100"]);
    let rows: Vec<&str> = text.lines().skip(3).collect();
    assert!(rows.len() > 10, "{text}");
    for row in &rows {
        assert!(
            row.chars().count() <= 100,
            "{} columns: {row}",
            row.chars().count()
        );
    }
    let json: Value = vramscope_json(&["live", &magma, "--limit", "100"]);
    let groups = json["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), rows.len());
    let library = |f: &str| {
        let f = f.replace('\\', "/");
        f.contains("/site-packages/") || f.contains("/torch/")
    };
    let mut cut = 0;
    for (g, row) in groups.iter().zip(&rows) {
        let frames: Vec<&str> = g["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .map(|f| f.as_str().expect("frame"))
            .collect();
        let site = g["site"].as_str().expect("site");
        // JSON keeps whole stacks and paths; the site, and the text row, begin at the
        // first frame in user code, with only library frames inside it.
        let user = g["first_user_frame"].as_u64().expect("first user frame") as usize;
        if let Some(first) = frames.get(user) {
            assert!(site.starts_with(first), "{site}");
            assert!(frames[..user].iter().all(|f| library(f)), "{site}");
            assert!(
                !library(first) || frames.iter().all(|f| library(f)),
                "{site}"
            );
            let file_and_line = first.rsplit(['\\', '/']).next().expect("file");
            let shown = file_and_line.chars().take(30).collect::<String>();
            assert!(row.contains(&shown), "{row} lacks {shown}");
        }
        cut += usize::from(row.ends_with('…'));
    }
    assert!(cut > 0, "no row needed cutting:\n{text}");
    // The biggest group was made under torch.functional.einsum, called from user code.
    assert!(rows[0].contains("model.py:"), "{}", rows[0]);
}

#[test]
fn without_a_display_the_viewer_says_what_to_run_instead() {
    let t2 = t2();
    for args in [vec!["view", t2.as_str()], vec![t2.as_str()]] {
        let out = Command::new(env!("CARGO_BIN_EXE_vramscope"))
            .args(&args)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .output()
            .expect("run vramscope");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
        assert_eq!(
            stderr.trim_end(),
            format!(
                "vramscope: no display found (DISPLAY and WAYLAND_DISPLAY are unset); the viewer \
                 needs a desktop session. Use the CLI instead: vramscope summary {t2}, vramscope \
                 report {t2} -o DIR"
            )
        );
    }
}
