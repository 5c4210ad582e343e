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

/// The raw export: `[t_ns, action, bytes, category]` per event (32 bytes a row read).
type RawRows = Vec<(i64, i64, i64, i64)>;
/// The plot: `[times_us, sizes]`.
type Plot = (Vec<i64>, Vec<Vec<i64>>);

/// Whether `text` is the plot (`[[times…], [[sizes…], …]]`) rather than raw rows
/// (`[[t, a, b, c], [t, a, b, c], …]`): what follows the first inner array is an array of
/// arrays in the plot, a row of numbers (or the end) in the raw export. Decided from the
/// text, so each shape is read straight into its own types (serde's untagged enums would
/// buffer the whole document first, several times its size).
fn is_plot(text: &[u8]) -> bool {
    let after_first = text.iter().position(|&b| b == b'[').and_then(|open| {
        text[open + 1..]
            .iter()
            .position(|&b| b == b']')
            .map(|n| open + n + 2)
    });
    let mut rest = after_first.map_or(&[][..], |at| &text[at.min(text.len())..]);
    let skip = |rest: &mut &[u8], what: &[u8]| {
        let start = rest
            .iter()
            .position(|b| !b.is_ascii_whitespace() && !what.contains(b));
        *rest = &rest[start.unwrap_or(rest.len())..];
    };
    skip(&mut rest, b",");
    if rest.first() != Some(&b'[') {
        return false;
    }
    rest = &rest[1..];
    skip(&mut rest, b"");
    rest.first() == Some(&b'[')
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
        let shape_error = |e: serde_json::Error| {
            let offset = offset_of(&text, e.line(), e.column());
            let message = format!(
                "not a torch memory timeline export ([times, sizes] or [t, action, bytes, \
                 category] rows): {e}"
            );
            SourceError::shape(Some(offset), message)
        };
        let device = build::device_from_name(context.path);
        let mut rec = if is_plot(&text) {
            let (times, sizes): Plot = serde_json::from_slice(&text).map_err(shape_error)?;
            build::from_plot(&times, &sizes, device)?
        } else {
            let rows: RawRows = serde_json::from_slice(&text).map_err(shape_error)?;
            build::from_raw(&rows, device)?
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
