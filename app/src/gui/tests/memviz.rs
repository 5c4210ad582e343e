//! What the viewer shows as memory_viz does, driven as a user would: segments coloured by
//! owner with private pools named, the allocator's history and the program's notes as
//! markers, NVTX ranges as lanes, every device as a small multiple, and a recording
//! followed while it is written. Expected numbers come from the fixtures' generators
//! (`graphs.truth.json`, `cuda-memory.rows.json`) or the real files' own contents.

use std::io::Write;
use std::time::{Duration, Instant};

use egui::{Event, Modifiers, MouseWheelSource, MouseWheelUnit, Pos2, TouchPhase, pos2, vec2};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use super::super::ViewerApp;
use super::super::doc::Document;
use super::super::panels::PanelId;
use super::super::panels::SegmentColor;
use super::super::timeline::LANE_MIN_ROW_HEIGHT;
use super::layout::{LARGE, SMALL, harness_sized, layout_faults, texts};
use super::{fixture, harness, primary, repo, settle};

fn rec_name(d: &Document, op: u32) -> &str {
    d.data
        .rec
        .op_name(d.data.rec.ops.get(op as usize).expect("an op"))
}

fn doc<'a>(h: &'a Harness<'_, ViewerApp>) -> &'a Document {
    h.state().active_doc().expect("a document")
}

/// The screen x of absolute time `at_ns` on the main plot.
fn x_of(d: &Document, at_ns: i64) -> f32 {
    let plot = d.timeline.last_plot_rect.expect("plot drawn");
    let f = (d.rel_ns(at_ns) - d.view.t0_ns) / d.view.span_ns();
    plot.left() + f as f32 * plot.width()
}

/// Hover `at` long enough for a tooltip to show.
fn hover(h: &mut Harness<'_, ViewerApp>, at: Pos2) {
    h.event(Event::PointerMoved(at));
    h.run_steps(60);
}

#[derive(serde::Deserialize)]
struct GraphsTruth {
    private_pool_segments: Vec<u64>,
    segments: usize,
    notes: Vec<(i64, String)>,
    segment_allocs: usize,
    annotations: usize,
}

fn graphs_truth() -> GraphsTruth {
    let text = std::fs::read(fixture("snapshot/graphs.truth.json")).expect("truth");
    serde_json::from_slice(&text).expect("truth json")
}

#[test]
fn segments_at_the_snapshot_are_coloured_by_owner_and_private_pools_named() {
    let truth = graphs_truth();
    let mut h = harness(vec![fixture("snapshot/graphs.pickle")]);
    settle(&mut h);
    // WHEN the snapshot's instant is inspected and the Segments tab shown
    h.get_by_label("Segments").click();
    h.run_steps(3);
    h.get_by_label("Snapshot").click();
    h.run_steps(2);
    settle(&mut h);
    let d = doc(&h);
    assert_eq!(d.tab, PanelId::SEGMENTS);
    let result = d.panels.inspect.result.as_ref().expect("inspected");
    let layout = result.layout.as_ref().expect("segments");
    // THEN every segment of the generator is there, its private pool's ones named so
    assert_eq!(layout.len(), truth.segments);
    let mut private: Vec<u64> = layout
        .iter()
        .filter(|s| s.private_pool == Some((1, 0)))
        .map(|s| s.addr)
        .collect();
    private.sort_unstable();
    assert_eq!(private, truth.private_pool_segments);
    assert!(
        h.query_all_by_label_contains("private pool (1, 0)").count() >= 1,
        "no row names the private pool"
    );
    // and, coloured by stack (the default), the legend names the graph's allocation site
    // (the generator's frames_for(site 10): fn_10_0 in model.py, line 80)
    assert_eq!(doc(&h).panels.segments.color, SegmentColor::Stack);
    assert!(h.query_all_by_label_contains("model.py:80 fn_10_0").count() >= 1);
    // WHEN colouring by category THEN the legend names categories instead
    h.get_by_label("category").click();
    h.run_steps(3);
    assert_eq!(doc(&h).panels.segments.color, SegmentColor::Category);
    assert_eq!(
        h.query_all_by_label_contains("model.py:80 fn_10_0").count(),
        0
    );
}

