//! Chrome traces in the importer seam: recognised as a JSON document (object or bare
//! event array), read by [`super::read`], its errors placed in the content.

use super::{TraceError, read};
use crate::model::Recording;
use crate::parse::importer::{Detection, Importer, ReadContext, first_token};
use crate::parse::input::Input;
use crate::parse::json_stream::StreamError;
use crate::parse::{LoadErrorKind, SourceError};

/// Chrome traces in the importer seam: a JSON document (object or bare event array).
pub struct ChromeTraceImporter;

impl Importer for ChromeTraceImporter {
    fn detect(&self, head: &[u8]) -> Detection {
        match first_token(head).and_then(|t| t.first()) {
            Some(b'{' | b'[') => Detection::Likely,
            _ => Detection::No,
        }
    }

    fn read(&self, input: Input, context: &ReadContext<'_>) -> Result<Recording, SourceError> {
        // A gzip reader's error is its symptom here: the loader names the damage itself.
        read(input, context.options, context.progress.preview.as_ref()).map_err(|e| {
            let (kind, offset) = match e {
                TraceError::Stream(StreamError::Io(io_err, offset)) => {
                    (LoadErrorKind::Io(io_err), Some(offset))
                }
                TraceError::Stream(StreamError::Truncated { offset, context }) => (
                    LoadErrorKind::Truncated(format!("inside {context}")),
                    Some(offset),
                ),
                TraceError::Stream(StreamError::Syntax { offset, message }) => {
                    (LoadErrorKind::Syntax(message), Some(offset))
                }
                TraceError::Stream(StreamError::TooLarge { offset }) => {
                    (LoadErrorKind::TooLarge, Some(offset))
                }
                TraceError::TruncatedOutsideEvents { offset, context } => (
                    LoadErrorKind::TruncatedOutsideEvents(format!("inside {context}")),
                    Some(offset),
                ),
                TraceError::Shape { offset, message } => {
                    (LoadErrorKind::Shape(message), Some(offset))
                }
                TraceError::SecondDocument { offset, first_end } => {
                    let second_start = offset;
                    let kind = LoadErrorKind::SecondDocument {
                        first_end,
                        second_start,
                    };
                    (kind, None)
                }
            };
            SourceError { offset, kind }
        })
    }

    fn file_extensions(&self) -> &'static [&'static str] {
        &["json", "json.gz"]
    }

    fn memory_hint(&self) -> &'static str {
        "profile with torch.profiler.profile(profile_memory=True)"
    }
}
