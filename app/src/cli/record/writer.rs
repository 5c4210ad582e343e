//! The writer thread: lines from the sampler, the signal forwarder and the end of the run
//! come over one bounded channel and are appended to the recording, flushed at least every
//! `FLUSH_INTERVAL`. It also keeps the peaks for the end summary and redraws the live status
//! line. When the recording cannot be written (disk full, a vanished mount) it says so once
//! and keeps draining the channel, so the sampler never blocks and the program runs on.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::output::terminal::eprint_escaped;
use collector::parse::recording::{Line, RecordingWriter};
use collector::units::bytes_iec;
use crossbeam_channel::{Receiver, TryRecvError};

/// How often the writer wakes to take what came (it parks in between: waiting on the
/// channel itself spins and yields before blocking, for every line). Lines wait at most this
/// long; at 1 ms sampling that is 50 lines of the channel's 256, so the sampler never waits,
/// and the 500 ms flush deadline is kept within a tick.
const TICK: Duration = Duration::from_millis(50);

/// How often the live status line is redrawn: often enough to watch, rarely enough to cost
/// nothing next to the program's own output.
const STATUS_EVERY: Duration = Duration::from_millis(250);

/// What one GPU did over the run, as the samples said.
#[derive(Clone, Debug, Default)]
pub struct GpuPeaks {
    /// Used now (last sample).
    pub used_bytes: u64,
    /// Peak used on the device.
    pub peak_used_bytes: u64,
    /// When, since the start.
    pub peak_used_at: Duration,
    /// Total memory.
    pub total_bytes: Option<u64>,
    /// Peak of the recorded tree.
    pub peak_procs_bytes: Option<u64>,
    /// Per pid: peak bytes (`None`: listed without its memory).
    pub pids: BTreeMap<u32, Option<u64>>,
}

/// What the writer saw and did.
#[derive(Clone, Debug, Default)]
pub struct WriterReport {
    /// Sample lines received.
    pub samples: u64,
    /// Per NVML index.
    pub gpus: BTreeMap<u32, GpuPeaks>,
    /// Peak host RSS of the tree.
    pub peak_rss_bytes: Option<u64>,
    /// Peak host PSS of the tree, where read.
    pub peak_pss_bytes: Option<u64>,
    /// Most processes in the tree at one sample.
    pub most_processes: Option<u32>,
    /// The first write error, if the recording could not be written to the end.
    pub error: Option<String>,
    /// Whether the end line was written and the file synced.
    pub finalised: bool,
}

