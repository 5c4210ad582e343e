//! Sources: every input format is read into one [`Recording`].
//!
//! The format is recognised from the content (magic bytes, first tokens), never from the
//! file name, so renamed and extension-less files open too. Each parser fails fast with
//! an "incompatible format" error; the path is attached once, here.

pub mod chrome_trace;
pub mod decimal;
pub mod discover;
mod errors;
pub mod importer;
pub mod input;
pub mod json_stream;
pub mod memory_timeline;
pub mod nsight;
pub mod pickle;
pub mod preview;
pub mod recording;
pub mod snapshot;

use std::path::Path;

use crate::model::Recording;
pub use errors::{LoadError, LoadErrorKind, MAX_DECOMPRESSED_FLAG, SALVAGE_FLAG, SourceError};
use importer::Importer;
use input::{DecompressedLimit, GzipProblem, SharedMembers};

/// Which file format a recording came from. Adding a format: a module implementing
/// [`importer::Importer`], its `pub mod` line above, a variant here (with its arms below
/// and in [`SourceFormat::importer`]) — nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SourceFormat {
    /// PyTorch profiler Chrome trace (Kineto JSON), plain or gzip.
    TorchChromeTrace,
    /// PyTorch CUDA caching-allocator snapshot (`torch.cuda.memory._dump_snapshot` pickle).
    TorchSnapshot,
    /// Nsight Systems `nsys export --type sqlite`.
    NsightSqlite,
    /// Nsight Systems `nsys export --type json`.
    NsightJson,
    /// torch's memory categories: `prof.export_memory_timeline` (plot or raw events).
    TorchMemoryTimeline,
    /// vramscope's own recording (`vramscope record`).
    VramscopeRecording,
}

impl SourceFormat {
    /// Every format, in the order detection asks their importers ([`SourceFormat::importer`]
    /// maps each to its reader).
    pub const ALL: [SourceFormat; 6] = [
        SourceFormat::TorchChromeTrace,
        SourceFormat::TorchSnapshot,
        SourceFormat::NsightSqlite,
        SourceFormat::NsightJson,
        SourceFormat::TorchMemoryTimeline,
        SourceFormat::VramscopeRecording,
    ];

    /// The format whose [`as_str`](Self::as_str) is `id`.
    pub fn from_id(id: &str) -> Option<SourceFormat> {
        SourceFormat::ALL.into_iter().find(|f| f.as_str() == id)
    }

    /// The importer of this format. Exhaustive: a new format does not compile until it
    /// has one.
    pub fn importer(self) -> &'static dyn Importer {
        match self {
            SourceFormat::TorchChromeTrace => &chrome_trace::ChromeTraceImporter,
            SourceFormat::TorchSnapshot => &snapshot::SnapshotImporter,
            SourceFormat::NsightSqlite => &nsight::NsightSqliteImporter,
            SourceFormat::NsightJson => &nsight::NsightJsonImporter,
            SourceFormat::TorchMemoryTimeline => &memory_timeline::MemoryTimelineImporter,
            SourceFormat::VramscopeRecording => &recording::RecordingImporter,
        }
    }

    /// Stable identifier for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceFormat::TorchChromeTrace => "pytorch-chrome-trace",
            SourceFormat::TorchSnapshot => "pytorch-allocator-snapshot",
            SourceFormat::NsightSqlite => "nsight-systems-sqlite",
            SourceFormat::NsightJson => "nsight-systems-json",
            SourceFormat::TorchMemoryTimeline => "pytorch-memory-timeline",
            SourceFormat::VramscopeRecording => "vramscope-recording",
        }
    }

    /// What to call it in prose.
    pub fn describe(self) -> &'static str {
        match self {
            SourceFormat::TorchChromeTrace => "PyTorch profiler trace",
            SourceFormat::TorchSnapshot => "PyTorch allocator snapshot",
            SourceFormat::NsightSqlite => "Nsight Systems export (SQLite)",
            SourceFormat::NsightJson => "Nsight Systems export (JSON)",
            SourceFormat::TorchMemoryTimeline => "PyTorch memory timeline (categories)",
            SourceFormat::VramscopeRecording => "vramscope recording",
        }
    }
}

