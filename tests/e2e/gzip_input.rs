//! gzip inputs on hostile ground (issue 17): every member's CRC-32 and length checked, even
//! at the end of a multi-MB member; members read one after another; bytes after the last
//! member or after the JSON document reported with their offset; a decompression bomb
//! stopped at a limit the user can raise. Errors name the file, what is wrong, where, and
//! the next step.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::bad_input::expect_failure;
use crate::support::*;

fn gzip(content: &[u8]) -> Vec<u8> {
    gzip_at(content, Compression::fast())
}

fn gzip_at(content: &[u8], level: Compression) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), level);
    enc.write_all(content).expect("gzip");
    enc.finish().expect("gzip")
}

/// The Qwen trace's content (8.6 MB of JSON, 6,000+ memory events): one gzip member of
/// many MB when compressed again.
fn qwen() -> Vec<u8> {
    read_maybe_gz(
        &shared_traces()
            .join("real/tracelens-h100-qwen-0.5b/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    path
}

fn summary_json(path: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["summary", path.to_str().expect("path")];
    args.extend_from_slice(extra);
    vramscope_json(&args)
}

/// The one warning whose text contains `needle`: its text and count.
fn warning(summary: &serde_json::Value, needle: &str) -> (String, u64) {
    let warnings = summary["warnings"].as_object().expect("warnings");
    let found: Vec<_> = warnings
        .iter()
        .filter(|(k, _)| k.contains(needle))
        .collect();
    assert_eq!(found.len(), 1, "{needle:?} in {warnings:?}");
    let (text, count) = found[0];
    (text.clone(), count.as_u64().expect("count"))
}

#[test]
fn a_bad_crc_or_length_at_the_end_of_a_multi_mb_member_fails_or_is_salvaged() {
    let content = qwen();
    assert!(content.len() > 8 << 20, "{}", content.len());
    let good = gzip(&content);
    let dir = temp_dir("gzip-trailer");
    let full = summary_json(&write(&dir, "good.json.gz", &good), &[]);
    let trailer_at = good.len() - 8;
    for (name, byte, needle) in [
        ("crc.json.gz", trailer_at, "fails its CRC-32 check"),
        ("isize.json.gz", good.len() - 2, "fails its length check"),
    ] {
        let mut bad = good.clone();
        bad[byte] ^= 0x40;
        let path = write(&dir, name, &bad);
        let p = path.to_str().expect("path");
        let at = format!(
            "compressed byte {trailer_at}, after {} decompressed",
            content.len()
        );
        let stderr = expect_failure(&["summary", p], 1, &[name, needle, &at, "--salvage"]);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        expect_failure(&["table", p], 1, &[name, needle]);
        // Salvage keeps every event, and the summary says the file is damaged.
        let kept = summary_json(&path, &["--salvage"]);
        assert_eq!(kept["events"], full["events"]);
        assert_eq!(kept["devices"], full["devices"]);
        let (text, count) = warning(&kept, needle);
        assert_eq!(count, content.len() as u64, "{text}");
    }
}

#[test]
fn members_are_concatenated_and_trailing_bytes_are_reported() {
    let content = qwen();
    let dir = temp_dir("gzip-members");
    let full = summary_json(&write(&dir, "one.json.gz", &gzip(&content)), &[]);
    // Cut anywhere, even inside a number: the members' contents are one document.
    let cuts = [
        0,
        1,
        777_777,
        content.len() / 2,
        content.len() - 1,
        content.len(),
    ];
    let members: Vec<u8> = cuts
        .windows(2)
        .flat_map(|w| gzip(&content[w[0]..w[1]]))
        .collect();
    let multi = summary_json(&write(&dir, "multi.json.gz", &members), &[]);
    assert_eq!(multi["events"], full["events"]);
    assert_eq!(multi["devices"], full["devices"]);
    assert!(
        multi["warnings"].as_object().expect("w").is_empty(),
        "{multi}"
    );

    let tail = b"\0\0\0\0garbage after the last member\n";
    let trailing = [members.clone(), tail.to_vec()].concat();
    let read = summary_json(&write(&dir, "trailing.json.gz", &trailing), &[]);
    assert_eq!(read["events"], full["events"]);
    let (text, count) = warning(&read, "after the last gzip member");
    assert_eq!(count, tail.len() as u64);
    let offset = collector::units::group_thousands(members.len() as u64);
    assert!(
        text.contains(&format!("at compressed byte {offset}")),
        "{text}"
    );

    // The second member's trailer is checked as well as the first's.
    let mut bad = members;
    let n = bad.len();
    bad[n - 8] ^= 1;
    let path = write(&dir, "bad-last.json.gz", &bad);
    expect_failure(
        &["summary", path.to_str().expect("p")],
        1,
        &["gzip member 5 fails its CRC-32 check"],
    );
}

#[test]
fn bytes_after_the_json_document_are_a_warning_and_a_second_document_an_error() {
    let content = qwen();
    let dir = temp_dir("json-trailing");
    let full = summary_json(&write(&dir, "one.json", &content), &[]);
    let end = content.len() as u64;

    let garbage = [content.clone(), b"\n\n% the end\n".to_vec()].concat();
    for (name, bytes) in [
        ("garbage.json", garbage.clone()),
        ("garbage.json.gz", gzip(&garbage)),
    ] {
        let read = summary_json(&write(&dir, name, &bytes), &[]);
        assert_eq!(read["events"], full["events"]);
        let (text, count) = warning(&read, "after the end of the JSON document");
        assert_eq!(count, garbage.len() as u64 - end, "{text}");
        let at = collector::units::group_thousands(end);
        assert!(text.contains(&format!("at byte {at}")), "{text}");
    }

    let twice = [content.clone(), b"\n".to_vec(), content.clone()].concat();
    let path = write(&dir, "twice.json", &twice);
    let p = path.to_str().expect("path");
    let second = format!("second JSON document starts at byte {}", end + 1);
    let trace_end = format!("end at byte {end}");
    expect_failure(
        &["summary", p],
        1,
        &["twice.json", &second, &trace_end, "--salvage"],
    );
    let first = summary_json(&path, &["--salvage"]);
    assert_eq!(first["events"], full["events"]);
    let (_, count) = warning(&first, "after the end of the JSON document");
    assert_eq!(count, twice.len() as u64 - end);
}

#[test]
fn a_decompression_bomb_stops_at_the_limit() {
    // 200 MiB of whitespace inside a real trace: about 200 KiB of gzip, 1000× its size.
    let content = read_maybe_gz(&shared_traces().join("torch-cpu/t2.json.gz"));
    let open = content.iter().position(|&b| b == b'{').expect("object") + 1;
    let padding = vec![b' '; 200 << 20];
    let bomb = gzip_at(
        &[&content[..open], &padding[..], &content[open..]].concat(),
        Compression::best(),
    );
    assert!(bomb.len() < 300 << 10, "{}", bomb.len());
    let dir = temp_dir("gzip-bomb");
    let path = write(&dir, "bomb.json.gz", &bomb);
    let p = path.to_str().expect("path");
    // The default limit: 200× the file, but at least 64 MiB.
    let stderr = expect_failure(
        &["summary", p],
        1,
        &[
            "bomb.json.gz",
            "larger than the limit of 64.00 MiB",
            "--max-decompressed-size",
        ],
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    expect_failure(&["summary", p, "--salvage"], 1, &["limit of 64.00 MiB"]);
    expect_failure(
        &["table", p, "--max-decompressed-size", "100MiB"],
        1,
        &["limit of 100.00 MiB (104857600 bytes)"],
    );
    let t2 = summary_json(&shared_traces().join("torch-cpu/t2.json.gz"), &[]);
    for limit in ["unlimited", "250MiB"] {
        let read = summary_json(&path, &["--max-decompressed-size", limit]);
        assert_eq!(read["events"], t2["events"], "{limit}");
    }
    expect_failure(
        &["summary", p, "--max-decompressed-size", "lots"],
        2,
        &["invalid size 'lots'", "unlimited"],
    );
}
