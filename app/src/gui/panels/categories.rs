//! The Categories panel: what filled the device's memory at the cursor — at the peak (or
//! before any click) the summary's `composition_at_peak`, at any other instant the
//! collector's categories series there — one row per category with its bytes, its share
//! of the allocated total and a bar, in the timeline's stacked colours.

use collector::analysis::categories::MAX_SERIES_POINTS;
use egui::{Grid, RichText, Sense, Ui, vec2};

use super::super::Command;
use super::super::categories::{ShownComposition, composition_at};
use super::super::doc::Document;
use super::super::loaded::Loaded;
use super::super::theme::Palette;
use super::super::units;
use super::{Panel, PanelContext, PanelId, jump_buttons_ui};
use crate::output::categories::share;

impl PanelId {
    /// The composition by category at the cursor.
    pub const CATEGORIES: PanelId = PanelId("categories");
}

/// The composition by category at the cursor.
pub struct Categories;

/// Width of the share bars, points.
const BAR_WIDTH: f32 = 160.0;

impl Panel for Categories {
    fn id(&self) -> PanelId {
        PanelId::CATEGORIES
    }

    fn title(&self) -> &'static str {
        "Categories"
    }

    /// Only where some device's allocations could be classified.
    fn available(&self, data: &Loaded) -> bool {
        data.curves.iter().any(|c| c.categories.is_some())
    }

    fn answers(&self, cmd: &Command) -> bool {
        matches!(cmd, Command::Inspect(_))
    }

    fn ui(&self, ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, cmds: &mut Vec<Command>) {
        let shown = composition_at(&doc.data, doc.device, cursor_ns(doc));
        ui.horizontal(|ui| {
            heading_ui(ui, doc, shown.as_ref(), cx.palette);
            ui.separator();
            jump_buttons_ui(ui, doc, cmds);
            ui.separator();
            ui.checkbox(
                &mut doc.timeline.show_categories,
                "stack the timeline by category",
            );
        });
        ui.separator();
        match shown {
            Some(c) => {
                egui::ScrollArea::vertical()
                    .id_salt("categories")
                    .auto_shrink([false, true])
                    .show(ui, |ui| table_ui(ui, &c, kept_points(doc), cx.palette));
            }
            None if kept_points(doc).is_some() => {
                ui.label("No memory event yet at the cursor: nothing allocated to classify.");
            }
            None => {
                ui.label(format!(
                    "No categories on {}: it has no allocations to classify.",
                    doc.data.device_name(doc.device)
                ));
            }
        }
    }
}

/// The instant the panel follows: the inspector's cursor on the shown device, else `None`
/// (the peak).
fn cursor_ns(doc: &Document) -> Option<i64> {
    doc.panels
        .inspect
        .target
        .filter(|t| t.device == doc.device && !t.at_snapshot)
        .map(|t| t.at_ns)
}

fn heading_ui(ui: &mut Ui, doc: &Document, shown: Option<&ShownComposition>, palette: &Palette) {
    let Some(c) = shown else {
        ui.label(RichText::new("Categories").strong());
        return;
    };
    let when = doc.at_label(c.at_ns);
    let what = if c.at_peak {
        format!("What filled the memory at the peak, {when}")
    } else {
        format!("What filled the memory at {when}")
    };
    ui.label(RichText::new(what).strong());
    ui.label(
        RichText::new(format!(
            "on {} · allocated {}",
            doc.data.device_name(doc.device),
            units::bytes(c.total_bytes)
        ))
        .color(palette.weak_text),
    );
}

/// The categories series' (kept points, memory events) on the shown device.
fn kept_points(doc: &Document) -> Option<(usize, usize)> {
    let c = doc
        .data
        .curves
        .get(doc.device as usize)?
        .categories
        .as_ref()?;
    Some((c.series.times_ns.len(), c.series.events))
}

