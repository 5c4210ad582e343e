//! Timed frames of the allocation view (not a pass/fail test; timings are never
//! asserted): the layout's build, then one frame of the bands — the egui pass with all
//! their painting, plus tessellation — at zoom levels 1× … 10,000×, on a synthetic
//! training run of 1,000,000 allocations and on a file given by `VRAMSCOPE_BIG_TRACE`.
//!
//! ```text
//! cargo test --release -p vramscope band_frame_timings -- --ignored --nocapture
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use collector::Recording;
use collector::analysis::allocations::{BandLayout, CacheBands};
use collector::model::{DeviceId, MemEvent, MemEventKind};
use collector::parse::SourceFormat;
use egui::{Rect, pos2};

use super::super::doc::{Document, TimeView};
use super::super::loaded::Loaded;
use super::super::theme::{Palette, ThemeChoice};
use super::bands_ui;

/// Frames per zoom level.
const REPS: usize = 30;

/// A training-like run of `n` allocations: 200 persistent weights, then steps of a
/// forward pass (each layer keeps an activation and frees two temporaries at once) and a
/// backward pass freeing the activations in reverse with a temporary each.
fn synthetic(n: usize) -> Recording {
    let mut rec = Recording::empty(SourceFormat::TorchChromeTrace, "bench");
    rec.device_index(DeviceId::cuda(0));
    rec.thread_index("1", "1");
    let (mut t, mut total, mut addr, mut count) = (0i64, 0i64, 0x1000u64, 0usize);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut size = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        512i64 << (x % 16)
    };
    let ev = |rec: &mut Recording, bytes: i64, at: u64, t: &mut i64, total: &mut i64| {
        *t += 700;
        *total += bytes;
        let kind = if bytes > 0 {
            MemEventKind::Alloc
        } else {
            MemEventKind::Free
        };
        rec.mem_events.push(MemEvent {
            time_ns: *t,
            bytes,
            addr: at.into(),
            total_allocated_bytes: (*total).into(),
            total_reserved_bytes: collector::model::Total::UNKNOWN,
            device: 0,
            thread: 0,
            kind,
            stack: None,
        });
    };
    let mut alloc = |rec: &mut Recording, t: &mut i64, total: &mut i64, b: i64| {
        addr += 1 << 20;
        count += 1;
        ev(rec, b, addr, t, total);
        (addr, b)
    };
    for _ in 0..200 {
        let b = size() * 16;
        alloc(&mut rec, &mut t, &mut total, b);
    }
    while rec.mem_events.len() < 2 * n {
        let mut kept = Vec::new();
        for _ in 0..400 {
            let b = size();
            kept.push(alloc(&mut rec, &mut t, &mut total, b));
            let (b1, b2) = (size(), size());
            let a = alloc(&mut rec, &mut t, &mut total, b1);
            let c = alloc(&mut rec, &mut t, &mut total, b2);
            free(&mut rec, c, &mut t, &mut total);
            free(&mut rec, a, &mut t, &mut total);
        }
        while let Some(k) = kept.pop() {
            let b = size();
            let g = alloc(&mut rec, &mut t, &mut total, b);
            free(&mut rec, k, &mut t, &mut total);
            free(&mut rec, g, &mut t, &mut total);
        }
    }
    rec.meta.end_ns = t + 1;
    rec
}

