//! Sampling while a program runs: GPU memory through a [`GpuProbe`] (NVML in production, a
//! scripted probe in tests) and the host memory of the process tree (RSS each sample, PSS as
//! often as its cost allows), on a named thread that sends recording lines over a bounded
//! channel to whoever writes them.

pub mod nvml;
pub mod proc;
pub mod pss;

use std::io;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel::Sender;

use crate::parse::recording::{DeviceHeader, GpuReading, Line};
pub use proc::ProcessTree;

/// Lines that may wait for the writer before the sampler blocks: at 1 ms intervals a
/// quarter second of slack; a sample line is well under 1 KiB.
pub const SAMPLE_QUEUE: usize = 256;

/// Where GPU memory readings come from: the seam between the sampler and the hardware.
pub trait GpuProbe: Send {
    /// The GPUs, as the recording's header lists them.
    fn devices(&self) -> Vec<DeviceHeader>;
    /// One reading per GPU; processes of `tree` (the recorded process and its descendants)
    /// are attributed to it, every other process is not.
    fn read(&mut self, tree: &mut ProcessTree) -> Vec<GpuReading>;
    /// Things worth a note in the recording that came up while reading (each said once).
    fn take_notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// A probe that replays a fixed script of readings, for tests and demos.
pub struct ScriptedProbe {
    /// The devices reported.
    pub devices: Vec<DeviceHeader>,
    /// Readings, returned in turn; the last repeats.
    pub script: Vec<Vec<GpuReading>>,
    next: usize,
}

impl ScriptedProbe {
    /// A probe that returns `script` in order.
    pub fn new(devices: Vec<DeviceHeader>, script: Vec<Vec<GpuReading>>) -> ScriptedProbe {
        ScriptedProbe {
            devices,
            script,
            next: 0,
        }
    }
}

impl GpuProbe for ScriptedProbe {
    fn devices(&self) -> Vec<DeviceHeader> {
        self.devices.clone()
    }

    fn read(&mut self, _tree: &mut ProcessTree) -> Vec<GpuReading> {
        let i = self.next.min(self.script.len().saturating_sub(1));
        self.next += 1;
        self.script.get(i).cloned().unwrap_or_default()
    }
}

/// The sampling thread. Dropping it stops and joins the thread.
///
/// Between samples the thread parks (a futex wait with a timeout) and is unparked to stop:
/// waiting on a channel instead spins and yields before it blocks, a dozen `sched_yield`
/// calls per sample, which at 10 ms intervals was a third of vramscope's own CPU time.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Start sampling `root_pid`'s tree every `interval` (the first sample at once), with
    /// times relative to `start`, sending sample and note lines to `out`. The thread ends
    /// when stopped or when `out` is disconnected.
    pub fn start(
        mut probe: Option<Box<dyn GpuProbe>>,
        root_pid: u32,
        interval: Duration,
        start: Instant,
        out: Sender<Line>,
    ) -> io::Result<Sampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("vramscope-sampler".into())
            .spawn(move || {
                let mut tree = ProcessTree::new(root_pid);
                let pss = pss::PssMeter::start(interval);
                let mut next = Instant::now();
                let since_start = || i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX);
                loop {
                    tree.refresh();
                    let t_ns = since_start();
                    let gpus = probe
                        .as_mut()
                        .map(|p| p.read(&mut tree))
                        .unwrap_or_default();
                    let rss = Some(tree.rss_bytes()).filter(|&r| r > 0);
                    let host_processes = u32::try_from(tree.pids().len()).ok();
                    let pss = pss.as_ref().and_then(|m| m.offer(tree.pids()));
                    let sample = Line::Sample {
                        t_ns,
                        gpus,
                        rss,
                        pss,
                        host_processes,
                    };
                    if out.send(sample).is_err() {
                        return;
                    }
                    for note in probe.as_mut().map(|p| p.take_notes()).unwrap_or_default() {
                        let t_ns = since_start();
                        if out.send(Line::Note { t_ns, note }).is_err() {
                            return;
                        }
                    }
                    next += interval;
                    if next < Instant::now() {
                        // Fell behind (a stalled writer, a loaded machine): skip the missed
                        // ticks rather than sampling in a burst.
                        next = Instant::now();
                    }
                    // Parking can end early (spuriously, or to stop): wait out the tick.
                    loop {
                        if stopped.load(Ordering::Acquire) {
                            return;
                        }
                        let now = Instant::now();
                        if now >= next {
                            break;
                        }
                        std::thread::park_timeout(next - now);
                    }
                }
            })?;
        Ok(Sampler {
            stop,
            handle: Some(handle),
        })
    }

    /// Stop sampling and wait for the thread (at once, whatever the interval).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::bounded;

    #[test]
    fn samples_the_tree_until_stopped() {
        let probe = ScriptedProbe::new(
            vec![DeviceHeader {
                index: 0,
                ..DeviceHeader::default()
            }],
            vec![
                vec![GpuReading {
                    index: 0,
                    used: 1 << 30,
                    total: Some(80 << 30),
                    procs: Some(1 << 29),
                    ..GpuReading::default()
                }],
                vec![GpuReading {
                    index: 0,
                    used: 2 << 30,
                    total: Some(80 << 30),
                    procs: Some(3 << 29),
                    ..GpuReading::default()
                }],
            ],
        );
        let start = Instant::now();
        let (tx, rx) = bounded(SAMPLE_QUEUE);
        let mut sampler = Sampler::start(
            Some(Box::new(probe)),
            std::process::id(),
            Duration::from_millis(5),
            start,
            tx,
        )
        .expect("start");
        let mut lines = Vec::new();
        while lines.len() < 5 {
            lines.push(rx.recv_timeout(Duration::from_secs(5)).expect("a sample"));
        }
        sampler.stop();
        let used: Vec<u64> = lines
            .iter()
            .filter_map(|l| match l {
                Line::Sample { gpus, rss, .. } => {
                    assert!(rss.is_some_and(|r| r > 0), "the test process has RSS");
                    gpus.first().map(|g| g.used)
                }
                _ => None,
            })
            .collect();
        assert_eq!(used[..3], [1 << 30, 2 << 30, 2 << 30]);
        let times: Vec<i64> = lines
            .iter()
            .filter_map(|l| {
                if let Line::Sample { t_ns, .. } = l {
                    Some(*t_ns)
                } else {
                    None
                }
            })
            .collect();
        assert!(times.windows(2).all(|w| w[1] > w[0]), "{times:?}");
        // Stopped: the channel closes and nothing more arrives after the queue drains.
        let rest: Vec<Line> = rx.iter().collect();
        assert!(rest.len() <= SAMPLE_QUEUE);
    }
}
