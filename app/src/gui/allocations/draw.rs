//! Painting the bands and reading the pointer: the allocated curve's per-pixel columns in
//! grey (the bytes of bands too small or short to draw), the bytes allocated before the
//! trace at the bottom, every band at least a pixel tall and wide in its key's colour
//! (dimmed when a search does not match it), the search's curve, the selected band's
//! outline; wheel zooms and drag pans the shared time view, hover reads the band under the
//! pointer, a click selects it, Esc clears.

use collector::analysis::allocations::{BandLayout, BandQuery, ColorBy, op_of, site_frame};
use collector::analysis::categories::Category;
use collector::analysis::live::without_directory;
use collector::timeline::{Allocation, DeviceTimeline};
use egui::{Color32, FontId, Mesh, Rect, Response, Sense, Shape, Stroke, Ui, pos2, vec2};

use super::super::doc::Document;
use super::super::paint::{self, PlotFrame};
use super::super::theme::Palette;
use super::super::units;
use super::DeviceBands;
use super::navigate::navigate;

/// Width of the byte labels left of the plot.
const Y_LABELS_WIDTH: f32 = 74.0;
/// Height of the time labels under the plot.
const TIME_AXIS_HEIGHT: f32 = 16.0;
/// Bands are drawn one by one from this height and width on, in points; below that their
/// bytes are in the grey per-pixel columns. Halving it roughly doubles the bands drawn.
const MIN_BAND_POINTS: f64 = 1.0;

/// What the last frame drew, for tests and the benchmark.
#[derive(Clone, Copy, Debug, Default)]
pub struct BandsFrame {
    /// Bands drawn one by one.
    pub drawn: usize,
    /// Rectangles in their mesh.
    pub rects: usize,
}

/// A band's colour: a category's own, else one of a fixed wheel of hues by key.
pub fn key_color(by: ColorBy, name: &str, key: u32, palette: &Palette) -> Color32 {
    if by == ColorBy::Category
        && let Some(c) = Category::ALL.iter().find(|c| c.as_str() == name)
    {
        return palette.categories[c.index()];
    }
    // The golden angle spreads neighbouring keys far apart on the wheel.
    let hue = (key as f32 * 0.618_034).fract();
    let value = if key.is_multiple_of(2) { 0.85 } else { 0.68 };
    egui::ecolor::Hsva::new(hue, 0.55, value, 1.0).into()
}

/// The allocation plot in `rect`, with its input.
pub fn bands_ui(ui: &mut Ui, rect: Rect, doc: &mut Document, palette: &Palette) -> BandsFrame {
    let device = doc.device as usize;
    let Some(bands) = doc.data.curves.get(device).and_then(|c| c.bands.clone()) else {
        return BandsFrame::default();
    };
    let plot = Rect::from_min_max(
        pos2(rect.left() + Y_LABELS_WIDTH, rect.top() + 2.0),
        pos2(rect.right() - 12.0, rect.bottom() - TIME_AXIS_HEIGHT),
    );
    let response = ui.allocate_rect(rect, Sense::click_and_drag());
    navigate(ui, doc, &response, plot);
    let origin = doc.data.rec.meta.start_ns;
    let probe = PlotFrame {
        rect: plot,
        t0_ns: doc.view.t0_ns,
        t1_ns: doc.view.t1_ns,
        y0: 0.0,
        y1: 1.0,
    };
    let curves = doc.data.curves.get(device);
    let cols = paint::query(curves.and_then(|c| c.allocated.as_ref()), &probe, origin);
    let top = paint::columns_max(&cols).unwrap_or(0).max(1024) as f64 * 1.08;
    let frame = PlotFrame { y1: top, ..probe };
    let painter = ui.painter_at(rect);
    painter.rect_filled(plot, 2.0, palette.plot_bg);
    paint::y_grid(
        &painter,
        &frame,
        palette,
        ((plot.height() / 40.0) as usize).clamp(2, 6),
    );
    let p = painter.with_clip_rect(plot);
    paint::fill_under(
        &p,
        &frame,
        &cols,
        Color32::from_gray(110).gamma_multiply(0.8),
    );
    before_trace_ui(&p, &frame, &bands.layout, origin, palette);
    let drawn = draw_bands(&p, &frame, doc, &bands, palette);
    search_curve_ui(&p, &frame, doc, palette);
    super::cursor_ui(&p, &frame, doc);
    if let Some(i) = doc.panels.allocations.selected {
        outline(&p, &frame, &bands.layout, doc, i, palette.highlight);
    }
    let axis_rect = Rect::from_min_max(pos2(plot.left(), plot.bottom()), rect.max);
    paint::time_axis(&painter, &frame, doc.clock(), axis_rect, palette);
    pointer_ui(ui, &painter, &frame, doc, &bands, &response, palette);
    doc.panels.allocations.plot = Some(frame);
    drawn
}

