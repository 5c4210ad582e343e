//! Where the timeline's parts go in its rect: the plot, the fragmentation strip, the NVTX
//! lanes and the time axis.

use egui::{Rect, pos2};

/// Width of the byte labels left of the plot.
const Y_LABELS_WIDTH: f32 = 74.0;
/// Height of the time labels under the plot.
const TIME_AXIS_HEIGHT: f32 = 18.0;
/// Height of the fragmentation strip.
const STRIP_HEIGHT: f32 = 54.0;
/// Height the plot keeps when lanes are drawn under it, at least.
const MIN_PLOT_HEIGHT: f32 = 80.0;
/// Share of the height the plot and the lanes divide that the plot keeps: lanes taller than
/// the rest scroll (the wheel over them), so at 1000×700 the op stack's eight levels leave
/// the memory readable.
const MIN_PLOT_SHARE: f32 = 0.5;
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
    // The lanes give way to the plot: it keeps MIN_PLOT_HEIGHT or MIN_PLOT_SHARE of what
    // the two divide, whichever is more (and the strip, where there is one, its own); their
    // rows shrink in what is left (lanes::fit).
    let shared = full.height() - TIME_AXIS_HEIGHT - strip_height - strip_gap - LANES_GAP;
    let room = shared - MIN_PLOT_HEIGHT.max(MIN_PLOT_SHARE * shared);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_leave_the_plot_half_of_what_they_share() {
        // GIVEN a 300-point timeline without a strip, and lanes asking for 400 points
        let full = Rect::from_min_max(pos2(0.0, 0.0), pos2(1000.0, 300.0));
        let (plot, _, lanes, axis) = layout(full, false, 400.0);
        // THEN the plot and the lanes split the 278 points between the top and the axis
        // (less the gap), the plot keeping half
        let shared = 300.0 - TIME_AXIS_HEIGHT - LANES_GAP;
        assert_eq!(lanes.height(), shared / 2.0);
        assert!(plot.height() >= shared / 2.0 - 4.0, "{plot:?}");
        assert_eq!(axis.top(), lanes.bottom());
        // AND lanes that fit take only what they ask
        let (_, _, lanes, _) = layout(full, false, 60.0);
        assert_eq!(lanes.height(), 60.0);
        // AND in a short timeline the plot keeps MIN_PLOT_HEIGHT
        let short = Rect::from_min_max(pos2(0.0, 0.0), pos2(1000.0, 150.0));
        let (_, _, lanes, _) = layout(short, false, 400.0);
        assert_eq!(
            lanes.height(),
            150.0 - TIME_AXIS_HEIGHT - LANES_GAP - MIN_PLOT_HEIGHT
        );
    }
}
