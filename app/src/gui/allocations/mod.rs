//! The allocation view (memory_viz's "Active Memory Timeline", natively): every allocation
//! as a band over its lifetime, stacked as the collector laid them out
//! (`collector::analysis::allocations`), coloured by stack, op or category; hover reads a
//! band, a click selects it (Esc clears), a search dims the bands that do not match and
//! draws the matching bytes as a curve; and the icicle of what is live at the cursor.
//!
//! Only what a pixel can show is drawn: bands at least a pixel tall and wide, from the
//! collector's index; the bytes of the rest are the allocated curve's per-pixel columns,
//! drawn under the bands in grey.

mod cached;
mod details;
mod draw;
mod icicle;
mod in_use;
mod navigate;
mod pointer;
mod two_threads;

#[cfg(test)]
mod bench;

use std::sync::{Arc, OnceLock};

use collector::analysis::allocations::{
    BandKeys, BandLayout, CacheBands, ColorBy, FlameTree, Matches, band_keys,
};
use collector::analysis::pyramid::CurvePyramid;
use collector::model::DeviceIdx;
use collector::{Recording, Timeline};

#[cfg(test)]
pub use cached::{NO_ALLOCATIONS, NO_SEGMENTS};
pub use details::details_ui;
pub use draw::{BandsFrame, bands_ui};
pub use icicle::icicle_ui;
pub use in_use::InUse;

/// One device's bands: the layout and the default colour keys (built at load), the other
/// colour keys (built when first asked for).
#[derive(Debug)]
pub struct DeviceBands {
    /// The stacking and its index.
    pub layout: BandLayout,
    /// The allocator's segments stacked, the allocations placed in them (the Cached mode);
    /// `None` where the input records no segments.
    pub cache: Option<CacheBands>,
    /// Each segment's bytes in use over time (parallel to the cache's segments), for
    /// per-column queries; `None` for a segment never used.
    pub in_use: Vec<Option<InUse>>,
    keys: [OnceLock<BandKeys>; 3],
}

impl DeviceBands {
    /// The layout of `device`'s allocations and segments; `None` where it has neither (an
    /// Nsight export has segments alone: the driver's allocations).
    pub fn build(rec: &Recording, timeline: &Timeline, device: usize) -> Option<Arc<DeviceBands>> {
        let d = timeline.devices.get(device)?;
        let cache = CacheBands::build(rec, d);
        if d.allocations.is_empty() && cache.is_none() {
            return None;
        }
        let in_use = (cache.iter())
            .flat_map(|c| (0..c.lives.len()).map(|s| c.in_use_curve(d, s)))
            .map(InUse::build)
            .collect();
        let bands = DeviceBands {
            layout: BandLayout::build(rec, d),
            cache,
            in_use,
            keys: Default::default(),
        };
        // The default colours on the loader thread: with a million allocations their ops
        // take most of a second to look up, which the first frame of the panel would pay.
        bands.keys(rec, timeline, ColorBy::default());
        Some(Arc::new(bands))
    }

    /// Whether the device's allocations are known (else only its segments are: the Active
    /// mode has nothing to draw).
    pub fn has_allocations(&self) -> bool {
        !self.layout.is_empty()
    }

    /// The colour keys `by` (computed once).
    pub fn keys(&self, rec: &Recording, timeline: &Timeline, by: ColorBy) -> &BandKeys {
        let slot = ColorBy::ALL.iter().position(|&c| c == by).unwrap_or(0);
        self.keys[slot].get_or_init(|| {
            timeline
                .devices
                .get(self.layout.device as usize)
                .map(|d| band_keys(rec, timeline, d, by))
                .unwrap_or_default()
        })
    }
}

/// A search's answer and its curve, for the device it was asked on.
pub struct SearchResult {
    /// The device.
    pub device: DeviceIdx,
    /// The bands matched.
    pub matches: Matches,
    /// Their live bytes over time, for per-column queries.
    pub curve: Option<CurvePyramid>,
}

/// The allocation view's state, per document.
pub struct AllocationsState {
    /// What colours the bands.
    pub color_by: ColorBy,
    /// The selected band (an index into the shown device's allocations).
    pub selected: Option<usize>,
    /// The search text.
    pub query: String,
    /// The last search, while its text is the query's.
    pub search: Option<SearchResult>,
    /// The icicle at the cursor, once built: (device, instant, tree).
    pub flame: Option<(DeviceIdx, i64, Arc<FlameTree>)>,
    /// The icicle's zoomed frame (a node of the tree).
    pub flame_zoom: Option<u32>,
    /// What the pointer is over, for the readout (and tests): band, or `None`.
    pub hovered: Option<usize>,
    /// The icicle frame under the pointer.
    pub flame_hovered: Option<u32>,
    /// The icicle's frames as drawn last frame (node, rect).
    pub flame_placed: Vec<(u32, egui::Rect)>,
    /// What the last frame of bands drew.
    pub last_frame: BandsFrame,
    /// Where the bands were drawn last frame.
    pub plot: Option<super::paint::PlotFrame>,
    /// The hover readout shown last frame.
    pub readout: Option<String>,
    /// Shown in the main area, in the timeline's place (its time axis, the window's
    /// width), instead of in the bottom tabs.
    pub main: bool,
    /// Draw the reserved memory (the allocator's segments) over the bands, and the cache
    /// between them.
    pub show_reserved: bool,
    /// The Cached mode (memory_viz's Active Cached Memory Timeline): the bands are the
    /// allocator's segments, the allocations drawn inside them.
    pub cached: bool,
    /// The segment under the pointer in the Cached mode (an index into the device's
    /// `CacheBands::lives`).
    pub hovered_segment: Option<usize>,
    /// The selected segment in the Cached mode.
    pub selected_segment: Option<usize>,
    /// Where the minimap was drawn last frame, over the whole run.
    pub minimap: Option<super::paint::PlotFrame>,
    /// A drag on the minimap in progress.
    pub brush_drag: Option<navigate::BrushDrag>,
}

impl Default for AllocationsState {
    fn default() -> AllocationsState {
        AllocationsState {
            color_by: ColorBy::default(),
            selected: None,
            query: String::new(),
            search: None,
            flame: None,
            flame_zoom: None,
            hovered: None,
            flame_hovered: None,
            flame_placed: Vec::new(),
            last_frame: BandsFrame::default(),
            plot: None,
            readout: None,
            main: false,
            show_reserved: true,
            cached: false,
            hovered_segment: None,
            selected_segment: None,
            minimap: None,
            brush_drag: None,
        }
    }
}

/// The cursor (the inspected instant) and the timeline's hover, on the bands' time axis:
/// the timeline shows them there, and so does the allocation view in its place.
pub fn cursor_ui(p: &egui::Painter, frame: &super::paint::PlotFrame, doc: &super::doc::Document) {
    let strong = p.ctx().global_style().visuals.strong_text_color();
    if let Some(t) = doc.panels.inspect.target {
        let x = frame.x(doc.rel_ns(t.at_ns));
        p.vline(
            x,
            frame.rect.y_range(),
            egui::Stroke::new(1.5, strong.gamma_multiply(0.8)),
        );
    }
    if let Some(t) = doc.hover_ns {
        let x = frame.x(t);
        p.vline(
            x,
            frame.rect.y_range(),
            egui::Stroke::new(1.0, strong.gamma_multiply(0.35)),
        );
    }
}
