//! The OOM verdicts of the shown device: which one the inspector's cursor is on, each
//! cause in words, and the verdict cards the inspector lists. Shared by the summary strip
//! (the first OOM's cause) and the Live-at-cursor panel.

use collector::analysis::oom::{OomCause, OomVerdict};
use egui::{RichText, Ui};

use super::Command;
use super::doc::Document;
use super::theme::Palette;
use super::units;

/// The OOM verdicts of the shown device.
fn verdicts(doc: &Document) -> Vec<&OomVerdict> {
    let key = doc.data.device_id(doc.device);
    doc.data
        .summary
        .ooms
        .iter()
        .filter(|v| Some(v.device) == key)
        .collect()
}

/// Which of the device's OOMs (index into [`verdicts`]) the inspector's cursor is on.
pub fn oom_at_cursor(doc: &Document) -> Option<usize> {
    let target = doc.panels.inspect.target?;
    verdicts(doc).iter().position(|v| v.at_ns == target.at_ns)
}

/// An OOM cause in words.
pub fn cause_name(cause: OomCause) -> &'static str {
    match cause {
        OomCause::Capacity => "capacity",
        OomCause::Fragmentation => "fragmentation",
        OomCause::OutsideAllocator => "memory outside the allocator",
        OomCause::StreamOrPool => "another stream or pool",
    }
}

/// The verdicts, the one at the cursor first; each card can move the cursor to its OOM.
pub fn verdicts_ui(ui: &mut Ui, doc: &Document, palette: &Palette, cmds: &mut Vec<Command>) {
    let verdicts = verdicts(doc);
    if verdicts.is_empty() {
        return;
    }
    let current = oom_at_cursor(doc);
    ui.add_space(4.0);
    ui.label(
        RichText::new(format!("Out of memory ({})", verdicts.len()))
            .strong()
            .color(palette.alert),
    );
    // The OOM at the cursor first, then the others in time order.
    let order = current
        .into_iter()
        .chain((0..verdicts.len()).filter(|&i| Some(i) != current));
    for i in order {
        let v = verdicts[i];
        ui.group(|ui| {
            ui.horizontal(|ui| {
                let title = format!("OOM {}: {}", i + 1, cause_name(v.cause));
                let title = RichText::new(title).strong();
                ui.label(if Some(i) == current {
                    title.color(palette.alert)
                } else {
                    title
                });
                if ui.small_button("inspect").clicked() {
                    cmds.push(Command::Inspect(v.at_ns));
                }
            });
            ui.label(format!(
                "requested {} at {}",
                units::bytes(v.requested_bytes),
                doc.at_label(v.at_ns)
            ));
            ui.label(crate::output::oom::verdict_words(v));
        });
    }
}
