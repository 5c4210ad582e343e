//! Sampling while a program runs: GPU memory through a [`GpuProbe`] (NVML in production, a
//! scripted probe in tests) and the host memory of the process tree, on a named thread that
//! sends recording lines over a bounded channel to whoever writes them.

pub mod nvml;
pub mod proc;

use std::io;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};

use crate::parse::recording::{DeviceHeader, GpuReading, Line};

/// Samples that may wait for the writer before the sampler blocks. At 1 ms intervals this
/// is a quarter second of slack; a sample line is well under 1 KiB.
pub const SAMPLE_QUEUE: usize = 256;

/// Where GPU memory readings come from: the seam between the sampler and the hardware.
pub trait GpuProbe: Send {
    /// The GPUs, as the recording's header lists them.
    fn devices(&self) -> Vec<DeviceHeader>;
    /// One reading per GPU; `tree` is the recorded process and its descendants, whose
    /// memory is summed into `procs`.
    fn read(&mut self, tree: &[u32]) -> Vec<GpuReading>;
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

    fn read(&mut self, _tree: &[u32]) -> Vec<GpuReading> {
        let i = self.next.min(self.script.len().saturating_sub(1));
        self.next += 1;
        self.script.get(i).cloned().unwrap_or_default()
    }
}

/// The sampling thread. Dropping it stops and joins the thread.
pub struct Sampler {
    stop: Option<Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Start sampling `root_pid`'s tree every `interval` (the first sample at once), with
    /// times relative to `start`. Lines go to the returned receiver.
    pub fn start(
        mut probe: Option<Box<dyn GpuProbe>>,
        root_pid: u32,
        interval: Duration,
        start: Instant,
    ) -> io::Result<(Sampler, Receiver<Line>)> {
        let (tx, rx) = bounded::<Line>(SAMPLE_QUEUE);
        let (stop_tx, stop_rx) = bounded::<()>(1);
        let handle = std::thread::Builder::new()
            .name("vramscope-sampler".into())
            .spawn(move || {
                let mut next = Instant::now();
                loop {
                    let tree = proc::process_tree(root_pid);
                    let gpus = probe.as_mut().map(|p| p.read(&tree)).unwrap_or_default();
                    let rss = Some(proc::tree_rss_bytes(&tree)).filter(|&r| r > 0);
                    let t_ns = i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX);
                    if tx.send(Line::Sample { t_ns, gpus, rss }).is_err() {
                        return;
                    }
                    next += interval;
                    let wait = next.saturating_duration_since(Instant::now());
                    match stop_rx.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })?;
        Ok((
            Sampler {
                stop: Some(stop_tx),
                handle: Some(handle),
            },
            rx,
        ))
    }

    /// Stop sampling and wait for the thread.
    pub fn stop(&mut self) {
        // Dropping the sender wakes the thread at once, whatever the interval.
        self.stop.take();
        if let Some(h) = self.handle.take() {
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
                }],
                vec![GpuReading {
                    index: 0,
                    used: 2 << 30,
                    total: Some(80 << 30),
                    procs: Some(3 << 29),
                }],
            ],
        );
        let start = Instant::now();
        let (mut sampler, rx) = Sampler::start(
            Some(Box::new(probe)),
            std::process::id(),
            Duration::from_millis(5),
            start,
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
