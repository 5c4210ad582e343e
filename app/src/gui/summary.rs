//! The summary strip over the timeline: the handful of numbers that answer "why did it
//! OOM?" at a glance — peak allocated (when, in which op), peak reserved, the allocator's
//! cache at the peak, NVML's used memory and the part outside PyTorch, the OOMs, steady
//! growth per step. Each number moves the inspector's cursor there.

use collector::model::DeviceId;
use egui::{RichText, Ui};

use super::Command;
use super::axis::ellipsize;
use super::doc::Document;
use super::oom::cause_name;
use super::panels::PanelId;
use super::theme::Palette;
use super::units;

/// The summary strip: peak allocated (when, which op), peak reserved, the cache at the peak,
/// NVML-used and the memory outside PyTorch, OOMs, growth. Each number moves the cursor.
pub fn summary_strip_ui(ui: &mut Ui, doc: &Document, palette: &Palette, cmds: &mut Vec<Command>) {
    let data = &doc.data;
    let key = data.device_id(doc.device);
    let Some(s) = data.summary.devices.iter().find(|d| Some(d.device) == key) else {
        // The hint is the source's own (Nsight needs --cuda-memory-usage=true, not torch's
        // profile_memory=True).
        let no_memory = format!(
            "This recording has no memory events: {}.",
            data.rec.meta.format.importer().memory_hint()
        );
        ui.horizontal_wrapped(|ui| {
            // A vramscope recording: the driver's view only.
            let nvml = data.summary.nvml.iter().any(|n| Some(n.device) == key);
            if nvml {
                nvml_ui(ui, doc, key, palette, cmds);
            }
            ui.label(
                RichText::new(if nvml {
                    "no allocator events: NVML's view of the device only"
                } else if data.summary.has_memory_data {
                    "No memory events on this device."
                } else {
                    &no_memory
                })
                .color(palette.weak_text),
            );
        });
        return;
    };
    let since_start = |at_ns: i64| (at_ns - data.rec.meta.start_ns) as f64;
    let clock = units::Clock::of(&data.rec.meta);
    ui.horizontal_wrapped(|ui| {
        let label = |ui: &mut Ui, k: &str| {
            ui.label(RichText::new(k).color(palette.weak_text));
        };
        if let (Some(b), Some(at)) = (s.peak_allocated_bytes, s.peak_allocated_at_ns) {
            label(ui, "Peak allocated");
            let op = s.peak_allocated_op.as_deref().map_or(String::new(), |o| format!(" in {}", ellipsize(o, 40)));
            let text = format!("{} at {}{op}", units::bytes(b), clock.at(since_start(at)));
            if ui.link(RichText::new(text).strong().color(palette.allocated)).on_hover_text("Inspect the peak").clicked() {
                cmds.push(Command::Inspect(at));
                cmds.push(Command::SetTab(PanelId::INSPECTOR));
            }
            ui.separator();
        }
        if let (Some(b), Some(at)) = (s.peak_reserved_bytes, s.peak_reserved_at_ns) {
            label(ui, "Peak reserved");
            let text = format!("{} at {}", units::bytes(b), clock.at(since_start(at)));
            if ui.link(RichText::new(text).strong().color(palette.reserved)).clicked() {
                cmds.push(Command::Inspect(at));
            }
            ui.separator();
        }
        if let (Some(c), Some(r)) = (s.cache_at_peak_bytes, s.peak_allocated_bytes.zip(s.cache_at_peak_bytes).map(|(a, c)| a + c)) {
            label(ui, "Cache at peak");
            let pct = if r > 0 { 100.0 * c as f64 / r as f64 } else { 0.0 };
            ui.label(RichText::new(format!("{} ({pct:.0}%)", units::bytes(c))).strong());
            ui.separator();
        }
        nvml_ui(ui, doc, key, palette, cmds);
        oom_ui(ui, doc, key, palette, cmds);
        if let Some(g) = data.summary.growth.iter().find(|g| Some(g.device) == key && g.steady_growth) {
            ui.label(RichText::new(format!("⚠ grows {}/step", units::bytes_delta(g.average_growth_bytes))).color(palette.alert))
                .on_hover_text("Allocated memory rose at every step boundary: something is kept alive from each step");
        }
    });
}

fn nvml_ui(
    ui: &mut Ui,
    doc: &Document,
    key: Option<DeviceId>,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    let data = &doc.data;
    let Some(n) = data.summary.nvml.iter().find(|n| Some(n.device) == key) else {
        return;
    };
    let at = n.peak_used_at_ns;
    ui.label(RichText::new("NVML used").color(palette.weak_text));
    if ui
        .link(
            RichText::new(units::bytes(n.peak_used_bytes as i64))
                .strong()
                .color(palette.nvml),
        )
        .clicked()
    {
        cmds.push(Command::Inspect(at));
    }
    let reserved = data
        .curves
        .get(doc.device as usize)
        .and_then(|c| c.reserved.as_ref())
        .and_then(|r| r.value_at(at));
    if let Some(r) = reserved {
        ui.label(RichText::new("outside PyTorch").color(palette.weak_text))
            .on_hover_text("NVML used − reserved at NVML's peak: CUDA context, NCCL, other libraries and processes");
        ui.label(RichText::new(units::bytes(n.peak_used_bytes as i64 - r)).strong());
    }
    ui.separator();
}

fn oom_ui(
    ui: &mut Ui,
    doc: &Document,
    key: Option<DeviceId>,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    let data = &doc.data;
    let ooms: Vec<_> = data
        .summary
        .ooms
        .iter()
        .filter(|o| Some(o.device) == key)
        .collect();
    ui.label(RichText::new("OOM").color(palette.weak_text));
    let Some(first) = ooms.first() else {
        ui.label("—");
        ui.separator();
        return;
    };
    let text = format!("{} × · first: {}", ooms.len(), cause_name(first.cause));
    if ui
        .link(RichText::new(text).strong().color(palette.alert))
        .on_hover_text(crate::output::oom::verdict_words(first))
        .clicked()
    {
        cmds.push(Command::Inspect(first.at_ns));
        cmds.push(Command::SetTab(PanelId::INSPECTOR));
    }
    ui.separator();
}