/// Options for loading.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// Keep the complete events of an input that ends early (killed writer, cut download)
    /// instead of failing. The recording then says where it was cut.
    pub salvage_truncated: bool,
    /// How much decompressed content a gzip input may hold.
    pub max_decompressed: DecompressedLimit,
    /// Which op spans a Chrome trace's recording keeps.
    pub spans: SpanFilter,
    /// Keep an allocator snapshot's history as the allocator recorded it (requested sizes,
    /// streams, the segments at its start) in [`crate::model::AllocatorState::history`],
    /// for the allocator simulation: about 40 bytes an entry.
    pub allocator_history: bool,
}

/// Which op spans a reader keeps. Spans are most of a trace's events and most of a loaded
/// recording's memory (32 bytes each), and some commands read only some of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpanFilter {
    /// Every span (the viewer, `table`, exports).
    #[default]
    All,
    /// Only the spans `summary` reads: those the op index names
    /// ([`crate::timeline::names_work`]) and those whose name marks a phase
    /// ([`crate::analysis::categories::names_a_phase`]). The rest (runtime calls, kernels,
    /// copies) are counted in [`crate::model::Meta::spans_left_out`]. Chrome traces and packs.
    Summary,
    /// The spans [`SpanFilter::Summary`] keeps, held compressed in
    /// [`crate::model::Recording::compact_ops`] (about 9 bytes a span instead of 32, and
    /// no op index over them) until [`crate::analysis::summary::summarize_compact`] takes
    /// the few its answer reads. Chrome traces and packs; other readers fill `ops` as always.
    SummaryCompact,
}

impl SpanFilter {
    /// Whether a span of `category` named `name` is kept.
    pub fn keeps(self, category: crate::model::OpCategory, name: &str) -> bool {
        match self {
            SpanFilter::All => true,
            SpanFilter::Summary | SpanFilter::SummaryCompact => {
                crate::timeline::names_work(category)
                    || crate::analysis::categories::names_a_phase(name)
            }
        }
    }
}

/// Load any supported input into a [`Recording`].
pub fn load(path: &Path, options: LoadOptions) -> Result<Recording, LoadError> {
    load_watched(path, options, &LoadProgress::default())
}

