//! Writing a recording: append-only lines, flushed at least every [`FLUSH_INTERVAL`].

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{EndInfo, FLUSH_INTERVAL, Header, Line, VERSION};

/// Writes a recording: append-only lines, flushed at least every [`FLUSH_INTERVAL`] as long
/// as lines keep coming (a writer that waits for lines calls [`RecordingWriter::flush_due_in`]
/// to bound its wait).
pub struct RecordingWriter {
    out: BufWriter<File>,
    last_flush: Instant,
    /// Whether lines were written since the last flush.
    dirty: bool,
}

/// Create the file for a recording, refusing to replace an existing one unless `overwrite`.
/// Done before the program starts, so a bad path fails before anything runs.
pub fn open_output(path: &Path, overwrite: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true);
    if overwrite {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    options.open(path)
}

impl RecordingWriter {
    /// Create `path` (refusing to overwrite an existing file unless `overwrite`) and write
    /// the header.
    pub fn create(path: &Path, header: &Header, overwrite: bool) -> io::Result<RecordingWriter> {
        RecordingWriter::new(open_output(path, overwrite)?, header)
    }

    /// Start a recording in `file` (from [`open_output`]): write the header and flush it.
    pub fn new(file: File, header: &Header) -> io::Result<RecordingWriter> {
        let mut w = RecordingWriter {
            out: BufWriter::new(file),
            last_flush: Instant::now(),
            dirty: false,
        };
        let mut header = header.clone();
        header.vramscope_recording = VERSION;
        w.line(&header)?;
        w.flush()?;
        Ok(w)
    }

    fn line<T: Serialize>(&mut self, value: &T) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, value)?;
        self.out.write_all(b"\n")?;
        self.dirty = true;
        if self.last_flush.elapsed() >= FLUSH_INTERVAL {
            self.flush()?;
        }
        Ok(())
    }

    /// Append a line.
    pub fn write(&mut self, line: &Line) -> io::Result<()> {
        self.line(line)
    }

    /// Push buffered lines to the file now.
    pub fn flush(&mut self) -> io::Result<()> {
        self.last_flush = Instant::now();
        self.dirty = false;
        self.out.flush()
    }

    /// How long a caller waiting for the next line may wait before buffered lines must be
    /// flushed; `None` when nothing is buffered.
    pub fn flush_due_in(&self) -> Option<Duration> {
        self.dirty
            .then(|| FLUSH_INTERVAL.saturating_sub(self.last_flush.elapsed()))
    }

    /// Write the end line, flush, and sync the file to disk.
    pub fn finish(mut self, t_ns: i64, end: EndInfo) -> io::Result<()> {
        self.line(&Line::End { t_ns, end })?;
        self.flush()?;
        self.out.get_ref().sync_data()
    }
}