#[test]
fn the_allocator_history_and_the_programs_notes_are_markers_with_their_text() {
    let truth = graphs_truth();
    let mut h = harness(vec![fixture("snapshot/graphs.pickle")]);
    settle(&mut h);
    let d = doc(&h);
    let markers = &d.data.markers[d.device as usize];
    use collector::analysis::markers::MarkerKind;
    let count = |f: fn(&MarkerKind) -> bool| markers.iter().filter(|m| f(&m.kind)).count();
    assert_eq!(
        count(|k| matches!(k, MarkerKind::SegmentAlloc { .. })),
        truth.segment_allocs
    );
    assert_eq!(
        count(|k| matches!(k, MarkerKind::Annotation { .. })),
        truth.annotations
    );
    let notes: Vec<(i64, String)> = d
        .data
        .rec
        .notes
        .iter()
        .map(|n| (n.time_ns / 1000, d.data.rec.strings.get(n.text).to_owned()))
        .collect();
    assert_eq!(notes, truth.notes);
    // WHEN the pointer rests on the first note's marker THEN its text shows
    let at = pos2(
        x_of(d, truth.notes[0].0 * 1000),
        d.timeline.last_plot_rect.expect("plot").top() + 7.0,
    );
    hover(&mut h, at);
    assert!(
        h.query_all_by_label_contains("capture: graph 1").count() >= 1,
        "no hover with the note's text"
    );
}

#[test]
fn nsight_memory_rows_are_charted_and_nvtx_ranges_are_lanes() {
    let mut h = harness(vec![fixture("nsight/cuda-memory.sqlite")]);
    settle(&mut h);
    let d = doc(&h);
    // The chart's curve is the reserved memory of the Device-kind rows (cuda:0 in the
    // rows file: +2 +20 −2 +64 −20 +2 MiB then −64 at the end: peak 84 MiB).
    let curves = &d.data.curves[d.device as usize];
    assert_eq!(d.data.device_name(d.device), "cuda:0");
    assert_eq!(
        curves.reserved.as_ref().and_then(|c| c.max()),
        Some(84 << 20)
    );
    // The hint is nsys's where there is nothing to chart, never torch's.
    assert_eq!(h.query_all_by_label_contains("profile_memory").count(), 0);
    // NVTX lanes: fx.step holds fx.forward, which is drawn one row deeper.
    let rec = &d.data.rec;
    let row_of = |name: &str| {
        d.data
            .lanes
            .iter()
            .find(|r| {
                r.spans
                    .iter()
                    .any(|&i| rec.op_name(rec.ops.get(i as usize).expect("an op")) == name)
            })
            .map(|r| (r.thread, r.depth))
    };
    let (step_thread, step_depth) = row_of("fx.step").expect("fx.step in a lane");
    assert_eq!(row_of("fx.forward"), Some((step_thread, step_depth + 1)));
    // fx.autograd runs on thread A (its own lane, at the top), fx.prefetch on W.
    let (autograd_thread, autograd_depth) = row_of("fx.autograd").expect("a lane");
    assert_ne!(autograd_thread, step_thread);
    assert_eq!(autograd_depth, 0);
    // WHEN the pointer rests on the first fx.step (0 to 1000 µs after t0 in the rows
    // file: 1 ms long) in its lane THEN its name and duration show
    let step = rec
        .ops
        .iter()
        .find(|o| rec.op_name(o) == "fx.step")
        .expect("fx.step");
    let (start, end) = (step.start_ns, step.end_ns);
    assert_eq!(end - start, 1_000_000);
    // Zoom onto it so it is wide.
    let span = (end - start) as f64;
    let view = super::super::doc::TimeView {
        t0_ns: d.rel_ns(start) - span,
        t1_ns: d.rel_ns(end) + span,
    };
    h.state_mut().docs_mut()[0].view = view;
    h.run_steps(3);
    let d = doc(&h);
    // The lanes where they were drawn, rows of the drawn height after a 2-point margin.
    let (lanes, fit) = d.timeline.last_lanes.expect("lanes drawn");
    let row = d
        .data
        .lanes
        .iter()
        .position(|r| r.spans.iter().any(|&i| rec_name(d, i) == "fx.step"))
        .expect("row");
    assert!(row < fit.rows, "fx.step's row {row} drawn: {fit:?}");
    let y = lanes.top() + 2.0 + (row as f32 + 0.5) * fit.row_height;
    let x = (x_of(d, start) + x_of(d, end)) / 2.0;
    hover(&mut h, pos2(x, y));
    // (the table lists fx.step too: the hover's text is the name over the duration)
    let found = h.query_all_by_label_contains("1000 µs · from").count() >= 1;
    assert!(found, "no hover names fx.step and its 1000 µs");
}

