//! Input data reaches the terminal: op names, file names, frames and settings come from the
//! files vramscope reads, and a crafted trace could carry escape sequences that move the
//! cursor, recolour, rewrite a line with `\r`, or fake an `ok:` line of `check`. Every byte
//! vramscope writes to stdout passes [`ControlEscaper`], and error lines [`escape_controls`]:
//! C0 controls but newline and tab, DEL and the C1 controls become visible `\u001b` text —
//! JSON's own escape, so JSON output stays valid and reads back the same string (serde_json
//! already escapes C0 controls in strings; DEL and C1 it leaves raw, and they get escaped here).

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether a character is shown escaped: a control but the line breaks we write ourselves.
fn escaped(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `s` with its control characters (but newline and tab) written as `\uXXXX`.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(escaped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escaped(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// An input name on one line of text output: a newline in it (which the writer lets
/// through, since vramscope's own lines need it) is shown as `\n`, so a name cannot start a
/// line of its own.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if s.contains('\n') {
        Cow::Owned(s.replace('\n', "\\n"))
    } else {
        Cow::Borrowed(s)
    }
}

/// A writer that escapes control bytes on their way through: C0 but `\n` and `\t`, DEL,
/// and the two-byte UTF-8 forms of the C1 controls (U+0080–U+009F), even when a write
/// splits one.
pub struct ControlEscaper<W: Write> {
    inner: W,
    /// A 0xC2 lead byte at the end of the last write, waiting for its second byte.
    pending_lead: bool,
    /// Whether [`Paint`](super::style::Paint) spans are coloured.
    colour: bool,
}

impl<W: Write> ControlEscaper<W> {
    /// Escape what goes to `inner`.
    pub fn new(inner: W) -> ControlEscaper<W> {
        ControlEscaper {
            inner,
            pending_lead: false,
            colour: false,
        }
    }

    /// Colour [`Paint`](super::style::Paint) spans (or not).
    pub fn with_colour(mut self, on: bool) -> ControlEscaper<W> {
        self.colour = on;
        self
    }

    /// Whether painted spans are coloured.
    pub fn colour(&self) -> bool {
        self.colour
    }

    /// Write our own bytes (a style's escapes) to the terminal unescaped, after any byte
    /// still held back.
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        if std::mem::take(&mut self.pending_lead) {
            self.inner.write_all(&[0xC2])?;
        }
        self.inner.write_all(bytes)
    }

    /// The writer underneath.
    #[cfg(test)]
    pub fn into_inner(self) -> W {
        self.inner
    }

    fn escape(&mut self, code: u8) -> io::Result<()> {
        write!(self.inner, "\\u{code:04x}")
    }
}

/// The second byte of a C1 control's UTF-8 form (after 0xC2).
fn is_c1_tail(b: u8) -> bool {
    (0x80..=0x9F).contains(&b)
}

impl<W: Write> Write for ControlEscaper<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        let mut i = 0;
        if std::mem::take(&mut self.pending_lead) {
            match buf.first() {
                Some(&b) if is_c1_tail(b) => {
                    self.escape(b)?;
                    (start, i) = (1, 1);
                }
                _ => self.inner.write_all(&[0xC2])?,
            }
        }
        while i < buf.len() {
            let b = buf[i];
            let control = (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7F;
            if control {
                self.inner.write_all(&buf[start..i])?;
                self.escape(b)?;
                i += 1;
                start = i;
            } else if b == 0xC2 {
                match buf.get(i + 1) {
                    Some(&tail) if is_c1_tail(tail) => {
                        self.inner.write_all(&buf[start..i])?;
                        self.escape(tail)?;
                        i += 2;
                        start = i;
                    }
                    Some(_) => i += 1,
                    None => {
                        self.inner.write_all(&buf[start..i])?;
                        self.pending_lead = true;
                        i += 1;
                        start = i;
                    }
                }
            } else {
                i += 1;
            }
        }
        self.inner.write_all(&buf[start..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.pending_lead) {
            self.inner.write_all(&[0xC2])?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(parts: &[&[u8]]) -> String {
        let mut out = ControlEscaper::new(Vec::new());
        for p in parts {
            out.write_all(p).expect("write");
        }
        out.flush().expect("flush");
        String::from_utf8(out.inner).expect("UTF-8")
    }

    #[test]
    fn controls_become_visible_and_text_passes() {
        assert_eq!(through(&[b"ok: fine\n\tnext"]), "ok: fine\n\tnext");
        assert_eq!(
            through(&["aten::mm\x1b[2J\rok: \u{9b}31m\x7f".as_bytes()]),
            "aten::mm\\u001b[2J\\u000dok: \\u009b31m\\u007f"
        );
        // A C1 control split over two writes, and a 0xC2 lead of a printable character.
        let csi = "\u{9b}".as_bytes();
        assert_eq!(
            through(&[&csi[..1], &csi[1..], "é ©".as_bytes()]),
            "\\u009bé ©"
        );
        assert_eq!(through(&["\u{a9}".as_bytes()]), "©");
        assert_eq!(escape_controls("a\x1bb\nc"), "a\\u001bb\nc");
        assert!(matches!(escape_controls("plain"), Cow::Borrowed(_)));
        assert_eq!(one_line("op\nok: fake"), "op\\nok: fake");
    }
}
