//! Timed frames of the viewer on a big trace, in an egui_kittest harness (no display):
//! the per-frame CPU work of panning and zooming — the egui pass with all our painting,
//! plus tessellation — and, at fixed zoom levels, what the curve queries of one frame cost
//! with the pyramid and with the linear walk over the visible points it replaces
//! (`decimate::column_ranges`), interleaved.
//!
//! Not a pass/fail test (timings are never asserted); run it by hand:
//!
//! ```text
//! VRAMSCOPE_BIG_TRACE=/tmp/viewer-bench/big-1g.json \
//!   cargo test --release -p vramscope frame_timings -- --ignored --nocapture
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use collector::LoadOptions;
use collector::analysis::decimate::{Curve, column_ranges, curve};
use egui::{Event, Modifiers, MouseWheelSource, MouseWheelUnit, Rect, TouchPhase, pos2, vec2};
use egui_kittest::Harness;

use super::ViewerApp;
use super::loaded::Loaded;
use super::tests::primary;

/// Repetitions per zoom level of the query benchmark.
const QUERY_REPS: usize = 200;

fn stats(v: &[f64]) -> (f64, f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |q: usize| {
        s.get((s.len() * q / 100).min(s.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    (
        at(50),
        s.first().copied().unwrap_or(0.0),
        at(95),
        s.last().copied().unwrap_or(0.0),
    )
}

fn max_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

#[test]
#[ignore = "a benchmark: needs VRAMSCOPE_BIG_TRACE and --release"]
fn frame_timings() {
    let Some(path) = std::env::var_os("VRAMSCOPE_BIG_TRACE") else {
        eprintln!("set VRAMSCOPE_BIG_TRACE to a trace");
        return;
    };
    let mut h = load(std::path::PathBuf::from(path));
    // VRAMSCOPE_BENCH_CATEGORIES=1 times the frames with the timeline stacked by category.
    if std::env::var_os("VRAMSCOPE_BENCH_CATEGORIES").is_some() {
        for d in h.state_mut().docs_mut() {
            d.timeline.show_categories = true;
        }
        h.run_steps(2);
    }
    let doc = h.state().active_doc().expect("loaded");
    let (data, plot) = (
        doc.data.clone(),
        doc.timeline.last_plot_rect.expect("plot drawn"),
    );
    query_levels(&data, doc.device as usize, plot.width() as usize);
    analysis_jobs(
        &data,
        doc.device,
        doc.peak().map_or(data.rec.meta.start_ns, |p| p.0),
    );
    session(&mut h, plot);
    synthetic_scaling(plot.width() as usize);
}

/// Open the file in a harness and step it while it loads: the window keeps drawing.
fn load(path: std::path::PathBuf) -> Harness<'static, ViewerApp> {
    let ctx = egui::Context::default();
    let started = Instant::now();
    let app = ViewerApp::new(&ctx, None, vec![path.clone()], LoadOptions::default());
    // Few builder steps: the frames while loading are timed below, one by one.
    let mut h = Harness::builder()
        .with_size([1600.0, 1000.0])
        .with_max_steps(2)
        .build_ui_state(|ui, app: &mut ViewerApp| app.show(ui), app);
    let mut frames = Vec::new();
    while h.state().busy() {
        let t = Instant::now();
        h.step();
        frames.push(ms_since(t));
        std::thread::sleep(Duration::from_millis(20));
    }
    let load_s = started.elapsed().as_secs_f64();
    h.run_steps(3);
    let data = h.state().active_doc().expect("loaded").data.clone();
    println!(
        "file {} ({:.0} MB): loaded in {load_s:.1} s (read {:.1} s, timeline + analyses + pyramids {:.1} s), \
         max RSS {:.0} MiB; {} events, {} memory events, {} ops, {} steps; pyramids {:.1} MiB",
        path.display(),
        data.file_bytes as f64 / 1e6,
        data.parse_time.as_secs_f64(),
        data.analysis_time.as_secs_f64(),
        max_rss_mib(),
        data.rec.meta.events_read,
        data.rec.mem_events.len(),
        data.rec.ops.len(),
        data.rec.steps.len(),
        data.pyramid_bytes() as f64 / (1 << 20) as f64
    );
    let (m, min, p95, max) = stats(&frames);
    println!(
        "frames while loading: {} · median {m:.2} ms · min {min:.2} · p95 {p95:.2} · max {max:.2}",
        frames.len()
    );
    h
}

/// One frame's curve queries (allocated, reserved, cache) at zoom levels 1× … 10,000×
/// around the middle of the recording: pyramid vs linear walk, interleaved.
fn query_levels(data: &Arc<Loaded>, device: usize, columns: usize) {
    let curves = data.curves.get(device).expect("curves");
    let d = data.timeline.devices.get(device).expect("device");
    let linear = [Curve::Allocated, Curve::Reserved, Curve::Cache].map(|c| curve(d, c));
    let pyramids: Vec<_> = [&curves.allocated, &curves.reserved, &curves.cache]
        .into_iter()
        .flatten()
        .collect();
    let (start, end) = (data.rec.meta.start_ns, data.rec.meta.end_ns);
    println!(
        "\n| zoom | visible | pyramid median (min) ms | linear walk median (min) ms | linear / pyramid |"
    );
    println!("|---|---|---|---|---|");
    for zoom in [1i64, 10, 100, 1_000, 10_000] {
        let span = (end - start) / zoom;
        let mid = start + (end - start) / 2;
        let (a, b) = (mid - span / 2, mid + span / 2);
        let (mut p_ms, mut l_ms) = (Vec::new(), Vec::new());
        for _ in 0..QUERY_REPS {
            let t = Instant::now();
            for p in &pyramids {
                std::hint::black_box(p.column_ranges(a, b, columns));
            }
            p_ms.push(ms_since(t));
            let t = Instant::now();
            for c in &linear {
                std::hint::black_box(column_ranges(c, a, b, columns));
            }
            l_ms.push(ms_since(t));
        }
        let (pm, pmin, _, _) = stats(&p_ms);
        let (lm, lmin, _, _) = stats(&l_ms);
        let visible = super::units::format_duration_ns(span as f64);
        println!(
            "| {zoom}× | {visible} | {pm:.3} ({pmin:.3}) | {lm:.3} ({lmin:.3}) | {:.1}× |",
            lm / pm.max(1e-9)
        );
    }
}

/// What the worker thread computes on a click or a selection, timed (median of 3): the
/// table of a range, an inspection at the peak, the spans of the busiest op.
fn analysis_jobs(data: &Arc<Loaded>, device: u16, peak_ns: i64) {
    use super::jobs::{Job, Request, run_now};
    let (start, end) = (data.rec.meta.start_ns, data.rec.meta.end_ns);
    let tenth = collector::analysis::TimeWindow {
        start_ns: start + (end - start) * 4 / 10,
        end_ns: start + (end - start) / 2,
    };
    let whole = collector::analysis::TimeWindow {
        start_ns: start,
        end_ns: end,
    };
    let busiest = data
        .rows
        .iter()
        .max_by_key(|r| r.calls)
        .map_or(String::new(), |r| r.name.clone());
    let jobs = [
        ("table of 10% of the run", Job::Table { window: tenth }),
        (
            "table of the whole run (as a range)",
            Job::Table { window: whole },
        ),
        (
            "inspection at the peak (live groups, fragmentation, segments)",
            Job::Inspect {
                device,
                at_ns: peak_ns,
                at_snapshot: false,
                simulate: None,
            },
        ),
        ("spans of the busiest op", Job::OpSpans { name: busiest }),
    ];
    println!("\n| analysis on the worker thread | median ms | min ms |");
    println!("|---|---|---|");
    for (name, job) in jobs {
        let times: Vec<f64> = (0..3)
            .map(|_| {
                let request = Request {
                    doc: 0,
                    generation: 0,
                    data: data.clone(),
                    job: job.clone(),
                };
                run_now(request).elapsed.as_secs_f64() * 1e3
            })
            .collect();
        let (m, min, _, _) = stats(&times);
        println!("| {name} | {m:.0} | {min:.0} |");
    }
}

/// A session of wheel zooms and drags at several points: each frame timed, the egui pass
/// (layout and all our painting) and tessellation separately.
fn session(h: &mut Harness<'_, ViewerApp>, plot: Rect) {
    let (mut pass_ms, mut tess_ms) = (Vec::new(), Vec::new());
    let mut by_zoom: Vec<(f64, f64)> = Vec::new();
    let duration = h.state().active_doc().expect("doc").data.duration_ns() as f64;
    for k in 0..4 {
        let at = pos2(
            plot.left() + plot.width() * (0.2 + 0.2 * k as f32),
            plot.center().y,
        );
        let gestures = (0..60)
            .map(|_| (true, 50.0))
            .chain((0..40).map(|i| (false, if i < 20 { -30.0 } else { 30.0 })))
            .chain((0..60).map(|_| (true, -50.0)));
        for (zoom, amount) in gestures {
            h.event(Event::PointerMoved(at));
            if zoom {
                h.event(Event::MouseWheel {
                    unit: MouseWheelUnit::Point,
                    delta: vec2(0.0, amount),
                    phase: TouchPhase::Move,
                    source: MouseWheelSource::Unknown,
                    modifiers: Modifiers::NONE,
                });
            } else {
                let to = at + vec2(amount, 0.0);
                h.event(primary(at, true));
                h.event(Event::PointerMoved(to));
                h.event(primary(to, false));
            }
            let t = Instant::now();
            h.step();
            pass_ms.push(ms_since(t));
            let shapes = h.output().shapes.clone();
            let t = Instant::now();
            std::hint::black_box(h.ctx.tessellate(shapes, 1.0));
            tess_ms.push(ms_since(t));
            let span = h.state().active_doc().expect("doc").view.span_ns();
            by_zoom.push((
                duration / span,
                pass_ms.last().copied().unwrap_or(0.0) + tess_ms.last().copied().unwrap_or(0.0),
            ));
        }
    }
    let total: Vec<f64> = pass_ms.iter().zip(&tess_ms).map(|(a, b)| a + b).collect();
    println!("\n| per frame, ms | frames | median | min | p95 | max |");
    println!("|---|---|---|---|---|---|");
    for (name, v) in [
        ("egui pass (layout + our painting)", &pass_ms),
        ("tessellation", &tess_ms),
        ("frame (CPU)", &total),
    ] {
        let (m, min, p95, max) = stats(v);
        println!(
            "| {name} | {} | {m:.2} | {min:.2} | {p95:.2} | {max:.2} |",
            v.len()
        );
    }
    println!("\n| zoom reached | frames | median frame ms | max ms |");
    println!("|---|---|---|---|");
    for (lo, hi) in [(0.0, 3.0), (3.0, 30.0), (30.0, 300.0), (300.0, f64::MAX)] {
        let v: Vec<f64> = by_zoom
            .iter()
            .filter(|z| z.0 >= lo && z.0 < hi)
            .map(|z| z.1)
            .collect();
        if !v.is_empty() {
            let (m, _, _, max) = stats(&v);
            println!(
                "| {lo:.0}×–{} | {} | {m:.2} | {max:.2} |",
                if hi == f64::MAX {
                    "…".into()
                } else {
                    format!("{hi:.0}×")
                },
                v.len()
            );
        }
    }
}

/// The same query on synthetic step curves of 1 M to 20 M points (a random walk with
/// several events per µs, like a long traced run), whole curve in view: where the linear
/// walk grows with the points and the pyramid does not.
fn synthetic_scaling(columns: usize) {
    println!(
        "\n| points | pyramid median (min) ms | linear walk median (min) ms | linear / pyramid |"
    );
    println!("|---|---|---|---|");
    for n in [1_000_000usize, 5_000_000, 20_000_000] {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut t, mut v) = (0i64, 1i64 << 30);
        let points: Vec<(i64, i64)> = (0..n)
            .map(|_| {
                t += (next() % 400) as i64;
                v = (v + (next() % 2_000_001) as i64 - 1_000_000).max(0);
                (t, v)
            })
            .collect();
        let pyramid = collector::analysis::pyramid::CurvePyramid::build(&points);
        let (a, b) = (0, t);
        let (mut p_ms, mut l_ms) = (Vec::new(), Vec::new());
        for _ in 0..40 {
            let started = Instant::now();
            std::hint::black_box(pyramid.column_ranges(a, b, columns));
            p_ms.push(ms_since(started));
            let started = Instant::now();
            std::hint::black_box(column_ranges(&points, a, b, columns));
            l_ms.push(ms_since(started));
        }
        let (pm, pmin, _, _) = stats(&p_ms);
        let (lm, lmin, _, _) = stats(&l_ms);
        println!(
            "| {n} | {pm:.3} ({pmin:.3}) | {lm:.3} ({lmin:.3}) | {:.0}× |",
            lm / pm.max(1e-9)
        );
    }
}