#[test]
fn every_nvtx_lane_row_is_drawn_at_1000x700() {
    // Five rows (two threads, nested ranges): at 1000×700 they shrink instead of being
    // left out ("3 more rows not shown"), each thread's name is drawn, nothing overlaps.
    let nsys_cpu = repo().join("../shared/traces/nsys-cpu/run.sqlite");
    for (path, rows) in [
        (fixture("nsight/cuda-memory.sqlite"), Some(5)),
        (nsys_cpu, None),
    ] {
        for size in [SMALL, LARGE] {
            let mut h = harness_sized(vec![path.clone()], size);
            settle(&mut h);
            let d = &h.state().docs()[0];
            let lanes = &d.data.lanes;
            if let Some(rows) = rows {
                assert_eq!(lanes.len(), rows, "{}", path.display());
            }
            let (area, fit) = d.timeline.last_lanes.expect("lanes drawn");
            assert_eq!(
                fit.rows,
                lanes.len(),
                "{} at {size:?}: {fit:?}",
                path.display()
            );
            assert!(fit.row_height >= LANE_MIN_ROW_HEIGHT, "{fit:?}");
            assert!(area.bottom() <= size.y, "{area:?}");
            let names: Vec<String> = lanes
                .iter()
                .filter(|r| r.depth == 0)
                .map(|r| thread_name(&d.data.rec, r.thread))
                .collect();
            let drawn = texts(&h);
            for name in &names {
                assert!(
                    drawn.iter().any(|t| t.text == *name
                        && area.y_range().contains(t.full.center().y)
                        && !t.cut()),
                    "{name:?} beside the lanes at {size:?}"
                );
            }
            assert!(!drawn.iter().any(|t| t.text.contains("not shown")));
            let faults = layout_faults(&h, size);
            assert!(faults.is_empty(), "at {size:?}:\n{}", faults.join("\n"));
        }
    }
}

