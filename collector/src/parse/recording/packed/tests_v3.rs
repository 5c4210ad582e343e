//! Format versions: version-2 packs (JSON arrays) still read exactly; version 3 (text
//! columns) round-trips real traces and refuses damaged columns with clear errors.

use std::path::Path;

use super::tests::{
    assert_same, edited, fixtures, lines, packed_bytes, read_back, version_2_lines,
};
use crate::parse::{LoadOptions, load};

fn has_line(lines: &[Vec<u8>], prefix: &str) -> bool {
    lines.iter().any(|l| l.starts_with(prefix.as_bytes()))
}

#[test]
fn version_2_packs_still_read_exactly() {
    for (pack, original) in [
        ("oom.v2.vsr", "snapshot/oom.pickle"),
        ("k02_mlp_stack.v2.vsr", "torch-cpu/k02_mlp_stack.json.gz"),
    ] {
        let old = version_2_lines(pack);
        assert!(
            old[0].starts_with(b"{\"vramscope_recording\":2,"),
            "{pack}: a version-2 pack"
        );
        assert!(has_line(&old, "{\"mem\":"), "{pack}: JSON-array columns");
        assert!(!has_line(&old, "{\"mem_vlq\":"), "{pack}");
        let mut original = load(&fixtures().join(original), LoadOptions::default()).expect(pack);
        let read = load(&fixtures().join("pack").join(pack), LoadOptions::default());
        // Version-2 packs were written before allocator histories were packed: everything
        // else reads exactly.
        if let Some(state) = &mut original.allocator {
            state.history.clear();
        }
        assert_same(&original, &read.expect(pack), pack);
    }
}

#[test]
fn version_3_round_trips_real_traces_in_text_columns() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/real");
    for name in [
        "hta-sampled-2ranks/sampled_rank-0.json.gz",
        "tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
        "snapshot-cs336-magma27/memory_snapshot.pickle",
    ] {
        let original = load(&shared.join(name), LoadOptions::default()).expect(name);
        let bytes = packed_bytes(&original);
        let all = lines(&bytes);
        assert!(all[0].starts_with(b"{\"vramscope_recording\":3,"), "{name}");
        // Every event column is text: no JSON-array records left.
        assert!(!has_line(&all, "{\"mem\":") && !has_line(&all, "{\"ops\":"));
        assert_eq!(
            has_line(&all, "{\"mem_vlq\":"),
            !original.mem_events.is_empty(),
            "{name}"
        );
        assert_eq!(
            has_line(&all, "{\"ops_vlq\":"),
            !original.ops.is_empty(),
            "{name}"
        );
        let back = read_back("v3.vsr", &bytes, LoadOptions::default()).expect(name);
        assert_same(&original, &back, name);
    }
}

#[test]
fn damaged_text_columns_are_errors_naming_file_record_and_character() {
    use serde_json::json;
    let rec = load(
        &fixtures().join("torch-cpu/k02_mlp_stack.json.gz"),
        LoadOptions::default(),
    )
    .expect("fixture");
    assert!(!rec.mem_events.is_empty() && !rec.ops.is_empty());
    let all = lines(&packed_bytes(&rec));
    let at = |prefix: &str| -> usize {
        let i = all.iter().position(|l| l.starts_with(prefix.as_bytes()));
        all[..i.expect(prefix)].iter().map(Vec::len).sum()
    };
    let (mem, ops) = (at("{\"mem_vlq\""), at("{\"ops_vlq\""));
    let text = |v: &serde_json::Value| v.as_str().expect("a text column").to_owned();
    let cases = [
        (
            edited(&all, "{\"mem_vlq\"", |v| v["mem_vlq"]["t"] = json!("AB*")),
            mem,
            "column \"t\" of a packed record: '*' is not a digit at character 2",
        ),
        (
            edited(&all, "{\"mem_vlq\"", |v| {
                let n = v["mem_vlq"]["n"].as_u64().expect("n");
                v["mem_vlq"]["n"] = json!(n + 1);
            }),
            mem,
            "column \"t\" of a packed record: the text ends inside a number",
        ),
        (
            edited(&all, "{\"ops_vlq\"", |v| {
                let n = v["ops_vlq"]["n"].as_u64().expect("n");
                v["ops_vlq"]["n"] = json!(n - 1);
            }),
            ops,
            "column \"name\" of a packed record: more than the record's",
        ),
        (
            // Device 65536 does not fit a device index (u16).
            edited(&all, "{\"mem_vlq\"", |v| {
                let d = text(&v["mem_vlq"]["d"]);
                v["mem_vlq"]["d"] = json!(format!("gggC{}", &d[1..]));
            }),
            mem,
            "column \"d\" of a packed record: 65536 is too large for u16 at character 4",
        ),
        (
            edited(&all, "{\"mem_vlq\"", |v| {
                let k = text(&v["mem_vlq"]["k"]);
                v["mem_vlq"]["k"] = json!(format!("J{}", &k[1..]));
            }),
            mem,
            "unknown event kind 9",
        ),
        (
            edited(&all, "{\"ops_vlq\"", |v| {
                let th = text(&v["ops_vlq"]["th"]);
                v["ops_vlq"]["th"] = json!(format!("gggggggggggggggggggggggggggggB{}", &th[1..]));
            }),
            ops,
            "longer than 26 digits",
        ),
        (
            edited(&all, "{\"ops_vlq\"", |v| v["ops_vlq"]["name"] = json!(17)),
            ops,
            "bad packed record",
        ),
    ];
    for (bytes, offset, expected) in cases {
        let err = read_back("damaged.vsr", &bytes, LoadOptions::default()).expect_err(expected);
        assert!(err.contains(expected), "{expected}: {err}");
        assert!(err.contains("damaged.vsr"), "names the file: {err}");
        assert!(
            err.contains(&format!("at byte {offset}")),
            "{offset}: {err}"
        );
    }
}
