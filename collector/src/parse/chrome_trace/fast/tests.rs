//! The fast reader must answer exactly as serde does, or not at all.

use std::io::Read;
use std::path::Path;

use serde_json::value::RawValue;

use super::*;
use crate::parse::chrome_trace::raw::Args;
use crate::parse::chrome_trace::raw::RawEvent;
use crate::parse::json_stream::parse_one;

/// What serde makes of an event window: the fields and bytes used, or `None` on any error.
fn by_serde(window: &[u8]) -> Option<(Fields<'_>, usize)> {
    parse_one::<RawEvent<'_>>(window)
        .ok()
        .map(|(ev, n)| (Fields::from(ev), n))
}

/// What serde alone makes of raw `args`.
fn serde_args(raw: &[u8]) -> Option<RawArgs<'_>> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|t| serde_json::from_str::<RawArgs<'_>>(t).ok())
}

/// Checks one window; returns whether the fast reader answered.
fn agrees(window: &[u8]) -> bool {
    let Some((mut fast, n)) = event(window) else {
        return false;
    };
    let text = String::from_utf8_lossy(window);
    let (mut serde, serde_n) = by_serde(window).unwrap_or_else(|| panic!("serde refused {text}"));
    assert_eq!(n, serde_n, "{text}");
    let Some(Args::Raw(serde_raw)) = serde.args.take() else {
        assert!(fast.args.is_none(), "{text}");
        assert_eq!(fast, serde, "{text}");
        return true;
    };
    // Args the fast reader read already must be what serde reads from the raw text.
    match fast.args.take() {
        Some(Args::Read(read)) => assert_eq!(Some(read), serde_args(serde_raw), "{text}"),
        Some(Args::Raw(raw)) => {
            assert_eq!(raw, serde_raw, "{text}");
            if let Some(quick) = args(raw) {
                assert_eq!(Some(quick), serde_args(raw), "{text}");
            }
        }
        None => panic!("fast reader lost args: {text}"),
    }
    assert_eq!(fast, serde, "{text}");
    true
}

