//! Numbers, strings and bytes (binary and protocol-0 text forms), and framing.

use std::io::Read;

use super::arena::Slot;
use super::errors::shown;
use super::opcodes as op;
use super::reader::{FALSE_ID, Parser, Res, SMALL_INTS, TRUE_ID};
use super::shared::Lookup;
use super::{Fold, NodeId};

impl<R: Read, F: Fold> Parser<R, F> {
    /// `BININT1`, `BININT2`, `BININT`, `BINFLOAT`: fixed-width numbers.
    pub(super) fn binary_scalar(&mut self, code: u8) -> Res<()> {
        match code {
            op::BININT1 => {
                let small = self.array::<1>()?[0];
                self.push_id(NodeId(SMALL_INTS + u32::from(small)))
            }
            op::BININT2 => {
                let int = u16::from_le_bytes(self.array()?);
                self.push_int(int.into())
            }
            op::BININT => {
                let int = i32::from_le_bytes(self.array()?);
                self.push_int(int.into())
            }
            _ => {
                let float = f64::from_be_bytes(self.array()?);
                self.push(Slot::Float(float))
            }
        }
    }

    // ---- Scalars ----

    pub(super) fn binary_long(&mut self, width: usize) -> Res<()> {
        let n = if width == 1 {
            usize::from(self.array::<1>()?[0])
        } else {
            self.signed_length()?
        };
        let range = self.take(n)?;
        match int_from_le(self.bytes_at(range)) {
            Some(int) => self.push_wide_int(int),
            None => Err(self.too_wide()),
        }
    }

    /// `INT` and `LONG`: decimal text; `INT` `00`/`01` are protocol 0's `False`/`True`.
    pub(super) fn text_int(&mut self) -> Res<()> {
        let line = self.line()?;
        let line = line.as_slice();
        match (self.op, line) {
            (op::INT, b"00") => return self.push_id(FALSE_ID),
            (op::INT, b"01") => return self.push_id(TRUE_ID),
            _ => {}
        }
        let digits = line.strip_suffix(b"L").unwrap_or(line);
        let text = std::str::from_utf8(digits).unwrap_or_default().trim();
        if let Ok(i) = text.parse::<i64>() {
            return self.push_int(i);
        }
        match text.parse::<i128>() {
            Ok(i) => self.push_wide_int(i),
            Err(_) if is_decimal(text) => Err(self.too_wide()),
            Err(_) => Err(self.malformed(format!(
                "has an integer that is not decimal: {}",
                shown(line)
            ))),
        }
    }

    pub(super) fn text_float(&mut self) -> Res<()> {
        let line = self.line()?;
        let line = line.as_slice();
        let text = std::str::from_utf8(line).unwrap_or_default().trim();
        match text.parse::<f64>() {
            Ok(f) => self.push(Slot::Float(f)),
            Err(_) => {
                Err(self.malformed(format!("has a float that is not a number: {}", shown(line))))
            }
        }
    }

    pub(super) fn unicode(&mut self, width: usize) -> Res<()> {
        let n = self.length(width)?;
        let range = self.take(n)?;
        let bytes = self.data.get(range).unwrap_or_default();
        let (slot, hash) = {
            // Borrowed when valid UTF-8 (a snapshot's strings all are; `from_utf8` checks
            // that faster than `from_utf8_lossy`).
            let text = match std::str::from_utf8(bytes) {
                Ok(text) => std::borrow::Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(bytes),
            };
            match self.shared.find(&self.p, &text) {
                Lookup::Found(id) => (Err(id), None),
                Lookup::New(hash) => (Ok(self.p.add_str(&text)), Some(hash)),
                Lookup::Unshared => (Ok(self.p.add_str(&text)), None),
            }
        };
        match slot {
            Err(id) => return self.repush(id),
            Ok(slot) => self.push_added(slot)?,
        }
        if let (Some(hash), Some(&id)) = (hash, self.stack.last()) {
            self.shared.remember(hash, id);
        }
        Ok(())
    }

    pub(super) fn bytes(&mut self, width: usize) -> Res<()> {
        let n = self.length(width)?;
        let range = self.take(n)?;
        let slot = self.p.add_bytes(self.data.get(range).unwrap_or_default());
        self.push_added(slot)
    }

    /// `SHORT_BINSTRING`, `BINSTRING`: a Python 2 `str`.
    pub(super) fn binary_string(&mut self, width: usize) -> Res<()> {
        let n = if width == 1 {
            self.length(1)?
        } else {
            self.signed_length()?
        };
        let range = self.take(n)?;
        let slot = self.p.add_legacy(self.data.get(range).unwrap_or_default());
        self.push_added(slot)
    }

