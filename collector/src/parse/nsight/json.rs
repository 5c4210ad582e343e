//! `nsys export --type json`: one JSON object per line, streamed (files reach gigabytes).
//!
//! Seen in real 2022.4 exports: 64-bit integers are JSON strings and may be negative or
//! above `i64::MAX`; names are ids into a string table that is either one big
//! `{"data":[...]}` line or, with `--separate-strings=true`, `{"type":"String",...}` lines;
//! thread names come last. The string table may come before or after the events, so
//! records that need a name are kept with their string id and named at the end.
//! CUDA records (`CudaEvent`) were not in any real sample: kernels and memory-usage rows
//! are recognised by their field names (see `docs/NSIGHT.md`).

mod cuda;
mod records;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::de::IgnoredAny;

use super::builder::Builder;
use super::{GlobalId, event_class, event_type, qualified_nvtx_name};
use crate::model::{OpCategory, Recording, SourceFormat, ThreadIdx};
use crate::parse::input::Input;
use crate::parse::json_stream::{JsonStream, StreamError, ValueError, parse_one};
use crate::parse::{LoadErrorKind, LoadOptions, SourceError};
use records::{DataItem, DataList, Num, NvtxBody, Record, TraceBody};

/// A name: inline text, or an id into the string table that may not have been read yet.
enum NameRef {
    Text(String),
    Id(u64),
}

/// A span waiting for the string table.
struct PendingSpan {
    name: NameRef,
    /// (pid, domain id) of an NVTX range, for the `domain:` prefix.
    domain: Option<(u64, i64)>,
    category: OpCategory,
    thread: ThreadIdx,
    start_ns: i64,
    end_ns: Option<i64>,
}

/// Everything kept between records.
#[derive(Default)]
struct Reader {
    strings: FxHashMap<u64, Box<str>>,
    spans: Vec<PendingSpan>,
    domains: FxHashMap<(u64, i64), String>,
    thread_names: Vec<(GlobalId, u64)>,
    /// Records that are nsys records (events, strings, thread names, streams).
    recognized: u64,
    /// Records of the kinds the SQLite reader reads rows of — NVTX events, CUDA API calls,
    /// CUDA activity (kernels, copies, memory) — so both exports of a run count the same
    /// `events` (a JSON export also holds OS-runtime, scheduling and process records).
    events: u64,
    separate_strings: bool,
    first_unknown: Option<String>,
    not_read: BTreeMap<i128, u64>,
    counts: BTreeMap<&'static str, u64>,
}

/// Read an export from an opened input.
pub fn read(input: Input, options: LoadOptions) -> Result<Recording, SourceError> {
    let compressed = input.compressed;
    let mut stream = JsonStream::new(input.reader);
    stream
        .skip_byte_order_mark()
        .map_err(|e| stream_error(e, 1))?;
    let mut reader = Reader::default();
    let mut b = Builder::new(SourceFormat::NsightJson, "", 0);
    let mut record = 0u64;
    loop {
        let outcome = match stream.peek() {
            Ok(None) => break,
            Ok(Some(_)) => {
                record += 1;
                stream.value("an nsys export record", |w| {
                    match parse_one::<Record<'_>>(w) {
                        Ok((r, n)) => {
                            reader.add(r, &mut b);
                            Ok((false, n))
                        }
                        // Valid JSON of another shape: skip that record, count it, go on.
                        Err(ValueError::Json(j))
                            if j.classify() == serde_json::error::Category::Data =>
                        {
                            parse_one::<IgnoredAny>(w).map(|(_, n)| (true, n))
                        }
                        Err(e) => Err(e),
                    }
                })
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(false) => {}
            Ok(true) => b.note("records with unexpected field types skipped"),
            Err(StreamError::Truncated { offset, .. }) if options.salvage_truncated => {
                b.note("the last record was cut off; the complete records before it were read");
                b.events_read = reader.events;
                let mut rec = reader.finish(b, compressed, offset);
                rec.diagnostics.truncated_at = Some(offset);
                return Ok(rec);
            }
            Err(e) => return Err(stream_error(e, record)),
        }
    }
    b.events_read = reader.events;
    if reader.recognized == 0 {
        let what = reader.first_unknown.take().unwrap_or_else(|| match record {
            0 => "the file has no records".into(),
            n => format!("none of its {n} records has an nsys shape"),
        });
        return Err(SourceError::shape(
            Some(0),
            format!(
                "newline-delimited JSON, but not an nsys export: no NVTX, CUDA, String or \
                 ThreadName records ({what})"
            ),
        ));
    }
    Ok(reader.finish(b, compressed, stream.offset()))
}

