//! A fast reader for the usual shape of a trace event, in front of serde.
//!
//! serde_json reads an event at about 200 MB/s, most of it spent skipping operator `args`
//! (shapes, strides, concrete inputs) that vramscope never uses. This reader takes the
//! common case: an object whose `ph`, `name` and `cat` are strings without escapes, whose
//! `pid`/`tid` are small integers or such strings, whose `ts`/`dur` are numbers, and whose
//! other values are any JSON. It validates everything it skips by the JSON grammar exactly as
//! serde_json does (strings without control characters and with valid escapes, numbers of
//! JSON's form, literals, nesting), and gives up — `None` — on anything else: escapes where a
//! string is kept, a duplicate field, `null`, numbers serde would turn into floats, nesting
//! deeper than [`scanner::MAX_DEPTH`], bytes that are not UTF-8, or the window ending mid-event. serde
//! then reads that event as before, so every result, skip count and error message is the one
//! serde alone gives; this reader only ever answers where serde would answer the same.

mod keys;
mod scanner;

use std::borrow::Cow;

use super::SEGMENT_EVENT;
use super::raw::{Args, Fields, Int, Micros, RawArgs, RawId};
use scanner::Scanner;

/// The event object at the start of `window` (after optional whitespace) and the number of
/// bytes it used; `None` to let serde read it.
pub(super) fn event(window: &[u8]) -> Option<(Fields<'_>, usize)> {
    let (spans, read, end) = scan(window, 0)?;
    Some((spans.fields(window, read.as_ref())?, end))
}

/// A value's place in the scanned buffer.
type Span = (u32, u32);

/// A pid/tid as found: an integer, or the span of a string's text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum IdAt {
    Int(i64),
    Text(Span),
}

/// Where an event's fields are in the buffer it was scanned from: what [`Fields`] borrows,
/// as offsets, so a worker thread can find them and another thread build the fields.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Spans {
    ph: Option<Span>,
    name: Option<Span>,
    cat: Option<Span>,
    pid: Option<IdAt>,
    tid: Option<IdAt>,
    ts: Option<Micros>,
    dur: Option<Micros>,
    args: Option<Span>,
}

/// Names of the events whose `args` the builder reads.
const ARGS_READ_FOR: [&[u8]; 4] = [
    b"[memory]",
    b"[OutOfMemory]",
    SEGMENT_EVENT.as_bytes(),
    b"thread_name",
];

impl Spans {
    /// The fields these spans give in `buf` (the buffer they were scanned from), with the
    /// `args` fields [`scan`] read, if it did.
    pub(super) fn fields<'a>(&self, buf: &'a [u8], read: Option<&ArgsAt>) -> Option<Fields<'a>> {
        let bytes = |s: Option<Span>| -> Option<Option<&'a [u8]>> {
            match s {
                Some((a, b)) => buf.get(a as usize..b as usize).map(Some),
                None => Some(None),
            }
        };
        let text = |s: Option<Span>| -> Option<Option<Cow<'a, str>>> {
            match bytes(s)? {
                Some(b) => std::str::from_utf8(b).ok().map(|t| Some(Cow::Borrowed(t))),
                None => Some(None),
            }
        };
        // `ph` and `cat` come from a small vocabulary: given as static text, they need no
        // UTF-8 check of their own (two of an event's three `from_utf8` calls, which took
        // ~3 % of `summary` on a trace dense in small memory events).
        let word = |s: Option<Span>| -> Option<Option<Cow<'a, str>>> {
            match bytes(s)?.map(|b| (known_word(b), b)) {
                Some((Some(w), _)) => Some(Some(Cow::Borrowed(w))),
                Some((None, b)) => std::str::from_utf8(b).ok().map(|t| Some(Cow::Borrowed(t))),
                None => Some(None),
            }
        };
        let id = |i: Option<IdAt>| -> Option<Option<RawId<'a>>> {
            match i {
                Some(IdAt::Int(v)) => Some(Some(RawId::Int(v))),
                Some(IdAt::Text(s)) => Some(text(Some(s))?.map(RawId::Text)),
                None => Some(None),
            }
        };
        let args = match (bytes(self.args)?, read) {
            (Some(raw), Some(read)) => Some(Args::Read(read.args(raw)?)),
            (raw, _) => raw.map(Args::Raw),
        };
        Some(Fields {
            ph: word(self.ph)?,
            name: text(self.name)?,
            cat: word(self.cat)?,
            pid: id(self.pid)?,
            tid: id(self.tid)?,
            ts: self.ts,
            dur: self.dur,
            args,
        })
    }
}

/// Every one-byte ASCII text, for a `ph` (`"X"`, `"i"`, …) taken as a slice of it.
const ASCII: &str = "\0\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\
    \x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f \
    !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\x7f";

/// The categories most events carry, matched by their bytes.
const USUAL_CATEGORIES: [&str; 6] = [
    "cpu_op",
    "cpu_instant_event",
    "kernel",
    "cuda_runtime",
    "python_function",
    "user_annotation",
];

/// `bytes` as static text where it is one ASCII byte or one of [`USUAL_CATEGORIES`].
fn known_word(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [b] if b.is_ascii() => ASCII.get(usize::from(*b)..usize::from(*b) + 1),
        _ => USUAL_CATEGORIES
            .iter()
            .find(|c| c.as_bytes() == bytes)
            .copied(),
    }
}

