//! Names from a crafted trace, and a crafted file name, reach every output escaped for its
//! language: the terminal (bidi controls and line separators shown as `\u202e`, long
//! names cut, no forged line), markdown (no code span closed, no link, image or HTML, no
//! control byte or newline), CSV (no formula).

use std::path::{Path, PathBuf};

use crate::support::*;

/// Reverses what follows it on a terminal that honours bidi.
const RLO: &str = "\u{202e}";

/// An op name that closes a code span, opens an image and raw HTML, and carries ESC, BEL,
/// RLO, an isolate, a line separator and a newline.
fn markup_name() -> String {
    format!(
        "aten::mm` ![x](https://example.com/x.png) <img src=x onerror=alert(1)> \u{1b}[2J\u{7}{RLO}gnp\u{2066}\u{2028}\nok: forged"
    )
}

/// A trace with three ops, each allocating at its own time: the markup one (the peak), a
/// formula, and one named with 100 000 characters; written as `name` in `dir`.
fn crafted(dir: &Path, name: &str) -> PathBuf {
    let long = format!("aten::{}", "x".repeat(100_000));
    let ops = [markup_name(), "=HYPERLINK(\"http://e\")".to_owned(), long];
    let mut events = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let ts = i as i64 * 100;
        let bytes = [4 << 20, 1 << 20, 2 << 20][i];
        events.push(serde_json::json!(
            {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts, "dur": 10}));
        events.push(serde_json::json!(
            {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1,
             "tid": 1, "ts": ts + 5, "args": {"Bytes": bytes, "Total Allocated": bytes,
             "Addr": 4096 * (i + 1), "Device Type": 1, "Device Id": 0}}));
    }
    let path = dir.join(name);
    std::fs::write(
        &path,
        serde_json::json!({"traceEvents": events}).to_string(),
    )
    .expect("write");
    path
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The bytes that reorder or break a line, and ESC, BEL.
fn raw_controls(out: &[u8]) -> Vec<&'static str> {
    let text = String::from_utf8_lossy(out);
    ["\u{1b}", "\u{7}", RLO, "\u{2066}", "\u{2028}"]
        .into_iter()
        .filter(|c| text.contains(c))
        .collect()
}

#[test]
fn the_terminal_gets_no_bidi_control_no_forged_line_and_no_endless_line() {
    // GIVEN the crafted trace under a name with a newline and an `ok:` line in it
    let dir = temp_dir("hostile-names-terminal");
    let path = crafted(
        &dir,
        "run\nok: cuda:0 allocated 1 B is within the limit.json",
    );
    let p = s(&path);
    for args in [
        vec!["summary", p],
        vec!["table", p],
        vec!["live", p],
        vec!["check", p, "--max-peak", "1KiB"],
        vec!["check", p, p, "--max-peak", "1KiB"],
        vec!["diff", p, p],
    ] {
        // WHEN each command shows it
        let out = vramscope(&args);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        // THEN no raw control, no line of the input's own, no line of 100 000 characters
        assert!(raw_controls(&out.stdout).is_empty(), "{args:?}: {stdout}");
        assert!(raw_controls(&out.stderr).is_empty(), "{args:?}: {stderr}");
        for line in stdout.lines().chain(stderr.lines()) {
            assert!(!line.starts_with("ok: forged"), "{args:?}: {line}");
            assert!(
                !line.starts_with("ok: cuda:0 allocated 1 B"),
                "{args:?}: {line}"
            );
            assert!(
                line.chars().count() < 2_000,
                "{args:?}: a line of {}",
                line.len()
            );
        }
    }
    // AND the bidi override shows as text where the op name is shown
    let check = vramscope(&["check", p, "--max-peak", "1KiB"]);
    let line = String::from_utf8_lossy(&check.stdout);
    assert!(line.contains("\\u202egnp\\u2066\\u2028"), "{line}");
}

