//! A streaming reader for one big JSON document made of many small values.
//!
//! Trace files are a top-level object (or array) around one huge array of small event
//! objects. This reader walks the top-level structure itself and hands each event's bytes
//! to serde_json's slice parser, so the whole file is never in memory (a window of about
//! [`READ_CHUNK_BYTES`] plus the largest single value) while each event still parses at
//! `from_slice` speed with borrowed strings. Every error carries the byte offset.

use std::io::{self, Read};

use super::input::{READ_CHUNK_BYTES, UTF8_BOM};
use surrogates::is_lone_surrogate;

/// Largest single JSON value (one event, or one top-level field) accepted. Real events are
/// a few KiB; this cap only stops a hostile file from making us buffer gigabytes.
pub const MAX_VALUE_BYTES: usize = 256 << 20;

/// Why a value could not be taken from the window.
pub enum ValueError {
    /// The value continues past the bytes available; read more and try again.
    NeedMore,
    /// The bytes are not valid JSON for what was expected.
    Json(serde_json::Error),
    /// Valid JSON, but not the shape expected; parsing cannot continue.
    Shape(String),
}

impl From<serde_json::Error> for ValueError {
    fn from(e: serde_json::Error) -> Self {
        if e.is_eof() {
            ValueError::NeedMore
        } else {
            ValueError::Json(e)
        }
    }
}

/// A failure of the stream itself, with the content offset where it happened.
#[derive(Debug)]
pub enum StreamError {
    /// Reading the underlying file or decoder failed.
    Io(io::Error, u64),
    /// The document ended inside a value or structure.
    Truncated { offset: u64, context: &'static str },
    /// Invalid syntax or an unexpected shape.
    Syntax { offset: u64, message: String },
    /// A single value larger than [`MAX_VALUE_BYTES`].
    TooLarge { offset: u64 },
}

/// A window over a JSON byte stream.
pub struct JsonStream<R> {
    reader: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    base: u64,
    eof: bool,
    /// A read error met while reading ahead ([`read_ahead`](Self::read_ahead)): returned by
    /// the next read that needs more bytes, so the bytes before it are used first.
    deferred: Option<io::Error>,
    /// Lone surrogate escapes read as `\ufffd` ([`surrogates::replace_lone_surrogates`]).
    pub surrogates_replaced: u64,
}

impl<R: Read> JsonStream<R> {
    /// Wrap a reader.
    pub fn new(reader: R) -> Self {
        JsonStream {
            reader,
            buf: vec![0; 2 * READ_CHUNK_BYTES],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            deferred: None,
            surrogates_replaced: 0,
        }
    }

    /// Content offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Read more bytes into the window, keeping the unread tail. Returns false at end of input.
    fn fill(&mut self) -> Result<bool, StreamError> {
        self.fill_at_most(usize::MAX)
    }

    /// [`fill`](Self::fill), reading at most `limit` bytes.
    fn fill_at_most(&mut self, limit: usize) -> Result<bool, StreamError> {
        if let Some(e) = self.deferred.take() {
            return Err(StreamError::Io(e, self.base + self.end as u64));
        }
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.buf.len() - self.end < READ_CHUNK_BYTES {
            if self.buf.len() >= MAX_VALUE_BYTES + READ_CHUNK_BYTES {
                return Err(StreamError::TooLarge {
                    offset: self.offset(),
                });
            }
            let grown = (self.buf.len() * 2).min(MAX_VALUE_BYTES + READ_CHUNK_BYTES);
            self.buf.resize(grown, 0);
        }
        let room = self.end + limit.min(self.buf.len() - self.end);
        loop {
            match self.reader.read(&mut self.buf[self.end..room]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(StreamError::Io(e, self.base + self.end as u64)),
            }
        }
    }

    /// The bytes read but not yet consumed.
    pub fn window(&self) -> &[u8] {
        self.buf.get(self.pos..self.end).unwrap_or_default()
    }

    /// Whether nothing more will be read (the input ended, or a read failed).
    pub fn at_end(&self) -> bool {
        self.eof || self.deferred.is_some()
    }

    /// Consume the first `n` bytes of the [`window`](Self::window).
    pub fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }

