//! The usual keys of a trace event recognised by a word compare where they start.

/// A quoted string of `N` bytes as the low bytes of a word, and the mask of those bytes.
const fn quoted<const N: usize>(text: &[u8; N]) -> (u64, u64) {
    let mut word = b'"' as u64;
    let mut i = 0;
    while i < N {
        word |= (text[i] as u64) << (8 * (i + 1));
        i += 1;
    }
    word |= (b'"' as u64) << (8 * (N + 1));
    (word, u64::MAX >> (8 * (6 - N)))
}

/// An event's usual keys, quoted, as [`quoted`] words: `"ph"` … `"args"`.
const EVENT_KEYS: [(&[u8], u64, u64); 8] = {
    let (ph, cat, name, pid) = (
        quoted(b"ph"),
        quoted(b"cat"),
        quoted(b"name"),
        quoted(b"pid"),
    );
    let (tid, ts, dur, args) = (
        quoted(b"tid"),
        quoted(b"ts"),
        quoted(b"dur"),
        quoted(b"args"),
    );
    [
        (b"ph", ph.0, ph.1),
        (b"cat", cat.0, cat.1),
        (b"name", name.0, name.1),
        (b"pid", pid.0, pid.1),
        (b"tid", tid.0, tid.1),
        (b"ts", ts.0, ts.1),
        (b"dur", dur.0, dur.1),
        (b"args", args.0, args.1),
    ]
};

/// A trace event's key at the start of `word` (its opening quote the lowest byte), if it is
/// one of the usual eight: its text and quoted length. Keys are a tenth of a trace's bytes
/// and the closing quote is all [`Scanner::plain_string`](super::scanner::Scanner::plain_string) looks for: a word compare instead
/// of its search took ~9 % of the scan's instructions (cachegrind).
#[inline]
pub(super) fn event_key(word: u64) -> Option<(&'static [u8], usize)> {
    let candidates: &[usize] = match (word >> 8) as u8 {
        b'p' => &[0, 3],
        b'c' => &[1],
        b'n' => &[2],
        b't' => &[4, 5],
        b'd' => &[6],
        b'a' => &[7],
        _ => return None,
    };
    candidates.iter().find_map(|&i| {
        let (key, quoted, mask) = *EVENT_KEYS.get(i)?;
        (word & mask == quoted).then_some((key, key.len() + 2))
    })
}
