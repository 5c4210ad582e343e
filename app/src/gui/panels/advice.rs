//! The Advice panel: the estimated peak of the shown device under each memory-saving
//! technique and the smallest combination that fits a capacity — the numbers `vramscope
//! advise` prints, from the collector's `advise`, computed on the analysis worker
//! ([`super::super::jobs::Job::Advise`]). The user sets the ranks ZeRO shards over, the
//! micro-batches and the capacity; each change asks the worker again.

mod settings;

use crate::output::assumptions::{assumptions, price};
use std::sync::Arc;

use collector::analysis::advise::{DeviceAdvice, Options};
use collector::units::bytes_iec;
use egui::{DragValue, Grid, RichText, Ui};

use super::super::Command;
use super::super::doc::Document;
use super::super::loaded::Loaded;
use super::{Panel, PanelContext, PanelId};
use crate::output::advise::{fit_sentence, label};

impl PanelId {
    /// The what-if advice.
    pub const ADVICE: PanelId = PanelId("advice");
}

/// The what-if advice.
pub struct Advice;

/// The most ranks and micro-batches the controls offer (`advise` takes up to 65,536; the
/// estimate costs the same whatever the number).
const MAX_FACTOR: u32 = 4096;
/// Bytes per GiB, the capacity control's unit.
const GIB: f64 = (1u64 << 30) as f64;

/// The panel's state in a document: what the user asked, and the answer.
#[derive(Debug)]
pub struct AdviceState {
    /// The options the controls show.
    pub options: Options,
    /// The options of the answer shown or being computed.
    pub asked: Option<Options>,
    /// The generation of the request being computed.
    pub pending: Option<u64>,
    /// The answer: one entry per device with allocations.
    pub result: Option<Arc<Vec<DeviceAdvice>>>,
    /// The capacity as the user types it, in GiB (empty: the device's memory, where the
    /// input says it).
    pub capacity_text: String,
}

impl Default for AdviceState {
    fn default() -> AdviceState {
        AdviceState {
            options: Options::DEFAULTS,
            asked: None,
            pending: None,
            result: None,
            capacity_text: String::new(),
        }
    }
}

impl Panel for Advice {
    fn id(&self) -> PanelId {
        PanelId::ADVICE
    }

    fn title(&self) -> &'static str {
        "Advice"
    }

    /// Only where some device's allocations are known.
    fn available(&self, data: &Loaded) -> bool {
        data.timeline
            .devices
            .iter()
            .any(|d| d.allocated_known && d.peak_allocated.is_some())
    }

    fn answers(&self, cmd: &Command) -> bool {
        matches!(cmd, Command::Advise(_))
    }

    fn ui(&self, ui: &mut Ui, doc: &mut Document, _: &PanelContext<'_>, cmds: &mut Vec<Command>) {
        controls_ui(ui, doc);
        if doc.panels.advice.asked != Some(doc.panels.advice.options) {
            cmds.push(Command::Advise(doc.panels.advice.options));
        }
        ui.separator();
        let device = doc.device;
        let shown = doc
            .panels
            .advice
            .result
            .as_ref()
            .and_then(|r| r.iter().find(|a| a.device == device).cloned());
        match shown {
            Some(a) => {
                egui::ScrollArea::vertical()
                    .id_salt("advice")
                    .auto_shrink([false, true])
                    .show(ui, |ui| advice_ui(ui, &a));
            }
            None if doc.panels.advice.pending.is_some() => {
                ui.label("Estimating…");
            }
            None => {
                ui.label(format!(
                    "No advice for {}: it has no allocations to reason about.",
                    doc.data.device_name(device)
                ));
            }
        }
    }
}

