//! A device's allocations as stacked bands (memory_viz's Active Memory Timeline), picked
//! as the viewer picks them: the collector's band index asked for the bands at least a
//! pixel tall and wide in a [`BAND_COLUMNS`] × [`BAND_ROWS`] view of the whole run, each
//! with its offset at its start and its moves at most one a column
//! ([`BandLayout::moves_in`]); the bytes of the bands left out are drawn from the
//! allocated curve in grey, as the viewer draws them. Zooming in shows the same bands
//! (no smaller ones appear): the page holds one level of detail.

use collector::analysis::allocations::{BandLayout, BandQuery, ColorBy, band_keys};
use collector::timeline::DeviceTimeline;
use serde::Serialize;

use super::Input;
use super::levels::{Level, deltas, levels};
use super::strings::Strings;

/// The view's width the bands are picked for, in columns; a band must live a column.
pub const BAND_COLUMNS: i64 = 2_048;
/// The view's height, in rows; a band must be a row tall (1/512 of the peak).
pub const BAND_ROWS: i64 = 512;
/// Most bands kept, largest first: ~40 bytes of JSON each without moves.
pub const MAX_BANDS: usize = 6_000;
/// Most moves kept over all bands (~12 bytes of JSON each: ~480 KB at this cap); the
/// largest bands are kept whole and the smaller ones left to the grey curve once this is
/// spent.
pub const MAX_MOVES: usize = 40_000;

/// The bands of one device.
#[derive(Debug, Serialize)]
pub struct BandsDoc {
    /// Band key names (string ids): the first user frame of the allocation's stack, else
    /// the op running.
    pub keys: Vec<u32>,
    /// Per band: allocation time (ns since the input's start), lifetime, bytes, key,
    /// offset at the start; in allocation order, the times as differences.
    pub bands: Vec<[i64; 5]>,
    /// Per band its moves, flattened: (time, new offset) pairs, each as the difference
    /// from the move before (the first from the allocation time and the offset then).
    pub moves: Vec<Vec<i64>>,
    /// The bytes allocated before the trace: the band under all others.
    pub before_trace: Vec<Level>,
    /// Bands left out for the caps.
    pub left_out: usize,
}

/// The bands of device `d`; `None` where it has no allocations.
pub fn bands(input: &Input<'_>, d: &DeviceTimeline, s: &mut Strings) -> Option<BandsDoc> {
    if !d.allocated_known || d.allocations.is_empty() {
        return None;
    }
    let (rec, timeline) = (input.rec, input.timeline);
    let layout = BandLayout::build(rec, d);
    let t0 = d.points.first()?.time_ns;
    let t1 = layout.end_ns.max(t0 + 1);
    let peak = d
        .peak_allocated
        .and_then(|p| d.points.get(p))?
        .allocated_bytes;
    let q = BandQuery {
        t0_ns: t0,
        t1_ns: t1,
        min_bytes: peak / BAND_ROWS,
        min_life_ns: (t1 - t0) / BAND_COLUMNS,
    };
    let mut ids = Vec::new();
    layout.index.visible(&q, &mut ids);
    let size = |i: u32| d.allocations.get(i as usize).map_or(0, |a| a.bytes);
    ids.sort_by_key(|&i| std::cmp::Reverse(size(i)));
    let found = ids.len();
    ids.truncate(MAX_BANDS);
    let resolution_ns = ((t1 - t0) / BAND_COLUMNS).max(1);
    let mut kept: Vec<(u32, i64, Vec<i64>)> = Vec::with_capacity(ids.len());
    let mut moves_left = MAX_MOVES;
    for i in ids {
        let Some(a) = d.allocations.get(i as usize) else {
            continue;
        };
        let end = a.free_ns.get().unwrap_or(layout.end_ns);
        let (start, moves) = layout.moves_in(d, i as usize, (a.alloc_ns, end), resolution_ns);
        if moves.len() > moves_left {
            continue;
        }
        moves_left -= moves.len();
        // Each move from the one before (the first from the allocation and its offset
        // then): small numbers, ~12 bytes of JSON a move instead of ~22.
        let mut flat = Vec::with_capacity(2 * moves.len());
        let (mut t, mut offset) = (a.alloc_ns, start);
        for m in &moves {
            flat.extend([m.time_ns - t, m.offset_bytes - offset]);
            (t, offset) = (m.time_ns, m.offset_bytes);
        }
        kept.push((i, start, flat));
    }
    kept.sort_by_key(|k| k.0);
    let keys = band_keys(rec, timeline, d, ColorBy::Stack);
    let origin = input.summary.start_ns;
    let alloc_times = deltas(kept.iter().map(|k| {
        d.allocations
            .get(k.0 as usize)
            .map_or(0, |a| a.alloc_ns - origin)
    }));
    let mut bands = Vec::with_capacity(kept.len());
    // Only the keys of the bands kept, renumbered.
    let mut used: std::collections::HashMap<u32, i64> = Default::default();
    let mut names = Vec::new();
    for (k, dt) in kept.iter().zip(alloc_times) {
        let Some(a) = d.allocations.get(k.0 as usize) else {
            continue;
        };
        let life = a.free_ns.get().unwrap_or(layout.end_ns) - a.alloc_ns;
        let key = keys.key.get(k.0 as usize).copied().unwrap_or(0);
        let key = *used.entry(key).or_insert_with(|| {
            let name = keys.names.get(key as usize).map_or("", String::as_str);
            names.push(s.id(name));
            names.len() as i64 - 1
        });
        bands.push([dt, life, a.bytes, key, k.1]);
    }
    Some(BandsDoc {
        keys: names,
        left_out: found - kept.len(),
        moves: kept.into_iter().map(|k| k.2).collect(),
        bands,
        before_trace: levels(&layout.before_trace, origin),
    })
}
