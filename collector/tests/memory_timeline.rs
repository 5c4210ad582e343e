//! torch's memory timeline exports (tests/fixtures/memory-timeline, made by its gen.py: a
//! real CPU run profiled with its three exports side by side) read as the categories torch
//! computed: the composition at the peak is the plot's row of most bytes, category for
//! category (computed here from the JSON itself); the raw events give the same; and put
//! onto the trace of the same profile, they name the trace's allocations as torch did.

use std::path::PathBuf;

use collector::analysis::categories::{Category, Evidence, composition_at_peak};
use collector::model::SourceFormat;
use collector::parse::memory_timeline::{attach, torch_category};
use collector::{LoadOptions, Recording, Timeline, load};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/memory-timeline")
        .join(name)
}

fn open(name: &str) -> Recording {
    load(&fixture(name), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The composition at the peak, by torch's category names.
fn composition(rec: &Recording) -> Vec<(&'static str, i64)> {
    let timeline = Timeline::build(rec);
    let d = timeline
        .devices
        .iter()
        .find(|d| d.allocated_known)
        .expect("device");
    let c = composition_at_peak(rec, &timeline, d).expect("composition");
    c.entries().map(|(k, b)| (k.as_str(), b)).collect()
}

/// The plot's row with the most bytes, by category name (zeros left out).
fn plot_peak() -> Vec<(&'static str, i64)> {
    let text = std::fs::read(fixture("mlp-adam-cpu.timeline.json")).expect("plot");
    let (_, sizes): (Vec<i64>, Vec<Vec<i64>>) = serde_json::from_slice(&text).expect("json");
    // The first row of the most bytes, as the peak is the first instant of the maximum.
    let most = sizes
        .iter()
        .map(|r| r.iter().sum::<i64>())
        .max()
        .expect("rows");
    let row = sizes
        .iter()
        .find(|r| r.iter().sum::<i64>() == most)
        .expect("row");
    let mut named: Vec<(&str, i64)> = (row[1..].iter().enumerate())
        .map(|(i, &b)| (torch_category(i).expect("a category").as_str(), b))
        .filter(|&(_, b)| b != 0)
        .collect();
    // In Category::ALL order, as composition entries come.
    named.sort_by_key(|(n, _)| Category::ALL.iter().position(|c| c.as_str() == *n));
    named
}

#[test]
fn both_exports_read_as_the_categories_torch_computed() {
    let want = plot_peak();
    assert!(want.len() >= 5, "{want:?}");
    for name in [
        "mlp-adam-cpu.timeline.json",
        "mlp-adam-cpu.timeline.raw.json.gz",
    ] {
        let rec = open(name);
        assert_eq!(rec.meta.format, SourceFormat::TorchMemoryTimeline);
        assert_eq!(composition(&rec), want, "{name}");
        // Every byte read from torch's own categories.
        let timeline = Timeline::build(&rec);
        let c = composition_at_peak(&rec, &timeline, &timeline.devices[0]).expect("c");
        for row in c.evidence {
            assert_eq!(
                row.iter().sum::<i64>(),
                row[Evidence::Metadata as usize],
                "{name}"
            );
        }
    }
}

#[test]
fn a_timeline_names_the_allocations_of_the_trace_it_came_from() {
    let mut trace = open("mlp-adam-cpu.trace.json.gz");
    let before = composition(&trace);
    for name in [
        "mlp-adam-cpu.timeline.raw.json.gz",
        "mlp-adam-cpu.timeline.json",
    ] {
        let export = open(name);
        let mut copy = trace.clone();
        let attached = attach(&mut copy, &export).unwrap_or_else(|| panic!("{name} attaches"));
        eprintln!("{name}: {attached:?}");
        assert!(attached.tagged * 2 >= attached.timeline_tensors, "{name}");
        let after = composition(&copy);
        eprintln!("{name}: trace {before:?} → {after:?}");
        assert_ne!(after, before);
        // torch's categories at the peak, less the tensors made before profiling (the
        // model's weights), which the CPU trace never counted.
        assert_eq!(after, torch_less_preexisting(), "{name}");
    }
    // Another run's timeline is not this trace's.
    trace.shift_time(1_000_000_007);
    assert_eq!(
        attach(&mut trace, &open("mlp-adam-cpu.timeline.raw.json.gz")),
        None
    );
}

/// [`plot_peak`] less the bytes the raw export says existed before profiling began.
fn torch_less_preexisting() -> Vec<(&'static str, i64)> {
    let file = std::fs::File::open(fixture("mlp-adam-cpu.timeline.raw.json.gz")).expect("raw");
    let rows: Vec<(i64, i64, i64, usize)> =
        serde_json::from_reader(flate2::read::GzDecoder::new(file)).expect("json");
    let mut want = plot_peak();
    for (t, _, bytes, category) in rows.into_iter().filter(|r| r.0 < 0) {
        let name = torch_category(category).expect("a category").as_str();
        let entry = want
            .iter_mut()
            .find(|(n, _)| *n == name)
            .expect("a category at the peak");
        entry.1 -= bytes;
        assert!(t == -1 && entry.1 >= 0);
    }
    want.retain(|&(_, b)| b != 0);
    want
}
