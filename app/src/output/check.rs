//! `vramscope check`'s verdict, as one line of text and as a JSON document. The document's
//! field names are a contract CI scripts read (as `json_docs.rs`'s are): sizes in bytes,
//! times in µs since the start, devices as torch names them.

use std::io::{self, Write};
use std::path::Path;

use collector::analysis::Summary;
use collector::analysis::summary::JudgedPeak;
use collector::units::{bytes_iec, us_after};
use serde::Serialize;

use super::style::{Paint, Tone};
use super::terminal::one_line;
use super::text::{plural, when};

/// The devices judged and how each compares with the limit.
pub struct CheckVerdict<'a> {
    /// The summary the peaks come from.
    pub summary: &'a Summary,
    /// `--max-peak`.
    pub max_peak_bytes: u64,
    /// The devices with a peak (of those `--device` names), worst first: the furthest over
    /// the limit, or the closest to it.
    pub peaks: Vec<JudgedPeak<'a>>,
}

impl CheckVerdict<'_> {
    fn limit_bytes(&self) -> i64 {
        i64::try_from(self.max_peak_bytes).unwrap_or(i64::MAX)
    }

    /// The devices whose peak is over the limit, worst first.
    pub fn over(&self) -> impl Iterator<Item = &JudgedPeak<'_>> {
        let limit = self.limit_bytes();
        self.peaks.iter().filter(move |p| p.peak.bytes > limit)
    }

    /// `ok`, `over`, or `no_data` when no device recorded memory.
    pub fn verdict(&self) -> &'static str {
        match (self.peaks.is_empty(), self.over().next().is_some()) {
            (true, _) => "no_data",
            (false, true) => "over",
            (false, false) => "ok",
        }
    }
}

/// One line: the worst device and why it passes or fails. Nothing when there is no data
/// (the caller says so on stderr).
pub fn check_text(out: &mut impl Paint, v: &CheckVerdict<'_>) -> io::Result<()> {
    let Some(judged) = v.peaks.first() else {
        return Ok(());
    };
    let peak = judged.peak;
    let (bytes, what, limit) = (peak.bytes, peak.kind.as_str(), v.limit_bytes());
    let limit_text = format!("{} ({} B)", bytes_iec(limit), v.max_peak_bytes);
    let over = v.over().count();
    if over == 0 {
        out.paint(Tone::Good, "ok")?;
        return writeln!(
            out,
            ": {} {what} {} ({bytes} B) is within the limit {limit_text}",
            judged.device,
            bytes_iec(bytes)
        );
    }
    let at = when(v.summary.start_ns, peak.at_ns);
    let op = (judged.op).map_or(String::new(), |o| format!(" in {}", one_line(o)));
    let others = match over - 1 {
        0 => String::new(),
        n => format!("; {} more over", plural(n as u64, "device", "devices")),
    };
    out.paint(Tone::Bad, "over the limit")?;
    writeln!(
        out,
        ": {} {what} {} ({bytes} B){at}{op} exceeds {limit_text} by {}{others}",
        judged.device,
        bytes_iec(bytes),
        bytes_iec(bytes - limit)
    )
}

/// `check --format json`.
#[derive(Serialize)]
pub struct CheckDoc<'a> {
    inputs: Vec<InputDoc>,
    limits: LimitsDoc,
    devices: Vec<CheckDeviceDoc<'a>>,
    verdict: &'static str,
    failures: Vec<FailureDoc>,
}

#[derive(Serialize)]
struct InputDoc {
    file: String,
    format: &'static str,
}

#[derive(Serialize)]
struct LimitsDoc {
    max_peak_bytes: u64,
}

/// A device's judged peak: allocated, else reserved where the source sees no allocations
/// (or NVML's, or the host's, as `--of` asks).
#[derive(Serialize)]
struct CheckDeviceDoc<'a> {
    device: String,
    peak: &'static str,
    peak_bytes: i64,
    peak_at_us: Option<f64>,
    peak_op: Option<&'a str>,
    within_limit: bool,
}

/// A limit a device is over.
#[derive(Serialize)]
struct FailureDoc {
    device: String,
    limit: &'static str,
    limit_bytes: u64,
    value_bytes: i64,
    over_by_bytes: i64,
}

impl<'a> CheckDoc<'a> {
    /// The document for `check` of `file`; devices in the summary's order.
    pub fn new(file: &Path, v: &CheckVerdict<'a>) -> CheckDoc<'a> {
        let s = v.summary;
        let limit = v.limit_bytes();
        let mut devices: Vec<&JudgedPeak<'_>> = v.peaks.iter().collect();
        devices.sort_by_key(|p| {
            let at = s.devices.iter().position(|x| x.device == p.device);
            (at.is_none(), at, p.device.to_string())
        });
        CheckDoc {
            inputs: vec![InputDoc {
                file: file.display().to_string(),
                format: s.format.as_str(),
            }],
            limits: LimitsDoc {
                max_peak_bytes: v.max_peak_bytes,
            },
            devices: devices
                .into_iter()
                .map(|p| CheckDeviceDoc {
                    device: p.device.to_string(),
                    peak: p.peak.kind.key(),
                    peak_bytes: p.peak.bytes,
                    peak_at_us: p.peak.at_ns.map(|t| us_after(s.start_ns, t)),
                    peak_op: p.op,
                    within_limit: p.peak.bytes <= limit,
                })
                .collect(),
            verdict: v.verdict(),
            failures: v
                .over()
                .map(|p| FailureDoc {
                    device: p.device.to_string(),
                    limit: "max_peak",
                    limit_bytes: v.max_peak_bytes,
                    value_bytes: p.peak.bytes,
                    over_by_bytes: p.peak.bytes - limit,
                })
                .collect(),
        }
    }
}

/// The verdict as a JSON document.
pub fn check_json(out: &mut impl Write, file: &Path, v: &CheckVerdict<'_>) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &CheckDoc::new(file, v))?;
    writeln!(out)
}
