//! PyTorch CUDA caching-allocator snapshots (`torch.cuda.memory._dump_snapshot` pickles).
//!
//! The pickle is read by [`super::pickle`], which executes nothing. The snapshot holds the
//! allocator's segments and blocks at one instant plus, per device, a ring buffer of trace
//! entries that may have lost its early history. So the history is first walked *backwards*
//! from the segment state at snapshot time to find what was already allocated and reserved
//! when the surviving history begins (as torch's `_memory_viz.py` does); that state becomes
//! synthetic events just before the first entry, and the entries are then replayed forwards
//! with allocator totals. A block counts as allocated from `alloc` to `free_completed`;
//! segments (`segment_alloc`/`segment_map` … `segment_free`/`segment_unmap`) are reserved.
//!
//! `fold` decodes each trace entry as the pickle is read (and `frames` each frame dict and
//! frames list, as interned frames and stacks), `parse` gathers them into
//! per-device `entry` lists (and `segments` the allocator state); `replay` walks each
//! history back and replays it.

mod budget;
mod entry;
mod fold;
mod frames;
mod history;
mod parse;
mod replay;
mod segments;
mod state;
#[cfg(test)]
mod tests;

use std::io::{self, Read};

use super::importer::{Detection, Importer, ReadContext};
use super::input::Input;
use super::pickle;
use super::{LoadErrorKind, LoadOptions, SourceError};
use crate::model::Recording;
use parse::gather;

/// Diagnostics key for the blocks found live before the surviving history begins.
pub const PRE_EXISTING_BLOCKS: &str =
    "blocks allocated before the snapshot's history began (shown as allocated at its start)";

/// Allocator snapshots (`torch.cuda.memory._dump_snapshot` pickles) in the importer seam.
pub struct SnapshotImporter;

impl Importer for SnapshotImporter {
    fn detect(&self, head: &[u8]) -> Detection {
        match head {
            [0x80, protocol, ..] if (2..=5).contains(protocol) => Detection::Certain,
            [0x80, protocol, ..] => Detection::Refused(format!(
                "a Python pickle of protocol {protocol}; allocator snapshots use 2 to 5"
            )),
            _ => Detection::No,
        }
    }

    fn read(&self, input: Input, context: &ReadContext<'_>) -> Result<Recording, SourceError> {
        read(input, context.options)
    }

    fn file_extensions(&self) -> &'static [&'static str] {
        &["pickle", "pkl", "pickle.gz"]
    }

    fn memory_hint(&self) -> &'static str {
        "call torch.cuda.memory._record_memory_history() before the run"
    }

    /// A snapshot is one pickled object: without its end there is no object to read.
    fn salvages(&self) -> bool {
        false
    }
}

/// Read an allocator snapshot pickle.
pub fn read(input: Input, options: LoadOptions) -> Result<Recording, SourceError> {
    let compressed = input.compressed;
    // Parsed as it is read, through a small buffer: the file is never held whole. A gzip
    // file's content is capped by its reader (`input::DecompressedLimit`).
    let hint = usize::try_from(input.file_len).unwrap_or(usize::MAX);
    let mut reader = Counted {
        inner: input.reader,
        read: 0,
    };
    let mut folder = fold::EntryFolder::default();
    let parsed = pickle::parse_folding(&mut reader, hint, &mut folder);
    // The rest of the content (after STOP, or after a parse error) is read too, as when the
    // file was read whole first: it counts towards the size, and a read error wins.
    let drained = match &parsed {
        Err(pickle::ReadError::Io { .. }) => Ok(0),
        _ => io::copy(&mut reader, &mut io::sink()),
    };
    let content_bytes = reader.read;
    let pickle = match (parsed, drained) {
        (Err(pickle::ReadError::Io { offset, error }), _) => {
            return Err(SourceError {
                offset: Some(offset),
                kind: LoadErrorKind::Io(error),
            });
        }
        (_, Err(error)) => {
            return Err(SourceError {
                offset: Some(content_bytes),
                kind: LoadErrorKind::Io(error),
            });
        }
        (Err(pickle::ReadError::Pickle(e)), _) => {
            return Err(SourceError {
                offset: Some(e.offset),
                kind: match e.kind {
                    pickle::PickleErrorKind::Truncated => LoadErrorKind::Truncated(e.message),
                    _ => LoadErrorKind::Shape(e.message),
                },
            });
        }
        (Ok(pickle), Ok(_)) => pickle,
    };
    // The replay needs only what was read from the pickle: its arena (hundreds of MB for a
    // million entries) is freed on a second thread meanwhile (measured: 10 ms of a 0.7 s
    // load), and joined before returning.
    let end_offset = pickle.end_offset;
    let read = gather(&pickle, folder)?;
    let freeing = std::thread::Builder::new()
        .name("vramscope-free".into())
        .spawn(move || drop(pickle));
    let mut rec = read.replay(options.allocator_history);
    if let Ok(handle) = freeing {
        let _ = handle.join();
    }

    rec.meta.compressed = compressed;
    rec.meta.content_bytes = content_bytes;
    if content_bytes > end_offset {
        // Python's pickle.load stops at STOP too; what follows is not the snapshot's.
        let what = format!(
            "bytes after the end of the pickle at byte {} ignored",
            crate::units::group_thousands(end_offset)
        );
        rec.diagnostics.note_n(&what, content_bytes - end_offset);
    }
    Ok(rec)
}

/// A reader that counts the bytes it hands out.
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}
