//! Stacks and modules of a trace's allocations, built from the Python calls and
//! `nn.Module` scopes a trace made `with_stack=True` records around them (real CPU runs of
//! tests/fixtures/categories, the whole script inside the profiler): `live --group-by
//! stack` names user code instead of "(no stack recorded)", the default grouping names
//! sites, and `--group-by module` names the module path of what the forward pass holds.

use std::path::PathBuf;

use collector::analysis::live::{GroupBy, GroupKind, NO_MODULES, OUTSIDE_MODULES, live_at};
use collector::model::python::module_scope;
use collector::model::{OpCategory, Recording};
use collector::{LoadOptions, Timeline, load};

fn open(name: &str) -> (Recording, Timeline) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/categories")
        .join(name);
    let rec = load(&path, LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let timeline = Timeline::build(&rec);
    (rec, timeline)
}

/// The groups at `time_ns` as (kind, site, bytes), and the allocated bytes then.
fn groups(
    rec: &Recording,
    t: &Timeline,
    time_ns: i64,
    by: GroupBy,
) -> (Vec<(GroupKind, String, i64)>, i64) {
    let live = live_at(rec, t, 0, time_ns, by);
    let groups = live
        .groups
        .into_iter()
        .map(|g| (g.kind, g.site, g.bytes))
        .collect();
    (groups, live.allocated_bytes.expect("allocated"))
}

fn peak_ns(t: &Timeline) -> i64 {
    let d = &t.devices[0];
    d.points[d.peak_allocated.expect("a peak")].time_ns
}

#[test]
fn a_stack_trace_groups_its_allocations_by_python_stack() {
    let (rec, t) = open("c09_lm_adamw_inside_wide.json.gz");
    for by in [GroupBy::Stack, GroupBy::Site] {
        let (groups, allocated) = groups(&rec, &t, peak_ns(&t), by);
        let seen: Vec<_> = groups.iter().filter(|g| g.0.is_seen()).collect();
        assert!(seen.len() >= 4, "{by:?}: {groups:?}");
        // Every block has a stack, and each group's site starts in the user's script.
        for (kind, site, _) in &seen {
            assert_eq!(*kind, GroupKind::Stack, "{site}");
            assert!(site.starts_with("gen_truth.py:"), "{by:?}: {site}");
        }
        assert_eq!(groups.iter().map(|g| g.2).sum::<i64>(), allocated);
        // The weights of the model built inside the trace come from its constructor.
        assert!(
            seen.iter()
                .any(|g| g.1.contains(" __init__") && g.2 > 5 << 20),
            "{groups:?}"
        );
    }
}

#[test]
fn a_stack_trace_groups_its_forward_allocations_by_module() {
    let (rec, t) = open("c09_lm_adamw_inside_wide.json.gz");
    // Halfway through the first call of the outermost module: the forward pass.
    let lm = rec
        .ops
        .iter()
        .find(|o| {
            o.category == OpCategory::PythonFunction
                && module_scope(rec.op_name(*o)) == Some("LM_0")
        })
        .expect("the model's scope");
    let (groups, allocated) = groups(&rec, &t, (lm.start_ns + lm.end_ns) / 2, GroupBy::Module);
    assert_eq!(groups.iter().map(|g| g.2).sum::<i64>(), allocated);
    let inside: Vec<_> = groups.iter().filter(|g| g.1.starts_with("LM_0.")).collect();
    assert!(inside.len() >= 3, "{groups:?}");
    assert!(inside.iter().all(|g| g.0 == GroupKind::Module));
    // The weights and optimizer state were made outside every module's forward.
    let outside = groups
        .iter()
        .find(|g| g.1 == OUTSIDE_MODULES)
        .expect("outside");
    assert!(
        outside.2 > inside.iter().map(|g| g.2).sum::<i64>(),
        "{groups:?}"
    );
}

#[test]
fn a_trace_without_stacks_says_it_has_no_stack_or_module() {
    let (rec, t) = open("c16_mlp_adamw_inside_nostack.json.gz");
    let at = peak_ns(&t);
    let (by_stack, _) = groups(&rec, &t, at, GroupBy::Stack);
    assert_eq!(by_stack[0].1, "(no stack recorded)", "{by_stack:?}");
    let (by_module, _) = groups(&rec, &t, at, GroupBy::Module);
    assert_eq!(by_module[0].1, NO_MODULES, "{by_module:?}");
    // The default grouping falls back to the op that ran.
    let (by_site, _) = groups(&rec, &t, at, GroupBy::Site);
    assert!(
        by_site
            .iter()
            .filter(|g| g.0.is_seen())
            .all(|g| g.0 == GroupKind::Op)
    );
}
