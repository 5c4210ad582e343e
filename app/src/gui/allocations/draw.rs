//! Painting the bands: the allocated curve's per-pixel columns in
//! grey (the bytes of bands too small or short to draw), the bytes allocated before the
//! trace at the bottom, every band at least a pixel tall and wide in its key's colour
//! (dimmed when a search does not match it), the search's curve, the selected band's
//! outline, the reserved memory over them; the minimap under them (`navigate.rs`) and the
//! pointer's readout (`pointer.rs`). One idea, the allocation view's plot as it is painted:
//! the layout of the frame, the Active mode's layers, each band's stretches and outline.

use collector::analysis::allocations::{BandLayout, BandQuery, ColorBy};
use collector::analysis::categories::Category;
use collector::timeline::{Allocation, DeviceTimeline};
use egui::{Color32, Mesh, Rect, Sense, Shape, Stroke, Ui, pos2};

use super::super::doc::Document;
use super::super::paint::{self, PlotFrame};
use super::super::theme::Palette;
use super::DeviceBands;
use super::cached;
use super::navigate::{MINIMAP_HEIGHT, minimap_ui, navigate};
use super::pointer::{pointer_ui, readout_ui};
use super::two_threads::on_two_threads;

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
    /// The most reserved in view, where the reserved memory was drawn.
    pub reserved_max: Option<i64>,
    /// Segments drawn one by one (the Cached mode).
    pub segments: usize,
}

/// The reserved memory's columns over `probe`'s range, where it is shown and known.
fn reserved_columns(doc: &Document, probe: &PlotFrame) -> Option<paint::Columns> {
    let curve = doc
        .data
        .curves
        .get(doc.device as usize)?
        .reserved
        .as_ref()?;
    // The Cached mode's stack tops out at the reserved line: always drawn there.
    let shown = doc.panels.allocations.show_reserved || doc.panels.allocations.cached;
    shown.then(|| paint::query(Some(curve), probe, doc.data.rec.meta.start_ns))
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
    // The minimap under the time axis, as wide as the plot.
    let minimap = Rect::from_min_max(
        pos2(rect.left() + Y_LABELS_WIDTH, rect.bottom() - MINIMAP_HEIGHT),
        pos2(rect.right() - 12.0, rect.bottom()),
    );
    let rect = Rect::from_min_max(rect.min, pos2(rect.right(), minimap.top() - 4.0));
    let plot = Rect::from_min_max(
        pos2(rect.left() + Y_LABELS_WIDTH, rect.top() + 2.0),
        pos2(rect.right() - 12.0, rect.bottom() - TIME_AXIS_HEIGHT),
    );
    minimap_ui(ui, minimap, doc, palette);
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
    let reserved = reserved_columns(doc, &probe);
    let cached = doc.panels.allocations.cached;
    let most = match cached {
        true => reserved.as_ref().and_then(paint::columns_max),
        false => paint::columns_max(&cols).max(reserved.as_ref().and_then(paint::columns_max)),
    };
    let top = most.unwrap_or(0).max(1024) as f64 * 1.08;
    let frame = PlotFrame { y1: top, ..probe };
    let painter = ui.painter_at(rect);
    painter.rect_filled(plot, 2.0, palette.plot_bg);
    let cache = bands.cache.as_ref().filter(|_| cached);
    if cached && cache.is_none() {
        cached::no_segments_ui(ui, plot, palette);
        doc.panels.allocations.plot = Some(frame);
        return BandsFrame::default();
    }
    paint::y_grid(
        &painter,
        &frame,
        palette,
        ((plot.height() / 40.0) as usize).clamp(2, 6),
    );
    let p = painter.with_clip_rect(plot);
    let drawn = match cache {
        Some(cache) => {
            let reserved = reserved.unwrap_or_default();
            cached::segments_ui(&p, &frame, doc, (&bands, cache), &reserved, palette)
        }
        None => active_ui(&p, &frame, doc, &bands, (&cols, reserved.as_ref()), palette),
    };
    search_curve_ui(&p, &frame, doc, palette);
    super::cursor_ui(&p, &frame, doc);
    let axis_rect = Rect::from_min_max(pos2(plot.left(), plot.bottom()), rect.max);
    paint::time_axis(&painter, &frame, doc.clock(), axis_rect, palette);
    match cache {
        Some(cache) => {
            let readout = cached::pointer(&frame, doc, cache, &response);
            doc.panels.allocations.readout = readout.as_ref().map(|r| r.0.clone());
            if let Some((text, pos)) = readout {
                readout_ui(&painter, &frame, pos, text, palette);
            }
        }
        None => pointer_ui(ui, &painter, &frame, doc, &bands, &response, palette),
    }
    doc.panels.allocations.plot = Some(frame);
    drawn
}

/// The Active mode: the allocated columns in grey, the cache shaded to the reserved line,
/// the bytes before the trace, the bands, the reserved line, the selected band.
fn active_ui(
    p: &egui::Painter,
    frame: &PlotFrame,
    doc: &Document,
    bands: &DeviceBands,
    (cols, reserved): (&paint::Columns, Option<&paint::Columns>),
    palette: &Palette,
) -> BandsFrame {
    let origin = doc.data.rec.meta.start_ns;
    paint::fill_under(p, frame, cols, Color32::from_gray(110).gamma_multiply(0.8));
    if let Some(r) = reserved {
        paint::fill_between(p, frame, cols, r, palette.cache.gamma_multiply(0.5));
    }
    before_trace_ui(p, frame, &bands.layout, origin, palette);
    let mut drawn = draw_bands(p, frame, doc, bands, palette);
    if let Some(r) = reserved {
        paint::envelope(p, frame, r, palette.reserved, 1.5, None);
        drawn.reserved_max = paint::columns_max(r);
    }
    if let Some(i) = doc.panels.allocations.selected {
        outline(p, frame, &bands.layout, doc, i, palette.highlight);
    }
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
    let colors: Vec<Color32> = keys
        .names
        .iter()
        .enumerate()
        .map(|(k, n)| key_color(state.color_by, n, k as u32, palette))
        .collect();
    // Each band's stretches into its own mesh: the bands in view split between this thread
    // and one more where there are enough of them (a whole-run view of a million-block
    // snapshot asks ~6,000 bands for their moves, ~3 µs each).
    let mesh_of = |ids: &[u32]| {
        let mut mesh = Mesh::default();
        let mut rects = 0;
        for &id in ids {
            let i = id as usize;
            let Some(a) = d.allocations.get(i) else {
                continue;
            };
            let key = keys.key.get(i).copied().unwrap_or(0) as usize;
            let mut color = colors.get(key).copied().unwrap_or(palette.allocated);
            if matched.is_some_and(|m| !m.get(i).copied().unwrap_or(false)) {
                color = color.gamma_multiply(0.15);
            }
            rects += stretches(frame, &bands.layout, d, (i, a), origin, |r| {
                mesh.add_colored_rect(r, color)
            });
        }
        (mesh, rects)
    };
    let (mesh, rects) = on_two_threads(&ids, mesh_of, |(mut mesh, rects), (other, more)| {
        mesh.append(other);
        (mesh, rects + more)
    });
    p.add(Shape::mesh(mesh));
    BandsFrame {
        drawn: ids.len(),
        rects,
        ..BandsFrame::default()
    }
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
    let end = a.free_ns.get().unwrap_or(layout.end_ns);
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