/// World size, micro-batches, tensor-parallel degree, pipeline stages, LoRA rank, loss
/// chunks and capacity (0: the device's memory where known).
fn controls_ui(ui: &mut Ui, doc: &mut Document) {
    let o = &mut doc.panels.advice.options;
    ui.horizontal(|ui| {
        ui.label("ZeRO ranks");
        ui.add(DragValue::new(&mut o.world_size).range(2..=MAX_FACTOR));
        ui.separator();
        ui.label("micro-batches");
        ui.add(DragValue::new(&mut o.micro_batches).range(1..=MAX_FACTOR));
        ui.separator();
        ui.label("TP");
        ui.add(DragValue::new(&mut o.tensor_parallel).range(2..=MAX_FACTOR));
        ui.label("PP stages");
        ui.add(DragValue::new(&mut o.pipeline_stages).range(2..=MAX_FACTOR));
        ui.label("LoRA rank");
        ui.add(DragValue::new(&mut o.lora_rank).range(1..=MAX_FACTOR));
        ui.label("loss chunks");
        ui.add(DragValue::new(&mut o.loss_chunks).range(2..=MAX_FACTOR));
        ui.separator();
        ui.label("capacity");
        // Typed (issue 37: a drag value at 0 for a snapshot, which says no device memory):
        // a number of GiB; empty or unreadable, the device's memory where the input says it.
        let changed = ui
            .add(
                egui::TextEdit::singleline(&mut doc.panels.advice.capacity_text)
                    .hint_text("GiB")
                    .desired_width(CAPACITY_FIELD_WIDTH),
            )
            .on_hover_text("The GPU's memory in GiB (e.g. 24, 80); empty: the device's memory, where the input says it")
            .changed();
        ui.label("GiB");
        if changed {
            o.capacity_bytes = capacity_bytes(&doc.panels.advice.capacity_text);
        }
    });
}

/// The width of the capacity field, in points (a few digits).
const CAPACITY_FIELD_WIDTH: f32 = 56.0;

/// Bytes of a capacity typed in GiB ("24", "79.2"); none for empty, zero or unreadable text.
fn capacity_bytes(text: &str) -> Option<u64> {
    let gib: f64 = text.trim().parse().ok()?;
    (gib.is_finite() && gib > 0.0 && gib <= MAX_CAPACITY_GIB).then(|| (gib * GIB).round() as u64)
}

/// The largest capacity typed, GiB (far past any device: a typo, not a GPU).
const MAX_CAPACITY_GIB: f64 = 1e6;

/// One device's estimates and the fit.
fn advice_ui(ui: &mut Ui, a: &DeviceAdvice) {
    ui.label(
        RichText::new(format!(
            "measured peak {}",
            bytes_iec(a.measured_peak_bytes)
        ))
        .strong(),
    );
    match &a.fit {
        Some(f) => {
            ui.label(RichText::new(fit_sentence(f)).strong());
        }
        None => {
            ui.label(
                RichText::new(
                    "No capacity: the input does not say the device's memory. Type the GPU's \
                     memory above (GiB) for the fewest techniques that fit it.",
                )
                .color(ui.visuals().warn_fg_color),
            );
        }
    }
    Grid::new("advice-grid")
        .striped(true)
        .num_columns(5)
        .show(ui, |ui| {
            for h in [
                "technique",
                "estimated peak",
                "saving",
                "host memory",
                "price (why, where nothing changes)",
            ] {
                ui.label(RichText::new(h).strong());
            }
            ui.end_row();
            for e in &a.estimates {
                let not_with = e.technique.incompatible_with();
                let assumed = assumptions(&e.basis);
                let hover = if not_with.is_empty() {
                    assumed.clone()
                } else {
                    format!("{assumed}\n\nnot with: {}", not_with.join(", "))
                };
                ui.label(label(e.technique)).on_hover_text(hover);
                ui.label(bytes_iec(e.estimated_peak_bytes));
                ui.label(bytes_iec(e.saving_bytes));
                ui.label(e.host_bytes.map_or_else(String::new, bytes_iec));
                if e.saving_bytes == 0 {
                    // Why nothing changes, on the row (issue 37: it hid in the tooltip).
                    ui.vertical(|ui| {
                        ui.label(price(&e.basis));
                        ui.add(
                            egui::Label::new(
                                RichText::new(format!("why 0 B: {assumed}"))
                                    .color(ui.visuals().weak_text_color()),
                            )
                            .wrap(),
                        );
                    });
                } else {
                    ui.label(price(&e.basis));
                }
                ui.end_row();
            }
        });
    settings::settings_ui(ui, &a.allocator);
}
