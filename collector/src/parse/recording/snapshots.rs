//! PyTorch allocator snapshots inside a recording (`vramscope record --torch-memory`).
//!
//! The program's Python processes write `torch.cuda.memory._snapshot()` pickles and a JSON
//! status line per step into a folder beside the recording (see [`ShimEvent`]). When the run
//! ends vramscope embeds each pickle, byte for byte, as base64 chunk lines between a
//! [`SnapshotInfo`] line and a [`SnapshotEnd`] line (size and CRC-32), and only then removes
//! the folder, so a kill at any moment loses nothing: what is not embedded completely is
//! still beside the recording, and the reader takes it from there.
//!
//! The reader decodes each snapshot with the safe snapshot reader ([`crate::parse::snapshot`])
//! and merges it into the recording on the same clock: trace entries carry `time_us` in Unix
//! epoch µs (c10 converts its TSC clock to Unix time when the snapshot is taken), and the
//! recording's samples are `start_unix_ns + t_ns`.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

pub use super::shim_status::{
    NO_PYTHON_NOTE, STATUS_PREFIX, ShimEvent, no_torch_note, read_status,
};
use super::{DeviceHeader, Line};

/// Raw bytes per chunk line: a multiple of 3, so every chunk is base64 on its own, and
/// 64 KiB of text per line (well under [`super::MAX_LINE_BYTES`]).
pub const CHUNK_BYTES: usize = 48 << 10;

/// A CUDA device as the snapshotting process saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotDevice {
    /// CUDA ordinal in that process (the snapshot's device number).
    pub cuda: u32,
    /// `torch.cuda.get_device_properties(i).uuid` (no `GPU-` prefix), where torch has it.
    #[serde(default)]
    pub uuid: Option<String>,
    /// Device name.
    #[serde(default)]
    pub name: Option<String>,
    /// Total memory.
    #[serde(default)]
    pub total_bytes: Option<u64>,
}

/// What an embedded snapshot is (the line before its chunks).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// Number of this snapshot in the recording.
    pub id: u32,
    /// The process that took it.
    pub pid: u32,
    /// `exit` or `oom`.
    pub reason: String,
    /// Its file name in the folder beside the recording.
    pub file: String,
    /// Pickle size.
    pub bytes: u64,
    /// Trace entries in it.
    #[serde(default)]
    pub entries: Option<u64>,
    /// When it was taken.
    #[serde(default)]
    pub taken_unix_ns: Option<i64>,
    /// The torch version.
    #[serde(default)]
    pub torch_version: Option<String>,
    /// The process's CUDA devices.
    #[serde(default)]
    pub devices: Vec<SnapshotDevice>,
    /// The shim's storage tags file taken with it (`tags-<pid>-<n>.json`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags_file: Option<String>,
}

/// A piece of a snapshot's bytes, base64.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotChunk {
    /// [`SnapshotInfo::id`].
    pub id: u32,
    /// Base64 (standard alphabet, padded) of at most [`CHUNK_BYTES`] bytes.
    pub b64: String,
}

/// The end of a snapshot: how many bytes and their CRC-32, to tell a complete one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotEnd {
    /// [`SnapshotInfo::id`].
    pub id: u32,
    /// Bytes in all chunks.
    pub bytes: u64,
    /// CRC-32 (gzip's) of the bytes.
    pub crc32: u32,
}

/// Turns a snapshot's bytes into chunk lines, as they are read.
pub struct SnapshotEncoder {
    id: u32,
    crc: flate2::Crc,
    bytes: u64,
}

impl SnapshotEncoder {
    /// Start snapshot `id`.
    pub fn new(id: u32) -> SnapshotEncoder {
        SnapshotEncoder {
            id,
            crc: flate2::Crc::new(),
            bytes: 0,
        }
    }

    /// The line for the next piece (at most [`CHUNK_BYTES`] bytes).
    pub fn chunk(&mut self, piece: &[u8], t_ns: i64) -> Line {
        self.crc.update(piece);
        self.bytes += piece.len() as u64;
        Line::SnapshotChunk {
            t_ns,
            snapshot_chunk: SnapshotChunk {
                id: self.id,
                b64: BASE64.encode(piece),
            },
        }
    }

    /// The closing line.
    pub fn finish(self, t_ns: i64) -> Line {
        Line::SnapshotEnd {
            t_ns,
            snapshot_end: SnapshotEnd {
                id: self.id,
                bytes: self.bytes,
                crc32: self.crc.sum(),
            },
        }
    }
}

/// One snapshot being read back from the recording's lines.
#[derive(Default)]
pub(super) struct Pending {
    pub info: SnapshotInfo,
    pub data: Vec<u8>,
    pub crc: Option<flate2::Crc>,
    pub broken: Option<String>,
    pub complete: bool,
}

/// Snapshots read from a recording's lines, by id.
#[derive(Default)]
pub(super) struct Embedded {
    pub by_id: BTreeMap<u32, Pending>,
    /// Storage tags by snapshot id.
    pub tags: BTreeMap<u32, Vec<super::tags::TagRow>>,
}

