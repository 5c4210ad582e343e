//! The icicle of what is live at the cursor (the peak before any click), by stack, as
//! memray draws it: the root on top spans the allocated bytes, each frame's width is its
//! bytes; hover reads frame, bytes and share; a click zooms into a frame, a click on the
//! top row (or Esc) zooms back out.

use std::sync::Arc;

use collector::analysis::allocations::{FlameTree, flame_at};
use egui::{Align2, Color32, FontId, Rect, RichText, Sense, Stroke, Ui, pos2, vec2};

use super::super::axis;
use super::super::doc::Document;
use super::super::theme::Palette;
use super::super::units;
use super::draw::key_color;

/// Height of a row of frames.
const ROW_HEIGHT: f32 = 18.0;

/// The instant the icicle shows: the inspector's cursor on the shown device, else the
/// device's allocated peak.
pub fn cursor_ns(doc: &Document) -> Option<i64> {
    let cursor = doc
        .panels
        .inspect
        .target
        .filter(|t| t.device == doc.device && !t.at_snapshot)
        .map(|t| t.at_ns);
    cursor.or_else(|| {
        let d = doc.data.timeline.devices.get(doc.device as usize)?;
        d.peak_allocated
            .and_then(|p| d.points.get(p))
            .map(|p| p.time_ns)
    })
}

/// The tree at the cursor, built once per instant.
pub fn tree(doc: &mut Document) -> Option<Arc<FlameTree>> {
    let t = cursor_ns(doc)?;
    let state = &mut doc.panels.allocations;
    if let Some((dev, at, tree)) = &state.flame
        && *dev == doc.device
        && *at == t
    {
        return Some(tree.clone());
    }
    let tree = Arc::new(flame_at(&doc.data.rec, &doc.data.timeline, doc.device, t));
    state.flame = Some((doc.device, t, tree.clone()));
    state.flame_zoom = None;
    Some(tree)
}

/// The icicle panel's body.
pub fn icicle_ui(ui: &mut Ui, doc: &mut Document, palette: &Palette) {
    let Some(tree) = tree(doc) else {
        ui.label("No allocations on this device: nothing live to show.");
        return;
    };
    let zoom = doc.panels.allocations.flame_zoom.unwrap_or(0);
    let Some(z) = tree.nodes.get(zoom as usize) else {
        return;
    };
    heading_ui(ui, doc, &tree, palette);
    if let Some(zoomed) = doc.panels.allocations.flame_zoom {
        breadcrumb_ui(ui, doc, &tree, zoomed, palette);
    }
    if doc.panels.allocations.flame_zoom.is_some()
        && !ui.ctx().egui_wants_keyboard_input()
        && super::super::timeline::escape_for_views(ui.ctx())
    {
        doc.panels.allocations.flame_zoom = None;
    }
    let rows = (tree.depth() - z.depth + 1) as f32;
    egui::ScrollArea::vertical()
        .id_salt("icicle")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let width = ui.available_width();
            let (rect, response) =
                ui.allocate_exact_size(vec2(width, rows * ROW_HEIGHT), Sense::click());
            let mut placed = Vec::new();
            place(
                &tree,
                zoom,
                rect.left(),
                rect.width() as f64 / z.bytes.max(1) as f64,
                rect.top(),
                z.depth,
                &mut placed,
            );
            let painter = ui.painter_at(rect);
            paint_frames(&painter, &tree, &placed, palette);
            let hovered = response.hover_pos().and_then(|p| {
                placed
                    .iter()
                    .find(|(_, r)| r.contains(p))
                    .map(|&(id, r)| (id, r))
            });
            doc.panels.allocations.flame_hovered = hovered.map(|h| h.0);
            doc.panels.allocations.flame_placed = placed.clone();
            if let Some((id, r)) = hovered
                && let Some(n) = tree.nodes.get(id as usize)
            {
                painter.rect_stroke(
                    r,
                    1.0,
                    Stroke::new(1.5, palette.highlight),
                    egui::StrokeKind::Inside,
                );
                let share = 100.0 * n.bytes as f64 / tree.allocated_bytes.max(1) as f64;
                response.clone().on_hover_text_at_pointer(format!(
                    "{}\n{} · {share:.1}% of allocated · {} blocks",
                    n.name,
                    units::bytes(n.bytes),
                    n.blocks
                ));
            }
            if response.clicked()
                && let Some((id, _)) = hovered
            {
                doc.panels.allocations.flame_zoom = if id == zoom {
                    tree.nodes.get(id as usize).and_then(|n| n.parent)
                } else {
                    Some(id)
                };
            }
        });
}

