//! Sources: every input format is read into one [`Recording`].
//!
//! The format is recognised from the content (magic bytes, first tokens), never from the
//! file name, so renamed and extension-less files open too. Each parser fails fast with
//! an "incompatible format" error; the path is attached once, here.

pub mod chrome_trace;
pub mod decimal;
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
use json_stream::StreamError;

/// Options for loading.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// Keep the complete events of an input that ends early (killed writer, cut download)
    /// instead of failing. The recording then says where it was cut.
    pub salvage_truncated: bool,
}

/// The formats vramscope recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetectedFormat {
    /// A JSON document: a PyTorch profiler (Chrome) trace.
    ChromeTraceJson,
    /// Newline-delimited JSON from `nsys export --type json`.
    NsightJson,
    /// A pickle: a PyTorch CUDA allocator snapshot.
    TorchSnapshotPickle,
    /// An SQLite database: `nsys export --type sqlite`.
    NsightSqlite,
    /// vramscope's own recording.
    VramscopeRecording,
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
            LoadErrorKind::Unrecognized(m) => write!(f, "not a format vramscope reads: {m}")?,
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

/// Recognise the format from the first bytes of the (decompressed) content.
pub fn detect(head: &[u8]) -> Result<DetectedFormat, String> {
    if head.starts_with(recording::MAGIC) {
        return Ok(DetectedFormat::VramscopeRecording);
    }
    if head.starts_with(b"SQLite format 3\0") {
        return Ok(DetectedFormat::NsightSqlite);
    }
    if let [0x80, protocol, ..] = head {
        return if (2..=5).contains(protocol) {
            Ok(DetectedFormat::TorchSnapshotPickle)
        } else {
            Err(format!(
                "a Python pickle of protocol {protocol}; allocator snapshots use 2 to 5"
            ))
        };
    }
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = text.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| (text[i], &text[i..])) {
        Some((b'{', rest)) if is_nsight_json(rest) => Ok(DetectedFormat::NsightJson),
        Some((b'{' | b'[', _)) => Ok(DetectedFormat::ChromeTraceJson),
        Some((b, _)) => Err(format!("it starts with {}", json_stream::describe_byte(b))),
        None => Err("the file is empty".into()),
    }
}

/// `nsys export --type json` writes one object per line whose first key is `Type` (events),
/// `type` (`--separate-strings` records) or `data` (the string table).
fn is_nsight_json(object: &[u8]) -> bool {
    let after_brace = object.get(1..).unwrap_or_default();
    let key_start = after_brace.iter().position(|b| !b.is_ascii_whitespace());
    let key = key_start.map_or(&[][..], |i| &after_brace[i..]);
    key.starts_with(b"\"Type\"") || key.starts_with(b"\"type\"") || key.starts_with(b"\"data\"")
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

/// The reader the content calls for, run on `path`.
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
    let format =
        detect(&input.head).map_err(|m| err(LoadErrorKind::Unrecognized(m), None, false))?;
    let file_bytes = input.file_bytes_read.clone();
    let other = match format {
        DetectedFormat::ChromeTraceJson => Ok(input),
        DetectedFormat::NsightJson => Err(nsight::read_json(input, options)),
        DetectedFormat::TorchSnapshotPickle => Err(snapshot::read(input, options)),
        DetectedFormat::VramscopeRecording => Err(recording::read(input, path, options)),
        DetectedFormat::NsightSqlite if compressed => {
            let message = "a gzip-compressed SQLite database: decompress it first".to_owned();
            return Err(err(LoadErrorKind::Unrecognized(message), None, false));
        }
        DetectedFormat::NsightSqlite => {
            drop(input);
            Err(nsight::read_sqlite(path, options))
        }
    };
    let input = match other {
        Ok(input) => input,
        Err(result) => return result.map_err(|e| err(e.kind, e.offset, compressed)),
    };
    let result = chrome_trace::read(input, options);
    result.map_err(|e| {
        let (kind, offset) = match e {
            chrome_trace::TraceError::Stream(StreamError::Io(io_err, offset)) => {
                if compressed {
                    let at = file_bytes.load(std::sync::atomic::Ordering::Relaxed);
                    let message = format!(
                        "{io_err} (after {offset} decompressed bytes, near compressed byte {at})"
                    );
                    return err(LoadErrorKind::Compression(message), None, false);
                }
                (LoadErrorKind::Io(io_err), Some(offset))
            }
            chrome_trace::TraceError::Stream(StreamError::Truncated { offset, context }) => (
                LoadErrorKind::Truncated(format!("inside {context}")),
                Some(offset),
            ),
            chrome_trace::TraceError::Stream(StreamError::Syntax { offset, message }) => {
                (LoadErrorKind::Syntax(message), Some(offset))
            }
            chrome_trace::TraceError::Stream(StreamError::TooLarge { offset }) => {
                (LoadErrorKind::TooLarge, Some(offset))
            }
            chrome_trace::TraceError::Shape { offset, message } => {
                (LoadErrorKind::Shape(message), Some(offset))
            }
        };
        err(kind, offset, compressed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content() {
        assert_eq!(
            detect(b"  \n{\"a\":1}"),
            Ok(DetectedFormat::ChromeTraceJson)
        );
        assert_eq!(
            detect(b"\xEF\xBB\xBF[{}]"),
            Ok(DetectedFormat::ChromeTraceJson)
        );
        assert!(detect(b"").is_err());
        assert_eq!(
            detect(b"\x80\x04\x95"),
            Ok(DetectedFormat::TorchSnapshotPickle)
        );
        assert!(detect(b"\x80\x09").is_err());
        assert_eq!(
            detect(b"SQLite format 3\0\x10"),
            Ok(DetectedFormat::NsightSqlite)
        );
        assert_eq!(
            detect(b"{\"Type\":48,\"TraceProcessEvent\":{}}"),
            Ok(DetectedFormat::NsightJson)
        );
        assert_eq!(
            detect(b"{ \"data\":[\"[Unknown]\"]}"),
            Ok(DetectedFormat::NsightJson)
        );
        assert_eq!(
            detect(b"{\"traceEvents\":[]}"),
            Ok(DetectedFormat::ChromeTraceJson)
        );
        assert!(detect(b"hello").expect_err("not a format").contains("'h'"));
    }

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
