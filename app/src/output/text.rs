//! Small pieces of wording shared by several reporters: thousands separators, plurals,
//! markdown cells and names cut to a readable length.

/// When a peak happened, after a size: " at 1.234 ms" (after the recording's start), or
/// " from the start" when it is the recording's first instant — a snapshot's reserved memory
/// is often at its maximum before its history begins; "" when unknown.
pub fn when(start_ns: i64, at_ns: Option<i64>) -> String {
    match at_ns {
        Some(t) if t == start_ns => " from the start".to_owned(),
        Some(t) => format!(" at {}", collector::units::duration_between(start_ns, t)),
        None => String::new(),
    }
}

/// Where a device's allocated totals came from, as summary JSON and the report name it:
/// `trace`, `reconstructed`, or `none` when the source sees no allocations.
pub fn totals_name(totals: Option<collector::timeline::TotalsSource>) -> &'static str {
    totals.map_or("none", |t| t.as_str())
}

/// 1234567 → "1,234,567" (the collector's rule, so its warnings read the same).
pub use collector::units::group_thousands as group;

/// A share (a fraction) as a percentage with one decimal: "10.5%", "<0.1%" for a
/// sliver, "-3.2%" for a group that takes bytes away.
pub fn percent(share: f64) -> String {
    let pct = 100.0 * share;
    if pct > 0.0 && pct < 0.05 {
        "<0.1%".to_owned()
    } else {
        format!("{pct:.1}%")
    }
}

/// "block" or "blocks", as a count needs.
pub fn blocks_word(n: u64) -> &'static str {
    if n == 1 { "block" } else { "blocks" }
}

/// A count and its noun, singular for one: "1 event", "1,839 events".
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", group(n), noun(n, one, many))
}

/// The noun for a count: `one` for 1, `many` otherwise.
pub fn noun<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// Text from an input (a name, a file name, a setting) as markdown text, in a table cell
/// or a line: it can open no link, image, code span or HTML tag (`[`, `]`, `` ` `` and
/// `\` escaped with a backslash, `<`, `>`, `&` as HTML entities), end no cell (`|`),
/// start no line (a newline is a space), and carries no control or reordering character
/// (shown as `\uXXXX`, as on a terminal).
pub fn md_cell(s: &str) -> String {
    let s = md_plain(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '[' | ']' | '|' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            _ => out.push(c),
        }
    }
    out
}

/// Text from an input as a markdown code span, its backticks included: fenced with a run
/// of backticks longer than any in it (and spaced from one at either end), so no backtick
/// in a name can close it; `|` escaped for tables (GFM reads `\|` in a span as `|`).
pub fn md_code(s: &str) -> String {
    let s = md_plain(s).replace('|', "\\|");
    let longest_run = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// Input text on one markdown line: newlines as spaces, controls escaped.
fn md_plain(s: &str) -> String {
    super::terminal::escape_controls(&s.replace(['\n', '\r'], " ")).into_owned()
}

/// Longest op name in markdown tables; kernel names run to hundreds of characters.
const MARKDOWN_NAME_CHARS: usize = 80;

/// An op name cut to [`MARKDOWN_NAME_CHARS`].
pub fn short_name(name: &str) -> String {
    cut(name, MARKDOWN_NAME_CHARS)
}

/// `text` in at most `max_chars` characters: cut with an ellipsis at the end when longer.
pub fn cut(text: &str, max_chars: usize) -> String {
    if text.chars().count() > max_chars {
        text.chars()
            .take(max_chars.saturating_sub(1))
            .collect::<String>()
            + "…"
    } else {
        text.to_owned()
    }
}

/// `text` cut to at most `max_chars` characters from the front, an ellipsis first when
/// cut: for names whose end says most (a module path's innermost module).
pub fn cut_front(text: &str, max_chars: usize) -> String {
    let chars = text.chars().count();
    if chars > max_chars {
        let kept: String = text.chars().skip(chars + 1 - max_chars.max(1)).collect();
        format!("…{kept}")
    } else {
        text.to_owned()
    }
}

/// A device of `rec` as outputs name it (`cuda:0`), "?" for an index it does not have.
pub fn device_label(rec: &collector::Recording, device: collector::model::DeviceIdx) -> String {
    rec.devices
        .get(device as usize)
        .map_or_else(|| "?".to_owned(), |i| i.key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(plural(1, "event", "events"), "1 event");
        assert_eq!(plural(0, "event", "events"), "0 events");
        assert_eq!(plural(1839, "event", "events"), "1,839 events");
        assert_eq!(cut("model.py:12 forward", 19), "model.py:12 forward");
        assert_eq!(cut("model.py:12 forward", 10), "model.py:…");
        assert_eq!(
            cut_front("LM_0.Block_1.Linear_2", 21),
            "LM_0.Block_1.Linear_2"
        );
        assert_eq!(cut_front("LM_0.Block_1.Linear_2", 10), "….Linear_2");
    }

    #[test]
    fn markdown_from_input_opens_nothing() {
        let name = "a`![x](https://e/x.png)<img src=x onerror=alert(1)>|\u{1b}[31m\nb&c\\";
        assert_eq!(
            md_cell(name),
            "a\\`!\\[x\\](https://e/x.png)&lt;img src=x onerror=alert(1)&gt;\\|\\\\u001b\\[31m b&amp;c\\\\"
        );
        assert_eq!(md_code("aten::mm"), "`aten::mm`");
        assert_eq!(md_code("a`b``c"), "```a`b``c```");
        assert_eq!(md_code("`x"), "`` `x ``");
        assert_eq!(md_code("a|b\nc"), "`a\\|b c`");
    }
}
