//! The live allocations grouped (by stack, op or category), the bytes no allocation seen
//! accounts for, and the `--limit` fold, so the groups always sum to the allocator's total.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::frames::{python_stack, user_stack, without_directory};
use crate::analysis::categories::categories_of;
use crate::model::python::module_scope;
use crate::model::{DeviceIdx, MemEventKind, OpCategory, Recording};
use crate::timeline::{Allocation, DeviceTimeline, Timeline, TotalsSource};

/// How many user frames name a group by site (the default): allocations whose stacks
/// differ only further out are one group, as a reader of the innermost user code expects;
/// `--group-by stack` keys on the whole stack.
pub const SITE_FRAMES: usize = 3;

/// How live allocations are grouped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroupBy {
    /// By the first [`SITE_FRAMES`] user frames of the stack where the allocation has one
    /// (allocator snapshots, recordings with stacks), else by the op that was running
    /// when it was made.
    #[default]
    Site,
    /// By the op running when it was made.
    Op,
    /// By the whole stack from its first user frame out; allocations without one form one
    /// group.
    Stack,
    /// By memory category ([`crate::analysis::categories`]).
    Category,
    /// By the `nn.Module` scopes a trace recorded around the allocation
    /// (`LM_0.TransformerEncoderLayer_1.Linear_2`).
    Module,
}

/// What a group holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// Live allocations with the same stack (from its first user frame out).
    Stack,
    /// Live allocations made while the same op ran.
    Op,
    /// Live allocations of the same memory category.
    Category,
    /// Live allocations made inside the same `nn.Module` scopes.
    Module,
    /// Allocated before the trace began: the allocator's total minus the allocations seen.
    /// Blocks freed in the trace but never seen allocated are here until their free.
    BeforeTrace,
    /// Allocations whose events carry no block address, so their frees cannot be paired
    /// (legacy traces): the reconstructed total minus the allocations seen.
    WithoutAddress,
    /// Negative: frees of blocks allocated before the trace, which a total rebuilt from
    /// the events (no `Total Allocated`) counts while it never saw their allocations.
    FreedFromBeforeTrace,
    /// The allocations seen minus the allocator's total, where that is negative or the
    /// events pair inconsistently (an address allocated twice without a free).
    InconsistentTotals,
    /// The groups past a `--limit`, folded into one.
    More,
}

impl GroupKind {
    /// Whether the group is live allocations seen in the recording (not a remainder).
    pub fn is_seen(self) -> bool {
        matches!(
            self,
            GroupKind::Stack | GroupKind::Op | GroupKind::Category | GroupKind::Module
        )
    }
}

/// A group of live allocations, or the bytes at the instant that no allocation seen
/// accounts for.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct LiveGroup {
    /// What the group holds.
    pub kind: GroupKind,
    /// Its name: stack frames from the first one in user code out (the first
    /// [`SITE_FRAMES`], or all by stack), joined by " ← "; an op; a category; or what a
    /// remainder is ("allocated before the trace began").
    pub site: String,
    /// The whole stack, innermost frame first ("file:line function"); empty for groups
    /// without one. Where the stacks of a group's allocations differ (in the library
    /// frames inside the site, or further out than a site's frames), these are the first
    /// allocation's.
    pub frames: Vec<String>,
    /// The index in `frames` of the first frame in user code, where `site` begins.
    pub first_user_frame: usize,
    /// Bytes in the group (negative only for remainders that take bytes away).
    pub bytes: i64,
    /// `bytes` as a fraction of the allocated bytes at the instant; 0 when nothing is.
    pub share: f64,
    /// Number of live blocks (0 for remainders: their blocks were not seen).
    pub blocks: u64,
    /// The largest block.
    pub largest_block_bytes: i64,
}

impl LiveGroup {
    fn named(kind: GroupKind, site: String) -> LiveGroup {
        LiveGroup {
            kind,
            site,
            frames: Vec::new(),
            first_user_frame: 0,
            bytes: 0,
            share: 0.0,
            blocks: 0,
            largest_block_bytes: 0,
        }
    }

    /// The frames `site` names: from the first user frame out.
    pub fn user_frames(&self) -> &[String] {
        self.frames.get(self.first_user_frame..).unwrap_or(&[])
    }

