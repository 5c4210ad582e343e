//! Every device as a small multiple over the timeline: one compact plot per device (its
//! allocated filled, its reserved as a line, each on its own scale), all on the main
//! plot's time axis, with a linked cursor — the time under the pointer, in any of them or
//! in the main plot, is marked in all. Clicking one shows that device in the main plot.

use egui::text::{LayoutJob, TextFormat, TextWrapping};
use egui::{Align2, Color32, FontId, Rect, Sense, Stroke, Ui, pos2, vec2};

use super::Command;

use super::doc::Document;
use super::paint::{self, PlotFrame};
use super::theme::Palette;
use super::units;

/// Height of one device's plot where the window has room: its name and its top beside it.
pub const ROW_HEIGHT: f32 = 34.0;
/// Height of one device's plot at least: in a short window the rows shrink to this before
/// a device is left out; below [`TWO_LINE_HEIGHT`] the label is the name alone and the
/// top is in the row's hover text.
pub const MIN_ROW_HEIGHT: f32 = 18.0;
/// Row height from which the label has its second line (the top of the curves in view).
const TWO_LINE_HEIGHT: f32 = 28.0;
/// Devices drawn as multiples at most (each costs the main plot a row); a recording with
/// more shows the first ones, accelerators first.
pub const MAX_DEVICES: usize = 8;
/// Height left to the main timeline (its plot, strip, lanes and axis) at least.
const MIN_PLOT_ROOM: f32 = 200.0;
/// Width of the device names left of the plots (the main plot's byte labels' margin);
/// a longer name is cut with "…" and whole in the hover text.
const LABEL_WIDTH: f32 = 74.0;
/// Space between a label and its plot.
const LABEL_GAP: f32 = 6.0;

/// How the multiples fit in a timeline of a given height.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layout {
    /// Devices drawn (the first ones of the shown list).
    pub rows: usize,
    /// Height of each row.
    pub row_height: f32,
}

/// The rows for `devices` devices in `available_height`: all of them (up to
/// [`MAX_DEVICES`]) at [`ROW_HEIGHT`] where that leaves the main plot its room, shrunk
/// towards [`MIN_ROW_HEIGHT`] where it does not, fewer devices only below that; `None`
/// when fewer than two fit.
pub fn layout(available_height: f32, devices: usize) -> Option<Layout> {
    let wanted = devices.min(MAX_DEVICES);
    let room = (available_height - MIN_PLOT_ROOM).max(0.0);
    let rows = wanted.min((room / MIN_ROW_HEIGHT) as usize);
    (rows >= 2).then(|| Layout {
        rows,
        row_height: (room / rows as f32)
            .clamp(MIN_ROW_HEIGHT, ROW_HEIGHT)
            .floor(),
    })
}

/// Whether `doc` has devices enough to draw multiples of.
pub fn wanted(doc: &Document) -> bool {
    doc.data.shown_devices.len() > 1
}

/// Draw the multiples at the top of `ui` (when the recording has several devices) and
/// handle their hover and clicks; whether the pointer is over them.
pub fn multiples_ui(
    ui: &mut Ui,
    doc: &mut Document,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) -> bool {
    if !wanted(doc) {
        return false;
    }
    // The main plot keeps MIN_PLOT_ROOM: in a small window the rows shrink, then fewer
    // devices are drawn.
    let Some(fit) = layout(ui.available_height(), doc.data.shown_devices.len()) else {
        doc.timeline.last_multiples = None;
        return false;
    };
    let devices: Vec<_> = doc.data.shown_devices[..fit.rows].to_vec();
    let width = ui.available_width();
    let (area, response) = ui.allocate_exact_size(
        vec2(width, fit.rows as f32 * fit.row_height + 4.0),
        Sense::click(),
    );
    doc.timeline.last_multiples = Some((area, fit));
    let painter = ui.painter_at(area);
    let pointer = response.hover_pos();
    if let Some(p) = pointer {
        let plot_x = area.left() + LABEL_WIDTH..=area.right() - 12.0;
        doc.hover_ns = plot_x
            .contains(&p.x)
            .then(|| frame_for(doc, area, fit, 0).t_at(p.x));
    }
    let mut under_pointer = None;
    for (n, &device) in devices.iter().enumerate() {
        let frame = frame_for(doc, area, fit, n);
        let (rect, top) = device_ui(&painter, doc, frame, fit, device, palette);
        let row = rect.expand2(vec2(LABEL_WIDTH, 2.0));
        if pointer.is_some_and(|p| row.contains(p)) {
            under_pointer = Some((device, top));
            if response.clicked() && device != doc.device {
                cmds.push(Command::SetDevice(device));
            }
        }
    }
    let hovered = response.hovered();
    if hovered {
        let text = match under_pointer {
            Some((device, top)) => format!(
                "{} · up to {} in view\nEvery device on the same time axis: click one to show it below",
                doc.data.device_name(device),
                units::bytes(top)
            ),
            None => "Every device on the same time axis: click one to show it below".to_owned(),
        };
        response.on_hover_text_at_pointer(text);
    }
    hovered
}

