//! `summary` of a recording that holds its spans compressed
//! ([`crate::parse::SpanFilter::SummaryCompact`]): of a multi-gigabyte trace's millions of
//! spans the answer reads only those around a few instants — each device's peak and the
//! events that begin and end what is live there — and a count of the memory events some
//! span encloses. Passes over the compressed spans count that and take the few into
//! `Recording::ops`; the summary is then [`summarize`]'s, equal field for field to a load
//! that keeps every span (`collector/tests/span_filter.rs`).
//!
//! Why the few suffice: the op index's answers at an instant depend only on the spans that
//! contain it (a span that ends before the instant never closes one that contains it), and
//! the categories' other question — which ops started in a window — is answered by fetching
//! the spans starting in the windows it asks about.

use super::{Summary, summarize};
use crate::analysis::categories::{Roles, times_asked_at_peak, windows_asked_at_peak};
use crate::model::{CompactSpans, OpSpan, Recording, ThreadIdx};
use crate::timeline::{OpIndex, Timeline, names_work, search_from, sort_runs_by_key};

/// Summarise a recording whose spans are compressed, taking the spans the answer reads
/// into `rec.ops` (the rest are counted in `Meta::spans_left_out`). A recording with no
/// compressed spans is summarised as it is.
pub fn summarize_compact(rec: &mut Recording) -> (Timeline, Summary) {
    if rec.compact_ops.is_empty() {
        let timeline = Timeline::build(rec);
        // A pack that stored the spans the answer reads stored the count of memory events
        // in ops too (`Meta::memory_events_in_ops`): the spans it counts over were not read.
        let summary = summarize(rec, &timeline);
        return (timeline, summary);
    }
    let compact = std::mem::take(&mut rec.compact_ops);
    // The spans that name work and are held uncompressed count too; taken before the
    // answer's spans are appended to `rec.ops`.
    let kept: Vec<OpSpan> = rec.ops.iter().filter(|s| names_work(s.category)).collect();
    let timeline = take_what_the_answer_reads(rec, &compact);
    // Counted after the timeline is built, not beside it: the count's per-thread lists
    // then reuse the memory the build's time order gave back, instead of adding 12 bytes
    // an event to `summary`'s peak (its time costs ~1 % of `summary`).
    let in_ops = memory_events_in_ops(rec, kept.into_iter().chain(compact.iter()));
    // Counted over every span, not only those taken into `rec.ops`.
    rec.meta.memory_events_in_ops = Some(in_ops);
    let summary = summarize(rec, &timeline);
    (timeline, summary)
}

/// Build the timeline and take into `rec.ops` the spans the answer reads (those at each
/// device's peak and the instants the categories ask about, then those starting in the
/// windows they ask about); the rest are counted in `Meta::spans_left_out`.
fn take_what_the_answer_reads(rec: &mut Recording, compact: &CompactSpans) -> Timeline {
    let mut timeline = Timeline::build(rec);
    let mut times: Vec<i64> = Vec::new();
    for d in &timeline.devices {
        times.extend(
            d.peak_allocated
                .and_then(|p| d.points.get(p))
                .map(|p| p.time_ns),
        );
        times.extend(times_asked_at_peak(rec, d));
    }
    times.sort_unstable();
    times.dedup();
    let kept_before = rec.ops.len();
    let no_windows = Windows::default();
    let roles = Roles::default();
    take_spans(rec, compact, &times, &no_windows, &roles);
    // Each index dropped before the next is built: on a `with_stack` trace the spans taken
    // are every module's frame (300 k at 2 GB), 24 bytes each in the index.
    timeline.ops = OpIndex::default();
    timeline.ops = OpIndex::build(rec);

    let asked: Vec<(ThreadIdx, i64, i64)> = timeline
        .devices
        .iter()
        .flat_map(|d| windows_asked_at_peak(rec, &timeline, d))
        .collect();
    if !asked.is_empty() {
        rec.ops.truncate(kept_before);
        take_spans(rec, compact, &times, &Windows::new(asked), &roles);
        timeline.ops = OpIndex::default();
        timeline.ops = OpIndex::build(rec);
    }
    let taken = (rec.ops.len() - kept_before) as u64;
    rec.meta.spans_left_out += compact.len() - taken;
    timeline
}

/// Append to `rec.ops`, in source order, the spans the answer reads: those containing one
/// of `times` (sorted; any thread), those the categories' phases are built from, and the
/// spans that name work starting inside one of `windows` on its thread.
fn take_spans(
    rec: &mut Recording,
    compact: &CompactSpans,
    times: &[i64],
    windows: &Windows,
    roles: &Roles,
) {
    let contains_a_time = |s: &OpSpan| {
        let first = times.partition_point(|&t| t < s.start_ns);
        times.get(first).is_some_and(|&t| t <= s.end_ns)
    };
    // Appended straight to the spans, not collected first (32 bytes a span taken): the
    // spans are set aside while the filter reads the rest of the recording.
    let mut ops = std::mem::take(&mut rec.ops);
    ops.extend(compact.iter().filter(|s| {
        contains_a_time(s)
            || roles.marks_phases(rec, s.category, s.name)
            || (names_work(s.category) && windows.holds(s.thread, s.start_ns))
    }));
    rec.ops = ops;
}

