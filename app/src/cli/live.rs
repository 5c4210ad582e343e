//! `vramscope live`: what was live at an instant (`--at`), grouped by allocation site.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use collector::analysis::live::{Instant, LiveError, live_at, pick_device, resolve_instant};
use collector::{Recording, Timeline};

use super::input::open;
use super::{Format, LiveOptions, LoadArgs, UsageError};
use crate::output::live::{LiveReport, live_json, live_text};

/// Show what was live in `path` as `options` say.
pub fn run(
    out: &mut impl Write,
    path: &Path,
    options: &LiveOptions,
    load: LoadArgs,
) -> Result<ExitCode> {
    let rec = open(path, load)?;
    let timeline = Timeline::build(&rec);
    let mut report = live_report(&rec, &timeline, &options.at, options.device)
        .with_context(|| path.display().to_string())?;
    report.groups.truncate(options.limit);
    match options.format {
        Format::Text => live_text(out, path, &report)?,
        Format::Json => live_json(out, &report)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolve `--at` and `--device` ([`pick_device`], [`resolve_instant`]) and ask the
/// collector what was live then ([`live_at`]).
fn live_report(
    rec: &Recording,
    timeline: &Timeline,
    at: &str,
    device: Option<i32>,
) -> Result<LiveReport> {
    let device_idx = pick_device(rec, timeline, device).map_err(|e| explain(rec, at, e))?;
    let instant = match at {
        "peak" => Instant::Peak,
        "end" => Instant::End,
        "oom" => Instant::FirstOom,
        us => match us.parse::<f64>() {
            Ok(v) if v.is_finite() => Instant::At(rec.ns_from_us_since_start(v)),
            _ => {
                return Err(UsageError(format!(
                    "--at takes peak, oom, end or a number of µs, not '{us}'"
                ))
                .into());
            }
        },
    };
    let time_ns =
        resolve_instant(rec, timeline, device_idx, instant).map_err(|e| explain(rec, at, e))?;
    let live = live_at(rec, timeline, device_idx, time_ns);
    Ok(LiveReport {
        device: rec
            .devices
            .get(device_idx as usize)
            .map_or_else(String::new, |x| x.key.to_string()),
        at: at.to_owned(),
        at_us: rec.us_since_start(time_ns),
        allocated_bytes: live.allocated_bytes.unwrap_or(0),
        reserved_bytes: live.reserved_bytes,
        live_bytes: live.live_bytes,
        live_blocks: live.live_blocks,
        groups: live.groups,
    })
}

/// Why there is no answer, in the user's words (a wrong `--device` is a usage error).
fn explain(rec: &Recording, at: &str, e: LiveError) -> anyhow::Error {
    match e {
        LiveError::NoDevice(n) => {
            UsageError(format!("no device {n} in {}", rec.meta.format.describe())).into()
        }
        LiveError::NoAllocations => anyhow::anyhow!(
            "no allocations recorded, so nothing was live (a profiler trace needs profile_memory=True)"
        ),
        LiveError::NoAllocationsOnDevice => {
            anyhow::anyhow!("the source records no allocations on that device")
        }
        LiveError::NoInstant(_) => anyhow::anyhow!("no {at} on this device"),
    }
}
