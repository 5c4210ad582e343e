//! A recording's op spans in 16 bytes each instead of [`OpSpan`]'s 32, with O(1) access by
//! index: spans are most of a trace's events (23 M in a 10 GB trace, 750 MB as `OpSpan`s,
//! a third of what the viewer held).
//!
//! Four columns: the name id; the thread in the low 24 bits with the category's code in
//! the top 8; the start as an `i32` offset from its block's base (the first start of each
//! block of [`BLOCK`] spans, in source order, where starts lie within milliseconds of each
//! other); the duration as a `u32` of ns. A span that does not fit — a start more than
//! ±2.1 s from its block's base, a duration of 4.3 s or more or negative, a thread index of
//! 2^24 or more — is kept whole in a side table, marked by [`SIDE`] in its duration.

use super::{OpCategory, OpSpan, StrId, ThreadIdx};

/// Spans per block sharing a base start: 8 bytes per block.
const BLOCK: usize = 256;
/// The duration that marks a span kept in the side table.
const SIDE: u32 = u32::MAX;
/// Thread indices below this share a word with the category code.
const THREAD_LIMIT: u32 = 1 << 24;

/// Op spans in source order.
#[derive(Clone, Default)]
pub struct OpSpans {
    names: Vec<u32>,
    thread_category: Vec<u32>,
    start_offsets: Vec<i32>,
    durations: Vec<u32>,
    block_base_ns: Vec<i64>,
    /// Spans that do not fit the columns, by index (48 bytes an entry; a hostile file can
    /// make every span one, which costs what a `Vec<OpSpan>` would, and a half more).
    side: rustc_hash::FxHashMap<u32, OpSpan>,
}

impl OpSpans {
    /// Number of spans.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Add a span at the end.
    pub fn push(&mut self, span: OpSpan) {
        let i = self.names.len();
        if i.is_multiple_of(BLOCK) {
            self.block_base_ns.push(span.start_ns);
        }
        self.names.push(0);
        self.thread_category.push(0);
        self.start_offsets.push(0);
        self.durations.push(0);
        self.set(i, span);
    }

    /// Replace span `i` (nothing happens past the end).
    pub fn set(&mut self, i: usize, span: OpSpan) {
        let Some(&base) = self.block_base_ns.get(i / BLOCK) else {
            return;
        };
        let offset = (span.start_ns.checked_sub(base)).and_then(|d| i32::try_from(d).ok());
        let duration = span
            .end_ns
            .checked_sub(span.start_ns)
            .and_then(|d| u32::try_from(d).ok())
            .filter(|&d| d != SIDE);
        let fits = span.thread < THREAD_LIMIT;
        let (Some(slot), Some(tc), Some(so), Some(du)) = (
            self.names.get_mut(i),
            self.thread_category.get_mut(i),
            self.start_offsets.get_mut(i),
            self.durations.get_mut(i),
        ) else {
            return;
        };
        *slot = span.name.0;
        *tc = span.thread | (u32::from(span.category.code()) << 24);
        match (offset, duration) {
            (Some(offset), Some(duration)) if fits => {
                *so = offset;
                *du = duration;
                self.side.remove(&(i as u32));
            }
            _ => {
                *so = 0;
                *du = SIDE;
                self.side.insert(i as u32, span);
            }
        }
    }

    /// Span `i`.
    pub fn get(&self, i: usize) -> Option<OpSpan> {
        let duration = *self.durations.get(i)?;
        if duration == SIDE {
            return self.side.get(&(i as u32)).copied();
        }
        let tc = *self.thread_category.get(i)?;
        let start_ns = self.block_base_ns.get(i / BLOCK)? + i64::from(*self.start_offsets.get(i)?);
        Some(OpSpan {
            name: StrId(*self.names.get(i)?),
            category: OpCategory::from_code((tc >> 24) as u8).unwrap_or(OpCategory::Other),
            thread: (tc & (THREAD_LIMIT - 1)) as ThreadIdx,
            start_ns,
            end_ns: start_ns + i64::from(duration),
        })
    }

