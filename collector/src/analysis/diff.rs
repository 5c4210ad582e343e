//! Run-vs-run comparison: peak and final memory per device, and the per-op table, of two
//! recordings side by side with their differences (B − A).
//!
//! Devices are matched by name (`cuda:0` with `cuda:0`), ops by row name. The inputs are
//! the outputs of [`summarize`](super::summarize) and [`key_averages`](super::key_averages),
//! so a diff can never disagree with `summary` or `table` run on each file. One idea, the
//! comparison (its code ends near 350 lines; the rest is its tests).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{OpRow, Summary};
use crate::model::{DeviceId, Recording};

/// One value in both runs and its change. For devices `delta` is `None` unless both runs
/// know the value; for ops an absent row counts as zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Change<T> {
    /// The value in run A.
    pub a: Option<T>,
    /// The value in run B.
    pub b: Option<T>,
    /// B − A.
    pub delta: Option<T>,
}

impl<T: PartialEq> Change<T> {
    /// Whether the two runs differ here.
    pub fn differs(&self) -> bool {
        self.a != self.b
    }
}

impl<T: Copy + std::ops::Sub<Output = T>> Change<T> {
    /// A change known only when both sides are.
    fn both(a: Option<T>, b: Option<T>) -> Change<T> {
        let delta = a.zip(b).map(|(a, b)| b - a);
        Change { a, b, delta }
    }

    /// A change where a missing side counts as `zero`.
    fn or_zero(a: Option<T>, b: Option<T>, zero: T) -> Change<T> {
        Change {
            a,
            b,
            delta: Some(b.unwrap_or(zero) - a.unwrap_or(zero)),
        }
    }
}

/// Peak and final memory of one device in both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceDiff {
    /// The device (A's, where both runs have it).
    pub device: DeviceId,
    /// Peak allocated bytes.
    pub peak_allocated_bytes: Change<i64>,
    /// When allocated peaked, ns after each run's origin (see [`Align`]).
    pub peak_allocated_at_ns: Change<i64>,
    /// Peak reserved bytes.
    pub peak_reserved_bytes: Change<i64>,
    /// Allocated bytes at the end.
    pub final_allocated_bytes: Change<i64>,
    /// Reserved bytes at the end.
    pub final_reserved_bytes: Change<i64>,
}

/// One per-op row in both runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpDiff {
    /// Row name.
    pub name: String,
    /// "# of Calls".
    pub calls: Change<i64>,
    /// "Self CPU Mem".
    pub self_cpu_memory_usage: Change<i64>,
    /// "CPU Mem".
    pub cpu_memory_usage: Change<i64>,
    /// "Self CUDA Mem".
    pub self_device_memory_usage: Change<i64>,
    /// "CUDA Mem".
    pub device_memory_usage: Change<i64>,
}

impl OpDiff {
    /// Whether the runs differ in this row's calls or memory.
    pub fn changed(&self) -> bool {
        self.calls.differs()
            || self.self_cpu_memory_usage.differs()
            || self.cpu_memory_usage.differs()
            || self.self_device_memory_usage.differs()
            || self.device_memory_usage.differs()
    }
}

/// Where each run's clock starts for the times in a diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Align {
    /// The start of each trace.
    Start,
    /// The start of each run's first training step (`ProfilerStep#N`), else its start.
    Step,
}

impl Align {
    /// A run's origin for this alignment, ns on its clock: its start, or the start of its
    /// first step.
    pub fn origin_ns(self, rec: &Recording) -> i64 {
        match (self, rec.steps.first()) {
            (Align::Step, Some(step)) => step.start_ns,
            _ => rec.meta.start_ns,
        }
    }
}

/// What a diff needs of one run.
pub struct RunFacts<'a> {
    /// The run's summary.
    pub summary: &'a Summary,
    /// The run's key_averages rows (any order).
    pub rows: &'a [OpRow],
    /// The run's origin, ns on its clock ([`Align::origin_ns`]).
    pub origin_ns: i64,
}

/// Which run of a diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Run A (the first input).
    A,
    /// Run B.
    B,
}

/// Why a comparison compares less than it seems to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiffNote {
    /// A run has no memory events: its side of every row is empty.
    NoMemoryEvents(Side),
    /// Times were asked from each run's first training step and a run has none: its
    /// times count from its start.
    NoStepsToAlign(Side),
    /// Both runs have memory, on no device in common (a CUDA snapshot against a CPU trace):
    /// no device row compares the two.
    NoDeviceInCommon {
        /// A's devices.
        a: Vec<DeviceId>,
        /// B's devices.
        b: Vec<DeviceId>,
    },
    /// The runs' device of the same name is a different model in each (an H100 against an
    /// MI300X): the same bytes weigh differently against each one's capacity.
    DifferentModels {
        /// The device both runs name so.
        device: DeviceId,
        /// A's model.
        a: String,
        /// B's model.
        b: String,
    },
}

