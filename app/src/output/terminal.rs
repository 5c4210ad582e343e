//! Input data reaches the terminal: op names, file names, frames and settings come from the
//! files vramscope reads, and a crafted trace could carry escape sequences that move the
//! cursor, recolour, rewrite a line with `\r`, show a line reversed with a bidi override, or
//! fake an `ok:` line of `check`. Every byte vramscope writes to stdout passes
//! [`ControlEscaper`], and error lines [`escape_controls`]: C0 controls but newline and tab,
//! DEL, the C1 controls, the bidi embeddings, overrides and isolates (U+202A–U+202E,
//! U+2066–U+2069, and the marks U+200E/U+200F) and the line and paragraph separators
//! (U+2028/U+2029) become visible `\u202e` text — JSON's own escape, so JSON output stays
//! valid and reads back the same string (serde_json escapes C0 controls in strings and
//! leaves the rest raw, which get escaped here). Names from input on a line of text go
//! through [`one_line`], which also cuts them.

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether a character reorders or breaks the text around it where a terminal shows it:
/// the bidi marks, embeddings, overrides and isolates, and the line and paragraph separators.
fn reorders(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether a character is shown escaped: a control but the line breaks we write ourselves,
/// or one that [`reorders`] the line.
fn escaped(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || reorders(c)
}

/// An error line: its control and reordering characters written as `\uXXXX`, and a
/// newline (from a file name in it) as `\n`, so it stays one line.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| escaped(c) || c == '\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\n' {
            out.push_str("\\n");
        } else if escaped(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `eprintln!` for lines that may carry input text (file names, error messages with paths,
/// notes from a recording): the line goes through [`escape_controls`], so a file name with a
/// newline or a bidi override cannot forge or reorder a line on the terminal.
macro_rules! eprint_escaped {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::output::terminal::escape_controls(&format!($($arg)*)))
    };
}
pub(crate) use eprint_escaped;

/// Longest input name (op, site, file) on a line of text output: a kernel name runs to a
/// few hundred characters, a crafted one to 100 MB, which would print as one line of that
/// size; this keeps a line of `summary` or `check` within a screen's scrollback.
pub const LINE_NAME_CHARS: usize = 300;

/// An input name on one line of text output: a newline in it (which the writer lets
/// through, since vramscope's own lines need it) is shown as `\n`, so a name cannot start a
/// line of its own, and a name over [`LINE_NAME_CHARS`] is cut with an ellipsis.
pub fn one_line(s: &str) -> Cow<'_, str> {
    let long = s.len() > LINE_NAME_CHARS && s.chars().nth(LINE_NAME_CHARS).is_some();
    let name = if long {
        Cow::Owned(super::text::cut(s, LINE_NAME_CHARS))
    } else {
        Cow::Borrowed(s)
    };
    if !name.contains('\n') {
        return name;
    }
    Cow::Owned(name.replace('\n', "\\n"))
}

/// A file's name on one line of text output ([`one_line`]).
pub fn path_line(path: &std::path::Path) -> String {
    one_line(&path.display().to_string()).into_owned()
}

/// A writer that escapes control bytes on their way through: C0 but `\n` and `\t`, DEL,
/// the two-byte UTF-8 forms of the C1 controls (U+0080–U+009F) and the three-byte forms of
/// the characters that [`reorders`] a line, even when a write splits one.
pub struct ControlEscaper<W: Write> {
    inner: W,
    /// The start of a multi-byte form at the end of the last write, waiting for the rest.
    pending: Vec<u8>,
    /// Whether [`Paint`](super::style::Paint) spans are coloured.
    colour: bool,
}

impl<W: Write> ControlEscaper<W> {
    /// Escape what goes to `inner`.
    pub fn new(inner: W) -> ControlEscaper<W> {
        ControlEscaper {
            inner,
            pending: Vec::new(),
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
        let held = std::mem::take(&mut self.pending);
        self.inner.write_all(&held)?;
        self.inner.write_all(bytes)
    }

    /// The writer underneath.
    #[cfg(test)]
    pub fn into_inner(self) -> W {
        self.inner
    }

    /// Write `buf` escaped, holding back a multi-byte form cut off at its end.
    fn escape_through(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut start = 0;
        let mut i = 0;
        while i < buf.len() {
            match escape_at(&buf[i..]) {
                Found::Plain => i += 1,
                Found::Escape { len, code } => {
                    self.inner.write_all(&buf[start..i])?;
                    write!(self.inner, "\\u{code:04x}")?;
                    i += len;
                    start = i;
                }
                Found::Cut => {
                    self.inner.write_all(&buf[start..i])?;
                    self.pending.extend_from_slice(&buf[i..]);
                    return Ok(());
                }
            }
        }
        self.inner.write_all(&buf[start..])
    }
}

/// What starts at a byte of the output.
enum Found {
    /// A byte written as it is.
    Plain,
    /// A character written escaped: its UTF-8 length and code point.
    Escape { len: usize, code: u32 },
    /// The start of a form that would be escaped, cut off by the end of the write.
    Cut,
}

/// Whether the bytes at the start of `rest` are escaped ([`escaped`] on UTF-8 forms).
fn escape_at(rest: &[u8]) -> Found {
    let b = rest[0];
    if (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7F {
        return Found::Escape {
            len: 1,
            code: u32::from(b),
        };
    }
    let len = match b {
        0xC2 => 2,
        0xE2 => 3,
        _ => return Found::Plain,
    };
    let Some(form) = rest.get(..len) else {
        // Only the leads of forms that would be escaped are held back.
        let could = rest.len() == 1 || matches!(rest[1], 0x80 | 0x81);
        return if could { Found::Cut } else { Found::Plain };
    };
    match std::str::from_utf8(form)
        .ok()
        .and_then(|s| s.chars().next())
    {
        Some(c) if escaped(c) => Found::Escape {
            len,
            code: c as u32,
        },
        _ => Found::Plain,
    }
}

impl<W: Write> Write for ControlEscaper<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending.is_empty() {
            self.escape_through(buf)?;
        } else {
            let mut joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(buf);
            self.escape_through(&joined)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let held = std::mem::take(&mut self.pending);
        self.inner.write_all(&held)?;
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
        assert_eq!(escape_controls("a\x1bb\nc"), "a\\u001bb\\nc");
        assert!(matches!(escape_controls("plain"), Cow::Borrowed(_)));
        assert_eq!(one_line("op\nok: fake"), "op\\nok: fake");
        assert_eq!(one_line(&"x".repeat(5000)).chars().count(), LINE_NAME_CHARS);
    }

    #[test]
    fn bidi_controls_and_separators_become_visible_even_split() {
        // RLO reverses what follows; LRI isolates; U+2028 breaks the line in some terminals.
        let text = "ok: \u{202e}gnp.x\u{2066}a\u{2028}b\u{2029}\u{200f}";
        let want = "ok: \\u202egnp.x\\u2066a\\u2028b\\u2029\\u200f";
        assert_eq!(through(&[text.as_bytes()]), want);
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            assert_eq!(
                through(&[&bytes[..cut], &bytes[cut..]]),
                want,
                "cut at {cut}"
            );
        }
        // Other characters with the same lead bytes pass: an ellipsis, an en dash, "€".
        assert_eq!(through(&["…–€".as_bytes()]), "…–€");
        assert_eq!(escape_controls("a\u{202e}b"), "a\\u202eb");
    }
}