/// Scans the event object that starts at `buf[start..]` (after optional whitespace): the
/// spans of its fields, the memory/metadata fields of its `args` for the events whose `args`
/// the builder reads, and the offset just past it; `None` to let serde read it. Offsets
/// must fit `u32` (chunks and stream windows are far smaller).
pub(super) fn scan(buf: &[u8], start: usize) -> Option<(Spans, Option<ArgsAt>, usize)> {
    let mut s = Scanner::new(buf);
    s.pos = start;
    s.ws();
    let first = s.pos;
    let mut ev = Spans::default();
    let mut read = None;
    let mut read_in_place = false;
    s.fields(keys::event_key, |s, key| {
        Some(match key {
            b"ph" => set(&mut ev.ph, s.text_span()?, 1),
            b"name" => set(&mut ev.name, s.text_span()?, 2),
            b"cat" => set(&mut ev.cat, s.text_span()?, 4),
            b"pid" => set(&mut ev.pid, s.id()?, 8),
            b"tid" => set(&mut ev.tid, s.id()?, 16),
            b"ts" => set(&mut ev.ts, s.micros()?, 32),
            b"dur" => set(&mut ev.dur, s.micros()?, 64),
            b"args" => {
                let from = s.pos;
                // The name came first (as torch writes it): the args the builder reads are
                // read here, not skipped and then scanned again.
                read_in_place = args_read_for(s.buf, ev.name)?;
                if read_in_place {
                    read = read_args(s, from);
                }
                if read.is_none() {
                    s.pos = from;
                    s.skip(0)?;
                }
                set(&mut ev.args, span(from, s.pos)?, 128)
            }
            _ => {
                s.skip(0)?;
                0
            }
        })
    })?;
    if s.high && std::str::from_utf8(s.buf.get(first..s.pos)?).is_err() {
        return None;
    }
    if let (Some((from, to)), false) = (ev.args, read_in_place)
        && args_read_for(buf, ev.name)?
    {
        read = args_at(buf.get(from as usize..to as usize)?);
    }
    Some((ev, read, s.pos))
}

/// Whether the builder reads the `args` of an event of this name (none yet: no).
fn args_read_for(buf: &[u8], name: Option<Span>) -> Option<bool> {
    match name {
        Some((a, b)) => Some(ARGS_READ_FOR.contains(&buf.get(a as usize..b as usize)?)),
        None => Some(false),
    }
}

fn span(from: usize, to: usize) -> Option<Span> {
    Some((u32::try_from(from).ok()?, u32::try_from(to).ok()?))
}

/// The memory and metadata fields of an event's raw `args` (already valid JSON), or `None` to
/// let serde read them.
pub(super) fn args(raw: &[u8]) -> Option<RawArgs<'_>> {
    args_at(raw)?.args(raw)
}

/// [`RawArgs`] as found in the raw `args` text: the name as a span of it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct ArgsAt {
    bytes: Option<Int>,
    addr: Option<Int>,
    total_allocated: Option<Int>,
    total_reserved: Option<Int>,
    device_id: Option<Int>,
    device_type: Option<Int>,
    name: Option<Span>,
}

impl ArgsAt {
    /// The fields, given the `args` text they were found in.
    fn args<'a>(&self, raw: &'a [u8]) -> Option<RawArgs<'a>> {
        let name = match self.name {
            Some((a, b)) => Some(Cow::Borrowed(
                std::str::from_utf8(raw.get(a as usize..b as usize)?).ok()?,
            )),
            None => None,
        };
        Some(RawArgs {
            bytes: self.bytes,
            addr: self.addr,
            total_allocated: self.total_allocated,
            total_reserved: self.total_reserved,
            device_id: self.device_id,
            device_type: self.device_type,
            name,
        })
    }
}

fn args_at(raw: &[u8]) -> Option<ArgsAt> {
    let mut s = Scanner::new(raw);
    let args = read_args(&mut s, 0)?;
    // serde_json::from_str takes trailing whitespace only; `raw` has none.
    (s.pos == raw.len()).then_some(args)
}

/// The memory and metadata fields of the `args` object at the scanner, which starts at
/// `base` (the name's span is kept relative to it); `None` where [`args_at`] of the object's
/// text says `None`.
fn read_args(s: &mut Scanner<'_>, base: usize) -> Option<ArgsAt> {
    let mut args = ArgsAt::default();
    s.fields(
        |_| None,
        |s, key| {
            Some(match key {
                b"Bytes" => set(&mut args.bytes, s.int()?, 1),
                b"Addr" => set(&mut args.addr, s.int()?, 2),
                b"Total Allocated" => set(&mut args.total_allocated, s.int()?, 4),
                b"Total Reserved" => set(&mut args.total_reserved, s.int()?, 8),
                b"Device Id" => set(&mut args.device_id, s.int()?, 16),
                b"Device Type" => set(&mut args.device_type, s.int()?, 32),
                b"name" => {
                    let (a, b) = s.text_span()?;
                    let relative = span(
                        (a as usize).checked_sub(base)?,
                        (b as usize).checked_sub(base)?,
                    )?;
                    set(&mut args.name, relative, 64)
                }
                _ => {
                    s.skip(0)?;
                    0
                }
            })
        },
    )?;
    Some(args)
}

/// Stores a field's value and returns its bit in the seen-mask.
fn set<T>(field: &mut Option<T>, value: T, bit: u8) -> u8 {
    *field = Some(value);
    bit
}

#[cfg(test)]
mod tests;
