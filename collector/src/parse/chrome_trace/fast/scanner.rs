//! The JSON lexer under the fast reader: skips and validates values by the JSON grammar
//! exactly as serde_json does, and reads the few kinds of value the fast reader keeps.

use super::{IdAt, Span, span};
use crate::parse::chrome_trace::raw::{Int, Micros};
use crate::parse::decimal::PLAIN_INTEGER_DIGITS;

/// Nesting inside one event deeper than this is left to serde (real events nest 3 deep).
pub(super) const MAX_DEPTH: u32 = 64;

/// Digits of an integer that surely fits `i64` (and `u64` with one more).
const I64_DIGITS: usize = 18;
const U64_DIGITS: usize = 19;

pub(super) struct Scanner<'a> {
    pub(super) buf: &'a [u8],
    pub(super) pos: usize,
    /// A byte ≥ 0x80 was seen (in a string): the event is checked as UTF-8 at the end.
    pub(super) high: bool,
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
    pub(super) fn new(buf: &'a [u8]) -> Self {
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
    /// skips. A field given twice is serde's "duplicate field" error: `None`. `known` may
    /// recognise a key, quotes included, in the word where it starts (see [`event_key`](super::keys::event_key)):
    /// its text and quoted length, read as [`Scanner::plain_string`] would read them.
    // Inlined into its two callers, as when they shared a module: out of line it costs
    // about 2 % more instructions per trace (cachegrind, 200 MB trace).
    #[inline]
    pub(super) fn fields(
        &mut self,
        known: impl Fn(u64) -> Option<(&'static [u8], usize)>,
        mut value: impl FnMut(&mut Self, &[u8]) -> Option<u8>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(());
        }
        let mut seen = 0u8;
        loop {
            let key = match self.word().and_then(&known) {
                Some((key, quoted_len)) => {
                    self.pos += quoted_len;
                    key
                }
                None => self.plain_string()?,
            };
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

    /// The eight bytes from here on as a little-endian word (the byte here lowest).
    fn word(&self) -> Option<u64> {
        let bytes: [u8; 8] = self.buf.get(self.pos..self.pos + 8)?.try_into().ok()?;
        Some(u64::from_le_bytes(bytes))
    }

    /// JSON whitespace, as serde_json takes it.
    pub(super) fn ws(&mut self) {
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
    pub(super) fn plain_string(&mut self) -> Option<&'a [u8]> {
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
    pub(super) fn text_span(&mut self) -> Option<Span> {
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
    pub(super) fn number(&mut self) -> Option<&'a [u8]> {
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

    /// A `ts` or `dur`: a number of JSON's form, read as [`Micros::of`] reads its text. The
    /// usual form (at most [`PLAIN_INTEGER_DIGITS`] integer digits, up to three after the
    /// point, no exponent) is valued in the same pass that checks it; any other is read
    /// again by [`Micros::of`]. (Reading the text twice more, for its point and its value,
    /// was a tenth of the scan.)
    pub(super) fn micros(&mut self) -> Option<Micros> {
        let start = self.pos;
        let negative = self.peek()? == b'-';
        self.pos += usize::from(negative);
        let (mut ns, int_digits) = self.value_digits();
        let mut frac_digits = 0;
        let fractional = self.peek() == Some(b'.');
        if fractional {
            self.pos += 1;
            let (frac, digits) = self.value_digits();
            (ns, frac_digits) = (ns.wrapping_mul(pow10(digits)).wrapping_add(frac), digits);
        }
        let plain = int_digits <= PLAIN_INTEGER_DIGITS
            && frac_digits <= 3
            && !matches!(self.peek(), Some(b'e' | b'E'));
        let leading_zero =
            int_digits > 1 && self.buf.get(start + usize::from(negative)) == Some(&b'0');
        if !plain || leading_zero || int_digits == 0 || (fractional && frac_digits == 0) {
            self.pos = start;
            return self.number().map(Micros::of);
        }
        let ns = ns * pow10(3 - frac_digits);
        Some(Micros {
            ns: Some(if negative { -ns } else { ns }),
            fractional,
        })
    }

    /// The digits from here on: their value (wrapping; meaningful up to 18 digits) and count.
    fn value_digits(&mut self) -> (i64, usize) {
        let start = self.pos;
        let mut value = 0i64;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            value = value.wrapping_mul(10).wrapping_add(i64::from(d - b'0'));
            self.pos += 1;
        }
        (value, self.pos - start)
    }

    /// An integer serde reads as `u64` or `i64` without rounding: up to `max_digits`
    /// (at most [`U64_DIGITS`]) digits, no fraction or exponent, no leading zero, not `-0`
    /// (which serde makes a float). Checked and valued in one pass: every other text,
    /// JSON number or not, is `None` here (as it was when [`Scanner::number`] checked the
    /// form first and the digits were valued after; the memory events' six integers made
    /// that second pass ~4 % of a memory-dense trace's scan).
    pub(super) fn integer(&mut self, max_digits: usize) -> Option<i128> {
        let negative = self.peek()? == b'-';
        self.pos += usize::from(negative);
        let first = self.peek();
        let start = self.pos;
        let mut value = 0u64;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            value = value.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
            self.pos += 1;
        }
        let digits = self.pos - start;
        if digits == 0
            || digits > max_digits.min(U64_DIGITS)
            || (digits > 1 && first == Some(b'0'))
            || matches!(self.peek(), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        match (negative, i128::from(value)) {
            (true, 0) => None,
            (true, v) => Some(-v),
            (false, v) => Some(v),
        }
    }

    /// A pid/tid: an integer or a string without escapes.
    pub(super) fn id(&mut self) -> Option<IdAt> {
        if self.peek()? == b'"' {
            return self.text_span().map(IdAt::Text);
        }
        let value = self.integer(I64_DIGITS)?;
        i64::try_from(value).ok().map(IdAt::Int)
    }

    /// An integer argument (`Bytes`, `Addr`, ...).
    pub(super) fn int(&mut self) -> Option<Int> {
        let negative = self.peek()? == b'-';
        let max = if negative { I64_DIGITS } else { U64_DIGITS };
        self.integer(max).map(Int)
    }

    /// Any JSON value, checked as serde_json's `ignore_value` checks it.
    pub(super) fn skip(&mut self, depth: u32) -> Option<()> {
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

/// 10^`exp` for the exponents [`Scanner::micros`] uses (at most 3 once checked); wrapping.
fn pow10(exp: usize) -> i64 {
    (0..exp).fold(1i64, |p, _| p.wrapping_mul(10))
}
