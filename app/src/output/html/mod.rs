//! The report as one self-contained, interactive HTML page (`report.html`): for the person
//! who receives a bug report and has no Rust toolchain. Every number is the collector's,
//! worded as the CLI words it; the page only draws. One file, no network: the script,
//! styles and data are inline, and a Content-Security-Policy ([`CSP`]) forbids every
//! request, so it opens from disk in any browser and cannot call out.
//!
//! The data is one JSON document inside `<script type="application/json">`, with `<`,
//! `>`, `&` and U+2028/2029 escaped ([`script_json`]) so no input string can end the
//! element; the page's script puts every string of it into the DOM as text
//! (`textContent`), never as markup. The drawing is written directly on canvas (see
//! docs/HTML_REPORT.md for why, and the sizes).

mod bands;
mod categories;
mod compose;
mod device;
mod levels;
mod segments;
mod strings;
mod tables;
#[cfg(test)]
mod tests;

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use self::device::DeviceDoc;
use self::strings::Strings;
use self::tables::{AdviceDoc, OpsTable};
use super::file::{self, FileError, Policy};
use super::json_docs::SummaryDoc;
pub use super::report::Analysed as Input;
use super::report::{Derived, derive};
use crate::palette::{self, Rgb};
use collector::analysis::categories::Category;

/// The page's Content-Security-Policy: nothing may be fetched (no `connect-src`, `img-src`
/// beyond `data:`, fonts, frames or forms); only the inline script and styles run.
pub const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
                       style-src 'unsafe-inline'; img-src data:; base-uri 'none'; \
                       form-action 'none'";

const TEMPLATE: &str = include_str!("page.html");
const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Steps drawn on the timelines (~25 bytes of JSON each): a run with more has every k-th
/// drawn (a 46,700-step snapshot's steps would be 1.3 MB, and narrower than a pixel).
pub const MAX_STEPS: usize = 2_048;

/// The temporaries' tag while `--html FILE` is written.
const TEMP_TAG: &str = "html";

/// The ranks of several inputs, as `summary` words them.
#[derive(Debug, Serialize)]
pub struct RankTable {
    /// "4 inputs".
    pub count: String,
    /// Column headings.
    pub headings: Vec<String>,
    /// Whether each column is right-aligned (a number).
    pub right: Vec<bool>,
    /// The rows.
    pub rows: Vec<Vec<String>>,
    /// What they say together: (label, text).
    pub findings: Vec<(String, String)>,
}

#[derive(Serialize)]
struct Document<'a> {
    generator: String,
    strings: Strings,
    /// Category names and colours, in `Category::index` order.
    categories: Vec<(&'static str, String)>,
    colours: Colours,
    ranks: Option<&'a RankTable>,
    inputs: Vec<InputDoc<'a>>,
}

#[derive(Serialize)]
struct Colours {
    allocated: String,
    reserved: String,
    nvml: String,
    peak: String,
}

#[derive(Serialize)]
struct InputDoc<'a> {
    name: u32,
    summary: SummaryDoc<'a>,
    facts: Vec<(u32, u32)>,
    warnings: Vec<u32>,
    /// Steps: number, start and end, ns since the input's start; every k-th of a run with
    /// more than [`MAX_STEPS`].
    steps: Vec<(i64, i64, i64)>,
    devices: Vec<DeviceDoc>,
    ops: Vec<OpsTable>,
    advice: Vec<AdviceDoc>,
    ooms: Vec<(u32, Vec<u32>)>,
}

fn hex((r, g, b): Rgb) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The page for `inputs` (with the ranks table of several), each beside what report.md
/// shows of it too ([`Derived`], one per input).
pub fn page(
    inputs: &[Input<'_>],
    derived: &[Derived],
    ranks: Option<&RankTable>,
) -> Result<String> {
    let mut s = Strings::default();
    let inputs = (inputs.iter().zip(derived))
        .map(|(i, d)| input_doc(i, d, &mut s))
        .collect();
    let doc = Document {
        generator: format!("vramscope {}", env!("CARGO_PKG_VERSION")),
        strings: s,
        categories: Category::ALL
            .iter()
            .map(|c| (c.as_str(), hex(palette::CATEGORIES_LIGHT[c.index()])))
            .collect(),
        colours: Colours {
            allocated: hex(palette::light::ALLOCATED),
            reserved: hex(palette::light::RESERVED),
            nvml: hex(palette::light::NVML_USED),
            peak: hex(palette::light::PEAK),
        },
        ranks,
        inputs,
    };
    let data = script_json(&serde_json::to_string(&doc)?);
    Ok(TEMPLATE
        .replacen("{{CSP}}", CSP, 1)
        .replacen("/*{{STYLE}}*/", STYLE, 1)
        .replacen("{{SCRIPT}}", SCRIPT, 1)
        .replacen("{{DATA}}", &data, 1))
}

fn input_doc<'a>(input: &Input<'a>, derived: &Derived, s: &mut Strings) -> InputDoc<'a> {
    let (facts, warnings) = tables::facts(input, s);
    let origin = input.summary.start_ns;
    InputDoc {
        name: s.id(input.name),
        summary: SummaryDoc::new(input.name.to_owned(), input.summary),
        facts,
        warnings,
        steps: input
            .rec
            .steps
            .iter()
            .step_by(input.rec.steps.len().div_ceil(MAX_STEPS).max(1))
            .map(|st| (st.number, st.start_ns - origin, st.end_ns - origin))
            .collect(),
        devices: input
            .summary
            .devices
            .iter()
            .enumerate()
            .map(|(i, ds)| device::device(input, i, ds, s))
            .collect(),
        ops: tables::ops_tables(input, derived, s),
        advice: tables::advice(input, &derived.advice, s),
        ooms: tables::ooms(input, s),
    }
}

/// JSON made safe inside `<script type="application/json">`: `<`, `>` and `&` (which
/// JSON has only inside strings) as `\u003c`, `\u003e`, `\u0026`, so no string can close
/// the element or open a comment; U+2028 and U+2029 escaped too, for any reader that
/// takes the text as script. `JSON.parse` reads the same values back.
pub fn script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Write the page for `inputs` to `dest` under `policy` (`report --html FILE`); returns
/// its size.
pub fn write_page(
    dest: &Path,
    policy: &Policy<'_>,
    inputs: &[Input<'_>],
    ranks: Option<&RankTable>,
) -> Result<u64, FileError> {
    // Refused before the analyses run, not after.
    file::check(dest, policy)?;
    let derived: Vec<Derived> = inputs.iter().map(derive).collect();
    let html = page(inputs, &derived, ranks).map_err(|source| FileError::Write {
        dest: dest.to_owned(),
        source,
    })?;
    file::write_bytes(dest, policy, TEMP_TAG, html.as_bytes())
}
