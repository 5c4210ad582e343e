use super::*;
use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};
use std::io::Write;

fn gzip(content: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(content).expect("gzip");
    enc.finish().expect("gzip")
}

/// Text that compresses like a trace (~10×), `n` bytes of it.
fn trace_like(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 100);
    let mut i = 0u64;
    while out.len() < n {
        let x = i.wrapping_mul(2_654_435_761) % 1_000_003;
        out.extend_from_slice(
            format!("{{\"ph\": \"X\", \"ts\": {i}, \"dur\": {x}}},\n").as_bytes(),
        );
        i += 1;
    }
    out.truncate(n);
    out
}

/// Read all of `file` as the loader would, in chunks of `chunk` bytes.
fn read_all(file: &[u8], limit: Option<u64>, salvage: bool) -> (io::Result<Vec<u8>>, GzipReport) {
    let mut members = Members::new(file, limit, salvage);
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 256 << 10];
    let result = loop {
        match members.read(&mut chunk) {
            Ok(0) => break Ok(out),
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) => break Err(e),
        }
    };
    (result, members.report().clone())
}

#[test]
fn members_are_read_one_after_another_and_checked() {
    let (a, b) = (trace_like(300_000), trace_like(5_000));
    let file = [gzip(&a), gzip(&b), gzip(b"")].concat();
    let (content, report) = read_all(&file, None, false);
    assert_eq!(content.expect("reads"), [a.clone(), b.clone()].concat());
    assert_eq!(report.members, 3);
    assert_eq!(report.content_bytes, (a.len() + b.len()) as u64);
    assert_eq!((report.trailing, report.damage), (None, None));
}

#[test]
fn header_fields_are_skipped() {
    let mut enc = GzBuilder::new()
        .filename("trace.json")
        .comment("a comment")
        .extra(vec![1, 2, 3, 4])
        .write(Vec::new(), Compression::fast());
    enc.write_all(b"{\"traceEvents\": []}").expect("gzip");
    let file = enc.finish().expect("gzip");
    let (content, _) = read_all(&file, None, false);
    assert_eq!(content.expect("reads"), b"{\"traceEvents\": []}");
    // The header CRC flag: two more bytes after the fixed fields (RFC 1952 §2.3.1).
    let mut file = gzip(b"{\"traceEvents\": []}");
    file[3] = header::FHCRC;
    file.splice(10..10, [0xaa, 0xbb]);
    let (content, _) = read_all(&file, None, false);
    assert_eq!(content.expect("reads with FHCRC"), b"{\"traceEvents\": []}");
}

#[test]
fn a_bad_crc_or_length_at_the_end_of_a_large_member_is_found() {
    let content = trace_like(8 << 20);
    let good = gzip(&content);
    let trailer_at = (good.len() - 8) as u64;
    let mut bad_crc = good.clone();
    bad_crc[good.len() - 8] ^= 0xff;
    let (read, report) = read_all(&bad_crc, None, false);
    let err = read.expect_err("CRC");
    let damage = GzipDamage::from_io(&err).expect("carries the damage");
    assert!(
        matches!(damage.problem, GzipProblem::Checksum { .. }),
        "{damage}"
    );
    assert_eq!(damage.compressed_offset, trailer_at);
    assert_eq!(damage.content_bytes, content.len() as u64);
    assert_eq!(damage.member, 1);
    assert_eq!(report.damage, Some(damage));

    let mut bad_len = good.clone();
    *bad_len.last_mut().expect("byte") ^= 0x01;
    let (read, _) = read_all(&bad_len, None, false);
    let damage = GzipDamage::from_io(&read.expect_err("ISIZE")).expect("damage");
    let recorded = (content.len() as u32) ^ (1 << 24);
    assert_eq!(
        damage.problem,
        GzipProblem::Length {
            recorded,
            computed: content.len() as u32
        }
    );

    // With salvage the content is all there and the report says what was wrong.
    let (read, report) = read_all(&bad_crc, None, true);
    assert_eq!(read.expect("salvaged").len(), content.len());
    assert!(matches!(
        report.damage.map(|d| d.problem),
        Some(GzipProblem::Checksum { .. })
    ));
}

