//! Markers along the top of the plot: the allocator's history (segments reserved ▲ and
//! released ▼, failed allocations), the program's annotations (a bar over their range)
//! and the texts it attached (`user_metadata`, ◆). Hovering a marker shows what it says.
//! The markers come from `collector::analysis::markers`, computed once at load.

use collector::analysis::markers::{Marker, MarkerKind, markers_between};
use egui::{Color32, FontId, Pos2, Rect, Shape, Stroke, pos2, vec2};

use super::super::axis::ellipsize;
use super::super::doc::Document;
use super::super::paint::PlotFrame;
use super::super::theme::Palette;
use super::super::units;

/// Height of the marker row at the top of the plot.
pub const ROW_HEIGHT: f32 = 12.0;
/// Markers listed in one hover at most (a column of a zoomed-out snapshot may hold
/// thousands; the rest are counted).
const HOVER_LINES: usize = 12;
/// How near the pointer a marker must be to be hovered, in points.
const HOVER_REACH: f32 = 4.0;

/// Draw the markers of the shown device over `frame`'s plot; return the hover text for
/// the markers under `pointer`, if any.
pub fn markers_ui(
    painter: &egui::Painter,
    doc: &Document,
    frame: &PlotFrame,
    pointer: Option<Pos2>,
    palette: &Palette,
) -> Option<String> {
    let all = doc.data.markers.get(doc.device as usize)?;
    if all.is_empty() {
        return None;
    }
    let p = painter.with_clip_rect(frame.rect);
    let (from, to) = (doc.abs_ns(frame.t0_ns), doc.abs_ns(frame.t1_ns));
    let shown = markers_between(all, from, to);
    let top = frame.rect.top() + 1.0;
    // Annotations first (bars under the glyphs), then one glyph per pixel column and kind.
    for m in all.iter() {
        if let MarkerKind::Annotation { end_ns, .. } = m.kind
            && end_ns >= from
            && m.time_ns <= to
        {
            let r = Rect::from_x_y_ranges(
                frame.x(doc.rel_ns(m.time_ns))
                    ..=frame
                        .x(doc.rel_ns(end_ns))
                        .max(frame.x(doc.rel_ns(m.time_ns)) + 1.0),
                top..=top + 3.0,
            );
            p.rect_filled(r, 1.0, palette.highlight.gamma_multiply(0.7));
        }
    }
    let mut last: [f32; 5] = [f32::NEG_INFINITY; 5];
    for m in shown {
        let x = frame.x(doc.rel_ns(m.time_ns));
        let slot = slot(&m.kind);
        if x - last[slot] < 1.0 {
            continue;
        }
        last[slot] = x;
        glyph(&p, pos2(x, top + ROW_HEIGHT / 2.0 + 1.0), &m.kind, palette);
    }
    let pointer =
        pointer.filter(|p| p.y <= top + ROW_HEIGHT + 2.0 && frame.rect.x_range().contains(p.x))?;
    let near = |m: &&Marker| {
        let x0 = frame.x(doc.rel_ns(m.time_ns));
        let x1 = match m.kind {
            MarkerKind::Annotation { end_ns, .. } => frame.x(doc.rel_ns(end_ns)),
            _ => x0,
        };
        pointer.x >= x0 - HOVER_REACH && pointer.x <= x1 + HOVER_REACH
    };
    let hovered: Vec<&Marker> = all.iter().filter(near).collect();
    hover_text(doc, &hovered)
}

/// Which glyph a kind draws (one glyph per kind and pixel column).
fn slot(kind: &MarkerKind) -> usize {
    match kind {
        MarkerKind::SegmentAlloc { .. } => 0,
        MarkerKind::SegmentFree { .. } => 1,
        MarkerKind::Oom { .. } => 2,
        MarkerKind::Annotation { .. } => 3,
        MarkerKind::Note { .. } => 4,
    }
}

/// A marker's glyph centred at `at`.
fn glyph(p: &egui::Painter, at: Pos2, kind: &MarkerKind, palette: &Palette) {
    let h = 4.0;
    let tri = |up: bool, color: Color32| {
        let (tip, base) = if up { (-h, h) } else { (h, -h) };
        Shape::convex_polygon(
            vec![at + vec2(0.0, tip), at + vec2(h, base), at + vec2(-h, base)],
            color,
            Stroke::NONE,
        )
    };
    match kind {
        MarkerKind::SegmentAlloc { .. } => {
            p.add(tri(true, palette.reserved));
        }
        MarkerKind::SegmentFree { .. } => {
            p.add(tri(false, palette.reserved.gamma_multiply(0.6)));
        }
        MarkerKind::Oom { .. } => {
            p.add(tri(false, palette.alert));
        }
        MarkerKind::Annotation { .. } => {
            p.vline(
                at.x,
                at.y - h..=at.y + h,
                Stroke::new(2.0, palette.highlight),
            );
        }
        MarkerKind::Note { .. } => {
            p.add(Shape::convex_polygon(
                vec![
                    at + vec2(0.0, -h),
                    at + vec2(h, 0.0),
                    at + vec2(0.0, h),
                    at + vec2(-h, 0.0),
                ],
                palette.cursor,
                Stroke::NONE,
            ));
        }
    }
}

/// The lines a hover shows for `markers`: time and what each says.
pub fn hover_text(doc: &Document, markers: &[&Marker]) -> Option<String> {
    if markers.is_empty() {
        return None;
    }
    let rec = &doc.data.rec;
    let mut lines: Vec<String> = markers
        .iter()
        .take(HOVER_LINES)
        .map(|m| {
            let at = doc.at_label(m.time_ns);
            let what = match m.kind {
                MarkerKind::SegmentAlloc { bytes, addr } => {
                    format!("segment reserved {}{}", units::bytes(bytes), at_addr(addr))
                }
                MarkerKind::SegmentFree { bytes, addr } => {
                    format!("segment released {}{}", units::bytes(bytes), at_addr(addr))
                }
                MarkerKind::Oom {
                    requested_bytes,
                    device_free_bytes,
                } => format!(
                    "OOM: {} requested{}",
                    units::bytes(requested_bytes),
                    device_free_bytes.map_or(String::new(), |f| format!(
                        ", {} free on the device",
                        units::bytes(f as i64)
                    ))
                ),
                MarkerKind::Annotation { name, end_ns } => format!(
                    "{} ({})",
                    ellipsize(rec.strings.get(name), 80),
                    doc.clock().duration((end_ns - m.time_ns) as f64)
                ),
                MarkerKind::Note { text } => ellipsize(rec.strings.get(text), 120),
            };
            format!("{at}  {what}")
        })
        .collect();
    if markers.len() > HOVER_LINES {
        lines.push(format!("… and {} more", markers.len() - HOVER_LINES));
    }
    Some(lines.join("\n"))
}

fn at_addr(addr: Option<u64>) -> String {
    addr.map_or(String::new(), |a| format!(" at 0x{a:x}"))
}

/// Font of the hover (monospace, as the readout's).
pub fn hover_font() -> FontId {
    FontId::monospace(11.5)
}
