//! The timeline: memory over time for the shown device — allocated (filled, or stacked by
//! category when toggled), reserved (line), NVML-used (dashed), the device's capacity, the
//! cache and the memory outside PyTorch shaded between them, training steps as bands, the
//! peak and OOMs marked — with a fragmentation strip (the cache held) under it on the same
//! time axis.
//!
//! Input: wheel or W/S zoom around the pointer, drag or A/D pan, shift-drag selects a
//! range (the table follows it), ctrl-drag or right-drag box-zooms, a click puts the
//! inspector's cursor there, double-click resets. Everything drawn comes from the
//! pyramids in O(columns).

mod areas;
mod capacity;
mod categories;
mod columns;
mod hover;
mod input;
mod keys;
mod lanes;
mod markers;
mod overlay;
mod state;
mod toolbar;

use std::sync::Arc;

use collector::model::DeviceIdx;
use egui::{Align2, Color32, FontId, Rect, Sense, Ui, pos2, vec2};

use super::Command;
use super::doc::{Document, TimeView};
use super::loaded::Loaded;
use super::paint::{self, Columns, PlotFrame};
use super::panels::CompareLayout;
use super::theme::Palette;
use super::units;
use areas::layout;
use categories::LayerColumns;
pub use columns::ColumnCache;
use columns::SourceColumns;
use input::handle_input;
#[cfg(test)]
pub use keys::KEY_STEP;
pub use keys::{escape_for_views, note_popups};
pub use lanes::Fit as LanesFit;
#[cfg(test)]
pub use lanes::MAX_ROWS as LANES_MAX_ROWS;
#[cfg(test)]
pub use lanes::MIN_ROW_HEIGHT as LANE_MIN_ROW_HEIGHT;
use overlay::decorations_ui;
pub use state::{DragMode, TimelineState};
use toolbar::toolbar_ui;

/// A recording drawn on the plot: which device, and where its clock's zero is.
#[derive(Clone, Copy)]
pub struct Source<'a> {
    /// The document's id (caches are keyed by it).
    pub doc: u64,
    /// The data.
    pub data: &'a Loaded,
    /// Its device.
    pub device: DeviceIdx,
    /// The absolute time (on this recording's clock) of the view's t = 0.
    pub origin_ns: i64,
}

/// The second run of a comparison, and how to show it.
pub struct Other<'a> {
    /// The run.
    pub source: Source<'a>,
    /// Overlaid or stacked.
    pub layout: CompareLayout,
    /// Its name, for the legend.
    pub name: &'a str,
}

/// Draw the timeline into the rest of `ui` and handle its input.
pub fn timeline_ui(
    ui: &mut Ui,
    doc: &mut Document,
    other: Option<Other<'_>>,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    toolbar_ui(ui, doc, other.as_ref(), palette, cmds);
    let multiples_hovered = super::multiples::multiples_ui(ui, doc, palette, cmds);
    let full = ui.available_rect_before_wrap();
    let curves = doc.data.curves.get(doc.device as usize);
    let has_cache = curves.is_some_and(|c| c.cache.is_some());
    let (plot_area, strip_rect, lanes_rect, axis_rect) =
        layout(full, has_cache, lanes::height(doc));
    let response = ui.allocate_rect(
        Rect::from_min_max(plot_area.min, lanes_rect.max),
        Sense::click_and_drag(),
    );
    handle_input(ui, doc, &response, plot_area, cmds);

    let me = Source {
        doc: doc.id,
        data: &doc.data,
        device: doc.device,
        origin_ns: doc.data.rec.meta.start_ns,
    };
    let plots = plot_rects(plot_area, me, other.as_ref());
    let queried = query_columns(&mut doc.timeline.columns, doc.view, &plots);
    let painter = ui.painter_at(full);
    // Stacked runs share one y scale, so their heights compare at a glance.
    let shared_top = queried.iter().map(|(_, c, _)| c.max()).max().unwrap_or(0);
    // The stack by category replaces the first plot's allocated fill when toggled on.
    let state = &mut doc.timeline;
    let first_probe = queried.first().map(|q| &q.0);
    let layers =
        (first_probe.filter(|_| state.show_categories)).map(|p| state.columns.layers(&me, p));
    let mut first = None;
    for (i, ((_, src, _), (probe, cols, over))) in plots.iter().zip(queried).enumerate() {
        let color = if i == 0 {
            palette.allocated
        } else {
            palette.other_run
        };
        let scale = YScale {
            at_least_bytes: if plots.len() > 1 { shared_top } else { 0 },
        };
        let (frame, off_scale) = plot_ui(
            &painter,
            doc,
            (probe, scale),
            src,
            (&cols, over.as_deref(), layers.as_deref().filter(|_| i == 0)),
            color,
            palette,
        );
        if i == 0 {
            first = Some((frame, cols));
            doc.timeline.capacity_off_scale = off_scale;
        }
    }
    let Some((frame, cols)) = first else { return };
    doc.timeline.last_y = (frame.y0, frame.y1);
    doc.timeline.last_plot_rect = Some(plot_area);
    if has_cache {
        strip_ui(&painter, &frame, strip_rect, &cols.cache, palette);
    }
    paint::time_axis(&painter, &frame, doc.clock(), axis_rect, palette);
    decorations_ui(&painter, doc, &frame, strip_rect, palette);
    hover::hover_ui(
        &painter,
        doc,
        (&frame, plot_area, lanes_rect),
        response,
        (multiples_hovered, other.as_ref()),
        palette,
    );
}

