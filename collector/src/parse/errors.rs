//! Load failures: the file, what is wrong, the byte offset, and the next step. One
//! `Display` writes them all, so the CLI and the viewer say the same thing.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::SourceFormat;
use super::input::{GzipDamage, GzipProblem};
use super::json_stream;

/// A failure inside one source reader; [`load`](super::load) attaches the path.
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
    /// The content ends early, outside the part `--salvage` can keep (a trace's events).
    TruncatedOutsideEvents(String),
    /// Invalid syntax.
    Syntax(String),
    /// Valid syntax, but not the structure the format requires.
    Shape(String),
    /// The gzip container is cut off, corrupt, or expands past the limit.
    Gzip(GzipDamage),
    /// One value exceeds the size vramscope will buffer.
    TooLarge,
    /// A second JSON document starts at `second_start`, after the one read ended at
    /// `first_end`.
    SecondDocument { first_end: u64, second_start: u64 },
}

/// A load failure: the file, the byte offset where known, what is wrong, the next step.
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
    /// Whether `--salvage` would read the complete part of this file (its format can be
    /// read in part, and salvage was not asked for already): the hint then says so.
    pub salvageable: bool,
}

/// The option that reads the complete part of a file that ends early or is damaged.
pub const SALVAGE_FLAG: &str = "--salvage";
/// The option that sets the most decompressed content a gzip input may hold.
pub const MAX_DECOMPRESSED_FLAG: &str = "--max-decompressed-size";

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
            LoadErrorKind::TruncatedOutsideEvents(m) => {
                write!(f, "the file ends early ({m}, outside the event list)")?
            }
            LoadErrorKind::Syntax(m) => write!(f, "invalid JSON: {m}")?,
            LoadErrorKind::Shape(m) => write!(f, "{m}")?,
            LoadErrorKind::Gzip(damage) => write!(f, "{damage}")?,
            LoadErrorKind::SecondDocument {
                first_end,
                second_start,
            } => write!(
                f,
                "a second JSON document starts at byte {second_start}, after the trace's \
                 end at byte {first_end}"
            )?,
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
        if let Some(step) = self.next_step() {
            write!(f, "; {step}")?;
        }
        Ok(())
    }
}

impl LoadError {
    /// What the user can do about it, where there is something.
    pub fn next_step(&self) -> Option<String> {
        let salvage = format!("{SALVAGE_FLAG} reads the complete events before it");
        let salvage_or = |otherwise: &str| {
            if self.salvageable {
                salvage.clone()
            } else {
                otherwise.to_owned()
            }
        };
        match &self.kind {
            LoadErrorKind::Truncated(_) => Some(salvage_or(
                "the file is incomplete: copy it again, or write it again",
            )),
            LoadErrorKind::TruncatedOutsideEvents(_) => {
                Some("the file is incomplete: copy it again, or write it again".to_owned())
            }
            LoadErrorKind::Syntax(_) => Some(
                "the file is damaged or was edited at that byte: copy it again, or write it again"
                    .to_owned(),
            ),
            LoadErrorKind::TooLarge => Some(
                "the file is damaged (a value that never ends) or not a trace vramscope reads"
                    .to_owned(),
            ),
            LoadErrorKind::Gzip(damage) => match &damage.problem {
                GzipProblem::TooLarge { .. } => Some(format!(
                    "if the file is genuine, raise the limit with {MAX_DECOMPRESSED_FLAG} SIZE \
                     (e.g. 64GiB, or unlimited)"
                )),
                GzipProblem::Truncated => Some(salvage_or(
                    "the file was cut off: copy or download it again",
                )),
                _ => Some(salvage_or("the file is damaged: copy or download it again")),
            },
            LoadErrorKind::SecondDocument { .. } => Some(format!(
                "vramscope reads one trace per file: split the file, or {SALVAGE_FLAG} reads \
                 the first document alone"
            )),
            LoadErrorKind::Io(_) | LoadErrorKind::Unrecognized(_) | LoadErrorKind::Shape(_) => None,
        }
    }
}

impl std::error::Error for LoadError {}