#[test]
fn lanes_that_do_not_fit_scroll_under_the_wheel_and_the_time_axis_keeps_its_zoom() {
    // GIVEN a window too short for the Nsight fixture's five NVTX rows at 12 points
    let path = fixture("nsight/cuda-memory.sqlite");
    let mut short = None;
    for height in (400..=680).rev().step_by(20) {
        let mut h = harness_sized(vec![path.clone()], vec2(1000.0, height as f32));
        settle(&mut h);
        let (_, fit) = doc(&h).timeline.last_lanes.expect("lanes drawn");
        if fit.rows < doc(&h).data.lanes.len() {
            short = Some(h);
            break;
        }
    }
    let mut h = short.expect("a window height where the rows do not all fit");
    let (area, fit) = doc(&h).timeline.last_lanes.expect("lanes drawn");
    let (total, view) = (doc(&h).data.lanes.len(), doc(&h).view);
    // THEN the note says which rows are drawn
    let says = |h: &Harness<'_, ViewerApp>, note: &str| {
        texts(h)
            .iter()
            .any(|t| t.text.starts_with(note) && !t.cut())
    };
    assert!(says(&h, &format!("rows 1–{} of {total}", fit.rows)));
    // WHEN the wheel turns over the lanes (content moving up: towards the last rows)
    let wheel = |h: &mut Harness<'_, ViewerApp>, dy: f32| {
        h.event(Event::PointerMoved(area.center()));
        for _ in 0..10 {
            h.event(Event::MouseWheel {
                unit: MouseWheelUnit::Point,
                delta: vec2(0.0, dy),
                phase: TouchPhase::Move,
                source: MouseWheelSource::Unknown,
                modifiers: Modifiers::NONE,
            });
            h.step();
        }
        h.run_steps(10);
    };
    wheel(&mut h, -50.0);
    // THEN the last rows are drawn, the top one with its thread's name, the note says so,
    // and the time axis kept its zoom
    let first = total - fit.rows;
    let d = doc(&h);
    assert_eq!(d.timeline.lanes_scroll_rows.round() as usize, first);
    assert_eq!(d.view, view);
    let name = thread_name(&d.data.rec, d.data.lanes[first].thread);
    assert!(
        texts(&h)
            .iter()
            .any(|t| t.text == name && area.y_range().contains(t.full.center().y)),
        "{name:?} beside the top row"
    );
    assert!(says(&h, &format!("rows {}–{total} of {total}", first + 1)));
    // WHEN the wheel turns back THEN the first rows again
    wheel(&mut h, 50.0);
    assert_eq!(doc(&h).timeline.lanes_scroll_rows, 0.0);
    assert_eq!(doc(&h).view, view);
    assert!(says(&h, &format!("rows 1–{} of {total}", fit.rows)));
}

/// A lane's label: its thread's name, else its id (as the lanes draw it, names here are
/// short).
fn thread_name(rec: &collector::Recording, thread: collector::model::ThreadIdx) -> String {
    rec.threads
        .get(thread as usize)
        .map_or_else(String::new, |t| {
            t.name.clone().unwrap_or_else(|| t.tid.clone())
        })
}

#[test]
fn every_device_is_a_small_multiple_and_a_click_selects_it() {
    // A real trace with two devices (the CPU and cuda:0), then a snapshot of three GPUs.
    let real = repo().join(
        "../shared/traces/real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz",
    );
    for path in [real, fixture("snapshot/multi_gpu.pickle")] {
        let mut h = harness(vec![path.clone()]);
        settle(&mut h);
        let d = doc(&h);
        let devices = d.data.shown_devices.clone();
        assert!(devices.len() >= 2, "{}: {devices:?}", path.display());
        let shown = d.device;
        let other = *devices.iter().find(|&&x| x != shown).expect("another");
        let n = devices.iter().position(|&x| x == other).expect("listed");
        // WHEN the other device's multiple is clicked (multiples sit above the plot, a
        // row each, under the toolbar)
        let plot = d.timeline.last_plot_rect.expect("plot");
        let (area, fit) = d.timeline.last_multiples.expect("multiples drawn");
        assert_eq!(fit.rows, devices.len(), "{}", path.display());
        let at = pos2(
            plot.center().x,
            area.top() + 2.0 + (n as f32 + 0.5) * fit.row_height,
        );
        h.event(Event::PointerMoved(at));
        h.run_steps(2);
        // THEN the linked cursor is the time under the pointer, in the main plot too
        let hover_ns = doc(&h).hover_ns.expect("linked cursor");
        let d = doc(&h);
        let expected =
            d.view.t0_ns + (at.x - plot.left()) as f64 / plot.width() as f64 * d.view.span_ns();
        assert!((hover_ns - expected).abs() <= d.view.span_ns() / plot.width() as f64 * 2.0);
        h.event(primary(at, true));
        h.event(primary(at, false));
        h.run_steps(3);
        settle(&mut h);
        assert_eq!(doc(&h).device, other, "{}", path.display());
    }
}

