//! `vramscope check` of several inputs (ranks): every rank over the limit named, as text
//! and as JSON. The JSON is the single-input document's (`check.rs`) with each input,
//! device and failure naming its file and rank.

use std::io::{self, Write};

use collector::analysis::ranks::RankInput;
use collector::units::bytes_iec;
use serde_json::{Value, json};

use super::check::{CheckDoc, CheckVerdict};
use super::style::{Paint, Tone};
use super::terminal::path_line;
use super::text::plural;

/// One input and its verdict.
pub struct RankVerdict<'a> {
    /// The input.
    pub input: &'a RankInput,
    /// Its devices against the limit.
    pub verdict: CheckVerdict<'a>,
}

fn who(input: &RankInput) -> String {
    match input.rank {
        Some(rank) => format!("rank {rank} {}", path_line(&input.path)),
        None => path_line(&input.path),
    }
}

/// The verdict: a line naming how many ranks are over, then one line per rank and device
/// over the limit (worst first); or the worst peak within it.
pub fn ranks_check_text(
    out: &mut impl Paint,
    verdicts: &[RankVerdict<'_>],
    skipped: u64,
) -> io::Result<()> {
    let Some(max_peak_bytes) = verdicts.first().map(|v| v.verdict.max_peak_bytes) else {
        return Ok(());
    };
    let limit = i64::try_from(max_peak_bytes).unwrap_or(i64::MAX);
    let limit_text = format!("{} ({max_peak_bytes} B)", bytes_iec(limit));
    let mut over: Vec<(&RankVerdict<'_>, String, &'static str, i64)> = verdicts
        .iter()
        .flat_map(|v| {
            v.verdict
                .over()
                .map(move |p| (v, p.device.to_string(), p.peak.kind.as_str(), p.peak.bytes))
        })
        .collect();
    over.sort_by_key(|o| std::cmp::Reverse(o.3));
    let judged = verdicts
        .iter()
        .filter(|v| !v.verdict.peaks.is_empty())
        .count();
    let skipped = match skipped {
        0 => String::new(),
        n => format!("; {} skipped", plural(n, "other file", "other files")),
    };
    let inputs = format!(
        "{} judged of {}{skipped}",
        plural(judged as u64, "input", "inputs"),
        verdicts.len()
    );
    if over.is_empty() {
        let worst = verdicts
            .iter()
            .filter_map(|v| v.verdict.peaks.first().map(|p| (v, p)))
            .max_by_key(|(_, p)| p.peak.bytes);
        let Some((v, judged)) = worst else {
            return Ok(());
        };
        out.paint(Tone::Good, "ok")?;
        return writeln!(
            out,
            ": {inputs}; the worst, {} {} {} {} ({} B), is within the limit {limit_text}",
            who(v.input),
            judged.device,
            judged.peak.kind.as_str(),
            bytes_iec(judged.peak.bytes),
            judged.peak.bytes
        );
    }
    let ranks = over
        .iter()
        .map(|o| &o.0.input.path)
        .collect::<std::collections::BTreeSet<_>>();
    out.paint(Tone::Bad, "over the limit")?;
    writeln!(
        out,
        ": {} over {limit_text} ({inputs})",
        plural(ranks.len() as u64, "input", "inputs")
    )?;
    for (v, device, what, bytes) in &over {
        writeln!(
            out,
            "  {} {device} {what} {} ({bytes} B) exceeds it by {}",
            who(v.input),
            bytes_iec(*bytes),
            bytes_iec(bytes - limit)
        )?;
    }
    Ok(())
}

/// Each input's single-input document, merged: `inputs`, `devices` and `failures` gain
/// `rank` (and devices and failures `file`); one `verdict` for all.
pub fn ranks_check_json(out: &mut impl Write, verdicts: &[RankVerdict<'_>]) -> io::Result<()> {
    let (mut inputs, mut devices, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    let mut limits = Value::Null;
    for v in verdicts {
        let doc = serde_json::to_value(CheckDoc::new(&v.input.path, &v.verdict))?;
        let file = json!(v.input.path.display().to_string());
        let rank = json!(v.input.rank);
        let tagged = |key: &str, with_file: bool| -> Vec<Value> {
            let items = doc
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            items
                .into_iter()
                .map(|mut item| {
                    if let Some(object) = item.as_object_mut() {
                        if with_file {
                            object.insert("file".into(), file.clone());
                        }
                        object.insert("rank".into(), rank.clone());
                    }
                    item
                })
                .collect()
        };
        inputs.extend(tagged("inputs", false));
        devices.extend(tagged("devices", true));
        failures.extend(tagged("failures", true));
        limits = doc.get("limits").cloned().unwrap_or(Value::Null);
    }
    let verdict = match (devices.is_empty(), failures.is_empty()) {
        (true, _) => "no_data",
        (false, false) => "over",
        (false, true) => "ok",
    };
    let doc = json!({
        "inputs": inputs,
        "limits": limits,
        "devices": devices,
        "verdict": verdict,
        "failures": failures,
    });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}
