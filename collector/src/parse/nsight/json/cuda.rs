//! `CudaEvent` records: kernels and memory-usage rows. No real export had them, so they
//! are recognised by their field names (see `docs/NSIGHT.md`).

use serde_json::{Map, Value};

use super::records::Num;
use super::{NameRef, PendingSpan, Reader};
use crate::model::OpCategory;
use crate::parse::nsight::GlobalId;
use crate::parse::nsight::builder::{Builder, MemKind, MemOp, MemRow};

impl Reader {
    /// A `CudaEvent`: kernels and memory-usage rows, recognised by their fields.
    pub(super) fn cuda(&mut self, body: &Map<String, Value>, b: &mut Builder) -> bool {
        let int = |m: &Map<String, Value>, keys: &[&str]| {
            keys.iter()
                .find_map(|k| m.get(*k).and_then(Num::from_value))
        };
        let start = int(body, &["startNs", "start"]).and_then(Num::i64);
        let device = int(body, &["deviceId"]).and_then(Num::i64).unwrap_or(0);
        let process = int(body, &["globalPid"]).and_then(Num::u64).map(GlobalId);
        if let Some(Value::Object(kernel)) = body.get("kernel") {
            let Some(start_ns) = start else {
                b.note("kernels without a start skipped");
                return true;
            };
            self.count("kernels");
            let stream = int(body, &["streamId"]).and_then(Num::i64).unwrap_or(0);
            let thread = b.stream(process, device, stream);
            let name = ["demangledName", "shortName", "name"]
                .iter()
                .find_map(|k| kernel.get(*k))
                .map_or(NameRef::Text("[unnamed kernel]".into()), |v| match v {
                    Value::String(s) if s.parse::<u64>().is_err() => NameRef::Text(s.clone()),
                    other => Num::from_value(other)
                        .and_then(Num::u64)
                        .map_or(NameRef::Text("[unnamed kernel]".into()), NameRef::Id),
                });
            self.spans.push(PendingSpan {
                name,
                domain: None,
                category: OpCategory::Kernel,
                thread,
                start_ns,
                end_ns: int(body, &["endNs", "end"]).and_then(Num::i64),
            });
            return true;
        }
        // The memory-usage fields, directly in the body or in one nested object.
        let op_keys = ["memoryOperationType", "memoryOperation"];
        let is_memory = |m: &Map<String, Value>| {
            m.contains_key("bytes") && op_keys.iter().any(|k| m.contains_key(*k))
        };
        let Some(mem) = std::iter::once(body)
            .chain(body.values().filter_map(Value::as_object))
            .find(|m| is_memory(m))
        else {
            return false;
        };
        self.count("cuda_memory_rows");
        let kind = match int(mem, &["memKind", "memoryKind"]) {
            Some(k) => k.i64().and_then(MemKind::from_documented_id),
            None => Some(MemKind::Device),
        };
        let op = int(mem, &op_keys)
            .and_then(Num::i64)
            .and_then(MemOp::from_documented_id);
        let (Some(rel_ns), Some(bytes), Some(kind), Some(op)) = (
            int(mem, &["startNs", "start"]).and_then(Num::i64).or(start),
            int(mem, &["bytes"]).and_then(Num::i64),
            kind,
            op,
        ) else {
            b.note("CUDA memory records without start, bytes, kind or operation skipped");
            return true;
        };
        b.memory(MemRow {
            rel_ns,
            device_id: int(mem, &["deviceId"]).and_then(Num::i64).unwrap_or(device),
            kind,
            op,
            bytes,
            address: int(mem, &["address"]).and_then(Num::u64),
            process: int(mem, &["globalPid"])
                .and_then(Num::u64)
                .map(GlobalId)
                .or(process),
            correlation: int(mem, &["correlationId"])
                .or(int(body, &["correlationId"]))
                .and_then(Num::u64),
        });
        true
    }
}
