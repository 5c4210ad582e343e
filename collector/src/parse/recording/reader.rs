//! Reading a recording: the header, then every complete line; a last line cut by a kill is
//! dropped, damage anywhere else is an error with its byte offset. Embedded allocator
//! snapshots (and those still beside a recording whose vramscope was killed) are merged in
//! on the same clock.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::snapshots::Embedded;
use super::{Header, Line, MAX_LINE_BYTES, PACKED_VERSION, packed};
use crate::model::{
    DeviceId, DeviceIdx, GpuProcessSample, GpuSample, HostSample, Recording, SourceFormat,
};
use crate::parse::input::Input;
use crate::parse::{LoadErrorKind, LoadOptions, SourceError};

/// What the lines say, gathered as they are read.
pub(super) struct Reading {
    pub rec: Recording,
    pub start_ns: i64,
    pub devices: BTreeMap<u32, DeviceIdx>,
    pub ended: Option<super::EndInfo>,
    pub embedded: Embedded,
    pub lo: i64,
    pub hi: i64,
}

/// Read a recording from `input`; `path` locates the snapshots folder beside it.
pub fn read(input: Input, path: &Path, options: LoadOptions) -> Result<Recording, SourceError> {
    let compressed = input.compressed;
    let mut reader = BufReader::new(input.reader);
    let mut buf = Vec::new();
    let (header, header_len) = read_header(&mut reader, &mut buf)?;
    if let Ok(packed::PackedProbe { packed: Some(info) }) = serde_json::from_slice(&buf) {
        let mut rec = Recording::empty(SourceFormat::VramscopeRecording, "");
        packed::read_body(&mut reader, &mut rec, info, header_len as u64, options)?;
        return Ok(rec);
    }
    let mut r = Reading::new(&header);
    let mut offset = header_len as u64;
    loop {
        let n = read_line(&mut reader, &mut buf, offset)?;
        if n == 0 {
            break;
        }
        let complete = buf.last() == Some(&b'\n');
        match (serde_json::from_slice::<Line>(&buf), complete) {
            (Ok(line), _) => r.apply(line),
            // A last line cut by a kill: everything before it is kept.
            (Err(_), false) => {
                r.rec
                    .diagnostics
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
        r.rec.meta.events_read += 1;
    }
    let mut rec = r.into_recording(&header, path, offset);
    rec.meta.compressed = compressed;
    Ok(rec)
}

/// The header line, read into `buf` (which keeps it for the packed probe), and its length;
/// an error for a header that is not one or of a later format version.
pub(super) fn read_header(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
) -> Result<(Header, usize), SourceError> {
    let header_len = read_line(reader, buf, 0)?;
    let header: Header = serde_json::from_slice(buf).map_err(|e| {
        // The header is the first line: serde's column is the byte.
        let mut why = e.to_string();
        if let Some(cut) = why.find(" at line ") {
            why.truncate(cut);
        }
        let why = format!("a vramscope recording's header line: {why}");
        SourceError {
            offset: Some(e.column().saturating_sub(1) as u64),
            kind: match e.classify() {
                serde_json::error::Category::Syntax => LoadErrorKind::Syntax(why),
                serde_json::error::Category::Eof => LoadErrorKind::Truncated(why),
                _ => LoadErrorKind::Shape(why),
            },
        }
    })?;
    if header.vramscope_recording > PACKED_VERSION {
        return Err(SourceError::shape(
            Some(0),
            format!(
                "a vramscope recording of format version {}; this vramscope reads up to \
                 {PACKED_VERSION}",
                header.vramscope_recording
            ),
        ));
    }
    Ok((header, header_len))
}

impl Reading {
    /// Nothing read yet but the header, whose devices come first.
    pub(super) fn new(header: &Header) -> Reading {
        let start_ns = header.start_unix_ns;
        let mut r = Reading {
            rec: Recording::empty(SourceFormat::VramscopeRecording, ""),
            start_ns,
            devices: BTreeMap::new(),
            ended: None,
            embedded: Embedded::default(),
            lo: start_ns,
            hi: start_ns,
        };
        for d in &header.devices {
            let idx = r.rec.device_index(DeviceId::cuda(d.index as i32));
            if let Some(info) = r.rec.devices.get_mut(idx as usize) {
                info.name.clone_from(&d.name);
                info.total_memory_bytes = d.total_bytes;
            }
            r.devices.insert(d.index, idx);
        }
        r
    }

    /// The recording the lines read make, `offset` bytes of content in all: its time
    /// range and properties, and the allocator snapshots merged in.
    pub(super) fn into_recording(self, header: &Header, path: &Path, offset: u64) -> Recording {
        let finalised = self.ended.is_some();
        let mut rec = self.rec;
        if !finalised {
            rec.diagnostics.note(super::NOT_FINALISED);
        }
        rec.meta.start_ns = self.lo;
        rec.meta.end_ns = self.hi;
        rec.meta.content_bytes = offset;
        rec.meta.era = format!("format version {}", header.vramscope_recording);
        set_properties(&mut rec, header, self.ended.as_ref());
        super::merge::merge_into(&mut rec, header, self.embedded, path, finalised);
        rec
    }

    pub(super) fn apply(&mut self, line: Line) {
        let time_ns = self.start_ns.saturating_add(line.t_ns());
        self.lo = self.lo.min(time_ns);
        self.hi = self.hi.max(time_ns);
        match line {
            Line::Sample {
                gpus,
                rss,
                pss,
                host_processes,
                ..
            } => {
                for g in gpus {
                    let rec = &mut self.rec;
                    let device = *self
                        .devices
                        .entry(g.index)
                        .or_insert_with(|| rec.device_index(DeviceId::cuda(g.index as i32)));
                    rec.gpu_samples.push(GpuSample {
                        time_ns,
                        device,
                        used_bytes: g.used,
                        total_bytes: g.total,
                        process_bytes: g.procs,
                        free_bytes: g.free,
                        driver_reserved_bytes: g.driver_reserved,
                    });
                    rec.gpu_process_samples
                        .extend(g.pids.iter().map(|&(pid, used_bytes)| GpuProcessSample {
                            time_ns,
                            device,
                            pid,
                            used_bytes,
                        }));
                }
                if let Some(rss_bytes) = rss {
                    self.rec.host_samples.push(HostSample {
                        time_ns,
                        rss_bytes,
                        pss_bytes: pss,
                        processes: host_processes,
                    });
                }
            }
            Line::Note { note, .. } => self.rec.diagnostics.note(&format!("note: {note}")),
            Line::End { end, .. } => self.ended = Some(end),
            Line::Snapshot { snapshot, .. } => self.embedded.begin(snapshot),
            Line::SnapshotChunk { snapshot_chunk, .. } => {
                if !self.embedded.chunk(&snapshot_chunk) {
                    self.rec
                        .diagnostics
                        .note("snapshot chunks without their snapshot line skipped");
                }
            }
            Line::StorageTags { storage_tags, .. } => {
                let id = storage_tags.id;
                if self.embedded.by_id.contains_key(&id) {
                    let tags = self.embedded.tags.entry(id).or_default();
                    tags.extend(storage_tags.tags);
                } else {
                    self.rec
                        .diagnostics
                        .note("storage tags without their snapshot line skipped");
                }
            }
            Line::SnapshotEnd { snapshot_end, .. } => {
                if !self.embedded.end(&snapshot_end) {
                    self.rec
                        .diagnostics
                        .note("snapshot ends without their snapshot line skipped");
                }
            }
        }
    }
}

fn set_properties(rec: &mut Recording, header: &Header, ended: Option<&super::EndInfo>) {
    let props = &mut rec.meta.properties;
    props.insert("command".into(), header.command.join(" "));
    for (k, v) in [
        ("host", header.host.clone()),
        ("driver_version", header.driver_version.clone()),
        ("nvml_version", header.nvml_version.clone()),
        ("nvml_unavailable", header.nvml_unavailable.clone()),
        ("vramscope_version", header.vramscope_version.clone()),
        ("pid", header.pid.map(|p| p.to_string())),
        ("interval_ms", header.interval_ms.map(|i| i.to_string())),
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
        if let Some(ns) = end.vramscope_cpu_ns {
            props.insert("vramscope_cpu_ns".into(), ns.to_string());
        }
    }
}

/// Read one line (with its newline, if any) into `buf`; 0 at end of input.
pub(super) fn read_line(
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
