//! The Compare panel: which open file to compare with, the alignment and the layout of
//! the two timelines, then run B against run A per device and per op — the numbers of
//! `vramscope diff`, computed by [`crate::gui::compare`].

use std::sync::Arc;

use collector::analysis::diff::{Align, Change, Diff};
use collector::units::torch_memory;
use egui::{Align as Al, Layout, RichText, Ui};
use egui_extras::{Column, TableBuilder};

use super::super::Command;
use super::super::axis;
use super::super::axis::ellipsize;
use super::super::data::Loaded;
use super::super::doc::{CompareLayout, Document};
use super::super::theme::Palette;
use super::{Panel, PanelContext, PanelId};
use crate::output::diff::note_text;

impl PanelId {
    /// The comparison with another open file.
    pub const COMPARE: PanelId = PanelId("compare");
}

/// The comparison with another open file.
pub struct Compare;

impl Panel for Compare {
    fn id(&self) -> PanelId {
        PanelId::COMPARE
    }

    fn title(&self) -> &'static str {
        "Compare"
    }

    fn answers(&self, cmd: &Command) -> bool {
        matches!(cmd, Command::CompareWith(_))
    }

    fn ui(&self, ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, cmds: &mut Vec<Command>) {
        compare_ui(ui, doc, cx.others, cx.diff, cx.palette, cmds);
    }
}

/// `others` are the other open documents (id, data).
fn compare_ui(
    ui: &mut Ui,
    doc: &mut Document,
    others: &[(u64, Arc<Loaded>)],
    cached: Option<&Diff>,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    if others.is_empty() {
        ui.label("Open a second file (File › Open, or drop it on the window) to compare it with this one.");
        return;
    }
    if doc.compare.other.is_none()
        && !doc.compare.picked_for_user
        && let [(only, _)] = others
    {
        // With one other file open there is nothing to choose (the first time).
        doc.compare.picked_for_user = true;
        cmds.push(Command::CompareWith(Some(*only)));
    }
    ui.horizontal(|ui| {
        let current = others.iter().find(|(id, _)| Some(*id) == doc.compare.other);
        let text = current.map_or("—".to_owned(), |(_, d)| d.name.clone());
        egui::ComboBox::new(("compare-with", doc.id), "compare with")
            .selected_text(text)
            .show_ui(ui, |ui| {
                if ui
                    .selectable_label(doc.compare.other.is_none(), "—")
                    .clicked()
                {
                    cmds.push(Command::CompareWith(None));
                }
                for (id, d) in others {
                    if ui
                        .selectable_label(doc.compare.other == Some(*id), &d.name)
                        .clicked()
                    {
                        cmds.push(Command::CompareWith(Some(*id)));
                    }
                }
            });
        ui.separator();
        ui.label("align at");
        ui.radio_value(&mut doc.compare.align, Align::Start, "start");
        ui.radio_value(&mut doc.compare.align, Align::Step, "first step");
        ui.separator();
        ui.radio_value(&mut doc.compare.layout, CompareLayout::Overlay, "overlaid");
        ui.radio_value(&mut doc.compare.layout, CompareLayout::Stacked, "stacked");
    });
    let Some(d) = cached else {
        ui.label("Pick a run to compare with: it is drawn on this timeline and diffed per op.");
        return;
    };
    let b_name = others
        .iter()
        .find(|(id, _)| Some(*id) == doc.compare.other)
        .map_or("B", |(_, b)| b.name.as_str());
    ui.label(
        RichText::new(format!("A = {} · B = {}", doc.data.name, b_name)).color(palette.weak_text),
    );
    for note in &d.notes {
        ui.label(RichText::new(format!("Note: {}", note_text(note))).color(palette.alert));
    }
    devices_ui(ui, d, palette);
    ui.separator();
    ops_ui(ui, doc.id, d, palette);
}

fn delta_text(c: &Change<i64>) -> String {
    c.delta.map_or("—".into(), axis::bytes_delta)
}

