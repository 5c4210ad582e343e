//! Comparing two open files: run B against run A per device and per op, from
//! `collector::analysis::diff` (the same numbers as `vramscope diff`), and where B's
//! timeline goes on A's time axis (aligned at their starts or at their first training
//! steps). The Compare panel shows the diff; the timeline draws B.

use std::sync::Arc;

use collector::analysis::diff::{Align, Diff, RunFacts, diff};

use super::doc::Document;
use super::loaded::Loaded;
use super::timeline::{Other, Source};

/// Run B against run A.
pub fn compute(a: &Loaded, b: &Loaded, align: Align) -> Diff {
    fn facts(d: &Loaded, align: Align) -> RunFacts<'_> {
        RunFacts {
            summary: &d.summary,
            rows: &d.rows,
            origin_ns: align.origin_ns(&d.rec),
        }
    }
    diff(&facts(a, align), &facts(b, align), align)
}

/// Where B's timeline goes on A's axis: B's absolute time at A's t = 0, so that both runs'
/// origins (starts, or first steps) line up.
pub fn other_source<'a>(doc: &Document, b_id: u64, b: &'a Loaded) -> Source<'a> {
    let align = doc.panels.compare.align;
    // Integer ns: epoch-ns clocks (~1.8e18) do not fit an f64 to the ns.
    let a_origin_rel_ns = align.origin_ns(&doc.data.rec) - doc.data.rec.meta.start_ns;
    let b_origin_abs_ns = align.origin_ns(&b.rec);
    let name = doc.data.device_name(doc.device);
    let device = b
        .shown_devices
        .iter()
        .copied()
        .find(|&d| b.device_name(d) == name)
        .or_else(|| b.default_device())
        .unwrap_or(0);
    Source {
        doc: b_id,
        data: b,
        device,
        origin_ns: b_origin_abs_ns - a_origin_rel_ns,
    }
}

/// The timeline's view of the other run, when comparing.
pub fn other_for_timeline<'a>(
    doc: &Document,
    b: Option<&'a (u64, Arc<Loaded>, String)>,
) -> Option<Other<'a>> {
    let (b_id, b, label) = b?;
    Some(Other {
        source: other_source(doc, *b_id, b),
        layout: doc.panels.compare.layout,
        name: label,
    })
}
