//! Where the timeline's parts go in its rect: the plot, the fragmentation strip, the NVTX
//! lanes and the time axis.

use egui::{Rect, pos2};

/// Width of the byte labels left of the plot.
const Y_LABELS_WIDTH: f32 = 74.0;
/// Height of the time labels under the plot.
const TIME_AXIS_HEIGHT: f32 = 18.0;
/// Height of the fragmentation strip.
const STRIP_HEIGHT: f32 = 54.0;
/// Height the plot keeps when lanes are drawn under it.
const MIN_PLOT_HEIGHT: f32 = 80.0;
/// Space between the lanes and what is above them.
const LANES_GAP: f32 = 4.0;

/// Plot rect, strip rect, lanes rect and time-axis rect inside `full`; without a strip
/// (or lanes) its rect is empty, at the plot's (or the strip's) bottom.
pub fn layout(full: Rect, strip: bool, lanes_height: f32) -> (Rect, Rect, Rect, Rect) {
    let left = full.left() + Y_LABELS_WIDTH;
    let right = full.right() - 12.0;
    let lanes_bottom = full.bottom() - TIME_AXIS_HEIGHT;
    let (strip_height, strip_gap) = if strip {
        (STRIP_HEIGHT, 6.0)
    } else {
        (0.0, 0.0)
    };
    // The lanes give way to the plot: it keeps MIN_PLOT_HEIGHT (and the strip, where
    // there is one, its own); their rows shrink in what is left (lanes::fit).
    let room =
        full.height() - TIME_AXIS_HEIGHT - strip_height - strip_gap - LANES_GAP - MIN_PLOT_HEIGHT;
    let lanes_height = lanes_height.min(room.max(0.0));
    let lanes_top = lanes_bottom - lanes_height;
    let lanes = Rect::from_min_max(pos2(left, lanes_top), pos2(right, lanes_bottom));
    let strip_bottom = lanes_top - if lanes_height > 0.0 { LANES_GAP } else { 0.0 };
    let (strip_top, gap) = (strip_bottom - strip_height, strip_gap);
    let plot_top = full.top() + 4.0;
    let plot = Rect::from_min_max(
        pos2(left, plot_top),
        pos2(right, (strip_top - gap).max(plot_top + 1.0)),
    );
    let strip = Rect::from_min_max(pos2(left, strip_top), pos2(right, strip_bottom));
    let axis = Rect::from_min_max(pos2(left, lanes_bottom), pos2(right, full.bottom()));
    (plot, strip, lanes, axis)
}
