//! A trace and the memory timeline exported from the same profile: torch's category of
//! each tensor put onto the trace's allocation of it. The timeline's times are the trace's
//! clock (ns since the epoch: the trace's `baseTimeNanoseconds` plus its event times; to
//! the ns in the raw export, to the µs in the plot), so an allocation of the trace and a tensor of
//! the timeline made at the same time with the same size are the same; the trace's
//! allocation is tagged with the tensor's category (read, not inferred).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::model::{MemEventKind, Recording, StorageTag, TensorRole};
use crate::parse::{LoadError, LoadOptions, load};

/// The recording property that names the timeline a trace's categories came from (the
/// summary's `categories_from`).
pub const CATEGORIES_FROM: &str = "vramscope_categories_from";

/// Memory timeline exports given beside other inputs, read once, each put onto the traces
/// it came from.
#[derive(Default)]
pub struct Beside {
    exports: Vec<(PathBuf, Tensors)>,
    used: Vec<AtomicBool>,
}

impl Beside {
    /// Read the exports at `paths`, keeping only their tensors by instant and size.
    pub fn read(paths: &[PathBuf], options: LoadOptions) -> Result<Beside, LoadError> {
        let exports = paths
            .iter()
            .map(|p| load(p, options).map(|rec| (p.clone(), Tensors::of(&rec))))
            .collect::<Result<Vec<_>, _>>()?;
        let used = exports.iter().map(|_| AtomicBool::new(false)).collect();
        Ok(Beside { exports, used })
    }

    /// Put onto `trace` the categories of every export that came from its profile, and
    /// name them in its [`CATEGORIES_FROM`] property.
    pub fn put_onto(&self, trace: &mut Recording) {
        let mut named = Vec::new();
        for ((path, export), used) in self.exports.iter().zip(&self.used) {
            if let Some(a) = export.attach(trace) {
                used.store(true, Ordering::Relaxed);
                named.push(format!(
                    "torch's memory timeline {} ({} of its {} tensors made in the trace)",
                    path.display(),
                    a.tagged,
                    a.timeline_tensors
                ));
            }
        }
        if !named.is_empty() {
            (trace.meta.properties).insert(CATEGORIES_FROM.to_owned(), named.join("; "));
        }
    }

    /// The exports no trace came from, to be read as inputs of their own.
    pub fn unused(&self) -> Vec<&Path> {
        (self.exports.iter().zip(&self.used))
            .filter(|(_, used)| !used.load(Ordering::Relaxed))
            .map(|((path, _), _)| path.as_path())
            .collect()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.exports.is_empty()
    }
}

/// The least share of the timeline's tensors made during the trace that must match the
/// trace's allocations for the two to be taken as one profile: other runs match by chance
/// only (equal sizes at equal nanoseconds of another clock).
const MIN_MATCHED_SHARE: f64 = 0.5;

/// What a timeline put onto a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attached {
    /// The trace's allocations given torch's category.
    pub tagged: u64,
    /// The timeline's tensors made while the trace recorded (the rest existed before).
    pub timeline_tensors: u64,
}

/// Tag `trace`'s allocations with the categories `timeline` (read by this module) gives
/// the same tensors; `None`, with the trace unchanged, where fewer than
/// [`MIN_MATCHED_SHARE`] of the timeline's tensors are the trace's (another run).
pub fn attach(trace: &mut Recording, timeline: &Recording) -> Option<Attached> {
    Tensors::of(timeline).attach(trace)
}

/// A timeline's tensors made while profiling, by (instant at its resolution, bytes), with
/// their roles: built once per export, put onto as many traces as are given beside it.
struct Tensors {
    /// The role of the tensors made at that instant with that size; `None` where two of
    /// them have different roles (neither then says).
    by_instant: HashMap<(i64, i64), Option<TensorRole>>,
    /// How many tensors (some may share a key).
    count: u64,
    /// 1 ns for the raw export, 1 µs for the plot.
    resolution_ns: i64,
}

impl Tensors {
    fn of(timeline: &Recording) -> Tensors {
        let resolution_ns = timeline_resolution_ns(timeline);
        let roles: HashMap<u64, TensorRole> = timeline
            .storage_tags
            .iter()
            .map(|t| (t.addr, t.role))
            .collect();
        let first_ns = timeline.meta.start_ns;
        let mut by_instant: HashMap<(i64, i64), Option<TensorRole>> = HashMap::new();
        let mut count = 0u64;
        for e in &timeline.mem_events {
            let role = e.addr.get().and_then(|a| roles.get(&a)).copied();
            // Tensors from before profiling sit at the first time, made before any event.
            if e.kind != MemEventKind::Alloc || role.is_none() || e.time_ns == first_ns {
                continue;
            }
            count += 1;
            let slot = by_instant
                .entry((e.time_ns / resolution_ns, e.bytes))
                .or_insert(role);
            if *slot != role {
                *slot = None;
            }
        }
        Tensors {
            by_instant,
            count,
            resolution_ns,
        }
    }

    /// [`attach`] with the timeline's tensors found already.
    fn attach(&self, trace: &mut Recording) -> Option<Attached> {
        let mut tags = Vec::new();
        for e in &trace.mem_events {
            let (MemEventKind::Alloc, Some(addr)) = (e.kind, e.addr.get()) else {
                continue;
            };
            let key = (e.time_ns / self.resolution_ns, e.bytes);
            if let Some(Some(role)) = self.by_instant.get(&key) {
                tags.push(StorageTag {
                    device: e.device,
                    addr,
                    bytes: e.bytes.unsigned_abs(),
                    role: *role,
                    since_ns: e.time_ns,
                });
            }
        }
        let matched = tags.len() as f64;
        if self.count == 0 || matched < MIN_MATCHED_SHARE * self.count as f64 {
            return None;
        }
        let tagged = tags.len() as u64;
        trace.storage_tags.extend(tags);
        Some(Attached {
            tagged,
            timeline_tensors: self.count,
        })
    }
}

/// The timeline's time resolution: 1 ns for the raw export, 1 µs for the plot (whose times
/// torch truncates to µs).
fn timeline_resolution_ns(timeline: &Recording) -> i64 {
    let plot = timeline.mem_events.iter().all(|e| e.time_ns % 1000 == 0);
    if plot { 1000 } else { 1 }
}
