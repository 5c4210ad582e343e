//! The device's capacity as a dashed ceiling across the plot, its label placed where the
//! curves leave it room: over the stretch where the curves are lowest, above the line
//! where the plot has room there under the step labels (the curves cannot rise above the
//! capacity), else under it. A capacity far above the curves is not scaled to (the curves
//! would lie flat on the floor): the toolbar then says it is off scale, with the share of
//! it the curves reach.

use egui::{Color32, FontId, Painter, Rect, Shape, Stroke, pos2};

use super::super::paint::{Columns, PlotFrame, TOP_LABELS_HEIGHT};
use super::super::units;

/// The label's font size (points).
const LABEL_FONT_POINTS: f32 = 11.0;
/// Candidate label positions are this many columns apart: a 1900-point plot tries about
/// 475 places, each a max over the label's ~120 columns of up to 3 curves (~170k compares
/// a frame, well under a millisecond).
const PLACE_STEP_COLUMNS: usize = 4;
/// The y axis reaches the capacity only while it is at most this many times the curves'
/// top: past it the curves would fill under a quarter of the plot's height (an 80 GB
/// GPU's line over a 100 MB run leaves them a pixel), so the axis fits the curves and the
/// toolbar says the capacity is off scale.
pub const OFF_SCALE_RATIO: f64 = 4.0;
/// The label keeps this far (points) from the peak's label, which sits in the same row
/// when the curves reach the top.
const PEAK_CLEARANCE_POINTS: f32 = 8.0;

/// Whether the y axis is scaled to reach `total_bytes` over curves reaching `top_bytes`.
pub fn on_scale(total_bytes: u64, top_bytes: i64) -> bool {
    total_bytes as f64 <= OFF_SCALE_RATIO * top_bytes.max(1) as f64
}

/// The line's label.
pub fn label(total_bytes: i64) -> String {
    format!("device total {}", units::bytes(total_bytes))
}

/// What the toolbar says of a capacity off the scale: its size and the share of it the
/// curves reach.
pub fn off_scale_note(total_bytes: i64, top_bytes: i64) -> String {
    let share = 100.0 * top_bytes.max(0) as f64 / total_bytes.max(1) as f64;
    let share = if share >= 1.0 {
        format!("{share:.0} %")
    } else {
        format!("{share:.2} %")
    };
    format!(
        "{} · off scale (the curves reach {share})",
        units::bytes(total_bytes)
    )
}

/// The ceiling at `total_bytes` with its label; `curves` are every curve drawn on the plot
/// (the label avoids them, and `peak_label`, where the peak's label goes). Returns where
/// the label went (tests check it).
pub fn capacity_ui(
    painter: &Painter,
    frame: &PlotFrame,
    total_bytes: i64,
    curves: &[&Columns],
    peak_label: Option<Rect>,
    color: Color32,
) -> Option<Rect> {
    let rect = frame.rect;
    let y = frame.y(total_bytes as f64);
    if y < rect.top() - 1.0 || y > rect.bottom() {
        return None;
    }
    let line = [pos2(rect.left(), y), pos2(rect.right(), y)];
    painter.extend(Shape::dashed_line(&line, Stroke::new(1.0, color), 6.0, 4.0));
    let galley = painter.layout_no_wrap(
        label(total_bytes),
        FontId::proportional(LABEL_FONT_POINTS),
        color,
    );
    let size = galley.size();
    let above = y - 2.0 - size.y >= rect.top() + TOP_LABELS_HEIGHT;
    let top = if above { y - 2.0 - size.y } else { y + 2.0 };
    let width_columns = (size.x.ceil() as usize + 8).min(frame.columns());
    // The peak's label, in columns (widened by the label's own 4-point inset).
    let avoid = peak_label
        .filter(|r| r.top() < top + size.y && r.bottom() > top)
        .map(|r| {
            let lo = (r.left() - rect.left() - PEAK_CLEARANCE_POINTS - 4.0).max(0.0) as usize;
            lo..(r.right() - rect.left() + PEAK_CLEARANCE_POINTS).max(0.0) as usize
        });
    let left_column = lowest_stretch(curves, frame.columns(), width_columns, avoid);
    let at = pos2(rect.left() + left_column as f32 + 4.0, top);
    let placed = Rect::from_min_size(at, size);
    if !above {
        // Under the line the label sits over the curves' lowest stretch; a backing keeps
        // it readable where even that stretch reaches it.
        let bg = painter
            .ctx()
            .global_style()
            .visuals
            .extreme_bg_color
            .gamma_multiply(0.85);
        painter.rect_filled(placed.expand(1.0), 2.0, bg);
    }
    painter.galley(at, galley, color);
    Some(placed)
}