impl Embedded {
    pub fn begin(&mut self, info: SnapshotInfo) {
        let id = info.id;
        self.by_id.insert(
            id,
            Pending {
                info,
                crc: Some(flate2::Crc::new()),
                ..Pending::default()
            },
        );
    }

    /// Add a chunk; `false` when no snapshot of that id was begun.
    pub fn chunk(&mut self, c: &SnapshotChunk) -> bool {
        let Some(p) = self.by_id.get_mut(&c.id) else {
            return false;
        };
        if p.broken.is_some() || p.complete {
            return true;
        }
        match BASE64.decode(c.b64.as_bytes()) {
            Ok(raw) => {
                if let Some(crc) = p.crc.as_mut() {
                    crc.update(&raw);
                }
                p.data.extend_from_slice(&raw);
            }
            Err(e) => p.broken = Some(format!("bad base64 in a chunk: {e}")),
        }
        true
    }

    /// Close a snapshot; `false` when no snapshot of that id was begun.
    pub fn end(&mut self, e: &SnapshotEnd) -> bool {
        let Some(p) = self.by_id.get_mut(&e.id) else {
            return false;
        };
        let crc = p.crc.take().map_or(0, |c| c.sum());
        if p.broken.is_none() {
            if p.data.len() as u64 != e.bytes {
                p.broken = Some(format!(
                    "{} bytes embedded, {} announced",
                    p.data.len(),
                    e.bytes
                ));
            } else if crc != e.crc32 {
                p.broken = Some(format!(
                    "CRC-32 {crc:08x}, the end line says {:08x}",
                    e.crc32
                ));
            } else {
                p.complete = true;
            }
        }
        true
    }
}

/// The NVML index of a snapshot's CUDA device: by UUID where both sides have one (CUDA
/// ordinals follow CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, NVML's do not), else the
/// ordinal itself. The flag says whether the UUIDs matched.
pub fn nvml_index(cuda: u32, devices: &[SnapshotDevice], header: &[DeviceHeader]) -> (u32, bool) {
    let bare = |u: &str| u.trim().trim_start_matches("GPU-").to_ascii_lowercase();
    let uuid = devices
        .iter()
        .find(|d| d.cuda == cuda)
        .and_then(|d| d.uuid.as_deref())
        .map(bare);
    if let Some(uuid) = uuid
        && let Some(h) = header
            .iter()
            .find(|h| h.uuid.as_deref().map(bare).as_deref() == Some(uuid.as_str()))
    {
        return (h.index, true);
    }
    (cuda, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_and_damage_is_detected() {
        let data: Vec<u8> = (0..(CHUNK_BYTES * 2 + 17))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let mut enc = SnapshotEncoder::new(3);
        let lines: Vec<Line> = data.chunks(CHUNK_BYTES).map(|c| enc.chunk(c, 5)).collect();
        let end = enc.finish(6);
        let mut embedded = Embedded::default();
        embedded.begin(SnapshotInfo {
            id: 3,
            ..SnapshotInfo::default()
        });
        for l in &lines {
            let Line::SnapshotChunk { snapshot_chunk, .. } = l else {
                panic!("a chunk line");
            };
            assert!(embedded.chunk(snapshot_chunk));
        }
        let Line::SnapshotEnd { snapshot_end, .. } = &end else {
            panic!("an end line");
        };
        assert!(embedded.end(snapshot_end));
        let p = &embedded.by_id[&3];
        assert!(p.complete, "{:?}", p.broken);
        assert_eq!(p.data, data);

        // One flipped byte: same length, different CRC.
        let mut bad = Embedded::default();
        bad.begin(SnapshotInfo {
            id: 3,
            ..SnapshotInfo::default()
        });
        let mut first = data[..CHUNK_BYTES].to_vec();
        first[100] ^= 1;
        bad.chunk(&SnapshotChunk {
            id: 3,
            b64: BASE64.encode(&first),
        });
        for l in &lines[1..] {
            if let Line::SnapshotChunk { snapshot_chunk, .. } = l {
                bad.chunk(snapshot_chunk);
            }
        }
        bad.end(snapshot_end);
        let p = &bad.by_id[&3];
        assert!(!p.complete);
        assert!(p.broken.as_deref().is_some_and(|b| b.contains("CRC-32")));
        assert!(!bad.chunk(&SnapshotChunk {
            id: 9,
            b64: String::new()
        }));
    }

    #[test]
    fn devices_map_by_uuid_then_by_ordinal() {
        let header = vec![
            DeviceHeader {
                index: 0,
                uuid: Some("GPU-aaaa".into()),
                ..DeviceHeader::default()
            },
            DeviceHeader {
                index: 1,
                uuid: Some("GPU-BBBB".into()),
                ..DeviceHeader::default()
            },
        ];
        // CUDA_VISIBLE_DEVICES=1: the process's cuda:0 is NVML's GPU 1.
        let devices = vec![SnapshotDevice {
            cuda: 0,
            uuid: Some("bbbb".into()),
            ..SnapshotDevice::default()
        }];
        assert_eq!(nvml_index(0, &devices, &header), (1, true));
        assert_eq!(nvml_index(2, &devices, &header), (2, false));
        assert_eq!(nvml_index(0, &[], &header), (0, false));
    }
}