    /// The site for a narrow column: each frame's file without its directory
    /// (`model.py:532 silu ← module.py:1790 _call_impl`). The full `site` keeps the paths.
    pub fn short_site(&self) -> String {
        if self.frames.is_empty() {
            return self.site.clone();
        }
        let frames: Vec<&str> = self.site.split(" ← ").map(without_directory).collect();
        frames.join(" ← ")
    }
}

/// The allocations seen live on `device` at `time_ns`, grouped `by`, largest first.
pub fn live_groups(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    time_ns: i64,
    by: GroupBy,
) -> Vec<LiveGroup> {
    let Some(d) = timeline.devices.get(device as usize) else {
        return Vec::new();
    };
    let live: Vec<usize> = (0..d.allocations.len())
        .filter(|&i| d.allocations.get(i).is_some_and(|a| is_live(a, time_ns)))
        .collect();
    let categories = match by {
        GroupBy::Category => categories_of(rec, timeline, d, &live),
        _ => Vec::new(),
    };
    let modules_recorded = by == GroupBy::Module && has_module_scopes(rec);
    let mut groups: Vec<LiveGroup> = Vec::new();
    let mut index: FxHashMap<String, usize> = FxHashMap::default();
    for (n, &i) in live.iter().enumerate() {
        let Some(a) = d.allocations.get(i) else {
            continue;
        };
        let named = match categories.get(n) {
            Some(c) => LiveGroup::named(GroupKind::Category, c.as_str().to_owned()),
            None if by == GroupBy::Module => module_group(rec, timeline, a, modules_recorded),
            None => group_of(rec, timeline, a, by),
        };
        let slot = *index.entry(named.site.clone()).or_insert_with(|| {
            groups.push(named);
            groups.len() - 1
        });
        if let Some(g) = groups.get_mut(slot) {
            g.bytes += a.bytes;
            g.blocks += 1;
            g.largest_block_bytes = g.largest_block_bytes.max(a.bytes);
        }
    }
    sort_groups(&mut groups);
    groups
}

fn is_live(a: &Allocation, time_ns: i64) -> bool {
    a.alloc_ns <= time_ns && a.free_ns.get().is_none_or(|f| f > time_ns)
}

/// The (empty) group an allocation belongs to, by stack or op. The stack is the one the
/// allocator recorded (snapshots), else the Python calls a trace recorded around it
/// (`with_stack=True`).
fn group_of(rec: &Recording, timeline: &Timeline, a: &Allocation, by: GroupBy) -> LiveGroup {
    let event = rec.mem_events.get(a.alloc_event as usize);
    let recorded = rec.stack(event.and_then(|e| e.stack));
    let (frames, first_user_frame) = match (by, recorded.is_empty()) {
        (GroupBy::Op, _) => (Vec::new(), 0),
        (_, false) => user_stack(rec, recorded),
        (_, true) => python_stack(rec, timeline, a.thread, a.alloc_ns),
    };
    // Without a stack, a source without ops (a snapshot) has no op to name either
    // (issue 37: "(outside any op)" on a snapshot's blocks).
    if frames.is_empty() && (by == GroupBy::Stack || (by != GroupBy::Op && rec.ops.is_empty())) {
        return LiveGroup::named(GroupKind::Stack, "(no stack recorded)".to_owned());
    }
    if by == GroupBy::Op && rec.ops.is_empty() {
        return LiveGroup::named(GroupKind::Op, "(no ops recorded)".to_owned());
    }
    if by == GroupBy::Op || frames.is_empty() {
        let op = timeline
            .ops
            .running_at(a.thread, a.alloc_ns)
            .and_then(|i| rec.ops.get(i as usize));
        let name = op.map_or("(outside any op)".to_owned(), |o| rec.op_name(o).to_owned());
        return LiveGroup::named(GroupKind::Op, name);
    }
    let mut g = LiveGroup::named(GroupKind::Stack, String::new());
    g.frames = frames;
    g.first_user_frame = first_user_frame;
    let named_by = match by {
        GroupBy::Stack => usize::MAX,
        _ => SITE_FRAMES,
    };
    let site: Vec<&str> = g
        .user_frames()
        .iter()
        .take(named_by)
        .map(String::as_str)
        .collect();
    g.site = site.join(" ← ");
    g
}