/// The bottom band: the bytes allocated before the trace, step by step.
fn before_trace_ui(
    p: &egui::Painter,
    frame: &PlotFrame,
    layout: &BandLayout,
    origin: i64,
    palette: &Palette,
) {
    let color = palette.weak_text.gamma_multiply(0.55);
    let mut mesh = Mesh::default();
    let steps = &layout.before_trace;
    for (k, &(t, bytes)) in steps.iter().enumerate() {
        let end = steps.get(k + 1).map_or(layout.end_ns, |s| s.0);
        let (x0, x1) = (frame.x((t - origin) as f64), frame.x((end - origin) as f64));
        if bytes > 0 && x1 > frame.rect.left() && x0 < frame.rect.right() && x1 - x0 >= 0.5 {
            let r = Rect::from_min_max(pos2(x0, frame.y(bytes as f64)), pos2(x1, frame.y(0.0)));
            mesh.add_colored_rect(r, color);
        }
    }
    p.add(Shape::mesh(mesh));
}

/// Each band at least [`MIN_BAND_POINTS`] tall and wide, one rectangle per stretch between
/// its moves (stretches under half a point are skipped and the next one starts where the
/// last drawn one ended).
fn draw_bands(
    p: &egui::Painter,
    frame: &PlotFrame,
    doc: &Document,
    bands: &DeviceBands,
    palette: &Palette,
) -> BandsFrame {
    let data = &doc.data;
    let origin = data.rec.meta.start_ns;
    let state = &doc.panels.allocations;
    let keys = bands.keys(&data.rec, &data.timeline, state.color_by);
    let Some(d) = data.timeline.devices.get(doc.device as usize) else {
        return BandsFrame::default();
    };
    let bytes_per_point = (frame.y1 - frame.y0) / frame.rect.height().max(1.0) as f64;
    let ns_per_point = (frame.t1_ns - frame.t0_ns) / frame.rect.width().max(1.0) as f64;
    let q = BandQuery {
        t0_ns: origin + frame.t0_ns as i64,
        t1_ns: origin + frame.t1_ns as i64,
        min_bytes: (bytes_per_point * MIN_BAND_POINTS) as i64,
        min_life_ns: (ns_per_point * MIN_BAND_POINTS) as i64,
    };
    let mut ids = Vec::new();
    bands.layout.index.visible(&q, &mut ids);
    let matched = state
        .search
        .as_ref()
        .filter(|s| s.device == doc.device)
        .map(|s| &s.matches.matched);
    let mut mesh = Mesh::default();
    let mut out = BandsFrame {
        drawn: ids.len(),
        rects: 0,
    };
    let colors: Vec<Color32> = keys
        .names
        .iter()
        .enumerate()
        .map(|(k, n)| key_color(state.color_by, n, k as u32, palette))
        .collect();
    for &id in &ids {
        let i = id as usize;
        let Some(a) = d.allocations.get(i) else {
            continue;
        };
        let key = keys.key.get(i).copied().unwrap_or(0) as usize;
        let mut color = colors.get(key).copied().unwrap_or(palette.allocated);
        if matched.is_some_and(|m| !m.get(i).copied().unwrap_or(false)) {
            color = color.gamma_multiply(0.15);
        }
        out.rects += stretches(frame, &bands.layout, d, (i, a), origin, |r| {
            mesh.add_colored_rect(r, color)
        });
    }
    p.add(Shape::mesh(mesh));
    out
}

