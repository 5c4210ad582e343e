//! Timed frames of the viewer on a big trace, in an egui_kittest harness (no display):
//! the per-frame CPU work of panning and zooming — the egui pass with all our painting,
//! plus tessellation — and, side by side, what the curve queries alone cost with the
//! pyramid and with the linear per-frame walk it replaces.
//!
//! Not a pass/fail test (timings are never asserted); run it by hand:
//!
//! ```text
//! VRAMSCOPE_BIG_TRACE=/tmp/viewer-bench/big-1g.json \
//!   cargo test --release -p vramscope frame_timings -- --ignored --nocapture
//! ```

use std::time::{Duration, Instant};

use collector::LoadOptions;
use collector::analysis::decimate::{Curve, column_ranges, curve};
use egui::{Event, MouseWheelUnit, PointerButton, Pos2, pos2, vec2};
use egui_kittest::Harness;

use super::ViewerApp;
use super::data::Loaded;

fn median_and_min(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (
        v.get(v.len() / 2).copied().unwrap_or(0.0),
        v.first().copied().unwrap_or(0.0),
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

/// One frame's input: wheel zoom at a point, or a drag step.
enum Gesture {
    Zoom(Pos2, f32),
    Pan(Pos2, f32),
}

#[test]
#[ignore = "a benchmark: needs VRAMSCOPE_BIG_TRACE and --release"]
fn frame_timings() {
    let Some(path) = std::env::var_os("VRAMSCOPE_BIG_TRACE") else {
        eprintln!("set VRAMSCOPE_BIG_TRACE to a trace");
        return;
    };
    let path = std::path::PathBuf::from(path);
    let ctx = egui::Context::default();
    let started = Instant::now();
    let app = ViewerApp::new(&ctx, None, vec![path.clone()], LoadOptions::default());
    let mut h = Harness::builder()
        .with_size([1600.0, 1000.0])
        .with_max_steps(u64::MAX)
        .build_ui_state(|ui, app: &mut ViewerApp| app.show(ui), app);
    // Frames drawn while loading: the window keeps drawing (this is what the user sees).
    let mut loading_frames = Vec::new();
    while h.state().busy() {
        let t = Instant::now();
        h.step();
        loading_frames.push(t.elapsed().as_secs_f64() * 1e3);
        std::thread::sleep(Duration::from_millis(20));
    }
    let load_s = started.elapsed().as_secs_f64();
    h.run_steps(3);
    let doc = h.state().active_doc().expect("loaded");
    let data: std::sync::Arc<Loaded> = doc.data.clone();
    let plot = doc.last_plot_rect.expect("plot");
    let d = doc.device as usize;
    println!(
        "file {} ({:.0} MB): load {load_s:.1} s (read {:.1} s, analyses {:.1} s), max RSS {:.0} MiB, {} memory events, {} ops, pyramids {:.1} MiB",
        path.display(),
        data.file_bytes as f64 / 1e6,
        data.parse_time.as_secs_f64(),
        data.analysis_time.as_secs_f64(),
        max_rss_mib(),
        data.rec.mem_events.len(),
        data.rec.ops.len(),
        data.pyramid_bytes() as f64 / (1 << 20) as f64
    );
    let (lm, lmin) = median_and_min(loading_frames.clone());
    println!(
        "frames while loading: {} frames, median {lm:.2} ms, min {lmin:.2} ms",
        loading_frames.len()
    );

    // A session: zoom in 3 decades at several points, pan across, zoom back out.
    let mut gestures = Vec::new();
    for k in 0..4 {
        let at = pos2(
            plot.left() + plot.width() * (0.2 + 0.2 * k as f32),
            plot.center().y,
        );
        gestures.extend((0..40).map(|_| Gesture::Zoom(at, 60.0)));
        gestures.extend((0..40).map(|i| Gesture::Pan(at, if i < 20 { -25.0 } else { 25.0 })));
        gestures.extend((0..40).map(|_| Gesture::Zoom(at, -60.0)));
    }
    let mut frame_ms = Vec::new();
    let mut tess_ms = Vec::new();
    let mut pyramid_ms = Vec::new();
    let mut linear_ms = Vec::new();
    let curves = data.curves.get(d).expect("curves");
    let timeline_device = data.timeline.devices.get(d).expect("device");
    let linear_points = [
        curve(timeline_device, Curve::Allocated),
        curve(timeline_device, Curve::Reserved),
    ];
    for g in &gestures {
        match *g {
            Gesture::Zoom(at, dy) => {
                h.event(Event::PointerMoved(at));
                h.event(Event::MouseWheel {
                    unit: MouseWheelUnit::Point,
                    delta: vec2(0.0, dy),
                    phase: egui::TouchPhase::Move,
                    source: egui::MouseWheelSource::Unknown,
                    modifiers: egui::Modifiers::NONE,
                });
            }
            Gesture::Pan(at, dx) => {
                h.event(Event::PointerMoved(at));
                h.event(Event::PointerButton {
                    pos: at,
                    button: PointerButton::Primary,
                    pressed: true,
                    modifiers: egui::Modifiers::NONE,
                });
                h.event(Event::PointerMoved(at + vec2(dx, 0.0)));
                h.event(Event::PointerButton {
                    pos: at + vec2(dx, 0.0),
                    button: PointerButton::Primary,
                    pressed: false,
                    modifiers: egui::Modifiers::NONE,
                });
            }
        }
        let t = Instant::now();
        h.step();
        frame_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let shapes = h.output().shapes.clone();
        let t = Instant::now();
        let prims = h.ctx.tessellate(shapes, 1.0);
        tess_ms.push(t.elapsed().as_secs_f64() * 1e3);
        drop(prims);
        // The curve queries of this frame, both ways, interleaved.
        let view = h.state().active_doc().expect("doc").view;
        let start = data.rec.meta.start_ns + view.t0_ns as i64;
        let end = data.rec.meta.start_ns + view.t1_ns as i64;
        let columns = plot.width() as usize;
        let t = Instant::now();
        for c in [&curves.allocated, &curves.reserved].into_iter().flatten() {
            std::hint::black_box(c.column_ranges(start, end, columns));
        }
        pyramid_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        for p in &linear_points {
            std::hint::black_box(column_ranges(p, start, end, columns));
        }
        linear_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let report = |name: &str, v: &[f64]| {
        let (m, min) = median_and_min(v.to_vec());
        let max = v.iter().copied().fold(0.0, f64::max);
        let p95 = {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            s.get(s.len() * 95 / 100).copied().unwrap_or(0.0)
        };
        println!(
            "| {name} | {} | {m:.2} | {min:.2} | {p95:.2} | {max:.2} |",
            v.len()
        );
    };
    println!("| per frame (ms) | frames | median | min | p95 | max |");
    println!("|---|---|---|---|---|---|");
    report("egui pass (layout + our painting)", &frame_ms);
    report("tessellation", &tess_ms);
    let total: Vec<f64> = frame_ms.iter().zip(&tess_ms).map(|(a, b)| a + b).collect();
    report("frame total (CPU)", &total);
    report("curve queries, pyramid", &pyramid_ms);
    report("curve queries, linear walk (baseline)", &linear_ms);
    let (pm, _) = median_and_min(pyramid_ms);
    let (lm, _) = median_and_min(linear_ms);
    println!("linear / pyramid (median): {:.0}x", lm / pm.max(1e-9));
}