impl WriterReport {
    fn observe(&mut self, line: &Line) {
        let Line::Sample {
            t_ns,
            gpus,
            rss,
            pss,
            host_processes,
        } = line
        else {
            return;
        };
        self.samples += 1;
        let at = Duration::from_nanos(u64::try_from(*t_ns).unwrap_or(0));
        for g in gpus {
            let first = !self.gpus.contains_key(&g.index);
            let p = self.gpus.entry(g.index).or_default();
            p.used_bytes = g.used;
            if first || g.used > p.peak_used_bytes {
                p.peak_used_bytes = g.used;
                p.peak_used_at = at;
            }
            p.total_bytes = g.total.or(p.total_bytes);
            if let Some(procs) = g.procs {
                p.peak_procs_bytes = Some(p.peak_procs_bytes.map_or(procs, |q| q.max(procs)));
            }
            for &(pid, bytes) in &g.pids {
                let e = p.pids.entry(pid).or_insert(None);
                *e = match (*e, bytes) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        let max = |peak: Option<u64>, now: Option<u64>| peak.max(now);
        self.peak_rss_bytes = max(self.peak_rss_bytes, *rss);
        self.peak_pss_bytes = max(self.peak_pss_bytes, *pss);
        self.most_processes = self.most_processes.max(*host_processes);
    }
}

/// The live status line on stderr, when stderr is a terminal.
struct Status {
    start: Instant,
    last: Option<Instant>,
    drawn: bool,
}

impl Status {
    fn draw(&mut self, report: &WriterReport) {
        if self.last.is_some_and(|t| t.elapsed() < STATUS_EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        let mut line = format!(
            "vramscope: recording {:.1} s",
            self.start.elapsed().as_secs_f64()
        );
        let b = |n: u64| bytes_iec(i64::try_from(n).unwrap_or(i64::MAX));
        for (i, g) in &report.gpus {
            line.push_str(&format!(
                " | cuda:{i} {} (peak {})",
                b(g.used_bytes),
                b(g.peak_used_bytes)
            ));
        }
        if let Some(r) = report.peak_rss_bytes {
            line.push_str(&format!(" | host peak {}", b(r)));
        }
        // One line redrawn in place: carriage return, clear to the end of the line.
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}

/// Say once that the recording cannot be written, and why.
fn fail(
    report: &mut WriterReport,
    status: &mut Option<Status>,
    path: &std::path::Path,
    e: std::io::Error,
) {
    if report.error.is_some() {
        return;
    }
    if let Some(s) = status.as_mut() {
        s.clear();
    }
    eprint_escaped!(
        "vramscope: warning: cannot write {}: {e}; the recording stops here, the program goes on",
        path.display()
    );
    report.error = Some(e.to_string());
}

/// The writer thread.
pub struct Writer {
    handle: JoinHandle<WriterReport>,
}

impl Writer {
    /// Wait for the writer to write what was sent (through the end line) and stop.
    pub fn join(self) -> WriterReport {
        // Wake it now rather than at its next tick.
        self.handle.thread().unpark();
        self.handle.join().unwrap_or_default()
    }
}

/// Start the writer. `writer` is `None` when even the header could not be written; lines
/// are then only counted. The thread ends at the end line or when every sender is gone.
pub fn spawn(
    writer: Option<RecordingWriter>,
    rx: Receiver<Line>,
    path: PathBuf,
    start: Instant,
) -> std::io::Result<Writer> {
    let handle = std::thread::Builder::new()
        .name("vramscope-writer".into())
        .spawn(move || run(writer, rx, &path, start))?;
    Ok(Writer { handle })
}

fn run(
    mut writer: Option<RecordingWriter>,
    rx: Receiver<Line>,
    path: &std::path::Path,
    start: Instant,
) -> WriterReport {
    let mut report = WriterReport::default();
    let mut status = std::io::stderr().is_terminal().then_some(Status {
        start,
        last: None,
        drawn: false,
    });
    loop {
        // Everything that came since the last tick, without blocking.
        loop {
            match rx.try_recv() {
                Ok(Line::End { t_ns, end }) => {
                    if let Some(w) = writer.take() {
                        match w.finish(t_ns, end) {
                            Ok(()) => report.finalised = true,
                            Err(e) => fail(&mut report, &mut status, path, e),
                        }
                    }
                    return done(report, status);
                }
                Ok(line) => {
                    report.observe(&line);
                    if let Some(w) = writer.as_mut()
                        && let Err(e) = w.write(&line)
                    {
                        writer = None;
                        fail(&mut report, &mut status, path, e);
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    if let Some(mut w) = writer.take()
                        && let Err(e) = w.flush()
                    {
                        fail(&mut report, &mut status, path, e);
                    }
                    return done(report, status);
                }
            }
        }
        if let Some(w) = writer.as_mut()
            && w.flush_due_in() == Some(Duration::ZERO)
            && let Err(e) = w.flush()
        {
            writer = None;
            fail(&mut report, &mut status, path, e);
        }
        if let Some(s) = status.as_mut() {
            s.draw(&report);
        }
        std::thread::park_timeout(TICK);
    }
}

fn done(report: WriterReport, mut status: Option<Status>) -> WriterReport {
    if let Some(s) = status.as_mut() {
        s.clear();
    }
    report
}
