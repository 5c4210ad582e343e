//! `vramscope check`: a CI gate on peak memory.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use collector::Timeline;
use collector::analysis::{self, DeviceSummary, Summary};
use collector::units::{bytes_iec, duration_us};

use super::LoadArgs;
use super::input::{device_names, open};

/// Check `path`'s peaks (of device ordinal `device` only, when given) against
/// `max_peak_bytes`.
pub fn run(
    out: &mut impl Write,
    path: &Path,
    max_peak_bytes: u64,
    device: Option<i32>,
    load: LoadArgs,
) -> Result<ExitCode> {
    let rec = open(path, load)?;
    let timeline = Timeline::build(&rec);
    let summary = analysis::summarize(&rec, &timeline);
    let names = device.map(|n| device_names(&rec, n)).transpose()?;
    check(out, &summary, names.as_deref(), max_peak_bytes)
        .with_context(|| path.display().to_string())
}

/// The peak a device is judged by: allocated where the source records allocations, else
/// reserved (Nsight sees only the allocator's segments).
fn judged_peak(d: &DeviceSummary) -> Option<(i64, &'static str, Option<f64>)> {
    match (d.peak_allocated_bytes, d.peak_reserved_bytes) {
        (Some(a), _) => Some((a, "peak allocated", d.peak_allocated_at_us)),
        (None, Some(r)) => Some((r, "peak reserved", d.peak_reserved_at_us)),
        (None, None) => None,
    }
}

/// Compare every device's peak (or those named in `device_names` only) with `max_peak_bytes`; write one
/// line saying why, and return exit code 1 when a peak is over the limit.
pub fn check(
    out: &mut impl Write,
    summary: &Summary,
    device_names: Option<&[String]>,
    max_peak_bytes: u64,
) -> Result<ExitCode> {
    let limit = i64::try_from(max_peak_bytes).unwrap_or(i64::MAX);
    let devices: Vec<&DeviceSummary> = summary
        .devices
        .iter()
        .filter(|d| device_names.is_none_or(|names| names.contains(&d.device)))
        .collect();
    let mut peaks: Vec<(&DeviceSummary, i64, &str, Option<f64>)> = devices
        .iter()
        .filter_map(|d| judged_peak(d).map(|(bytes, what, at)| (*d, bytes, what, at)))
        .collect();
    if peaks.is_empty() {
        anyhow::bail!(
            "no memory recorded{}: nothing to check against --max-peak",
            device_names.map_or(String::new(), |n| format!(" on {}", n.join(", ")))
        );
    }
    // The worst device first: the one furthest over (or closest to) the limit.
    peaks.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.device.cmp(&b.0.device)));
    let over = peaks.iter().filter(|p| p.1 > limit).count();
    let (d, bytes, what, at_us) = peaks[0];
    let at = at_us.map_or(String::new(), |us| format!(" at {}", duration_us(us)));
    let op = d
        .peak_allocated_op
        .as_deref()
        .filter(|_| what == "peak allocated")
        .map_or(String::new(), |o| format!(" in {o}"));
    let limit_text = format!("{} ({max_peak_bytes} B)", bytes_iec(limit));
    if over == 0 {
        writeln!(
            out,
            "ok: {} {what} {} ({bytes} B) is within the limit {limit_text}",
            d.device,
            bytes_iec(bytes)
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let others = match over - 1 {
        0 => String::new(),
        n => format!("; {n} more device(s) over"),
    };
    writeln!(
        out,
        "over the limit: {} {what} {} ({bytes} B){at}{op} exceeds {limit_text} by {}{others}",
        d.device,
        bytes_iec(bytes),
        bytes_iec(bytes - limit)
    )?;
    Ok(ExitCode::from(1))
}