/// What a caller (the viewer's loader thread) can watch and control while [`load_watched`]
/// runs on another thread.
#[derive(Debug, Default)]
pub struct LoadProgress {
    /// Bytes of the file read so far (compressed bytes for gzip; SQLite files are read by
    /// SQLite and stay at 0).
    pub file_bytes_read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Set to make the load fail soon with an I/O error saying it was cancelled.
    pub cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Where to keep memory over time so far, for a view while the file is read (Chrome
    /// traces, the format of multi-gigabyte files; other readers leave it empty). `None`,
    /// the default: nobody looks, so the reader does not keep it.
    pub preview: Option<std::sync::Arc<preview::Preview>>,
}

/// [`load`], reporting the bytes read into `progress` and stopping when it is cancelled.
pub fn load_watched(
    path: &Path,
    options: LoadOptions,
    progress: &LoadProgress,
) -> Result<Recording, LoadError> {
    let mut rec = read_any(path, options, progress)?;
    rec.clamp_times();
    Ok(rec)
}

/// The importer the content calls for, run on `path`; for gzip, every member checked.
fn read_any(
    path: &Path,
    options: LoadOptions,
    progress: &LoadProgress,
) -> Result<Recording, LoadError> {
    let err = |kind, offset, decompressed, salvageable| LoadError {
        path: path.to_path_buf(),
        offset,
        decompressed,
        kind,
        salvageable,
    };
    let watched = input::open_watched(
        path,
        progress.file_bytes_read.clone(),
        Some(progress.cancel.clone()),
        options,
    );
    let input::Opened { input, gzip } =
        watched.map_err(|e| err(LoadErrorKind::Io(e), None, false, false))?;
    let compressed = input.compressed;
    let format = importer::detect(&input.head).map_err(|m| {
        // Damage in the first bytes of a gzip file leaves nothing to recognise.
        match gzip.as_ref().and_then(|g| g.report().damage) {
            Some(damage) => err(LoadErrorKind::Gzip(damage), None, false, false),
            None => err(LoadErrorKind::Unrecognized(m), None, false, false),
        }
    })?;
    let context = importer::ReadContext {
        path,
        options,
        progress,
    };
    let salvageable = format.importer().salvages() && !options.salvage_truncated;
    let read = format.importer().read(input, &context);
    let read = match gzip {
        Some(gzip) => checked_gzip(read, &gzip, options.salvage_truncated),
        None => read,
    };
    read.map_err(|e| err(e.kind, e.offset, compressed, salvageable))
}

/// An importer's result on a gzip input, once the rest of the content is read (so every
/// member is checked) and what the gzip reader met is said: damage is the error (the
/// importer's own error may only be its symptom), or with salvage a warning; non-gzip
/// bytes after the last member are a warning.
fn checked_gzip(
    read: Result<Recording, SourceError>,
    gzip: &SharedMembers,
    salvage: bool,
) -> Result<Recording, SourceError> {
    // After an error that damage could explain, the rest is read too: a deflate stream
    // corrupted in the middle may decode to bad JSON long before its CRC-32 says so.
    let symptom = matches!(
        &read,
        Err(SourceError {
            kind: LoadErrorKind::Syntax(_)
                | LoadErrorKind::Truncated(_)
                | LoadErrorKind::TruncatedOutsideEvents(_)
                | LoadErrorKind::Shape(_)
                | LoadErrorKind::TooLarge
                | LoadErrorKind::Io(_),
            ..
        })
    );
    let rest = if read.is_ok() || symptom {
        gzip.read_to_end()
    } else {
        Ok(0)
    };
    let report = gzip.report();
    if let Some(damage) = report.damage {
        // With salvage the reader ended the content at the damage, quietly; the importer
        // kept what came before it. Otherwise (or past the size limit) it is the error.
        let salvaged = salvage && !matches!(damage.problem, GzipProblem::TooLarge { .. });
        return match read {
            Ok(mut rec) if salvaged => {
                let what = format!(
                    "decompressed bytes read before the gzip damage ({SALVAGE_FLAG}): {damage}"
                );
                rec.diagnostics.note_n(&what, report.content_bytes.max(1));
                Ok(rec)
            }
            _ => Err(SourceError {
                offset: None,
                kind: LoadErrorKind::Gzip(damage),
            }),
        };
    }
    let mut rec = read?;
    rest.map_err(|e| SourceError {
        offset: None,
        kind: LoadErrorKind::Io(e),
    })?;
    if let Some(trailing) = report.trailing {
        let what = format!(
            "bytes after the last gzip member, at compressed byte {}, ignored (not gzip data)",
            crate::units::group_thousands(trailing.compressed_offset)
        );
        rec.diagnostics.note_n(&what, trailing.bytes);
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_load_fails_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("vramscope-cancel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("trace.json");
        std::fs::write(&path, b"{\"traceEvents\": []}").expect("write");
        let progress = LoadProgress::default();
        progress
            .cancel
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let err = load_watched(&path, LoadOptions::default(), &progress).expect_err("cancelled");
        let text = err.to_string();
        assert!(
            text.contains("trace.json") && text.contains(input::CANCELLED),
            "{text}"
        );
        // The same file loads when nobody cancels, and the bytes read are counted.
        let progress = LoadProgress::default();
        load_watched(&path, LoadOptions::default(), &progress).expect("loads");
        assert_eq!(
            progress
                .file_bytes_read
                .load(std::sync::atomic::Ordering::Relaxed),
            19
        );
    }
}
