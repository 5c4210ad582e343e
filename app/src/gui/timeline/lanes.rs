//! NVTX ranges, or the op stack (View › Op stack lanes: module → op → kernel launch,
//! as Perfetto nests slices), as lanes under the timeline, on its time axis: one lane per
//! thread, nested ranges one row deeper (as Nsight Systems draws them), each range named
//! where it is wide enough; spans under a point already drawn are skipped by a binary
//! search, so a row of a million ops costs the points it covers. Hovering a range shows its name and duration. The rows come from
//! `collector::analysis::lanes`, computed once at load.

use egui::{Align2, FontId, Pos2, Rect, Stroke, pos2, vec2};

use collector::analysis::lanes::LaneRow;

use super::super::axis::ellipsize;
use super::super::doc::Document;
use super::super::paint::PlotFrame;
use super::super::theme::Palette;
use super::super::units;

/// Height of one row of a lane where the window has room.
pub const ROW_HEIGHT: f32 = 15.0;
/// Height of one row at least: in a short window the rows shrink to this (the 10.5-point
/// names still whole) before a row is left out.
pub const MIN_ROW_HEIGHT: f32 = 12.0;
/// Rows drawn at once at most (further rows are scrolled to with the wheel over the
/// lanes, and the note says which are shown): each costs the plot up to [`ROW_HEIGHT`].
pub const MAX_ROWS: usize = 10;
/// Room above and below the rows.
const MARGIN: f32 = 4.0;
/// Ranges narrower than this many points are drawn this wide, so short ones stay visible.
const MIN_WIDTH: f32 = 1.0;
/// Ranges wider than this many points carry their name.
const LABEL_MIN_WIDTH: f32 = 28.0;

/// The rows the lanes show: the op stack where asked for, else the NVTX ranges.
pub fn rows(doc: &Document) -> &[LaneRow] {
    if doc.timeline.show_op_lanes {
        &doc.data.op_lanes
    } else {
        &doc.data.lanes
    }
}

/// The height the lanes of `doc` take where there is room (0 when it has none); where
/// there is less, their rows shrink ([`fit`]).
pub fn height(doc: &Document) -> f32 {
    let rows = rows(doc).len().min(MAX_ROWS);
    if rows == 0 {
        0.0
    } else {
        rows as f32 * ROW_HEIGHT + MARGIN
    }
}

/// How the rows fit in the lanes' area.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// Rows drawn (the first ones).
    pub rows: usize,
    /// Height of each.
    pub row_height: f32,
}

/// The rows of `rows` that fit in an area `height` high: every one (up to [`MAX_ROWS`])
/// at [`ROW_HEIGHT`] where there is room, shrunk towards [`MIN_ROW_HEIGHT`] where there
/// is not, fewer only below that.
pub fn fit(height: f32, rows: usize) -> Fit {
    let wanted = rows.min(MAX_ROWS);
    let room = (height - MARGIN).max(0.0);
    let row_height = (room / wanted.max(1) as f32)
        .clamp(MIN_ROW_HEIGHT, ROW_HEIGHT)
        .floor();
    Fit {
        rows: wanted.min((room / row_height) as usize),
        row_height,
    }
}

/// The first row drawn, `scrolled` rows down, of `total` rows of which `fit` are drawn.
pub fn first_row(scrolled: f32, total: usize, fit: usize) -> usize {
    (scrolled.max(0.0).round() as usize).min(total.saturating_sub(fit))
}

/// Scroll the lanes by `dy` points of wheel (positive: towards the first row) when the
/// pointer is over them or their names and their rows do not all fit; whether the wheel
/// was taken (else it zooms the time axis as anywhere on the timeline).
pub fn scroll(doc: &mut Document, pointer: Pos2, dy: f32) -> bool {
    let Some((area, fit)) = doc.timeline.last_lanes else {
        return false;
    };
    let total = rows(doc).len();
    let over = area.expand2(vec2(Y_LABEL_ROOM, 0.0)).contains(pointer);
    if dy == 0.0 || fit.rows >= total || !over {
        return false;
    }
    let last = total.saturating_sub(fit.rows) as f32;
    let rows = doc.timeline.lanes_scroll_rows.clamp(0.0, last) - dy / fit.row_height.max(1.0);
    doc.timeline.lanes_scroll_rows = rows.clamp(0.0, last);
    true
}

