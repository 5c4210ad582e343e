//! The allocation view's Cached mode (memory_viz's Active Cached Memory Timeline) driven
//! like a user would on a real CS336 allocator snapshot: the Cached button draws one band
//! per segment (the collector's segment list), hovering a segment reads out its size and the bytes in use in it (counted here
//! from the allocations by address), a click selects it and the details show it, Esc
//! clears; and a profiler trace, which records no segments, says how to record them.

use collector::analysis::allocations::segment_lives;
use egui::{Event, Key, Pos2};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use super::super::ViewerApp;
use super::super::allocations::{NO_ALLOCATIONS, NO_SEGMENTS};
use super::super::units;
use super::allocations::band_middle;
use super::{click_at, fixture, harness, repo, settle};

fn real_snapshot() -> std::path::PathBuf {
    repo().join("../shared/traces/real/snapshot-cs336-bcrafton/memory_snapshot.pickle")
}

/// `path` open on the Allocations tab in the main area, in the Cached mode.
fn cached(path: std::path::PathBuf) -> Harness<'static, ViewerApp> {
    let mut h = harness(vec![path]);
    settle(&mut h);
    h.get_by_label("Allocations").click();
    h.run_steps(3);
    h.get_by_label("main area").click();
    h.run_steps(3);
    let active = h
        .state()
        .active_doc()
        .expect("doc")
        .panels
        .allocations
        .last_frame;
    assert_eq!(active.segments, 0, "the Active mode draws allocations");
    h.get_by_label("Cached").click();
    h.run_steps(4);
    h
}

#[test]
fn the_cached_mode_draws_a_band_for_each_segment() {
    let h = cached(real_snapshot());
    let doc = h.state().active_doc().expect("doc");
    assert!(doc.panels.allocations.cached);
    let rec = &doc.data.rec;
    let d = &doc.data.timeline.devices[doc.device as usize];
    let lives = segment_lives(rec, d);
    // The snapshot's 96 segments, all made before its history and held to the end.
    assert_eq!(lives.len(), 96);
    // Every one is in view, the whole run: each is drawn, one under a pixel a pixel tall.
    let frame = doc.panels.allocations.plot.expect("drawn");
    let bytes_per_point = (frame.y1 - frame.y0) / frame.rect.height() as f64;
    let thin = lives
        .iter()
        .filter(|l| (l.bytes as f64) < bytes_per_point)
        .count();
    assert!(thin > 0, "some segments are under a pixel");
    assert_eq!(doc.panels.allocations.last_frame.segments, lives.len());
    // The stack's top is the reserved total: the plot's scale is set by it.
    let reserved = d.points.iter().filter_map(|p| p.reserved_bytes.get()).max();
    assert_eq!(doc.panels.allocations.last_frame.reserved_max, reserved);
    h.get_by_label_contains("96 of 96 segments drawn");
    // What each is filled with: its bytes in use, also where its blocks were all there
    // before the history began (the weights: a curve of one point, once drawn as empty).
    let bands = bands_of(doc);
    let cache = bands.cache.as_ref().expect("segments");
    let start = d.points.first().expect("events").time_ns;
    let mut full_from_the_start = 0;
    for (s, (l, drawn)) in lives.iter().zip(&bands.in_use).enumerate() {
        let used = cache.in_use_at(d, s, start);
        let drawn = drawn.as_ref().map_or(0, |c| c.at(start));
        assert_eq!(drawn, used, "segment {s}");
        full_from_the_start += usize::from(used == l.bytes);
    }
    assert!(full_from_the_start > 0);
}

/// The shown device's bands.
fn bands_of(
    doc: &super::super::doc::Document,
) -> std::sync::Arc<super::super::allocations::DeviceBands> {
    doc.data.curves[doc.device as usize]
        .bands
        .clone()
        .expect("bands")
}

/// The largest segment and a point in the middle of its band.
fn largest_segment(h: &Harness<'_, ViewerApp>) -> (usize, i64, Pos2) {
    let doc = h.state().active_doc().expect("doc");
    let d = &doc.data.timeline.devices[doc.device as usize];
    let lives = segment_lives(&doc.data.rec, d);
    let (s, l) = (lives.iter().enumerate())
        .max_by_key(|(_, l)| l.bytes)
        .expect("segments");
    let bands = bands_of(doc);
    let cache = bands.cache.as_ref().expect("segments");
    let end = d.points.last().expect("events").time_ns;
    let t = l.span.start_ns + (l.span.end_ns.unwrap_or(end) - l.span.start_ns) / 2;
    let pos = band_middle(doc, &cache.layout, &cache.timeline, (s, l.bytes), t);
    (s, l.bytes, pos)
}

