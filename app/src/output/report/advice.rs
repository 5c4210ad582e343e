//! The report's what-if advice for one input: per device with allocations, the estimated
//! peak under each memory-saving technique and the smallest combination that fits the
//! device's memory — the numbers `vramscope advise` prints with its defaults
//! ([`ADVICE_OPTIONS`]), from the same collector function, computed once for report.md and
//! report.html ([`super::derive`]).

use crate::output::assumptions::price;
use crate::output::text::device_label;
use std::fmt::Write as _;

use collector::analysis::advise::SettingEstimate;
use collector::units::bytes_iec;

use super::{ADVICE_OPTIONS, Section};
use crate::output::advise::{caveat_words, fit_sentence, label, setting_cost};
use crate::output::text::md_cell;

/// The advice section, when some device has allocations to reason about.
pub fn advice_markdown(md: &mut String, s: &Section<'_>) -> std::fmt::Result {
    let advice = s.advice;
    if advice.is_empty() {
        return Ok(());
    }
    writeln!(md)?;
    writeln!(md, "### What-if advice")?;
    writeln!(md)?;
    writeln!(
        md,
        "Estimated peaks under each memory-saving technique (`vramscope advise`, {} ranks, {} micro-batches, tensor parallelism ×{}, {} pipeline stages, LoRA rank {}, the loss in {} chunks; docs/ADVISOR.md has their accuracy):",
        ADVICE_OPTIONS.world_size,
        ADVICE_OPTIONS.micro_batches,
        ADVICE_OPTIONS.tensor_parallel,
        ADVICE_OPTIONS.pipeline_stages,
        ADVICE_OPTIONS.lora_rank,
        ADVICE_OPTIONS.loss_chunks
    )?;
    for a in advice {
        let device = device_label(s.rec, a.device);
        writeln!(md)?;
        writeln!(
            md,
            "| {} (measured peak {}) | estimated peak | saving | host memory | price |",
            md_cell(&device),
            bytes_iec(a.measured_peak_bytes)
        )?;
        writeln!(md, "|---|---:|---:|---:|---|")?;
        for e in &a.estimates {
            writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                label(e.technique),
                bytes_iec(e.estimated_peak_bytes),
                bytes_iec(e.saving_bytes),
                e.host_bytes.map_or_else(String::new, bytes_iec),
                md_cell(&price(&e.basis))
            )?;
        }
        settings_markdown(md, &device, &a.allocator)?;
        if let Some(f) = &a.fit {
            writeln!(md)?;
            writeln!(md, "{device}: {}.", fit_sentence(f))?;
        }
    }
    Ok(())
}

/// The allocator settings' table (`vramscope simulate`'s replays): reserved memory.
fn settings_markdown(
    md: &mut String,
    device: &str,
    settings: &[SettingEstimate],
) -> std::fmt::Result {
    let Some(first) = settings.first() else {
        return Ok(());
    };
    writeln!(md)?;
    writeln!(
        md,
        "{}: the allocator's settings, the run replayed through the allocator model (`vramscope simulate`; docs/ALLOCATOR.md): reserved memory, against {} reserved under the recorded settings; the allocated peak does not move.",
        md_cell(device),
        bytes_iec(first.recorded_reserved_peak_bytes as i64)
    )?;
    writeln!(md)?;
    writeln!(
        md,
        "| PYTORCH_CUDA_ALLOC_CONF | reserved peak | saving | OOMs avoided | price | not with |"
    )?;
    writeln!(md, "|---|---:|---:|---:|---|---|")?;
    for e in settings {
        let avoided = match e.ooms_with_recorded_settings {
            0 => "–".to_owned(),
            n => format!("{} of {n}", e.ooms_avoided),
        };
        let not_with: Vec<&str> = e.caveats.iter().map(|&c| caveat_words(c)).collect();
        writeln!(
            md,
            "| `{}` | {} | {} | {avoided} | {} | {} |",
            e.allocator_conf,
            bytes_iec(e.reserved_peak_bytes as i64),
            bytes_iec(e.saving_bytes),
            setting_cost(e),
            md_cell(&not_with.join("; "))
        )?;
    }
    Ok(())
}
