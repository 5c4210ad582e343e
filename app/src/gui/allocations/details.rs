//! The selected band in full: size, address, when it was allocated and freed and how long
//! it lived, the allocating and freeing op, its category, and the whole stack of its
//! allocation and of its free.

use collector::analysis::allocations::{CacheBands, ColorBy, op_of};
use collector::analysis::live::frame_label;
use collector::analysis::segments::SMALL_SEGMENT_BYTES;
use collector::timeline::DeviceTimeline;
use egui::{RichText, Ui};

use super::super::doc::Document;
use super::super::theme::Palette;
use super::super::units;

/// The selected band's details (or how to select one).
pub fn details_ui(ui: &mut Ui, doc: &Document, palette: &Palette) {
    let data = &doc.data;
    let Some(d) = data.timeline.devices.get(doc.device as usize) else {
        return;
    };
    if doc.panels.allocations.cached {
        segment_details_ui(ui, doc, d, palette);
        return;
    }
    let Some((i, a)) = doc
        .panels
        .allocations
        .selected
        .and_then(|i| Some((i, d.allocations.get(i)?)))
    else {
        ui.label(
            RichText::new("Click a band to see its allocation: stacks, ops, lifetime. Esc clears.")
                .color(palette.weak_text),
        );
        return;
    };
    let Some(bands) = data
        .curves
        .get(doc.device as usize)
        .and_then(|c| c.bands.clone())
    else {
        return;
    };
    facts_ui(ui, doc, (i, a), &bands, palette);
    let rec = &data.rec;
    let alloc_stack = rec
        .mem_events
        .get(a.alloc_event as usize)
        .and_then(|e| e.stack);
    stack_ui(ui, "allocation stack", rec, alloc_stack, palette);
    if a.free_ns.get().is_some() {
        stack_ui(
            ui,
            "free stack",
            rec,
            bands
                .layout
                .free_event(i)
                .and_then(|e| rec.mem_events.get(e as usize))
                .and_then(|e| e.stack),
            palette,
        );
    }
}

/// Size, address, lifetime, the allocating and freeing op, the category.
fn facts_ui(
    ui: &mut Ui,
    doc: &Document,
    (i, a): (usize, &collector::timeline::Allocation),
    bands: &super::DeviceBands,
    palette: &Palette,
) {
    let data = &doc.data;
    let Some(d) = data.timeline.devices.get(doc.device as usize) else {
        return;
    };
    let rec = &data.rec;
    let origin = rec.meta.start_ns;
    let category = {
        let keys = bands.keys(rec, &data.timeline, ColorBy::Category);
        keys.key
            .get(i)
            .and_then(|&k| keys.names.get(k as usize))
            .cloned()
            .unwrap_or_default()
    };
    let free_event = bands
        .layout
        .free_event(i)
        .and_then(|e| rec.mem_events.get(e as usize));
    let freeing_op = free_event
        .and_then(|e| data.timeline.ops.running_at(e.thread, e.time_ns))
        .and_then(|o| rec.ops.get(o as usize))
        .map(|o| rec.op_name(o).to_owned());
    ui.label(RichText::new(format!("{} at {:#x}", units::bytes(a.bytes), a.addr)).strong());
    let clock = units::Clock::of(&rec.meta);
    let when = |t: i64| clock.at((t - origin) as f64);
    let lifetime = match a.free_ns.get() {
        Some(f) => format!(
            "{} → {} · lived {}",
            when(a.alloc_ns),
            when(f),
            clock.duration((f - a.alloc_ns) as f64)
        ),
        None => format!("{} → never freed", when(a.alloc_ns)),
    };
    egui::Grid::new("band-details")
        .num_columns(2)
        .show(ui, |ui| {
            // A source without ops (a snapshot) names no op: no rows for them (issue 37:
            // "(outside any op)" on every band); its stacks say where instead.
            let ops = (!rec.ops.is_empty()).then(|| {
                [
                    ("allocated by", op_of(rec, &data.timeline, d, i)),
                    (
                        "freed by",
                        freeing_op.unwrap_or_else(|| {
                            if a.free_ns.get().is_some() {
                                "(outside any op)".into()
                            } else {
                                "—".into()
                            }
                        }),
                    ),
                ]
            });
            let rows = std::iter::once(("lifetime", lifetime))
                .chain(ops.into_iter().flatten())
                .chain(std::iter::once(("category", category)));
            for (k, v) in rows {
                ui.label(RichText::new(k).color(palette.weak_text));
                ui.label(v);
                ui.end_row();
            }
        });
}