#[test]
fn hovering_a_segment_reads_out_its_size_and_the_bytes_in_use_in_it() {
    let mut h = cached(real_snapshot());
    let (s, bytes, pos) = largest_segment(&h);
    h.event(Event::PointerMoved(pos));
    h.run_steps(2);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.allocations.hovered_segment, Some(s));
    let text = doc.panels.allocations.readout.clone().expect("a readout");
    assert!(
        text.starts_with(&format!("segment of {}", units::bytes(bytes))),
        "{text}"
    );
    // The bytes in use then: the allocations live then whose addresses lie in it.
    let d = &doc.data.timeline.devices[doc.device as usize];
    let l = &segment_lives(&doc.data.rec, d)[s];
    let addr = l.addr.expect("an address");
    let frame = doc.panels.allocations.plot.expect("drawn");
    let t = doc.data.rec.meta.start_ns + frame.t_at(pos.x).round() as i64;
    let in_use: i64 = d
        .live_at(t)
        .filter(|a| a.addr >= addr && a.addr < addr + bytes as u64)
        .map(|a| a.bytes)
        .sum();
    assert!(in_use > 0);
    let said = format!("in use then: {} of it", units::bytes(in_use));
    assert!(text.contains(&said), "{text} says {said}");
    assert!(text.contains("made before the history began → held to the end"));
}

#[test]
fn a_click_selects_a_segment_and_the_details_show_it_and_esc_clears_it() {
    let mut h = cached(real_snapshot());
    let (s, bytes, pos) = largest_segment(&h);
    click_at(&mut h, pos);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.allocations.selected_segment, Some(s));
    let d = &doc.data.timeline.devices[doc.device as usize];
    let l = &segment_lives(&doc.data.rec, d)[s];
    let title = format!(
        "segment of {} at {:#x}",
        units::bytes(bytes),
        l.addr.expect("an address")
    );
    h.get_by_label(&title);
    h.get_by_label("before the history began");
    h.get_by_label("held to the end");
    h.get_by_label(&l.stream.expect("a stream").to_string());
    h.key_press(Key::Escape);
    h.run_steps(3);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.allocations.selected_segment, None);
    assert!(h.query_by_label(&title).is_none());
}

#[test]
fn a_profiler_trace_without_segments_says_how_to_record_them() {
    let trace = repo().join(
        "../shared/traces/real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
    );
    let h = cached(trace);
    let doc = h.state().active_doc().expect("doc");
    assert!(doc.panels.allocations.cached);
    assert_eq!(doc.panels.allocations.last_frame.segments, 0);
    h.get_by_label(NO_SEGMENTS);
}

#[test]
fn an_nsight_export_shows_its_segments_in_the_cached_mode_alone() {
    // GIVEN an Nsight export: CUDA memory rows (the driver's allocations) and no tensors
    let mut h = harness(vec![fixture("nsight/cuda-memory.sqlite")]);
    settle(&mut h);
    assert!(
        h.query_by_label("Flame").is_none(),
        "no allocations to flame"
    );
    // WHEN its Allocations tab opens
    h.get_by_label("Allocations").click();
    h.run_steps(4);
    // THEN it shows the Cached mode, a band for each segment in view
    let doc = h.state().active_doc().expect("doc");
    assert!(doc.panels.allocations.cached);
    let d = &doc.data.timeline.devices[doc.device as usize];
    let lives = segment_lives(&doc.data.rec, d);
    let frame = doc.panels.allocations.plot.expect("drawn");
    let (t0, t1) = (
        doc.data.rec.meta.start_ns + frame.t0_ns as i64,
        doc.data.rec.meta.start_ns + frame.t1_ns as i64,
    );
    // (a point wide at least: its memory rows come over 6 ms of a 2.9 s view)
    let end = d.points.last().expect("events").time_ns;
    let ns_per_point = ((t1 - t0) as f64 / frame.rect.width() as f64) as i64;
    let in_view = lives
        .iter()
        .map(|l| (l.span.start_ns, l.span.end_ns.unwrap_or(end)))
        .filter(|&(from, to)| from <= t1 && to >= t0 && to - from >= ns_per_point)
        .count();
    assert!(in_view > 0 && in_view < lives.len(), "{in_view}");
    assert_eq!(doc.panels.allocations.last_frame.segments, in_view);
    // and hovering one says its use is not recorded, not that it was free
    let (_, bytes, pos) = largest_segment(&h);
    h.event(Event::PointerMoved(pos));
    h.run_steps(2);
    let doc = h.state().active_doc().expect("doc");
    let text = doc.panels.allocations.readout.clone().expect("a readout");
    assert!(
        text.starts_with(&format!("segment of {}", units::bytes(bytes))),
        "{text}"
    );
    assert!(text.contains(NO_ALLOCATIONS), "{text}");
}
