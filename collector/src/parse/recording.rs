//! vramscope's own recording format (written by `vramscope record`), and its reader.
//!
//! Newline-delimited JSON, append-only: a header line, then one line per sample, note or
//! snapshot reference, then an end line when the run finished normally. Every line is
//! complete when written and lines are flushed at least every [`FLUSH_INTERVAL`], so a
//! recording cut by a SIGKILL (of the program or of vramscope) loses at most the last
//! interval and still opens: the reader keeps every complete line and says the recording
//! was not finalised. The format is documented in docs/FORMAT.md; version 1 is the first.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::input::Input;
use super::{LoadErrorKind, LoadOptions, SourceError};
use crate::model::{DeviceKey, GpuSample, HostSample, Recording, SourceFormat};

pub mod packed;

/// The first bytes of every recording: the header's first key.
pub const MAGIC: &[u8] = b"{\"vramscope_recording\":";
/// The format version this build writes and reads. Version 2 added packed recordings
/// ([`packed`]); version 1 files read as before.
pub const VERSION: u32 = 2;
/// Longest time a written line may sit in memory before it reaches the file.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(500);
/// Longest line the reader accepts; a sample of 64 GPUs is a few KiB.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// A GPU as the header describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceHeader {
    /// NVML index.
    pub index: u32,
    /// Marketing name.
    #[serde(default)]
    pub name: Option<String>,
    /// Total memory.
    #[serde(default)]
    pub total_bytes: Option<u64>,
    /// NVML UUID.
    #[serde(default)]
    pub uuid: Option<String>,
}

/// The first line of a recording.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format version ([`VERSION`]); written first so the file starts with [`MAGIC`].
    pub vramscope_recording: u32,
    /// When recording started, ns since the Unix epoch; sample times are relative to it.
    pub start_unix_ns: i64,
    /// The recorded command line.
    pub command: Vec<String>,
    /// Host name.
    #[serde(default)]
    pub host: Option<String>,
    /// The recorded process.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Sampling interval.
    #[serde(default)]
    pub interval_ms: Option<u64>,
    /// NVIDIA driver version.
    #[serde(default)]
    pub driver_version: Option<String>,
    /// NVML version.
    #[serde(default)]
    pub nvml_version: Option<String>,
    /// Why there are no GPU samples, when NVML could not be used.
    #[serde(default)]
    pub nvml_unavailable: Option<String>,
    /// The GPUs sampled.
    #[serde(default)]
    pub devices: Vec<DeviceHeader>,
    /// vramscope's version.
    #[serde(default)]
    pub vramscope_version: Option<String>,
}

/// One GPU's reading inside a sample line.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuReading {
    /// NVML index.
    pub index: u32,
    /// Used bytes on the device.
    pub used: u64,
    /// Total bytes.
    #[serde(default)]
    pub total: Option<u64>,
    /// Bytes used by the recorded process tree.
    #[serde(default)]
    pub procs: Option<u64>,
}

/// One line after the header. Variants are tried in order (untagged), so the ones with a
/// distinguishing required key come first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    /// The run ended normally.
    End {
        /// ns since start.
        t_ns: i64,
        /// How it ended.
        end: EndInfo,
    },
    /// A note (a warning, a change of state).
    Note {
        /// ns since start.
        t_ns: i64,
        /// Text.
        note: String,
    },
    /// A sample: GPU readings and the process tree's RSS.
    Sample {
        /// ns since `start_unix_ns`.
        t_ns: i64,
        /// Per GPU.
        #[serde(default)]
        gpus: Vec<GpuReading>,
        /// Host RSS of the process tree.
        #[serde(default)]
        rss: Option<u64>,
    },
}

/// How the recorded program ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndInfo {
    /// Exit code, when it exited.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Signal number, when a signal ended it.
    #[serde(default)]
    pub signal: Option<i32>,
}

/// Writes a recording: append-only lines, flushed at least every [`FLUSH_INTERVAL`].
pub struct RecordingWriter {
    out: BufWriter<File>,
    last_flush: Instant,
}

