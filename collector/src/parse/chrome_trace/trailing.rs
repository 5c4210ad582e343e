//! What follows a trace's JSON document: nothing but whitespace, normally.

use std::io::Read;

use super::TraceError;
use super::builder::Builder;
use crate::parse::LoadOptions;
use crate::parse::json_stream::JsonStream;

/// After the document: whitespace, or bytes that are not part of it. A second JSON document
/// (a file made by `cat a.json b.json`) is an error — reading the first alone would answer
/// for part of the runs without saying so — unless salvage asks for the first alone; other
/// bytes (padding, a stray line) are a warning with their count and offset. Read to the end
/// either way, so a gzip file's last member is checked.
pub(super) fn after_document<R: Read>(
    stream: &mut JsonStream<R>,
    b: &mut Builder,
    options: LoadOptions,
) -> Result<(), TraceError> {
    let end = stream.offset();
    let Some(first) = stream.peek()? else {
        return Ok(());
    };
    if matches!(first, b'{' | b'[') && !options.salvage_truncated {
        return Err(TraceError::SecondDocument {
            offset: stream.offset(),
            first_end: end,
        });
    }
    let file_end = stream.skip_to_end()?;
    let what = format!(
        "bytes after the end of the JSON document at byte {} ignored",
        crate::units::group_thousands(end)
    );
    b.diagnostics.note_n(&what, file_end.saturating_sub(end));
    Ok(())
}