/// A stream failure as a source error naming the record (nsys writes one per line).
fn stream_error(e: StreamError, record: u64) -> SourceError {
    let (offset, kind) = match e {
        StreamError::Io(io, offset) => (offset, LoadErrorKind::Io(io)),
        StreamError::Truncated { offset, context } => (
            offset,
            LoadErrorKind::Truncated(format!("inside {context} {record}")),
        ),
        StreamError::Syntax { offset, message } => (
            offset,
            LoadErrorKind::Syntax(format!(
                "{message} in record {record} (line {record} of an nsys export)"
            )),
        ),
        StreamError::TooLarge { offset } => (offset, LoadErrorKind::TooLarge),
    };
    SourceError {
        offset: Some(offset),
        kind,
    }
}

impl Reader {
    fn add(&mut self, r: Record<'_>, b: &mut Builder) {
        if let Some(items) = r.data {
            self.recognized += 1;
            self.data_line(items);
            return;
        }
        if let Some(kind) = r.record_type.as_deref() {
            match kind {
                "String" => {
                    self.separate_strings = true;
                    if let (Some(id), Some(v)) = (r.id.and_then(Num::u64), r.value) {
                        self.strings.insert(id, v.into());
                    }
                }
                "ThreadName" => {
                    if let (Some(g), Some(id)) = (
                        r.global_tid.and_then(Num::u64),
                        r.name_id.and_then(Num::u64),
                    ) {
                        self.thread_names.push((GlobalId(g), id));
                    }
                }
                "Stream" => {}
                other => {
                    self.first_unknown
                        .get_or_insert_with(|| format!("first record has type \"{other}\""));
                    return;
                }
            }
            self.recognized += 1;
            return;
        }
        let Some(t) = r.event_type.or(r.nvtx.as_ref().and_then(|n| n.event_type)) else {
            self.first_unknown
                .get_or_insert_with(|| "first record has no Type, type or data key".into());
            return;
        };
        self.recognized += 1;
        let (read, counted) = if let Some(n) = r.nvtx {
            (self.nvtx(t, n, b), true)
        } else if let Some(tp) = r.trace {
            // Trace-process events are CUDA API calls and OS-runtime calls: only the first
            // are rows the SQLite reader reads.
            let read = self.api_call(tp, b);
            (read, read)
        } else if let Some(c) = r.cuda {
            (self.cuda(&c, b), true)
        } else {
            (false, false)
        };
        if counted {
            self.events += 1;
        }
        if !read {
            *self.not_read.entry(t.0).or_default() += 1;
        }
    }