    /// The spans, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            spans: self,
            front: 0,
            back: self.len(),
        }
    }

    /// Change every span in place (those `f` leaves as they were are not stored again).
    pub fn update(&mut self, mut f: impl FnMut(&mut OpSpan)) {
        for i in 0..self.len() {
            self.update_one(i, &mut f);
        }
    }

    /// [`Self::update`] of the spans that may have a time outside `inside`: a block whose
    /// base lies so far inside that no offset or duration reaches out is passed over, but
    /// for its side-table spans. O(blocks) instead of O(spans) on a real trace, whose
    /// times are nowhere near the limits (a load clamps every recording's times).
    pub fn update_outside(&mut self, inside: (i64, i64), mut f: impl FnMut(&mut OpSpan)) {
        // The farthest a start (an i32 offset) or an end (a u32 duration after it) lies
        // from its block's base.
        const REACH: i64 = (1 << 31) + (1 << 32);
        let held = |base: i64| {
            base.checked_sub(REACH).is_some_and(|lo| lo >= inside.0)
                && base.checked_add(REACH).is_some_and(|hi| hi <= inside.1)
        };
        for b in 0..self.block_base_ns.len() {
            if !held(self.block_base_ns[b]) {
                for i in b * BLOCK..((b + 1) * BLOCK).min(self.len()) {
                    self.update_one(i, &mut f);
                }
            }
        }
        let mut side: Vec<usize> = (self.side.keys().map(|&i| i as usize))
            .filter(|&i| self.block_base_ns.get(i / BLOCK).is_some_and(|&b| held(b)))
            .collect();
        side.sort_unstable();
        for i in side {
            self.update_one(i, &mut f);
        }
    }

    fn update_one(&mut self, i: usize, f: &mut impl FnMut(&mut OpSpan)) {
        if let Some(before) = self.get(i) {
            let mut span = before;
            f(&mut span);
            if span != before {
                self.set(i, span);
            }
        }
    }

    /// Add `by_ns` to every time, saturating: a block's base moves, its offsets stay,
    /// except in the blocks and side-table spans that reach the ends of the `i64` range.
    pub fn shift_times(&mut self, by_ns: i64) {
        // Offsets and durations stay below 2^33 ns: a base this far from the ends is safe.
        const MARGIN: i64 = 1 << 34;
        let shift = |t: i64| t.saturating_add(by_ns);
        for b in 0..self.block_base_ns.len() {
            let base = self.block_base_ns[b];
            match base.checked_add(by_ns) {
                Some(moved) if (i64::MIN + MARGIN..=i64::MAX - MARGIN).contains(&moved) => {
                    let (from, to) = (b * BLOCK, ((b + 1) * BLOCK).min(self.len()));
                    let side: Vec<(usize, OpSpan)> = (from..to)
                        .filter(|&i| self.durations[i] == SIDE)
                        .filter_map(|i| Some((i, self.get(i)?)))
                        .collect();
                    self.block_base_ns[b] = moved;
                    for (i, mut span) in side {
                        (span.start_ns, span.end_ns) = (shift(span.start_ns), shift(span.end_ns));
                        self.set(i, span);
                    }
                }
                _ => {
                    for i in b * BLOCK..((b + 1) * BLOCK).min(self.len()) {
                        if let Some(mut span) = self.get(i) {
                            (span.start_ns, span.end_ns) =
                                (shift(span.start_ns), shift(span.end_ns));
                            self.set(i, span);
                        }
                    }
                }
            }
        }
    }

    /// Keep the first `n` spans.
    pub fn truncate(&mut self, n: usize) {
        self.names.truncate(n);
        self.thread_category.truncate(n);
        self.start_offsets.truncate(n);
        self.durations.truncate(n);
        self.block_base_ns.truncate(n.div_ceil(BLOCK));
        self.side.retain(|&i, _| (i as usize) < n);
    }

    /// Room for `n` more spans.
    pub fn reserve(&mut self, n: usize) {
        self.names.reserve(n);
        self.thread_category.reserve(n);
        self.start_offsets.reserve(n);
        self.durations.reserve(n);
        self.block_base_ns.reserve(n / BLOCK + 1);
    }

    /// Give back the growth slack.
    pub fn shrink_to_fit(&mut self) {
        self.names.shrink_to_fit();
        self.thread_category.shrink_to_fit();
        self.start_offsets.shrink_to_fit();
        self.durations.shrink_to_fit();
        self.block_base_ns.shrink_to_fit();
        self.side.shrink_to_fit();
    }

    /// Heap bytes.
    pub fn heap_bytes(&self) -> usize {
        (self.names.capacity()
            + self.thread_category.capacity()
            + self.start_offsets.capacity()
            + self.durations.capacity())
            * 4
            + self.block_base_ns.capacity() * 8
            + self.side.capacity() * (std::mem::size_of::<(u32, OpSpan)>() + 1)
    }
}

/// Every index below `len` has a span: the columns grow together.
fn unreachable_span(i: usize) -> OpSpan {
    debug_assert!(false, "op span {i} missing");
    OpSpan {
        name: StrId(0),
        category: OpCategory::Other,
        thread: 0,
        start_ns: 0,
        end_ns: 0,
    }
}

/// Iterator over [`OpSpans`], by value.
pub struct Iter<'a> {
    spans: &'a OpSpans,
    front: usize,
    back: usize,
}

impl Iterator for Iter<'_> {
    type Item = OpSpan;

    fn next(&mut self) -> Option<OpSpan> {
        (self.front < self.back).then(|| {
            self.front += 1;
            self.spans
                .get(self.front - 1)
                .unwrap_or_else(|| unreachable_span(self.front - 1))
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.back - self.front, Some(self.back - self.front))
    }

    fn nth(&mut self, n: usize) -> Option<OpSpan> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<OpSpan> {
        (self.front < self.back).then(|| {
            self.back -= 1;
            self.spans
                .get(self.back)
                .unwrap_or_else(|| unreachable_span(self.back))
        })
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a OpSpans {
    type Item = OpSpan;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl Extend<OpSpan> for OpSpans {
    fn extend<I: IntoIterator<Item = OpSpan>>(&mut self, spans: I) {
        for s in spans {
            self.push(s);
        }
    }
}

impl FromIterator<OpSpan> for OpSpans {
    fn from_iter<I: IntoIterator<Item = OpSpan>>(spans: I) -> OpSpans {
        let mut out = OpSpans::default();
        out.extend(spans);
        out
    }
}

impl From<Vec<OpSpan>> for OpSpans {
    fn from(spans: Vec<OpSpan>) -> OpSpans {
        spans.into_iter().collect()
    }
}

impl PartialEq for OpSpans {
    fn eq(&self, other: &OpSpans) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for OpSpans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests;
