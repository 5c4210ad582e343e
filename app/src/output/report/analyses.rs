//! The report's findings of the analyses for one input: fragmentation, out-of-memory
//! verdicts with what was live, steady growth, and the warnings.

use std::fmt::Write as _;

use collector::analysis::Summary;
use collector::analysis::fragmentation::FragmentationSource;
use collector::units::{bytes_iec, duration_between};

use super::Section;
use super::section::site_label;
use crate::output::text::{blocks_word, md_cell, md_code};

/// What the analyses found, each part only when there is something to say.
pub fn analyses_markdown(md: &mut String, s: &Section<'_>) -> std::fmt::Result {
    let sum = s.summary;
    fragmentation_markdown(md, sum)?;
    ooms_markdown(md, sum)?;
    for g in sum.growth.iter().filter(|g| g.steady_growth) {
        writeln!(md)?;
        writeln!(
            md,
            "**Steady growth on {}**: allocated rises at every step end, {} per step on average (a leak?).",
            g.device,
            bytes_iec(g.average_growth_bytes)
        )?;
    }
    if !sum.warnings.is_empty() || sum.truncated_at_byte.is_some() {
        writeln!(md)?;
        writeln!(md, "### Warnings")?;
        writeln!(md)?;
        if let Some(at) = sum.truncated_at_byte {
            writeln!(
                md,
                "- the file ends early; complete events before byte {at} were read"
            )?;
        }
        for (k, v) in &sum.warnings {
            writeln!(md, "- {v} {}", md_cell(k))?;
        }
    }
    Ok(())
}

fn fragmentation_markdown(md: &mut String, sum: &Summary) -> std::fmt::Result {
    if !sum.fragmentation.is_empty() {
        writeln!(md)?;
        writeln!(md, "### Fragmentation")?;
        writeln!(md)?;
        writeln!(
            md,
            "| device | when | reserved | allocated | free | free blocks | largest free block | external fragmentation |"
        )?;
        writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|")?;
        for f in &sum.fragmentation {
            let when = if f.source == FragmentationSource::Snapshot {
                "snapshot".to_owned()
            } else {
                format!("peak, {}", duration_between(sum.start_ns, f.at_ns))
            };
            writeln!(
                md,
                "| {} | {when} | {} | {} | {} | {} | {} | {:.1}% |",
                f.device,
                bytes_iec(f.reserved_bytes),
                bytes_iec(f.allocated_bytes),
                bytes_iec(f.cache_free_bytes),
                f.free_blocks,
                bytes_iec(f.largest_free_block_bytes),
                f.external_fragmentation * 100.0
            )?;
        }
    }
    Ok(())
}

fn ooms_markdown(md: &mut String, sum: &Summary) -> std::fmt::Result {
    if !sum.ooms.is_empty() {
        writeln!(md)?;
        writeln!(md, "### Out of memory")?;
        for o in &sum.ooms {
            writeln!(md)?;
            writeln!(
                md,
                "- {} at {}: requested {}. {}",
                o.device,
                duration_between(sum.start_ns, o.at_ns),
                bytes_iec(o.requested_bytes),
                crate::output::oom::verdict_words(o)
            )?;
            for g in &o.largest_live {
                writeln!(
                    md,
                    "  - {} in {} {}: {}",
                    bytes_iec(g.bytes),
                    g.blocks,
                    blocks_word(g.blocks),
                    md_code(&site_label(g))
                )?;
            }
        }
    }
    Ok(())
}
