//! Sources: every input format is read into one [`Recording`].
//!
//! The format is recognised from the content (magic bytes, first tokens), never from the
//! file name, so renamed and extension-less files open too. Each parser fails fast with
//! an "incompatible format" error; the path is attached once, here.

pub mod chrome_trace;
pub mod decimal;
pub mod importer;
pub mod input;
pub mod json_stream;
pub mod nsight;
pub mod pickle;
pub mod recording;
pub mod snapshot;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::model::Recording;
use importer::Importer;

/// Which file format a recording came from. Adding a format: a module implementing
/// [`importer::Importer`], its `pub mod` line above, a variant here (with its arms below
/// and in [`SourceFormat::importer`]) — nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFormat {
    /// PyTorch profiler Chrome trace (Kineto JSON), plain or gzip.
    TorchChromeTrace,
    /// PyTorch CUDA caching-allocator snapshot (`torch.cuda.memory._dump_snapshot` pickle).
    TorchSnapshot,
    /// Nsight Systems `nsys export --type sqlite`.
    NsightSqlite,
    /// Nsight Systems `nsys export --type json`.
    NsightJson,
    /// vramscope's own recording (`vramscope record`).
    VramscopeRecording,
}

impl SourceFormat {
    /// Every format, in the order detection asks their importers ([`SourceFormat::importer`]
    /// maps each to its reader).
    pub const ALL: [SourceFormat; 5] = [
        SourceFormat::TorchChromeTrace,
        SourceFormat::TorchSnapshot,
        SourceFormat::NsightSqlite,
        SourceFormat::NsightJson,
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
}

/// A failure inside one source reader; [`load`] attaches the path.
#[derive(Debug)]
pub struct SourceError {
    /// Offset in the content where the problem is, where known.
    pub offset: Option<u64>,
    /// The failure.
    pub kind: LoadErrorKind,
}

impl SourceError {
    /// A structural problem at `offset`.
    pub fn shape(offset: Option<u64>, message: impl Into<String>) -> SourceError {
        SourceError {
            offset,
            kind: LoadErrorKind::Shape(message.into()),
        }
    }
}

/// What went wrong loading an input.
#[derive(Debug)]
pub enum LoadErrorKind {
    /// The file could not be opened or read.
    Io(io::Error),
    /// The content is not a format vramscope reads.
    Unrecognized(String),
    /// The content ends early.
    Truncated(String),
    /// Invalid syntax.
    Syntax(String),
    /// Valid syntax, but not the structure the format requires.
    Shape(String),
    /// The gzip container is cut off or corrupt.
    Compression(String),
    /// One value exceeds the size vramscope will buffer.
    TooLarge,
}

/// A load failure: the file, the byte offset where known, and what is wrong.
#[derive(Debug)]
pub struct LoadError {
    /// The input.
    pub path: PathBuf,
    /// Offset in the content (decompressed, for gzip) where the problem is.
    pub offset: Option<u64>,
    /// Whether the offset refers to decompressed content.
    pub decompressed: bool,
    /// The failure.
    pub kind: LoadErrorKind,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path.display())?;
        match &self.kind {
            LoadErrorKind::Io(e) => write!(f, "cannot read: {e}")?,
            LoadErrorKind::Unrecognized(m) => {
                let formats: Vec<&str> = SourceFormat::ALL.iter().map(|f| f.describe()).collect();
                write!(
                    f,
                    "not a format vramscope reads: {m} (formats read: {})",
                    formats.join(", ")
                )?
            }
            LoadErrorKind::Truncated(m) => write!(f, "the file ends early ({m})")?,
            LoadErrorKind::Syntax(m) => write!(f, "invalid JSON: {m}")?,
            LoadErrorKind::Shape(m) => write!(f, "{m}")?,
            LoadErrorKind::Compression(m) => write!(f, "gzip data is cut off or corrupt: {m}")?,
            LoadErrorKind::TooLarge => write!(
                f,
                "a single JSON value is larger than {} MiB",
                json_stream::MAX_VALUE_BYTES >> 20
            )?,
        }
        if let Some(offset) = self.offset {
            let which = if self.decompressed {
                " of the decompressed content"
            } else {
                ""
            };
            write!(f, " at byte {offset}{which}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

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

/// The importer the content calls for, run on `path`.
fn read_any(
    path: &Path,
    options: LoadOptions,
    progress: &LoadProgress,
) -> Result<Recording, LoadError> {
    let err = |kind, offset, decompressed| LoadError {
        path: path.to_path_buf(),
        offset,
        decompressed,
        kind,
    };
    let watched = input::open_watched(
        path,
        progress.file_bytes_read.clone(),
        Some(progress.cancel.clone()),
    );
    let input = watched.map_err(|e| {
        if e.kind() == io::ErrorKind::InvalidInput || e.kind() == io::ErrorKind::UnexpectedEof {
            err(LoadErrorKind::Compression(e.to_string()), Some(0), false)
        } else {
            err(LoadErrorKind::Io(e), None, false)
        }
    })?;
    let compressed = input.compressed;
    let format = importer::detect(&input.head)
        .map_err(|m| err(LoadErrorKind::Unrecognized(m), None, false))?;
    let context = importer::ReadContext {
        path,
        options,
        progress,
    };
    format
        .importer()
        .read(input, &context)
        .map_err(|e| err(e.kind, e.offset, compressed))
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