/// Call `rect` for each drawn stretch of band `i` (allocation `a`); returns how many.
pub(super) fn stretches(
    frame: &PlotFrame,
    layout: &BandLayout,
    d: &DeviceTimeline,
    (i, a): (usize, &Allocation),
    origin: i64,
    mut rect: impl FnMut(Rect),
) -> usize {
    let (left, right) = (frame.rect.left(), frame.rect.right());
    let end = a.free_ns.unwrap_or(layout.end_ns);
    // The view's range and a point's width in ns: the band's moves come at most one a
    // point, from its offset where the view (or the band) begins.
    let (t0, t1) = (
        origin + frame.t0_ns as i64,
        origin + frame.t1_ns.ceil() as i64,
    );
    let resolution_ns = ((t1 - t0) as f64 / frame.rect.width().max(1.0) as f64) as i64;
    let from = a.alloc_ns.max(t0);
    let (at_start, moves) = layout.moves_in(d, i, (from, t1), resolution_ns);
    let starts = std::iter::once((from, at_start))
        .chain(moves.into_iter().map(|m| (m.time_ns, m.offset_bytes)));
    let mut starts = starts.peekable();
    let mut n = 0;
    let mut drawn_to = f32::NEG_INFINITY;
    while let Some((t, offset)) = starts.next() {
        let until = starts.peek().map_or(end, |s| s.0);
        let x1 = frame.x((until - origin) as f64).min(right);
        if x1 < left {
            continue;
        }
        let x0 = frame.x((t - origin) as f64).max(drawn_to).max(left);
        if x0 >= right {
            break;
        }
        if x1 - x0 < 0.5 {
            continue;
        }
        let top = frame.y((offset + a.bytes) as f64);
        rect(Rect::from_min_max(
            pos2(x0, top),
            pos2(x1, frame.y(offset as f64)),
        ));
        drawn_to = x1;
        n += 1;
    }
    n
}

/// The matching bytes over time, over the dimmed bands.
fn search_curve_ui(p: &egui::Painter, frame: &PlotFrame, doc: &Document, palette: &Palette) {
    let Some(s) = doc
        .panels
        .allocations
        .search
        .as_ref()
        .filter(|s| s.device == doc.device)
    else {
        return;
    };
    let cols = paint::query(s.curve.as_ref(), frame, doc.data.rec.meta.start_ns);
    paint::envelope(p, frame, &cols, palette.highlight, 2.0, None);
}

/// The selected band's outline.
fn outline(
    p: &egui::Painter,
    frame: &PlotFrame,
    layout: &BandLayout,
    doc: &Document,
    i: usize,
    color: Color32,
) {
    let Some(d) = doc.data.timeline.devices.get(doc.device as usize) else {
        return;
    };
    let Some(a) = d.allocations.get(i) else {
        return;
    };
    let origin = doc.data.rec.meta.start_ns;
    let mut rects = Vec::new();
    stretches(frame, layout, d, (i, a), origin, |r| rects.push(r));
    for r in rects {
        p.rect_filled(r, 0.0, color.gamma_multiply(0.35));
        p.rect_stroke(
            r.expand(1.0),
            0.0,
            Stroke::new(1.5, color),
            egui::StrokeKind::Outside,
        );
    }
}

/// Hover: the band under the pointer (size, op, lifetime) read out beside it; a click
/// selects it (or clears on empty space); Esc clears.
fn pointer_ui(
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
        let t = origin + frame.t_at(pos.x).round() as i64;
        let bytes = frame.y0
            + (frame.rect.bottom() - pos.y) as f64 / frame.rect.height().max(1.0) as f64
                * (frame.y1 - frame.y0);
        (t, bands.layout.band_at(d, t, bytes as i64))
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
pub fn readout(
    data: &super::super::data::Loaded,
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
    let life = match a.free_ns {
        Some(f) => format!(
            "{from} → {} ({})",
            clock.at((f - origin) as f64),
            clock.duration((f - a.alloc_ns) as f64)
        ),
        None => format!("{from} → never freed"),
    };
    format!("{} · {op}\n{life}", units::bytes(a.bytes))
}