fn free(rec: &mut Recording, (addr, bytes): (u64, i64), t: &mut i64, total: &mut i64) {
    *t += 700;
    *total -= bytes;
    rec.mem_events.push(MemEvent {
        time_ns: *t,
        bytes: -bytes,
        addr: addr.into(),
        total_allocated_bytes: (*total).into(),
        total_reserved_bytes: collector::model::Total::UNKNOWN,
        device: 0,
        thread: 0,
        kind: MemEventKind::Free,
        stack: None,
    });
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// One frame's egui pass and tessellation of the bands at `view`.
fn frame_ms(
    ctx: &egui::Context,
    doc: &mut Document,
    palette: &Palette,
    size: Rect,
) -> (f64, usize) {
    let started = Instant::now();
    let mut drawn = 0;
    let out = ctx.run_ui(
        egui::RawInput {
            screen_rect: Some(size),
            ..Default::default()
        },
        |ui| {
            drawn = bands_ui(ui, size, doc, palette).rects;
        },
    );
    let mut out = out;
    out.textures_delta.clear();
    std::hint::black_box(ctx.tessellate(out.shapes, 1.0));
    (started.elapsed().as_secs_f64() * 1e3, drawn)
}

fn run(name: &str, rec: Recording) {
    let started = Instant::now();
    let timeline = collector::Timeline::build(&rec);
    let device =
        collector::analysis::live::pick_device(&rec, &timeline, None).expect("allocations");
    let d = timeline.devices.get(device as usize).expect("a device");
    let t = Instant::now();
    let layout = BandLayout::build(&rec, d);
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let cache = CacheBands::build(&rec, d);
    let cache_ms = t.elapsed().as_secs_f64() * 1e3;
    if let Some(c) = &cache {
        println!(
            "segments stacked and allocations placed in them in {cache_ms:.0} ms ({} segments)",
            c.lives.len()
        );
    }
    drop(cache);
    let t = Instant::now();
    let moves: usize = (0..layout.len()).map(|i| layout.moves(d, i).len()).sum();
    let moves_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "\n{name}: {} allocations; layout built in {build_ms:.0} ms ({:.1} MiB, index {:.1} MiB); \
         every band's moves found in {moves_ms:.0} ms ({moves} moves)",
        layout.len(),
        layout.heap_bytes() as f64 / (1 << 20) as f64,
        layout.index.heap_bytes() as f64 / (1 << 20) as f64,
    );
    drop(timeline);
    let data = Arc::new(Loaded::build(
        std::path::Path::new(name),
        0,
        rec,
        Duration::ZERO,
    ));
    println!(
        "load (timeline, analyses, pyramids, layout) {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut doc = Document::new(0, data.clone());
    let bands = (data.curves.get(device as usize)).and_then(|c| c.bands.clone());
    if let Some(cache) = bands.as_ref().and_then(|b| b.cache.as_ref()) {
        let pyramids: usize = bands
            .iter()
            .flat_map(|b| &b.in_use)
            .flatten()
            .map(|p| p.heap_bytes())
            .sum();
        println!(
            "{} segments; their layout {:.1} MiB, the pyramids of their bytes in use {:.1} MiB",
            cache.lives.len(),
            cache.layout.heap_bytes() as f64 / (1 << 20) as f64,
            pyramids as f64 / (1 << 20) as f64,
        );
        zooms(&mut doc, &data, "Active");
        doc.panels.allocations.cached = true;
        zooms(&mut doc, &data, "Cached");
    } else {
        zooms(&mut doc, &data, "Active");
    }
}

/// Frames of the bands at five zoom levels, in the mode `doc` is in.
fn zooms(doc: &mut Document, data: &Loaded, mode: &str) {
    let palette = Palette::for_theme(ThemeChoice::Dark);
    let ctx = egui::Context::default();
    let size = Rect::from_min_max(pos2(0.0, 0.0), pos2(1600.0, 400.0));
    println!(
        "\n{mode}:\n| zoom | median frame ms (pass + tessellation) | max ms | CPU ms a frame (this thread, mean) | rectangles |"
    );
    println!("|---|---|---|---|---|");
    let duration = data.duration_ns() as f64;
    for zoom in [1.0f64, 10.0, 100.0, 1_000.0, 10_000.0] {
        let span = duration / zoom;
        let (mut times, mut rects) = (Vec::new(), 0);
        let cpu_before = thread_cpu_ms();
        for k in 0..REPS {
            let mid = duration * (0.3 + 0.4 * k as f64 / REPS as f64);
            doc.view = TimeView {
                t0_ns: mid - span / 2.0,
                t1_ns: mid + span / 2.0,
            };
            let (ms, r) = frame_ms(&ctx, doc, &palette, size);
            times.push(ms);
            rects = rects.max(r);
        }
        let cpu = thread_cpu_ms()
            .zip(cpu_before)
            .map(|(a, b)| (a - b) / REPS as f64);
        let cpu = cpu.map_or_else(|| "—".to_owned(), |c| format!("{c:.2}"));
        let max = times.iter().copied().fold(0.0, f64::max);
        println!(
            "| {zoom}× | {:.2} | {max:.2} | {cpu} | {rects} |",
            median(times)
        );
    }
}

/// This thread's CPU time so far, ms (user + system): a frame's work where the shared
/// machine's other load stretches its wall-clock time.
#[cfg(target_os = "linux")]
fn thread_cpu_ms() -> Option<f64> {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_THREAD).ok()?;
    let ms = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1e3 + t.tv_usec() as f64 / 1e3;
    Some(ms(u.user_time()) + ms(u.system_time()))
}

/// No per-thread CPU time here.
#[cfg(not(target_os = "linux"))]
fn thread_cpu_ms() -> Option<f64> {
    None
}

#[test]
#[ignore = "a benchmark: run with --release --ignored --nocapture"]
fn band_frame_timings() {
    run("synthetic 1M allocations", synthetic(1_000_000));
    if let Some(path) = std::env::var_os("VRAMSCOPE_BIG_TRACE") {
        let rec = collector::load(
            std::path::Path::new(&path),
            collector::LoadOptions::default(),
        )
        .expect("loads");
        run(&path.to_string_lossy(), rec);
    }
}
