//! Many ranks at once (`summary`, `report` of several inputs): one row per input and
//! device, then the worst rank, the skew, the ranks with OOMs and the pipeline stages —
//! as text, as markdown for the report, and as JSON (whose field names are a contract, as
//! `json_docs.rs`'s are: the per-device objects are a single-file summary's).

use std::io::{self, Write};

use collector::analysis::ranks::{AcrossRanks, RankInput};
use collector::units::{bytes_iec, duration_between};
use serde::Serialize;

use super::json_docs::DeviceDoc;
use super::terminal::{one_line, path_line};
use super::text::{group, md_cell, plural};

/// The table's column headings.
const HEADINGS: [&str; 9] = [
    "rank",
    "device",
    "peak allocated",
    "when",
    "op",
    "peak reserved",
    "final",
    "events",
    "file",
];

/// Columns aligned right in text (numbers).
const RIGHT: [bool; 9] = [true, false, true, true, false, true, true, true, false];

/// Inputs and what they say together, as the commands show them.
pub struct RanksView<'a> {
    /// The inputs, in rank order.
    pub inputs: &'a [RankInput],
    /// What they say together.
    pub across: &'a AcrossRanks,
    /// Files in the directories named that no importer recognised.
    pub skipped: u64,
}

/// "rank 3", or the file when the input has no rank.
fn who(input: &RankInput) -> String {
    match input.rank {
        Some(rank) => format!("rank {rank} ({})", path_line(&input.path)),
        None => path_line(&input.path),
    }
}

fn dash(value: Option<String>) -> String {
    value.unwrap_or_else(|| "-".to_owned())
}

/// One row per input and device (an input without memory: one row of dashes).
fn rows(inputs: &[RankInput]) -> Vec<[String; 9]> {
    let mut rows = Vec::new();
    for input in inputs {
        let s = &input.summary;
        let rank = dash(input.rank.map(|r| r.to_string()));
        let file = path_line(&input.path);
        if s.devices.is_empty() {
            let mut row: [String; 9] = Default::default();
            row.iter_mut().for_each(|c| *c = "-".to_owned());
            row[0] = rank.clone();
            row[8] = file.clone();
            rows.push(row);
        }
        for d in &s.devices {
            rows.push([
                rank.clone(),
                d.device.to_string(),
                dash(d.peak_allocated_bytes.map(bytes_iec)),
                dash(
                    d.peak_allocated_at_ns
                        .map(|t| duration_between(s.start_ns, t)),
                ),
                dash(
                    d.peak_allocated_op
                        .as_deref()
                        .map(|o| one_line(o).into_owned()),
                ),
                dash(d.peak_reserved_bytes.map(bytes_iec)),
                dash(d.final_allocated_bytes.map(bytes_iec)),
                group(d.memory_events),
                file.clone(),
            ]);
        }
    }
    rows
}

/// The lines under the table: worst, skew, OOMs, stages.
fn findings(v: &RanksView<'_>) -> Vec<(String, String)> {
    let f = v.across;
    let mut lines = Vec::new();
    if let Some(w) = f.worst
        && let Some(input) = v.inputs.get(w.input)
    {
        let what = format!(
            "{} {}, {}",
            who(input),
            w.device,
            bytes_iec(w.peak_allocated_bytes)
        );
        lines.push(("worst".to_owned(), what));
    }
    if let Some(skew) = f.skew_max_over_median {
        lines.push((
            "skew".to_owned(),
            format!("{skew:.3}× (max over median peak allocated)"),
        ));
    }
    let ooms: Vec<String> = f
        .oom_inputs
        .iter()
        .filter_map(|&i| v.inputs.get(i))
        .map(who)
        .collect();
    let ooms = if ooms.is_empty() {
        "none".to_owned()
    } else {
        ooms.join(", ")
    };
    lines.push(("out of memory".to_owned(), ooms));
    for input in v.inputs {
        if let Some(from) = &input.summary.categories_from {
            lines.push(("categories".to_owned(), format!("{}: {from}", who(input))));
        }
    }
    for stage in &f.stages {
        let worst = stage.worst.and_then(|(i, bytes)| {
            let input = v.inputs.get(i)?;
            Some(format!(", worst {} {}", who(input), bytes_iec(bytes)))
        });
        let ranks = plural(stage.inputs.len() as u64, "input", "inputs");
        lines.push((
            format!("stage {}", stage.stage),
            format!("{ranks}{}", worst.unwrap_or_default()),
        ));
    }
    lines
}

/// The heading line: how many inputs, and the files skipped.
fn count_line(v: &RanksView<'_>) -> String {
    let skipped = match v.skipped {
        0 => String::new(),
        n => format!(
            " ({} skipped: not a trace, snapshot or recording)",
            plural(n, "file", "files")
        ),
    };
    format!(
        "{}{skipped}",
        plural(v.inputs.len() as u64, "input", "inputs")
    )
}

