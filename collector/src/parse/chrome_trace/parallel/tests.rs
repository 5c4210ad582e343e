//! The parallel reader must build exactly what the one-thread reader builds, and fail
//! exactly as it fails, wherever the chunks fall.

use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::{APPLIED, Config};
use crate::model::{Recording, StrId};
use crate::parse::LoadOptions;
use crate::parse::chrome_trace::read_with;
use crate::parse::input::Input;

/// Reads `data` in pieces of at most `step` bytes, then fails with `fail` (if any).
struct Pieces {
    data: Vec<u8>,
    pos: usize,
    step: usize,
    fail: Option<io::ErrorKind>,
}

impl Read for Pieces {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len() - self.pos);
        if n == 0
            && let Some(kind) = self.fail
        {
            return Err(io::Error::new(kind, "the disk went away"));
        }
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn input(data: &[u8], step: usize, fail: Option<io::ErrorKind>) -> Input {
    Input {
        reader: Box::new(Pieces {
            data: data.to_vec(),
            pos: 0,
            step,
            fail,
        }),
        compressed: false,
        file_bytes_read: Arc::new(AtomicU64::new(0)),
        file_len: data.len() as u64,
        head: data.iter().copied().take(4096).collect(),
    }
}

/// Everything a recording holds, as text, so two can be compared whole.
fn fingerprint(rec: &Recording) -> String {
    let strings: Vec<&str> = (0..rec.strings.len())
        .map(|i| rec.strings.get(StrId(i as u32)))
        .collect();
    format!(
        "{:?}\n{strings:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        rec.meta, rec.devices, rec.threads, rec.mem_events, rec.ops, rec.steps, rec.diagnostics
    )
}

/// The outcome of reading `data`, as text: the recording, or the error with its offset.
fn outcome(data: &[u8], config: Option<Config>, step: usize, salvage: bool) -> String {
    outcome_failing(data, config, step, salvage, None)
}

fn outcome_failing(
    data: &[u8],
    config: Option<Config>,
    step: usize,
    salvage: bool,
    fail: Option<io::ErrorKind>,
) -> String {
    let options = LoadOptions {
        salvage_truncated: salvage,
        ..LoadOptions::default()
    };
    match read_with(input(data, step, fail), options, config, None) {
        Ok(rec) => fingerprint(&rec),
        Err(e) => format!("error: {e:?}"),
    }
}

fn config(chunk_bytes: usize, workers: usize) -> Option<Config> {
    Some(Config {
        chunk_bytes,
        workers,
        in_flight: workers * 2 + 1,
    })
}

fn trace(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces")
        .join(rel);
    let mut data = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).expect("open"))
        .read_to_end(&mut data)
        .expect("gunzip");
    data
}

fn assert_same(data: &[u8], config: Option<Config>, step: usize, salvage: bool, what: &str) {
    let serial = outcome(data, None, 1 << 20, salvage);
    let parallel = outcome(data, config, step, salvage);
    assert!(
        serial == parallel,
        "{what}: {config:?} step {step}\nserial:   {}\nparallel: {}",
        &serial[..serial.len().min(300)],
        &parallel[..parallel.len().min(300)]
    );
}

#[test]
fn real_traces_read_the_same_in_any_chunks() {
    let files: &[(&str, &[usize])] = &[
        ("torch-cpu/t2.json.gz", &[300, 4096, 65536]),
        (
            "real/tracelens-mi300-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
            &[1000, 50_000],
        ),
        ("real/hta-sampled-2ranks/sampled_rank-0.json.gz", &[2048]),
        (
            "real/tracelens-h100-qwen-0.5b/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            &[16 << 10, 512 << 10],
        ),
        (
            "real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz",
            &[256 << 10],
        ),
    ];
    for (file, chunks) in files {
        let data = trace(file);
        let serial = outcome(&data, None, 1 << 20, false);
        assert!(!serial.starts_with("error"), "{file}: {serial}");
        for (i, &chunk) in chunks.iter().enumerate() {
            let workers = 2 + i % 2;
            // Reads of odd sizes put event ends anywhere in the stream's window.
            let step = [1 << 20, 4093, 65_521][i % 3];
            let before = APPLIED.with(|a| a.get());
            let parallel = outcome(&data, config(chunk, workers), step, false);
            assert!(serial == parallel, "{file}: chunk {chunk}, step {step}");
            let after = APPLIED.with(|a| a.get());
            let (whole, stopped) = (after.0 - before.0, after.1 - before.1);
            // The workers read nearly all of it: only the array's end stops a chunk.
            let len = data.len() as u64;
            assert!(
                whole * 10 >= len * 9 && stopped <= 2,
                "{file}: {whole} of {len} bytes in whole chunks, {stopped} stopped"
            );
        }
    }
}

