//! The allocation view and the icicle, driven like a user would on the CS336 allocator
//! snapshot (stacks on every allocation): hovering a band reads it out, a click selects it
//! and shows its stacks, Esc clears; a search's curve is the bytes of the matching
//! allocations, found here by walking the stacks directly; the icicle's top row spans
//! the allocated bytes at the cursor, as `live` counts them.

use collector::analysis::live::{GroupBy, frame_label, live_at};
use egui::{Event, Key, Modifiers, Pos2};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};

use super::super::ViewerApp;

use super::super::panels::PanelId;
use super::super::units;
use super::{click_at, harness, primary, repo, settle};

fn opened(tab: &str) -> Harness<'static, ViewerApp> {
    let mut h = harness(vec![
        repo().join("samples/cs336-transformer-snapshot.pickle"),
    ]);
    settle(&mut h);
    h.get_by_label(tab).click();
    h.run_steps(3);
    h
}

/// The largest allocation living at least a tenth of the run, and a point in the middle
/// of its band (half-way through its life, half-way up).
fn long_lived_band(h: &Harness<'_, ViewerApp>) -> (usize, Pos2) {
    long_lived(h, false)
}

/// [`long_lived_band`], among the allocations freed before the end when `freed`.
fn long_lived(h: &Harness<'_, ViewerApp>, freed: bool) -> (usize, Pos2) {
    let doc = h.state().active_doc().expect("doc");
    let d = &doc.data.timeline.devices[doc.device as usize];
    let end = d.points.last().expect("points").time_ns;
    let life = |a: &collector::timeline::Allocation| a.free_ns.get().unwrap_or(end) - a.alloc_ns;
    let (i, a) = d
        .allocations
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            life(a) >= doc.data.duration_ns() / 10 && (!freed || a.free_ns.get().is_some())
        })
        .max_by_key(|(_, a)| a.bytes)
        .expect("a long-lived allocation");
    let bands = doc.data.curves[doc.device as usize]
        .bands
        .clone()
        .expect("bands");
    let t = a.alloc_ns + life(a) / 2;
    (i, band_middle(doc, &bands.layout, d, (i, a.bytes), t))
}

/// Where band `i` (of `bytes`) of `layout` over `bands` is half-way up at `t`, on the plot
/// drawn last.
pub(super) fn band_middle(
    doc: &super::super::doc::Document,
    layout: &collector::analysis::allocations::BandLayout,
    bands: &collector::timeline::DeviceTimeline,
    (i, bytes): (usize, i64),
    t: i64,
) -> Pos2 {
    let frame = doc.panels.allocations.plot.expect("drawn");
    let offset = layout.offset_at(bands, i, t);
    Pos2::new(frame.x(doc.rel_ns(t)), frame.y((offset + bytes / 2) as f64))
}

#[test]
fn hovering_a_band_reads_out_its_size_op_and_lifetime() {
    let mut h = opened("Allocations");
    assert_eq!(
        h.state().active_doc().expect("doc").tab,
        PanelId::ALLOCATIONS
    );
    let (i, pos) = long_lived_band(&h);
    h.event(Event::PointerMoved(pos));
    h.run_steps(2);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.allocations.hovered, Some(i));
    let a = doc.data.timeline.devices[doc.device as usize].allocations[i];
    let text = doc.panels.allocations.readout.clone().expect("a readout");
    assert!(text.starts_with(&units::bytes(a.bytes)), "{text}");
    let life = units::format_duration_ns(a.free_ns.get().map_or(0, |f| f - a.alloc_ns) as f64);
    assert!(
        a.free_ns.get().is_none() || text.contains(&life),
        "{text} has {life}"
    );
}

