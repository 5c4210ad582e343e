//! What the window shows while the first files load: each file's progress and, for a
//! trace, its memory over time as far as it has been read — the first overview of a
//! multi-gigabyte trace a second or two after opening it, filling in as the rest is read
//! (`collector::parse::preview`). The window stays live; the tabs bar has Cancel.

use collector::parse::preview::PreviewState;
use egui::{Align2, FontId, Mesh, Rect, RichText, Sense, Ui, pos2, vec2};

use super::loader::{LoadPhase, PendingLoad};
use super::theme::Palette;
use super::{axis, units};

/// The overview's height at least, and the room each file's header takes.
const MIN_PLOT_HEIGHT: f32 = 160.0;
const HEADER_HEIGHT: f32 = 64.0;

/// The loads, one above the other.
pub fn loading_ui(ui: &mut Ui, loads: &[PendingLoad], palette: &Palette) {
    super::fonts_warm::warm_next_font(ui.ctx());
    let each = (ui.available_height() / loads.len().max(1) as f32).max(MIN_PLOT_HEIGHT);
    for l in loads {
        ui.push_id(&l.path, |ui| load_ui(ui, l, palette, each));
    }
}

fn load_ui(ui: &mut Ui, l: &PendingLoad, palette: &Palette, height: f32) {
    let phase = l.phase().describe();
    ui.horizontal(|ui| {
        ui.spinner();
        ui.label(
            RichText::new(l.path.display().to_string())
                .size(15.0)
                .strong(),
        );
    });
    ui.horizontal(|ui| {
        let read = format!(
            "{phase} · {} of {} · {}",
            units::bytes(l.bytes_read() as i64),
            units::bytes(l.file_bytes as i64),
            units::format_elapsed(l.elapsed())
        );
        ui.label(read);
        let fraction = match l.phase() {
            LoadPhase::Reading => l.fraction().unwrap_or(0.0),
            LoadPhase::Analysing => 1.0,
        };
        ui.add(egui::ProgressBar::new(fraction).show_percentage());
    });
    let preview = l.preview();
    let plot_height = (height - HEADER_HEIGHT).max(MIN_PLOT_HEIGHT);
    if preview.devices.is_empty() {
        ui.add_space(8.0);
        ui.label(RichText::new("No memory events read yet.").color(palette.weak_text));
        return;
    }
    let caption = format!(
        "Memory allocated over time, as far as the file has been read ({} memory events): \
         the full timeline opens once it is read and analysed.",
        preview.events
    );
    ui.label(RichText::new(caption).color(palette.weak_text).small());
    let (rect, _) = ui.allocate_exact_size(
        vec2(ui.available_width(), plot_height - 20.0),
        Sense::hover(),
    );
    overview_ui(ui, rect, &preview, palette);
}

/// The memory read so far of a file loading while others are open: the tabs bar shows it
/// when its progress is hovered.
pub fn overview_tooltip_ui(ui: &mut Ui, l: &PendingLoad, palette: &Palette) {
    let preview = l.preview();
    if preview.devices.is_empty() {
        ui.label("No memory events read yet.");
        return;
    }
    ui.label(format!(
        "Memory allocated so far ({} memory events)",
        preview.events
    ));
    let (rect, _) = ui.allocate_exact_size(vec2(420.0, 180.0), Sense::hover());
    overview_ui(ui, rect, &preview, palette);
}

/// The curves' time span (from the first to the last bucket with an event) and top.
fn extent(preview: &PreviewState) -> Option<(i64, i64, i64)> {
    let mut span: Option<(i64, i64)> = None;
    let mut top = 0i64;
    for c in &preview.devices {
        let Some((t0, t1)) = c.filled_span_ns() else {
            continue;
        };
        span = Some(span.map_or((t0, t1), |(a, b)| (a.min(t0), b.max(t1))));
        top = top.max(c.peak_bytes);
    }
    span.map(|(t0, t1)| (t0, t1.max(t0.saturating_add(1)), top.max(1)))
}

