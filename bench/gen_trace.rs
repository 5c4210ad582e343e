//! Make a large PyTorch profiler trace by replicating the steps of a real one, streaming.
//!
//!     cargo run --release -p vramscope-collector --example gen_trace -- \
//!         BASE.json[.gz] OUT.json (--copies N | --target-bytes N) [--force]
//!
//! The base's metadata events (`ph: M`) are written once; every other event is written
//! `copies` times. Copy k keeps each event's bytes as the base has them except:
//! - `ts` + k × the base's length (+ 1 ms), so copies follow each other in time;
//! - `ProfilerStep#N` → N + k × the number of steps, so steps are numbered on;
//! - `Addr` + k × a stride past the base's address range: fresh addresses, so a block
//!   left live by one copy is never handed out again by the next;
//! - `Total Allocated` / `Total Reserved` + k × the base's net change on that device
//!   (first event's total before it to the last event's total), so the totals stay the
//!   running sum of `Bytes` over the replicated history (a steady-state base, net 0,
//!   replays the same curve: the same peak);
//! - ids that link events (`id` of flows and `correlation`, `External id`, `Ev Idx`,
//!   `Sequence number`, `Python id` and its parent, `Record function id`) + k × the
//!   group's largest value + 1, so links stay within their copy.
//!
//! The body is parsed once into literal bytes and numeric slots; each copy writes the
//! literals and the shifted numbers, so the output streams at disk speed. It goes to
//! OUT.tmp, renamed to OUT at the end; an existing OUT is kept without `--force`.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::time::Instant;

use anyhow::{Context, Result, bail};

#[path = "gen_trace/walk.rs"]
mod walk;

use walk::{Slot, SlotKind, Template};

/// The output buffer: large writes keep the disk streaming (16 MiB of memory).
const OUT_BUFFER_BYTES: usize = 16 << 20;
/// The gap between copies, µs (the existing `make_big_trace.py` uses the same).
const GAP_US: i64 = 1000;
/// Address strides are rounded up to this (1 GiB), keeping the allocator's alignment.
const ADDR_ALIGN: u64 = 1 << 30;
/// The largest base read (it is held in memory with its template: about 2× this).
const MAX_BASE_BYTES: u64 = 2 << 30;

struct Args {
    base: String,
    out: String,
    copies: Option<u64>,
    target_bytes: Option<u64>,
    force: bool,
}

fn parse_args() -> Result<Args> {
    let mut it = std::env::args().skip(1);
    let mut pos = Vec::new();
    let (mut copies, mut target_bytes, mut force) = (None, None, false);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--copies" => copies = Some(it.next().context("--copies N")?.parse()?),
            "--target-bytes" => {
                target_bytes = Some(it.next().context("--target-bytes N")?.parse()?)
            }
            "--force" => force = true,
            _ => pos.push(a),
        }
    }
    let [base, out] = <[String; 2]>::try_from(pos).map_err(|_| {
        anyhow::anyhow!("usage: gen_trace BASE OUT (--copies N | --target-bytes N) [--force]")
    })?;
    if copies.is_none() == target_bytes.is_none() {
        bail!("give one of --copies N, --target-bytes N");
    }
    Ok(Args {
        base,
        out,
        copies,
        target_bytes,
        force,
    })
}

fn read_base(path: &str) -> Result<Vec<u8>> {
    let f = File::open(path).with_context(|| format!("{path}: cannot open"))?;
    let mut raw = Vec::new();
    f.take(MAX_BASE_BYTES + 1).read_to_end(&mut raw)?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .take(MAX_BASE_BYTES + 1)
            .read_to_end(&mut out)
            .with_context(|| format!("{path}: bad gzip"))?;
        raw = out;
    }
    if raw.len() as u64 > MAX_BASE_BYTES {
        bail!("{path}: over {MAX_BASE_BYTES} bytes of JSON; use a smaller base");
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(&raw)
        .with_context(|| format!("{path}: not valid JSON"))?;
    Ok(raw)
}

/// Per-copy increments of every slot kind.
struct Shifts {
    period_us: i64,
    steps: i64,
    addr: u64,
    ids: Vec<i64>,
    allocated: Vec<i64>,
    reserved: Vec<i64>,
}