    /// Read until the window holds `want` bytes or the input ends, `want` bytes per read
    /// (or what the buffer has room for). A read error is kept
    /// for the next read that needs bytes, which reports it exactly as reading on demand
    /// would have (same offset): the bytes before it are used first.
    pub fn read_ahead(&mut self, want: usize) -> Result<(), StreamError> {
        while self.end - self.pos < want && !self.at_end() {
            // Each read asks for `want` bytes: reads of READ_CHUNK_BYTES or more go past the
            // input's BufReader instead of through it.
            match self.fill_at_most(want) {
                Ok(_) => {}
                Err(StreamError::Io(e, _)) => self.deferred = Some(e),
                Err(other) => return Err(other),
            }
        }
        Ok(())
    }

    /// Take the first `n` bytes of the window without copying them: the stream's buffer is
    /// returned (those bytes are `buffer[range]`) and `spare` (a buffer from an earlier
    /// call, or a new one) becomes the stream's, with the rest of the window copied in.
    pub fn take_front(
        &mut self,
        n: usize,
        mut spare: Vec<u8>,
    ) -> (Vec<u8>, std::ops::Range<usize>) {
        let n = n.min(self.end - self.pos);
        let rest = self.pos + n..self.end;
        // Room for one read without growing (see `fill`). A new buffer is calloc'ed: its
        // pages cost memory only once read into.
        let need = rest.len() + READ_CHUNK_BYTES;
        if spare.len() < need {
            spare = vec![0; need];
        }
        spare[..rest.len()].copy_from_slice(&self.buf[rest.clone()]);
        let taken = std::mem::replace(&mut self.buf, spare);
        let range = self.pos..self.pos + n;
        self.base += (self.pos + n) as u64;
        self.pos = 0;
        self.end = rest.len();
        (taken, range)
    }

    /// Put bytes consumed from the window back in front of it, in order: they must be
    /// exactly the bytes last consumed, so offsets stay right.
    pub fn unread(&mut self, parts: &[&[u8]]) {
        let unread: usize = parts.iter().map(|p| p.len()).sum();
        let window = self.end - self.pos;
        let mut buf = Vec::with_capacity((unread + window + READ_CHUNK_BYTES).max(self.buf.len()));
        for part in parts {
            buf.extend_from_slice(part);
        }
        buf.extend_from_slice(self.window());
        let end = buf.len();
        buf.resize(buf.capacity(), 0);
        self.base = (self.base + self.pos as u64).saturating_sub(unread as u64);
        self.buf = buf;
        self.pos = 0;
        self.end = end;
    }

    /// Skip a UTF-8 byte-order mark at the start of the document (editors on Windows
    /// write one); offsets still count it.
    pub fn skip_byte_order_mark(&mut self) -> Result<(), StreamError> {
        self.read_ahead(UTF8_BOM.len())?;
        if self.window().starts_with(UTF8_BOM) {
            self.consume(UTF8_BOM.len());
        }
        Ok(())
    }

    /// Consume everything to the end of the input, a window at a time; the end's offset.
    pub fn skip_to_end(&mut self) -> Result<u64, StreamError> {
        loop {
            self.pos = self.end;
            if !self.fill()? {
                return Ok(self.offset());
            }
        }
    }