fn heading_ui(ui: &mut Ui, doc: &Document, tree: &FlameTree, palette: &Palette) {
    ui.horizontal(|ui| {
        let when = doc.at_label(tree.time_ns);
        ui.label(
            RichText::new(format!(
                "Live at {when}: {} allocated, by stack",
                units::bytes(tree.allocated_bytes)
            ))
            .strong(),
        );
        ui.label(
            RichText::new("click a frame to zoom in, the top row or Esc to zoom out")
                .color(palette.weak_text),
        );
    });
}

/// The frames zoomed into, from the root: each but the last a button that zooms back out
/// to it (the root's to the whole tree).
fn breadcrumb_ui(
    ui: &mut Ui,
    doc: &mut Document,
    tree: &FlameTree,
    zoomed: u32,
    palette: &Palette,
) {
    let path = tree.path_to(zoomed);
    let mut back_to = None;
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 2.0;
        for (k, &id) in path.iter().enumerate() {
            let Some(n) = tree.nodes.get(id as usize) else {
                continue;
            };
            if k > 0 {
                ui.label(RichText::new("›").color(palette.weak_text));
            }
            let text = RichText::new(short(&n.name));
            if k + 1 == path.len() {
                ui.label(text.strong()).on_hover_text(&n.name);
            } else if ui
                .small_button(text)
                .on_hover_text(format!("Zoom out to {}", n.name))
                .clicked()
            {
                back_to = Some(n.parent.map(|_| id));
            }
        }
    });
    if let Some(zoom) = back_to {
        doc.panels.allocations.flame_zoom = zoom;
    }
}

/// Each frame's box and, where it fits, its name; a frame's colour follows its name.
fn paint_frames(
    painter: &egui::Painter,
    tree: &FlameTree,
    placed: &[(u32, Rect)],
    palette: &Palette,
) {
    let font = FontId::proportional(11.0);
    for &(id, r) in placed {
        let Some(n) = tree.nodes.get(id as usize) else {
            continue;
        };
        let hash = n.name.bytes().fold(0x811c_9dc5u32, |h, b| {
            (h ^ b as u32).wrapping_mul(0x0100_0193)
        });
        // A hue per name (the hash folded small: a float keeps no fraction of a big one).
        let color = key_color(Default::default(), &n.name, hash % 997, palette);
        painter.rect_filled(r.shrink2(vec2(0.5, 0.5)), 1.0, color);
        if r.width() > 40.0 {
            let text = axis::ellipsize(short(&n.name), (r.width() / 6.5) as usize);
            painter.with_clip_rect(r).text(
                r.left_center() + vec2(3.0, 0.0),
                Align2::LEFT_CENTER,
                text,
                font.clone(),
                Color32::BLACK,
            );
        }
    }
}

/// A frame's label without its file's directories (the hover keeps the whole path).
fn short(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

/// Lay out node `id` and its descendants from `x`, `scale` points per byte.
fn place(
    tree: &FlameTree,
    id: u32,
    x: f32,
    scale: f64,
    top: f32,
    base_depth: u32,
    out: &mut Vec<(u32, Rect)>,
) {
    let Some(n) = tree.nodes.get(id as usize) else {
        return;
    };
    let w = (n.bytes.max(0) as f64 * scale) as f32;
    if w < 1.0 {
        return;
    }
    let y = top + (n.depth - base_depth) as f32 * ROW_HEIGHT;
    out.push((id, Rect::from_min_size(pos2(x, y), vec2(w, ROW_HEIGHT))));
    let mut cx = x;
    for &c in &n.children {
        place(tree, c, cx, scale, top, base_depth, out);
        cx += (tree.nodes.get(c as usize).map_or(0, |c| c.bytes.max(0)) as f64 * scale) as f32;
    }
}
