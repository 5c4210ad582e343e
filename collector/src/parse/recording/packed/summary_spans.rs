//! The spans `summary` reads, stored by `pack` ahead of the ops: of the millions of spans
//! of a multi-gigabyte trace, [`summarize_compact`] reads the few around each device's
//! peak and the phases' markers, and counts the memory events inside spans naming work.
//! Both are pure functions of the pack's content, computed once at pack time (by running
//! [`summarize_compact`] itself), so a pack read for `summary`
//! ([`SpanFilter::SummaryCompact`]) counts its `ops` records instead of decoding them and
//! takes these spans and that count: on the pack of a 2 GB trace, 4.7 M spans not decoded.
//!
//! The record is used only by a reader of this [`SELECTION_REVISION`] and vramscope
//! version; any other reader skips it and reads the spans as before.

use serde::{Deserialize, Serialize};

use super::PackLine;
use super::columns::{OpColumns, OpEncoder};
use super::vlq_columns::OpsVlq;
use crate::analysis::{Summary, summarize_compact};
use crate::model::Recording;
use crate::parse::SpanFilter;

/// The revision of the selection a pack stores. Bump it whenever which spans
/// [`summarize_compact`] takes, or how it counts memory events in ops, changes: packs of
/// another revision are then read span by span, never trusted.
pub const SELECTION_REVISION: u32 = 4;

/// Most bytes of the record (a quarter of [`super::super::MAX_LINE_BYTES`], ~800,000
/// spans): what a reader holds for it. A trace whose answer reads more spans is packed
/// without it, and `summary` reads its spans.
const MAX_SELECTION_RECORD_BYTES: usize = super::super::MAX_LINE_BYTES / 4;

/// The `summary_spans` record.
#[derive(Serialize, Deserialize)]
pub struct SelectionLine {
    revision: u32,
    vramscope_version: String,
    /// Spans a summary read leaves out in all ([`crate::model::Meta::spans_left_out`]).
    left_out: u64,
    /// Memory events inside a span naming work.
    in_ops: u64,
    /// The spans the answer reads, in source order (their own start deltas from 0).
    ops: OpsVlq,
}

/// A usable selection, decoded (on the reader's parsing thread).
pub struct Selection {
    /// What the summary leaves out.
    pub left_out: u64,
    /// Memory events in ops.
    pub in_ops: u64,
    /// The spans.
    pub ops: OpColumns,
}

impl SelectionLine {
    /// Whether a read with `spans` may use the selection (else it reads the spans).
    pub fn usable(&self, spans: SpanFilter) -> bool {
        spans == SpanFilter::SummaryCompact
            && super::written_by_this_build(
                self.revision,
                &self.vramscope_version,
                SELECTION_REVISION,
            )
    }

    /// The selection, decoded.
    pub fn into_selection(self) -> Result<Selection, String> {
        Ok(Selection {
            left_out: self.left_out,
            in_ops: self.in_ops,
            ops: self.ops.into_columns()?,
        })
    }
}

/// The `summary_spans` record of `rec` (which holds every span), or `None` when it would be
/// larger than [`MAX_SELECTION_RECORD_BYTES`]; and the summary of the pack that `summary`
/// computes from it (which the pack stores too: [`super::stored::summary_record`]). Both are
/// computed on `rec` itself, its spans set aside as a reader for `summary` holds them, and
/// `rec` is left as it was (a copy without the spans held every memory event twice: 420 MB
/// more in packing a 10 GB trace).
pub(super) fn selection_record(rec: &mut Recording) -> (Option<PackLine>, Summary) {
    let ops = std::mem::take(&mut rec.ops);
    let compact = std::mem::take(&mut rec.compact_ops);
    let meta = rec.meta.clone();
    // As a reader starts: nothing left out, nothing counted.
    rec.meta.spans_left_out = 0;
    rec.meta.memory_events_in_ops = None;
    for span in &ops {
        // What the reader does with each span for `summary` ([`super::decode::Decoder::ops`]).
        if SpanFilter::SummaryCompact.keeps(span.category, rec.strings.get(span.name)) {
            rec.compact_ops.push(&span);
        } else {
            rec.meta.spans_left_out += 1;
        }
    }
    let (_, summary) = summarize_compact(rec);
    let line = PackLine::SummarySpans(SelectionLine {
        revision: SELECTION_REVISION,
        vramscope_version: env!("CARGO_PKG_VERSION").to_owned(),
        left_out: rec.meta.spans_left_out,
        in_ops: summary.memory_events_in_ops,
        ops: OpsVlq::from_columns(
            &OpEncoder::default().encode(&rec.ops.iter().collect::<Vec<_>>()),
        ),
    });
    (rec.ops, rec.compact_ops, rec.meta) = (ops, compact, meta);
    let fits = serde_json::to_vec(&line).is_ok_and(|b| b.len() <= MAX_SELECTION_RECORD_BYTES);
    (fits.then_some(line), summary)
}
