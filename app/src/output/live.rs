//! `vramscope live`: what was live at an instant, grouped by allocation site, as text with
//! shares and size bars and as JSON; the groups sum to the allocated bytes.

use std::io::{self, Write};
use std::path::Path;

use collector::analysis::live::{GroupKind, LiveGroup};
use collector::units::{bytes_iec, duration_us};
use serde::Serialize;

use super::terminal::{one_line, path_line};
use super::text::{blocks_word, cut, cut_front, group, percent};

/// Widest row of `live`'s text: it fits a 100-column terminal. The site gets what the
/// size, share, count and bar columns (52) leave; JSON keeps the full site and frames.
const ROW_CHARS: usize = 100;
/// Characters left for a group's site: frames with their files' directories dropped
/// ([`LiveGroup::short_site`]), cut with an ellipsis.
const SITE_CHARS: usize = ROW_CHARS - 52;
/// Width of a row's size bar, in characters: the largest group's bar is this long.
const BAR_CHARS: usize = 14;

/// What `vramscope live` shows.
#[derive(Serialize)]
pub struct LiveReport {
    /// The device, `cuda:0`.
    pub device: String,
    /// `--at`: `peak`, `oom`, `end`, or the time asked for in µs since the start.
    pub at: String,
    /// The instant, in µs since the start.
    pub at_us: f64,
    /// Allocated bytes then.
    pub allocated_bytes: i64,
    /// Reserved bytes then, when known.
    pub reserved_bytes: Option<i64>,
    /// Bytes in live blocks with known addresses.
    pub live_bytes: i64,
    /// How many such blocks.
    pub live_blocks: u64,
    /// The blocks grouped by allocation site, and the bytes no block seen holds
    /// (allocated before the trace began), largest first: `bytes` sum to
    /// `allocated_bytes`.
    pub groups: Vec<LiveGroup>,
}

/// The live report as JSON.
pub fn live_json(out: &mut impl Write, report: &LiveReport) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    writeln!(out)
}

/// The live report as text: one line per group with a size bar, each at most
/// [`ROW_CHARS`] wide.
pub fn live_text(out: &mut impl Write, path: &Path, r: &LiveReport) -> io::Result<()> {
    let reserved = r
        .reserved_bytes
        .map_or(String::new(), |b| format!(", reserved {}", bytes_iec(b)));
    writeln!(
        out,
        "{} — {} at {} ({})",
        path_line(path),
        r.device,
        r.at,
        duration_us(r.at_us)
    )?;
    writeln!(
        out,
        "allocated {}{reserved}; {} live blocks seen hold {} ({})",
        bytes_iec(r.allocated_bytes),
        group(r.live_blocks),
        bytes_iec(r.live_bytes),
        percent(if r.allocated_bytes == 0 {
            0.0
        } else {
            r.live_bytes as f64 / r.allocated_bytes as f64
        })
    )?;
    writeln!(out)?;
    // Bars scale to the largest group; the folded rest, however large, gets a full bar.
    let largest = r
        .groups
        .iter()
        .filter(|g| g.kind != GroupKind::More)
        .map(|g| g.bytes)
        .max()
        .unwrap_or(1)
        .max(1);
    for g in &r.groups {
        let bar_chars = (g.bytes.max(0) as f64 / largest as f64).min(1.0) * BAR_CHARS as f64;
        let bar = "█".repeat(bar_chars.round() as usize);
        let site = match g.kind {
            GroupKind::Module => cut_front(&one_line(&g.site), SITE_CHARS),
            _ => cut(&one_line(&g.short_site()), SITE_CHARS),
        };
        let blocks = if g.blocks == 0 && !g.kind.is_seen() {
            String::new()
        } else {
            format!("{:>6} {:<6}", group(g.blocks), blocks_word(g.blocks))
        };
        writeln!(
            out,
            "{:>12} {:>6}  {blocks:<13}  {bar:<BAR_CHARS$}  {site}",
            bytes_iec(g.bytes),
            percent(g.share),
        )?;
    }
    Ok(())
}