/// Draw the lanes into `area` on `frame`'s time axis; return the hover text of the range
/// under `pointer`.
pub fn lanes_ui(
    painter: &egui::Painter,
    doc: &Document,
    frame: &PlotFrame,
    area: Rect,
    pointer: Option<Pos2>,
    palette: &Palette,
) -> Option<String> {
    let rec = &doc.data.rec;
    let p = painter.with_clip_rect(area.expand2(vec2(Y_LABEL_ROOM, 0.0)));
    p.rect_filled(area, 2.0, palette.plot_bg);
    let font = FontId::proportional(10.5);
    let mut hovered = None;
    // Rows that fit the area (the plot may have taken some of their room).
    let Fit {
        rows: fit,
        row_height,
    } = fit(area.height(), rows(doc).len());
    let total = rows(doc).len();
    let first = first_row(doc.timeline.lanes_scroll_rows, total, fit);
    for (n, row) in rows(doc).iter().skip(first).take(fit).enumerate() {
        let y0 = area.top() + MARGIN / 2.0 + n as f32 * row_height;
        // A thread's name beside its first row, and beside the top row when scrolled into
        // the middle of a thread's nested rows.
        if row.depth == 0 || n == 0 {
            let name = rec
                .threads
                .get(row.thread as usize)
                .map_or_else(String::new, |t| {
                    t.name.clone().unwrap_or_else(|| t.tid.clone())
                });
            p.text(
                pos2(area.left() - 4.0, y0 + row_height / 2.0 - 1.0),
                Align2::RIGHT_CENTER,
                ellipsize(&name, 11),
                font.clone(),
                palette.weak_text,
            );
            p.hline(area.x_range(), y0 - 1.0, Stroke::new(0.5, palette.grid));
        }
        // By the row's own index: a row keeps its colour as the lanes scroll.
        let color = palette.categories[(row.depth + first + n) % palette.categories.len()];
        let y_range = y0..=y0 + row_height - 2.0;
        hovered = spans_ui(
            &p,
            doc,
            frame,
            (area, y_range),
            &row.spans,
            pointer,
            (color, palette),
        )
        .or(hovered);
    }
    if total > fit {
        p.text(
            area.right_bottom() - vec2(4.0, 2.0),
            Align2::RIGHT_BOTTOM,
            format!(
                "rows {}–{} of {total} · the wheel over them scrolls",
                first + 1,
                first + fit
            ),
            font,
            palette.weak_text,
        );
    }
    let o = rec.ops.get(hovered? as usize)?;
    Some(format!(
        "{}\n{} · from {}",
        rec.op_name(o),
        units::format_duration_ns((o.end_ns - o.start_ns) as f64),
        units::format_time_ns(doc.rel_ns(o.start_ns))
    ))
}

/// Draw one row's spans (those of `from..=to`) in `y_range` of `area`; return the span
/// under `pointer`.
fn spans_ui(
    p: &egui::Painter,
    doc: &Document,
    frame: &PlotFrame,
    (area, y_range): (Rect, std::ops::RangeInclusive<f32>),
    spans: &[u32],
    pointer: Option<Pos2>,
    (color, palette): (egui::Color32, &Palette),
) -> Option<u32> {
    let rec = &doc.data.rec;
    let (from, to) = (doc.abs_ns(frame.t0_ns), doc.abs_ns(frame.t1_ns));
    let font = FontId::proportional(10.5);
    let mut hovered = None;
    // A row's ranges do not overlap: in start order, they are in end order too.
    let first = spans.partition_point(|&i| rec.ops.get(i as usize).is_none_or(|o| o.end_ns < from));
    let end_of = |i: u32| rec.ops.get(i as usize).map_or(i64::MIN, |o| o.end_ns);
    let mut last_x = f32::NEG_INFINITY;
    let mut k = first;
    while let Some(&i) = spans.get(k) {
        k += 1;
        let Some(o) = rec.ops.get(i as usize) else {
            continue;
        };
        if o.start_ns > to {
            break;
        }
        // Wholly under what is drawn already (even at its least width): go on from the
        // first span that ends past that.
        if frame.x(doc.rel_ns(o.end_ns)) + MIN_WIDTH < last_x {
            let past = doc.abs_ns(frame.t_at(last_x - MIN_WIDTH));
            k += spans
                .get(k..)
                .map_or(0, |rest| rest.partition_point(|&j| end_of(j) < past));
            continue;
        }
        let x0 = frame.x(doc.rel_ns(o.start_ns)).max(area.left());
        let x1 = frame
            .x(doc.rel_ns(o.end_ns))
            .min(area.right())
            .max(x0 + MIN_WIDTH);
        let r = Rect::from_x_y_ranges(x0..=x1, y_range.clone());
        if pointer.is_some_and(|p| r.expand2(vec2(1.0, 0.0)).contains(p)) {
            hovered = Some(i);
        }
        if x1 < last_x + 0.5 {
            continue;
        }
        last_x = x1;
        p.rect_filled(r, 1.0, color.gamma_multiply(0.75));
        if x1 - x0 >= LABEL_MIN_WIDTH {
            let chars = ((x1 - x0 - 6.0) / 6.0).max(1.0) as usize;
            p.with_clip_rect(r).text(
                pos2(x0 + 3.0, r.center().y),
                Align2::LEFT_CENTER,
                ellipsize(rec.op_name(o), chars),
                font.clone(),
                palette.plot_bg,
            );
        }
    }
    hovered
}

/// Room left of the lanes for the thread names (the plot's byte labels' margin).
const Y_LABEL_ROOM: f32 = 74.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_shrink_before_one_is_left_out() {
        // Room for five rows at full height, at the least height, and for three only.
        let full = fit(5.0 * ROW_HEIGHT + MARGIN, 5);
        assert_eq!((full.rows, full.row_height), (5, ROW_HEIGHT));
        let least = fit(5.0 * MIN_ROW_HEIGHT + MARGIN, 5);
        assert_eq!((least.rows, least.row_height), (5, MIN_ROW_HEIGHT));
        let short = fit(3.5 * MIN_ROW_HEIGHT + MARGIN, 5);
        assert_eq!((short.rows, short.row_height), (3, MIN_ROW_HEIGHT));
        // More than MAX_ROWS: at most MAX_ROWS drawn.
        assert_eq!(fit(1000.0, MAX_ROWS + 3).rows, MAX_ROWS);
    }
}
