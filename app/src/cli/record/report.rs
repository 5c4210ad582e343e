//! The short summary on stderr when a recording ends: the file, the peaks per GPU and per
//! process, the host peak, what became of the allocator history, and the program's outcome.

use std::path::Path;
use std::time::Duration;

use collector::parse::recording::Header;
use collector::units::bytes_iec;

use super::child::Outcome;
use super::torch::TorchReport;
use super::writer::WriterReport;

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
        (None, false) => "not finalised".to_owned(),
    };
    out.push(format!(
        "recorded {} in {} ({} samples, {state})",
        f.path.display(),
        secs(f.elapsed),
        f.written.samples
    ));
    if let Some(why) = &f.header.nvml_unavailable {
        out.push(format!("  no GPU readings: {why}"));
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

/// Print the summary on stderr.
pub fn print(f: &Facts<'_>) {
    for line in lines(f) {
        eprintln!("vramscope: {line}");
    }
}
