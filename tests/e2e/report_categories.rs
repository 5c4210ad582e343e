//! `vramscope report`'s memory categories: per device with allocations, the composition at
//! the peak as a table (the same bytes `summary --format json` gives, summing to the
//! peak) and the chart stacked by category (PNG and SVG) beside the memory chart.

use collector::units::bytes_iec;

use crate::support::*;

/// The report of `input` in a fresh directory: (directory, report.md).
fn report_of(input: &std::path::Path, name: &str) -> (std::path::PathBuf, String) {
    let dir = temp_dir(name);
    vramscope_ok(&[
        "report",
        input.to_str().expect("utf-8"),
        "-o",
        dir.to_str().expect("utf-8"),
    ]);
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    (dir, md)
}

#[test]
fn the_report_has_each_devices_composition_table_and_stacked_chart() {
    let path = shared_traces()
        .join("real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz");
    let (dir, md) = report_of(&path, "report-categories-bert");
    let summary = vramscope_json(&["summary", path.to_str().expect("utf-8")]);
    let mut devices_with_categories = 0;
    for d in summary["devices"].as_array().expect("devices") {
        let device = d["device"].as_str().expect("device");
        let stem = format!("memory-{}-categories", device.replace(':', "-"));
        let Some(composition) = d["composition_at_peak"].as_object() else {
            // No allocations: no table, no chart.
            assert!(!dir.join(format!("{stem}.png")).exists(), "{device}");
            continue;
        };
        devices_with_categories += 1;
        let peak = d["peak_allocated_bytes"].as_i64().expect("peak");
        let mut sum = 0;
        for (category, bytes) in composition {
            let bytes = bytes.as_i64().expect("bytes");
            sum += bytes;
            let row = format!("| {category} | {} ({bytes} B) |", bytes_iec(bytes));
            assert!(md.contains(&row), "{device}: {row} in\n{md}");
        }
        assert_eq!(sum, peak, "{device}: the table sums to the peak");
        assert!(
            md.contains(&format!(
                "![memory by category on {device}]({stem}.png) ([SVG]({stem}.svg))"
            )),
            "{device}"
        );
        let png = std::fs::read(dir.join(format!("{stem}.png"))).expect("png");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{stem}.png");
        let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).expect("svg");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // The legend names every category of the composition.
        for category in composition.keys() {
            assert!(
                svg.lines().any(|l| l.trim() == category),
                "{stem}: {category}"
            );
        }
    }
    assert!(
        devices_with_categories >= 1,
        "bert's cuda:0 has allocations"
    );
}

#[test]
fn a_cpu_training_run_shows_torchs_categories_at_the_peak() {
    // c03: an MLP trained with Adam on CPU, whose truth comes from torch's memory profiler.
    let path = fixtures().join("categories/c03_mlp_adam.json.gz");
    let (dir, md) = report_of(&path, "report-categories-c03");
    let truth = read_json(&fixtures().join("categories/c03_mlp_adam.truth.json"));
    let summary = vramscope_json(&["summary", path.to_str().expect("utf-8")]);
    let composition = summary["devices"][0]["composition_at_peak"]
        .as_object()
        .expect("a composition");
    // The report's table is the summary's, which on this run is torch's to the byte.
    assert_eq!(
        composition.get("optimizer_state"),
        truth["composition_at_peak"].get("optimizer_state"),
        "{truth}"
    );
    for (category, bytes) in composition {
        let bytes = bytes.as_i64().expect("bytes");
        assert!(
            md.contains(&format!(
                "| {category} | {} ({bytes} B) |",
                bytes_iec(bytes)
            )),
            "{category} in\n{md}"
        );
    }
    assert!(dir.join("memory-cpu-categories.png").is_file());
    assert!(dir.join("memory-cpu-categories.svg").is_file());
}