impl RecordingWriter {
    /// Create `path` (refusing to overwrite an existing file unless `overwrite`) and write
    /// the header.
    pub fn create(path: &Path, header: &Header, overwrite: bool) -> io::Result<RecordingWriter> {
        let mut options = OpenOptions::new();
        options.write(true);
        if overwrite {
            options.create(true).truncate(true);
        } else {
            options.create_new(true);
        }
        let file = options.open(path)?;
        let mut w = RecordingWriter {
            out: BufWriter::new(file),
            last_flush: Instant::now(),
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
        self.out.flush()
    }

    /// Write the end line and flush.
    pub fn finish(mut self, t_ns: i64, end: EndInfo) -> io::Result<()> {
        self.line(&Line::End { t_ns, end })?;
        self.flush()?;
        self.out.get_ref().sync_data()
    }
}

/// Read a recording.
pub fn read(input: Input, options: LoadOptions) -> Result<Recording, SourceError> {
    let compressed = input.compressed;
    let mut reader = BufReader::new(input.reader);
    let mut rec = Recording::empty(SourceFormat::VramscopeRecording, "");
    let mut offset = 0u64;
    let mut buf = Vec::new();
    let header_len = read_line(&mut reader, &mut buf, offset)?;
    let header: Header = serde_json::from_slice(&buf).map_err(|e| SourceError {
        offset: Some(0),
        kind: LoadErrorKind::Shape(format!(
            "a vramscope recording with an unreadable header: {e}"
        )),
    })?;
    offset += header_len as u64;
    if header.vramscope_recording > VERSION {
        return Err(SourceError::shape(
            Some(0),
            format!(
                "a vramscope recording of format version {}; this vramscope reads up to {VERSION}",
                header.vramscope_recording
            ),
        ));
    }
    if let Ok(packed::PackedProbe { packed: Some(info) }) = serde_json::from_slice(&buf) {
        packed::read_body(&mut reader, &mut rec, info, offset, options)?;
        return Ok(rec);
    }
    let start = header.start_unix_ns;
    let mut devices = std::collections::BTreeMap::new();
    for d in &header.devices {
        let idx = rec.device_index(DeviceKey::cuda(d.index as i32));
        if let Some(info) = rec.devices.get_mut(idx as usize) {
            info.name.clone_from(&d.name);
            info.total_memory_bytes = d.total_bytes;
        }
        devices.insert(d.index, idx);
    }
    let mut ended = None;
    let (mut lo, mut hi) = (start, start);
    loop {
        let n = match read_line(&mut reader, &mut buf, offset) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err(e),
        };
        let complete = buf.last() == Some(&b'\n');
        let parsed = serde_json::from_slice::<Line>(&buf);
        match (parsed, complete) {
            (Ok(line), _) => {
                let t = match &line {
                    Line::Sample { t_ns, .. }
                    | Line::Note { t_ns, .. }
                    | Line::End { t_ns, .. } => *t_ns,
                };
                let time_ns = start.saturating_add(t);
                lo = lo.min(time_ns);
                hi = hi.max(time_ns);
                apply(&mut rec, &mut devices, line, time_ns, &mut ended);
            }
            // A last line cut by a kill: everything before it is kept.
            (Err(_), false) => {
                rec.diagnostics
                    .note("last record cut short (recording interrupted) dropped");
                break;
            }
            (Err(e), true) => {
                return Err(SourceError {
                    offset: Some(offset),
                    kind: LoadErrorKind::Syntax(format!("bad recording line: {e}")),
                });
            }
        }
        offset += n as u64;
        rec.meta.events_read += 1;
    }
    if ended.is_none() {
        rec.diagnostics
            .note("recording not finalised (vramscope or the machine stopped first)");
    }
    rec.meta.start_ns = lo;
    rec.meta.end_ns = hi;
    rec.meta.compressed = compressed;
    rec.meta.content_bytes = offset;
    rec.meta.era = format!("vramscope recording v{}", header.vramscope_recording);
    let props = &mut rec.meta.properties;
    props.insert("command".into(), header.command.join(" "));
    for (k, v) in [
        ("host", header.host),
        ("driver_version", header.driver_version),
        ("nvml_version", header.nvml_version),
        ("nvml_unavailable", header.nvml_unavailable),
        ("vramscope_version", header.vramscope_version),
    ] {
        if let Some(v) = v {
            props.insert(k.into(), v);
        }
    }
    if let Some(end) = ended {
        if let Some(code) = end.exit_code {
            props.insert("exit_code".into(), code.to_string());
        }
        if let Some(signal) = end.signal {
            props.insert("signal".into(), signal.to_string());
        }
    }
    Ok(rec)
}

fn apply(
    rec: &mut Recording,
    devices: &mut std::collections::BTreeMap<u32, u16>,
    line: Line,
    time_ns: i64,
    ended: &mut Option<EndInfo>,
) {
    match line {
        Line::Sample { gpus, rss, .. } => {
            for g in gpus {
                let device = *devices
                    .entry(g.index)
                    .or_insert_with(|| rec.device_index(DeviceKey::cuda(g.index as i32)));
                rec.gpu_samples.push(GpuSample {
                    time_ns,
                    device,
                    used_bytes: g.used,
                    total_bytes: g.total,
                    process_bytes: g.procs,
                });
            }
            if let Some(rss_bytes) = rss {
                rec.host_samples.push(HostSample { time_ns, rss_bytes });
            }
        }
        Line::Note { note, .. } => rec.diagnostics.note(&format!("note: {note}")),
        Line::End { end, .. } => *ended = Some(end),
    }
}

/// Read one line (with its newline, if any) into `buf`; 0 at end of input.
fn read_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    offset: u64,
) -> Result<usize, SourceError> {
    buf.clear();
    let n = reader
        .by_ref()
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(|e| SourceError {
            offset: Some(offset),
            kind: LoadErrorKind::Io(e),
        })?;
    if buf.len() > MAX_LINE_BYTES {
        return Err(SourceError {
            offset: Some(offset),
            kind: LoadErrorKind::TooLarge,
        });
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
