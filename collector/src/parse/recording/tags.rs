//! Storage tags inside a recording (`vramscope record --torch-memory`): at each snapshot the
//! shim writes `tags-<pid>-<n>.json` beside it — the storages of the program's parameters,
//! gradients and optimizer state, `[cuda ordinal, data pointer, bytes, role, seen at (Unix
//! ns)]` — and vramscope embeds them as `storage_tags` lines between the snapshot's chunks
//! and its end line, so a complete snapshot has all its tags. The reader places them on the
//! devices the snapshot's history is merged onto ([`place`]).

use std::io::{self, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Line;
use crate::model::{DeviceId, Recording, StorageTag, TensorRole};

/// Tags per `storage_tags` line: a row is about 70 bytes of JSON, so a line is about
/// 1.1 MiB, well under [`super::MAX_LINE_BYTES`].
pub const TAGS_PER_LINE: usize = 16_384;

/// The largest tags file embedded. The shim keeps the tags of at most `max_entries`
/// storages (100,000 by default: about 7 MB) plus those alive at the snapshot; a larger
/// file is not the shim's and is left out (reading it costs its size in memory, twice).
pub const MAX_TAGS_FILE_BYTES: u64 = 256 << 20;

/// One tag as the shim writes it: CUDA ordinal in the process, data pointer, bytes, role
/// (`parameter`, `gradient`, `optimizer_state`), when it was seen alive (Unix ns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TagRow(pub u32, pub u64, pub u64, pub String, pub i64);

/// A `storage_tags` line: some of snapshot `id`'s tags.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StorageTagsLine {
    /// [`super::SnapshotInfo::id`].
    pub id: u32,
    /// At most [`TAGS_PER_LINE`] tags.
    pub tags: Vec<TagRow>,
}

/// The shim's tags file.
#[derive(Deserialize)]
struct TagsFile {
    tags: Vec<TagRow>,
}

/// The tags of a tags file; an error for a file over [`MAX_TAGS_FILE_BYTES`] or not the
/// shim's JSON.
pub fn read_tags_file(dir: &Path, name: &str) -> io::Result<Vec<TagRow>> {
    let file = super::beside::open_inside(dir, name, MAX_TAGS_FILE_BYTES)?;
    let len = file.metadata()?.len();
    let mut text = Vec::with_capacity(len as usize);
    file.take(MAX_TAGS_FILE_BYTES).read_to_end(&mut text)?;
    let parsed: TagsFile = serde_json::from_slice(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a tags file: {e} (byte {})", byte_of(&text, &e)),
        )
    })?;
    Ok(parsed.tags)
}

/// The byte offset of a serde_json error in `text` (from its line and column).
fn byte_of(text: &[u8], e: &serde_json::Error) -> usize {
    let line_start: usize = text
        .split(|&b| b == b'\n')
        .take(e.line().saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    line_start + e.column().saturating_sub(1)
}

/// The lines that embed snapshot `id`'s tags.
pub fn tag_lines(id: u32, rows: &[TagRow], t_ns: i64) -> Vec<Line> {
    rows.chunks(TAGS_PER_LINE)
        .map(|chunk| Line::StorageTags {
            t_ns,
            storage_tags: StorageTagsLine {
                id,
                tags: chunk.to_vec(),
            },
        })
        .collect()
}

/// Add the tags of one process's merged snapshot to `rec`: `device` maps the process's CUDA
/// ordinal to the device its history is shown on (`None`: not merged, the tag is dropped).
/// Tag times are Unix ns, the recording's clock. Tags of an unknown role are counted in the
/// diagnostics.
pub(super) fn place(
    rec: &mut Recording,
    rows: Vec<TagRow>,
    device: impl Fn(u32) -> Option<DeviceId>,
    label: &str,
) {
    let before = rec.storage_tags.len();
    for TagRow(cuda, addr, bytes, role, since_ns) in rows {
        let Some(role) = TensorRole::from_name(&role) else {
            rec.diagnostics
                .note(&format!("{label}: storage tags of an unknown role skipped"));
            continue;
        };
        let Some(device) = device(cuda).and_then(|key| rec.find_device(key)) else {
            rec.diagnostics.note(&format!(
                "{label}: storage tags of a device without allocator history skipped"
            ));
            continue;
        };
        rec.storage_tags.push(StorageTag {
            device,
            addr,
            bytes,
            role,
            since_ns,
        });
    }
    let added = rec.storage_tags.len() - before;
    if added > 0 {
        rec.diagnostics.note(&format!(
            "note: torch-memory: {label}: {added} storages tagged as parameter, gradient or optimizer state by the program"
        ));
    }
}