/// Two runs compared.
#[derive(Clone, Debug, PartialEq)]
pub struct Diff {
    /// What the reader should know first, when the runs do not compare like for like.
    pub notes: Vec<DiffNote>,
    /// How times were aligned.
    pub align: Align,
    /// Devices of either run, in A's order, then those only in B.
    pub devices: Vec<DeviceDiff>,
    /// The column the ops are sorted by: the largest absolute change first.
    pub sorted_by: &'static str,
    /// Ops of either run.
    pub ops: Vec<OpDiff>,
    /// Ops left out of `ops` because both runs agree on them ([`Diff::keep_largest_changes`]).
    pub unchanged_left_out: usize,
}

impl Diff {
    /// Keep the `n` ops that changed most (`ops` is sorted so), leaving out those the runs
    /// agree on.
    pub fn keep_largest_changes(&mut self, n: usize) {
        let before = self.ops.len();
        self.ops.retain(OpDiff::changed);
        self.unchanged_left_out = before - self.ops.len();
        self.ops.truncate(n);
    }
}

/// Compare run A with run B.
pub fn diff<'a>(a: &RunFacts<'a>, b: &RunFacts<'a>, align: Align) -> Diff {
    // Devices pair up by torch's name: a ROCm `cuda:0` (HIP) is the CUDA run's `cuda:0`.
    let mut keys: Vec<DeviceId> = a.summary.devices.iter().map(|d| d.device).collect();
    for d in &b.summary.devices {
        if !keys.iter().any(|k| k.to_string() == d.device.to_string()) {
            keys.push(d.device);
        }
    }
    let devices = keys
        .into_iter()
        .map(|key| {
            let name = key.to_string();
            let find = |facts: &RunFacts<'a>| {
                let devices = &facts.summary.devices;
                devices.iter().find(|d| d.device.to_string() == name)
            };
            let (da, db) = (find(a), find(b));
            let at = |facts: &RunFacts<'_>, d: Option<&super::DeviceSummary>| {
                d.and_then(|d| d.peak_allocated_at_ns)
                    .map(|ns| ns - facts.origin_ns)
            };
            DeviceDiff {
                device: key,
                peak_allocated_bytes: Change::both(
                    da.and_then(|d| d.peak_allocated_bytes),
                    db.and_then(|d| d.peak_allocated_bytes),
                ),
                peak_allocated_at_ns: Change::both(at(a, da), at(b, db)),
                peak_reserved_bytes: Change::both(
                    da.and_then(|d| d.peak_reserved_bytes),
                    db.and_then(|d| d.peak_reserved_bytes),
                ),
                final_allocated_bytes: Change::both(
                    da.and_then(|d| d.final_allocated_bytes),
                    db.and_then(|d| d.final_allocated_bytes),
                ),
                final_reserved_bytes: Change::both(
                    da.and_then(|d| d.final_reserved_bytes),
                    db.and_then(|d| d.final_reserved_bytes),
                ),
            }
        })
        .collect();
    let (ops, sorted_by) = op_diffs(a.rows, b.rows);
    Diff {
        notes: notes(a.summary, b.summary, align),
        align,
        devices,
        sorted_by,
        ops,
        unchanged_left_out: 0,
    }
}

/// The notes a comparison of these two summaries needs.
fn notes(a: &Summary, b: &Summary, align: Align) -> Vec<DiffNote> {
    let mut notes = Vec::new();
    for (side, s) in [(Side::A, a), (Side::B, b)] {
        if !s.has_memory_data {
            notes.push(DiffNote::NoMemoryEvents(side));
        }
    }
    for (side, s) in [(Side::A, a), (Side::B, b)] {
        if align == Align::Step && s.steps == 0 {
            notes.push(DiffNote::NoStepsToAlign(side));
        }
    }
    let names =
        |s: &Summary| -> Vec<String> { s.devices.iter().map(|d| d.device.to_string()).collect() };
    let (in_a, in_b) = (names(a), names(b));
    let shared = in_a.iter().any(|n| in_b.contains(n));
    let no_memory = notes
        .iter()
        .any(|n| matches!(n, DiffNote::NoMemoryEvents(_)));
    if !no_memory && !shared && !in_a.is_empty() && !in_b.is_empty() {
        notes.push(DiffNote::NoDeviceInCommon {
            a: a.devices.iter().map(|d| d.device).collect(),
            b: b.devices.iter().map(|d| d.device).collect(),
        });
    }
    for da in &a.devices {
        let same = b
            .devices
            .iter()
            .find(|d| d.device.to_string() == da.device.to_string());
        if let (Some(ma), Some(mb)) = (&da.name, same.and_then(|d| d.name.as_ref()))
            && ma != mb
        {
            notes.push(DiffNote::DifferentModels {
                device: da.device,
                a: ma.clone(),
                b: mb.clone(),
            });
        }
    }
    notes
}