fn shifts(t: &Template, copies: u64) -> Result<Shifts> {
    let (t0, t1) = t.time_range.context("the base has no timed events")?;
    let steps = t.step_range.map_or(0, |(first, last)| last - first + 1);
    let addr = t.addr_range.map_or(0, |(low, high)| {
        (high - low + 1).div_ceil(ADDR_ALIGN) * ADDR_ALIGN
    });
    let last = copies.saturating_sub(1) as i64;
    let max_addr = t.addr_range.map_or(0, |(_, high)| high);
    if (last as u64)
        .checked_mul(addr)
        .and_then(|d| d.checked_add(max_addr))
        .is_none()
    {
        bail!("{copies} copies would take addresses past 2^64");
    }
    for d in &t.devices {
        for (net, min, what) in [
            (d.net_allocated(), d.min_allocated, "Total Allocated"),
            (d.net_reserved(), d.min_reserved, "Total Reserved"),
        ] {
            if net < 0 && min.saturating_add(net.saturating_mul(last)) < 0 {
                bail!(
                    "device {:?}: the base's {what} falls by {} bytes; {copies} copies would \
                     take it below zero (use fewer copies or a base that ends where it starts)",
                    d.key,
                    -net
                );
            }
        }
    }
    Ok(Shifts {
        period_us: (t1 - t0) + GAP_US,
        steps,
        addr,
        ids: t
            .id_max
            .iter()
            .map(|m| m.saturating_add(1).max(1))
            .collect(),
        allocated: t.devices.iter().map(|d| d.net_allocated()).collect(),
        reserved: t.devices.iter().map(|d| d.net_reserved()).collect(),
    })
}

fn write_number(out: &mut impl Write, v: i128) -> Result<()> {
    let mut buf = [0u8; 48];
    let mut i = buf.len();
    let neg = v < 0;
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if neg {
        i -= 1;
        buf[i] = b'-';
    }
    out.write_all(&buf[i..])?;
    Ok(())
}

fn write_copy(out: &mut impl Write, t: &Template, s: &Shifts, k: i64) -> Result<()> {
    let mut at = 0;
    for Slot { range, kind, value } in &t.slots {
        out.write_all(&t.body[at..range.start])?;
        let step = match *kind {
            SlotKind::Ts => s.period_us as i128,
            SlotKind::Step => s.steps as i128,
            SlotKind::Addr => s.addr as i128,
            SlotKind::Id(g) => s.ids[g] as i128,
            SlotKind::Allocated(d) => s.allocated[d] as i128,
            SlotKind::Reserved(d) => s.reserved[d] as i128,
        };
        write_number(out, *value + step * k as i128)?;
        at = range.end;
    }
    out.write_all(&t.body[at..])?;
    Ok(())
}

/// This process's user + system CPU seconds (Linux `/proc/self/stat`, 100 ticks a
/// second; 0 elsewhere): on a shared machine the wall time says more about the neighbours.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let raw = read_base(&args.base)?;
    let t = walk::template(&raw).with_context(|| format!("{}: not a trace", args.base))?;
    let per_copy = t.body.len() as u64 + 2;
    let fixed = (t.head.len() + t.tail.len()) as u64;
    // The nearest whole number of copies to the target.
    let copies = args
        .copies
        .unwrap_or_else(|| {
            let want = args.target_bytes.unwrap_or(0).saturating_sub(fixed);
            (want + per_copy / 2) / per_copy
        })
        .max(1);
    let s = shifts(&t, copies)?;
    if !args.force && std::path::Path::new(&args.out).exists() {
        bail!("{}: exists; --force to replace it", args.out);
    }
    let tmp = format!("{}.tmp", args.out);
    let started = Instant::now();
    let cpu_started = cpu_seconds();
    let mut out = BufWriter::with_capacity(OUT_BUFFER_BYTES, File::create(&tmp)?);
    out.write_all(&t.head)?;
    for k in 0..copies {
        if k > 0 || t.has_meta {
            out.write_all(b",\n")?;
        }
        write_copy(&mut out, &t, &s, k as i64)?;
    }
    out.write_all(&t.tail)?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&tmp, &args.out)?;
    let bytes = std::fs::metadata(&args.out)?.len();
    let secs = started.elapsed().as_secs_f64();
    let cpu = (cpu_seconds() - cpu_started).max(0.01);
    println!(
        "wrote {}: {copies} copies of {} ({} events a copy, {} steps a copy), {bytes} bytes in {secs:.1} s ({:.0} MB/s; {cpu:.2} s of CPU: {:.0} MB/s of CPU time)",
        args.out,
        args.base,
        t.body_events,
        s.steps,
        bytes as f64 / secs / 1e6,
        bytes as f64 / cpu / 1e6
    );
    Ok(())
}
