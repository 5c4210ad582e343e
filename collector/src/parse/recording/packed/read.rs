//! Reading a packed recording: a second thread inflates and parses the lines while the
//! caller's applies them in order, each column record decoded as it comes.

use std::io::BufRead;

use super::super::reader::read_line;
use super::lines::{DeviceLine, EndLine, StackLine, ThreadLine};
use super::{PackInfo, PackLine, decode, references};
use crate::model::Recording;
use crate::parse::{LoadErrorKind, LoadOptions, SourceError, SpanFilter};

/// Lines parsed ahead of the one being applied. Each is at most one record of
/// [`super::EVENTS_PER_LINE`] events (~0.5 MiB decoded), so this bounds the read-ahead to a few MiB.
const LINES_AHEAD: usize = 4;

/// One line as the parsing thread read it, in file order: its length, and the record or
/// the error.
type Parsed = Result<(usize, Result<PackLine, serde_json::Error>), SourceError>;

/// Read the lines after a packed header into `rec` (which holds the header's facts). A
/// second thread inflates and parses the lines (half of a pack's reading) while this one
/// applies them, strictly in order; the first error stops both, at its line's offset.
pub(in crate::parse::recording) fn read_body(
    reader: &mut (impl BufRead + Send),
    rec: &mut Recording,
    info: PackInfo,
    offset: u64,
    options: LoadOptions,
) -> Result<(), SourceError> {
    let (lines, parsed) = crossbeam_channel::bounded::<Parsed>(LINES_AHEAD);
    std::thread::scope(|scope| {
        let decoder = TextDecoder {
            spans: options.spans,
            selected: false,
            ops_seen: false,
        };
        scope.spawn(move || parse_lines(reader, offset, decoder, &lines));
        let applied = apply_lines(&parsed, rec, info, offset, options);
        // Before the scope waits for the parsing thread: its next send fails and it stops
        // (were it still held, a thread blocked on a full channel would wait for ever).
        drop(parsed);
        applied
    })
}

/// Read and parse lines from `offset` until the end, an error, or the receiver is gone.
fn parse_lines(
    reader: &mut impl BufRead,
    mut offset: u64,
    mut decoder: TextDecoder,
    lines: &crossbeam_channel::Sender<Parsed>,
) {
    let mut buf = Vec::new();
    loop {
        let (line, n) = match read_line(reader, &mut buf, offset) {
            Ok(0) => return,
            Ok(n) => match decoder.counted(&buf) {
                Some(count) => (Ok((n, Ok(PackLine::OpsCounted(count)))), n),
                None => match serde_json::from_slice(&buf).map(|l| decoder.decode(l)) {
                    Ok(Err(why)) => (Err(SourceError::shape(Some(offset), why)), n),
                    Ok(Ok(line)) => (Ok((n, Ok(line))), n),
                    Err(e) => (Ok((n, Err(e))), n),
                },
            },
            Err(e) => (Err(e), 0),
        };
        let stop = !matches!(line, Ok((_, Ok(_))));
        if lines.send(line).is_err() || stop {
            return;
        }
        offset += n as u64;
    }
}

/// What the parsing thread does to each record before handing it over: text columns
/// decoded beside the parsing; for `summary`, a usable stored selection of spans decoded and
/// every `ops` record after it only counted.
struct TextDecoder {
    spans: SpanFilter,
    /// A selection was taken: spans are counted, not decoded.
    selected: bool,
    /// An `ops` record was seen (a selection must come before them all).
    ops_seen: bool,
}

impl TextDecoder {
    /// After a selection: the count of an `ops_vlq` record, read from the line's start
    /// (`pack` writes the count first) without parsing the columns it will not decode.
    /// `None` for any other line, which is parsed.
    fn counted(&self, line: &[u8]) -> Option<usize> {
        const START: &[u8] = b"{\"ops_vlq\":{\"n\":";
        if !self.selected || !line.ends_with(b"}}\n") {
            return None;
        }
        let rest = line.strip_prefix(START)?;
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if rest.get(digits) != Some(&b',') {
            return None;
        }
        std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
    }

    fn decode(&mut self, line: PackLine) -> Result<PackLine, String> {
        Ok(match line {
            PackLine::MemVlq(text) => PackLine::Mem(text.into_columns()?),
            PackLine::OpsVlq(text) if self.selected => PackLine::OpsCounted(text.count()),
            PackLine::Ops(cols) if self.selected => PackLine::OpsCounted(cols.n.len()),
            PackLine::OpsVlq(text) => {
                self.ops_seen = true;
                PackLine::Ops(text.into_columns()?)
            }
            PackLine::Ops(cols) => {
                self.ops_seen = true;
                PackLine::Ops(cols)
            }
            PackLine::SummarySpans(_) if self.selected || self.ops_seen => {
                return Err("a summary_spans record after the ops or a second one".into());
            }
            PackLine::SummarySpans(s) if s.usable(self.spans) => {
                self.selected = true;
                PackLine::Selected(s.into_selection()?)
            }
            other => other,
        })
    }
}