    /// `STRING`: a Python 2 `str` as a quoted, backslash-escaped literal.
    pub(super) fn quoted_string(&mut self) -> Res<()> {
        let line = self.line()?;
        let line = line.as_slice();
        let inner = match line {
            [q @ (b'\'' | b'"'), inner @ .., end] if q == end => inner,
            _ => {
                return Err(self.malformed(format!(
                    "has an argument that is not quoted: {}",
                    shown(line)
                )));
            }
        };
        match escape_decode(inner) {
            Ok(bytes) => self.push_legacy(&bytes),
            Err(why) => Err(self.malformed(format!("has an argument with {why}"))),
        }
    }

    // ---- Framing ----

    pub(super) fn proto(&mut self) -> Res<()> {
        let version = self.array::<1>()?[0];
        if (2..=5).contains(&version) {
            return Ok(());
        }
        Err(self.unsupported(format!(
            "pickle protocol {version}: this reader takes protocols 2 to 5 (allocator \
             snapshots are written with 4, or 5 from Python 3.14)"
        )))
    }

    /// `FRAME` only announces how many bytes the next opcodes take; the opcodes are read as
    /// usual. The length is checked so a cut file is reported at once.
    pub(super) fn frame(&mut self) -> Res<()> {
        let claimed = u64::from_le_bytes(self.array()?);
        self.checked_length(claimed).map(|_| ())
    }
}

/// A little-endian two's-complement integer (`LONG1`, `LONG4`); `None` past 128 bits.
pub(super) fn int_from_le(bytes: &[u8]) -> Option<i128> {
    let mut bytes = bytes;
    // Python writes the shortest form; drop redundant sign bytes of a longer one.
    while bytes.len() > 16 {
        let (&last, rest) = bytes.split_last()?;
        let below_negative = rest.last().is_some_and(|b| b & 0x80 != 0);
        if (last == 0 && !below_negative) || (last == 0xff && below_negative) {
            bytes = rest;
        } else {
            return None;
        }
    }
    let negative = bytes.last().is_some_and(|b| b & 0x80 != 0);
    let mut wide = if negative { [0xff; 16] } else { [0; 16] };
    wide.get_mut(..bytes.len())?.copy_from_slice(bytes);
    Some(i128::from_le_bytes(wide))
}

/// Whether `text` is an optionally signed run of decimal digits.
pub(super) fn is_decimal(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Python's `codecs.escape_decode`, for the `STRING` opcode's quoted literal.
pub(super) fn escape_decode(text: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some((&b, after)) = rest.split_first() {
        rest = after;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some((&e, after)) = rest.split_first() else {
            return Err("a trailing backslash");
        };
        rest = after;
        let simple = match e {
            b'\\' | b'\'' | b'"' => Some(e),
            b'a' => Some(7),
            b'b' => Some(8),
            b't' => Some(9),
            b'n' => Some(10),
            b'v' => Some(11),
            b'f' => Some(12),
            b'r' => Some(13),
            _ => None,
        };
        if let Some(byte) = simple {
            out.push(byte);
        } else if e.is_ascii_digit() && e < b'8' {
            let mut value = u32::from(e - b'0');
            for _ in 0..2 {
                match rest.split_first() {
                    Some((&d @ b'0'..=b'7', after)) => {
                        value = value * 8 + u32::from(d - b'0');
                        rest = after;
                    }
                    _ => break,
                }
            }
            out.push((value & 0xff) as u8);
        } else if e == b'x' {
            let hex = rest.get(..2).and_then(|h| std::str::from_utf8(h).ok());
            let Some(byte) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) else {
                return Err("an invalid \\x escape");
            };
            out.push(byte);
            rest = rest.get(2..).unwrap_or_default();
        } else {
            out.extend([b'\\', e]); // Python keeps unknown escapes as they are
        }
    }
    Ok(out)
}

/// Python's `raw-unicode-escape` decoding, for the `UNICODE` opcode: bytes are Latin-1
/// characters, except `\uXXXX` and `\UXXXXXXXX`.
pub(super) fn raw_unicode_escape(line: &[u8]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some((&b, after)) = rest.split_first() {
        let digits = match after.first() {
            Some(b'u') if b == b'\\' => 4,
            Some(b'U') if b == b'\\' => 8,
            _ => 0,
        };
        let hex = after
            .get(1..1 + digits)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u32::from_str_radix(h, 16).ok()) {
            Some(code) if digits > 0 => {
                out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                rest = after.get(1 + digits..).unwrap_or_default();
            }
            _ => {
                out.push(char::from(b));
                rest = after;
            }
        }
    }
    out
}