/// The first column of the `width`-column stretch whose highest curve value is the lowest
/// (the rightmost of equals, where a ceiling's label reads best), among those clear of the
/// `avoid` columns when any is.
fn lowest_stretch(
    curves: &[&Columns],
    columns: usize,
    width: usize,
    avoid: Option<std::ops::Range<usize>>,
) -> usize {
    let high = |c: usize| -> i64 {
        curves
            .iter()
            .filter_map(|cols| cols.get(c).copied().flatten())
            .map(|r| r.1)
            .max()
            .unwrap_or(i64::MIN)
    };
    let last = columns.saturating_sub(width);
    let clear = |start: usize| {
        avoid
            .as_ref()
            .is_none_or(|a| start + width <= a.start || start >= a.end)
    };
    // (not clear of `avoid`, highest value): the smallest wins, so a clear stretch beats
    // any that is not, then the lowest.
    let mut best = ((true, i64::MAX), last);
    let mut start = last;
    loop {
        let worst = (start..start + width).map(high).max().unwrap_or(i64::MIN);
        let key = (!clear(start), worst);
        if key < best.0 {
            best = (key, start);
        }
        if start == 0 {
            break;
        }
        start = start.saturating_sub(PLACE_STEP_COLUMNS);
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::{label, lowest_stretch, off_scale_note, on_scale};

    #[test]
    fn the_label_goes_over_the_lowest_stretch() {
        // GIVEN a curve high on the left, low in columns 20..30, high again after
        let cols: Vec<Option<(i64, i64)>> = (0..40)
            .map(|c| Some((0, if (20..30).contains(&c) { 5 } else { 100 })))
            .collect();
        // THEN an 8-column label starts inside the low stretch
        let at = lowest_stretch(&[&cols], 40, 8, None);
        assert!((20..=22).contains(&at), "{at}");
        // and with no curve yet, the rightmost place wins
        let empty: Vec<Option<(i64, i64)>> = vec![None; 40];
        assert_eq!(lowest_stretch(&[&empty], 40, 8, None), 32);
        // Kept clear of the peak's label: the lowest clear stretch, else any.
        assert_eq!(lowest_stretch(&[&empty], 40, 8, Some(28..40)), 20);
        let at = lowest_stretch(&[&cols], 40, 8, Some(18..32));
        assert!(at + 8 <= 18 || at >= 32, "{at}");
        assert_eq!(lowest_stretch(&[&empty], 40, 8, Some(0..40)), 32);
    }

    #[test]
    fn a_capacity_far_above_the_curves_is_off_scale() {
        // A 32 GiB V100 over a 12 GiB run: the axis reaches the line.
        assert!(on_scale(32 << 30, 12 << 30));
        assert!(on_scale(4 << 30, 1 << 30));
        // An 80 GB H100 over a 97 MiB run: off scale, and the label says how much is used.
        assert!(!on_scale(80_000_000_000, 97 << 20));
        assert_eq!(label(32 << 30), "device total 32.00 GiB");
        assert_eq!(
            off_scale_note(80 << 30, 2 << 30),
            "80.00 GiB · off scale (the curves reach 2 %)"
        );
        assert_eq!(
            off_scale_note(80 << 30, 96 << 20),
            "80.00 GiB · off scale (the curves reach 0.12 %)"
        );
    }
}
