//! The Segments view's simulated column: the segments the allocator would hold at the
//! inspected instant under another `PYTORCH_CUDA_ALLOC_CONF` setting (the run's history
//! replayed through the allocator model, `collector::analysis::simulate`), drawn beside
//! the recorded ones in the same order and colours.

use collector::analysis::simulate::SimulatedLayout;
use egui::{ComboBox, RichText, Ui};

use super::super::super::Command;
use super::super::super::doc::Document;
use super::super::super::units;
use super::super::SegmentsView;
use crate::output::text::plural;

/// The settings offered (each replay costs about a second per million history entries,
/// on the analysis worker).
pub const PRESETS: [&str; 4] = [
    "expandable_segments:True",
    "max_split_size_mb:128",
    "max_split_size_mb:512",
    "roundup_power2_divisions:4",
];

/// The label of the setting's choice.
pub const SIMULATE_LABEL: &str = "the allocator setting simulated beside the recorded segments";

/// The setting to simulate beside the recorded segments; a change inspects the same
/// instant again with it.
pub fn choice_ui(ui: &mut Ui, doc: &mut Document, cmds: &mut Vec<Command>) {
    let before = doc.panels.segments.simulate;
    ui.horizontal(|ui| {
        preset_combo(ui, &mut doc.panels.segments, doc.id);
        let missing = doc.panels.segments.simulate.is_some()
            && doc.panels.inspect.pending.is_none()
            && doc
                .panels
                .inspect
                .result
                .as_ref()
                .is_some_and(|r| r.simulated.is_none());
        if missing {
            ui.label(
                "nothing to replay: the simulation needs an allocator snapshot with its \
                 history, or a trace whose memory events carry addresses",
            );
        }
    });
    if doc.panels.segments.simulate != before
        && let Some(target) = doc.panels.inspect.target
    {
        cmds.push(match target.at_snapshot {
            true => Command::InspectSnapshot,
            false => Command::Inspect(target.at_ns),
        });
    }
}

fn preset_combo(ui: &mut Ui, view: &mut SegmentsView, doc_id: u64) {
    ComboBox::new(("simulate", doc_id), SIMULATE_LABEL)
        .selected_text(view.simulate.unwrap_or("nothing"))
        .show_ui(ui, |ui| {
            ui.selectable_value(&mut view.simulate, None, "nothing");
            for preset in PRESETS {
                ui.selectable_value(&mut view.simulate, Some(preset), preset);
            }
        })
        .response
        .on_hover_text(
            "The run's allocations and frees up to this instant replayed through a model of \
             PyTorch's caching allocator (vramscope simulate; docs/ALLOCATOR.md)",
        );
}

/// The simulated column's heading: the setting and its totals.
pub fn heading_ui(ui: &mut Ui, s: &SimulatedLayout) {
    ui.label(RichText::new(format!("Simulated: {}", s.allocator_conf)).strong())
        .on_hover_text(
            "Blocks coloured by state (the model places blocks, it does not know their \
             stacks); addresses made up: only order and sizes mean anything",
        );
    ui.label(format!(
        "{} · {} reserved · {} allocated · largest free block {}",
        plural(s.segments.len() as u64, "segment", "segments"),
        units::bytes(s.reserved_bytes),
        units::bytes(s.allocated_bytes),
        units::bytes(s.largest_free_bytes)
    ));
}
