//! Reference for bench/run.sh: how fast can `serde_json` alone parse a trace?
//!
//! Reads the whole file into memory first (not timed; gzip is inflated up front, recognised by
//! its magic bytes), then times `serde_json::from_slice` into a typed, borrowing struct that
//! keeps what a memory profiler needs from each event. Nothing else is done with the result.
//!
//! ```text
//! cargo run --release -p vramscope-collector --example serde_parse_only -- TRACE [RUNS]
//! ```
//!
//! Prints one `key=value` line; MB are 10^6 bytes of JSON text, the rate is from the median run.

use std::borrow::Cow;
use std::error::Error;
use std::fmt;
use std::io::Read;
use std::time::Instant;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

#[derive(Deserialize)]
struct Trace<'a> {
    #[serde(rename = "traceEvents", borrow)]
    trace_events: Vec<Event<'a>>,
}

#[derive(Deserialize)]
#[allow(dead_code)] // fields are parsed, never read: this measures parsing only
struct Event<'a> {
    #[serde(borrow, default)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pid: Option<Id<'a>>,
    #[serde(borrow, default)]
    tid: Option<Id<'a>>,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
    #[serde(default)]
    args: Option<Args>,
}

/// The memory fields of `args`; every other key is skipped.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Args {
    #[serde(rename = "Bytes")]
    bytes: Option<i64>,
    #[serde(rename = "Addr")]
    addr: Option<u64>,
    #[serde(rename = "Total Allocated")]
    total_allocated: Option<i64>,
    #[serde(rename = "Total Reserved")]
    total_reserved: Option<i64>,
    #[serde(rename = "Device Id")]
    device_id: Option<i64>,
    #[serde(rename = "Device Type")]
    device_type: Option<i64>,
}

/// A pid or tid: a number, or a string (GPU traces use names such as "Spans").
#[allow(dead_code)]
enum Id<'a> {
    Num(i64),
    Str(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Id<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl<'de> Visitor<'de> for IdVisitor {
            type Value = Id<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Id::Num(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                i64::try_from(v).map(Id::Num).map_err(E::custom)
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Id::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Id::Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_any(IdVisitor)
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut argv = std::env::args().skip(1);
    let path = argv.next().ok_or("usage: serde_parse_only TRACE [RUNS]")?;
    let runs: usize = argv.next().map_or(Ok(5), |s| s.parse())?;

    let raw = std::fs::read(&path).map_err(|e| format!("reading {path}: {e}"))?;
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(raw.as_slice()).read_to_end(&mut out)?;
        out
    } else {
        raw
    };

    let mut times = Vec::with_capacity(runs);
    let mut events = 0;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let trace: Trace<'_> = serde_json::from_slice(&text)?;
        times.push(start.elapsed().as_secs_f64());
        events = std::hint::black_box(&trace).trace_events.len();
        drop(trace); // not timed
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let mb = text.len() as f64 / 1e6;
    println!(
        "bytes={} events={events} runs={} median_s={median:.4} best_s={:.4} mb_per_s={:.1}",
        text.len(),
        times.len(),
        times[0],
        mb / median
    );
    Ok(())
}
