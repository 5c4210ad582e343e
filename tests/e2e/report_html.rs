//! `report.html` as its reader gets it: one self-contained file (no request can leave it:
//! no URL, a Content-Security-Policy forbidding them), holding the same summary as
//! `summary --format json`, written through the one file policy, and the names of a
//! hostile trace inside it only as escaped text. tests/html/check.py opens the pages in
//! a real Chromium.

use std::path::Path;

use crate::support::*;

/// The page's data: the JSON inside `<script type="application/json" id="data">`.
fn page_data(html: &str) -> serde_json::Value {
    let open = r#"<script type="application/json" id="data">"#;
    let start = html.find(open).expect("the data element") + open.len();
    let len = html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..start + len]).expect("the data is JSON")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// What makes a page fetch something: a URL, or a protocol-relative `src`/`href`.
fn requests(html: &str) -> Vec<&'static str> {
    [
        "http://",
        "https://",
        "src=\"//",
        "href=\"//",
        "src='//",
        "href='//",
        "url(",
        "@import",
    ]
    .into_iter()
    .filter(|n| html.contains(n))
    .collect()
}

#[test]
fn the_page_is_self_contained_and_says_what_summary_says() {
    for sample in [
        "cs336-transformer-snapshot.pickle",
        "transformer-lm-train-cpu.json.gz",
    ] {
        let input = repo_root().join("samples").join(sample);
        let dir = temp_dir(&format!("html-{sample}"));
        let page = dir.join("page.html");
        let said = vramscope_ok(&["report", s(&input), "--html", s(&page)]);
        let bytes = std::fs::metadata(&page).expect("page written").len();
        assert!(
            said.contains("page.html (") && said.contains("KiB)"),
            "{said}"
        );
        assert!(bytes < 3 << 20, "{sample}: {bytes} bytes, over 3 MB");
        let html = std::fs::read_to_string(&page).expect("utf-8 page");
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(
            html.contains(
                r#"<meta http-equiv="Content-Security-Policy" content="default-src 'none';"#
            ),
            "{sample}: no CSP"
        );
        assert_eq!(requests(&html), Vec::<&str>::new(), "{sample}");
        let data = page_data(&html);
        let mut summary = vramscope_json(&["summary", s(&input)]);
        let mut in_page = data["inputs"][0]["summary"].clone();
        // The page names the file alone; summary as it was given.
        summary["file"] = serde_json::Value::Null;
        in_page["file"] = serde_json::Value::Null;
        assert_eq!(in_page, summary, "{sample}: the page's summary");
        // Each number the page shows beside a device is the summary's at its path.
        let mut shown = 0;
        for d in data["inputs"][0]["devices"].as_array().expect("devices") {
            for row in d["facts"].as_array().expect("facts") {
                let Some(path) = row["path"].as_str() else {
                    continue;
                };
                let pointer = format!("/{}", path.replace('.', "/"));
                assert_eq!(
                    summary.pointer(&pointer),
                    Some(&row["value"]),
                    "{sample} {path}"
                );
                shown += 1;
            }
        }
        assert!(shown >= 3, "{sample}: {shown} numbers");
    }
}

#[test]
fn report_dir_holds_the_page_and_the_policy_keeps_what_exists() {
    let input = repo_root().join("samples/transformer-lm-train-cpu.json.gz");
    let dir = temp_dir("html-policy");
    let out = dir.join("report");
    let said = vramscope_ok(&["report", s(&input), "-o", s(&out)]);
    assert!(said.contains("report.html ("), "{said}");
    let in_dir = std::fs::read(out.join("report.html")).expect("report.html in the directory");
    let page = dir.join("alone.html");
    vramscope_ok(&["report", s(&input), "--html", s(&page)]);
    assert_eq!(
        std::fs::read(&page).ok(),
        Some(in_dir),
        "the same page, deterministic"
    );
    // An existing page is kept without --force, replaced with it; never the input.
    let refused = vramscope(&["report", s(&input), "--html", s(&page)]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--force"));
    vramscope_ok(&["report", s(&input), "--html", s(&page), "--force"]);
    let copy = dir.join("input.json.gz");
    std::fs::copy(&input, &copy).expect("copy");
    let onto_input = vramscope(&["report", s(&copy), "--html", s(&copy), "--force"]);
    assert!(!onto_input.status.success(), "the input overwritten");
    // Neither -o nor --html: a usage error.
    assert_eq!(vramscope(&["report", s(&input)]).status.code(), Some(2));
}

#[test]
fn hostile_names_reach_the_page_only_as_escaped_text() {
    let input = fixtures().join("html/hostile-names.json");
    let dir = temp_dir("html-hostile");
    let page = dir.join("hostile.html");
    vramscope_ok(&["report", s(&input), "--html", s(&page)]);
    let html = std::fs::read_to_string(&page).expect("page");
    // Two elements end a script: the data and the code; no name opened another.
    assert_eq!(html.matches("</script").count(), 2);
    assert_eq!(html.matches("<script").count(), 2);
    for raw in ["<img", "<b>", "<!--\"", "\u{2028}", "\u{2029}", "pwned'</"] {
        assert!(!html.contains(raw), "{raw:?} unescaped in the page");
    }
    // The names are all there, exactly, once the data is read back as JSON.
    let data = page_data(&html);
    let strings: Vec<&str> = data["strings"]
        .as_array()
        .expect("strings")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for name in [
        "aten::mm</script><script>document.title='pwned'</script>",
        "<img src=x onerror=\"document.title='pwned'\">",
        "\u{202e}gnp.exe\u{2066} aten::cat\u{2028}line\u{2029}para",
    ] {
        assert!(
            strings.contains(&name),
            "{name:?} not in the page's strings"
        );
    }
    // The page's code puts text in with textContent, never as markup.
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(!html.contains(sink), "{sink} in the page");
    }
}

#[test]
fn redact_paths_reaches_the_page() {
    let input = fixtures().join("html/hostile-names.json");
    let dir = temp_dir("html-redact");
    let (plain, redacted) = (dir.join("plain.html"), dir.join("redacted.html"));
    vramscope_ok(&["report", s(&input), "--html", s(&plain)]);
    vramscope_ok(&[
        "report",
        s(&input),
        "--html",
        s(&redacted),
        "--redact-paths",
    ]);
    let read = |p: &Path| std::fs::read_to_string(p).expect("page");
    assert!(read(&plain).contains("/home/alice/secret-project"));
    let r = read(&redacted);
    assert!(!r.contains("/home/alice") && r.contains("train.py(42): step"));
}

#[test]
fn help_and_completions_offer_the_page() {
    let help = vramscope_ok(&["report", "--help"]);
    for word in ["--html <FILE>", "--redact-paths", "report.html"] {
        assert!(help.contains(word), "{word} in {help}");
    }
    let bash = vramscope_ok(&["completions", "bash"]);
    assert!(bash.contains("--html") && bash.contains("--redact-paths"));
}
