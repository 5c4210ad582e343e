//! Memory from before a trace, read on real GPU traces (`../shared/traces/real`, TraceLens'
//! H100 and MI300X fixtures; PROVENANCE.md there): a CUDA trace's totals count what was
//! allocated before profiling began, which no event names. The numbers asserted were read
//! from the files independently (Python: the first accelerator `[memory]` event's
//! `Total Allocated` minus its `Bytes`; `Optimizer.step#` spans counted).

use std::path::PathBuf;

use collector::analysis::categories::{BeforeTrace, Category, LikelyBefore, composition_at_peak};
use collector::{LoadOptions, Timeline, load};

fn real(dir: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/real");
    let dir = root.join(dir);
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with(".json.gz"))
        .expect("a trace")
}

/// The accelerator's composition at its peak: before_trace bytes and the reading of them.
fn read(dir: &str) -> (i64, Option<BeforeTrace>) {
    let path = real(dir);
    let rec = load(&path, LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let timeline = Timeline::build(&rec);
    let d = (timeline.devices.iter())
        .find(|d| d.allocated_known && rec.is_accelerator(d.device))
        .expect("an accelerator with allocations");
    let c = composition_at_peak(&rec, &timeline, d).expect("composition");
    (c.bytes[Category::BeforeTrace.index()], c.before_trace)
}

#[test]
fn an_inference_trace_s_memory_from_before_it_is_read_as_the_model_s_weights() {
    // GIVEN Qwen1.5-0.5B's inference on an H100, loaded (bf16) before profiling
    let (at_peak, reading) = read("tracelens-h100-qwen-0.5b");
    // THEN all 984,742,400 B there at the first event are held to the end and read as
    // the weights of a run with no backward and no optimizer step (the modules' own
    // weights by the ops' input shapes come to 927,875,072 B of it: docs/CATEGORIES.md)
    assert_eq!(at_peak, 984_742_400);
    assert_eq!(
        reading,
        Some(BeforeTrace {
            at_start_bytes: 984_742_400,
            held_throughout_bytes: 984_742_400,
            likely: LikelyBefore::Weights,
            backward_ran: false,
        })
    );
}

#[test]
fn a_forward_and_backward_without_an_optimizer_step_says_backward_ran() {
    // GIVEN MI300X's normalization layer test: a forward and backward, no optimizer
    let (at_peak, reading) = read("tracelens-mi300-normalization-bwd");
    let reading = reading.expect("a reading");
    // THEN the 665,600 B from before the trace are the weights', backward said to have run
    assert_eq!(at_peak, 665_600);
    assert_eq!(reading.at_start_bytes, 665_600);
    assert_eq!(reading.likely, LikelyBefore::Weights);
    assert!(reading.backward_ran);
}

#[test]
fn every_real_gpu_trace_with_memory_from_before_it_gets_a_reading() {
    // GIVEN every real GPU trace here whose peak holds memory from before the trace
    for dir in [
        "tracelens-h100-bert-small",
        "tracelens-h100-owlv2-large",
        "tracelens-mi300-bert-small",
        "tracelens-mi300-sglang-decode",
    ] {
        let (at_peak, reading) = read(dir);
        // THEN the reading holds all of it from the first event to the last (inference)
        let r = reading.unwrap_or_else(|| panic!("{dir}: no reading"));
        assert!(at_peak > 0, "{dir}");
        assert_eq!(r.at_start_bytes, at_peak, "{dir}");
        assert_eq!(r.held_throughout_bytes, at_peak, "{dir}");
        assert_eq!(r.likely, LikelyBefore::Weights, "{dir}");
    }
}