/// Lines of a recording as `record` writes them: a header, then samples of two GPUs.
fn header(start_unix_ns: i64) -> String {
    format!(
        "{{\"vramscope_recording\":1,\"start_unix_ns\":{start_unix_ns},\"command\":[\"python\",\"train.py\"],\"host\":\"h\",\"pid\":1,\"interval_ms\":100,\"driver_version\":null,\"nvml_version\":null,\"nvml_unavailable\":null,\"devices\":[{{\"index\":0,\"name\":\"NVIDIA H200\",\"total_bytes\":150754820096,\"uuid\":\"GPU-0\"}}],\"vramscope_version\":\"0.1.0\"}}\n"
    )
}

fn sample_line(t_ns: i64, used: i64) -> String {
    format!(
        "{{\"t_ns\":{t_ns},\"gpus\":[{{\"index\":0,\"used\":{used},\"total\":150754820096,\"procs\":null}}],\"rss\":1000000}}\n"
    )
}

/// Step until `done` or 10 s passed; whether it became true.
fn step_until(h: &mut Harness<'_, ViewerApp>, done: impl Fn(&Document) -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        h.step();
        if done(doc(h)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_recording_still_written_is_followed_until_it_ends() {
    let dir = std::env::temp_dir().join(format!("vramscope-follow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("live.vsr");
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as i64;
    let mut file = std::fs::File::create(&path).expect("file");
    file.write_all(header(start).as_bytes()).expect("write");
    for i in 0..3 {
        file.write_all(sample_line(i * 100_000_000, (1 + i) << 30).as_bytes())
            .expect("write");
    }
    file.flush().expect("flush");
    let mut h = harness(vec![path.clone()]);
    settle(&mut h);
    assert_eq!(doc(&h).data.rec.gpu_samples.len(), 3);
    assert!(
        doc(&h).follow.is_some(),
        "an unfinished recording is followed"
    );
    assert!(h.query_all_by_label_contains("following").count() >= 1);
    // WHEN the writer appends two samples THEN the viewer shows them soon
    for i in 3..5 {
        file.write_all(sample_line(i * 100_000_000, (1 + i) << 30).as_bytes())
            .expect("write");
    }
    file.flush().expect("flush");
    assert!(step_until(&mut h, |d| d.data.rec.gpu_samples.len() == 5));
    assert_eq!(doc(&h).data.rec.gpu_samples[4].used_bytes, 5 << 30);
    // WHEN the first sample's bytes change in place (no writer does that) and a sample is
    // appended THEN the viewer shows the new sample and still the old first one: it read
    // only what was appended, not the whole file again
    let first = header(start).len() as u64
        + sample_line(0, 1 << 30).find("1073741824").expect("used") as u64;
    {
        use std::io::{Seek, SeekFrom};
        let mut again = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        again.seek(SeekFrom::Start(first)).expect("seek");
        again.write_all(b"1073741825").expect("write");
    }
    file.write_all(sample_line(5 * 100_000_000, 6 << 30).as_bytes())
        .expect("write");
    file.flush().expect("flush");
    assert!(step_until(&mut h, |d| d.data.rec.gpu_samples.len() == 6));
    let shown = &doc(&h).data.rec.gpu_samples;
    assert_eq!(
        (shown[0].used_bytes, shown[5].used_bytes),
        (1 << 30, 6 << 30)
    );
    // and the timeline's NVML curve reaches the new sample's 6 GiB
    let d = doc(&h);
    let nvml = d.data.curves[d.device as usize]
        .nvml_used
        .as_ref()
        .expect("nvml curve");
    assert_eq!(nvml.max(), Some(6 << 30));
    // WHEN the end line arrives THEN following stops, and says why
    file.write_all(b"{\"t_ns\":600000000,\"end\":{\"exit_code\":0,\"signal\":null}}\n")
        .expect("write");
    file.flush().expect("flush");
    assert!(step_until(&mut h, |d| d
        .follow
        .as_ref()
        .is_some_and(|f| f.stopped.is_some())));
    h.run_steps(2);
    assert!(
        h.query_all_by_label_contains("recording is complete")
            .count()
            >= 1
    );
    drop(file);
    let _ = std::fs::remove_dir_all(&dir);
}
