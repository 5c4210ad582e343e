//! The builder's last steps: top-level keys other than `traceEvents`, and turning what was
//! gathered into a [`Recording`] (base time added, device properties attached, era named).

use serde_json::value::RawValue;

use super::Builder;
use crate::model::{
    DeviceId, DeviceType, DistributedInfo, Meta, Recording, SourceFormat, TIME_LIMIT_NS,
};
use crate::parse::chrome_trace::raw::{Int, RawDeviceProps, RawDistributed};

impl Builder {
    /// A second `traceEvents` key: Python's json keeps a key's last value, so what the
    /// events before built is dropped (the other top-level keys and the notes kept), and
    /// a note says so.
    pub(in crate::parse::chrome_trace) fn forget_events(&mut self) {
        let mut fresh = Builder::new(self.spans);
        fresh.diagnostics = std::mem::take(&mut self.diagnostics);
        fresh.base_time_ns = self.base_time_ns;
        fresh.device_props = std::mem::take(&mut self.device_props);
        fresh.distributed = self.distributed.take();
        fresh.properties = std::mem::take(&mut self.properties);
        fresh.preview = self.preview.take();
        fresh.diagnostics.note(
            "\"traceEvents\" given again: the events of the last one read, as Python's json does",
        );
        *self = fresh;
    }

    /// A top-level key other than `traceEvents`.
    pub(in crate::parse::chrome_trace) fn top_level(&mut self, key: &str, value: &RawValue) {
        let text = value.get();
        match key {
            "baseTimeNanoseconds" => match serde_json::from_str::<Int>(text) {
                Ok(v) => self.base_time_ns = i64::try_from(v.0).ok(),
                Err(_) => self
                    .diagnostics
                    .note("unreadable baseTimeNanoseconds ignored"),
            },
            "deviceProperties" => match serde_json::from_str::<Vec<RawDeviceProps>>(text) {
                Ok(v) => self.device_props = v,
                Err(_) => self.diagnostics.note("unreadable deviceProperties ignored"),
            },
            "distributedInfo" => match serde_json::from_str::<RawDistributed>(text) {
                Ok(d) => {
                    self.distributed = Some(DistributedInfo {
                        backend: d.backend,
                        rank: d.rank.and_then(|r| i64::try_from(r.0).ok()),
                        world_size: d.world_size.and_then(|w| i64::try_from(w.0).ok()),
                    })
                }
                Err(_) => self.diagnostics.note("unreadable distributedInfo ignored"),
            },
            _ => {
                // Keep short scalar facts (versions, options, names) for the report.
                let scalar = text.len() <= 256 && !text.starts_with(['{', '[']);
                if scalar {
                    let shown =
                        serde_json::from_str::<String>(text).unwrap_or_else(|_| text.to_owned());
                    if key == "roctracer_version" || key == "hip_runtime_version" {
                        self.saw_hip = true;
                    }
                    self.properties.insert(key.to_owned(), shown);
                }
            }
        }
    }

    /// Drop a `baseTimeNanoseconds` that would carry the events' times past
    /// [`TIME_LIMIT_NS`] (where they would all be clamped to one instant), with a note:
    /// the times then count from the trace's own zero, their differences exact.
    fn check_base_time(&mut self) {
        let Some(base) = self.base_time_ns else {
            return;
        };
        let fits = |t: Option<i64>| {
            t.is_none_or(|t| {
                t.checked_add(base)
                    .is_some_and(|s| s.abs() <= TIME_LIMIT_NS)
            })
        };
        if !(fits(self.start_ns) && fits(self.end_ns)) {
            self.base_time_ns = None;
            self.diagnostics.note(&format!(
                "baseTimeNanoseconds {base} would put the events past ±146 years: ignored, times counted from the trace's own zero"
            ));
        }
    }

    pub(in crate::parse::chrome_trace) fn finish(
        mut self,
        compressed: bool,
        content_bytes: u64,
    ) -> Recording {
        self.update_preview();
        self.check_base_time();
        if let Some(base) = self.base_time_ns {
            for e in &mut self.mem_events {
                e.time_ns = e.time_ns.saturating_add(base);
            }
            self.ops.shift_times(base);
            self.compact_ops.shift(base);
            for s in &mut self.steps {
                s.start_ns = s.start_ns.saturating_add(base);
                s.end_ns = s.end_ns.saturating_add(base);
            }
            self.start_ns = self.start_ns.map(|t| t.saturating_add(base));
            self.end_ns = self.end_ns.map(|t| t.saturating_add(base));
        }
        for (thread, stack) in std::mem::take(&mut self.open_begins) {
            if !stack.is_empty() {
                let _ = thread;
                self.diagnostics
                    .note_n("begin events never ended skipped", stack.len() as u64);
            }
        }
        self.attach_device_properties();
        // Growth slack is up to half of these vectors; give it back.
        self.ops.shrink_to_fit();
        self.compact_ops.shrink_to_fit();
        self.mem_events.shrink_to_fit();
        self.steps.sort_by_key(|s| (s.start_ns, s.number));
        let era = self.era();
        let start_ns = self.start_ns.unwrap_or(0);
        Recording {
            meta: Meta {
                format: SourceFormat::TorchChromeTrace,
                era,
                compressed,
                content_bytes,
                base_time_ns: self.base_time_ns,
                start_ns,
                end_ns: self.end_ns.unwrap_or(start_ns),
                event_order: false,
                distributed: self.distributed,
                properties: self.properties,
                events_read: self.events_read,
                spans_left_out: self.spans_left_out,
                memory_events_in_ops: None,
            },
            strings: self.strings,
            devices: self.devices,
            threads: self.threads,
            mem_events: self.mem_events,
            ops: self.ops,
            compact_ops: self.compact_ops,
            steps: self.steps,
            stacks: Vec::new(),
            allocator: None,
            oom_details: Vec::new(),
            gpu_samples: Vec::new(),
            host_samples: Vec::new(),
            gpu_process_samples: Vec::new(),
            storage_tags: Vec::new(),
            notes: Vec::new(),
            diagnostics: self.diagnostics,
        }
    }

    fn attach_device_properties(&mut self) {
        let gpu_type = if self.saw_hip {
            DeviceType::HIP
        } else {
            DeviceType::CUDA
        };
        for props in std::mem::take(&mut self.device_props) {
            let Some(id) = props.id.and_then(|i| i32::try_from(i.0).ok()) else {
                continue;
            };
            let key = DeviceId {
                device_type: gpu_type,
                index: id,
            };
            let total = props.total_global_mem.and_then(|t| u64::try_from(t.0).ok());
            // Describe GPUs that memory events use; list the others too, so reports can
            // name every GPU of the machine.
            let idx = self.device(key);
            if let Some(info) = self.devices.get_mut(idx as usize) {
                info.name = props.name;
                info.total_memory_bytes = total;
            }
        }
    }

    fn era(&self) -> String {
        let rocm = if self.saw_hip { ", ROCm" } else { "" };
        let era = if self.base_time_ns.is_some() {
            "torch 2.x (µs relative to baseTimeNanoseconds)"
        } else if self.saw_legacy_memory && !self.saw_addr {
            "torch 1.8–1.9 legacy (memory events without Addr or totals)"
        } else if self.saw_addr {
            if self.saw_fractional_ts {
                "torch 2.0–2.1 (absolute µs)"
            } else {
                "torch 1.10–1.13 (integer absolute µs)"
            }
        } else if self.saw_legacy_category {
            "torch 1.8–1.9 legacy (no memory events)"
        } else {
            "Kineto trace (no memory events)"
        };
        format!("{era}{rocm}")
    }
}