fn delta_color(c: &Change<i64>, palette: &Palette, ui: &Ui) -> egui::Color32 {
    match c.delta.unwrap_or(0).signum() {
        1 => palette.worse,
        -1 => palette.better,
        _ => ui.visuals().text_color(),
    }
}

fn devices_ui(ui: &mut Ui, d: &Diff, palette: &Palette) {
    egui::Grid::new("compare-devices")
        .striped(true)
        .num_columns(7)
        .show(ui, |ui| {
            for h in [
                "device",
                "peak allocated A",
                "B",
                "B − A",
                "peak reserved A",
                "B",
                "B − A",
            ] {
                ui.label(RichText::new(h).strong());
            }
            ui.end_row();
            let opt = |v: Option<i64>| v.map_or("—".into(), axis::bytes);
            for dev in &d.devices {
                ui.label(dev.device.to_string());
                for c in [&dev.peak_allocated_bytes, &dev.peak_reserved_bytes] {
                    ui.label(RichText::new(opt(c.a)).monospace());
                    ui.label(RichText::new(opt(c.b)).monospace());
                    ui.label(
                        RichText::new(delta_text(c))
                            .monospace()
                            .color(delta_color(c, palette, ui)),
                    );
                }
                ui.end_row();
            }
        });
}

fn ops_ui(ui: &mut Ui, id: u64, d: &Diff, palette: &Palette) {
    let device = d.sorted_by == "self_device_memory_usage";
    let (key, total) = if device {
        ("Self CUDA Mem", "CUDA Mem")
    } else {
        ("Self CPU Mem", "CPU Mem")
    };
    ui.label(
        RichText::new(format!(
            "{} ops, the largest change of {key} first",
            d.ops.len()
        ))
        .color(palette.weak_text),
    );
    TableBuilder::new(ui)
        .id_salt(("compare-ops", id))
        .striped(true)
        .resizable(true)
        .auto_shrink([false, false])
        .column(Column::remainder().at_least(200.0).clip(true))
        .columns(Column::initial(105.0).at_least(60.0), 6)
        .header(20.0, |mut h| {
            for t in [
                "Name",
                &format!("{key} A"),
                "B",
                "B − A",
                &format!("{total} B − A"),
                "# Calls A",
                "B",
            ] {
                h.col(|ui| {
                    ui.label(RichText::new(t).strong());
                });
            }
        })
        .body(|body| {
            body.rows(20.0, d.ops.len(), |mut row| {
                let Some(o) = d.ops.get(row.index()) else {
                    return;
                };
                let (self_col, total_col) = if device {
                    (&o.self_device_memory_usage, &o.device_memory_usage)
                } else {
                    (&o.self_cpu_memory_usage, &o.cpu_memory_usage)
                };
                row.col(|ui| {
                    ui.add(egui::Label::new(ellipsize(&o.name, 90)).truncate())
                        .on_hover_text(&o.name);
                });
                let num = |row: &mut egui_extras::TableRow<'_, '_>,
                           text: String,
                           color: Option<egui::Color32>| {
                    row.col(|ui| {
                        ui.with_layout(Layout::right_to_left(Al::Center), |ui| {
                            let mut t = RichText::new(text).monospace();
                            if let Some(c) = color {
                                t = t.color(c);
                            }
                            ui.label(t);
                        });
                    });
                };
                let mem = |v: Option<i64>| v.map_or("—".into(), torch_memory);
                num(&mut row, mem(self_col.a), None);
                num(&mut row, mem(self_col.b), None);
                let c = Some(match self_col.delta.unwrap_or(0).signum() {
                    1 => palette.worse,
                    -1 => palette.better,
                    _ => palette.weak_text,
                });
                num(&mut row, delta_text(self_col), c);
                num(&mut row, delta_text(total_col), None);
                let calls = |v: Option<i64>| v.map_or("—".into(), |n| n.to_string());
                num(&mut row, calls(o.calls.a), None);
                num(&mut row, calls(o.calls.b), None);
            });
        });
}