    fn data_line(&mut self, items: DataList) {
        // A string's id is its position in the array.
        for (i, item) in items.0.into_iter().enumerate() {
            match item {
                DataItem::Text(s) => {
                    self.strings.insert(i as u64, s.into());
                }
                DataItem::ThreadName {
                    name_idx,
                    global_tid,
                } => {
                    if let (Some(g), Some(id)) = (global_tid.u64(), name_idx.u64()) {
                        self.thread_names.push((GlobalId(g), id));
                    }
                }
                DataItem::Other(_) => {}
            }
        }
    }

    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }

    /// An `NvtxEvent`; returns whether it was used.
    fn nvtx(&mut self, t: Num, n: NvtxBody<'_>, b: &mut Builder) -> bool {
        let t = t.i64().unwrap_or(-1);
        let gid = n.global_tid.and_then(Num::u64).map(GlobalId);
        let domain = n.domain_id.and_then(Num::i64);
        let name = match (n.text, n.text_id.and_then(Num::u64)) {
            (Some(text), _) => Some(NameRef::Text(text.into_owned())),
            (None, Some(id)) => Some(NameRef::Id(id)),
            (None, None) => None,
        };
        if t == event_type::NVTX_DOMAIN_CREATE {
            if let (Some(g), Some(d), Some(NameRef::Text(text))) = (gid, domain, name) {
                self.domains.insert((g.pid(), d), text);
            }
            return true;
        }
        if t == event_type::NVTX_MARK {
            self.count("nvtx_marks");
            return true;
        }
        if t != event_type::NVTX_PUSH_POP_RANGE && t != event_type::NVTX_START_END_RANGE {
            return false;
        }
        let (Some(start_ns), Some(g)) = (n.timestamp.and_then(Num::i64), gid) else {
            b.note("NVTX ranges without a start or thread skipped");
            return true;
        };
        let Some(name) = name else {
            b.note("NVTX ranges without a name skipped");
            return true;
        };
        self.count("nvtx_ranges");
        let thread = b.thread(g);
        self.spans.push(PendingSpan {
            name,
            domain: domain.map(|d| (g.pid(), d)),
            category: OpCategory::Nvtx,
            thread,
            start_ns,
            end_ns: n.end_timestamp.and_then(Num::i64),
        });
        true
    }

    /// A `TraceProcessEvent`: CUDA runtime and driver calls are read, OS runtime is not.
    fn api_call(&mut self, tp: TraceBody, b: &mut Builder) -> bool {
        let category = match tp.event_class.and_then(Num::i64) {
            Some(event_class::CUDA_RUNTIME) => OpCategory::Runtime,
            Some(event_class::CUDA_DRIVER) => OpCategory::Driver,
            _ => return false,
        };
        let (Some(start_ns), Some(g)) = (
            tp.start_ns.and_then(Num::i64),
            tp.global_tid.and_then(Num::u64),
        ) else {
            b.note("CUDA API calls without a start or thread skipped");
            return true;
        };
        self.count("cuda_api_calls");
        let gid = GlobalId(g);
        if let Some(c) = tp.correlation_id.and_then(Num::u64) {
            b.api_call(gid, c);
        }
        let thread = b.thread(gid);
        let name = match tp.name.and_then(Num::u64) {
            Some(id) => NameRef::Id(id),
            None => NameRef::Text("[unnamed CUDA API call]".into()),
        };
        self.spans.push(PendingSpan {
            name,
            domain: None,
            category,
            thread,
            start_ns,
            end_ns: tp.end_ns.and_then(Num::i64),
        });
        true
    }

    /// Name the kept spans and threads and build the recording.
    fn finish(self, mut b: Builder, compressed: bool, content_bytes: u64) -> Recording {
        let Reader {
            strings,
            spans,
            domains,
            thread_names,
            separate_strings,
            not_read,
            counts,
            ..
        } = self;
        let lookup = |id: u64| strings.get(&id).map(|s| s.to_string());
        for (gid, id) in thread_names {
            if let Some(name) = lookup(id) {
                b.name_thread(gid, &name);
            }
        }
        for s in spans {
            let text = match s.name {
                NameRef::Text(t) => t,
                NameRef::Id(id) => lookup(id).unwrap_or_else(|| {
                    b.note("names missing from the string table (shown as [string N])");
                    format!("[string {id}]")
                }),
            };
            let domain = s.domain.and_then(|d| domains.get(&d)).map(String::as_str);
            let name = match s.category {
                OpCategory::Nvtx => qualified_nvtx_name(domain, &text),
                _ => text,
            };
            b.span(&name, s.category, s.thread, s.start_ns, s.end_ns);
        }
        b.set_era(if separate_strings {
            "Nsight Systems JSON export (--separate-strings)".into()
        } else {
            "Nsight Systems JSON export (string table line)".into()
        });
        b.property(
            "time_base",
            "ns relative to the session start (JSON exports do not record it)",
        );
        for (k, v) in counts {
            b.property(k, v.to_string());
        }
        if !not_read.is_empty() {
            let list: Vec<String> = not_read
                .iter()
                .map(|(t, n)| format!("Type {t} ×{n}"))
                .collect();
            b.property("json_records_not_read", list.join(", "));
        }
        b.finish(compressed, content_bytes)
    }
}

#[cfg(test)]
mod tests;
