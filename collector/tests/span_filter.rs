//! `SpanFilter::Summary` leaves out spans, never an answer: on every real Chrome trace the
//! summary of the filtered recording equals the summary of the whole one, and the spans
//! left out are counted. `SpanFilter::SummaryCompact` with `summarize_compact` (what
//! `summary` runs) gives the same summary too, on those and on every Chrome trace under
//! tests/fixtures (the categories' and advisor's runs exercise the composition at the peak).

use std::path::{Path, PathBuf};

use collector::analysis::{Summary, summarize, summarize_compact};
use collector::model::OpCategory;
use collector::parse::SpanFilter;
use collector::parse::recording::packed::{self, PackInfo};
use collector::{LoadOptions, Timeline, load};

/// Every Chrome trace under ../shared/traces (the real ones and torch's own CPU runs).
fn traces() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    gzipped_under(&[root.join("real"), root.join("torch-cpu")])
}

/// Every gzipped file under `dirs`, sorted.
fn gzipped_under(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).expect("the shared traces") {
                let path = entry.expect("a directory entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.to_string_lossy().ends_with(".json.gz") {
                    out.push(path);
                }
            }
        }
    }
    out.sort();
    out
}

fn loaded(path: &Path, spans: SpanFilter) -> collector::Recording {
    let options = LoadOptions {
        spans,
        ..LoadOptions::default()
    };
    load(path, options).expect("a real trace loads")
}

#[test]
fn summary_spans_give_the_same_summary() {
    let traces = traces();
    assert!(traces.len() >= 14, "found {} traces", traces.len());
    let mut left_out = 0;
    for path in &traces {
        let all = loaded(path, SpanFilter::All);
        let some = loaded(path, SpanFilter::Summary);
        let expected = summarize(&all, &Timeline::build(&all));
        let got = summarize(&some, &Timeline::build(&some));
        assert_eq!(got, expected, "{}", path.display());
        // What was left out is exactly the runtime calls and device-side spans whose names
        // mark no phase: counted from the whole recording independently.
        let not_kept = all
            .ops
            .iter()
            .filter(|o| {
                matches!(
                    o.category,
                    OpCategory::Runtime
                        | OpCategory::Driver
                        | OpCategory::Kernel
                        | OpCategory::Memcpy
                        | OpCategory::Memset
                        | OpCategory::GpuUserAnnotation
                        | OpCategory::Other
                ) && ![
                    "Optimizer.step#",
                    "Optimizer.zero_grad#",
                    "autograd::engine::evaluate_function",
                ]
                .iter()
                .any(|p| all.op_name(o).starts_with(p))
            })
            .count() as u64;
        assert_eq!(some.meta.spans_left_out, not_kept, "{}", path.display());
        assert_eq!(some.ops.len() as u64 + not_kept, all.ops.len() as u64);
        left_out += not_kept;
    }
    // df_index_resolver alone has 42,373 runtime calls and 22,290 kernels, copies, memsets.
    assert!(left_out > 64_663, "left out {left_out}");
}

#[test]
fn compact_spans_give_the_same_summary() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut paths = traces();
    paths.extend(gzipped_under(&[fixtures]));
    assert!(paths.len() >= 50, "found {} traces", paths.len());
    let (mut taken, mut spans) = (0, 0);
    for path in &paths {
        let all = loaded(path, SpanFilter::All);
        let mut compact = loaded(path, SpanFilter::SummaryCompact);
        assert!(compact.ops.is_empty(), "{}", path.display());
        let held = compact.compact_ops.len();
        let expected = summarize(&all, &Timeline::build(&all));
        let (_, got) = summarize_compact(&mut compact);
        assert_eq!(got, expected, "{}", path.display());
        assert!(compact.compact_ops.is_empty());
        assert_eq!(
            compact.ops.len() as u64 + compact.meta.spans_left_out,
            all.ops.len() as u64,
            "{}",
            path.display()
        );
        taken += compact.ops.len() as u64;
        spans += held;
    }
    // The point of it: the answer reads a few of the spans.
    assert!(taken * 4 < spans, "took {taken} of {spans} spans");
}

/// A pack read for `summary` (the spans its answer reads taken from the pack, the rest
/// counted) gives the summary of the original, and the pack's end record still checks
/// every span.
#[test]
fn a_pack_read_compact_gives_the_same_summary() {
    let dir = std::env::temp_dir().join(format!("vramscope-span-filter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let mut left_out = 0;
    for path in &traces() {
        let mut all = loaded(path, SpanFilter::All);
        let pack = dir.join("pack.vsr");
        let mut bytes = Vec::new();
        packed::write(&mut bytes, &mut all, &PackInfo::default()).expect("pack");
        std::fs::write(&pack, &bytes).expect("write the pack");
        let mut compact = loaded(&pack, SpanFilter::SummaryCompact);
        // The pack stores the spans the answer reads: the read holds just those, and
        // counts the rest without decoding them.
        assert!(compact.compact_ops.is_empty(), "{}", path.display());
        assert!(compact.meta.memory_events_in_ops.is_some());
        let expected = summarize(&all, &Timeline::build(&all));
        let (_, got) = summarize_compact(&mut compact);
        assert_eq!(got.packed.as_deref(), Some("packed by vramscope"));
        let got = Summary {
            packed: None,
            ..got
        };
        assert_eq!(got, expected, "{}", path.display());
        assert_eq!(
            compact.ops.len() as u64 + compact.meta.spans_left_out,
            all.ops.len() as u64,
            "{}",
            path.display()
        );
        left_out += compact.meta.spans_left_out;
        // A pack whose end record counts one span more than it holds is refused as before.
        let text = String::from_utf8(bytes).expect("a pack is text");
        let ops = all.ops.len();
        let short = text.replace(&format!("\"ops\":{ops},"), &format!("\"ops\":{},", ops + 1));
        assert_ne!(
            short,
            text,
            "{}: the end record counts the spans",
            path.display()
        );
        std::fs::write(&pack, short).expect("write the pack");
        let options = LoadOptions {
            spans: SpanFilter::SummaryCompact,
            ..LoadOptions::default()
        };
        let err = load(&pack, options).expect_err("an end record that does not match");
        assert!(err.to_string().contains("incomplete"), "{err}");
    }
    assert!(left_out > 64_663, "left out {left_out}");
    std::fs::remove_dir_all(&dir).ok();
}
