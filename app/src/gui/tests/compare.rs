//! The Compare panel: the per-op table sorts by every column when its header is clicked
//! (again: the other way); a run on another GPU model is flagged before any number.

use std::path::{Path, PathBuf};

use collector::analysis::diff::{Align, Diff, OpDiff, RunFacts, diff};
use collector::analysis::{OpRow, Summary, key_averages, summarize};
use collector::units::{TORCH_BYTE_UNITS, unit_for};
use collector::{LoadOptions, Timeline};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};

use super::super::axis::ellipsize;
use super::super::panels::PanelId;
use super::super::{Command, ViewerApp};
use super::layout::mi300_bert;
use super::{fixture, harness, repo, settle};

/// torch's unit (1024-based) for a column whose largest magnitude is `largest`.
pub(super) fn torch_unit(largest: u64) -> (f64, &'static str) {
    let (divisor, name) = unit_for(largest, &TORCH_BYTE_UNITS);
    (divisor as f64, name)
}

/// `vramscope diff A B`, recomputed from the files.
pub(super) fn diff_of(a: &Path, b: &Path) -> Diff {
    let load = |p: &Path| -> (Summary, Vec<OpRow>) {
        let rec = collector::load(p, LoadOptions::default()).expect("load");
        let t = Timeline::build(&rec);
        (summarize(&rec, &t), key_averages(&rec, None))
    };
    let ((sa, ra), (sb, rb)) = (load(a), load(b));
    fn facts<'a>(s: &'a Summary, r: &'a [OpRow]) -> RunFacts<'a> {
        RunFacts {
            summary: s,
            rows: r,
            origin_ns: s.start_ns,
        }
    }
    diff(&facts(&sa, &ra), &facts(&sb, &rb), Align::Start)
}

/// Two files open, the first comparing with the second on the Compare tab.
pub(super) fn comparing(a: &Path, b: &Path) -> Harness<'static, ViewerApp> {
    let mut h = harness(vec![a.to_path_buf(), b.to_path_buf()]);
    settle(&mut h);
    // By path: the two loads run in parallel and a tab is added when its load ends.
    let id_of = |p: &Path| {
        let docs = h.state().docs();
        docs.iter().find(|d| d.data.path == p).expect("opened").id
    };
    let (a_id, b_id) = (id_of(a), id_of(b));
    let ctx = h.ctx.clone();
    h.state_mut().apply(&ctx, Command::Activate(a_id));
    h.state_mut().apply(&ctx, Command::SetTab(PanelId::COMPARE));
    h.run_steps(2);
    h.state_mut().apply(&ctx, Command::CompareWith(Some(b_id)));
    h.run_steps(3);
    settle(&mut h);
    h
}

/// Click the per-op table's header `title` (with its unit when `unit`), the lowest such
/// widget: the devices table above has headers of its own.
fn click_header(h: &mut Harness<'_, ViewerApp>, title: &str, unit: bool) {
    let with_unit = format!("{title} (");
    let header = h
        .get_all_by_label_contains(title)
        .filter(|n| {
            n.accesskit_node().label().is_some_and(|l| {
                if unit {
                    l.starts_with(&with_unit)
                } else {
                    l == title
                }
            })
        })
        .max_by(|a, b| a.rect().top().total_cmp(&b.rect().top()))
        .unwrap_or_else(|| panic!("the header {title:?}"));
    header.click();
    h.run_steps(3);
}

/// The first `n` op names as the table shows them, top to bottom.
fn shown_first(h: &Harness<'_, ViewerApp>, expected: &[&OpDiff]) -> Vec<String> {
    let mut seen: Vec<(f32, String)> = expected
        .iter()
        .filter_map(|o| {
            let label = ellipsize(&o.name, 90);
            let y = h.query_by_label(&label)?.rect().top();
            Some((y, o.name.clone()))
        })
        .collect();
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    seen.into_iter().map(|(_, n)| n).collect()
}

#[test]
fn a_header_click_sorts_the_op_comparison_by_that_column() {
    let (a, b): (PathBuf, PathBuf) = (
        fixture("torch-cpu/k01_mlp_s1.json.gz"),
        fixture("torch-cpu/k02_mlp_stack.json.gz"),
    );
    let d = diff_of(&a, &b);
    let mut h = comparing(&a, &b);
    type Key = fn(&OpDiff) -> Option<i64>;
    let columns: [(&str, Key); 6] = [
        ("Self CPU Mem A", |o| o.self_cpu_memory_usage.a),
        ("B", |o| o.self_cpu_memory_usage.b),
        ("B − A", |o| o.self_cpu_memory_usage.delta),
        ("CPU Mem B − A", |o| o.cpu_memory_usage.delta),
        ("# Calls A", |o| o.calls.a),
        ("B", |o| o.calls.b),
    ];
    for (i, (title, key)) in columns.iter().enumerate() {
        for descending in [true, false] {
            click_header(&mut h, title, i < 4);
            // Expected: by the column's value, rows without one last, ties by name.
            let mut rows: Vec<&OpDiff> = d.ops.iter().collect();
            rows.sort_by(|x, y| match (key(x), key(y)) {
                (Some(p), Some(q)) => {
                    let c = if descending { q.cmp(&p) } else { p.cmp(&q) };
                    c.then(x.name.cmp(&y.name))
                }
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => x.name.cmp(&y.name),
            });
            let first: Vec<&OpDiff> = rows.iter().take(4).copied().collect();
            let want: Vec<String> = first.iter().map(|o| o.name.clone()).collect();
            assert_eq!(
                shown_first(&h, &first),
                want,
                "{title} descending={descending}"
            );
        }
    }
    // The names: A to Z first.
    click_header(&mut h, "Name", false);
    let mut by_name: Vec<&OpDiff> = d.ops.iter().collect();
    by_name.sort_by(|x, y| x.name.cmp(&y.name));
    let first: Vec<&OpDiff> = by_name.iter().take(4).copied().collect();
    let want: Vec<String> = first.iter().map(|o| o.name.clone()).collect();
    assert_eq!(shown_first(&h, &first), want);
}

#[test]
fn a_run_on_another_gpu_model_is_flagged() {
    let real = repo().join("../shared/traces/real");
    let h100 = real.join("tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz");
    let mi300 = real.join("tracelens-mi300-bert-small").join(mi300_bert());
    let h = comparing(&h100, &mi300);
    // The models, as PROVENANCE.md lists each trace's deviceProperties.
    h.get_by_label_contains(
        "⚠ cuda:0 is a different device in each run (A: NVIDIA H100 80GB HBM3; B: AMD Instinct MI300X VF)",
    );
    // Two CPU runs: nothing to flag.
    let h = comparing(
        &fixture("torch-cpu/k01_mlp_s1.json.gz"),
        &fixture("torch-cpu/k02_mlp_stack.json.gz"),
    );
    assert_eq!(h.query_all_by_label_contains("⚠").count(), 0);
}
