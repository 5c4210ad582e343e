//! The allocator's settings as techniques (issue 35): what `PYTORCH_CUDA_ALLOC_CONF` would
//! change, from the run replayed through the allocator model
//! ([`crate::analysis::simulate`]). Their saving is reserved memory (the allocated peak
//! does not move) and the out-of-memory errors they avoid; each is compared with the same
//! replay under the recorded settings, so the model's own error cancels.

use crate::analysis::simulate::{
    AllocatorConfig, DeviceSimulation, Run, SimulateOptions, Simulation, simulate,
};
use crate::model::{DeviceIdx, Recording};

/// What a setting is known not to work with: users of these must not be told to switch
/// it on without knowing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caveat {
    /// Memory shared between processes with `cudaIpcGetMemHandle` (custom all-reduce,
    /// `torch.multiprocessing` of CUDA tensors): expandable segments are mapped with
    /// `cuMemMap`, whose pointers that call refuses.
    CudaIpc,
    /// NCCL's registration of collective buffers under graph capture, which assumes one
    /// contiguous allocation per buffer.
    NcclBufferRegistration,
    /// CUDA graphs' private pools (disabled there, then re-enabled, across torch versions).
    CudaGraphs,
}

impl Caveat {
    /// Its name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Caveat::CudaIpc => "cuda_ipc",
            Caveat::NcclBufferRegistration => "nccl_buffer_registration",
            Caveat::CudaGraphs => "cuda_graphs",
        }
    }
}

/// What a setting changes from the recorded settings (the first of these that differs),
/// which decides its price and caveats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingChange {
    /// Expandable segments switched on.
    ExpandableSegments,
    /// `max_split_size_mb` set or changed.
    MaxSplitSize,
    /// `roundup_power2_divisions` changed.
    RoundupPower2Divisions,
    /// `garbage_collection_threshold` set or changed.
    GarbageCollection,
    /// Expandable segments switched off, or nothing the model measures.
    Other,
}

impl SettingChange {
    fn between(recorded: &AllocatorConfig, setting: &AllocatorConfig) -> SettingChange {
        if setting.expandable_segments && !recorded.expandable_segments {
            SettingChange::ExpandableSegments
        } else if setting.max_split_size_bytes != recorded.max_split_size_bytes {
            SettingChange::MaxSplitSize
        } else if setting.roundup_power2_divisions != recorded.roundup_power2_divisions {
            SettingChange::RoundupPower2Divisions
        } else if setting.garbage_collection_threshold != recorded.garbage_collection_threshold {
            SettingChange::GarbageCollection
        } else {
            SettingChange::Other
        }
    }
}

/// One allocator setting's outcome against the recorded settings.
#[derive(Clone, Debug, PartialEq)]
pub struct SettingEstimate {
    /// The setting, as `PYTORCH_CUDA_ALLOC_CONF` says it.
    pub allocator_conf: String,
    /// Its simulated reserved peak.
    pub reserved_peak_bytes: u64,
    /// The recorded settings' simulated reserved peak (the baseline of `saving_bytes`).
    pub recorded_reserved_peak_bytes: u64,
    /// Reserved bytes saved (negative: it costs memory).
    pub saving_bytes: i64,
    /// Cached but free bytes at its reserved peak (fragmentation).
    pub cached_free_at_peak_bytes: u64,
    /// The out-of-memory errors of the replay under the recorded settings on the device's
    /// capacity: each recorded one it reproduces, and the first new one (a smaller
    /// `--capacity`; a real run would stop there, so later ones are not counted).
    pub ooms_with_recorded_settings: usize,
    /// Of those, the ones that do not happen under this setting.
    pub ooms_avoided: usize,
    /// `cudaMalloc` calls and page mappings under it.
    pub device_mallocs: u64,
    /// What it changes from the recorded settings.
    pub change: SettingChange,
    /// What it is known not to work with (switching expandable segments on).
    pub caveats: &'static [Caveat],
}

const EXPANDABLE_CAVEATS: &[Caveat] = &[
    Caveat::CudaIpc,
    Caveat::NcclBufferRegistration,
    Caveat::CudaGraphs,
];

/// The allocator settings' estimates per device, where the run can be replayed (a
/// snapshot with its history, a trace whose memory events carry addresses); empty where
/// it cannot.
pub fn allocator_settings(
    rec: &Recording,
    capacity_bytes: Option<u64>,
) -> Vec<(DeviceIdx, Vec<SettingEstimate>)> {
    let options = SimulateOptions {
        alternatives: Vec::new(),
        capacity_bytes,
        skip_proof: true,
    };
    simulate(rec, &options).map_or_else(Vec::new, |s| per_device(&s))
}

fn per_device(sim: &Simulation) -> Vec<(DeviceIdx, Vec<SettingEstimate>)> {
    sim.devices
        .iter()
        .filter_map(|d| Some((d.device, settings(d)?)))
        .collect()
}

fn settings(d: &DeviceSimulation) -> Option<Vec<SettingEstimate>> {
    let (recorded, alternatives) = d.runs.split_first()?;
    let baseline = Fails::of(recorded);
    let recorded_conf = AllocatorConfig::parse(&recorded.allocator_conf).unwrap_or_default();
    Some(
        alternatives
            .iter()
            .map(|r| {
                let still = Fails::of(r);
                let conf = AllocatorConfig::parse(&r.allocator_conf).unwrap_or_default();
                let change = SettingChange::between(&recorded_conf, &conf);
                SettingEstimate {
                    allocator_conf: r.allocator_conf.clone(),
                    reserved_peak_bytes: r.reserved_peak_bytes,
                    recorded_reserved_peak_bytes: recorded.reserved_peak_bytes,
                    saving_bytes: recorded.reserved_peak_bytes as i64
                        - r.reserved_peak_bytes as i64,
                    cached_free_at_peak_bytes: r.at_peak.cached_free_bytes,
                    ooms_with_recorded_settings: baseline.count(),
                    ooms_avoided: baseline.avoided_by(&still),
                    device_mallocs: r.device_mallocs,
                    change,
                    caveats: match change {
                        SettingChange::ExpandableSegments => EXPANDABLE_CAVEATS,
                        _ => &[],
                    },
                }
            })
            .collect(),
    )
}

/// Where a replay runs out of memory: at which recorded OOMs, and whether anywhere new.
struct Fails {
    recorded_at_ns: Vec<i64>,
    new: bool,
}

impl Fails {
    fn of(run: &Run) -> Fails {
        let fails = run.ooms.iter().filter(|o| o.happens == Some(true));
        Fails {
            recorded_at_ns: fails
                .clone()
                .filter(|o| o.recorded)
                .map(|o| o.time_ns)
                .collect(),
            new: fails.clone().any(|o| !o.recorded),
        }
    }

    fn count(&self) -> usize {
        self.recorded_at_ns.len() + usize::from(self.new)
    }

    /// How many of these `other` does not have.
    fn avoided_by(&self, other: &Fails) -> usize {
        let recorded = (self.recorded_at_ns.iter())
            .filter(|t| !other.recorded_at_ns.contains(t))
            .count();
        recorded + usize::from(self.new && !other.new)
    }
}
