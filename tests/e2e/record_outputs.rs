//! What `vramscope record` says when the run ends (text with the next steps, or JSON on
//! stdout), and the files it will not replace: the program's own, even with `--force`.

use serde_json::Value;

use crate::record_support::*;

#[test]
fn the_end_report_names_the_next_steps_or_is_json() {
    let dir = record_dir("end-report");
    let out = record(
        &dir,
        &plain_gpu_script(),
        &["-o", "my run.vsr", "--interval-ms", "10"],
        &["sh", "-c", "echo from-the-program; sleep 0.1"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("next: vramscope view 'my run.vsr'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("vramscope report 'my run.vsr' -o 'my run.vsr.report'"),
        "{stderr}"
    );

    let out = record(
        &dir,
        &plain_gpu_script(),
        &["-o", "json.vsr", "--interval-ms", "10", "--format", "json"],
        &["sh", "-c", "echo from-the-program; sleep 0.1; exit 4"],
    );
    assert_eq!(out.status.code(), Some(4));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The program's output first, then the report.
    let (program, report) = stdout.split_once('\n').expect("two parts");
    assert_eq!(program, "from-the-program");
    let doc: Value = serde_json::from_str(report).expect("one JSON document");
    assert_eq!(doc["file"], "json.vsr");
    assert_eq!(doc["exit_code"], 4);
    assert_eq!(doc["complete"], true);
    assert_eq!(doc["gpus"][0]["device"], "cuda:0");
    assert_eq!(doc["gpus"][0]["peak_used_bytes"], GIB);
    assert_eq!(doc["gpus"][0]["total_bytes"], 80 * GIB);
    assert!(doc["samples"].as_u64().is_some_and(|n| n >= 2), "{doc}");
    assert!(doc["host_rss_peak_bytes"].as_u64().is_some(), "{doc}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("next:"),
        "JSON replaces the text: {stderr}"
    );
}

#[test]
fn the_programs_own_files_are_never_replaced() {
    let dir = record_dir("own-files");
    let script = dir.join("train.sh");
    std::fs::write(&script, "exit 0\n").expect("script");
    for force in [&[][..], &["--force"][..]] {
        let mut args = vec!["-o", "train.sh"];
        args.extend_from_slice(force);
        let out = record(&dir, &plain_gpu_script(), &args, &["sh", "train.sh"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{stderr}");
        assert!(stderr.contains("it is the input"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&script).expect("kept"), "exit 0\n");
    }
    // Without -o the recording is named after the script.
    let out = record(&dir, &plain_gpu_script(), &[], &["sh", "train.sh"]);
    assert_eq!(out.status.code(), Some(0));
    let named: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("vramscope-train-") && n.ends_with(".vsr"))
        .collect();
    assert_eq!(named.len(), 1, "{named:?}");
}
