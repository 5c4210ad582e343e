//! The short summary when a recording ends: the file, the peaks per GPU and per process, the
//! host peaks, what became of the allocator history, the program's outcome and what to run
//! next — as text on stderr, or with `--format json` as one JSON document on stdout (after
//! everything the program printed there).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use collector::parse::recording::Header;
use collector::units::bytes_iec;

use super::child::Outcome;
use super::torch::TorchReport;
use super::writer::WriterReport;
use crate::output::terminal::eprint_escaped;

/// What the summary is made of.
pub struct Facts<'a> {
    /// The recording.
    pub path: &'a Path,
    /// How long the run took.
    pub elapsed: Duration,
    /// What the writer saw.
    pub written: &'a WriterReport,
    /// The recording's header.
    pub header: &'a Header,
    /// `--torch-memory`, when on.
    pub torch: Option<&'a TorchReport>,
    /// How the program ended.
    pub outcome: Outcome,
}

/// The summary lines.
pub fn lines(f: &Facts<'_>) -> Vec<String> {
    let b = |n: u64| bytes_iec(i64::try_from(n).unwrap_or(i64::MAX));
    let secs = |d: Duration| format!("{:.1} s", d.as_secs_f64());
    let mut out = Vec::new();
    let state = match (&f.written.error, f.written.finalised) {
        (Some(e), _) => format!("incomplete: {e}"),
        (None, true) => "complete".to_owned(),
        (None, false) => "incomplete: not finalised".to_owned(),
    };
    out.push(format!(
        "recorded {} in {} ({} samples, {state})",
        f.path.display(),
        secs(f.elapsed),
        f.written.samples
    ));
    if f.header.nvml_unavailable.is_some() {
        // Why was said once, as the run began.
        out.push("  no GPU readings (NVML could not be loaded)".to_owned());
    }
    for (index, g) in &f.written.gpus {
        let total = g
            .total_bytes
            .map_or(String::new(), |t| format!(" of {}", b(t)));
        let mut line = format!(
            "  cuda:{index}  peak {}{total} used at {}",
            b(g.peak_used_bytes),
            secs(g.peak_used_at)
        );
        match g.peak_procs_bytes {
            Some(p) => line.push_str(&format!("; this program {}", b(p))),
            None if !g.pids.is_empty() => line.push_str("; this program: memory not reported"),
            None => {}
        }
        if !g.pids.is_empty() {
            let pids: Vec<String> = g
                .pids
                .iter()
                .map(|(pid, peak)| match peak {
                    Some(p) => format!("pid {pid} {}", b(*p)),
                    None => format!("pid {pid} ?"),
                })
                .collect();
            line.push_str(&format!(" ({})", pids.join(", ")));
        }
        out.push(line);
    }
    if let Some(rss) = f.written.peak_rss_bytes {
        let pss = f
            .written
            .peak_pss_bytes
            .map_or(String::new(), |p| format!(", PSS {}", b(p)));
        let processes = match f.written.most_processes {
            Some(n) if n > 1 => format!(" ({n} processes at most)"),
            _ => String::new(),
        };
        out.push(format!("  host    peak RSS {}{pss}{processes}", b(rss)));
    }
    if let Some(t) = f.torch {
        out.push(match (&t.why_none, t.processes) {
            (Some(why), 0) => format!(
                "  torch   no allocator history: {}",
                why.trim_start_matches("torch-memory: ")
            ),
            _ => format!(
                "  torch   allocator history of {} process{} ({} snapshot{} kept)",
                t.processes,
                if t.processes == 1 { "" } else { "es" },
                t.embedded,
                if t.embedded == 1 { "" } else { "s" }
            ),
        });
    }
    out.push(format!("  the program {}", f.outcome.describe()));
    out
}

/// What to run next on a recording that holds something.
fn next_steps(f: &Facts<'_>) -> Vec<String> {
    // A cut recording's state line says so; its next step is to find out what was lost.
    if !f.written.finalised || f.written.error.is_some() {
        return Vec::new();
    }
    let file = shell_word(&f.path.display().to_string());
    let report = shell_word(&format!("{}.report", f.path.display()));
    vec![
        format!("  next: vramscope view {file}"),
        format!("        vramscope report {file} -o {report}"),
    ]
}

/// `word` as a shell would need it typed: as is when plain, else in single quotes (control
/// characters shown escaped: they cannot be typed, nor printed raw).
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._/-+=:,@".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        let quoted = format!("'{}'", word.replace('\'', r"'\''"));
        crate::output::terminal::escape_controls(&quoted).into_owned()
    }
}

/// Print the summary: text on stderr, or JSON on stdout.
pub fn print(f: &Facts<'_>, format: crate::cli::Format) {
    match format {
        crate::cli::Format::Text => {
            for line in lines(f).into_iter().chain(next_steps(f)) {
                eprint_escaped!("vramscope: {line}");
            }
        }
        crate::cli::Format::Json => match serde_json::to_string_pretty(&doc(f)) {
            Ok(text) => println!("{text}"),
            Err(e) => eprint_escaped!("vramscope: warning: cannot write the report as JSON: {e}"),
        },
    }
}

/// The JSON document of `--format json`.
#[derive(Serialize)]
struct ReportDoc {
    file: String,
    elapsed_s: f64,
    samples: u64,
    complete: bool,
    error: Option<String>,
    nvml_unavailable: Option<String>,
    gpus: Vec<GpuDoc>,
    host_rss_peak_bytes: Option<u64>,
    host_pss_peak_bytes: Option<u64>,
    host_processes_max: Option<u32>,
    torch_processes: Option<u64>,
    torch_snapshots_kept: Option<u64>,
    exit_code: Option<i32>,
    signal: Option<i32>,
}

#[derive(Serialize)]
struct GpuDoc {
    device: String,
    peak_used_bytes: u64,
    peak_used_at_s: f64,
    total_bytes: Option<u64>,
    peak_process_bytes: Option<u64>,
    processes: Vec<ProcessDoc>,
}

#[derive(Serialize)]
struct ProcessDoc {
    pid: u32,
    peak_bytes: Option<u64>,
}

fn doc(f: &Facts<'_>) -> ReportDoc {
    let w = f.written;
    ReportDoc {
        file: f.path.display().to_string(),
        elapsed_s: f.elapsed.as_secs_f64(),
        samples: w.samples,
        complete: w.error.is_none() && w.finalised,
        error: w.error.clone(),
        nvml_unavailable: f.header.nvml_unavailable.clone(),
        gpus: w
            .gpus
            .iter()
            .map(|(index, g)| GpuDoc {
                device: format!("cuda:{index}"),
                peak_used_bytes: g.peak_used_bytes,
                peak_used_at_s: g.peak_used_at.as_secs_f64(),
                total_bytes: g.total_bytes,
                peak_process_bytes: g.peak_procs_bytes,
                processes: g
                    .pids
                    .iter()
                    .map(|(&pid, &peak_bytes)| ProcessDoc { pid, peak_bytes })
                    .collect(),
            })
            .collect(),
        host_rss_peak_bytes: w.peak_rss_bytes,
        host_pss_peak_bytes: w.peak_pss_bytes,
        host_processes_max: w.most_processes,
        torch_processes: f.torch.map(|t| t.processes),
        torch_snapshots_kept: f.torch.map(|t| t.embedded),
        exit_code: f.outcome.exit_code,
        signal: f.outcome.signal,
    }
}