/// Apply the parsed lines in order, then check the end record.
fn apply_lines(
    parsed: &crossbeam_channel::Receiver<Parsed>,
    rec: &mut Recording,
    info: PackInfo,
    mut offset: u64,
    options: LoadOptions,
) -> Result<(), SourceError> {
    let mut state = decode::Decoder::default();
    let mut end = None;
    for line in parsed {
        let (n, line) = line?;
        let bad = |message: String| SourceError::shape(Some(offset), message);
        if end.is_some() {
            return Err(bad(
                "a packed recording continues after its end record".into()
            ));
        }
        let parsed: PackLine = match line {
            Ok(l) => l,
            Err(e) if e.is_eof() => {
                if options.salvage_truncated {
                    rec.diagnostics.truncated_at = Some(offset);
                    break;
                }
                return Err(SourceError {
                    offset: Some(offset),
                    kind: LoadErrorKind::Truncated("inside a packed record".into()),
                });
            }
            Err(e) => {
                return Err(SourceError {
                    offset: Some(offset),
                    kind: LoadErrorKind::Syntax(format!("bad packed record: {e}")),
                });
            }
        };
        if let PackLine::End(e) = parsed {
            end = Some(e);
        } else {
            apply(parsed, rec, &mut state, options.spans).map_err(bad)?;
        }
        offset += n as u64;
    }
    finish(rec, end, &info, (offset, state.ops_read), options)
}

/// Add one record (any but the end record) to `rec`.
fn apply(
    line: PackLine,
    rec: &mut Recording,
    state: &mut decode::Decoder,
    spans: SpanFilter,
) -> Result<(), String> {
    match line {
        PackLine::Meta(m) => m.apply(rec)?,
        PackLine::Selected(s) => {
            decode::Decoder::default().ops(s.ops, rec, SpanFilter::All)?;
            rec.meta.spans_left_out = s.left_out;
            rec.meta.memory_events_in_ops = Some(s.in_ops);
        }
        PackLine::OpsCounted(n) => state.ops_read += n,
        PackLine::Strings(strings) => add_strings(rec, &strings)?,
        PackLine::Devices(devices) => {
            rec.devices = devices.into_iter().map(DeviceLine::into_info).collect()
        }
        PackLine::Threads(threads) => {
            rec.threads = threads.into_iter().map(ThreadLine::into_info).collect()
        }
        PackLine::Stacks(stacks) => rec
            .stacks
            .extend(stacks.into_iter().map(StackLine::into_frames)),
        PackLine::Mem(cols) => state.mem(cols, &mut rec.mem_events)?,
        PackLine::Ops(cols) => state.ops(cols, rec, spans)?,
        PackLine::Steps(steps) => {
            rec.steps
                .extend(steps.into_iter().map(|[n, s, e]| crate::model::StepMarker {
                    number: n,
                    start_ns: s,
                    end_ns: e,
                }))
        }
        PackLine::Allocator(a) => rec.allocator = Some(a.into_state()),
        PackLine::Segments(segments) => {
            let state = rec
                .allocator
                .as_mut()
                .ok_or_else(|| "segments before the allocator record".to_string())?;
            for s in segments {
                state.segments.push(s.into_segment()?);
            }
        }
        PackLine::History(line) => super::history::absorb(rec, line)?,
        PackLine::Ooms(ooms) => {
            rec.oom_details.extend(
                ooms.into_iter()
                    .map(|(event, free)| crate::model::OomDetail {
                        event,
                        device_free_bytes: free,
                    }),
            )
        }
        PackLine::GpuSamples(cols) => state.gpu(cols, &mut rec.gpu_samples)?,
        PackLine::HostSamples(cols) => state.host(cols, &mut rec.host_samples)?,
        PackLine::GpuProcessSamples(cols) => {
            state.gpu_process(cols, &mut rec.gpu_process_samples)?
        }
        PackLine::StorageTags(tags) => {
            for t in tags {
                rec.storage_tags.push(t.into_tag()?);
            }
        }
        // Decoded into `Mem` and `Ops` on the parsing thread; the table and summary are for
        // `table` and `summary` (`stored`); a selection this read does not use is skipped.
        PackLine::End(_)
        | PackLine::MemVlq(_)
        | PackLine::OpsVlq(_)
        | PackLine::Table(_)
        | PackLine::Summary(_)
        | PackLine::SummarySpans(_) => {}
    }
    Ok(())
}

/// Intern a `strings` record's strings, each new (string ids are their order).
fn add_strings(rec: &mut Recording, strings: &[String]) -> Result<(), String> {
    for s in strings {
        let before = rec.strings.len();
        if rec.strings.intern(s).0 as usize != before {
            return Err(format!("string {s:?} is packed twice"));
        }
    }
    Ok(())
}

/// After the last line: the end record's counts checked (or a pack cut short salvaged),
/// every index checked, and the pack noted in the properties.
fn finish(
    rec: &mut Recording,
    end: Option<EndLine>,
    info: &PackInfo,
    (offset, ops_read): (u64, usize),
    options: LoadOptions,
) -> Result<(), SourceError> {
    match end {
        Some(e) => e
            .verify(rec, ops_read)
            .map_err(|m| SourceError::shape(Some(offset), m))?,
        None if options.salvage_truncated => {
            rec.diagnostics
                .note("packed recording cut short: kept the records before the cut");
        }
        None => {
            return Err(SourceError {
                offset: Some(offset),
                kind: LoadErrorKind::Truncated("a packed recording without its end record".into()),
            });
        }
    }
    references::check_references(rec).map_err(|m| SourceError::shape(None, m))?;
    rec.meta
        .properties
        .insert("vramscope_pack".into(), pack_note(info));
    Ok(())
}

/// What a read of the pack `info` describes says of it (`summary`'s `packed`).
pub(super) fn pack_note(info: &PackInfo) -> String {
    let mut note = String::from("packed by vramscope");
    if let Some(name) = &info.source_name {
        note = format!("{note} from {name}");
    }
    if info.redacted_paths {
        note.push_str(", user paths redacted");
    }
    note
}
