//! `vramscope check`: a CI gate on peak memory.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use collector::Timeline;
use collector::analysis::summary::{DevicePeak, PeakKind};
use collector::analysis::{self, DeviceSummary, Summary};
use collector::model::DeviceId;
use collector::units::{bytes_iec, duration_between};

use super::LoadArgs;
use super::input::{device_keys, open};
use crate::output::terminal::one_line;

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
    let keys = device.map(|n| device_keys(&rec, n)).transpose()?;
    check(out, &summary, keys.as_deref(), max_peak_bytes)
        .with_context(|| path.display().to_string())
}

/// Compare every device's peak ([`DeviceSummary::judged_peak`]; of the devices in `only`,
/// when given) with `max_peak_bytes`; write one line saying why, and return exit code 1
/// when a peak is over the limit.
pub fn check(
    out: &mut impl Write,
    summary: &Summary,
    only: Option<&[DeviceId]>,
    max_peak_bytes: u64,
) -> Result<ExitCode> {
    let limit = i64::try_from(max_peak_bytes).unwrap_or(i64::MAX);
    let devices: Vec<&DeviceSummary> = summary
        .devices
        .iter()
        .filter(|d| only.is_none_or(|keys| keys.contains(&d.device)))
        .collect();
    let mut peaks: Vec<(&DeviceSummary, DevicePeak)> = devices
        .iter()
        .filter_map(|d| d.judged_peak().map(|p| (*d, p)))
        .collect();
    if peaks.is_empty() {
        let names = only.map_or(String::new(), |keys| {
            let names: Vec<String> = keys.iter().map(DeviceId::to_string).collect();
            format!(" on {}", names.join(", "))
        });
        anyhow::bail!("no memory recorded{names}: nothing to check against --max-peak");
    }
    // The worst device first: the one furthest over (or closest to) the limit.
    peaks.sort_by(|a, b| {
        let name = |d: &DeviceSummary| d.device.to_string();
        (b.1.bytes.cmp(&a.1.bytes)).then_with(|| name(a.0).cmp(&name(b.0)))
    });
    let over = peaks.iter().filter(|p| p.1.bytes > limit).count();
    let (d, peak) = peaks[0];
    let (bytes, what) = (peak.bytes, peak.kind.as_str());
    let at = peak.at_ns.map_or(String::new(), |t| {
        format!(" at {}", duration_between(summary.start_ns, t))
    });
    let op = d
        .peak_allocated_op
        .as_deref()
        .filter(|_| peak.kind == PeakKind::Allocated)
        .map_or(String::new(), |o| format!(" in {}", one_line(o)));
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
