//! The page's tables of one input, from the same functions as report.md and the CLI: the
//! per-op key_averages rows (the whole run as `table` sorts them, and each step's window
//! for the range selection), the advisor's estimates with `advise`'s defaults, the OOM
//! verdicts, the facts and the warnings. Numbers come as the CLI words them, with the raw
//! value beside where a column sorts.

use crate::output::assumptions::price;
use crate::output::text::device_label;
use collector::analysis::advise::DeviceAdvice;
use collector::analysis::{OpRow, TimeWindow, key_averages, sort_rows};
use collector::units::{bytes_iec, duration_between, torch_memory};
use serde::Serialize;

use super::Input;
use super::strings::Strings;
use crate::output::advise::{fit_sentence, label, setting_cost};
use crate::output::oom::verdict_words;
use crate::output::report::Derived;
use crate::output::text::blocks_word;

/// Rows of the whole run's table kept (the rest are the smallest by the sort): ~80 bytes
/// of JSON a row.
pub const MAX_OP_ROWS: usize = 2_000;
/// Steps with a table of their own (the first ones), for the range selection.
pub const MAX_STEP_TABLES: usize = 16;
/// Rows kept per step's table.
pub const MAX_STEP_ROWS: usize = 300;

/// A key_averages table over one range.
#[derive(Debug, Serialize)]
pub struct OpsTable {
    /// The range ("whole run", "step 3: 1.2 s – 1.9 s"), a string id.
    pub range: u32,
    /// Rows in `table`'s order: name, calls, self CPU, CPU, self device, device memory
    /// (bytes), then the four as torch prints them (string ids).
    pub rows: Vec<(u32, u64, [i64; 4], [u32; 4])>,
    /// Rows left out.
    pub left_out: usize,
}

/// The per-op tables of `input`: the whole run, then the first steps'.
pub fn ops_tables(input: &Input<'_>, derived: &Derived, s: &mut Strings) -> Vec<OpsTable> {
    if input.rec.ops.is_empty() {
        return Vec::new();
    }
    let key = derived.sort;
    let mut tables = vec![table("whole run", &derived.rows, MAX_OP_ROWS, s)];
    let origin = input.summary.start_ns;
    for step in input.rec.steps.iter().take(MAX_STEP_TABLES) {
        let window = TimeWindow {
            start_ns: step.start_ns,
            end_ns: step.end_ns,
        };
        let mut rows = key_averages(input.rec, Some(window));
        sort_rows(&mut rows, key);
        let range = format!(
            "step {}: {} – {}",
            step.number,
            duration_between(origin, step.start_ns),
            duration_between(origin, step.end_ns)
        );
        tables.push(table(&range, &rows, MAX_STEP_ROWS, s));
    }
    tables
}

fn table(range: &str, rows: &[OpRow], max: usize, s: &mut Strings) -> OpsTable {
    OpsTable {
        range: s.id(range),
        rows: rows
            .iter()
            .take(max)
            .map(|r| {
                let bytes = [
                    r.self_cpu_memory_usage,
                    r.cpu_memory_usage,
                    r.self_device_memory_usage,
                    r.device_memory_usage,
                ];
                (
                    s.id(&r.name),
                    r.calls,
                    bytes,
                    bytes.map(|b| s.id(&torch_memory(b))),
                )
            })
            .collect(),
        left_out: rows.len().saturating_sub(max),
    }
}

/// The advice for one device.
#[derive(Debug, Serialize)]
pub struct AdviceDoc {
    /// `cuda:0 (measured peak 3.2 GiB)`, a string id.
    pub title: u32,
    /// Technique, estimated peak, saving, price: string ids, with the estimate in bytes.
    pub rows: Vec<(u32, u32, u32, u32, i64)>,
    /// What fits, a string id.
    pub fit: Option<u32>,
}

/// `advise`'s estimates with its defaults, per device with allocations.
pub fn advice(input: &Input<'_>, advice: &[DeviceAdvice], s: &mut Strings) -> Vec<AdviceDoc> {
    advice
        .iter()
        .map(|a| {
            let device = device_label(input.rec, a.device);
            let title = format!(
                "{device} (measured peak {})",
                bytes_iec(a.measured_peak_bytes)
            );
            AdviceDoc {
                title: s.id(&title),
                rows: advice_rows(a, s),
                fit: a
                    .fit
                    .as_ref()
                    .map(|f| s.id(&format!("{device}: {}.", fit_sentence(f)))),
            }
        })
        .collect()
}

