//! What the timeline remembers between frames, per open file: the user's choices (a box
//! zoom's y range, the capacity ceiling, the stack by category), the drag in progress,
//! where last frame drew its plot, lanes and multiples (input maps the pointer with them),
//! and the curve columns cached for the next frame.

use super::super::multiples;
use super::{ColumnCache, LanesFit};

/// A drag on the timeline in progress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DragMode {
    /// Moving the view.
    Pan,
    /// Selecting a range from this time (ns since start).
    Select(f64),
    /// Box zoom from this screen position.
    BoxZoom(egui::Pos2),
}

/// The timeline's state in one open file.
pub struct TimelineState {
    /// A y range set by box zoom; `None` fits the visible data.
    pub y_range: Option<(f64, f64)>,
    /// The y range drawn last frame (box zoom maps screen to bytes with it).
    pub last_y: (f64, f64),
    /// Where the plot was drawn last frame.
    pub last_plot_rect: Option<egui::Rect>,
    /// Where the device multiples were drawn last frame, and their rows.
    pub last_multiples: Option<(egui::Rect, multiples::Layout)>,
    /// Where the NVTX lanes were drawn last frame, and their rows.
    pub last_lanes: Option<(egui::Rect, LanesFit)>,
    /// Rows of the NVTX lanes scrolled past, where more rows than fit (the wheel over them).
    pub lanes_scroll_rows: f32,
    /// The device's capacity when it was too far above the curves to scale to last frame:
    /// what the toolbar says of it ("79.18 GiB · off scale (the curves reach 3 %)").
    pub capacity_off_scale: Option<String>,
    /// The last frames' curve columns.
    pub columns: ColumnCache,
    /// A drag in progress.
    pub drag: Option<DragMode>,
    /// Draw the device's capacity as a ceiling (on by default: drawn wherever the
    /// capacity is known).
    pub show_total: bool,
    /// Whether the timeline draws the allocated memory stacked by category.
    pub show_categories: bool,
    /// Whether the lanes under the plot show the op stack instead of the NVTX ranges.
    pub show_op_lanes: bool,
}

impl Default for TimelineState {
    fn default() -> TimelineState {
        TimelineState {
            y_range: None,
            last_y: (0.0, 1.0),
            last_plot_rect: None,
            last_multiples: None,
            last_lanes: None,
            lanes_scroll_rows: 0.0,
            capacity_off_scale: None,
            columns: ColumnCache::default(),
            drag: None,
            show_total: true,
            show_categories: false,
            show_op_lanes: false,
        }
    }
}
