//! Reading the event array on several threads, with the output of one.
//!
//! The main thread reads the stream and cuts it into chunks of about [`CHUNK_BYTES`] at
//! what looks like a boundary between two events (`}`, `,`, `{"` with whitespace between),
//! worker threads scan each chunk's events ([`fast::scan`], serde for the rare event the fast
//! reader leaves), and the main thread applies the results to the builder strictly in chunk
//! order, so the recording is the one a single thread builds.
//!
//! A cut is only a guess (the pattern could sit inside a string); a worker trusts a chunk only
//! if its events parse back to back from its first byte and the last one ends exactly at the
//! cut. Anything else — a wrong guess, a syntax error, a value that is not an event, the end
//! of the array — stops the chunk at the event where it happened: the bytes from there on are
//! given back to the stream, and the caller reads that event with the one-thread code (which
//! reports any error exactly as before) before handing back to the workers. Read errors are
//! held by the stream until the events before them are used ([`JsonStream::read_ahead`]).

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::Scope;

use crossbeam_channel::{Receiver, Sender, bounded};
use serde::de::IgnoredAny;

use super::builder::Builder;
use super::fast::{self, ArgsAt, Spans};
use super::raw::RawEvent;
use crate::parse::json_stream::{JsonStream, StreamError, ValueError, parse_one};

/// Target size of a chunk, and of each read from the input while the workers run: the
/// input's `BufReader` size, so that reads go past it instead of being copied twice.
/// 256 KiB is about 700 events of a PyTorch trace: handing a chunk over (two channel
/// messages, ~10 µs) costs about 1 % of scanning it (~0.8 ms).
pub const CHUNK_BYTES: usize = crate::parse::input::READ_CHUNK_BYTES;

/// Chunks in flight per worker, plus one queued: while the main thread applies a result,
/// the queued chunk keeps the workers busy. On two cores that is 3 chunks, ~1 MiB of
/// buffers and scan results.
pub const CHUNKS_PER_WORKER: usize = 1;

/// Worker threads at most. Past four, the main thread (reading, applying) is the limit.
pub const MAX_WORKERS: usize = 4;

/// How the event array is split up.
#[derive(Clone, Copy, Debug)]
pub(super) struct Config {
    pub(super) chunk_bytes: usize,
    pub(super) workers: usize,
    pub(super) in_flight: usize,
}

impl Config {
    /// One worker per core (at most [`MAX_WORKERS`]); `None` on a single core.
    pub(super) fn for_this_machine() -> Option<Config> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = cores.min(MAX_WORKERS);
        (workers >= 2).then_some(Config {
            chunk_bytes: CHUNK_BYTES,
            workers,
            in_flight: workers * CHUNKS_PER_WORKER + 1,
        })
    }
}

/// One event of a chunk as a worker found it: 152 bytes.
#[derive(Debug)]
enum Found {
    /// Scanned by the fast reader: where it starts, its fields' spans in the chunk, and
    /// which of the chunk's [`Scanned::args`] holds the `args` fields it read (or
    /// [`NO_ARGS`]).
    Fast(u32, Spans, u32),
    /// Left to serde: where it starts in the chunk.
    Slow(u32),
}

/// [`Found::Fast`] without `args` read.
const NO_ARGS: u32 = u32::MAX;

/// What the workers found in a chunk; the vectors go back and forth between the threads,
/// reserved by the main thread so that workers do not allocate.
#[derive(Debug, Default)]
struct Scanned {
    found: Vec<Found>,
    /// The `args` fields read from memory and metadata events (208 bytes each, so kept
    /// apart from the other events).
    args: Vec<ArgsAt>,
}

/// Room reserved per chunk byte: events of real traces are 150 bytes or more, a third of
/// them memory events at most; a chunk with smaller events makes its worker grow these.
const BYTES_PER_EVENT: usize = 128;
const BYTES_PER_ARGS: usize = 384;

struct Job {
    seq: u64,
    /// Stream offset of the chunk's first byte.
    base: u64,
    /// The chunk is `bytes[range]`.
    bytes: Vec<u8>,
    range: std::ops::Range<usize>,
    scanned: Scanned,
}

struct Done {
    seq: u64,
    base: u64,
    bytes: Vec<u8>,
    range: std::ops::Range<usize>,
    scanned: Scanned,
    /// Where the first event the worker could not take starts, if any.
    stop: Option<usize>,
}

/// What a run leaves to the caller: read events with the one-thread code until the stream
/// is past `until`, then run again.
pub(super) struct Handover {
    pub(super) until: u64,
    /// Whether the run consumed any event (so the stream is just past a comma).
    pub(super) consumed: bool,
}