#[test]
fn a_click_selects_a_band_and_shows_its_stacks_and_esc_clears_it() {
    let mut h = opened("Allocations");
    let (i, pos) = long_lived(&h, true);
    click_at(&mut h, pos);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.allocations.selected, Some(i));
    // The details name the allocation's innermost frame, as the recording has it.
    let rec = &doc.data.rec;
    let a = doc.data.timeline.devices[doc.device as usize].allocations[i];
    let stack = rec.stack(rec.mem_events[a.alloc_event as usize].stack);
    let first = frame_label(rec, stack.last().expect("a stack"));
    assert!(h.query_all_by_label(&first).count() >= 1, "{first} shown");
    assert!(h.query_by_label("allocation stack").is_some());
    // and the stack of its free, its lifetime, the ops that allocated and freed it (an
    // allocator snapshot has no ops: outside any)
    let free = a.free_ns.get().expect("a freed band");
    let free_event = rec
        .mem_events
        .iter()
        .position(|e| e.bytes < 0 && e.addr.get() == Some(a.addr) && e.time_ns == free)
        .expect("its free event");
    let free_stack = rec.stack(rec.mem_events[free_event].stack);
    let innermost = frame_label(rec, free_stack.last().expect("a free stack"));
    assert!(h.query_by_label("free stack").is_some());
    assert!(
        h.query_all_by_label(&innermost).count() >= 1,
        "{innermost} shown"
    );
    let origin = rec.meta.start_ns;
    let lifetime = format!(
        "{} → {} · lived {}",
        units::format_time_ns((a.alloc_ns - origin) as f64),
        units::format_time_ns((free - origin) as f64),
        units::format_duration_ns((free - a.alloc_ns) as f64)
    );
    assert!(h.query_by_label(&lifetime).is_some(), "{lifetime} shown");
    // A snapshot records no ops: no "allocated by" / "freed by" rows (issue 37).
    assert_eq!(h.query_all_by_label("(outside any op)").count(), 0);
    // The band stays highlighted: outlined in the highlight colour, also once the pointer
    // has left it.
    h.event(Event::PointerMoved(Pos2::new(5.0, 5.0)));
    h.run_steps(2);
    assert!(highlight_strokes(&h) >= 1, "the selected band outlined");
    h.event(Event::Key {
        key: Key::Escape,
        physical_key: None,
        pressed: true,
        repeat: false,
        modifiers: Modifiers::NONE,
    });
    h.run_steps(2);
    assert_eq!(
        h.state()
            .active_doc()
            .expect("doc")
            .panels
            .allocations
            .selected,
        None
    );
    assert_eq!(highlight_strokes(&h), 0, "Esc clears the outline");
}

/// Rectangles of the frame outlined in the highlight colour.
fn highlight_strokes(h: &Harness<'_, ViewerApp>) -> usize {
    let highlight = palette_of(h).highlight;
    h.output()
        .shapes
        .iter()
        .filter(|c| matches!(&c.shape, egui::Shape::Rect(r) if r.stroke.color == highlight && r.stroke.width == 1.5))
        .count()
}

#[test]
fn a_search_dims_the_rest_and_its_curve_is_the_bytes_of_the_matching_allocations() {
    let mut h = opened("Allocations");
    assert_eq!(dimmed_vertices(&h), 0, "nothing dimmed before a search");
    h.state_mut().docs_mut()[0].panels.allocations.query = "MODEL.py".into();
    h.run_steps(3);
    // The bands that do not match are drawn faint (4 vertices a rectangle).
    assert!(dimmed_vertices(&h) >= 4, "the rest dimmed");
    let doc = h.state().active_doc().expect("doc");
    let s = doc.panels.allocations.search.as_ref().expect("searched");
    let rec = &doc.data.rec;
    let d = &doc.data.timeline.devices[doc.device as usize];
    // Independently: allocations with a frame in a file named model.py (any case).
    let matching: Vec<bool> = d
        .allocations
        .iter()
        .map(|a| {
            let stack = rec.stack(rec.mem_events[a.alloc_event as usize].stack);
            stack
                .iter()
                .any(|f| rec.strings.get(f.file).to_lowercase().contains("model.py"))
        })
        .collect();
    let count = matching.iter().filter(|&&m| m).count();
    assert!(count > 0 && count < matching.len());
    assert_eq!(s.matches.count, count);
    let curve = s.curve.as_ref().expect("a curve");
    for p in d.points.iter().step_by(7) {
        let want: i64 = d
            .allocations
            .iter()
            .zip(&matching)
            .filter(|(a, m)| {
                **m && a.alloc_ns <= p.time_ns && a.free_ns.get().is_none_or(|f| f > p.time_ns)
            })
            .map(|(a, _)| a.bytes)
            .sum();
        assert_eq!(curve.value_at(p.time_ns).unwrap_or(0), want, "at {}", {
            p.time_ns
        });
    }
}

