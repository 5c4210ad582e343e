//! Rows (torch's steps 5–6): self memory = memory − Σ children's memory, rows grouped by
//! name, host-vs-device and annotation-or-not, in order of first appearance.

use super::OpRow;
use super::events::{FunctionEvent, OpNames, Prefix, RowName, without_overload};
use super::tree::Tree;
use crate::model::{Recording, STEP_PREFIX, StrId};

const MEMORY_ROW: &str = "[memory]";
const OOM_ROW: &str = "[OutOfMemory]";
/// The row every training step's span ([`STEP_PREFIX`]) folds into.
const STEP_ROW: &str = "ProfilerStep*";

/// The table's rows, added chunk by chunk in time order: in order of first appearance.
#[derive(Default)]
pub(super) struct Rows {
    rows: Vec<OpRow>,
    index: rustc_hash::FxHashMap<(RowName, bool, bool), usize>,
}

impl Rows {
    /// The rows.
    pub(super) fn finish(self) -> Vec<OpRow> {
        self.rows
    }

    /// Add one chunk's nested, folded events.
    pub(super) fn add(
        &mut self,
        rec: &Recording,
        names: &OpNames,
        events: &[FunctionEvent],
        prefix: &Prefix,
        alive: &[bool],
        tree: &Tree,
    ) {
        for (i, e) in events.iter().enumerate() {
            if !alive[i] || e.python() {
                continue;
            }
            let row = self.row(rec, names, e);
            let (cpu, device, self_cpu, self_dev) = memory(events, prefix, tree, i);
            let r = &mut self.rows[row];
            r.calls += 1;
            r.cpu_memory_usage = r.cpu_memory_usage.wrapping_add(cpu);
            r.device_memory_usage = r.device_memory_usage.wrapping_add(device);
            r.self_cpu_memory_usage = r.self_cpu_memory_usage.wrapping_add(self_cpu);
            r.self_device_memory_usage = r.self_device_memory_usage.wrapping_add(self_dev);
        }
    }

    /// The row of an event, made on its first appearance.
    fn row(&mut self, rec: &Recording, names: &OpNames, e: &FunctionEvent) -> usize {
        let (host, user_annotation) = (e.host(), e.user_annotation());
        let rows = &mut self.rows;
        *self
            .index
            .entry((e.name, host, user_annotation))
            .or_insert_with(|| {
                rows.push(OpRow {
                    name: match e.name {
                        RowName::STEP => STEP_ROW.to_owned(),
                        RowName::MEMORY => MEMORY_ROW.to_owned(),
                        RowName::OUT_OF_MEMORY => OOM_ROW.to_owned(),
                        RowName(id) => names.shown(rec, id).to_owned(),
                    },
                    calls: 0,
                    self_cpu_memory_usage: 0,
                    cpu_memory_usage: 0,
                    self_device_memory_usage: 0,
                    device_memory_usage: 0,
                    on_device: !host,
                    user_annotation,
                    net: None,
                });
                rows.len() - 1
            })
    }
}

/// Event i's CPU and device memory, and its self memory (memory − its children's; zero
/// for device-side events).
fn memory(
    events: &[FunctionEvent],
    prefix: &Prefix,
    tree: &Tree,
    i: usize,
) -> (i64, i64, i64, i64) {
    let e = &events[i];
    let (cpu, device) = prefix.bytes(e);
    let (mut self_cpu, mut self_dev) = (0i64, 0i64);
    if e.host() {
        let (mut kids_cpu, mut kids_dev) = (0i64, 0i64);
        for &k in tree.children(i) {
            let (c, d) = prefix.bytes(&events[k as usize]);
            kids_cpu = kids_cpu.wrapping_add(c);
            kids_dev = kids_dev.wrapping_add(d);
        }
        self_cpu = cpu.wrapping_sub(kids_cpu);
        self_dev = device.wrapping_sub(kids_dev);
    }
    (cpu, device, self_cpu, self_dev)
}

/// The spans (start, end ns) of the ops the row `name` counts — the ops of that name (any
/// overload of it, as the rows key them), or every `ProfilerStep#N` for `ProfilerStep*` —
/// sorted by start. The viewer highlights them when a row is clicked.
pub fn row_spans(rec: &Recording, name: &str) -> Vec<(i64, i64)> {
    let steps = name == STEP_ROW;
    let ids: Vec<StrId> = (0..rec.strings.len() as u32)
        .map(StrId)
        .filter(|&id| {
            let s = rec.strings.get(id);
            s == name || without_overload(s) == Some(name)
        })
        .collect();
    let mut spans: Vec<(i64, i64)> = rec
        .ops
        .iter()
        .filter(|o| {
            if steps {
                rec.op_name(o).starts_with(STEP_PREFIX)
            } else {
                ids.contains(&o.name)
            }
        })
        .map(|o| (o.start_ns, o.end_ns))
        .collect();
    spans.sort_unstable();
    spans
}
