//! The analysis worker: one named thread that runs the collector's analyses the panels
//! ask for — the key_averages table of a time range, what was live at an instant (with
//! fragmentation and the segment layout), the spans of one op, the what-if advice — so that a 1 GB trace's
//! O(n) analyses never run on the UI thread.
//!
//! Requests and replies travel over bounded channels. Each request carries the document
//! and a generation number; the worker runs only the newest request of each kind per
//! document (a dragged selection sends many), and the UI drops replies that are stale.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use collector::analysis::advise::{DeviceAdvice, Options, advise};
use collector::analysis::fragmentation::{
    Fragmentation, fragmentation_at, fragmentation_at_snapshot,
};
use collector::analysis::live::{GroupBy, LiveGroup, fold_after, live_at};
use collector::analysis::owners::{BlockOwner, owners};
use collector::analysis::segments::{SegmentLayout, layout_at, layout_at_snapshot};
use collector::analysis::simulate::{AllocatorConfig, SimulatedLayout, simulated_layout_at};
use collector::analysis::{OpRow, TimeWindow, key_averages_with_net, row_spans};
use collector::model::DeviceIdx;
use crossbeam_channel::{Receiver, Sender, bounded};

use super::loaded::Loaded;

/// Requests waiting for the worker; a full queue makes the UI skip a request, never block.
const QUEUE: usize = 64;
/// Live groups the inspector lists; the rest are one "N more groups" row (a snapshot can
/// have thousands of sites, and each row is a few widgets every frame).
const INSPECTOR_GROUPS: usize = 300;

/// What to compute.
#[derive(Clone, Debug, PartialEq)]
pub enum Job {
    /// key_averages for a range.
    Table {
        /// The range.
        window: TimeWindow,
    },
    /// What was live at an instant.
    Inspect {
        /// Device.
        device: DeviceIdx,
        /// The instant.
        at_ns: i64,
        /// Use the snapshot's own blocks (the instant is the snapshot's).
        at_snapshot: bool,
        /// An allocator setting to simulate the segments under, beside the recorded ones.
        simulate: Option<&'static str>,
    },
    /// When one table row's op ran.
    OpSpans {
        /// The row's name.
        name: String,
    },
    /// The what-if advice of every device.
    Advise {
        /// Ranks, micro-batches, capacity.
        options: Options,
    },
}

impl Job {
    fn kind(&self) -> u8 {
        match self {
            Job::Table { .. } => 0,
            Job::Inspect { .. } => 1,
            Job::OpSpans { .. } => 2,
            Job::Advise { .. } => 3,
        }
    }
}

/// A request: a job on one document.
pub struct Request {
    /// The document's id.
    pub doc: u64,
    /// Increases with every request of the same kind on the same document.
    pub generation: u64,
    /// The document's data.
    pub data: Arc<Loaded>,
    /// What to compute.
    pub job: Job,
}

/// What was live at an instant, and how the allocator's memory was laid out then.
#[derive(Debug)]
pub struct Inspection {
    /// The instant.
    pub at_ns: i64,
    /// Allocated bytes then.
    pub allocated_bytes: Option<i64>,
    /// Reserved bytes then.
    pub reserved_bytes: Option<i64>,
    /// The op running then.
    pub op: Option<String>,
    /// Live allocations grouped by site and the bytes no allocation seen holds, largest
    /// first, past [`INSPECTOR_GROUPS`] folded into one: they sum to `allocated_bytes`.
    pub groups: Vec<LiveGroup>,
    /// Fragmentation then, where segment geometry is known.
    pub fragmentation: Option<Fragmentation>,
    /// Segments and blocks then, where geometry is known.
    pub layout: Option<Vec<SegmentLayout>>,
    /// The owner of each block of `layout` (its stack's first user frame, its category).
    pub owners: Vec<Vec<BlockOwner>>,
    /// The segments simulated under the setting the Segments view asks for, where asked.
    pub simulated: Option<SimulatedLayout>,
}

/// The spans of one op, for highlighting on the timeline.
#[derive(Debug)]
pub struct OpSpans {
    /// The row's name.
    pub name: String,
    /// Span starts, sorted.
    pub starts_ns: Vec<i64>,
    /// Running maximum of the ends in the same order: a span before index i reaches
    /// `max_end_ns[i]` at most, which answers "does any span touch [a, b]" by binary search.
    pub max_end_ns: Vec<i64>,
}

impl OpSpans {
    /// Whether any span overlaps `[from_ns, to_ns]`.
    pub fn any_in(&self, from_ns: i64, to_ns: i64) -> bool {
        let n = self.starts_ns.partition_point(|&s| s <= to_ns);
        n.checked_sub(1)
            .and_then(|i| self.max_end_ns.get(i))
            .is_some_and(|&e| e >= from_ns)
    }
}

/// A finished job.
pub enum Outcome {
    /// The table of a range.
    Table(TimeWindow, Vec<OpRow>),
    /// An inspection.
    Inspect(Box<Inspection>),
    /// Spans of an op.
    OpSpans(Arc<OpSpans>),
    /// The advice of every device with allocations.
    Advise(Vec<DeviceAdvice>),
}

/// A reply to a [`Request`].
pub struct Reply {
    /// The document.
    pub doc: u64,
    /// The request's generation.
    pub generation: u64,
    /// The result.
    pub outcome: Outcome,
    /// How long the analysis took.
    pub elapsed: Duration,
}

