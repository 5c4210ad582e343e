//! Op spans held compressed: 7–10 bytes a span instead of [`OpSpan`]'s 32, for readers that
//! keep spans only to pick a few of them later (`summary` of a multi-gigabyte trace asks
//! about the spans around its peaks; see [`crate::analysis::summary::summarize_compact`]).
//!
//! Each span is its category code, then LEB128 varints of its name id, its thread, its
//! start minus the previous span's start and its end minus its start (both zigzag-coded:
//! spans come in file order, not time order). Times come back shifted by
//! [`CompactSpans::shift`] and clamped to ±[`TIME_LIMIT_NS`], as the recording's other
//! times are by the reader's finish and [`super::Recording::clamp_times`].

use super::{OpCategory, OpSpan, StrId, TIME_LIMIT_NS};

/// Op spans in source order, compressed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactSpans {
    bytes: Vec<u8>,
    len: u64,
    /// The raw start of the last span pushed (what the next start is coded against).
    last_start_ns: i64,
    /// Added to every time read back (a trace's base time).
    shift_ns: i64,
}

impl CompactSpans {
    /// Add a span at the end.
    pub fn push(&mut self, span: &OpSpan) {
        self.bytes.push(span.category.code());
        put_varint(&mut self.bytes, u64::from(span.name.0));
        put_varint(&mut self.bytes, u64::from(span.thread));
        put_varint(
            &mut self.bytes,
            zigzag(span.start_ns.wrapping_sub(self.last_start_ns)),
        );
        put_varint(
            &mut self.bytes,
            zigzag(span.end_ns.wrapping_sub(span.start_ns)),
        );
        self.last_start_ns = span.start_ns;
        self.len += 1;
    }

    /// Spans held.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no span is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of memory the spans take.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// Add `by_ns` (saturating) to every time read back from now on.
    pub fn shift(&mut self, by_ns: i64) {
        self.shift_ns = self.shift_ns.saturating_add(by_ns);
    }

    /// Give back the growth slack.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
    }

    /// The spans, in the order pushed.
    pub fn iter(&self) -> Spans<'_> {
        Spans {
            bytes: &self.bytes,
            pos: 0,
            raw_start_ns: 0,
            shift_ns: self.shift_ns,
        }
    }

    /// How many of the spans' times (starts and ends) lie beyond ±[`TIME_LIMIT_NS`] once
    /// shifted: what [`super::Recording::clamp_times`] counts as clamped.
    pub fn times_out_of_range(&self) -> u64 {
        let mut out = 0;
        let mut raw_start_ns = 0i64;
        let mut pos = 0;
        while let Some((_, start, end)) = read_raw(&self.bytes, &mut pos, &mut raw_start_ns) {
            for t in [start, end] {
                out += u64::from(
                    !(-TIME_LIMIT_NS..=TIME_LIMIT_NS).contains(&t.saturating_add(self.shift_ns)),
                );
            }
        }
        out
    }
}

/// Iterator over [`CompactSpans`].
pub struct Spans<'a> {
    bytes: &'a [u8],
    pos: usize,
    raw_start_ns: i64,
    shift_ns: i64,
}

impl Iterator for Spans<'_> {
    type Item = OpSpan;

    fn next(&mut self) -> Option<OpSpan> {
        let ((code, name, thread), start, end) =
            read_raw(self.bytes, &mut self.pos, &mut self.raw_start_ns)?;
        let time = |t: i64| {
            t.saturating_add(self.shift_ns)
                .clamp(-TIME_LIMIT_NS, TIME_LIMIT_NS)
        };
        Some(OpSpan {
            name: StrId(name),
            category: OpCategory::from_code(code).unwrap_or(OpCategory::Other),
            thread,
            start_ns: time(start),
            end_ns: time(end),
        })
    }
}

/// One span's (category code, name, thread), raw start and raw end.
type Raw = ((u8, u32, u32), i64, i64);

fn read_raw(bytes: &[u8], pos: &mut usize, raw_start_ns: &mut i64) -> Option<Raw> {
    let code = *bytes.get(*pos)?;
    *pos += 1;
    let name = u32::try_from(get_varint(bytes, pos)?).ok()?;
    let thread = u32::try_from(get_varint(bytes, pos)?).ok()?;
    let start = raw_start_ns.wrapping_add(unzigzag(get_varint(bytes, pos)?));
    let end = start.wrapping_add(unzigzag(get_varint(bytes, pos)?));
    *raw_start_ns = start;
    Some(((code, name, thread), start, end))
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(category: OpCategory, name: u32, thread: u32, start_ns: i64, end_ns: i64) -> OpSpan {
        OpSpan {
            name: StrId(name),
            category,
            thread,
            start_ns,
            end_ns,
        }
    }

    #[test]
    fn spans_come_back_exactly_in_order() {
        let spans = [
            span(
                OpCategory::CpuOp,
                0,
                0,
                1_700_000_000_000_000_000,
                1_700_000_000_000_004_000,
            ),
            // Earlier than the previous start (another thread's event later in the file).
            span(
                OpCategory::PythonFunction,
                300,
                7,
                1_699_999_999_999_000_000,
                1_700_000_000_000_000_001,
            ),
            span(OpCategory::Other, u32::MAX, u32::MAX, -5, -5),
            span(OpCategory::Nvtx, 1, 2, i64::MIN + 1, 17),
        ];
        let mut c = CompactSpans::default();
        for s in &spans {
            c.push(s);
        }
        assert_eq!(c.len(), 4);
        let back: Vec<OpSpan> = c.iter().collect();
        let clamped = |t: i64| t.clamp(-TIME_LIMIT_NS, TIME_LIMIT_NS);
        let expected: Vec<OpSpan> = spans
            .iter()
            .map(|s| OpSpan {
                start_ns: clamped(s.start_ns),
                end_ns: clamped(s.end_ns),
                ..*s
            })
            .collect();
        assert_eq!(back, expected);
        // The last span's start is beyond the limit: one time out of range.
        assert_eq!(c.times_out_of_range(), 1);
        // A typical span (small deltas) takes a few bytes, not 32.
        let mut small = CompactSpans::default();
        for i in 0..1000i64 {
            small.push(&span(
                OpCategory::CpuOp,
                (i % 90) as u32,
                1,
                1_000_000 + i * 1_500,
                1_000_000 + i * 1_500 + 700,
            ));
        }
        assert!(small.bytes.len() <= 8 * 1000, "{} bytes", small.bytes.len());
    }

    #[test]
    fn shifted_times_saturate_then_clamp() {
        let mut c = CompactSpans::default();
        c.push(&span(OpCategory::CpuOp, 0, 0, 10, 20));
        c.shift(1_000);
        let s = c.iter().next().expect("span");
        assert_eq!((s.start_ns, s.end_ns), (1_010, 1_020));
        c.shift(i64::MAX);
        let s = c.iter().next().expect("span");
        assert_eq!((s.start_ns, s.end_ns), (TIME_LIMIT_NS, TIME_LIMIT_NS));
        assert_eq!(c.times_out_of_range(), 2);
    }
}