/// Open windows (after, before) per thread, for "did this span start inside one?".
#[derive(Default)]
struct Windows {
    /// Per thread: windows sorted by `after`, with the running maximum of `before`.
    by_thread: Vec<(ThreadIdx, Vec<(i64, i64)>)>,
}

impl Windows {
    fn new(mut asked: Vec<(ThreadIdx, i64, i64)>) -> Windows {
        asked.sort_unstable();
        let mut by_thread: Vec<(ThreadIdx, Vec<(i64, i64)>)> = Vec::new();
        for (thread, after, before) in asked {
            match by_thread.last_mut() {
                Some((t, list)) if *t == thread => {
                    let reach = list.last().map_or(before, |&(_, r)| r.max(before));
                    list.push((after, reach));
                }
                _ => by_thread.push((thread, vec![(after, before)])),
            }
        }
        Windows { by_thread }
    }

    /// Whether a window of `thread` has `after < start_ns < before`.
    fn holds(&self, thread: ThreadIdx, start_ns: i64) -> bool {
        let Ok(t) = self.by_thread.binary_search_by_key(&thread, |w| w.0) else {
            return false;
        };
        let list = &self.by_thread[t].1;
        // Windows opening before the start; the furthest any of them reaches.
        let opened = list.partition_point(|&(after, _)| after < start_ns);
        opened
            .checked_sub(1)
            .and_then(|i| list.get(i))
            .is_some_and(|&(_, reach)| reach > start_ns)
    }
}

/// Memory events that a span naming work on their own thread encloses (closed interval),
/// as [`OpIndex::enclosed_on_thread`] answers for each: per thread, the events in time
/// order (4 bytes each: indices into `rec.mem_events`) and one bit each, set over the run
/// of them each span covers.
fn memory_events_in_ops(rec: &Recording, spans: impl Iterator<Item = OpSpan>) -> u64 {
    let events = &rec.mem_events;
    let mut counts = vec![0usize; rec.threads.len()];
    for e in events {
        if let Some(n) = counts.get_mut(e.thread as usize) {
            *n += 1;
        }
    }
    let mut by_thread: Vec<Vec<u32>> = counts.into_iter().map(Vec::with_capacity).collect();
    for (i, e) in events.iter().enumerate() {
        if let Some(list) = by_thread.get_mut(e.thread as usize) {
            list.push(i as u32);
        }
    }
    for list in &mut by_thread {
        sort_runs_by_key(list, |&i| events[i as usize].time_ns);
    }
    let mut covered: Vec<Vec<u64>> = by_thread
        .iter()
        .map(|list| vec![0; list.len().div_ceil(64)])
        .collect();
    // Where the thread's last span began: a thread's spans come mostly in start order, so
    // the next one's run is searched for from there outwards.
    let mut cursors: Vec<usize> = vec![0; by_thread.len()];
    let time = |i: &u32| events[*i as usize].time_ns;
    for s in spans {
        if !names_work(s.category) {
            continue;
        }
        let thread = s.thread as usize;
        let (Some(list), Some(bits), Some(cursor)) = (
            by_thread.get(thread),
            covered.get_mut(thread),
            cursors.get_mut(thread),
        ) else {
            continue;
        };
        let from = search_from(list, *cursor, |i| time(i) < s.start_ns);
        let to = from + search_from(&list[from..], 0, |i| time(i) <= s.end_ns);
        *cursor = from;
        set_bits(bits, from, to);
    }
    covered
        .iter()
        .flatten()
        .map(|word| u64::from(word.count_ones()))
        .sum()
}

/// Set bits `from..to` of `bits`, a word at a time where whole words are covered.
fn set_bits(bits: &mut [u64], from: usize, to: usize) {
    let mut i = from;
    while i < to {
        let (word, bit) = (i / 64, i % 64);
        let n = (to - i).min(64 - bit);
        let mask = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << bit
        };
        if let Some(w) = bits.get_mut(word) {
            *w |= mask;
        }
        i += n;
    }
}

#[cfg(test)]
mod tests {
    use super::set_bits;

    #[test]
    fn bits_set_across_word_boundaries_are_those_asked_for() {
        for (from, to) in [
            (0, 0),
            (0, 1),
            (3, 64),
            (0, 64),
            (63, 65),
            (5, 200),
            (64, 128),
        ] {
            let mut bits = vec![0u64; 4];
            set_bits(&mut bits, from, to);
            for i in 0..256 {
                let set = bits[i / 64] >> (i % 64) & 1 == 1;
                assert_eq!(set, (from..to).contains(&i), "{from}..{to} at {i}");
            }
        }
    }
}