/// The worker thread and its channels.
pub struct Worker {
    tx: Option<Sender<Request>>,
    rx: Option<Receiver<Reply>>,
    handle: Option<JoinHandle<()>>,
}

impl Worker {
    /// Start the worker; `ctx` is woken after every reply.
    pub fn start(ctx: &egui::Context) -> std::io::Result<Worker> {
        let (tx, requests) = bounded::<Request>(QUEUE);
        let (replies, rx) = bounded::<Reply>(QUEUE);
        let ctx = ctx.clone();
        let handle = std::thread::Builder::new()
            .name("vramscope-analysis".into())
            .spawn(move || serve(&requests, &replies, &ctx))?;
        Ok(Worker {
            tx: Some(tx),
            rx: Some(rx),
            handle: Some(handle),
        })
    }

    /// Queue a request; when the queue is full (or the worker is gone) the request comes
    /// back, for the caller to run itself.
    pub fn try_submit(&self, request: Request) -> Result<(), Request> {
        match &self.tx {
            Some(tx) => tx.try_send(request).map_err(|e| e.into_inner()),
            None => Err(request),
        }
    }

    /// Replies that have arrived.
    pub fn replies(&self) -> impl Iterator<Item = Reply> + '_ {
        self.rx.iter().flat_map(Receiver::try_iter)
    }
}

impl Drop for Worker {
    /// Closing both channels ends the worker's loop after its current job: its next
    /// `recv` or `send` fails.
    fn drop(&mut self) {
        self.tx = None;
        self.rx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn serve(requests: &Receiver<Request>, replies: &Sender<Reply>, ctx: &egui::Context) {
    while let Ok(first) = requests.recv() {
        // Keep only the newest request of each kind per document.
        let mut batch: Vec<Request> = vec![first];
        batch.extend(requests.try_iter());
        let mut newest: Vec<Request> = Vec::new();
        for r in batch {
            match newest
                .iter_mut()
                .find(|n| n.doc == r.doc && n.job.kind() == r.job.kind())
            {
                Some(slot) if slot.generation <= r.generation => *slot = r,
                Some(_) => {}
                None => newest.push(r),
            }
        }
        for r in newest {
            if replies.send(run_now(r)).is_err() {
                return;
            }
            ctx.request_repaint();
        }
    }
}

/// Run a request on this thread.
pub fn run_now(r: Request) -> Reply {
    let started = Instant::now();
    let outcome = run(&r.data, r.job);
    Reply {
        doc: r.doc,
        generation: r.generation,
        outcome,
        elapsed: started.elapsed(),
    }
}

fn run(data: &Loaded, job: Job) -> Outcome {
    match job {
        Job::Table { window } => {
            Outcome::Table(window, key_averages_with_net(&data.rec, Some(window)))
        }
        Job::Inspect {
            device,
            at_ns,
            at_snapshot,
            simulate,
        } => {
            let mut inspection = inspect(data, device, at_ns, at_snapshot);
            inspection.simulated = simulate.and_then(|conf| simulated(data, device, at_ns, conf));
            Outcome::Inspect(Box::new(inspection))
        }
        Job::OpSpans { name } => Outcome::OpSpans(Arc::new(op_spans(data, name))),
        Job::Advise { options } => Outcome::Advise(advise(&data.rec, &data.timeline, &options)),
    }
}

/// Everything the inspector and the segment view show for one instant.
pub fn inspect(data: &Loaded, device: DeviceIdx, at_ns: i64, at_snapshot: bool) -> Inspection {
    let (rec, timeline) = (&data.rec, &data.timeline);
    let (fragmentation, layout) = if at_snapshot && rec.allocator.is_some() {
        (
            fragmentation_at_snapshot(rec, device),
            layout_at_snapshot(rec, device),
        )
    } else {
        (
            fragmentation_at(rec, timeline, device, at_ns),
            layout_at(rec, timeline, device, at_ns),
        )
    };
    let live = live_at(rec, timeline, device, at_ns, GroupBy::Site);
    let owners = layout
        .as_deref()
        .map_or_else(Vec::new, |l| owners(rec, timeline, device, at_ns, l));
    Inspection {
        at_ns,
        allocated_bytes: live.allocated_bytes,
        reserved_bytes: live.reserved_bytes,
        op: data.op_at(at_ns).map(str::to_owned),
        groups: fold_after(live.groups, INSPECTOR_GROUPS),
        fragmentation,
        layout,
        owners,
        simulated: None,
    }
}

/// The segments the allocator would hold at `at_ns` under `conf` (the history replayed).
fn simulated(data: &Loaded, device: DeviceIdx, at_ns: i64, conf: &str) -> Option<SimulatedLayout> {
    let config = AllocatorConfig::parse(conf).ok()?;
    simulated_layout_at(&data.rec, device, &config, at_ns)
}

/// The spans of the ops a table row counts ([`row_spans`]), with running maxima of their
/// ends for the timeline's range queries.
pub fn op_spans(data: &Loaded, name: String) -> OpSpans {
    let spans = row_spans(&data.rec, &name);
    let mut running = i64::MIN;
    let max_end_ns = spans
        .iter()
        .map(|s| {
            running = running.max(s.1);
            running
        })
        .collect();
    OpSpans {
        name,
        starts_ns: spans.iter().map(|s| s.0).collect(),
        max_end_ns,
    }
}