fn stack_ui(
    ui: &mut Ui,
    title: &str,
    rec: &collector::Recording,
    stack: Option<collector::model::StackId>,
    palette: &Palette,
) {
    ui.add_space(4.0);
    ui.label(RichText::new(title).strong());
    let frames = rec.stack(stack);
    if frames.is_empty() {
        ui.label(RichText::new("(no stack recorded)").color(palette.weak_text));
        return;
    }
    for f in frames {
        let label = frame_label(rec, f);
        let library = collector::analysis::live::is_library_file(rec.strings.get(f.file));
        let text = RichText::new(label).monospace().size(11.0);
        ui.label(if library {
            text.color(palette.weak_text)
        } else {
            text
        });
    }
}

/// The selected segment in full (the Cached mode): size, address, stream, pool, when it was
/// made and freed, what of it was in use at the cursor and at the end, its blocks, the
/// stack that made it.
fn segment_details_ui(ui: &mut Ui, doc: &Document, d: &DeviceTimeline, palette: &Palette) {
    let data = &doc.data;
    let bands = data
        .curves
        .get(doc.device as usize)
        .and_then(|c| c.bands.clone());
    let cache = bands.as_ref().and_then(|b| b.cache.as_ref());
    let selected = doc.panels.allocations.selected_segment;
    let Some((cache, s, l)) =
        cache.and_then(|c| selected.and_then(|s| Some((c, s, c.lives.get(s)?))))
    else {
        ui.label(
            RichText::new(
                "Click a segment to see it: its stream, lifetime, use and stack. Esc clears.",
            )
            .color(palette.weak_text),
        );
        return;
    };
    let rec = &data.rec;
    let address = l.addr.map_or_else(String::new, |a| format!(" at {a:#x}"));
    ui.label(RichText::new(format!("segment of {}{address}", units::bytes(l.bytes))).strong());
    let rows = segment_rows(doc, d, cache, s);
    egui::Grid::new("segment-details")
        .num_columns(2)
        .show(ui, |ui| {
            for (k, v) in rows {
                ui.label(RichText::new(k).color(palette.weak_text));
                ui.label(v);
                ui.end_row();
            }
        });
    if l.alloc_ns.is_none() {
        ui.add_space(4.0);
        ui.label(
            RichText::new("Made before the history began: no stack recorded.")
                .color(palette.weak_text),
        );
        return;
    }
    stack_ui(ui, "segment stack", rec, l.stack, palette);
}

/// The selected segment's facts, as (name, value) rows.
fn segment_rows(
    doc: &Document,
    d: &DeviceTimeline,
    cache: &CacheBands,
    s: usize,
) -> Vec<(&'static str, String)> {
    let Some(l) = cache.lives.get(s) else {
        return Vec::new();
    };
    let rec = &doc.data.rec;
    let origin = rec.meta.start_ns;
    let clock = units::Clock::of(&rec.meta);
    let when = |t: i64| clock.at((t - origin) as f64);
    let end = d.points.last().map_or(origin, |p| p.time_ns);
    let used = |t: i64| {
        let bytes = cache.in_use_at(d, s, t);
        format!(
            "{} ({:.0}%), {} cached free",
            units::bytes(bytes),
            bytes as f64 * 100.0 / l.bytes.max(1) as f64,
            units::bytes(l.bytes - bytes)
        )
    };
    let pool = if l.bytes == SMALL_SEGMENT_BYTES {
        "small (requests ≤ 1 MiB)"
    } else {
        "large"
    };
    let stream = l
        .stream
        .map_or_else(|| "not recorded".to_owned(), |s| s.to_string());
    let made = l
        .alloc_ns
        .map_or_else(|| "before the history began".to_owned(), when);
    let freed = l.free_ns.map_or_else(|| "held to the end".to_owned(), when);
    let mut rows = vec![
        ("stream", stream),
        ("pool", pool.to_owned()),
        ("made", made),
        ("freed", freed),
    ];
    if !d.allocated_known {
        rows.push((
            "in use",
            "not recorded (the input has no allocations)".to_owned(),
        ));
        return rows;
    }
    if let Some(t) = doc.panels.inspect.target {
        rows.push(("in use at the cursor", used(t.at_ns)));
    }
    if l.free_ns.is_none() {
        rows.push(("in use at the end", used(end)));
    }
    rows.push(("allocations it held", cache.blocks_of(s).len().to_string()));
    rows
}