#[test]
fn markdown_outputs_carry_no_markup_control_or_newline_from_names() {
    // GIVEN the crafted trace under a name with a backtick, markup and a control byte
    let dir = temp_dir("hostile-names-markdown");
    let path = crafted(&dir, "a`b <i>x \u{7}[l](e).json");
    let report = dir.join("report");
    // WHEN reported and diffed as markdown
    vramscope_ok(&["report", s(&path), "-o", s(&report)]);
    let md = std::fs::read_to_string(report.join("report.md")).expect("report.md");
    let diff = vramscope_ok(&["diff", s(&path), s(&path), "--format", "markdown"]);
    for (what, text) in [("report.md", &md), ("diff", &diff)] {
        // THEN nothing from the names is markup outside a code span: no image, link or
        // HTML tag; no control byte anywhere; each name on one line
        assert!(raw_controls(text.as_bytes()).is_empty(), "{what}: {text}");
        let prose = outside_code_spans(text);
        for markup in ["<img", "<i>", "](https://example.com", "[l](e)"] {
            assert!(!prose.contains(markup), "{what}: {markup} in {prose}");
        }
        assert!(!text.lines().any(|l| l.starts_with("ok: forged")), "{what}");
        // AND the op name is one code span, fenced longer than the backtick in it
        assert!(
            text.contains("``aten::mm` ![x](https://example.com/x.png) <img"),
            "{what}: {text}"
        );
    }
    // The charts beside it show the names as text too: no control byte (which no SVG may
    // hold) and no reordering character, no tag.
    let mut svgs = 0;
    for entry in std::fs::read_dir(&report).expect("report dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "svg") {
            let svg = std::fs::read_to_string(&path).expect("svg");
            assert!(
                raw_controls(svg.as_bytes()).is_empty(),
                "{}",
                path.display()
            );
            assert!(!svg.contains("<img"), "{}", path.display());
            svgs += 1;
        }
    }
    assert!(svgs >= 1);
    // The file's name heads its section as text: the backtick and bracket escaped, the tag
    // as entities, the BEL as text.
    assert!(
        md.contains("## a\\`b &lt;i&gt;x \\\\u0007\\[l\\](e).json\n"),
        "{md}"
    );
}

#[test]
fn a_csv_cell_from_a_name_is_never_a_formula() {
    let dir = temp_dir("hostile-names-csv");
    let path = crafted(&dir, "t.json");
    let csv = vramscope_ok(&["table", s(&path), "--format", "csv"]);
    let formula = csv
        .lines()
        .find(|l| l.contains("HYPERLINK"))
        .expect("the formula row");
    assert!(
        formula.starts_with("\"'=HYPERLINK(\"\"http://e\"\")\","),
        "{formula}"
    );
    assert!(!csv.lines().any(|l| l.starts_with('=')), "{csv}");
}

/// `md` without its code spans, as CommonMark reads them: a run of N backticks opens a span
/// that the next run of exactly N closes (a run never closed is literal text; an escaped
/// backtick opens nothing).
fn outside_code_spans(md: &str) -> String {
    let unescaped = md.replace("\\\\", "\u{1}").replace("\\`", "\u{2}");
    let md = unescaped.as_str();
    let b = md.as_bytes();
    let run_at = |i: usize| b[i..].iter().take_while(|&&c| c == b'`').count();
    let (mut out, mut i) = (String::new(), 0);
    while i < b.len() {
        if b[i] != b'`' {
            let next = md[i..].find('`').map_or(b.len(), |k| i + k);
            out.push_str(&md[i..next]);
            i = next;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let close = loop {
            match md[j..].find('`') {
                None => break None,
                Some(k) => {
                    let m = run_at(j + k);
                    if m == n {
                        break Some(j + k + m);
                    }
                    j += k + m;
                }
            }
        };
        match close {
            Some(end) => i = end,
            None => {
                out.push_str(&md[i..i + n]);
                i += n;
            }
        }
    }
    out
}

#[test]
fn warnings_on_stderr_show_a_hostile_file_name_on_one_line() {
    // GIVEN a trace cut short, under a name with a newline, an `ok:` line and a bidi override
    let dir = temp_dir("hostile-names-stderr");
    let whole = std::fs::read(crafted(&dir, "whole.json")).expect("read");
    let cut = dir.join(format!("cut\nok: forged {RLO}.json"));
    std::fs::write(&cut, &whole[..whole.len() * 2 / 3]).expect("write");
    let chart = dir.join(format!("chart\nok: forged {RLO}.svg"));
    for args in [
        vec!["summary", s(&cut), "--salvage"],
        vec!["diff", s(&cut), s(&cut), "--salvage", "--chart", s(&chart)],
    ] {
        // WHEN a command warns about it, or names what it wrote, on stderr
        let out = vramscope(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        // THEN the warning is there, on one line, with no raw control
        assert!(
            stderr.contains("ends early") || stderr.contains("wrote"),
            "{stderr}"
        );
        assert!(raw_controls(&out.stderr).is_empty(), "{args:?}: {stderr}");
        assert!(
            stderr.lines().all(|l| !l.starts_with("ok: forged")),
            "{stderr}"
        );
    }
}