/// A trace whose events all carry strings that look like event boundaries, so many cuts
/// land inside strings.
fn tricky_trace(events: usize) -> Vec<u8> {
    let mut text = String::from("{\"traceEvents\": [\n");
    for i in 0..events {
        let nasty = match i % 4 {
            0 => r#""}, {\"ph\": \"X\"}, {""#,
            1 => r#""\\\"}, {\\\" [ ] { } , \u007d""#,
            2 => r#"["}, {", "},{", {"k": "}\n,\n{"}]"#,
            _ => r#""plain""#,
        };
        text.push_str(&format!(
            "  {{\"args\": {{\"s\": {nasty}}}, \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op{}\", \"pid\": 1, \"tid\": {}, \"ts\": {}.5, \"dur\": 2}},\n",
            i % 7,
            i % 3,
            i * 3
        ));
        if i % 5 == 0 {
            text.push_str(&format!(
                "  {{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 0, \"ts\": {}, \"args\": {{\"Bytes\": {}, \"Addr\": {}, \"Device Type\": 0, \"Device Id\": -1}}}},\n",
                i * 3 + 1,
                if i % 2 == 0 { 512 } else { -512 },
                1000 + i % 10
            ));
        }
    }
    text.push_str("  {\"ph\": \"X\", \"name\": \"last\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1}\n], \"baseTimeNanoseconds\": 1000}");
    text.into_bytes()
}

#[test]
fn cuts_inside_strings_with_escapes_and_brackets_change_nothing() {
    let data = tricky_trace(3000);
    for chunk in [64, 200, 999, 4096] {
        for step in [7, 1000, 1 << 20] {
            assert_same(&data, config(chunk, 2), step, false, "tricky");
        }
    }
    // Cuts inside strings stop a chunk, then the workers take over again.
    let before = APPLIED.with(|a| a.get());
    outcome(&data, config(600, 3), 1 << 20, false);
    let after = APPLIED.with(|a| a.get());
    let (whole, stopped) = (after.0 - before.0, after.1 - before.1);
    assert!(
        stopped > 10 && whole > 0,
        "{whole} bytes whole, {stopped} stopped"
    );
}

#[test]
fn errors_in_any_chunk_are_reported_where_one_thread_reports_them() {
    let data = tricky_trace(2000);
    let mut rng = crate::test_rng::TestRng::new(0x2545_F491_4F6C_DD1D);
    let mut rand = move |n: usize| rng.below(n);
    let bytes = b"\"\\{}[],:x0- \xff";
    for round in 0..60 {
        let mut damaged = data.clone();
        let at = rand(damaged.len());
        if round % 3 == 0 {
            damaged.truncate(at);
        } else {
            damaged[at] = bytes[rand(bytes.len())];
        }
        for salvage in [false, true] {
            assert_same(
                &damaged,
                config(300 + round * 37, 2),
                [5, 4096][round % 2],
                salvage,
                "damaged",
            );
        }
    }
    // A syntax error deep in the array is reported at its own byte.
    let mut broken = data.clone();
    let at = broken.len() * 2 / 3;
    let key = b"\"dur\":";
    let at = at
        + broken[at..]
            .windows(key.len())
            .position(|w| w == key)
            .expect("a dur")
        + 5;
    broken[at] = b';';
    let text = outcome(&broken, config(512, 2), 1 << 20, false);
    assert!(text.contains(&format!("offset: {at}")), "{text}");
}

#[test]
fn read_errors_keep_every_event_before_them() {
    let data = tricky_trace(2000);
    let cut = &data[..data.len() / 2];
    for salvage in [false, true] {
        let serial = outcome_failing(cut, None, 1 << 20, salvage, Some(io::ErrorKind::Other));
        let parallel = outcome_failing(
            cut,
            config(700, 2),
            3001,
            salvage,
            Some(io::ErrorKind::Other),
        );
        assert_eq!(serial, parallel);
        if salvage {
            assert!(serial.contains("truncated_at: Some("), "{serial}");
        } else {
            assert!(serial.contains("disk went away"), "{serial}");
        }
    }
}

#[test]
fn bare_arrays_end_as_the_chrome_format_allows() {
    let events: String = (0..400)
        .map(|i| format!("{{\"ph\": \"X\", \"name\": \"a{}\", \"pid\": 1, \"tid\": 1, \"ts\": {i}, \"dur\": 1}},\n", i % 9))
        .collect();
    let cases = [
        format!("[{events}"),
        format!("[{events}   \n"),
        format!("[{events}{{\"ph\": \"X\"}}]"),
        format!("[{events}{{\"ph\": \"X\"}}"),
        format!("[{events}{{\"ph\": \"X\"}}, 17, \"x\", [1]]"),
        format!("{{\"traceEvents\": [{events}]}}"),
        format!("{{\"traceEvents\": [{events}"),
    ];
    for case in &cases {
        for chunk in [50, 333, 8192] {
            assert_same(case.as_bytes(), config(chunk, 2), 1 << 20, false, case);
            assert_same(case.as_bytes(), config(chunk, 3), 11, true, case);
        }
    }
}