#[test]
fn the_icicle_spans_the_allocated_bytes_at_the_cursor_and_a_click_zooms() {
    let mut h = opened("Flame");
    let doc = h.state().active_doc().expect("doc");
    let (_, t, tree) = doc.panels.allocations.flame.clone().expect("a tree");
    let live = live_at(
        &doc.data.rec,
        &doc.data.timeline,
        doc.device,
        t,
        GroupBy::Stack,
    );
    let allocated = live.allocated_bytes.expect("allocated");
    assert_eq!(tree.root().expect("root").bytes, allocated);
    let placed = doc.panels.allocations.flame_placed.clone();
    let root = placed
        .iter()
        .find(|(id, _)| *id == 0)
        .expect("the root drawn")
        .1;
    // The root's children, drawn side by side, are as wide as the root: the bytes they
    // hold sum to the allocated total.
    let children: f32 = placed
        .iter()
        .filter(|(id, _)| tree.nodes[*id as usize].depth == 1)
        .map(|(_, r)| r.width())
        .sum();
    assert!(
        (children - root.width()).abs() <= 2.0,
        "{children} vs {}",
        root.width()
    );
    // A click on the widest child zooms into it: it then spans the width.
    let child = tree.root().expect("root").children[0];
    let rect = placed.iter().find(|(id, _)| *id == child).expect("drawn").1;
    h.event(Event::PointerMoved(rect.center()));
    h.run_steps(1);
    assert_eq!(
        h.state()
            .active_doc()
            .expect("doc")
            .panels
            .allocations
            .flame_hovered,
        Some(child)
    );
    h.event(primary(rect.center(), true));
    h.event(primary(rect.center(), false));
    h.run_steps(3);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.allocations.flame_zoom, Some(child));
    let now = doc
        .panels
        .allocations
        .flame_placed
        .iter()
        .find(|(id, _)| *id == child)
        .expect("drawn")
        .1;
    assert!((now.width() - root.width()).abs() <= 1.0);
}

/// The palette the harness draws with.
fn palette_of(h: &Harness<'_, ViewerApp>) -> super::super::theme::Palette {
    use super::super::theme::{Palette, ThemeChoice};
    Palette::for_theme(if h.ctx.theme() == egui::Theme::Dark {
        ThemeChoice::Dark
    } else {
        ThemeChoice::Light
    })
}

/// A dimmed band's alpha: 15 % of its opaque colour's (no other shape of the window has it).
const DIMMED_ALPHA: u8 = 38;

/// Vertices of the frame's meshes drawn as dimmed bands.
fn dimmed_vertices(h: &Harness<'_, ViewerApp>) -> usize {
    h.output()
        .shapes
        .iter()
        .filter_map(|c| match &c.shape {
            egui::Shape::Mesh(m) => Some(
                m.vertices
                    .iter()
                    .filter(|v| v.color.a() == DIMMED_ALPHA)
                    .count(),
            ),
            _ => None,
        })
        .sum()
}

