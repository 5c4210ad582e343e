//! Reading a recording that `vramscope record` is still writing, as it grows: the reader's
//! state is kept, and each [`RecordingTail::read_more`] reads only the lines appended
//! since, from the end of the last complete line (a line still being written is left for
//! the next call). [`RecordingTail::recording`] gives what [`super::read`] would give for
//! the lines read so far, so a viewer following the file pays for the new lines, not for
//! the whole file again (8 hours of 100 ms samples of 8 GPUs are 362 MB of lines, 3.7 s to
//! read whole; the second appended after them, 0.26 s with the copy: docs/PERFORMANCE.md).

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::reader::{Reading, read_header, read_line};
use super::snapshots::{Embedded, Pending};
use super::{Header, Line, packed};
use crate::model::Recording;
use crate::parse::{LoadError, LoadErrorKind, SourceError};

/// A recording read up to its last complete line, ready to read what is appended.
pub struct RecordingTail {
    path: PathBuf,
    header: Header,
    reading: Reading,
    /// Bytes of the file read: the header and every complete line after it.
    offset: u64,
}

impl RecordingTail {
    /// Read `path`'s header and every complete line. Packed recordings (never still being
    /// written) are refused.
    pub fn open(path: &Path) -> Result<RecordingTail, LoadError> {
        let error = |offset, kind| LoadError {
            path: path.to_path_buf(),
            offset,
            decompressed: false,
            kind,
            salvageable: false,
        };
        let file = File::open(path).map_err(|e| error(None, LoadErrorKind::Io(e)))?;
        let mut reader = BufReader::new(file);
        let mut buf = Vec::new();
        let (header, header_len) =
            read_header(&mut reader, &mut buf).map_err(|e| error(e.offset, e.kind))?;
        if let Ok(packed::PackedProbe { packed: Some(_) }) = serde_json::from_slice(&buf) {
            let why = "a packed recording, which is complete: nothing to follow".to_owned();
            return Err(error(Some(0), LoadErrorKind::Shape(why)));
        }
        let mut tail = RecordingTail {
            path: path.to_path_buf(),
            reading: Reading::new(&header),
            header,
            offset: header_len as u64,
        };
        tail.read_more()?;
        Ok(tail)
    }

    /// Read the complete lines appended since the last call; how many.
    pub fn read_more(&mut self) -> Result<u64, LoadError> {
        self.read_lines().map_err(|e| LoadError {
            path: self.path.clone(),
            offset: e.offset,
            decompressed: false,
            kind: e.kind,
            salvageable: false,
        })
    }

    fn read_lines(&mut self) -> Result<u64, SourceError> {
        let io = |offset, e| SourceError {
            offset: Some(offset),
            kind: LoadErrorKind::Io(e),
        };
        let mut file = File::open(&self.path).map_err(|e| io(self.offset, e))?;
        file.seek(SeekFrom::Start(self.offset))
            .map_err(|e| io(self.offset, e))?;
        let mut reader = BufReader::new(file);
        let mut buf = Vec::new();
        let mut lines = 0;
        loop {
            let n = read_line(&mut reader, &mut buf, self.offset)?;
            // A line without its newline is still being written: read it next time.
            if n == 0 || buf.last() != Some(&b'\n') {
                return Ok(lines);
            }
            let line: Line = serde_json::from_slice(&buf).map_err(|e| SourceError {
                offset: Some(self.offset),
                kind: LoadErrorKind::Syntax(format!("bad recording line: {e}")),
            })?;
            self.reading.apply(line);
            self.reading.rec.meta.events_read += 1;
            self.offset += n as u64;
            lines += 1;
        }
    }

    /// The recording of the lines read so far, as [`super::read`] gives it (times clamped
    /// as [`crate::load`] does); the snapshots whose end line was read are merged in.
    pub fn recording(&self) -> Recording {
        let r = &self.reading;
        let copy = Reading {
            rec: r.rec.clone(),
            start_ns: r.start_ns,
            devices: r.devices.clone(),
            ended: r.ended.clone(),
            embedded: finished(&r.embedded),
            lo: r.lo,
            hi: r.hi,
        };
        let mut rec = copy.into_recording(&self.header, &self.path, self.offset);
        rec.clamp_times();
        rec
    }

    /// Bytes of the file read (the header and every complete line).
    pub fn bytes_read(&self) -> u64 {
        self.offset
    }

    /// Whether the end line was read: nothing more will be appended.
    pub fn ended(&self) -> bool {
        self.reading.ended.is_some()
    }
}

/// The embedded snapshots that are finished (complete, or broken: a merge says why),
/// without those whose lines are still coming.
fn finished(embedded: &Embedded) -> Embedded {
    let by_id = embedded
        .by_id
        .iter()
        .filter(|(_, p)| p.complete || p.broken.is_some())
        .map(|(&id, p)| {
            let copy = Pending {
                info: p.info.clone(),
                data: p.data.clone(),
                crc: None,
                broken: p.broken.clone(),
                complete: p.complete,
            };
            (id, copy)
        })
        .collect();
    Embedded {
        by_id,
        tags: embedded.tags.clone(),
    }
}
