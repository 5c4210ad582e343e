//! What is drawn over the curves: the selected range, the range being dragged, the box
//! zoom rectangle, the highlighted op's spans, OOMs, the peak, the inspector's cursor —
//! and the hover readout.

use egui::{Color32, FontId, Pos2, Rect, Stroke, pos2, vec2};

use collector::analysis::pyramid::CurvePyramid;

use super::super::axis::ellipsize;
use super::super::doc::Document;
use super::super::jobs::OpSpans;
use super::super::paint::{self, PlotFrame};
use super::super::theme::Palette;
use super::super::units;
use super::DragMode;
use super::Other;

/// Levels of the op stack the hover readout lists (module scopes nest a trace's ops some
/// dozen deep; the innermost are the ones read), the rest counted.
const NESTED_OPS_SHOWN: usize = 8;

/// Selection, highlighted op spans, peak, OOMs and the inspector's cursor.
pub fn decorations_ui(
    painter: &egui::Painter,
    doc: &Document,
    frame: &PlotFrame,
    strip: Rect,
    palette: &Palette,
) {
    let full = Rect::from_min_max(frame.rect.min, strip.max);
    let p = painter.with_clip_rect(full.expand(1.0));
    selection_ui(&p, doc, frame, full, palette);
    if let Some(spans) = &doc.panels.table.spans {
        op_spans_ui(&p, doc, frame, spans, palette);
    }
    markers_ui(&p, doc, frame, palette);
}

/// The selected range, the range being dragged and the box-zoom rectangle, over `full`
/// (the plots and the strip).
fn selection_ui(
    p: &egui::Painter,
    doc: &Document,
    frame: &PlotFrame,
    full: Rect,
    palette: &Palette,
) {
    let band = |a: f64, b: f64| {
        Rect::from_x_y_ranges(
            frame.x(a).max(full.left())..=frame.x(b).min(full.right()),
            full.y_range(),
        )
    };
    if let Some(w) = doc.selection {
        let (a, b) = (doc.rel_ns(w.start_ns), doc.rel_ns(w.end_ns));
        p.rect_filled(band(a, b), 0.0, palette.selection);
        for x in [frame.x(a), frame.x(b)] {
            p.vline(x, full.y_range(), Stroke::new(1.0, palette.weak_text));
        }
    }
    if let (Some(DragMode::Select(from)), Some(pos)) =
        (doc.timeline.drag, p.ctx().input(|i| i.pointer.latest_pos()))
    {
        let to = frame.t_at(pos.x);
        p.rect_filled(band(from.min(to), from.max(to)), 0.0, palette.selection);
    }
    if let (Some(DragMode::BoxZoom(origin)), Some(pos)) =
        (doc.timeline.drag, p.ctx().input(|i| i.pointer.latest_pos()))
    {
        p.rect_stroke(
            Rect::from_two_pos(origin, pos),
            0.0,
            Stroke::new(1.0, palette.cursor),
            egui::StrokeKind::Inside,
        );
    }
}

/// When the highlighted op ran: a bar along the plot's bottom, one run of pixel columns
/// at a time.
fn op_spans_ui(
    p: &egui::Painter,
    doc: &Document,
    frame: &PlotFrame,
    spans: &OpSpans,
    palette: &Palette,
) {
    let y = frame.rect.bottom() - 5.0;
    let mut run: Option<f32> = None;
    for c in 0..=frame.columns() {
        let x = frame.rect.left() + c as f32;
        let hit = c < frame.columns()
            && spans.any_in(doc.abs_ns(frame.t_at(x)), doc.abs_ns(frame.t_at(x + 1.0)));
        match (hit, run) {
            (true, None) => run = Some(x),
            (false, Some(x0)) => {
                p.rect_filled(
                    Rect::from_min_max(pos2(x0, y - 4.0), pos2(x.max(x0 + 2.0), y + 4.0)),
                    1.0,
                    palette.highlight,
                );
                run = None;
            }
            _ => {}
        }
    }
}

