//! The Compare panel: which open file to compare with, the alignment and the layout of
//! the two timelines, then run B against run A per device and per op — the numbers of
//! `vramscope diff`, computed by [`crate::gui::compare`].

use std::sync::Arc;

use collector::analysis::diff::{Align, Diff};
use egui::{RichText, Ui};

use super::super::Command;
use super::super::doc::Document;
use super::super::loaded::Loaded;
use super::super::theme::Palette;
use super::{CompareLayout, CompareState};
use super::{Panel, PanelContext, PanelId, compare_table};
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

/// `others` are the other open documents (id, data, label).
fn compare_ui(
    ui: &mut Ui,
    doc: &mut Document,
    others: &[(u64, Arc<Loaded>, String)],
    cached: Option<&Diff>,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    if others.is_empty() {
        ui.label("Open a second file (File › Open, or drop it on the window) to compare it with this one.");
        return;
    }
    if doc.panels.compare.other.is_none()
        && !doc.panels.compare.picked_for_user
        && let [(only, _, _)] = others
    {
        // With one other file open there is nothing to choose (the first time).
        doc.panels.compare.picked_for_user = true;
        cmds.push(Command::CompareWith(Some(*only)));
    }
    controls_ui(ui, doc.id, &mut doc.panels.compare, others, cmds);
    let Some(d) = cached else {
        ui.label("Pick a run to compare with: it is drawn on this timeline and diffed per op.");
        return;
    };
    let b_name = others
        .iter()
        .find(|(id, ..)| Some(*id) == doc.panels.compare.other)
        .map_or("B", |(.., label)| label.as_str());
    ui.label(RichText::new(format!("A = {} · B = {}", doc.label, b_name)).color(palette.weak_text));
    for note in &d.notes {
        // The runs do not compare like for like: say so before any number.
        ui.add(
            egui::Label::new(
                RichText::new(format!("⚠ {}", note_text(note)))
                    .strong()
                    .color(palette.alert),
            )
            .wrap(),
        );
    }
    compare_table::devices_ui(ui, d, palette);
    ui.separator();
    compare_table::ops_ui(ui, doc.id, d, &mut doc.panels.compare.op_sort, palette);
}

/// Which run to compare with, where both clocks start, overlaid or stacked.
fn controls_ui(
    ui: &mut Ui,
    id: u64,
    state: &mut CompareState,
    others: &[(u64, Arc<Loaded>, String)],
    cmds: &mut Vec<Command>,
) {
    ui.horizontal(|ui| {
        let current = others.iter().find(|(id, ..)| Some(*id) == state.other);
        let text = current.map_or("—".to_owned(), |(.., label)| label.clone());
        egui::ComboBox::new(("compare-with", id), "compare with")
            .selected_text(text)
            .show_ui(ui, |ui| {
                if ui.selectable_label(state.other.is_none(), "—").clicked() {
                    cmds.push(Command::CompareWith(None));
                }
                for (id, _, label) in others {
                    if ui
                        .selectable_label(state.other == Some(*id), label)
                        .clicked()
                    {
                        cmds.push(Command::CompareWith(Some(*id)));
                    }
                }
            });
        ui.separator();
        ui.label("align at");
        ui.radio_value(&mut state.align, Align::Start, "start");
        ui.radio_value(&mut state.align, Align::Step, "first step");
        ui.separator();
        ui.radio_value(&mut state.layout, CompareLayout::Overlay, "overlaid");
        ui.radio_value(&mut state.layout, CompareLayout::Stacked, "stacked");
    });
}