#[test]
fn the_second_member_is_checked_too() {
    let (a, b) = (trace_like(1 << 20), trace_like(1 << 20));
    let first = gzip(&a);
    let mut second = gzip(&b);
    let n = second.len();
    second[n - 5] ^= 0x10;
    let file = [first.clone(), second].concat();
    let (read, report) = read_all(&file, None, false);
    let damage = GzipDamage::from_io(&read.expect_err("ISIZE")).expect("damage");
    assert_eq!(damage.member, 2);
    assert_eq!(damage.compressed_offset, (file.len() - 8) as u64);
    assert_eq!(report.members, 1);
}

#[test]
fn trailing_bytes_are_counted_not_read() {
    let content = trace_like(100_000);
    let member = gzip(&content);
    for tail in [&b"garbage\n"[..], &[0u8; 1000][..], &[0x1f][..]] {
        let file = [member.clone(), tail.to_vec()].concat();
        let (read, report) = read_all(&file, None, false);
        assert_eq!(read.expect("reads"), content);
        let trailing = report.trailing.expect("trailing");
        assert_eq!(trailing.compressed_offset, member.len() as u64);
        assert_eq!(trailing.bytes, tail.len() as u64);
    }
}

#[test]
fn a_cut_member_is_truncated_and_corrupt_data_is_corrupt() {
    let content = trace_like(2 << 20);
    let member = gzip(&content);
    for cut in [5, 20, member.len() / 2, member.len() - 3] {
        let (read, _) = read_all(&member[..cut], None, false);
        let damage = GzipDamage::from_io(&read.expect_err("cut")).expect("damage");
        assert_eq!(damage.problem, GzipProblem::Truncated, "cut at {cut}");
        assert!(damage.compressed_offset <= cut as u64, "{damage}");
        // With salvage the content read before the cut is kept.
        let (read, report) = read_all(&member[..cut], None, true);
        let kept = read.expect("salvaged");
        assert_eq!(kept[..], content[..kept.len()]);
        assert_eq!(report.content_bytes, kept.len() as u64);
        // A cut in the trailer loses no content, only the check.
        let in_trailer = cut > member.len() - 8;
        assert_eq!(kept.len() == content.len(), in_trailer, "cut at {cut}");
    }
    let mut bad_method = member.clone();
    bad_method[2] = 7;
    let (read, _) = read_all(&bad_method, None, false);
    let damage = GzipDamage::from_io(&read.expect_err("method")).expect("damage");
    assert!(matches!(damage.problem, GzipProblem::Header(_)), "{damage}");
    // Stored blocks with a bad length check: deflate itself says it is corrupt.
    let stored = {
        let mut enc = GzEncoder::new(Vec::new(), Compression::none());
        enc.write_all(&content[..1000]).expect("gzip");
        enc.finish().expect("gzip")
    };
    let mut bad_block = stored;
    bad_block[13] ^= 0xff;
    let (read, _) = read_all(&bad_block, None, false);
    let damage = GzipDamage::from_io(&read.expect_err("block")).expect("damage");
    assert_eq!(damage.problem, GzipProblem::Corrupt);
}

#[test]
fn content_past_the_limit_fails_even_with_salvage() {
    let content = vec![b' '; 4 << 20];
    let file = gzip(&content);
    // A small file (flate2's zlib-rs at the default level: ~40 KB) that would expand 100×.
    assert!(file.len() < 64 << 10, "{}", file.len());
    for salvage in [false, true] {
        let (read, report) = read_all(&file, Some(1 << 20), salvage);
        let damage = GzipDamage::from_io(&read.expect_err("too large")).expect("damage");
        let GzipProblem::TooLarge {
            limit_bytes,
            decompressed_bytes,
        } = damage.problem
        else {
            panic!("{damage}");
        };
        assert_eq!(limit_bytes, 1 << 20);
        // Stopped at the read that passed the limit: nothing past it was handed out.
        assert!(decompressed_bytes > 1 << 20, "{decompressed_bytes}");
        assert!(report.content_bytes <= 1 << 20, "{}", report.content_bytes);
        assert!(damage.to_string().contains("limit of 1.00 MiB"), "{damage}");
    }
    let (read, _) = read_all(&file, Some(4 << 20), false);
    assert_eq!(read.expect("exactly at the limit").len(), 4 << 20);
}
