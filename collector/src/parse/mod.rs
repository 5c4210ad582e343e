//! Sources: every input format is read into one [`Recording`].
//!
//! The format is recognised from the content (magic bytes, first tokens), never from the
//! file name, so renamed and extension-less files open too. Each parser fails fast with
//! an "incompatible format" error; the path is attached once, here.

pub mod chrome_trace;
pub mod decimal;
pub mod input;
pub mod json_stream;

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
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let first = text.iter().copied().find(|b| !b.is_ascii_whitespace());
    match first {
        Some(b'{' | b'[') => Ok(DetectedFormat::ChromeTraceJson),
        Some(_) if head.starts_with(b"SQLite format 3\0") => {
            Err("an SQLite database that vramscope cannot read yet".into())
        }
        Some(0x80) => Err("a Python pickle that vramscope cannot read yet".into()),
        Some(b) => Err(format!("it starts with {}", json_stream::describe_byte(b))),
        None => Err("the file is empty".into()),
    }
}

/// Load any supported input into a [`Recording`].
pub fn load(path: &Path, options: LoadOptions) -> Result<Recording, LoadError> {
    let err = |kind, offset, decompressed| LoadError {
        path: path.to_path_buf(),
        offset,
        decompressed,
        kind,
    };
    let input = input::open(path).map_err(|e| {
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
    let result = match format {
        DetectedFormat::ChromeTraceJson => chrome_trace::read(input, options),
    };
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
        assert!(detect(b"\x80\x04\x95").is_err());
        assert!(detect(b"hello").expect_err("not a format").contains("'h'"));
    }
}