    /// Skip whitespace and return the next byte without consuming it (`None` at end).
    pub fn peek(&mut self) -> Result<Option<u8>, StreamError> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                    self.pos += 1;
                } else {
                    return Ok(Some(b));
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Consume one byte (after [`peek`](Self::peek) returned it).
    pub fn bump(&mut self) {
        self.pos = (self.pos + 1).min(self.end);
    }

    /// Consume `want` or fail with a message naming what was expected.
    pub fn expect(&mut self, want: u8, context: &'static str) -> Result<(), StreamError> {
        match self.peek()? {
            Some(b) if b == want => {
                self.bump();
                Ok(())
            }
            Some(b) => Err(StreamError::Syntax {
                offset: self.offset(),
                message: format!(
                    "expected '{}' {context}, found {}",
                    want as char,
                    describe_byte(b)
                ),
            }),
            None => Err(StreamError::Truncated {
                offset: self.offset(),
                context,
            }),
        }
    }

    /// Parse the next value with `parse`, which gets the unread window and returns its
    /// output and the number of bytes the value used. `parse` may run more than once when
    /// the value straddles the window's end; it succeeds (and may commit) only once for an
    /// object, array or string, and is idempotent-safe for scalars.
    pub fn value<O>(
        &mut self,
        context: &'static str,
        mut parse: impl FnMut(&[u8]) -> Result<(O, usize), ValueError>,
    ) -> Result<O, StreamError> {
        let Some(first) = self.peek()? else {
            return Err(StreamError::Truncated {
                offset: self.offset(),
                context,
            });
        };
        // Objects, arrays and strings end with their own delimiter; a scalar that ends
        // exactly at the window's end may be a number cut in two, so it is read again.
        let self_delimiting = matches!(first, b'{' | b'[' | b'"');
        let mut retried_at: Option<u64> = None;
        loop {
            let window = &self.buf[self.pos..self.end];
            let outcome = parse(window);
            match outcome {
                Ok((out, used)) if self_delimiting || used < window.len() || self.eof => {
                    self.pos += used;
                    return Ok(out);
                }
                Ok(_) | Err(ValueError::NeedMore) => {
                    if !self.fill()? {
                        // One last try with everything there is.
                        let window = &self.buf[self.pos..self.end];
                        return match parse(window) {
                            Ok((out, used)) => {
                                self.pos += used;
                                Ok(out)
                            }
                            Err(ValueError::Shape(message)) => Err(StreamError::Syntax {
                                offset: self.offset(),
                                message,
                            }),
                            Err(ValueError::Json(e)) => Err(self.json_error(&e)),
                            Err(ValueError::NeedMore) => Err(StreamError::Truncated {
                                offset: self.base + self.end as u64,
                                context,
                            }),
                        };
                    }
                }
                // serde_json calls a number cut by the window's end ("0.0|40") invalid
                // rather than incomplete, so an error is only believed once more input
                // leaves it where it was.
                // A lone surrogate escape, as Python writes: read again as U+FFFD.
                Err(ValueError::Json(e)) if is_lone_surrogate(&e) && self.repair_surrogates() => {}
                Err(ValueError::Json(e)) => {
                    let error = self.json_error(&e);
                    let at = match &error {
                        StreamError::Syntax { offset, .. } => *offset,
                        _ => u64::MAX,
                    };
                    if retried_at == Some(at) || !self.fill()? {
                        return Err(self.json_error(&e));
                    }
                    retried_at = Some(at);
                }
                Err(ValueError::Shape(message)) => {
                    return Err(StreamError::Syntax {
                        offset: self.offset(),
                        message,
                    });
                }
            }
        }
    }

    /// Turn a serde_json error inside the window into one with an absolute byte offset.
    fn json_error(&self, e: &serde_json::Error) -> StreamError {
        let window = &self.buf[self.pos..self.end];
        let rel = line_col_to_offset(window, e.line(), e.column());
        let mut message = e.to_string();
        // serde_json appends " at line L column C", which is relative to the window.
        if let Some(cut) = message.find(" at line ") {
            message.truncate(cut);
        }
        StreamError::Syntax {
            offset: self.offset() + rel as u64,
            message,
        }
    }
}

/// Byte offset of a 1-based line/column position in `bytes`.
fn line_col_to_offset(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut offset = 0;
    for _ in 1..line {
        match memchr_newline(&bytes[offset..]) {
            Some(i) => offset += i + 1,
            None => return bytes.len(),
        }
    }
    (offset + column.saturating_sub(1)).min(bytes.len())
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// A readable description of an unexpected byte.
pub fn describe_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Parse one JSON value of type `T` from the start of `window` (leading whitespace allowed).
pub fn parse_one<'de, T: serde::Deserialize<'de>>(
    window: &'de [u8],
) -> Result<(T, usize), ValueError> {
    let mut values = serde_json::Deserializer::from_slice(window).into_iter::<T>();
    match values.next() {
        Some(Ok(v)) => Ok((v, values.byte_offset())),
        Some(Err(e)) => Err(e.into()),
        None => Err(ValueError::NeedMore),
    }
}

mod surrogates;
#[cfg(test)]
mod tests;
