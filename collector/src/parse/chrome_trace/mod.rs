//! PyTorch profiler Chrome traces (Kineto JSON), every era from torch 1.8 to 2.x.
//!
//! The top-level object's keys may come in any order and `traceEvents` may be anywhere;
//! a bare event array is accepted too (and, as the Chrome format allows, without its
//! closing bracket). Events stream through [`JsonStream`]; only what the model needs is
//! kept. Era differences handled here: legacy (1.8/1.9) memory events without `Addr`,
//! totals or `cat`, string-vs-int thread ids, integer absolute µs (≤ 1.13) vs decimal µs
//! relative to `baseTimeNanoseconds` (2.x), HIP (`Device Type` 6) on ROCm.

mod builder;
mod fast;
mod importer;
mod one;
mod parallel;
mod raw;
mod trailing;

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::LoadOptions;
use super::input::Input;
use super::json_stream::{JsonStream, StreamError, parse_one};
use super::preview::Preview;
use crate::model::Recording;
use builder::Builder;
pub use importer::ChromeTraceImporter;

/// The instant event vramscope's Perfetto export writes for an allocator segment
/// (cudaMalloc/cudaFree of the caching allocator's reserve), which torch's traces have no
/// event for: `[memory]`'s args, `Bytes` negative for a release. Read back as segment events.
pub const SEGMENT_EVENT: &str = "[segment]";