/// The worker threads and the chunks they are working on.
pub(super) struct Pool {
    config: Config,
    jobs: Sender<Job>,
    done: Receiver<Done>,
    next_seq: u64,
    free: Vec<(Vec<u8>, Scanned)>,
}

impl Pool {
    /// Start the workers inside `scope`. `None` if no thread could be started.
    pub(super) fn start<'scope>(scope: &'scope Scope<'scope, '_>, config: Config) -> Option<Pool> {
        let (jobs, job_rx) = bounded::<Job>(config.in_flight);
        let (done_tx, done) = bounded::<Done>(config.in_flight);
        let mut started = 0;
        for i in 0..config.workers {
            let (rx, tx) = (job_rx.clone(), done_tx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("vramscope-json-{i}"))
                .spawn_scoped(scope, move || work(&rx, &tx));
            started += usize::from(spawned.is_ok());
        }
        (started > 0).then_some(Pool {
            config,
            jobs,
            done,
            next_seq: 0,
            free: Vec::new(),
        })
    }

    /// Read events from `stream` (just past `[` or a `,` of the event array) on the workers
    /// until a chunk cannot be cut or a worker stops at an event; see [`Handover`].
    pub(super) fn run<R: Read>(
        &mut self,
        stream: &mut JsonStream<R>,
        b: &mut Builder,
    ) -> Result<Handover, StreamError> {
        let start = stream.offset();
        let mut applied = self.next_seq;
        let mut ready: BTreeMap<u64, Done> = BTreeMap::new();
        let mut until = None;
        // Bytes to give back to the stream, in order, after a stop.
        let mut give_back: Vec<(Vec<u8>, std::ops::Range<usize>)> = Vec::new();
        loop {
            while until.is_none() && self.next_seq - applied < self.config.in_flight as u64 {
                if !self.dispatch(stream)? {
                    until = Some(stream.offset() + stream.window().len() as u64);
                }
            }
            if applied == self.next_seq {
                break;
            }
            let Ok(done) = self.done.recv() else {
                // Workers catch their panics and live as long as the pool, so this cannot
                // happen; were it to, the chunks they held are lost: fail, never guess.
                let lost = io::Error::other("a parsing thread stopped");
                return Err(StreamError::Io(lost, stream.offset()));
            };
            ready.insert(done.seq, done);
            while let Some(done) = ready.remove(&applied) {
                applied += 1;
                if !give_back.is_empty() {
                    give_back.push((done.bytes, done.range));
                    continue;
                }
                match apply(b, &done) {
                    None => self.free.push((done.bytes, done.scanned)),
                    Some(stop) => {
                        until = Some(done.base + stop as u64 + 1);
                        give_back.push((done.bytes, done.range.start + stop..done.range.end));
                    }
                }
            }
        }
        if !give_back.is_empty() {
            let parts: Vec<&[u8]> = give_back
                .iter()
                .map(|(bytes, range)| bytes.get(range.clone()).unwrap_or_default())
                .collect();
            stream.unread(&parts);
        }
        Ok(Handover {
            until: until.unwrap_or(0),
            consumed: stream.offset() > start,
        })
    }

    /// Cut the next chunk off the stream and send it to the workers; false when no cut is
    /// found in what the stream holds.
    fn dispatch<R: Read>(&mut self, stream: &mut JsonStream<R>) -> Result<bool, StreamError> {
        stream.read_ahead(self.config.chunk_bytes)?;
        let window = stream.window();
        // The whole window (what one read brought, past the last event boundary) unless it
        // holds many chunks (the stream's first, larger read): then about a chunk.
        let target = if window.len() <= 2 * self.config.chunk_bytes {
            window.len()
        } else {
            self.config.chunk_bytes
        };
        let Some(cut) = find_cut(window, target) else {
            return Ok(false);
        };
        let (spare, mut scanned) = self.free.pop().unwrap_or_default();
        scanned.found.clear();
        scanned.found.reserve(cut / BYTES_PER_EVENT + 16);
        scanned.args.clear();
        scanned.args.reserve(cut / BYTES_PER_ARGS + 16);
        let (seq, base) = (self.next_seq, stream.offset());
        let (bytes, range) = stream.take_front(cut, spare);
        let job = Job {
            seq,
            base,
            bytes,
            range,
            scanned,
        };
        if self.jobs.send(job).is_err() {
            return Ok(false);
        }
        self.next_seq += 1;
        Ok(true)
    }
}