/// The allocation each band rectangle of the frame shows, with its colour: the plain
/// (untextured) quads of the last mesh drawn on the plot (the bands come after the grey
/// columns and the bytes from before the trace) at least two points wide, by the band
/// under their centre.
fn drawn_band_colors(h: &Harness<'_, ViewerApp>) -> Vec<(usize, egui::Color32)> {
    let doc = h.state().active_doc().expect("doc");
    let d = &doc.data.timeline.devices[doc.device as usize];
    let bands = doc.data.curves[doc.device as usize]
        .bands
        .clone()
        .expect("bands");
    let frame = doc.panels.allocations.plot.expect("drawn");
    let origin = doc.data.rec.meta.start_ns;
    let mut last = Vec::new();
    for clipped in &h.output().shapes {
        let egui::Shape::Mesh(m) = &clipped.shape else {
            continue;
        };
        let mut out = Vec::new();
        for quad in m.vertices.chunks_exact(4) {
            if quad.iter().any(|v| v.uv != egui::epaint::WHITE_UV) {
                continue;
            }
            let r = egui::Rect::from_two_pos(quad[0].pos, quad[3].pos);
            let c = r.center();
            // A band's moves within a pixel column are drawn as one (at the offset after
            // the last): only a stretch two columns wide is its band at its centre.
            if !frame.rect.contains(c) || r.width() < 2.0 {
                continue;
            }
            let t = origin + frame.t_at(c.x).round() as i64;
            let bytes = frame.y0
                + f64::from(frame.rect.bottom() - c.y) / f64::from(frame.rect.height())
                    * (frame.y1 - frame.y0);
            if let Some(i) = bands.layout.band_at(d, t, bytes as i64) {
                out.push((i, quad[0].color));
            }
        }
        if !out.is_empty() {
            last = out;
        }
    }
    last
}

/// Whether the colours drawn and `key` partition the bands alike: one colour per key,
/// one key per colour.
fn colours_follow<K: Ord + Clone + std::fmt::Debug>(
    drawn: &[(usize, egui::Color32)],
    key: impl Fn(usize) -> K,
) -> usize {
    use std::collections::BTreeMap;
    let (mut by_key, mut by_colour) = (BTreeMap::new(), BTreeMap::new());
    for &(i, c) in drawn {
        let k = key(i);
        let was = by_key.insert(k.clone(), c.to_array());
        assert!(was.is_none_or(|w| w == c.to_array()), "{k:?}: two colours");
        let was = by_colour.insert(c.to_array(), k.clone());
        assert!(was.is_none_or(|w| w == k), "{c:?}: two keys");
    }
    by_key.len()
}

#[test]
fn bands_are_coloured_by_stack_op_or_category_as_chosen() {
    let mut h = opened("Allocations");
    let doc = h.state().active_doc().expect("doc");
    let rec = &doc.data.rec;
    let d = &doc.data.timeline.devices[doc.device as usize];
    // Independently: each allocation's first frame in user code (else its first frame
    // with a file), and its category as the collector's rules give it.
    let site: Vec<String> = d
        .allocations
        .iter()
        .map(|a| {
            let stack = rec.stack(rec.mem_events[a.alloc_event as usize].stack);
            let useful: Vec<_> = stack
                .iter()
                .filter(|f| !matches!(rec.strings.get(f.file), "" | "??"))
                .collect();
            useful
                .iter()
                .find(|f| !collector::analysis::live::is_library_file(rec.strings.get(f.file)))
                .or(useful.first())
                .map(|f| frame_label(rec, f))
                .unwrap_or_default()
        })
        .collect();
    let categories =
        collector::analysis::categories::allocation_categories(rec, &doc.data.timeline, d);
    assert!(rec.ops.is_empty(), "an allocator snapshot has no ops");
    // Stack, the default: a colour per user frame.
    let drawn = drawn_band_colors(&h);
    assert!(drawn.len() >= 20, "{} band rectangles", drawn.len());
    let sites = colours_follow(&drawn, |i| site[i].clone());
    assert!(sites >= 3, "{sites} user frames among the bands drawn");
    // Op: a snapshot has none (every band would be one colour): greyed, a click keeps
    // the colours by stack.
    assert!(h.get_by_label("op").accesskit_node().is_disabled());
    h.get_by_label("op").click();
    h.run_steps(3);
    assert!(colours_follow(&drawn_band_colors(&h), |i| site[i].clone()) >= 3);
    // Category: each band in its category's colour, the palette's.
    h.get_by_label("category").click();
    h.run_steps(3);
    let drawn = drawn_band_colors(&h);
    let palette = palette_of(&h);
    for &(i, c) in &drawn {
        assert_eq!(c, palette.categories[categories[i].index()], "band {i}");
    }
    assert!(colours_follow(&drawn, |i| categories[i].index()) >= 2);
}

