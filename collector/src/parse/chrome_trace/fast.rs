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
//! deeper than [`MAX_DEPTH`], bytes that are not UTF-8, or the window ending mid-event. serde
//! then reads that event as before, so every result, skip count and error message is the one
//! serde alone gives; this reader only ever answers where serde would answer the same.

use std::borrow::Cow;

use super::raw::{Args, Fields, Int, Micros, RawArgs, RawId};

/// Nesting inside one event deeper than this is left to serde (real events nest 3 deep).
const MAX_DEPTH: u32 = 64;

/// Digits of an integer that surely fits `i64` (and `u64` with one more).
const I64_DIGITS: usize = 18;
const U64_DIGITS: usize = 19;

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
const ARGS_READ_FOR: [&[u8]; 3] = [b"[memory]", b"[OutOfMemory]", b"thread_name"];

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
            ph: text(self.ph)?,
            name: text(self.name)?,
            cat: text(self.cat)?,
            pid: id(self.pid)?,
            tid: id(self.tid)?,
            ts: self.ts,
            dur: self.dur,
            args,
        })
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
    s.fields(|s, key| {
        Some(match key {
            b"ph" => set(&mut ev.ph, s.text_span()?, 1),
            b"name" => set(&mut ev.name, s.text_span()?, 2),
            b"cat" => set(&mut ev.cat, s.text_span()?, 4),
            b"pid" => set(&mut ev.pid, s.id()?, 8),
            b"tid" => set(&mut ev.tid, s.id()?, 16),
            b"ts" => set(&mut ev.ts, Micros::of(s.number()?), 32),
            b"dur" => set(&mut ev.dur, Micros::of(s.number()?), 64),
            b"args" => {
                let from = s.pos;
                s.skip(0)?;
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
    let mut read = None;
    if let (Some((a, b)), Some((from, to))) = (ev.name, ev.args)
        && ARGS_READ_FOR.contains(&buf.get(a as usize..b as usize)?)
    {
        read = args_at(buf.get(from as usize..to as usize)?);
    }
    Some((ev, read, s.pos))
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
    let mut args = ArgsAt::default();
    s.fields(|s, key| {
        Some(match key {
            b"Bytes" => set(&mut args.bytes, s.int()?, 1),
            b"Addr" => set(&mut args.addr, s.int()?, 2),
            b"Total Allocated" => set(&mut args.total_allocated, s.int()?, 4),
            b"Total Reserved" => set(&mut args.total_reserved, s.int()?, 8),
            b"Device Id" => set(&mut args.device_id, s.int()?, 16),
            b"Device Type" => set(&mut args.device_type, s.int()?, 32),
            b"name" => set(&mut args.name, s.text_span()?, 64),
            _ => {
                s.skip(0)?;
                0
            }
        })
    })?;
    // serde_json::from_str takes trailing whitespace only; `raw` has none.
    (s.pos == raw.len()).then_some(args)
}

/// Stores a field's value and returns its bit in the seen-mask.
fn set<T>(field: &mut Option<T>, value: T, bit: u8) -> u8 {
    *field = Some(value);
    bit
}

struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    /// A byte ≥ 0x80 was seen (in a string): the event is checked as UTF-8 at the end.
    high: bool,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is `"`, `\` or a control character (< 0x20).
/// Only the lowest flagged byte is exact (borrows may flag bytes above it), which is all
/// the caller uses (Mycroft's zero-byte test, as serde_json's `skip_to_escape`).
fn specials(word: u64) -> u64 {
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    (control | quote | backslash) & HIGH_BITS
}

impl<'a> Scanner<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Scanner {
            buf,
            pos: 0,
            high: false,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// An object whose keys are strings without escapes: `value` reads the value of each key
    /// (the scanner is just past its colon) and returns the field's bit, 0 for a field it
    /// skips. A field given twice is serde's "duplicate field" error: `None`.
    fn fields(&mut self, mut value: impl FnMut(&mut Self, &[u8]) -> Option<u8>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(());
        }
        let mut seen = 0u8;
        loop {
            let key = self.plain_string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let bit = value(self, key)?;
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// JSON whitespace, as serde_json takes it.
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    /// From inside a string, the position of its next `"`, `\` or control character.
    fn find_special(&mut self) -> Option<usize> {
        let mut i = self.pos;
        while let Some(chunk) = self.buf.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().ok()?);
            self.high |= word & HIGH_BITS != 0;
            let found = specials(word);
            if found != 0 {
                return Some(i + (found.trailing_zeros() / 8) as usize);
            }
            i += 8;
        }
        while let Some(&b) = self.buf.get(i) {
            if b == b'"' || b == b'\\' || b < 0x20 {
                return Some(i);
            }
            self.high |= b >= 0x80;
            i += 1;
        }
        None
    }

    /// A string without escapes; its bytes between the quotes.
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.pos;
        let end = self.find_special()?;
        if self.buf.get(end) != Some(&b'"') {
            return None;
        }
        self.pos = end + 1;
        self.buf.get(start..end)
    }

    /// Where a string without escapes has its text.
    fn text_span(&mut self) -> Option<Span> {
        self.eat(b'"')?;
        let start = self.pos;
        let end = self.find_special()?;
        if self.buf.get(end) != Some(&b'"') {
            return None;
        }
        self.pos = end + 1;
        span(start, end)
    }

    /// Any string, escapes checked as serde_json's `ignore_str` checks them.
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            self.pos = self.find_special()?;
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        let hex = self.buf.get(self.pos..self.pos + 4)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        self.pos += 4;
                    }
                    _ => return None,
                },
                _ => return None, // a control character
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number of JSON's form (`-`, no leading zeros, fraction, exponent); its text.
    fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.pos;
        if self.peek()? == b'-' {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        // A digit right after a lone leading zero is serde's "invalid number".
        if let Some(b'0'..=b'9') = self.peek() {
            return None;
        }
        self.buf.get(start..self.pos)
    }

    /// An integer serde reads as `u64` or `i64` without rounding: up to `max_digits`
    /// digits, no fraction or exponent, not `-0` (which serde makes a float).
    fn integer(&mut self, max_digits: usize) -> Option<i128> {
        let text = self.number()?;
        let (negative, digits) = match text.split_first()? {
            (b'-', rest) => (true, rest),
            _ => (false, text),
        };
        if digits.len() > max_digits || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let value = digits
            .iter()
            .fold(0i128, |v, &d| v * 10 + i128::from(d - b'0'));
        match (negative, value) {
            (true, 0) => None,
            (true, v) => Some(-v),
            (false, v) => Some(v),
        }
    }

    /// A pid/tid: an integer or a string without escapes.
    fn id(&mut self) -> Option<IdAt> {
        if self.peek()? == b'"' {
            return self.text_span().map(IdAt::Text);
        }
        let value = self.integer(I64_DIGITS)?;
        i64::try_from(value).ok().map(IdAt::Int)
    }

    /// An integer argument (`Bytes`, `Addr`, ...).
    fn int(&mut self) -> Option<Int> {
        let negative = self.peek()? == b'-';
        let max = if negative { I64_DIGITS } else { U64_DIGITS };
        self.integer(max).map(Int)
    }

    /// Any JSON value, checked as serde_json's `ignore_value` checks it.
    fn skip(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.pos += 1;
                self.ws();
                if self.peek()? == b'}' {
                    self.pos += 1;
                    return Some(());
                }
                loop {
                    if self.peek()? != b'"' {
                        return None;
                    }
                    self.skip_string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.skip(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.pos += 1;
                self.ws();
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.pos + word.len();
        if self.buf.get(self.pos..end)? != word {
            return None;
        }
        self.pos = end;
        Some(())
    }
}

#[cfg(test)]
mod tests;