/// The techniques' rows, then the allocator settings' (reserved memory).
fn advice_rows(a: &DeviceAdvice, s: &mut Strings) -> Vec<(u32, u32, u32, u32, i64)> {
    let mut rows: Vec<_> = (a.estimates.iter())
        .map(|e| {
            (
                s.id(&label(e.technique)),
                s.id(&bytes_iec(e.estimated_peak_bytes)),
                s.id(&bytes_iec(e.saving_bytes)),
                s.id(&price(&e.basis)),
                e.estimated_peak_bytes,
            )
        })
        .collect();
    for e in &a.allocator {
        rows.push((
            s.id(&format!("{} (reserved memory)", e.allocator_conf)),
            s.id(&bytes_iec(e.reserved_peak_bytes as i64)),
            s.id(&bytes_iec(e.saving_bytes)),
            s.id(setting_cost(e)),
            e.reserved_peak_bytes as i64,
        ));
    }
    rows
}

/// The OOM verdicts as report.md words them: a line each, and its largest live groups.
pub fn ooms(input: &Input<'_>, s: &mut Strings) -> Vec<(u32, Vec<u32>)> {
    let sum = input.summary;
    sum.ooms
        .iter()
        .map(|o| {
            let line = format!(
                "{} at {}: requested {}. {}",
                o.device,
                duration_between(sum.start_ns, o.at_ns),
                bytes_iec(o.requested_bytes),
                verdict_words(o)
            );
            let live = o.largest_live.iter().map(|g| {
                format!(
                    "{} in {} {}: {}",
                    bytes_iec(g.bytes),
                    g.blocks,
                    blocks_word(g.blocks),
                    g.short_site()
                )
            });
            (s.id(&line), live.map(|l| s.id(&l)).collect())
        })
        .collect()
}

/// The input's facts (format, contents, environment) as report.md lists them, and its
/// warnings.
pub fn facts(input: &Input<'_>, s: &mut Strings) -> (Vec<(u32, u32)>, Vec<u32>) {
    let sum = input.summary;
    let mut facts: Vec<(String, String)> = vec![
        (
            "format".into(),
            format!(
                "{}, {}{}",
                sum.format.describe(),
                sum.era,
                if sum.compressed { ", gzip" } else { "" }
            ),
        ),
        ("contents".into(), crate::output::summary::contents(sum)),
    ];
    if let Some(rank) = sum.rank {
        let world = sum.world_size.map_or(String::new(), |w| format!(" of {w}"));
        facts.push(("rank".into(), format!("{rank}{world}")));
    }
    for g in &sum.gpus {
        let mem = g.total_memory_bytes.map_or(String::new(), |b| {
            format!(", {}", bytes_iec(i64::try_from(b).unwrap_or(i64::MAX)))
        });
        facts.push((
            "gpu".into(),
            format!("{} {}{mem}", g.device, g.name.as_deref().unwrap_or("?")),
        ));
    }
    for (k, v) in &input.rec.meta.properties {
        facts.push((k.clone(), v.clone()));
    }
    for (k, v) in &sum.allocator_settings {
        facts.push((format!("allocator {k}"), v.clone()));
    }
    let mut warnings: Vec<String> = Vec::new();
    if let Some(at) = sum.truncated_at_byte {
        warnings.push(format!(
            "the file ends early; complete events before byte {at} were read"
        ));
    }
    warnings.extend(sum.warnings.iter().map(|(k, v)| format!("{v} {k}")));
    for g in sum.growth.iter().filter(|g| g.steady_growth) {
        warnings.push(format!(
            "steady growth on {}: allocated rises at every step end, {} per step on average (a leak?)",
            g.device,
            bytes_iec(g.average_growth_bytes)
        ));
    }
    let facts = facts.iter().map(|(k, v)| (s.id(k), s.id(v))).collect();
    (facts, warnings.iter().map(|w| s.id(w)).collect())
}
