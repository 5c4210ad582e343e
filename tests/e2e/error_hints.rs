//! Every format's truncated or corrupt input (issue 17): one line naming the file, what is
//! wrong, the byte offset, and a next step that is true for that format — `--salvage` only
//! where it reads the complete part (traces' events, Nsight JSON records, recordings and
//! packs; never a snapshot, a pickle read as a whole), and never once it was given.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::bad_input::expect_failure;
use crate::support::*;

fn gzip(content: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(content).expect("gzip");
    enc.finish().expect("gzip")
}

fn bad_crc(gz: &[u8]) -> Vec<u8> {
    let mut bad = gz.to_vec();
    let n = bad.len();
    bad[n - 8] ^= 1;
    bad
}

/// A damaged input: its name, bytes, the words its error must hold, and whether it must
/// (or must not) suggest `--salvage`.
struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    needles: Vec<String>,
    salvage_hint: bool,
}

fn case(name: &'static str, bytes: Vec<u8>, needles: &[&str], salvage_hint: bool) -> Case {
    let needles = needles.iter().map(|s| s.to_string()).collect();
    Case {
        name,
        bytes,
        needles,
        salvage_hint,
    }
}

fn cases() -> Vec<Case> {
    let trace = read_maybe_gz(&fixtures().join("torch-cpu/k01_mlp_s1.json.gz"));
    let events = trace
        .windows(13)
        .position(|w| w == b"\"traceEvents\"")
        .expect("events");
    let pickle = std::fs::read(fixtures().join("snapshot/oom.pickle")).expect("pickle");
    let nsys = std::fs::read(shared_traces().join("nsys-cpu/run.json")).expect("nsys");
    let vsr = std::fs::read(fixtures().join("recording/v1-train.vsr")).expect("vsr");
    // The header's `"pid":` loses its colon.
    let colon = vsr.windows(6).position(|w| w == b"\"pid\":").expect("pid") + 5;
    let mut bad_header = vsr.clone();
    bad_header[colon] = b' ';
    let half = trace.len() / 2;
    let cut_trace_at = format!("at byte {half}");
    let header_at = format!("at byte {}", colon + 1);
    let gz_trace = gzip(&trace);
    let gz_pickle = gzip(&pickle);
    vec![
        case(
            "cut.json",
            trace[..half].to_vec(),
            &["ends early", &cut_trace_at],
            true,
        ),
        case(
            "cut-head.json",
            trace[..events].to_vec(),
            &["ends early", "outside the event list", "copy it again"],
            false,
        ),
        case(
            "cut.json.gz",
            gz_trace[..gz_trace.len() / 2].to_vec(),
            &["gzip data ends inside member 1", "compressed byte"],
            true,
        ),
        case(
            "crc.json.gz",
            bad_crc(&gz_trace),
            &["CRC-32", &format!("compressed byte {}", gz_trace.len() - 8)],
            true,
        ),
        case(
            "cut.pickle",
            pickle[..pickle.len() / 2].to_vec(),
            &[
                "ends early",
                "at byte",
                "the file is incomplete: copy it again",
            ],
            false,
        ),
        case(
            "cut.pickle.gz",
            gz_pickle[..gz_pickle.len() / 2].to_vec(),
            &[
                "gzip data ends inside member 1",
                "cut off: copy or download it again",
            ],
            false,
        ),
        case(
            "crc.pickle.gz",
            bad_crc(&gz_pickle),
            &["CRC-32", "damaged: copy or download it again"],
            false,
        ),
        case(
            "cut-nsys.json",
            nsys[..nsys.len() / 2].to_vec(),
            &["ends early", "record"],
            true,
        ),
        case("crc-nsys.json.gz", bad_crc(&gzip(&nsys)), &["CRC-32"], true),
        case(
            "header.vsr",
            bad_header,
            &[
                "recording's header line",
                &header_at,
                "damaged or was edited",
            ],
            false,
        ),
        case("crc.vsr.gz", bad_crc(&gzip(&vsr)), &["CRC-32"], true),
        case(
            "method.json.gz",
            [&[0x1f, 0x8b, 7][..], &[0; 20]].concat(),
            &[
                "header: compression method 7, not deflate (8)",
                "compressed byte 0",
            ],
            false,
        ),
    ]
}

#[test]
fn damaged_inputs_of_every_format_say_where_and_what_to_do() {
    let dir = temp_dir("hints");
    for c in cases() {
        let path = dir.join(c.name);
        std::fs::write(&path, &c.bytes).expect("write");
        let p = path.to_str().expect("path");
        let mut needles: Vec<&str> = c.needles.iter().map(String::as_str).collect();
        needles.push(c.name);
        let stderr = expect_failure(&["summary", p], 1, &needles);
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
        let hint = "; --salvage reads the complete events before it";
        assert_eq!(stderr.contains(hint), c.salvage_hint, "{stderr}");
        // What the hint promises holds; once given, it is not suggested again.
        let salvaged = vramscope(&["summary", p, "--salvage"]);
        let again = String::from_utf8_lossy(&salvaged.stderr);
        assert!(!again.contains("panicked"), "{again}");
        assert!(!again.contains(hint), "{}: {again}", c.name);
        if c.salvage_hint {
            assert_eq!(salvaged.status.code(), Some(0), "{}: {again}", c.name);
        }
    }
}
