//! What a pack stores beside its events (the per-op table, the summary) is what `table`
//! and `summary` print of it, alone or in a fleet, and only when this build wrote it.

use std::path::{Path, PathBuf};

use collector::parse::recording::packed::{SUMMARY_REVISION, TABLE_REVISION};
use collector::units::bytes_iec;
use serde_json::Value;

use crate::pack::{pack, summary_facts};
use crate::support::*;

/// A fresh directory named after `name`, the small CPU trace the stored-result tests edit,
/// and its pack in that directory.
fn packed_sample(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let input = fixtures().join("torch-cpu/k02_mlp_stack.json.gz");
    let out = dir.join("p.vsr");
    pack(&input, &out, &[]);
    (dir, input, out)
}

/// A copy of the pack at `pack` (in `dir`) whose stored `kind` record (`table`, `summary`)
/// is changed by `edit` and says it is of `revision`, gzipped again.
fn edited_pack(
    pack: &Path,
    dir: &Path,
    kind: &str,
    revision: u64,
    edit: impl FnOnce(&mut Value),
) -> PathBuf {
    use std::io::Write;
    let text = String::from_utf8(read_maybe_gz(pack)).expect("a pack is text");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let prefix = format!("{{\"{kind}\":");
    let at = lines.iter().position(|l| l.starts_with(&prefix));
    let line = &mut lines[at.unwrap_or_else(|| panic!("a stored {kind}"))];
    let mut record: Value = serde_json::from_str(line).expect("JSON");
    edit(&mut record[kind]);
    record[kind]["revision"] = revision.into();
    *line = record.to_string();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all((lines.join("\n") + "\n").as_bytes())
        .expect("gzip");
    let edited = dir.join(format!("edited-{kind}-{revision}.vsr"));
    std::fs::write(&edited, gz.finish().expect("gzip")).expect("write");
    edited
}

/// `summary` of several packs (a fleet) reads each one's stored summary and facts: an
/// edited summary shows, and unedited packs say what their originals say, ranks included.
#[test]
fn a_fleet_of_packs_reads_their_stored_summaries() {
    let dir = temp_dir("pack-fleet");
    let originals = [
        fixtures().join("torch-cpu/k02_mlp_stack.json.gz"),
        shared_traces().join("real/hta-df-index-resolver-rank1/df_index_resolver.json.gz"),
    ];
    let packs: Vec<PathBuf> = (originals.iter().enumerate())
        .map(|(i, input)| {
            let out = dir.join(format!("p{i}.vsr"));
            pack(input, &out, &[]);
            out
        })
        .collect();
    let fleet = |paths: &[&Path]| {
        let mut args = vec!["summary"];
        args.extend(paths.iter().map(|p| p.to_str().expect("path")));
        let mut v = vramscope_json(&args);
        for input in v["inputs"].as_array_mut().expect("inputs") {
            let o = input.as_object_mut().expect("input");
            o.remove("path");
            o.remove("packed");
        }
        v["worst"].as_object_mut().expect("worst").remove("path");
        v
    };
    let of_packs = fleet(&[&packs[0], &packs[1]]);
    assert_eq!(of_packs, fleet(&[&originals[0], &originals[1]]));
    // Sorted by rank: the trace that names its rank (1) first.
    assert_eq!(of_packs["inputs"][0]["rank"], 1, "{of_packs}");
    let edited = edited_pack(
        &packs[0],
        &dir,
        "summary",
        SUMMARY_REVISION.into(),
        |record| {
            record["summary"]["devices"][0]["peak_allocated_bytes"] = 424242.into();
        },
    );
    let with_edited = fleet(&[&edited, &packs[1]]);
    let peak = &with_edited["inputs"][1]["devices"][0]["peak_allocated_bytes"];
    assert_eq!(*peak, 424242, "{with_edited}");
}

/// `table` of a whole pack prints the table the pack stores (an edited one shows), and
/// with a window computes from the events; a pack whose stored table is of another
/// revision is computed too.
#[test]
fn table_of_a_pack_prints_its_stored_table_unless_a_window_is_asked() {
    let (dir, input, out) = packed_sample("pack-stored-table");
    let original = vramscope_json(&["table", input.to_str().expect("p"), "--sort", "none"]);
    let calls = original[0]["calls"].as_u64().expect("calls");
    let edit = |revision: u64| {
        edited_pack(&out, &dir, "table", revision, |record| {
            assert_eq!(record["rows"][0][1], calls, "row 0 is the first row");
            record["rows"][0][1] = 424242.into();
        })
    };
    let table = |path: &Path, extra: &[&str]| {
        let mut args = vec!["table", path.to_str().expect("p"), "--sort", "none"];
        args.extend(extra);
        vramscope_json(&args)
    };
    let edited = edit(TABLE_REVISION.into());
    assert_eq!(table(&edited, &[])[0]["calls"], 424242, "the stored rows");
    assert_eq!(table(&edited, &["--from-us", "0"])[0]["calls"], calls);
    assert_eq!(
        table(&edit(u64::from(TABLE_REVISION) + 1), &[]),
        original,
        "another revision: computed"
    );
    assert_eq!(table(&out, &[]), original);
}

/// `summary` of a whole pack prints the summary the pack stores (an edited one shows, text
/// and JSON alike); a pack whose stored summary is of another revision is computed.
#[test]
fn summary_of_a_pack_prints_its_stored_summary() {
    let (dir, input, out) = packed_sample("pack-stored-summary");
    let original = summary_facts(&input);
    let peak = original["devices"][0]["peak_allocated_bytes"].clone();
    assert!(peak.as_i64().is_some_and(|p| p > 0), "{original}");
    let edit = |revision: u64| {
        edited_pack(&out, &dir, "summary", revision, |record| {
            let device = &mut record["summary"]["devices"][0];
            assert_eq!(
                device["peak_allocated_bytes"], peak,
                "device 0 is the first"
            );
            device["peak_allocated_bytes"] = 424242.into();
        })
    };
    let edited = edit(SUMMARY_REVISION.into());
    assert_eq!(
        summary_facts(&edited)["devices"][0]["peak_allocated_bytes"],
        424242,
        "the stored summary"
    );
    let text = vramscope_ok(&["summary", edited.to_str().expect("p")]);
    assert!(text.contains(&bytes_iec(424242)), "{text}");
    assert_eq!(
        summary_facts(&edit(u64::from(SUMMARY_REVISION) + 1)),
        original,
        "another revision: computed"
    );
    assert_eq!(summary_facts(&out), original);
}
