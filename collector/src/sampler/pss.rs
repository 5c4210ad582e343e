//! The recorded tree's proportional set size (PSS), measured on its own thread.
//!
//! RSS counts a page shared by N processes N times: a DataLoader's forked workers share the
//! parent's pages copy-on-write, so the tree's summed RSS can exceed the machine's memory.
//! PSS (`Pss:` of /proc/PID/smaps_rollup) charges each process 1/N of such a page, so the
//! tree's PSS sums to what the tree really holds.
//!
//! The price: the kernel walks every page table entry of the process to answer, about
//! 15 ms per GiB resident (measured here: 15.6 ms for a 1 GiB process, against 0.02 ms for
//! the `status` file RSS comes from). A 20 GiB trainer would stall a 100 ms sampling tick by
//! a third of a second, so PSS is read on a thread of its own, as often as
//! [`PSS_CPU_SHARE`] of one core allows, and each sample carries the latest reading that
//! finished since the sample before it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::proc::read_proc;

/// Most of one core the PSS thread may use: after a reading that took `c` of CPU time, the
/// next starts `c / PSS_CPU_SHARE` later (at most one reading per sampling interval). At 5%, a 1 GiB
/// tree is read every 0.3 s, a 20 GiB one every 6 s.
pub const PSS_CPU_SHARE: f64 = 0.05;

/// Least time between two PSS readings, whatever the sampling interval: PSS moves with the
/// tree's pages, which a 10 ms sampler would otherwise pay to read a hundred times a second
/// (measured at 10 ms: a reading every sample costs record 4.7 % of a core, this period
/// 2.1 %). A process that lives this long is still read.
pub const PSS_MIN_PERIOD: Duration = Duration::from_millis(100);

/// What the sampler and the PSS thread share.
#[derive(Default)]
struct Shared {
    /// The members to measure, as the sampler last saw them.
    pids: Vec<u32>,
    /// A reading finished since the sampler last took one.
    fresh: Option<u64>,
}

/// The PSS thread. Dropping it stops and joins the thread (after a reading in progress).
pub struct PssMeter {
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl PssMeter {
    /// Start measuring, at most once per `interval`; `None` where this kernel has no
    /// smaps_rollup (before Linux 4.14) or the thread cannot start.
    pub fn start(interval: Duration) -> Option<PssMeter> {
        pss_bytes(std::process::id())?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (theirs, stopped) = (Arc::clone(&shared), Arc::clone(&stop));
        let handle = std::thread::Builder::new()
            .name("vramscope-pss".into())
            .spawn(move || measure(&theirs, &stopped, interval))
            .ok()?;
        Some(PssMeter {
            shared,
            stop,
            handle: Some(handle),
        })
    }

    /// Tell the thread the members now; the reading that finished since the last call.
    pub fn offer(&self, pids: &[u32]) -> Option<u64> {
        let mut s = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        s.pids.clear();
        s.pids.extend_from_slice(pids);
        s.fresh.take()
    }
}

impl Drop for PssMeter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// The thread's loop: read, publish, wait out the budget.
fn measure(shared: &Mutex<Shared>, stop: &AtomicBool, interval: Duration) {
    while !stop.load(Ordering::Acquire) {
        let pids = shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pids
            .clone();
        let began = Instant::now();
        let cpu_before = thread_cpu();
        let total = tree_pss_bytes(&pids);
        // The budget is of CPU, not of wall time: on a loaded machine a read that waited for
        // a core would otherwise push the next one out by seconds.
        let cost = match (cpu_before, thread_cpu()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => began.elapsed(),
        };
        if let Some(total) = total {
            shared.lock().unwrap_or_else(PoisonError::into_inner).fresh = Some(total);
        }
        let next = began
            + interval
                .max(PSS_MIN_PERIOD)
                .max(cost.div_f64(PSS_CPU_SHARE));
        while !stop.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::park_timeout(next - now);
        }
    }
}

/// CPU time this thread has used (user + system).
fn thread_cpu() -> Option<Duration> {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_THREAD).ok()?;
    let to = |t: nix::sys::time::TimeVal| -> Option<Duration> {
        Some(Duration::new(
            u64::try_from(t.tv_sec()).ok()?,
            u32::try_from(t.tv_usec()).ok()? * 1000,
        ))
    };
    Some(to(usage.user_time())? + to(usage.system_time())?)
}

/// PSS of one process in bytes (`Pss:` of /proc/PID/smaps_rollup).
pub fn pss_bytes(pid: u32) -> Option<u64> {
    let rollup = read_proc(&format!("/proc/{pid}/smaps_rollup"))?;
    let line = rollup.lines().find(|l| l.starts_with("Pss:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Total PSS of `pids`; `None` when none of them could be read (all exited, or none given).
pub fn tree_pss_bytes(pids: &[u32]) -> Option<u64> {
    pids.iter()
        .filter_map(|&p| pss_bytes(p))
        .reduce(|a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_pss_is_read_and_at_most_rss() {
        let me = std::process::id();
        let pss = pss_bytes(me).expect("smaps_rollup on Linux >= 4.14");
        let rss = super::super::proc::rss_bytes(me).expect("own RSS");
        assert!(pss > 1 << 20, "a test process holds more than 1 MiB: {pss}");
        // PSS charges shared pages in part; it never exceeds RSS by more than the pages
        // that changed between the two reads.
        assert!(pss <= rss + (8 << 20), "PSS {pss} vs RSS {rss}");
        assert_eq!(tree_pss_bytes(&[]), None);
        assert_eq!(tree_pss_bytes(&[u32::MAX]), None);
    }

    #[test]
    fn the_meter_publishes_readings_of_the_members_offered() {
        let meter = PssMeter::start(Duration::from_millis(1)).expect("meter");
        let me = std::process::id();
        let mut got = None;
        for _ in 0..500 {
            if let Some(v) = meter.offer(&[me]) {
                got = Some(v);
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let got = got.expect("a reading within a second");
        assert!(got > 1 << 20, "{got}");
        drop(meter);
    }
}
