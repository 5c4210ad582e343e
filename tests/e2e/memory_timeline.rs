//! torch's memory timeline exports from the command line: read alone as torch's
//! categories, put onto the trace of the same profile by `summary DIR` (one input, its
//! categories torch's), refused with the file, the offset and what is wrong when damaged.

use std::fs;

use crate::support::{fixtures, temp_dir, vramscope, vramscope_json};

#[test]
fn summary_of_a_directory_puts_the_timelines_onto_their_trace() {
    let dir = fixtures().join("memory-timeline");
    let doc = vramscope_json(&["summary", dir.to_str().expect("utf-8")]);
    let inputs = doc["inputs"].as_array().expect("inputs");
    // The exports are no inputs of their own: the trace is the one input.
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    let trace = &inputs[0];
    assert!(
        trace["path"]
            .as_str()
            .expect("path")
            .ends_with("trace.json.gz")
    );
    let from = trace["categories_from"].as_str().expect("categories_from");
    assert!(
        from.contains("timeline.json (") && from.contains("timeline.raw.json.gz ("),
        "{from}"
    );
    // Read from torch's categories, the bytes at the peak; the trace's own peak unchanged.
    let alone = vramscope_json(&["summary", trace["path"].as_str().expect("path")]);
    let (d, d_alone) = (&trace["devices"][0], &alone["devices"][0]);
    assert_eq!(d["peak_allocated_bytes"], d_alone["peak_allocated_bytes"]);
    let evidence = d["composition_evidence"].as_object().expect("evidence");
    let read: i64 = evidence
        .values()
        .filter_map(|e| e["metadata"].as_i64())
        .sum();
    let peak = d["peak_allocated_bytes"].as_i64().expect("peak");
    assert!(
        read as f64 >= 0.9 * peak as f64,
        "{read} of {peak} read from torch"
    );
    assert!(
        alone["devices"][0]["composition_evidence"]
            .as_object()
            .expect("evidence")
            .values()
            .all(|e| e.get("metadata").is_none())
    );
}

#[test]
fn a_timeline_alone_is_an_input_and_a_damaged_one_is_refused() {
    let dir = temp_dir("timeline-alone");
    let plot = dir.join("run-cpu.timeline.json");
    fs::copy(
        fixtures().join("memory-timeline/mlp-adam-cpu.timeline.json"),
        &plot,
    )
    .expect("copy");
    let doc = vramscope_json(&["summary", dir.to_str().expect("utf-8")]);
    let input = &doc["inputs"][0];
    assert_eq!(input["format"], "pytorch-memory-timeline");
    assert_eq!(input["devices"][0]["device"], "cpu");
    // A row of sizes with a category too many: the file, the row, what torch writes.
    let bad = dir.join("bad.timeline.json");
    fs::write(
        &bad,
        "[[1, 2], [[0, 1, 2, 3, 4, 5, 6, 7, 8], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]]",
    )
    .expect("write");
    let out = vramscope(&["summary", bad.to_str().expect("utf-8")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("bad.timeline.json") && stderr.contains("row 1"),
        "{stderr}"
    );
    assert!(stderr.contains("9 categories; torch writes 8"), "{stderr}");
    // Not JSON of either shape: where it stops.
    fs::write(&bad, "[[1, 2], [[0, 1, 2, x").expect("write");
    let out = vramscope(&["summary", bad.to_str().expect("utf-8")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("byte"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
