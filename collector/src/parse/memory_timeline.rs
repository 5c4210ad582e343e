//! torch's own memory categories: `prof.export_memory_timeline(path, device)` (torch ≥ 2.1,
//! deprecated since but still what many scripts call) writes what its memory profiler
//! decided, in one of two shapes, each a JSON array of arrays:
//! * `.json`/`.json.gz`, the plot: `[times, sizes]`, `times` in µs (the trace's clock,
//!   absolute), `sizes[i]` the bytes per category after `times[i]`, a leading 0 then torch's
//!   order parameter, optimizer state, input, temporary, activation, gradient, autograd
//!   detail, unknown;
//! * `.raw.json.gz`, the raw events: `[t_ns, action, bytes, category]` per tensor event,
//!   actions 1 pre-existing (t −1: before profiling began), 2 create, 3 version increment
//!   (a free in the old category and an allocation in the new, at one instant), 4 destroy
//!   (negative bytes), categories by index in the same order (7 unknown).
//!
//! Either becomes one device's allocations, each tagged with torch's category (storage
//! tags, so the categories are read, not inferred), at addresses made up for them: the
//! exports have none. The plot's sizes become the per-category changes between its points
//! (totals exact at every point; counts of allocations are of changes, not tensors). The
//! exports do not say which device they describe: `device` in the file name (`cpu`, `cuda`,
//! `cuda:1`) decides, else torch's default with CUDA, `cuda:0`.

mod attach;
mod build;

use std::io::Read;
use std::path::Path;

use super::importer::{Detection, Importer, ReadContext, first_token};
use super::input::Input;
use super::{LoadErrorKind, SourceError};
use crate::analysis::categories::Category;
use crate::model::Recording;
pub use attach::{Attached, Beside, CATEGORIES_FROM, attach};

/// How many categories torch's exports carry: those of [`Category::ALL`] up to and with
/// `unknown`, in that order (torch's `_CATEGORY_TO_INDEX`; index 7 is its `None`, what it
/// could not categorise).
pub const TORCH_CATEGORIES: usize = 8;

/// The category of torch's index `index` in the exports.
pub fn torch_category(index: usize) -> Option<Category> {
    Category::ALL.get(..TORCH_CATEGORIES)?.get(index).copied()
}

/// The two shapes of the export.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Export {
    /// `[t_ns, action, bytes, category]` per event.
    Raw(Vec<(i64, i64, i64, i64)>),
    /// `[times_us, sizes]`.
    Plot(Vec<i64>, Vec<Vec<i64>>),
}

/// torch's memory timeline exports in the importer seam.
pub struct MemoryTimelineImporter;

impl Importer for MemoryTimelineImporter {
    /// An array whose first element is an array: no Chrome trace starts so.
    fn detect(&self, head: &[u8]) -> Detection {
        let Some(inner) = first_token(head).and_then(|t| t.strip_prefix(b"[")) else {
            return Detection::No;
        };
        match first_token(inner).and_then(|t| t.first()) {
            Some(b'[') => Detection::Certain,
            _ => Detection::No,
        }
    }

    fn read(&self, mut input: Input, context: &ReadContext<'_>) -> Result<Recording, SourceError> {
        let mut text = Vec::new();
        input
            .reader
            .read_to_end(&mut text)
            .map_err(|e| SourceError {
                offset: Some(text.len() as u64),
                kind: LoadErrorKind::Io(e),
            })?;
        let export: Export = serde_json::from_slice(&text).map_err(|e| {
            let offset = offset_of(&text, e.line(), e.column());
            let message = format!(
                "not a torch memory timeline export ([times, sizes] or [t, action, bytes, \
                 category] rows): {e}"
            );
            SourceError::shape(Some(offset), message)
        })?;
        let device = build::device_from_name(context.path);
        let mut rec = match export {
            Export::Raw(rows) => build::from_raw(&rows, device)?,
            Export::Plot(times, sizes) => build::from_plot(&times, &sizes, device)?,
        };
        rec.meta.compressed = input.compressed;
        rec.meta.content_bytes = text.len() as u64;
        Ok(rec)
    }

    fn file_extensions(&self) -> &'static [&'static str] {
        &["json", "json.gz", "raw.json.gz"]
    }

    fn memory_hint(&self) -> &'static str {
        "export it with prof.export_memory_timeline(path, device) after a profile made with \
         profile_memory=True, record_shapes=True, with_stack=True"
    }

    fn salvages(&self) -> bool {
        false
    }
}

/// Whether the file at `path` is a memory timeline export (its first bytes say; gzip read
/// through). Unreadable files are not.
pub fn is_memory_timeline(path: &Path) -> bool {
    super::input::open(path).is_ok_and(|opened| {
        super::importer::detect(&opened.head) == Ok(super::SourceFormat::TorchMemoryTimeline)
    })
}

/// The byte offset of serde_json's 1-based line and column in `text`.
fn offset_of(text: &[u8], line: usize, column: usize) -> u64 {
    let line_start: usize = text
        .split(|&b| b == b'\n')
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len()) as u64
}

#[cfg(test)]
mod tests;
