//! One recording's curve columns for one frame, and a small cache of them: while the view
//! and the plot's width stay the same (the pointer moving, a repaint for another panel),
//! a frame reuses the last queries instead of asking the pyramids again (rerun's
//! per-(range, width) caches).

use std::sync::Arc;

use collector::analysis::pyramid::CurvePyramid;

use super::super::paint::{self, Columns, PlotFrame};
use super::Source;
use super::categories::LayerColumns;

/// Cached sets of columns (the shown run, a compared run, each plot of a stacked view).
const CACHED: usize = 4;

/// One source's columns for one frame.
pub struct SourceColumns {
    /// Allocated bytes.
    pub allocated: Columns,
    /// Reserved bytes.
    pub reserved: Columns,
    /// NVML used.
    pub nvml: Columns,
    /// Reserved − allocated (the strip).
    pub cache: Columns,
}

impl SourceColumns {
    fn query(src: &Source<'_>, frame: &PlotFrame) -> SourceColumns {
        let curves = src.data.curves.get(src.device as usize);
        let q = |c: Option<&CurvePyramid>| paint::query(c, frame, src.origin_ns);
        SourceColumns {
            allocated: q(curves.and_then(|c| c.allocated.as_ref())),
            reserved: q(curves.and_then(|c| c.reserved.as_ref())),
            nvml: q(curves.and_then(|c| c.nvml_used.as_ref())),
            cache: q(curves.and_then(|c| c.cache.as_ref())),
        }
    }

    /// The largest value of the plotted curves (not the strip's).
    pub fn max(&self) -> i64 {
        [&self.allocated, &self.reserved, &self.nvml]
            .into_iter()
            .filter_map(paint::columns_max)
            .max()
            .unwrap_or(0)
    }
}

#[derive(Clone, Copy, PartialEq)]
struct Key {
    doc: u64,
    device: u16,
    origin_ns: i64,
    t0_bits: u64,
    t1_bits: u64,
    columns: usize,
}

impl Key {
    fn of(src: &Source<'_>, frame: &PlotFrame) -> Key {
        Key {
            doc: src.doc,
            device: src.device,
            origin_ns: src.origin_ns,
            t0_bits: frame.t0_ns.to_bits(),
            t1_bits: frame.t1_ns.to_bits(),
            columns: frame.columns(),
        }
    }
}

/// The last few column sets, newest last, and the last frame's category layers.
#[derive(Default)]
pub struct ColumnCache {
    entries: Vec<(Key, Arc<SourceColumns>)>,
    layers: Option<(Key, Arc<LayerColumns>)>,
}

impl ColumnCache {
    /// The columns of `src` for `frame` (only its time range and width matter).
    pub fn get(&mut self, src: &Source<'_>, frame: &PlotFrame) -> Arc<SourceColumns> {
        let key = Key::of(src, frame);
        if let Some((_, cols)) = self.entries.iter().find(|(k, _)| *k == key) {
            return cols.clone();
        }
        let cols = Arc::new(SourceColumns::query(src, frame));
        if self.entries.len() >= CACHED {
            self.entries.remove(0);
        }
        self.entries.push((key, cols.clone()));
        cols
    }

    /// The columns of each category layer of `src` for `frame`, bottom first; empty where
    /// the device has no categories.
    pub fn layers(&mut self, src: &Source<'_>, frame: &PlotFrame) -> Arc<LayerColumns> {
        let key = Key::of(src, frame);
        if let Some((k, layers)) = &self.layers
            && *k == key
        {
            return layers.clone();
        }
        let layers: LayerColumns = src
            .data
            .curves
            .get(src.device as usize)
            .and_then(|c| c.categories.as_ref())
            .map_or_else(Vec::new, |c| {
                c.layers
                    .iter()
                    .map(|l| (l.category, paint::query(Some(&l.top), frame, src.origin_ns)))
                    .collect()
            });
        let layers = Arc::new(layers);
        self.layers = Some((key, layers.clone()));
        layers
    }
}