/// One device's plot on `frame` (its y scale fitted to its own curves), its name and
/// top, the linked cursor; returns its rect and the top of its curves in view.
fn device_ui(
    painter: &egui::Painter,
    doc: &Document,
    frame: PlotFrame,
    fit: Layout,
    device: collector::model::DeviceIdx,
    palette: &Palette,
) -> (Rect, i64) {
    let rect = frame.rect;
    let selected = device == doc.device;
    painter.rect_filled(rect, 2.0, palette.plot_bg);
    if selected {
        painter.rect_stroke(
            rect,
            2.0,
            Stroke::new(1.5, palette.cursor),
            egui::StrokeKind::Outside,
        );
    }
    let curves = doc.data.curves.get(device as usize);
    let origin = doc.data.rec.meta.start_ns;
    let allocated = paint::query(curves.and_then(|c| c.allocated.as_ref()), &frame, origin);
    let reserved = paint::query(curves.and_then(|c| c.reserved.as_ref()), &frame, origin);
    let top = paint::columns_max(&allocated)
        .max(paint::columns_max(&reserved))
        .unwrap_or(0)
        .max(1024);
    let frame = PlotFrame {
        y1: top as f64 * 1.1,
        ..frame
    };
    let p = painter.with_clip_rect(rect);
    paint::fill_under(&p, &frame, &allocated, palette.allocated_fill);
    paint::envelope(&p, &frame, &allocated, palette.allocated, 1.0, None);
    paint::envelope(&p, &frame, &reserved, palette.reserved, 1.0, None);
    let name_color = if selected {
        palette.cursor
    } else {
        palette.weak_text
    };
    let two_lines = fit.row_height >= TWO_LINE_HEIGHT;
    let name_y = if two_lines {
        rect.center().y - 6.0
    } else {
        rect.center().y
    };
    let name = doc.data.device_name(device);
    label(painter, rect.left(), name_y, &name, 11.0, name_color);
    if two_lines {
        let top_text = units::bytes(top);
        label(
            painter,
            rect.left(),
            rect.center().y + 7.0,
            &top_text,
            9.5,
            palette.weak_text,
        );
    }
    if let Some(t) = doc.hover_ns {
        p.vline(frame.x(t), rect.y_range(), Stroke::new(1.0, palette.cursor));
    }
    (rect, top)
}

/// `text` right-aligned at `right` − [`LABEL_GAP`], vertically centred on `y`, on one line
/// cut with "…" to the label column's width.
fn label(painter: &egui::Painter, right: f32, y: f32, text: &str, size: f32, color: Color32) {
    let mut job = LayoutJob::single_section(
        text.to_owned(),
        TextFormat::simple(FontId::proportional(size), color),
    );
    job.wrap = TextWrapping {
        max_width: LABEL_WIDTH - LABEL_GAP,
        max_rows: 1,
        break_anywhere: true,
        overflow_character: Some('…'),
    };
    let galley = painter.layout_job(job);
    let at = Align2::RIGHT_CENTER
        .anchor_size(pos2(right - LABEL_GAP, y), galley.size())
        .min;
    painter.galley(at, galley, color);
}

/// The frame of the `n`-th multiple in `area`, on the document's time view.
fn frame_for(doc: &Document, area: Rect, fit: Layout, n: usize) -> PlotFrame {
    let top = area.top() + 2.0 + n as f32 * fit.row_height;
    let rect = Rect::from_min_max(
        pos2(area.left() + LABEL_WIDTH, top),
        pos2(area.right() - 12.0, top + fit.row_height - 4.0),
    );
    PlotFrame {
        rect,
        t0_ns: doc.view.t0_ns,
        t1_ns: doc.view.t1_ns,
        y0: 0.0,
        y1: 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_shrink_before_devices_are_left_out() {
        // Room for all at full height: no taller than ROW_HEIGHT.
        let full = layout(MIN_PLOT_ROOM + 400.0, 5).expect("fits");
        assert_eq!((full.rows, full.row_height), (5, ROW_HEIGHT));
        // 100 points of room for five: rows of 20.
        let short = layout(MIN_PLOT_ROOM + 100.0, 5).expect("fits");
        assert_eq!((short.rows, short.row_height), (5, 20.0));
        // 40 points: two rows (of 20), the rest left out.
        let shorter = layout(MIN_PLOT_ROOM + 40.0, 5).expect("fits");
        assert_eq!((shorter.rows, shorter.row_height), (2, 20.0));
        // Room for one row only, or one device: none.
        assert_eq!(layout(MIN_PLOT_ROOM + 30.0, 5), None);
        assert_eq!(layout(MIN_PLOT_ROOM + 400.0, 1), None);
        // More devices than MAX_DEVICES: the first MAX_DEVICES.
        assert_eq!(layout(2000.0, 20).expect("fits").rows, MAX_DEVICES);
    }
}
