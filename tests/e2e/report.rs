//! `vramscope report`: the directory's files, the charts' formats, the peak in report.md,
//! and report.md of a small committed trace compared with a committed expected file
//! (`UPDATE_EXPECT=1 cargo test` rewrites it).

use crate::support::*;

#[test]
fn report_writes_markdown_and_charts() {
    let path = shared_traces()
        .join("real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz");
    let p = path.to_str().expect("utf-8");
    let dir = temp_dir("report-bert");
    vramscope_ok(&["report", p, "-o", dir.to_str().expect("utf-8")]);
    for png in ["memory-cuda-0.png", "memory-cpu.png", "top-ops.png"] {
        let bytes = std::fs::read(dir.join(png)).expect(png);
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{png}");
    }
    let svg = std::fs::read_to_string(dir.join("memory-cuda-0.svg")).expect("svg");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("peak allocated 96.61 MiB"), "the peak label");
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let summary = vramscope_json(&["summary", p]);
    for d in summary["devices"].as_array().expect("devices") {
        let peak = d["peak_allocated_bytes"].as_i64().expect("peak");
        assert!(md.contains(&format!("({peak} B)")), "{peak} in {md}");
    }
    assert!(md.contains("Live at the peak"), "{md}");
    assert!(md.contains("![memory over time on cuda:0](memory-cuda-0.png)"));
    assert!(md.contains("NVIDIA H100"), "environment: {md}");
    // Deterministic: a second run writes the same bytes.
    let again = temp_dir("report-bert-again");
    vramscope_ok(&["report", p, "-o", again.to_str().expect("utf-8")]);
    for f in [
        "report.md",
        "memory-cuda-0.svg",
        "memory-cuda-0.png",
        "top-ops.png",
    ] {
        assert_eq!(
            std::fs::read(dir.join(f)).ok(),
            std::fs::read(again.join(f)).ok(),
            "{f}"
        );
    }
}

#[test]
fn report_md_matches_the_expected_file() {
    let path = fixtures().join("torch-cpu/k01_mlp_s1.json.gz");
    let dir = temp_dir("report-k01");
    vramscope_ok(&[
        "report",
        path.to_str().expect("utf-8"),
        "-o",
        dir.to_str().expect("utf-8"),
    ]);
    let actual = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let expected_path = fixtures().join("reports/k01_mlp_s1.md");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&expected_path, &actual).expect("write expected");
    }
    let expected = std::fs::read_to_string(&expected_path)
        .expect("tests/fixtures/reports/k01_mlp_s1.md (UPDATE_EXPECT=1 writes it)");
    assert_eq!(
        actual, expected,
        "report.md changed; rerun with UPDATE_EXPECT=1 if intended"
    );
}

#[test]
fn several_inputs_get_a_section_each() {
    let traces = shared_traces().join("torch-cpu");
    let dir = temp_dir("report-two");
    vramscope_ok(&[
        "report",
        traces.join("t2.json.gz").to_str().expect("utf-8"),
        traces.join("t3.json.gz").to_str().expect("utf-8"),
        "-o",
        dir.to_str().expect("utf-8"),
    ]);
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        md.contains("## t2.json.gz") && md.contains("## t3.json.gz"),
        "{md}"
    );
    assert!(dir.join("1-memory-cpu.png").exists() && dir.join("2-top-ops.png").exists());
    assert_eq!(
        vramscope(&["report", "-o", "/tmp/x"]).status.code(),
        Some(2)
    );
}
