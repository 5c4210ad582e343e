//! The page's pieces: the data's escaping, the template's parts, and the page of a sample
//! read back.

use std::path::Path;

use collector::parse::{LoadOptions, load};

use super::*;
use crate::output::report::{analyse, analysed};

fn sample_page(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name);
    let rec = load(&path, LoadOptions::default()).expect("the sample loads");
    let inputs = vec![(name.to_owned(), rec)];
    let built = analyse(&inputs);
    let analysed = analysed(&inputs, &built);
    let derived: Vec<_> = analysed.iter().map(derive).collect();
    page(&analysed, &derived, None).expect("the page")
}

fn data(html: &str) -> serde_json::Value {
    let open = r#"<script type="application/json" id="data">"#;
    let start = html.find(open).expect("data") + open.len();
    let len = html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..start + len]).expect("JSON")
}

#[test]
fn script_json_leaves_nothing_that_ends_the_element_and_reads_back_the_same() {
    let hostile = "</script><!--<script>\u{2028}\u{2029}&amp;\"'\\";
    let json = serde_json::to_string(&[hostile]).expect("json");
    let safe = script_json(&json);
    for raw in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
        assert!(!safe.contains(raw), "{raw:?} in {safe}");
    }
    let back: Vec<String> = serde_json::from_str(&safe).expect("still JSON");
    assert_eq!(back, vec![hostile.to_owned()]);
}

#[test]
fn the_template_holds_one_of_each_part_and_its_code_cannot_close_them() {
    for part in ["{{CSP}}", "/*{{STYLE}}*/", "{{SCRIPT}}", "{{DATA}}"] {
        assert_eq!(TEMPLATE.matches(part).count(), 1, "{part}");
    }
    for (name, code) in [("style", STYLE), ("script", SCRIPT)] {
        let lower = code.to_lowercase();
        assert!(
            !lower.contains("</script") && !lower.contains("</style"),
            "{name}"
        );
        assert!(!code.contains("{{"), "{name} holds a placeholder");
        assert!(
            !code.contains("http://") && !code.contains("https://"),
            "{name}"
        );
    }
    // Text goes in as text: no sink that parses markup.
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(!SCRIPT.contains(sink), "{sink}");
    }
}

#[test]
fn a_sample_s_page_has_its_summary_and_a_composition_summing_to_the_peak() {
    let html = sample_page("transformer-lm-train-cpu.json.gz");
    assert_eq!(html.matches(CSP).count(), 1);
    let d = data(&html);
    let input = &d["inputs"][0];
    let peak = input["summary"]["devices"][0]["peak_allocated_bytes"]
        .as_i64()
        .expect("peak");
    let c = &input["devices"][0]["compositions"];
    let at_peak = &c["instants"][c["peak"].as_u64().expect("the peak instant") as usize];
    for by in ["by_op", "by_category"] {
        let sum: i64 = at_peak[by]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| g[1].as_i64().expect("bytes"))
            .sum();
        assert_eq!(sum, peak, "{by} at the peak");
    }
    // The same inputs give the same bytes.
    assert_eq!(html, sample_page("transformer-lm-train-cpu.json.gz"));
}
