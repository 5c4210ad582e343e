//! The device's capacity as a dashed ceiling across the plot, its label placed where the
//! curves leave it room: over the stretch where the curves are lowest, above the line
//! where the plot has room there under the step labels (the curves cannot rise above the
//! capacity), else under it.

use egui::{Color32, FontId, Painter, Rect, Shape, Stroke, pos2};

use super::super::paint::{Columns, PlotFrame, TOP_LABELS_HEIGHT};

/// The label's font size (points).
const LABEL_FONT_POINTS: f32 = 11.0;
/// Candidate label positions are this many columns apart: a 1900-point plot tries about
/// 475 places, each a max over the label's ~120 columns of up to 3 curves (~170k compares
/// a frame, well under a millisecond).
const PLACE_STEP_COLUMNS: usize = 4;

/// The ceiling at `total_bytes` with its `label`; `curves` are every curve drawn on the
/// plot (the label avoids them). Returns where the label went (tests check it).
pub fn capacity_ui(
    painter: &Painter,
    frame: &PlotFrame,
    total_bytes: f64,
    label: &str,
    curves: &[&Columns],
    color: Color32,
) -> Option<Rect> {
    let rect = frame.rect;
    let y = frame.y(total_bytes);
    if y < rect.top() - 1.0 || y > rect.bottom() {
        return None;
    }
    let line = [pos2(rect.left(), y), pos2(rect.right(), y)];
    painter.extend(Shape::dashed_line(&line, Stroke::new(1.0, color), 6.0, 4.0));
    let galley = painter.layout_no_wrap(
        label.to_owned(),
        FontId::proportional(LABEL_FONT_POINTS),
        color,
    );
    let size = galley.size();
    let above = y - 2.0 - size.y >= rect.top() + TOP_LABELS_HEIGHT;
    let top = if above { y - 2.0 - size.y } else { y + 2.0 };
    let width_columns = (size.x.ceil() as usize + 8).min(frame.columns());
    let left_column = lowest_stretch(curves, frame.columns(), width_columns);
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
/// (the rightmost of equals, where a ceiling's label reads best).
fn lowest_stretch(curves: &[&Columns], columns: usize, width: usize) -> usize {
    let high = |c: usize| -> i64 {
        curves
            .iter()
            .filter_map(|cols| cols.get(c).copied().flatten())
            .map(|r| r.1)
            .max()
            .unwrap_or(i64::MIN)
    };
    let last = columns.saturating_sub(width);
    let mut best = (i64::MAX, last);
    let mut start = last;
    loop {
        let worst = (start..start + width).map(high).max().unwrap_or(i64::MIN);
        if worst < best.0 {
            best = (worst, start);
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
    use super::lowest_stretch;

    #[test]
    fn the_label_goes_over_the_lowest_stretch() {
        // GIVEN a curve high on the left, low in columns 20..30, high again after
        let cols: Vec<Option<(i64, i64)>> = (0..40)
            .map(|c| Some((0, if (20..30).contains(&c) { 5 } else { 100 })))
            .collect();
        // THEN an 8-column label starts inside the low stretch
        let at = lowest_stretch(&[&cols], 40, 8);
        assert!((20..=22).contains(&at), "{at}");
        // and with no curve yet, the rightmost place wins
        let empty: Vec<Option<(i64, i64)>> = vec![None; 40];
        assert_eq!(lowest_stretch(&[&empty], 40, 8), 32);
    }
}