/// A plot: where, which run, and the run overlaid on it.
type Plot<'a> = (Rect, Source<'a>, Option<Source<'a>>);
/// A plot's frame (its y range still to fit), its run's columns and the overlaid run's.
type PlotColumns = (PlotFrame, Arc<SourceColumns>, Option<Arc<SourceColumns>>);

/// The plots to draw and what each shows: one plot of this run (with the other overlaid
/// when comparing so), or two stacked plots, this run above.
fn plot_rects<'a>(plot_area: Rect, me: Source<'a>, other: Option<&Other<'a>>) -> Vec<Plot<'a>> {
    match other {
        Some(o) if o.layout == CompareLayout::Stacked => {
            let h = (plot_area.height() - 8.0) / 2.0;
            let top = Rect::from_min_size(plot_area.min, vec2(plot_area.width(), h));
            let bottom =
                Rect::from_min_max(pos2(plot_area.left(), top.bottom() + 8.0), plot_area.max);
            vec![(top, me, None), (bottom, o.source, None)]
        }
        Some(o) => vec![(plot_area, me, Some(o.source))],
        None => vec![(plot_area, me, None)],
    }
}

/// Each plot's columns, from the cache.
fn query_columns(
    columns: &mut ColumnCache,
    view: TimeView,
    plots: &[Plot<'_>],
) -> Vec<PlotColumns> {
    plots
        .iter()
        .map(|(rect, src, overlay)| {
            let probe = PlotFrame {
                rect: *rect,
                t0_ns: view.t0_ns,
                t1_ns: view.t1_ns,
                y0: 0.0,
                y1: 1.0,
            };
            let cols = columns.get(src, &probe);
            let over = overlay.as_ref().map(|o| columns.get(o, &probe));
            (probe, cols, over)
        })
        .collect()
}

/// How a plot picks its y axis beyond fitting its own curves.
#[derive(Clone, Copy)]
struct YScale {
    /// Reach at least this high (stacked plots share the larger top).
    at_least_bytes: i64,
}

/// Paint one plot (one recording, maybe with another overlaid) and return its frame, and
/// what to say of the device's capacity when it is off the scale.
fn plot_ui(
    painter: &egui::Painter,
    doc: &Document,
    (probe, scale): (PlotFrame, YScale),
    src: &Source<'_>,
    (cols, over, layers): (
        &SourceColumns,
        Option<&SourceColumns>,
        Option<&LayerColumns>,
    ),
    color: Color32,
    palette: &Palette,
) -> (PlotFrame, Option<String>) {
    let rect = &probe.rect;
    let total = src
        .data
        .curves
        .get(src.device as usize)
        .and_then(|c| c.total_bytes);
    let mut top = cols
        .max()
        .max(over.map_or(0, SourceColumns::max))
        .max(scale.at_least_bytes);
    let total = total.filter(|_| doc.timeline.show_total);
    let on_scale = total.filter(|&t| capacity::on_scale(t, top));
    if let Some(t) = on_scale {
        top = top.max(t as i64);
    }
    let (y0, y1) = doc
        .timeline
        .y_range
        .unwrap_or((0.0, (top.max(1024) as f64) * 1.12));
    let frame = PlotFrame { y0, y1, ..probe };
    let p = painter.with_clip_rect(rect.expand(1.0));
    p.rect_filled(*rect, 2.0, palette.plot_bg);
    paint::step_bands(&p, &frame, &src.data.rec.steps, src.origin_ns, palette);
    paint::y_grid(
        painter,
        &frame,
        palette,
        ((rect.height() / 40.0) as usize).clamp(2, 8),
    );
    curves_ui(&p, &frame, (cols, over, layers), color, palette);
    let mut off_scale = None;
    if let Some(t) = on_scale {
        let mut curves = vec![&cols.allocated, &cols.reserved, &cols.nvml];
        if let Some(o) = over {
            curves.extend([&o.allocated, &o.reserved]);
        }
        // The peak's marker is drawn on this run's own plot (decorations_ui, after this).
        let peak_label = std::ptr::eq(src.data, &*doc.data)
            .then(|| overlay::peak_marker(doc, &frame))
            .flatten()
            .and_then(|(at, label)| paint::marker_label_rect(&p, &frame, at, &label));
        capacity::capacity_ui(&p, &frame, t as i64, &curves, peak_label, palette.weak_text);
    } else if let Some(t) = total {
        off_scale = Some(capacity::off_scale_note(t as i64, top));
    }
    let name = src.data.device_name(src.device);
    painter.text(
        pos2(rect.left() - 6.0, rect.top()),
        Align2::RIGHT_TOP,
        name,
        FontId::proportional(11.0),
        if over.is_some() || color == palette.allocated {
            palette.weak_text
        } else {
            palette.other_run
        },
    );
    (frame, off_scale)
}

/// The curves of one run: the cache and the memory outside PyTorch shaded, allocated
/// filled in `color` (or stacked by category), reserved and NVML used as lines; the
/// overlaid run's allocated and reserved over them.
fn curves_ui(
    p: &egui::Painter,
    frame: &PlotFrame,
    (cols, over, layers): (
        &SourceColumns,
        Option<&SourceColumns>,
        Option<&LayerColumns>,
    ),
    color: Color32,
    palette: &Palette,
) {
    paint::fill_between(
        p,
        frame,
        &cols.allocated,
        &cols.reserved,
        palette.cache.gamma_multiply(0.45),
    );
    paint::fill_between(
        p,
        frame,
        &cols.reserved,
        &cols.nvml,
        palette.nvml.gamma_multiply(0.18),
    );
    let fill = if color == palette.allocated {
        palette.allocated_fill
    } else {
        color.gamma_multiply(0.3)
    };
    match layers {
        Some(layers) if !layers.is_empty() => categories::stacked_ui(p, frame, layers, palette),
        // A source that sees segments only (Nsight: cudaMalloc) has reserved alone:
        // filled, so its memory reads as memory rather than a hairline.
        _ if cols.allocated.is_empty() => paint::fill_under(
            p,
            frame,
            &cols.reserved,
            palette.reserved.gamma_multiply(0.3),
        ),
        _ => paint::fill_under(p, frame, &cols.allocated, fill),
    }
    paint::envelope(p, frame, &cols.allocated, color, 1.5, None);
    paint::envelope(p, frame, &cols.reserved, palette.reserved, 1.5, None);
    paint::envelope(p, frame, &cols.nvml, palette.nvml, 1.5, Some((6, 4)));
    if let Some(o) = &over {
        paint::envelope(p, frame, &o.allocated, palette.other_run, 2.0, None);
        paint::envelope(
            p,
            frame,
            &o.reserved,
            palette.other_run.gamma_multiply(0.6),
            1.0,
            Some((3, 3)),
        );
    }
}

/// The fragmentation strip: the allocator's cache (reserved − allocated) over time.
fn strip_ui(
    painter: &egui::Painter,
    frame: &PlotFrame,
    strip: Rect,
    cols: &Columns,
    palette: &Palette,
) {
    let p = painter.with_clip_rect(strip.expand(1.0));
    p.rect_filled(strip, 2.0, palette.plot_bg);
    let top = paint::columns_max(cols).unwrap_or(0).max(1024) as f64 * 1.15;
    let strip_frame = frame.with_rect(strip, 0.0, top);
    paint::fill_under(&p, &strip_frame, cols, palette.cache);
    let font = FontId::proportional(11.0);
    let label = format!(
        "cache held (reserved − allocated) · max in view {}",
        units::bytes(paint::columns_max(cols).unwrap_or(0))
    );
    let galley = p.layout_no_wrap(label, font, palette.weak_text);
    let at = strip.left_top() + vec2(4.0, 2.0);
    p.rect_filled(
        Rect::from_min_size(at, galley.size()).expand(2.0),
        2.0,
        palette.plot_bg.gamma_multiply(0.85),
    );
    p.galley(at, galley, palette.weak_text);
}
