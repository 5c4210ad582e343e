//! Python's json writes a byte its `surrogateescape` kept (a file name not in UTF-8) as a
//! lone surrogate escape, `"\\udcff"`, and reads it back; serde_json refuses it. The
//! stream rewrites such escapes as `\\ufffd` in place (the same six bytes, so offsets hold)
//! and reads the value again.

impl<R> super::JsonStream<R> {
    /// Rewrite the window's lone surrogate escapes as `\ufffd`; whether any was.
    pub(super) fn repair_surrogates(&mut self) -> bool {
        let n = replace_lone_surrogates(&mut self.buf[self.pos..self.end]);
        self.surrogates_replaced += n;
        n > 0
    }
}

/// Whether serde_json refused a string for a lone surrogate escape.
pub(super) fn is_lone_surrogate(e: &serde_json::Error) -> bool {
    e.to_string().contains("surrogate")
}

/// The code unit of four hex digits.
fn hex4(digits: Option<&[u8]>) -> Option<u32> {
    u32::from_str_radix(std::str::from_utf8(digits?).ok()?, 16).ok()
}

/// Rewrite each `\uD800`–`\uDFFF` escape in `bytes` that is not half of a pair as
/// `\ufffd` (U+FFFD, what Rust's lossy decoding shows for what Python's surrogateescape
/// kept), in place; returns how many. A high surrogate whose partner may lie past the end
/// is left alone.
pub(super) fn replace_lone_surrogates(bytes: &mut [u8]) -> u64 {
    let surrogate = |c: u32| (0xD800..0xE000).contains(&c);
    let (mut replaced, mut i) = (0, 0);
    while i + 1 < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        if bytes[i + 1] != b'u' {
            i += 2;
            continue;
        }
        if bytes.len() < i + 6 {
            break;
        }
        let Some(unit) = hex4(bytes.get(i + 2..i + 6)) else {
            i += 2;
            continue;
        };
        if (0xD800..0xDC00).contains(&unit) {
            if bytes.len() < i + 12 {
                break;
            }
            let low = (bytes[i + 6..i + 8] == *b"\\u")
                .then(|| hex4(bytes.get(i + 8..i + 12)))
                .flatten();
            if low.is_some_and(|c| (0xDC00..0xE000).contains(&c)) {
                i += 12;
                continue;
            }
        }
        if surrogate(unit) {
            bytes[i + 2..i + 6].copy_from_slice(b"fffd");
            replaced += 1;
        }
        i += 6;
    }
    replaced
}

#[cfg(test)]
mod tests {
    use super::replace_lone_surrogates;

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let mut text = br#""a\udcff b\ud83d\ude00 c\ud800x \\udcff \udc"#.to_vec();
        assert_eq!(replace_lone_surrogates(&mut text), 2);
        assert_eq!(
            text,
            br#""a\ufffd b\ud83d\ude00 c\ufffdx \\udcff \udc"#.to_vec()
        );
        let parsed: String = serde_json::from_slice(&br#""a\ufffd""#[..]).expect("valid");
        assert_eq!(parsed, "a\u{fffd}");
    }
}