/// Where the peak's marker goes on `frame`, and its label.
pub fn peak_marker(doc: &Document, frame: &PlotFrame) -> Option<(egui::Pos2, String)> {
    let (t, bytes) = doc.peak()?;
    let at = pos2(frame.x(doc.rel_ns(t)), frame.y(bytes as f64));
    let label = format!("peak {} at {}", units::bytes(bytes), doc.at_label(t));
    Some((at, label))
}

/// The OOMs, the peak and the inspector's cursor.
fn markers_ui(p: &egui::Painter, doc: &Document, frame: &PlotFrame, palette: &Palette) {
    let d = doc.data.timeline.devices.get(doc.device as usize);
    for &oom in d.map_or(&[][..], |d| d.ooms.as_slice()) {
        if let Some(e) = doc.data.rec.mem_events.get(oom as usize) {
            paint::vertical(
                p,
                frame,
                frame.x(doc.rel_ns(e.time_ns)),
                palette.alert,
                true,
                Some("OOM"),
            );
        }
    }
    if let Some((at, label)) = peak_marker(doc, frame) {
        paint::marker(p, frame, at, &label, palette.alert);
    }
    if let Some(target) = doc.panels.inspect.target {
        paint::vertical(
            p,
            frame,
            frame.x(doc.rel_ns(target.at_ns)),
            palette.cursor,
            false,
            None,
        );
    }
}

/// The hover readout: time, step, op, and each series' value under the pointer, drawn
/// over `area` (all the plots: stacked runs share the pointer's line and box).
pub fn readout_ui(
    painter: &egui::Painter,
    doc: &Document,
    frame: &PlotFrame,
    area: Rect,
    pos: Pos2,
    other: Option<&Other<'_>>,
    palette: &Palette,
) {
    if pos.x < frame.rect.left() || pos.x > frame.rect.right() {
        return;
    }
    painter.vline(
        pos.x,
        area.y_range(),
        Stroke::new(1.0, palette.weak_text.gamma_multiply(0.6)),
    );
    let lines = readout_lines(doc, frame.t_at(pos.x), other, palette);
    let visuals = painter.ctx().global_style().visuals.clone();
    let font = FontId::monospace(11.5);
    let galleys: Vec<_> = lines
        .into_iter()
        .map(|(c, text)| {
            (
                c,
                painter.layout_no_wrap(text, font.clone(), visuals.text_color()),
            )
        })
        .collect();
    let width = galleys.iter().map(|g| g.1.size().x).fold(0.0, f32::max) + 18.0;
    let height: f32 = galleys.iter().map(|g| g.1.size().y).sum::<f32>() + 8.0;
    let mut origin = pos + vec2(14.0, 10.0);
    if origin.x + width > frame.rect.right() {
        origin.x = pos.x - 14.0 - width;
    }
    origin.y = origin.y.min(area.bottom() - height).max(area.top());
    let bg = Rect::from_min_size(origin, vec2(width, height));
    painter.rect(
        bg,
        4.0,
        visuals.window_fill,
        visuals.window_stroke,
        egui::StrokeKind::Inside,
    );
    let mut y = origin.y + 4.0;
    for (c, g) in galleys {
        if let Some(c) = c {
            let swatch = Rect::from_min_size(pos2(origin.x + 5.0, y + 3.0), vec2(8.0, 8.0));
            painter.rect_filled(swatch, 1.0, c);
        }
        let h = g.size().y;
        painter.galley(pos2(origin.x + 16.0, y), g, visuals.text_color());
        y += h;
    }
}

