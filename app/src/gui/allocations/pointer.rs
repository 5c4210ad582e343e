//! The pointer over the bands: the band under it read out beside it (size, where it was
//! made, its lifetime), a click selects it (or clears on empty space), Esc clears.

use collector::analysis::allocations::{op_of, site_frame};
use collector::analysis::live::without_directory;
use collector::timeline::Allocation;
use egui::{FontId, Rect, Response, Stroke, Ui, vec2};

use super::super::doc::Document;
use super::super::paint::PlotFrame;
use super::super::theme::Palette;
use super::super::units;
use super::DeviceBands;

/// Hover: the band under the pointer (size, op, lifetime) read out beside it; a click
/// selects it (or clears on empty space); Esc clears.
pub(super) fn pointer_ui(
    ui: &Ui,
    painter: &egui::Painter,
    frame: &PlotFrame,
    doc: &mut Document,
    bands: &DeviceBands,
    response: &Response,
    palette: &Palette,
) {
    let data = doc.data.clone();
    let origin = data.rec.meta.start_ns;
    let Some(d) = data.timeline.devices.get(doc.device as usize) else {
        return;
    };
    let under = |pos: egui::Pos2| {
        let (t, bytes) = at_point(frame, origin, pos);
        (t, bands.layout.band_at(d, t, bytes))
    };
    let hovered = response.hover_pos().filter(|p| frame.rect.contains(*p));
    doc.panels.allocations.hovered = hovered.and_then(|p| under(p).1);
    if response.clicked()
        && let Some(pos) = response.interact_pointer_pos()
    {
        doc.panels.allocations.selected = under(pos).1;
    }
    if doc.panels.allocations.selected.is_some()
        && !ui.ctx().egui_wants_keyboard_input()
        && super::super::timeline::escape_for_views(ui.ctx())
    {
        doc.panels.allocations.selected = None;
    }
    doc.panels.allocations.readout = None;
    let (Some(pos), Some(i)) = (hovered, doc.panels.allocations.hovered) else {
        return;
    };
    let Some(a) = d.allocations.get(i) else {
        return;
    };
    let text = readout(&data, d, i, a);
    doc.panels.allocations.readout = Some(text.clone());
    readout_ui(painter, frame, pos, text, palette);
}

/// The instant (ns on the recording's clock, `origin` its start) and the height in bytes
/// at `pos` on the plot.
pub(super) fn at_point(frame: &PlotFrame, origin: i64, pos: egui::Pos2) -> (i64, i64) {
    let t = origin + frame.t_at(pos.x).round() as i64;
    let bytes = frame.y0
        + (frame.rect.bottom() - pos.y) as f64 / frame.rect.height().max(1.0) as f64
            * (frame.y1 - frame.y0);
    (t, bytes as i64)
}

/// A readout beside the pointer at `pos`, kept inside the plot.
pub(super) fn readout_ui(
    painter: &egui::Painter,
    frame: &PlotFrame,
    pos: egui::Pos2,
    text: String,
    palette: &Palette,
) {
    let font = FontId::proportional(12.0);
    // The theme's strong text: legible on either plot background (the weak text brightened
    // was about 2.6:1 on the light theme's, issue 37).
    let ink = painter.ctx().global_style().visuals.strong_text_color();
    let galley = painter.layout(text, font, ink, 420.0);
    let mut at = pos + vec2(14.0, 10.0);
    if at.x + galley.size().x > frame.rect.right() {
        at.x = pos.x - galley.size().x - 14.0;
    }
    if at.y + galley.size().y > frame.rect.bottom() {
        at.y = pos.y - galley.size().y - 10.0;
    }
    // Wider than the room on either side of the pointer: kept inside the plot, over it.
    at = at.max(frame.rect.min + vec2(4.0, 4.0));
    let bg = Rect::from_min_size(at, galley.size()).expand(4.0);
    painter.rect_filled(bg, 3.0, palette.plot_bg.gamma_multiply(0.95));
    painter.rect_stroke(
        bg,
        3.0,
        Stroke::new(1.0, palette.grid),
        egui::StrokeKind::Inside,
    );
    painter.galley(at, galley, palette.weak_text);
}

/// The hover readout of band `i`: size, op, lifetime.
fn readout(
    data: &super::super::loaded::Loaded,
    d: &collector::timeline::DeviceTimeline,
    i: usize,
    a: &Allocation,
) -> String {
    // Where it was made: its stack's first user frame (its file without its directories:
    // the details show the whole path), else the op that ran.
    let rec = &data.rec;
    let stack = rec.stack(
        rec.mem_events
            .get(a.alloc_event as usize)
            .and_then(|e| e.stack),
    );
    let op = site_frame(rec, stack).map_or_else(
        || op_of(rec, &data.timeline, d, i),
        |f| without_directory(&f).to_owned(),
    );
    let origin = data.rec.meta.start_ns;
    let clock = units::Clock::of(&data.rec.meta);
    let from = clock.at((a.alloc_ns - origin) as f64);
    let life = match a.free_ns.get() {
        Some(f) => format!(
            "{from} → {} ({})",
            clock.at((f - origin) as f64),
            clock.duration((f - a.alloc_ns) as f64)
        ),
        None => format!("{from} → never freed"),
    };
    format!("{} · {op}\n{life}", units::bytes(a.bytes))
}
