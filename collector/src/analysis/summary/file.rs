//! Summarising a file: the one way every command does it (`summary`, `check`, several
//! ranks, the viewer's rank grid), so none decides on its own whether to trust a pack's
//! stored summary or how to read the rest.

use std::path::Path;

use super::{Summary, summarize_compact};
use crate::model::Meta;
use crate::parse::memory_timeline::Beside;
use crate::parse::recording::packed::stored_summary;
use crate::parse::{LoadError, LoadOptions, LoadProgress, SpanFilter, load_watched};

/// A file's summary and facts.
pub struct FileSummary {
    /// The summary, as `summary` of the file gives it.
    pub summary: Summary,
    /// The recording's facts (format, distributed info, properties).
    pub meta: Meta,
}

/// The summary of the file at `path`: a pack's stored summary where the pack is whole and
/// was written by this build (no event read), else the file read once with only the spans
/// the summary reads kept (the rest held compressed until it has taken them) and
/// summarised. The memory timeline exports in `beside` that came from the same profile put
/// torch's categories onto it first (a pack's stored summary then cannot be used).
pub fn summarize_file(
    path: &Path,
    options: LoadOptions,
    beside: &Beside,
    watch: &LoadProgress,
) -> Result<FileSummary, LoadError> {
    if beside.is_empty()
        && let Some(stored) = stored_summary(path, options)
    {
        return Ok(FileSummary {
            summary: stored.summary,
            meta: stored.meta,
        });
    }
    let compact = LoadOptions {
        spans: SpanFilter::SummaryCompact,
        ..options
    };
    let mut rec = load_watched(path, compact, watch)?;
    beside.put_onto(&mut rec);
    let (_, summary) = summarize_compact(&mut rec);
    Ok(FileSummary {
        summary,
        meta: rec.meta,
    })
}
