//! The driver's view of a recording (NVML samples, host RSS and PSS) as summary text.

use std::io::{self, Write};

use collector::analysis::Summary;
use collector::units::{bytes_iec, duration_between};

use super::text::plural;

/// Whether the summary has anything from the driver or the host to show.
pub fn has_samples(s: &Summary) -> bool {
    !s.nvml.is_empty() || s.host_rss_peak_bytes.is_some()
}

/// One block per GPU: peak used on the device, the recorded tree's peak and its processes,
/// least free memory; then the host RSS and PSS peaks.
pub fn nvml_text(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    let b = |n: u64| bytes_iec(i64::try_from(n).unwrap_or(i64::MAX));
    let at = |time_ns: i64| duration_between(s.start_ns, time_ns);
    for g in &s.nvml {
        writeln!(out)?;
        let total = g
            .total_bytes
            .map_or(String::new(), |t| format!(" of {}", b(t)));
        writeln!(
            out,
            "{} (NVML, {})",
            g.device,
            plural(g.samples, "sample", "samples")
        )?;
        writeln!(
            out,
            "  peak used        {}{total} at {} (every process, context and driver allocation)",
            b(g.peak_used_bytes),
            at(g.peak_used_at_ns)
        )?;
        match (g.peak_process_bytes, g.peak_process_at_ns) {
            (Some(p), Some(t)) => writeln!(out, "  this program     {} at {}", b(p), at(t))?,
            _ if !g.processes.is_empty() => writeln!(
                out,
                "  this program     on the GPU, but NVML does not report its memory"
            )?,
            _ => writeln!(out, "  this program     no per-process memory from NVML")?,
        }
        for p in &g.processes {
            let peak = match (p.peak_bytes, p.peak_at_ns) {
                (Some(bytes), Some(t)) => format!("{} at {}", b(bytes), at(t)),
                _ => "memory not available".to_owned(),
            };
            writeln!(out, "    pid {:<10} {peak}", p.pid)?;
        }
        let mut facts = Vec::new();
        if let Some(f) = g.min_free_bytes {
            facts.push(format!("least free {}", b(f)));
        }
        if let Some(r) = g.driver_reserved_bytes {
            facts.push(format!("driver reserved {}", b(r)));
        }
        if !facts.is_empty() {
            writeln!(out, "  {}", facts.join(", "))?;
        }
    }
    if let Some(rss) = s.host_rss_peak_bytes {
        writeln!(out)?;
        let processes = match s.host_processes_max {
            Some(1) => "the recorded process".to_owned(),
            Some(n) => format!("the recorded process and its descendants, up to {n} at once"),
            None => "the recorded process and its descendants".to_owned(),
        };
        writeln!(out, "host RSS peak {} ({processes})", b(rss))?;
        if let Some(pss) = s.host_pss_peak_bytes {
            writeln!(
                out,
                "host PSS peak {} (shared pages counted once: what the processes hold together)",
                b(pss)
            )?;
        }
    }
    Ok(())
}