/// What "inferred" means beside a category's bytes.
const INFERRED_HINT: &str = "Decided from sizes and lifetimes (blocks matched to the \
    gradients' sizes, or weights inferred in a run without gradients), not read from the \
    capture's frames, scopes or metadata";

/// One row per category, largest first, then memory outside PyTorch where known.
fn table_ui(ui: &mut Ui, c: &ShownComposition, kept: Option<(usize, usize)>, palette: &Palette) {
    Grid::new("categories-table")
        .num_columns(6)
        .spacing(vec2(12.0, 3.0))
        .striped(true)
        .show(ui, |ui| {
            for h in ["", "category", "bytes", "share", "", ""] {
                ui.label(RichText::new(h).color(palette.weak_text));
            }
            ui.end_row();
            for (category, bytes) in c.entries() {
                let colour = palette.categories[category.index()];
                let (rect, _) = ui.allocate_exact_size(vec2(12.0, 12.0), Sense::hover());
                ui.painter().rect_filled(rect.shrink(1.0), 2.0, colour);
                ui.label(category.as_str());
                ui.label(units::bytes(bytes));
                ui.label(share(bytes, c.total_bytes));
                let fraction = if c.total_bytes > 0 {
                    (bytes as f32 / c.total_bytes as f32).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                let (bar, _) = ui.allocate_exact_size(vec2(BAR_WIDTH, 10.0), Sense::hover());
                ui.painter().rect_filled(bar, 1.0, palette.grid);
                let filled = egui::Rect::from_min_size(bar.min, vec2(BAR_WIDTH * fraction, 10.0));
                ui.painter().rect_filled(filled, 1.0, colour);
                let inferred = c.inferred[category.index()];
                let how = match inferred {
                    0 => String::new(),
                    b if b == bytes => "inferred".to_owned(),
                    b => format!("{} inferred", units::bytes(b)),
                };
                ui.label(RichText::new(how).color(palette.weak_text))
                    .on_hover_text(INFERRED_HINT);
                ui.end_row();
            }
            if let Some(o) = c.outside_pytorch {
                let parts = [
                    ("outside pytorch", Some(o.bytes), "beyond the reserve"),
                    (
                        "· this program's",
                        o.own_process_bytes,
                        "context, libraries",
                    ),
                    (
                        "· others'",
                        o.other_processes_bytes,
                        "other processes, the driver",
                    ),
                ];
                for (label, bytes, note) in parts {
                    let Some(b) = bytes else { continue };
                    ui.label("");
                    ui.label(label);
                    ui.label(units::bytes(b));
                    ui.label(RichText::new(note).color(palette.weak_text));
                    ui.label("");
                    ui.end_row();
                }
            }
        });
    notes_ui(ui, c, kept, palette);
}

/// What the table leaves to words: weights a CPU trace never counted, what memory from
/// before a GPU trace likely is, and which instant a cursor's composition is of.
fn notes_ui(ui: &mut Ui, c: &ShownComposition, kept: Option<(usize, usize)>, palette: &Palette) {
    if let Some(u) = c.unseen_weights {
        let [what, why] = crate::output::categories::unseen_words(&u);
        ui.add_space(4.0);
        ui.label(RichText::new(format!("{what} {why}")).color(palette.weak_text));
    }
    if let Some(b) = c.before_trace {
        let said = crate::output::categories::before_trace_words(&b).join(" ");
        ui.add_space(4.0);
        ui.label(RichText::new(said).color(palette.weak_text));
    }
    if !c.at_peak {
        ui.add_space(4.0);
        let note = match kept {
            Some((points, events)) if points < events => format!(
                "At the last kept point at or before the cursor: the series keeps {points} \
                 of this run's {events} memory events (at most {MAX_SERIES_POINTS}, the peak \
                 and the last)."
            ),
            _ => "After the last memory event at or before the cursor.".to_owned(),
        };
        ui.label(RichText::new(note).color(palette.weak_text));
    }
}