/// Row totals by name. Rows that share a name (host and device work, or an annotation and
/// an op) are summed, so each name is one row of the diff.
fn by_name(rows: &[OpRow]) -> BTreeMap<&str, [i64; 5]> {
    let mut out: BTreeMap<&str, [i64; 5]> = BTreeMap::new();
    for r in rows {
        let v = out.entry(r.name.as_str()).or_default();
        v[0] += r.calls as i64;
        v[1] += r.self_cpu_memory_usage;
        v[2] += r.cpu_memory_usage;
        v[3] += r.self_device_memory_usage;
        v[4] += r.device_memory_usage;
    }
    out
}

fn op_diffs(a: &[OpRow], b: &[OpRow]) -> (Vec<OpDiff>, &'static str) {
    let (ta, tb) = (by_name(a), by_name(b));
    let mut names: Vec<&str> = ta.keys().chain(tb.keys()).copied().collect();
    names.sort_unstable();
    names.dedup();
    let mut ops: Vec<OpDiff> = names
        .into_iter()
        .map(|name| {
            let (va, vb) = (ta.get(name), tb.get(name));
            let col = |i: usize| Change::or_zero(va.map(|v| v[i]), vb.map(|v| v[i]), 0);
            OpDiff {
                name: name.to_owned(),
                calls: col(0),
                self_cpu_memory_usage: col(1),
                cpu_memory_usage: col(2),
                self_device_memory_usage: col(3),
                device_memory_usage: col(4),
            }
        })
        .collect();
    let device = a
        .iter()
        .chain(b)
        .any(|r| r.device_memory_usage != 0 || r.self_device_memory_usage != 0);
    let key = |o: &OpDiff| {
        let c = if device {
            &o.self_device_memory_usage
        } else {
            &o.self_cpu_memory_usage
        };
        c.delta.unwrap_or(0).unsigned_abs()
    };
    // Names are unique and already sorted, so a stable sort keeps ties in name order.
    ops.sort_by_key(|o| std::cmp::Reverse(key(o)));
    let sorted_by = if device {
        "self_device_memory_usage"
    } else {
        "self_cpu_memory_usage"
    };
    (ops, sorted_by)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, calls: u64, self_cpu: i64, self_dev: i64) -> OpRow {
        OpRow {
            name: name.to_owned(),
            calls,
            self_cpu_memory_usage: self_cpu,
            cpu_memory_usage: self_cpu,
            self_device_memory_usage: self_dev,
            device_memory_usage: self_dev,
            on_device: false,
            user_annotation: false,
            net: None,
        }
    }

    #[test]
    fn ops_match_by_name_and_sort_by_absolute_change() {
        // GIVEN two runs sharing aten::mm, each with one op of its own
        let a = [row("aten::mm", 2, 0, 100), row("aten::add", 1, 0, 50)];
        let b = [row("aten::mm", 2, 0, 400), row("aten::relu", 3, 0, -700)];
        // WHEN diffed
        let (ops, sorted_by) = op_diffs(&a, &b);
        // THEN the biggest absolute change of self device memory comes first, and a row
        // missing from one run counts as zero there
        assert_eq!(sorted_by, "self_device_memory_usage");
        let names: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["aten::relu", "aten::mm", "aten::add"]);
        assert_eq!(ops[0].self_device_memory_usage.delta, Some(-700));
        assert_eq!(ops[0].self_device_memory_usage.a, None);
        assert_eq!(ops[0].calls.delta, Some(3));
        assert_eq!(ops[1].self_device_memory_usage.delta, Some(300));
        assert_eq!(ops[2].self_device_memory_usage.delta, Some(-50));
        assert_eq!(ops[2].self_device_memory_usage.b, None);
    }

    #[test]
    fn host_only_runs_sort_by_self_cpu_and_sum_same_names() {
        let a = [row("f", 1, 10, 0), row("f", 1, 5, 0), row("g", 1, 0, 0)];
        let b = [row("f", 1, 20, 0), row("g", 1, -30, 0)];
        let (ops, sorted_by) = op_diffs(&a, &b);
        assert_eq!(sorted_by, "self_cpu_memory_usage");
        assert_eq!(ops[0].name, "g");
        assert_eq!(ops[1].self_cpu_memory_usage.a, Some(15));
        assert_eq!(ops[1].calls.delta, Some(-1));
    }

    #[test]
    fn device_values_need_both_sides() {
        assert_eq!(Change::both(Some(3), None::<i64>).delta, None);
        assert_eq!(Change::both(Some(3), Some(10)).delta, Some(7));
        assert_eq!(Change::or_zero(None, Some(4), 0).delta, Some(4));
    }
}