/// Failure reading a Chrome trace.
#[derive(Debug)]
pub enum TraceError {
    /// The byte stream failed (I/O, syntax, truncation).
    Stream(StreamError),
    /// The JSON is fine but is not a trace.
    Shape { offset: u64, message: String },
    /// The document ends early outside the event array (salvage keeps events only).
    TruncatedOutsideEvents { offset: u64, context: &'static str },
    /// A second JSON document starts at `offset`, after the trace's ended at `first_end`.
    SecondDocument { offset: u64, first_end: u64 },
}

impl From<StreamError> for TraceError {
    fn from(e: StreamError) -> Self {
        TraceError::Stream(e)
    }
}

/// Read a Chrome trace from an opened input, adding its memory events to `preview` as
/// they come.
pub fn read(
    input: Input,
    options: LoadOptions,
    preview: Option<&Arc<Preview>>,
) -> Result<Recording, TraceError> {
    let config = parallel::Config::for_this_machine();
    read_with(input, options, config, preview.cloned())
}

/// [`read`], with the event array split up as `parallel` says (`None`: on this thread).
fn read_with(
    input: Input,
    options: LoadOptions,
    parallel: Option<parallel::Config>,
    preview: Option<Arc<Preview>>,
) -> Result<Recording, TraceError> {
    let compressed = input.compressed;
    let mut stream = JsonStream::new(input.reader);
    let mut builder = Builder::new(options.spans);
    builder.preview = preview;
    let outcome = read_document(&mut stream, &mut builder, parallel);
    if stream.surrogates_replaced > 0 {
        builder.diagnostics.note_n(
            "lone surrogate escapes (\\udcff: bytes Python could not decode) read as U+FFFD",
            stream.surrogates_replaced,
        );
    }
    match outcome {
        Ok(()) => trailing::after_document(&mut stream, &mut builder, options)?,
        Err(Cut {
            error,
            in_events: true,
        }) if options.salvage_truncated && salvageable(&error) => {
            builder.diagnostics.truncated_at = Some(stream.offset());
        }
        Err(Cut {
            error: TraceError::Stream(StreamError::Truncated { offset, context }),
            in_events: false,
        }) => return Err(TraceError::TruncatedOutsideEvents { offset, context }),
        Err(Cut { error, .. }) => return Err(error),
    }
    let content_bytes = stream.offset();
    Ok(builder.finish(compressed, content_bytes))
}

fn salvageable(error: &TraceError) -> bool {
    matches!(
        error,
        TraceError::Stream(StreamError::Truncated { .. } | StreamError::Io(..))
            | TraceError::Stream(StreamError::Syntax { .. })
    )
}

/// An error, and whether it happened inside the event array (where salvage can keep the rest).
struct Cut {
    error: TraceError,
    in_events: bool,
}

fn outside(error: impl Into<TraceError>) -> Cut {
    Cut {
        error: error.into(),
        in_events: false,
    }
}

fn read_document<R: Read>(
    stream: &mut JsonStream<R>,
    b: &mut Builder,
    parallel: Option<parallel::Config>,
) -> Result<(), Cut> {
    stream.skip_byte_order_mark().map_err(outside)?;
    let saw_events = match stream.peek().map_err(outside)? {
        Some(b'[') => {
            read_event_array(stream, b, true, parallel)?;
            true
        }
        Some(b'{') => read_top_level_object(stream, b, parallel)?,
        Some(other) => {
            return Err(outside(TraceError::Shape {
                offset: stream.offset(),
                message: format!(
                    "not a trace: expected a JSON object or array, found {}",
                    super::json_stream::describe_byte(other)
                ),
            }));
        }
        None => {
            return Err(outside(TraceError::Shape {
                offset: 0,
                message: "the file is empty".into(),
            }));
        }
    };
    if !saw_events {
        return Err(outside(TraceError::Shape {
            offset: 0,
            message: "not a PyTorch profiler trace: the JSON object has no \"traceEvents\" array"
                .into(),
        }));
    }
    Ok(())
}

/// The members of the top-level object after its `{`: `traceEvents` read as the event
/// array, every other member handed to the builder. Returns whether `traceEvents` was
/// among them.
fn read_top_level_object<R: Read>(
    stream: &mut JsonStream<R>,
    b: &mut Builder,
    parallel: Option<parallel::Config>,
) -> Result<bool, Cut> {
    let mut saw_events = false;
    stream.bump();
    let mut first = true;
    loop {
        match stream.peek().map_err(outside)? {
            Some(b'}') if first => {
                stream.bump();
                break;
            }
            None => {
                return Err(outside(StreamError::Truncated {
                    offset: stream.offset(),
                    context: "the top-level object",
                }));
            }
            _ => {}
        }
        first = false;
        let key: String = stream
            .value("a top-level key", |w| {
                parse_one::<Cow<'_, str>>(w).map(|(k, n)| (k.into_owned(), n))
            })
            .map_err(outside)?;
        stream
            .expect(b':', "after a top-level key")
            .map_err(outside)?;
        if key == "traceEvents" {
            if saw_events {
                b.forget_events();
            }
            read_event_array(stream, b, false, parallel)?;
            saw_events = true;
        } else {
            stream
                .value("a top-level value", |w| {
                    let (raw, n) = parse_one::<&RawValue>(w)?;
                    b.top_level(&key, raw);
                    Ok(((), n))
                })
                .map_err(outside)?;
        }
        match stream.peek().map_err(outside)? {
            Some(b',') => stream.bump(),
            Some(b'}') => {
                stream.bump();
                break;
            }
            Some(other) => {
                return Err(outside(StreamError::Syntax {
                    offset: stream.offset(),
                    message: format!(
                        "expected ',' or '}}' in the top-level object, found {}",
                        super::json_stream::describe_byte(other)
                    ),
                }));
            }
            None => {
                return Err(outside(StreamError::Truncated {
                    offset: stream.offset(),
                    context: "the top-level object",
                }));
            }
        }
    }
    Ok(saw_events)
}

fn read_event_array<R: Read>(
    stream: &mut JsonStream<R>,
    b: &mut Builder,
    bare: bool,
    parallel: Option<parallel::Config>,
) -> Result<(), Cut> {
    match stream.peek().map_err(outside)? {
        Some(b'[') => stream.bump(),
        Some(other) => {
            return Err(outside(TraceError::Shape {
                offset: stream.offset(),
                message: format!(
                    "\"traceEvents\" is not an array (found {})",
                    super::json_stream::describe_byte(other)
                ),
            }));
        }
        None => {
            return Err(outside(StreamError::Truncated {
                offset: stream.offset(),
                context: "traceEvents",
            }));
        }
    }
    if stream.peek().map_err(inside)? == Some(b']') {
        stream.bump();
        return Ok(());
    }
    read_events(stream, b, bare, parallel)
}

/// Read the events of the array (just past its `[`, which is not empty), on worker threads
/// when `parallel` says how and the input is large enough to pay for them.
fn read_events<R: Read>(
    stream: &mut JsonStream<R>,
    b: &mut Builder,
    bare: bool,
    parallel: Option<parallel::Config>,
) -> Result<(), Cut> {
    let Some(config) = parallel else {
        return read_serially(stream, b, bare, u64::MAX).map(drop);
    };
    stream.read_ahead(2 * config.chunk_bytes).map_err(inside)?;
    if stream.at_end() && stream.window().len() < 2 * config.chunk_bytes {
        return read_serially(stream, b, bare, u64::MAX).map(drop);
    }
    std::thread::scope(|scope| {
        let Some(mut pool) = parallel::Pool::start(scope, config) else {
            return read_serially(stream, b, bare, u64::MAX).map(drop);
        };
        loop {
            let handover = pool.run(stream, b).map_err(inside)?;
            // A trailing comma before the end of a bare array.
            if handover.consumed && bare && stream.peek().map_err(inside)?.is_none() {
                b.diagnostics
                    .note("event array without its closing ']' (allowed by the Chrome format)");
                return Ok(());
            }
            if read_serially(stream, b, bare, handover.until)? == Step::Done {
                return Ok(());
            }
        }
    })
}

/// Whether the event array goes on.
#[derive(PartialEq)]
enum Step {
    More,
    Done,
}

/// Read events one at a time until the array ends or the stream is at or past `until`.
fn read_serially<R: Read>(
    stream: &mut JsonStream<R>,
    b: &mut Builder,
    bare: bool,
    until: u64,
) -> Result<Step, Cut> {
    loop {
        if read_step(stream, b, bare)? == Step::Done {
            return Ok(Step::Done);
        }
        if stream.offset() >= until {
            return Ok(Step::More);
        }
    }
}

fn inside(error: StreamError) -> Cut {
    Cut {
        error: error.into(),
        in_events: true,
    }
}

/// One event and what follows it: a comma, or the end of the array.
fn read_step<R: Read>(
    stream: &mut JsonStream<R>,
    b: &mut Builder,
    bare: bool,
) -> Result<Step, Cut> {
    stream
        .value("a trace event", |w| one::read_one(b, w))
        .map_err(inside)?;
    match stream.peek().map_err(inside)? {
        Some(b',') => stream.bump(),
        Some(b']') => {
            stream.bump();
            return Ok(Step::Done);
        }
        // The Chrome "JSON Array Format" allows the closing bracket to be missing.
        None if bare => {
            b.diagnostics
                .note("event array without its closing ']' (allowed by the Chrome format)");
            return Ok(Step::Done);
        }
        None => {
            return Err(inside(StreamError::Truncated {
                offset: stream.offset(),
                context: "traceEvents",
            }));
        }
        Some(other) => {
            return Err(inside(StreamError::Syntax {
                offset: stream.offset(),
                message: format!(
                    "expected ',' or ']' between trace events, found {}",
                    super::json_stream::describe_byte(other)
                ),
            }));
        }
    }
    // A trailing comma before the end of a bare array.
    if bare && stream.peek().map_err(inside)?.is_none() {
        b.diagnostics
            .note("event array without its closing ']' (allowed by the Chrome format)");
        return Ok(Step::Done);
    }
    Ok(Step::More)
}

#[cfg(test)]
mod tests;