/// WCAG's contrast ratio of two opaque colours.
fn contrast(a: egui::Color32, b: egui::Color32) -> f32 {
    let lum = |c: egui::Color32| {
        let lin = |v: u8| {
            let s = v as f32 / 255.0;
            if s <= 0.039_28 {
                s / 12.92
            } else {
                ((s + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * lin(c.r()) + 0.7152 * lin(c.g()) + 0.0722 * lin(c.b())
    };
    let (x, y) = (lum(a), lum(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

#[test]
fn a_bands_readout_is_legible_in_the_light_theme() {
    use super::super::theme::ThemeChoice;
    let mut h = opened("Allocations");
    let ctx = h.ctx.clone();
    h.state_mut()
        .apply(&ctx, super::super::Command::SetTheme(ThemeChoice::Light));
    h.run_steps(3);
    let (_, pos) = long_lived_band(&h);
    h.event(Event::PointerMoved(pos));
    h.run_steps(2);
    let text = h
        .state()
        .active_doc()
        .and_then(|d| d.panels.allocations.readout.clone())
        .expect("a readout");
    // The readout as painted: its text colour against the plot's background.
    let colour = h
        .output()
        .shapes
        .iter()
        .find_map(|c| match &c.shape {
            egui::Shape::Text(t) if t.galley.text() == text => {
                t.galley.job.sections.first().map(|s| s.format.color)
            }
            _ => None,
        })
        .expect("the readout drawn");
    let ratio = contrast(colour, palette_of(&h).plot_bg);
    // WCAG AA for text: 4.5:1 (it was about 2.6:1).
    assert!(ratio >= 4.5, "the readout's contrast is {ratio:.2}:1");
}

#[test]
fn the_allocation_view_takes_the_main_area_on_the_timelines_axis() {
    // GIVEN the sample snapshot on the Allocations tab, the timeline's plot where it is
    let mut h = opened("Allocations");
    let d = h.state().active_doc().expect("doc");
    let timeline = d.timeline.last_plot_rect.expect("the timeline drawn");
    let bottom = d.panels.allocations.plot.expect("bands drawn").rect;
    // WHEN "main area" is ticked
    h.get_by_label("main area").click();
    h.run_steps(4);
    // THEN the bands take the timeline's place: its left edge, its time view, and at least
    // the timeline's height (more than the bottom tab's)
    let d = h.state().active_doc().expect("doc");
    assert!(d.panels.allocations.main);
    let main = d.panels.allocations.plot.expect("bands drawn");
    assert!(
        (main.rect.left() - timeline.left()).abs() <= 1.0,
        "{main:?} vs {timeline:?}"
    );
    assert!(
        main.rect.height() >= timeline.height(),
        "{} vs {}",
        main.rect.height(),
        timeline.height()
    );
    assert!(
        main.rect.height() > bottom.height(),
        "{main:?} vs the tab's {bottom:?}"
    );
    assert_eq!((main.t0_ns, main.t1_ns), (d.view.t0_ns, d.view.t1_ns));
    // and the bottom tab says where the view went; a click there brings it back
    h.get_by_label_contains("The allocation view is in the main area");
    h.get_all_by_label("main area")
        .next()
        .expect("a toggle")
        .click();
    h.run_steps(3);
    assert!(!h.state().active_doc().expect("doc").panels.allocations.main);
}

/// The frame's rectangle where the icicle last drew node `id`.
fn flame_rect(h: &Harness<'_, ViewerApp>, id: u32) -> egui::Rect {
    let doc = h.state().active_doc().expect("doc");
    (doc.panels.allocations.flame_placed.iter())
        .find(|(n, _)| *n == id)
        .expect("drawn")
        .1
}

/// A click on node `id`'s frame.
fn click_frame(h: &mut Harness<'_, ViewerApp>, id: u32) {
    let at = flame_rect(h, id).center();
    h.event(Event::PointerMoved(at));
    h.run_steps(1);
    h.event(primary(at, true));
    h.event(primary(at, false));
    h.run_steps(3);
}

/// Zoomed two frames deep, the flame view shows the path from the root (issue 37: no
/// breadcrumb): the root and the first frame as buttons, the frame zoomed into as text, in
/// the order of the collector's `FlameTree::path_to`; a click on a button zooms back out
/// to that frame, the root's to the whole tree (and the breadcrumb goes).
#[test]
fn the_flame_view_shows_a_breadcrumb_whose_frames_zoom_back_out() {
    let mut h = opened("Flame");
    let tree = (h
        .state()
        .active_doc()
        .expect("doc")
        .panels
        .allocations
        .flame)
        .clone()
        .expect("a tree")
        .2;
    let root = tree.root().expect("root");
    assert!(
        h.query_by_label(&root.name).is_none(),
        "no breadcrumb before a zoom"
    );
    let child = root.children[0];
    click_frame(&mut h, child);
    let grandchild = tree.nodes[child as usize].children[0];
    click_frame(&mut h, grandchild);
    let zoom = h
        .state()
        .active_doc()
        .expect("doc")
        .panels
        .allocations
        .flame_zoom;
    assert_eq!(zoom, Some(grandchild));
    assert_eq!(tree.path_to(grandchild), vec![0, child, grandchild]);
    let short = |id: u32| {
        let name = &tree.nodes[id as usize].name;
        name.rsplit(['/', '\\']).next().unwrap_or(name).to_owned()
    };
    // The crumbs, left to right, on one row.
    let crumbs: Vec<egui::Rect> = [0, child, grandchild]
        .iter()
        .map(|&id| h.get_by_label(&short(id)).rect())
        .collect();
    assert!(
        crumbs.windows(2).all(|p| p[0].right() <= p[1].left()),
        "{crumbs:?}"
    );
    // The first frame's crumb zooms back out to it.
    h.get_by_label(&short(child)).click();
    h.run_steps(3);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.allocations.flame_zoom, Some(child));
    assert!(h.query_by_label(&short(grandchild)).is_none());
    // The root's, to the whole tree.
    h.get_by_label(&root.name).click();
    h.run_steps(3);
    assert_eq!(
        h.state()
            .active_doc()
            .expect("doc")
            .panels
            .allocations
            .flame_zoom,
        None
    );
    assert!(h.query_by_label(&root.name).is_none());
    assert!(flame_rect(&h, 0).width() >= flame_rect(&h, child).width());
}

#[test]
fn in_the_main_area_a_selected_band_keeps_the_width_and_its_details_fill_the_tab() {
    // GIVEN the allocation view in the main area
    let mut h = opened("Allocations");
    h.get_by_label("main area").click();
    h.run_steps(4);
    let wide = h.state().active_doc().expect("doc").panels.allocations.plot;
    let wide = wide.expect("bands drawn").rect;
    // WHEN a band is clicked
    let (i, pos) = long_lived(&h, true);
    click_at(&mut h, pos);
    // THEN it is selected, the bands keep the main area's width (the details took 380
    // points beside them), and the details are in the tab under them, not only a note
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.allocations.selected, Some(i));
    let plot = doc.panels.allocations.plot.expect("bands drawn").rect;
    assert_eq!(plot.width(), wide.width());
    let stack = h.get_by_label("allocation stack");
    let top = stack.rect().top();
    assert!(top > plot.bottom(), "{top} under {plot:?}");
}
