//! `export --format parquet`: inputs read on all cores, their rows written in input order
//! into one directory of Parquet files. Each reader thread takes the next input, reads it,
//! and hands its rows over in chunks through the input's own small channel; the writer
//! drains the channels in input order. A reader ahead of the writer waits with its one
//! recording, so memory holds at most one recording per thread and
//! [`CHANNEL_CHUNKS`] chunks per input in flight, whatever the number of inputs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::{Result, bail};
use collector::analysis::ranks::{MAX_WORKERS, rank_of};
use collector::{LoadError, LoadOptions, Timeline, load};
use crossbeam_channel::{Receiver, Sender, bounded};

use crate::output::file::{self, Policy};
use crate::output::parquet::{EXPORT_SHAPE, ExportWriter, InputRows, Written, input_rows};
use crate::output::style::stderr_warning;
use crate::output::terminal::eprint_escaped;

/// Chunks (`CHUNK_ROWS` rows of the Parquet writer, ~1 MB) queued per input: enough
/// to keep the writer busy while its reader produces the next.
const CHANNEL_CHUNKS: usize = 4;

/// The temporary directory's tag.
const TEMP_TAG: &str = "export";

/// What a reader thread says about its input.
enum Message {
    /// The input was read; it ends early at this byte if it was cut short.
    Read { truncated_at: Option<u64> },
    /// Rows.
    Rows(InputRows),
    /// All its rows were sent.
    Done,
    /// It could not be read.
    Failed(LoadError),
}

/// Write the export of `files` into the directory `output` under `policy`, reading on
/// `workers` threads.
pub fn write(
    output: &Path,
    policy: &Policy<'_>,
    files: &[PathBuf],
    options: LoadOptions,
    workers: usize,
) -> Result<Written> {
    let mut written = Written::default();
    file::write_dir(output, policy, &EXPORT_SHAPE, TEMP_TAG, |staging| {
        let mut writer = ExportWriter::create(staging)?;
        pipeline(files, options, workers, &mut writer)?;
        written = writer.finish()?;
        Ok(())
    })?;
    Ok(written)
}

fn pipeline(
    files: &[PathBuf],
    options: LoadOptions,
    workers: usize,
    writer: &mut ExportWriter,
) -> Result<()> {
    let workers = workers.clamp(1, MAX_WORKERS).min(files.len().max(1));
    let (senders, receivers): (Vec<Sender<Message>>, Vec<Receiver<Message>>) =
        files.iter().map(|_| bounded(CHANNEL_CHUNKS)).unzip();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let mut started = 0;
        for n in 0..workers {
            let work = || reader(files, options, &senders, &next, &stop);
            let spawned = std::thread::Builder::new()
                .name(format!("vramscope-export-{n}"))
                .spawn_scoped(scope, work);
            started += usize::from(spawned.is_ok());
        }
        if started == 0 {
            bail!("cannot start a thread to read the inputs");
        }
        let result = drain(files, receivers, writer);
        // Readers still running see the closed channels or the flag, and stop.
        stop.store(true, Ordering::Relaxed);
        result
    })
}

/// Take each input's messages in input order into `writer`.
fn drain(
    files: &[PathBuf],
    receivers: Vec<Receiver<Message>>,
    writer: &mut ExportWriter,
) -> Result<()> {
    for (path, receiver) in files.iter().zip(receivers) {
        loop {
            let Ok(message) = receiver.recv() else {
                bail!(
                    "the reader of {} stopped (a bug in vramscope)",
                    path.display()
                );
            };
            match message {
                Message::Read { truncated_at } => {
                    if let Some(at) = truncated_at {
                        eprint_escaped!(
                            "vramscope: {} {} ends early; read the complete events before byte {at}",
                            stderr_warning(),
                            path.display()
                        );
                    }
                }
                Message::Rows(rows) => writer.push(rows)?,
                Message::Done => break,
                Message::Failed(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

fn reader(
    files: &[PathBuf],
    options: LoadOptions,
    senders: &[Sender<Message>],
    next: &AtomicUsize,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let (Some(path), Some(tx)) = (files.get(i), senders.get(i)) else {
            return;
        };
        let rec = match load(path, options) {
            Ok(rec) => rec,
            Err(e) => {
                let _ = tx.send(Message::Failed(e));
                return;
            }
        };
        let truncated_at = rec.diagnostics.truncated_at;
        if tx.send(Message::Read { truncated_at }).is_err() {
            return;
        }
        let timeline = Timeline::build(&rec);
        let rank = rank_of(path, &rec.meta);
        let mut open = true;
        input_rows(path, rank, &rec, &timeline, |rows| {
            open = tx.send(Message::Rows(rows)).is_ok();
            open
        });
        if !open || tx.send(Message::Done).is_err() {
            return;
        }
    }
}