/// Whether the recording has any `nn.Module` scope (a trace made `with_stack=True` or
/// `with_modules=True`).
fn has_module_scopes(rec: &Recording) -> bool {
    rec.ops
        .iter()
        .any(|o| o.category == OpCategory::PythonFunction && module_scope(rec.op_name(o)).is_some())
}

/// The (empty) group of an allocation by the `nn.Module` scopes around it on its thread,
/// outermost first, joined by "."; allocations outside every module (the backward pass,
/// which runs on autograd's threads, the optimizer) form one group, and a recording without
/// module scopes says so.
fn module_group(
    rec: &Recording,
    timeline: &Timeline,
    a: &Allocation,
    modules_recorded: bool,
) -> LiveGroup {
    if !modules_recorded {
        return LiveGroup::named(GroupKind::Module, NO_MODULES.to_owned());
    }
    let mut scopes: Vec<&str> = timeline
        .ops
        .enclosing_on_thread(a.thread, a.alloc_ns)
        .into_iter()
        .filter_map(|i| rec.ops.get(i as usize))
        .filter(|o| o.category == OpCategory::PythonFunction)
        .filter_map(|o| module_scope(rec.op_name(o)))
        .collect();
    scopes.reverse();
    let site = if scopes.is_empty() {
        OUTSIDE_MODULES.to_owned()
    } else {
        scopes.join(".")
    };
    LiveGroup::named(GroupKind::Module, site)
}

/// The module group of allocations made outside every `nn.Module` scope.
pub const OUTSIDE_MODULES: &str = "(outside every module)";
/// The module group of a recording without module scopes (a snapshot, or a trace made
/// without `with_stack`/`with_modules`).
pub const NO_MODULES: &str = "(no module scopes recorded)";

/// Largest first; equal sizes by name.
pub(super) fn sort_groups(groups: &mut [LiveGroup]) {
    groups.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.site.cmp(&b.site)));
}

/// The group of `allocated_bytes` minus `seen_bytes` (the live allocations seen), named by
/// why no allocation seen holds them; `None` when they are equal.
pub(super) fn remainder(
    rec: &Recording,
    d: &DeviceTimeline,
    allocated_bytes: i64,
    seen_bytes: i64,
) -> Option<LiveGroup> {
    let rest = allocated_bytes - seen_bytes;
    if rest == 0 {
        return None;
    }
    let without_address = || {
        rec.mem_events.iter().any(|e| {
            e.device == d.device && e.kind == MemEventKind::Alloc && e.addr.get().is_none()
        })
    };
    let (kind, site) = match (d.totals, rest > 0) {
        (TotalsSource::Trace, true) => (GroupKind::BeforeTrace, "allocated before the trace began"),
        (TotalsSource::Reconstructed, true) if without_address() => (
            GroupKind::WithoutAddress,
            "allocations without block addresses",
        ),
        (TotalsSource::Reconstructed, false) => (
            GroupKind::FreedFromBeforeTrace,
            "freed here, allocated before the trace",
        ),
        _ => (
            GroupKind::InconsistentTotals,
            "inconsistent: allocator total minus blocks seen",
        ),
    };
    let mut g = LiveGroup::named(kind, site.to_owned());
    g.bytes = rest;
    Some(g)
}

/// The first `limit` groups of live allocations seen, every remainder, and the rest folded
/// into one "N more groups" entry, so the groups still sum to the same bytes.
pub fn fold_after(groups: Vec<LiveGroup>, limit: usize) -> Vec<LiveGroup> {
    let mut kept = Vec::with_capacity(groups.len().min(limit + 4));
    let mut more = LiveGroup::named(GroupKind::More, String::new());
    let mut folded = 0u64;
    let mut seen = 0;
    for g in groups {
        if !g.kind.is_seen() || seen < limit {
            seen += usize::from(g.kind.is_seen());
            kept.push(g);
            continue;
        }
        folded += 1;
        more.bytes += g.bytes;
        more.share += g.share;
        more.blocks += g.blocks;
        more.largest_block_bytes = more.largest_block_bytes.max(g.largest_block_bytes);
    }
    if folded > 0 {
        more.site = format!(
            "{folded} more {}",
            if folded == 1 { "group" } else { "groups" }
        );
        kept.push(more);
    }
    kept
}
