//! What the window shows while the first files load: each file's progress and, for a
//! trace, its memory over time as far as it has been read — the first overview of a
//! multi-gigabyte trace a second or two after opening it, filling in as the rest is read
//! (`collector::parse::preview`). The window stays live; the tabs bar has Cancel.

use collector::parse::preview::{DeviceCurve, PREVIEW_BUCKETS, PreviewState};
use egui::{Align2, FontId, Mesh, Rect, RichText, Sense, Ui, pos2, vec2};

use super::loader::{LoadPhase, PendingLoad};
use super::theme::Palette;
use super::{axis, units};

/// The overview's height at least, and the room each file's header takes.
const MIN_PLOT_HEIGHT: f32 = 160.0;
const HEADER_HEIGHT: f32 = 64.0;

/// The loads, one above the other.
pub fn loading_ui(ui: &mut Ui, loads: &[PendingLoad], palette: &Palette) {
    let each = (ui.available_height() / loads.len().max(1) as f32).max(MIN_PLOT_HEIGHT);
    for l in loads {
        ui.push_id(&l.path, |ui| load_ui(ui, l, palette, each));
    }
}

fn load_ui(ui: &mut Ui, l: &PendingLoad, palette: &Palette, height: f32) {
    let phase = match l.phase() {
        LoadPhase::Reading => "reading",
        LoadPhase::Analysing => "building the timeline and analyses",
    };
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

/// The curves' time span (from the first to the last bucket with an event) and top.
fn extent(preview: &PreviewState) -> Option<(i64, i64, i64)> {
    let mut span: Option<(i64, i64)> = None;
    let mut top = 0i64;
    for c in &preview.devices {
        let mut filled = (0..PREVIEW_BUCKETS).filter(|&k| c.bucket(k).is_some());
        let Some(first) = filled.next() else {
            continue;
        };
        let last = filled.next_back().unwrap_or(first);
        let (t0, t1) = (bucket_start(c, first), bucket_start(c, last + 1));
        span = Some(span.map_or((t0, t1), |(a, b)| (a.min(t0), b.max(t1))));
        top = top.max(c.peak_bytes);
    }
    span.map(|(t0, t1)| (t0, t1.max(t0 + 1), top.max(1)))
}

fn bucket_start(c: &DeviceCurve, k: usize) -> i64 {
    c.origin_ns
        .saturating_add(c.bucket_ns.saturating_mul(k as i64))
}

/// Each device's buckets, from its first event to the last read, as a filled area up to
/// the bucket's largest bytes and its range (smallest to largest) in the line colour; bytes on the left, time since the first
/// memory event below.
fn overview_ui(ui: &Ui, rect: Rect, preview: &PreviewState, palette: &Palette) {
    let Some((t0, t1, top)) = extent(preview) else {
        return;
    };
    let p = ui.painter_at(rect);
    let font = FontId::proportional(11.0);
    let plot = Rect::from_min_max(rect.min + vec2(64.0, 18.0), rect.max - vec2(8.0, 18.0));
    let x = |t: i64| plot.left() + ((t - t0) as f64 / (t1 - t0) as f64) as f32 * plot.width();
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
    for (t, label) in axis::time_ticks(0.0, (t1 - t0) as f64, max_ticks) {
        let at = x(t0 + t as i64);
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
            let Some((lo, hi)) = level.filter(|_| bucket_start(c, k) < t1) else {
                continue;
            };
            let a = x(bucket_start(c, k));
            let b = x(bucket_start(c, k + 1).min(t1)).max(a + 1.0);
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
