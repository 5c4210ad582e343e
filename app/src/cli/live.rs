//! `vramscope live`: what was live at an instant (`--at`), grouped by allocation site.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use collector::analysis::live::{
    GroupBy, Instant, LiveError, fold_after, live_at, pick_device, resolve_instant,
};
use collector::units::duration_between;
use collector::{Recording, Timeline};

use super::input::{at_ns, no_allocations_words, no_device, open};
use super::options::GroupByArg;
use super::values::{DeviceArg, InstantArg};
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
    let by = match options.group_by {
        None => GroupBy::Site,
        Some(GroupByArg::Op) => GroupBy::Op,
        Some(GroupByArg::Stack) => GroupBy::Stack,
        Some(GroupByArg::Category) => GroupBy::Category,
        Some(GroupByArg::Module) => GroupBy::Module,
    };
    let mut report =
        live_report(&rec, &timeline, options, by).with_context(|| path.display().to_string())?;
    report.groups = fold_after(std::mem::take(&mut report.groups), options.limit);
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
    options: &LiveOptions,
    by: GroupBy,
) -> Result<LiveReport> {
    let (instant, at_text) = match options.at {
        InstantArg::Peak => (Instant::Peak, "peak".to_owned()),
        InstantArg::End => (Instant::End, "end".to_owned()),
        InstantArg::Oom => (Instant::FirstOom, "oom".to_owned()),
        InstantArg::At(t) => (Instant::At(at_ns(rec, t)), (t.ns as f64 / 1e3).to_string()),
    };
    if let (Instant::At(t), InstantArg::At(asked)) = (instant, options.at)
        && !(rec.meta.start_ns..=rec.meta.end_ns).contains(&t)
    {
        let lasts = duration_between(rec.meta.start_ns, rec.meta.end_ns);
        return Err(UsageError(format!(
            "--at {} is outside the trace, which lasts {lasts}: give a time from 0 to {lasts}, \
             or --at peak|end|oom",
            duration_between(0, asked.ns)
        ))
        .into());
    }
    let explain = |e| explain(rec, &at_text, e);
    let device_idx = match options.device {
        // A name is one device; an ordinal is torch's cuda:N first, as the collector says.
        Some(arg @ DeviceArg::Id(_)) => rec
            .devices
            .iter()
            .position(|d| arg.matches(d.key))
            .map(|i| i as collector::model::DeviceIdx)
            .ok_or_else(|| no_device(rec, arg))?,
        Some(DeviceArg::Ordinal(n)) => pick_device(rec, timeline, Some(n)).map_err(explain)?,
        None => pick_device(rec, timeline, None).map_err(explain)?,
    };
    let time_ns = resolve_instant(rec, timeline, device_idx, instant).map_err(explain)?;
    let live = live_at(rec, timeline, device_idx, time_ns, by);
    Ok(LiveReport {
        device: rec
            .devices
            .get(device_idx as usize)
            .map_or_else(String::new, |x| x.key.to_string()),
        at: at_text,
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
        LiveError::NoDevice(n) => no_device(rec, DeviceArg::Ordinal(n)),
        LiveError::NoAllocations => anyhow::anyhow!("{}", no_allocations_words(rec)),
        LiveError::NoAllocationsOnDevice => {
            anyhow::anyhow!("the source records no allocations on that device")
        }
        LiveError::NoInstant(_) => anyhow::anyhow!("no {at} on this device"),
    }
}