/// A worker: scan chunks until the pool is dropped.
fn work(jobs: &Receiver<Job>, done: &Sender<Done>) {
    for mut job in jobs.iter() {
        let chunk = job.bytes.get(job.range.clone()).unwrap_or_default();
        let outcome = catch_unwind(AssertUnwindSafe(|| scan_chunk(chunk, &mut job.scanned)));
        // A bug here must not lose the chunk: the main thread then reads all of it.
        let stop = outcome.unwrap_or_else(|_| {
            job.scanned.found.clear();
            Some(0)
        });
        let result = Done {
            seq: job.seq,
            base: job.base,
            bytes: job.bytes,
            range: job.range,
            scanned: job.scanned,
            stop,
        };
        if done.send(result).is_err() {
            return;
        }
    }
}

/// Scan a chunk's events: each must parse and be followed by a comma, the last one's
/// comma being the chunk's last byte. Returns where the first event that is not starts.
fn scan_chunk(bytes: &[u8], out: &mut Scanned) -> Option<usize> {
    let mut pos = 0;
    loop {
        pos = skip_ws(bytes, pos);
        if pos == bytes.len() {
            return None;
        }
        let start = pos;
        let at = u32::try_from(start).ok()?;
        pos = match fast::scan(bytes, start) {
            Some((spans, read, end)) => {
                let args = match read {
                    Some(read) => {
                        out.args.push(read);
                        u32::try_from(out.args.len() - 1).ok()?
                    }
                    None => NO_ARGS,
                };
                out.found.push(Found::Fast(at, spans, args));
                end
            }
            None => match serde_end(bytes.get(start..)?) {
                Some(n) => {
                    out.found.push(Found::Slow(at));
                    start + n
                }
                None => return Some(start),
            },
        };
        pos = skip_ws(bytes, pos);
        if bytes.get(pos) != Some(&b',') {
            out.found.pop();
            return Some(start);
        }
        pos += 1;
    }
}

/// How many bytes serde takes for the event at the start of `window` (as the one-thread
/// reader does, including events it skips for their field types); `None` on an error.
fn serde_end(window: &[u8]) -> Option<usize> {
    match parse_one::<RawEvent<'_>>(window) {
        Ok((_, n)) => Some(n),
        Err(ValueError::Json(j)) if j.classify() == serde_json::error::Category::Data => {
            parse_one::<IgnoredAny>(window).ok().map(|(_, n)| n)
        }
        Err(_) => None,
    }
}

#[cfg(test)]
thread_local! {
    /// Bytes of the chunks this thread applied whole, and chunks it stopped in: tests check
    /// that the workers did the work.
    static APPLIED: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Apply a chunk's events in order. Returns where the worker (or this thread) stopped.
fn apply(b: &mut Builder, done: &Done) -> Option<usize> {
    let stop = apply_events(b, done);
    #[cfg(test)]
    APPLIED.with(|a| {
        let (whole, stopped) = a.get();
        a.set(if stop.is_none() {
            (whole + done.range.len() as u64, stopped)
        } else {
            (whole, stopped + 1)
        });
    });
    stop
}

fn apply_events(b: &mut Builder, done: &Done) -> Option<usize> {
    let chunk = done.bytes.get(done.range.clone())?;
    for found in &done.scanned.found {
        match found {
            Found::Fast(start, spans, args) => {
                match spans.fields(chunk, done.scanned.args.get(*args as usize)) {
                    Some(fields) => b.add(fields),
                    None => return Some(*start as usize),
                }
            }
            Found::Slow(start) => {
                let window = chunk.get(*start as usize..)?;
                if super::one::read_one(b, window).is_err() {
                    return Some(*start as usize);
                }
            }
        }
    }
    done.stop
}

fn skip_ws(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(|&b| is_ws(b)) {
        pos += 1;
    }
    pos
}

/// Where to cut `window` into a chunk of about `target` bytes: just past a comma between
/// `}` and `{"` (whitespace allowed between), the last such comma before `target`, else
/// the first after it. `None` when there is none (a huge event, or the array's end).
fn find_cut(window: &[u8], target: usize) -> Option<usize> {
    let is_cut = |comma: usize| {
        let before = window[..comma].iter().rev().find(|b| !is_ws(**b));
        let mut after = window[comma + 1..].iter().filter(|b| !is_ws(**b));
        before == Some(&b'}') && after.next() == Some(&b'{') && after.next() == Some(&b'"')
    };
    let split = target.min(window.len());
    let mut at = window[..split].iter().rposition(|&b| b == b',');
    while let Some(comma) = at {
        if is_cut(comma) {
            return Some(comma + 1);
        }
        at = window[..comma].iter().rposition(|&b| b == b',');
    }
    let mut from = split;
    while let Some(rel) = window[from..].iter().position(|&b| b == b',') {
        let comma = from + rel;
        if is_cut(comma) {
            return Some(comma + 1);
        }
        from = comma + 1;
    }
    None
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

#[cfg(test)]
mod tests;
const _: () = assert!(std::mem::size_of::<Found>() <= 152);