/// The ranks as text: the count, the table, the findings.
pub fn ranks_text(out: &mut impl Write, v: &RanksView<'_>) -> io::Result<()> {
    writeln!(out, "{}", count_line(v))?;
    writeln!(out)?;
    let rows = rows(v.inputs);
    let mut widths = HEADINGS.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let parts: Vec<String> = cells
            .iter()
            .zip(widths.iter().zip(RIGHT))
            .map(|(c, (&w, right))| {
                if right {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        parts.join("  ").trim_end().to_owned()
    };
    writeln!(out, "{}", line(&HEADINGS.map(str::to_owned)))?;
    for row in &rows {
        writeln!(out, "{}", line(row))?;
    }
    writeln!(out)?;
    for (label, what) in findings(v) {
        writeln!(out, "{label:<15}{what}")?;
    }
    Ok(())
}

/// The ranks as a markdown section, for the top of a report.
pub fn ranks_markdown(md: &mut String, v: &RanksView<'_>) {
    md.push_str("\n## Ranks\n\n");
    md.push_str(&count_line(v));
    md.push_str("\n\n");
    md.push_str(&format!("| {} |\n", HEADINGS.join(" | ")));
    let rule: Vec<&str> = RIGHT
        .iter()
        .map(|&r| if r { "---:" } else { "---" })
        .collect();
    md.push_str(&format!("| {} |\n", rule.join(" | ")));
    for row in rows(v.inputs) {
        let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
        md.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    md.push('\n');
    for (label, what) in findings(v) {
        md.push_str(&format!("- **{label}**: {}\n", md_cell(&what)));
    }
}

/// `summary --format json` of several inputs.
#[derive(Serialize)]
struct RanksDoc<'a> {
    inputs: Vec<InputDoc<'a>>,
    worst: Option<WorstDoc>,
    skew: SkewDoc,
    ooms: Vec<RankRefDoc>,
    stages: Vec<StageDoc>,
    skipped_files: u64,
}

#[derive(Serialize)]
struct InputDoc<'a> {
    path: String,
    rank: Option<i64>,
    stage: Option<i64>,
    format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    categories_from: Option<&'a str>,
    devices: Vec<DeviceDoc<'a>>,
}

#[derive(Serialize)]
struct WorstDoc {
    path: String,
    rank: Option<i64>,
    device: String,
    peak_allocated_bytes: i64,
}

#[derive(Serialize)]
struct SkewDoc {
    max_over_median: Option<f64>,
}

#[derive(Serialize)]
struct RankRefDoc {
    path: String,
    rank: Option<i64>,
}

#[derive(Serialize)]
struct StageDoc {
    stage: i64,
    inputs: usize,
    worst: Option<WorstDoc>,
}

fn rank_ref(input: &RankInput) -> RankRefDoc {
    RankRefDoc {
        path: input.path.display().to_string(),
        rank: input.rank,
    }
}

fn worst_doc(input: &RankInput, device: String, bytes: i64) -> WorstDoc {
    WorstDoc {
        path: input.path.display().to_string(),
        rank: input.rank,
        device,
        peak_allocated_bytes: bytes,
    }
}

/// The ranks as one JSON document.
pub fn ranks_json(out: &mut impl Write, v: &RanksView<'_>) -> io::Result<()> {
    let f = v.across;
    let input_at = |i: usize| v.inputs.get(i);
    let doc = RanksDoc {
        inputs: v
            .inputs
            .iter()
            .map(|r| InputDoc {
                path: r.path.display().to_string(),
                rank: r.rank,
                stage: r.stage,
                format: r.summary.format.as_str(),
                categories_from: r.summary.categories_from.as_deref(),
                devices: r
                    .summary
                    .devices
                    .iter()
                    .map(|d| DeviceDoc::new(r.summary.start_ns, d))
                    .collect(),
            })
            .collect(),
        worst: f.worst.and_then(|w| {
            Some(worst_doc(
                input_at(w.input)?,
                w.device.to_string(),
                w.peak_allocated_bytes,
            ))
        }),
        skew: SkewDoc {
            max_over_median: f.skew_max_over_median,
        },
        ooms: f
            .oom_inputs
            .iter()
            .filter_map(|&i| input_at(i))
            .map(rank_ref)
            .collect(),
        stages: f
            .stages
            .iter()
            .map(|s| StageDoc {
                stage: s.stage,
                inputs: s.inputs.len(),
                worst: s.worst.and_then(|(i, bytes)| {
                    let input = input_at(i)?;
                    let device = input.peak_allocated().map(|(d, _)| d.to_string())?;
                    Some(worst_doc(input, device, bytes))
                }),
            })
            .collect(),
        skipped_files: v.skipped,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

/// The ranks as the HTML page's rank table: the count, the table, the findings.
pub fn ranks_table(v: &RanksView<'_>) -> super::html::RankTable {
    super::html::RankTable {
        count: count_line(v),
        headings: HEADINGS.iter().map(|h| (*h).to_owned()).collect(),
        right: RIGHT.to_vec(),
        rows: rows(v.inputs).into_iter().map(Vec::from).collect(),
        findings: findings(v),
    }
}