/// The raw events of a trace file (gzip or plain), by serde.
fn raw_events(path: &Path) -> Vec<Vec<u8>> {
    let mut data = Vec::new();
    let file = std::fs::File::open(path).expect("open trace");
    flate2::read::MultiGzDecoder::new(file)
        .read_to_end(&mut data)
        .expect("gunzip");
    let key = b"\"traceEvents\"";
    let at = data
        .windows(key.len())
        .position(|w| w == key)
        .expect("traceEvents");
    let mut pos = at + key.len();
    pos += data[pos..].iter().position(|&b| b == b'[').expect("[") + 1;
    let mut events = Vec::new();
    loop {
        pos += data[pos..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .expect("more");
        if data[pos] == b']' {
            return events;
        }
        let (raw, n) = parse_one::<&RawValue>(&data[pos..]).unwrap_or_else(|_| panic!("event"));
        events.push(raw.get().as_bytes().to_vec());
        pos += n;
        pos += data[pos..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .expect("separator");
        if data[pos] == b',' {
            pos += 1;
        }
    }
}

fn shared_traces() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces")
}

#[test]
fn real_events_read_as_serde_reads_them() {
    let files = [
        "torch-cpu/t2.json.gz",
        "real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz",
        "real/tracelens-h100-qwen-0.5b/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "real/tracelens-mi300-sglang-decode/bs_32_rank0.json.gz",
        "real/hta-cpu-only-gloo/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    ];
    for file in files {
        let events = raw_events(&shared_traces().join(file));
        let fast = events.iter().filter(|e| agrees(e)).count();
        // The fast reader must take nearly every real event, or it buys nothing.
        assert!(
            fast * 100 >= events.len() * 99,
            "{file}: {fast} of {} events",
            events.len()
        );
        // A window that ends inside an event is never answered (the stream reads more).
        for e in events.iter().step_by(97).take(40) {
            for cut in 0..e.len() {
                assert!(event(&e[..cut]).is_none(), "{file}: prefix {cut} answered");
            }
        }
    }
}

#[test]
fn unusual_events_are_left_to_serde() {
    let cases: &[&str] = &[
        r#"{"ph": "X", "name": "a\"b", "ts": 1}"#, // an escape in a kept string
        r#"{"ph": "X", "ph": "i"}"#,               // a duplicate field
        r#"{"ph": null}"#,
        r#"{"pid": -0, "tid": 1}"#,
        r#"{"pid": 1.5}"#,
        r#"{"pid": 1234567890123456789}"#,
        r#"{"ts": 01}"#,
        r#"{"ts": 1.}"#,
        r#"{"ts": -}"#,
        r#"{"ts": 1e}"#,
        r#"{"ts": "5"}"#,
        r#"{"args": {"a": tru}}"#,
        r#"{"args": {"a": [1, 2,]}}"#,
        r#"{"args": {"a": 1,}}"#,
        r#"{"args": {"a" 1}}"#,
        r#"{"args": {1: 1}}"#,
        r#"{"args": "\x"}"#,
        r#"{"args": "\u12G4"}"#,
        "{\"args\": \"tab\there\"}",
        r#"{"ph": "X",, }"#,
        r#"["X", "a"]"#,
        r#"{"ph": "X"} trailing"#,
    ];
    for case in cases {
        // The one case with trailing bytes parses: the object is complete before them.
        if let Some((_, n)) = event(case.as_bytes()) {
            assert_eq!(&case[..n], r#"{"ph": "X"}"#, "{case}");
        }
    }
    let deep = format!("{{\"args\": {}1{}}}", "[".repeat(80), "]".repeat(80));
    assert!(event(deep.as_bytes()).is_none());
    let shallow = format!("{{\"args\": {}1{}}}", "[".repeat(20), "]".repeat(20));
    assert!(agrees(shallow.as_bytes()));
    assert!(event(b"{\"name\": \"\xff\"}").is_none(), "not UTF-8");
    // Nesting around the depth cap, in args read where they stand: if taken, as serde.
    for depth in 60..68 {
        let nested = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let case =
            format!("{{\"name\": \"[memory]\", \"args\": {{\"Bytes\": 8, \"x\": {nested}}}}}");
        if event(case.as_bytes()).is_some() {
            assert!(agrees(case.as_bytes()), "{case}");
        }
    }
}

#[test]
fn what_it_takes_it_reads_as_serde_does() {
    let cases: &[&str] = &[
        "{}",
        "  {  }",
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":"stream 7","ts":5.25,"dur":1e3}"#,
        r#"{"ph": "i", "name": "[memory]", "pid": -3, "tid": 0, "ts": 1623143089861005,
            "args": {"Device Type": 1, "Device Id": 0, "Bytes": -1024, "Addr": 18446744073709551615,
                     "Total Allocated": 0, "Total Reserved": 2097152, "Ev Idx": [1, {"x": null}]}}"#,
        r#"{"ph": "M", "name": "thread_name", "args": {"name": "thread 7 (python)", "n": 1}}"#,
        r#"{"ph": "X", "args": {"s": "esc \" \\ \/ \b \f \n \r \t \u00e9 \uD800", "t": true, "f": false}}"#,
        r#"{"ph": "X", "name": "ünïcödé ✓", "args": {"k": "€"}, "id": -0.5e-3, "bp": "e"}"#,
        r#"{"ts": 0, "dur": -0, "pid": 0}"#,
        "{\"ph\"\t:\r\n\"X\"\n}",
        // Args the builder reads: read where they stand (name first), read after the event
        // (name after them), and left raw where the fast reader cannot read them.
        r#"{"name": "[memory]", "args": {"Bytes": 8, "name": "x", "Addr": 16}, "ph": "i"}"#,
        r#"{"args": {"Bytes": 8, "name": "x"}, "name": "[memory]", "ph": "i"}"#,
        r#"{"name": "[memory]", "args": {"Bytes": 1.5, "Addr": [1]}, "ph": "i"}"#,
        r#"{"name": "[memory]", "args": {"name": "a\"b", "Bytes": 8}}"#,
        r#"{"name": "thread_name", "args": {"name": "t", "name": "u"}}"#,
        r#"{"name": "[OutOfMemory]", "args": { }, "ts": 1}"#,
    ];
    for case in cases {
        assert!(agrees(case.as_bytes()), "fast reader refused {case}");
    }
}

#[test]
fn changed_bytes_never_make_it_disagree_with_serde() {
    let seed_events = [
        r#"{"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 28107, "tid": 28107, "ts": 5364905949917.235, "dur": 21.310, "args": {"External id": 3, "Concrete Inputs": ["[8, 128]", "4", "", "False"], "Input Dims": [[], [8, 128]], "Ev Idx": 2}}"#,
        r#"{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": 102.001, "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": 512, "Addr": 139000000000000, "Device Id": 0, "Device Type": 1}}"#,
    ];
    let replacements = b"\"\\{}[],:0-.eE ntfu\x01\xc3\xff";
    let mut rng = crate::test_rng::TestRng::new(0x9E37_79B9_7F4A_7C15);
    let mut rand = move |n: usize| rng.below(n);
    let mut answered = 0;
    for seed in seed_events {
        for _ in 0..4000 {
            let mut bytes = seed.as_bytes().to_vec();
            for _ in 0..1 + rand(3) {
                let at = rand(bytes.len());
                match rand(3) {
                    0 => bytes[at] = replacements[rand(replacements.len())],
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, replacements[rand(replacements.len())]),
                }
            }
            answered += usize::from(agrees(&bytes));
        }
    }
    // Most single edits land in skipped args and still parse; they must agree with serde.
    assert!(answered > 1000, "{answered}");
}

#[test]
fn times_read_in_one_pass_as_their_text_reads() {
    let texts = [
        "0",
        "-0",
        "7",
        "-7",
        "5721807879329.481",
        "5721807879329.48",
        "5721807879329.4",
        "1.000",
        "-0.5",
        "123456789012345",
        "123456789012345.999",
        "1234567890123456",
        "1234567890123456.5",
        "1.2345",
        "1e3",
        "1.5E-2",
        "-2.5e+1",
        "0.0",
        "9.999",
        "999999999999999.999",
        "01",
        "00",
        "-01",
        "1.",
        "-",
        ".5",
        "1.x",
        "1e",
        "-.5",
    ];
    for text in texts {
        // A comma after the number, as in an event.
        let padded = format!("{text},");
        let mut one_pass = scanner::Scanner::new(padded.as_bytes());
        let mut by_text = scanner::Scanner::new(padded.as_bytes());
        let want = by_text.number().map(Micros::of);
        assert_eq!(one_pass.micros(), want, "{text}");
        if want.is_some() {
            assert_eq!(one_pass.pos, by_text.pos, "{text}");
        }
    }
}

#[test]
fn integers_read_in_one_pass_as_their_checked_text_reads() {
    // What `Scanner::integer` answered when it checked the number's form first and valued
    // its digits after.
    fn by_text(text: &[u8], max_digits: usize) -> Option<i128> {
        let text = scanner::Scanner::new(text).number()?;
        let (negative, digits) = match text.split_first()? {
            (b'-', rest) => (true, rest),
            _ => (false, text),
        };
        if digits.len() > max_digits || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let value = digits
            .iter()
            .fold(0i128, |v, &d| v * 10 + i128::from(d - b'0'));
        match (negative, value) {
            (true, 0) => None,
            (true, v) => Some(-v),
            (false, v) => Some(v),
        }
    }
    let texts = [
        "0",
        "-0",
        "7",
        "-7",
        "00",
        "01",
        "-01",
        "-00",
        "10",
        "-10",
        "1.5",
        "1e3",
        "1E3",
        "1.",
        "-",
        "",
        "x",
        "1x",
        "-x",
        "2097152",
        "-1024",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999",
        "999999999999999999",
        "-999999999999999999",
        "-9999999999999999999",
        "1234567890123456789",
        "0.0",
        "-0.5",
        "0e1",
        "12 ",
        "12}",
        "12,",
    ];
    for text in texts {
        for max_digits in [18, 19] {
            let mut one_pass = scanner::Scanner::new(text.as_bytes());
            let want = by_text(text.as_bytes(), max_digits);
            assert_eq!(
                one_pass.integer(max_digits),
                want,
                "{text} ({max_digits} digits)"
            );
        }
    }
}

/// A key the word compare recognises is the key [`Scanner::plain_string`] reads, for every
/// usual key and its near misses (longer, shorter, other letters, escapes, no closing quote).
#[test]
fn event_keys_read_as_plain_strings_read_them() {
    let keys = [
        "ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "s", "id", "bp",
    ];
    let tails: [&[u8]; 7] = [b"", b"x", b"\\", b"\"", b"\x01", b"\xc3\xa9", b"s"];
    let mut recognised = 0;
    for key in keys {
        for cut in 0..=key.len() {
            for tail in tails {
                for after in [&b"\": 1, \"x\": 2}"[..], b"\"", b"\":"] {
                    let mut text = b"\"".to_vec();
                    text.extend_from_slice(&key.as_bytes()[..cut]);
                    text.extend_from_slice(tail);
                    text.extend_from_slice(after);
                    text.resize(text.len().max(8), b' ');
                    let word = u64::from_le_bytes(text[..8].try_into().expect("eight bytes"));
                    let Some((fast, len)) = keys::event_key(word) else {
                        continue;
                    };
                    recognised += 1;
                    let mut s = Scanner::new(&text);
                    assert_eq!(s.plain_string(), Some(fast), "{text:?}");
                    assert_eq!(s.pos, len, "{text:?}");
                }
            }
        }
    }
    assert!(recognised >= 8 * 3, "{recognised}");
}

#[test]
fn a_known_word_is_the_text_of_its_bytes() {
    for b in 0u8..128 {
        let text = super::known_word(&[b]).expect("one ASCII byte");
        assert_eq!(text.as_bytes(), [b]);
    }
    assert_eq!(super::known_word(&[0x80]), None);
    for cat in super::USUAL_CATEGORIES {
        assert_eq!(super::known_word(cat.as_bytes()), Some(cat));
    }
    assert_eq!(super::known_word(b"cpu_ops"), None);
    assert_eq!(super::known_word(b""), None);
}