/// The readout's lines at `t` (ns since start): (swatch colour, text).
fn readout_lines(
    doc: &Document,
    t: f64,
    other: Option<&Other<'_>>,
    palette: &Palette,
) -> Vec<(Option<Color32>, String)> {
    let abs = doc.abs_ns(t);
    let data = &doc.data;
    let mut lines: Vec<(Option<Color32>, String)> = Vec::new();
    let step = data
        .rec
        .step_at(abs)
        .map_or(String::new(), |s| format!("   step {}", s.number));
    lines.push((None, format!("{}{step}", doc.clock().at(t))));
    // Every level of the op stack, innermost first, as Perfetto nests its slices (issue 37).
    let nested = data.ops_at(abs);
    for (depth, op) in nested.iter().take(NESTED_OPS_SHOWN).enumerate() {
        let text = match depth {
            0 => format!("op  {}", ellipsize(op, 48)),
            _ => format!("{}in {}", "  ".repeat(depth), ellipsize(op, 44)),
        };
        lines.push((None, text));
    }
    if nested.len() > NESTED_OPS_SHOWN {
        let more = nested.len() - NESTED_OPS_SHOWN;
        lines.push((None, format!("  … {more} levels above")));
    }
    let category_lines = data
        .curves
        .get(doc.device as usize)
        .filter(|_| doc.timeline.show_categories)
        .map(|c| super::categories::readout_lines(c, abs, palette));
    let value = |c: Option<&CurvePyramid>, at: i64| c.and_then(|c| c.value_at(at));
    let mut push = |color: Color32, name: &str, v: Option<i64>| {
        if let Some(v) = v {
            lines.push((Some(color), format!("{name:<12} {}", units::bytes(v))));
        }
    };
    if let Some(c) = data.curves.get(doc.device as usize) {
        let name = if other.is_some() {
            "A allocated"
        } else {
            "allocated"
        };
        push(palette.allocated, name, value(c.allocated.as_ref(), abs));
        push(
            palette.reserved,
            "reserved",
            value(c.reserved.as_ref(), abs),
        );
        push(palette.cache, "cache", value(c.cache.as_ref(), abs));
        push(palette.nvml, "NVML used", value(c.nvml_used.as_ref(), abs));
    }
    if let Some(o) = other
        && let Some(c) = o.source.data.curves.get(o.source.device as usize)
    {
        let at = o.source.origin_ns.saturating_add(t.round() as i64);
        push(
            palette.other_run,
            "B allocated",
            value(c.allocated.as_ref(), at),
        );
        push(
            palette.other_run,
            "B reserved",
            value(c.reserved.as_ref(), at),
        );
        // Where run B is at this time: its own step and op, not A's.
        let b = &o.source.data;
        let step = b.rec.step_at(at).map(|s| format!("step {}", s.number));
        let op = b.op_at(at).map(|op| format!("op  {}", ellipsize(op, 40)));
        let text: Vec<String> = step.into_iter().chain(op).collect();
        if !text.is_empty() {
            lines.push((None, format!("B  {}", text.join("   "))));
        }
    }
    lines.extend(category_lines.into_iter().flatten());
    lines
}

#[cfg(test)]
mod tests {
    use super::super::super::compare::other_source;
    use super::super::super::panels::CompareLayout;
    use super::super::super::tests::{fixture, harness, settle};
    use super::super::super::theme::{Palette, ThemeChoice};
    use super::*;

    #[test]
    fn the_readout_says_where_the_compared_run_is() {
        let mut h = harness(vec![
            fixture("torch-cpu/k01_mlp_s1.json.gz"),
            fixture("torch-cpu/k02_mlp_stack.json.gz"),
        ]);
        settle(&mut h);
        let app = h.state();
        let (a, b) = (&app.docs()[0], &app.docs()[1]);
        let source = other_source(a, b.id, &b.data);
        let other = Other {
            source,
            layout: CompareLayout::Stacked,
            name: "B",
        };
        let palette = Palette::for_theme(ThemeChoice::Dark);
        // The middle of B's last step, on the shared axis (aligned at the starts).
        let step = b.data.rec.steps.last().expect("B has steps");
        let at = (step.start_ns + step.end_ns) / 2;
        let t = (at - source.origin_ns) as f64;
        let texts = |other| -> Vec<String> {
            readout_lines(a, t, other, &palette)
                .into_iter()
                .map(|l| l.1)
                .collect()
        };
        let with = texts(Some(&other));
        let b_line = with
            .iter()
            .find(|l| l.starts_with("B  "))
            .expect("a line for B");
        assert!(
            b_line.contains(&format!("step {}", step.number)),
            "{b_line}"
        );
        let op = b.data.op_at(at).expect("an op runs mid-step");
        assert!(b_line.contains(&ellipsize(op, 40)), "{b_line}");
        assert!(with.iter().any(|l| l.starts_with("B allocated")));
        // Without a compared run there is no B line.
        assert!(!texts(None).iter().any(|l| l.starts_with("B")));
    }
}