/// Each device's buckets, from its first event to the last read, as a filled area up to
/// the bucket's largest bytes and its range (smallest to largest) in the line colour;
/// bytes on the left, time since the first memory event below.
fn overview_ui(ui: &Ui, rect: Rect, preview: &PreviewState, palette: &Palette) {
    let Some((t0, t1, top)) = extent(preview) else {
        return;
    };
    let p = ui.painter_at(rect);
    let font = FontId::proportional(11.0);
    let plot = Rect::from_min_max(rect.min + vec2(64.0, 18.0), rect.max - vec2(8.0, 18.0));
    // Times as read, before any clamping: a hostile file's can span all of i64, so the
    // offsets are taken in f64.
    let span_ns = t1 as f64 - t0 as f64;
    let x_at = |offset_ns: f64| plot.left() + (offset_ns / span_ns) as f32 * plot.width();
    let x = |t: i64| x_at(t as f64 - t0 as f64);
    let y = |b: i64| plot.bottom() - (b as f64 / top as f64) as f32 * plot.height() * 0.95;
    let top_shown = top as f64 / 0.95;
    for (bytes, label) in axis::byte_ticks(0.0, top_shown, 5) {
        let at = y(bytes as i64);
        p.hline(plot.x_range(), at, (1.0, palette.grid));
        let (at_text, font) = (pos2(plot.left() - 6.0, at), font.clone());
        p.text(
            at_text,
            Align2::RIGHT_CENTER,
            label,
            font,
            palette.weak_text,
        );
    }
    // Times since the first memory event read, at about one label per 120 points.
    let max_ticks = (plot.width() / 120.0).max(2.0) as usize;
    for (t, label) in axis::time_ticks(0.0, span_ns, max_ticks) {
        let at = x_at(t);
        let (at_text, font) = (pos2(at, plot.bottom() + 3.0), font.clone());
        p.text(at_text, Align2::CENTER_TOP, label, font, palette.weak_text);
    }
    let colours = [
        palette.allocated,
        palette.other_run,
        palette.reserved,
        palette.nvml,
    ];
    let mut mesh = Mesh::default();
    for (c, &line) in preview.devices.iter().zip(colours.iter().cycle()) {
        let fill = if line == palette.allocated {
            palette.allocated_fill
        } else {
            line.gamma_multiply(0.25)
        };
        for (k, level) in c.levels().into_iter().enumerate() {
            let Some((lo, hi)) = level.filter(|_| c.bucket_start_ns(k) < t1) else {
                continue;
            };
            let a = x(c.bucket_start_ns(k));
            let b = x(c.bucket_start_ns(k + 1).min(t1)).max(a + 1.0);
            mesh.add_colored_rect(Rect::from_x_y_ranges(a..=b, y(hi)..=y(0)), fill);
            let (yh, yl) = (y(hi), y(lo).max(y(hi) + 1.5));
            mesh.add_colored_rect(Rect::from_x_y_ranges(a..=b, yh..=yl), line);
        }
    }
    p.add(egui::Shape::mesh(mesh));
    let mut at = rect.left_top() + vec2(64.0, 0.0);
    for (c, &line) in preview.devices.iter().zip(colours.iter().cycle()) {
        let text = format!("{}: peak so far {}", c.device, units::bytes(c.peak_bytes));
        let drawn = p.text(at, Align2::LEFT_TOP, text, font.clone(), line);
        at.x = drawn.right() + 16.0;
    }
}

#[cfg(test)]
mod tests {
    use collector::model::{DeviceId, DeviceType, MemEvent, MemEventKind};
    use collector::parse::preview::Preview;

    use super::*;

    /// A hostile file's times span all of `i64` before the load clamps them: the overview
    /// of them still draws.
    #[test]
    fn an_overview_of_times_across_all_of_i64_draws() {
        let event = |time_ns: i64, total: i64| MemEvent {
            time_ns,
            bytes: 512,
            addr: collector::model::Addr::UNKNOWN,
            total_allocated_bytes: total.into(),
            total_reserved_bytes: collector::model::Total::UNKNOWN,
            device: 0,
            thread: 0,
            kind: MemEventKind::Alloc,
            stack: None,
        };
        let preview = Preview::default();
        let events = [event(i64::MIN, 1), event(0, i64::MAX), event(i64::MAX, 7)];
        let cuda = DeviceId {
            device_type: DeviceType::CUDA,
            index: 0,
        };
        preview.add(&events, &[cuda]);
        let state = preview.snapshot();
        assert_eq!(state.devices[0].peak_bytes, i64::MAX);
        let palette = Palette::for_theme(crate::gui::theme::ThemeChoice::Dark);
        let ctx = egui::Context::default();
        let rect = Rect::from_min_size(pos2(0.0, 0.0), vec2(800.0, 400.0));
        let mut output = ctx.run_ui(egui::RawInput::default(), |ui| {
            overview_ui(ui, rect, &state, &palette);
        });
        output.textures_delta.clear();
        // The buckets drawn from the plot's left edge (i64::MIN) to its right (i64::MAX):
        // an offset that wrapped around would land outside.
        let xs: Vec<f32> = (output.shapes.iter())
            .filter_map(|c| match &c.shape {
                egui::Shape::Mesh(mesh) => Some(mesh.vertices.iter().map(|v| v.pos.x)),
                _ => None,
            })
            .flatten()
            .collect();
        let (left, right) = (
            xs.iter().copied().fold(f32::INFINITY, f32::min),
            xs.iter().copied().fold(f32::NEG_INFINITY, f32::max),
        );
        // The plot spans x 64..792 of the 800-point rect (margins for the labels).
        assert!((63.0..=65.0).contains(&left), "{left}");
        assert!((790.0..=793.0).contains(&right), "{right}");
    }
}
