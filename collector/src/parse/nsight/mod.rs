//! Nsight Systems exports: `nsys export --type sqlite` (the main path) and `--type json`.
//!
//! Both exports carry the same records; each reader turns them into the one neutral
//! [`Recording`] through a shared [`builder::Builder`], so the two can never map a record
//! differently. What is read:
//! * NVTX push/pop and start/end ranges → [`OpCategory::Nvtx`](crate::model::OpCategory)
//!   spans, so memory can be attributed to NVTX ranges like to PyTorch ops;
//! * CUDA API calls (`CUPTI_ACTIVITY_KIND_RUNTIME`) and kernels (`…_KERNEL`) → spans;
//! * `CUDA_GPU_MEMORY_USAGE_EVENTS` (`--cuda-memory-usage=true`) → segment events. What
//!   nsys sees is `cudaMalloc`/`cudaFree` of the caching allocator's *segments*, so
//!   device memory is *reserved* memory; pinned and pageable host memory get their own
//!   devices.
//!
//! Times are nanoseconds relative to the session start; SQLite exports also say when the
//! session started (`TARGET_INFO_SESSION_START_TIME`), which makes them absolute epoch ns.
//! Enum values are read from the file's `ENUM_*` tables where they are filled and fall
//! back to the documented values otherwise (`--lazy=false` exports leave most empty).
//! See `docs/NSIGHT.md` for which parts were checked on real nsys output.

mod builder;
mod json;
mod sqlite;

use super::importer::{Detection, Importer, ReadContext, first_token};
use super::input::Input;
use super::{LoadErrorKind, SourceError};
use crate::model::Recording;

pub use builder::{MemKind, MemOp};

/// NVTX event type ids of `ENUM_NSYS_EVENT_TYPE` (seen in nsys 2022.4 exports), used where
/// the file's enum table is empty or missing.
pub mod event_type {
    /// `NvtxMark`: an instant, not a span.
    pub const NVTX_MARK: i64 = 34;
    /// `NvtxPushPopRange`: a range nested on its thread.
    pub const NVTX_PUSH_POP_RANGE: i64 = 59;
    /// `NvtxStartEndRange`: a range that may end on another thread.
    pub const NVTX_START_END_RANGE: i64 = 60;
    /// `NvtxDomainCreate`: names an NVTX domain (`text`).
    pub const NVTX_DOMAIN_CREATE: i64 = 75;
}

/// `ENUM_NSYS_EVENT_CLASS` ids of CUDA API calls (`CUPTI_ACTIVITY_KIND_RUNTIME.eventClass`,
/// JSON `TraceProcessEvent.eventClass`).
pub mod event_class {
    /// `TRACE_PROCESS_EVENT_CUDA_RUNTIME`.
    pub const CUDA_RUNTIME: i64 = 0;
    /// `TRACE_PROCESS_EVENT_CUDA_DRIVER`.
    pub const CUDA_DRIVER: i64 = 1;
}

/// A `globalTid`/`globalPid` split into its process and thread ids: nsys packs
/// `pid = (g >> 24) & 0xFFFFFF` and `tid = g & 0xFFFFFF`, with hardware/VM ids above.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GlobalId(pub u64);

impl GlobalId {
    /// The process id.
    pub fn pid(self) -> u64 {
        (self.0 >> 24) & 0xFF_FFFF
    }

    /// The thread id (0 in a `globalPid`).
    pub fn tid(self) -> u64 {
        self.0 & 0xFF_FFFF
    }

    /// The `globalPid` of this id's process (thread bits cleared).
    pub fn process(self) -> GlobalId {
        GlobalId(self.0 & !0xFF_FFFF)
    }

    /// The `globalTid` of the process's main thread (whose tid is the pid on Linux).
    pub fn main_thread(self) -> GlobalId {
        GlobalId(self.process().0 | self.pid())
    }
}

/// The name nsys gives an NVTX range: `domain:text` outside the default domain (as
/// `nsys stats --report nvtxsum` prints it), plain `text` inside it.
fn qualified_nvtx_name(domain: Option<&str>, text: &str) -> String {
    match domain {
        Some(d) if !d.is_empty() => format!("{d}:{text}"),
        _ => text.to_owned(),
    }
}

/// `nsys export --type sqlite` in the importer seam. The database is opened read-only by
/// path and never modified; it is read as a whole, so there is nothing to salvage.
pub struct NsightSqliteImporter;

impl Importer for NsightSqliteImporter {
    fn detect(&self, head: &[u8]) -> Detection {
        if head.starts_with(b"SQLite format 3\0") {
            Detection::Certain
        } else {
            Detection::No
        }
    }

    fn read(&self, input: Input, context: &ReadContext<'_>) -> Result<Recording, SourceError> {
        if input.compressed {
            let message = "a gzip-compressed SQLite database: decompress it first".to_owned();
            return Err(SourceError {
                offset: None,
                kind: LoadErrorKind::Unrecognized(message),
            });
        }
        drop(input);
        sqlite::read(context.path)
    }

    fn file_extensions(&self) -> &'static [&'static str] {
        &["sqlite"]
    }

    fn memory_hint(&self) -> &'static str {
        NSYS_MEMORY_HINT
    }
}

/// `nsys export --type json` (one JSON object per line, streamed) in the importer seam.
pub struct NsightJsonImporter;

impl Importer for NsightJsonImporter {
    /// nsys writes one object per line whose first key is `Type` (events), `type`
    /// (`--separate-strings` records) or `data` (the string table).
    fn detect(&self, head: &[u8]) -> Detection {
        let Some(object) = first_token(head).and_then(|t| t.strip_prefix(b"{")) else {
            return Detection::No;
        };
        let key = first_token(object).unwrap_or_default();
        if key.starts_with(b"\"Type\"")
            || key.starts_with(b"\"type\"")
            || key.starts_with(b"\"data\"")
        {
            Detection::Certain
        } else {
            Detection::No
        }
    }

    fn read(&self, input: Input, context: &ReadContext<'_>) -> Result<Recording, SourceError> {
        json::read(input, context.options)
    }

    fn file_extensions(&self) -> &'static [&'static str] {
        &["json", "json.gz"]
    }

    fn memory_hint(&self) -> &'static str {
        NSYS_MEMORY_HINT
    }
}

/// How to make nsys record memory.
const NSYS_MEMORY_HINT: &str = "profile with nsys --cuda-memory-usage=true";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_ids_decode_like_nsys() {
        // From the real 2022.4 export: main thread of pid 19, and its process id.
        let main = GlobalId(281_475_295_477_779);
        assert_eq!((main.pid(), main.tid()), (19, 19));
        assert_eq!(main.process(), GlobalId(281_475_295_477_760));
        assert_eq!(GlobalId(281_475_295_477_760).main_thread(), main);
        let worker = GlobalId(281_475_295_477_790);
        assert_eq!((worker.pid(), worker.tid()), (19, 30));
    }
}
