//! `vramscope table`: the per-op memory table as torch prints it, and as JSON and CSV.

use std::io::{self, Write};
use std::path::Path;

use super::terminal::{one_line, path_line};
use super::text::noun;
use collector::analysis::{OpRow, TimeWindow};
use collector::model::SourceFormat;
use collector::units::{duration_between, torch_memory};

/// Facts shown around the per-op table.
pub struct TableContext<'a> {
    /// The input, named in the note about missing memory events.
    pub path: &'a Path,
    /// Rows before `--limit`.
    pub total_rows: usize,
    /// The sort key's name, as torch names it.
    pub sort: &'a str,
    /// The time window, when one was asked for.
    pub window: Option<TimeWindow>,
    /// The trace's start, ns: the window is shown as times after it.
    pub start_ns: i64,
    /// Whether the trace has memory events.
    pub has_memory: bool,
    /// Whether the source records ops at all (allocator snapshots and recordings do not).
    pub has_ops: bool,
    /// Source format, for hints.
    pub format: SourceFormat,
    /// Longest name among *all* rows, shown or not: torch sizes the column before the limit.
    pub longest_name: usize,
    /// Whether to show the CUDA columns: torch does when any row has self device memory > 0.
    pub device_columns: bool,
}

/// torch's `_build_table` constants.
const NAME_COLUMN_MAX: usize = 55;
const COLUMN_WIDTH: usize = 12;
const SPACING: usize = 2;

/// The table as torch prints it (memory columns only): same headers, widths, truncation
/// and units, "CUDA Mem" columns only when the trace has device memory.
pub fn table_text(out: &mut impl Write, rows: &[OpRow], ctx: &TableContext<'_>) -> io::Result<()> {
    if !ctx.has_memory {
        writeln!(
            out,
            "note: {} has no memory events ({})",
            path_line(ctx.path),
            ctx.format.importer().memory_hint()
        )?;
    }
    if ctx.has_memory && !ctx.has_ops {
        writeln!(
            out,
            "note: a {} records allocations but no ops, so all of its memory is in the \"[memory]\" row",
            ctx.format.describe()
        )?;
    }
    if rows.is_empty() {
        writeln!(out, "no ops in {}", describe_window(ctx))?;
        return Ok(());
    }
    let device = ctx.device_columns;
    let name_width = (ctx.longest_name + 4).min(NAME_COLUMN_MAX);
    let mut headers = vec!["Name", "CPU Mem", "Self CPU Mem"];
    if device {
        headers.extend(["CUDA Mem", "Self CUDA Mem"]);
    }
    headers.push("# of Calls");
    let widths: Vec<usize> = std::iter::once(name_width)
        .chain(std::iter::repeat_n(COLUMN_WIDTH, headers.len() - 1))
        .collect();
    let separator: String = widths
        .iter()
        .map(|w| format!("{}{}", "-".repeat(*w), " ".repeat(SPACING)))
        .collect();
    let line = |cells: &[String]| -> String {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}{}", " ".repeat(SPACING)))
            .collect()
    };
    writeln!(out, "{separator}")?;
    writeln!(
        out,
        "{}",
        line(&headers.iter().map(|h| h.to_string()).collect::<Vec<_>>())
    )?;
    writeln!(out, "{separator}")?;
    for r in rows {
        writeln!(out, "{}", line(&row_cells(r, device)))?;
    }
    writeln!(out, "{separator}")?;
    writeln!(
        out,
        "{} of {} {}, sorted by {}, {}",
        rows.len(),
        ctx.total_rows,
        noun(ctx.total_rows as u64, "row", "rows"),
        ctx.sort,
        describe_window(ctx)
    )?;
    Ok(())
}

/// One row's cells: the name cut as torch cuts it, then the memory columns and the calls.
fn row_cells(r: &OpRow, device: bool) -> Vec<String> {
    let mut name = one_line(&r.name).into_owned();
    if name.chars().count() >= NAME_COLUMN_MAX - 3 {
        name = name.chars().take(NAME_COLUMN_MAX - 3).collect::<String>() + "...";
    }
    let mut cells = vec![
        name,
        torch_memory(r.cpu_memory_usage),
        torch_memory(r.self_cpu_memory_usage),
    ];
    if device {
        cells.push(torch_memory(r.device_memory_usage));
        cells.push(torch_memory(r.self_device_memory_usage));
    }
    cells.push(r.calls.to_string());
    cells
}

fn describe_window(ctx: &TableContext<'_>) -> String {
    match ctx.window {
        None => "whole trace".to_owned(),
        Some(w) => format!(
            "window {} – {} after trace start",
            duration_between(ctx.start_ns, w.start_ns),
            duration_between(ctx.start_ns, w.end_ns)
        ),
    }
}

/// The table as a JSON array with torch's field names and integer bytes.
pub fn table_json(out: &mut impl Write, rows: &[OpRow]) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, rows)?;
    writeln!(out)
}

/// The table as CSV with a header row.
pub fn table_csv(out: &mut impl Write, rows: &[OpRow]) -> io::Result<()> {
    writeln!(
        out,
        "name,calls,self_cpu_memory_usage,cpu_memory_usage,self_device_memory_usage,device_memory_usage"
    )?;
    for r in rows {
        writeln!(
            out,
            "{},{},{},{},{},{}",
            csv_field(&r.name),
            r.calls,
            r.self_cpu_memory_usage,
            r.cpu_memory_usage,
            r.self_device_memory_usage,
            r.device_memory_usage
        )?;
    }
    Ok(())
}

/// A CSV cell of text from the input (an op name): quoted where it holds a separator, a
/// quote or a line break, and given a leading `'` where it starts as a spreadsheet formula
/// would (`=`, `+`, `-`, `@`, a tab or carriage return), so a spreadsheet shows it as text
/// and runs nothing. vramscope's own numbers, negative ones too, are written as numbers
/// and never pass here.
fn csv_field(s: &str) -> String {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let s = if formula {
        format!("'{s}")
    } else {
        s.to_owned()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_when_needed() {
        assert_eq!(csv_field("aten::mm"), "aten::mm");
        assert_eq!(csv_field("f(a, b)"), "\"f(a, b)\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("-2+3"), "'-2+3");
        assert_eq!(csv_field("+x"), "'+x");
    }
}
