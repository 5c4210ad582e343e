//! Device identity: PyTorch's `c10::DeviceType` numbering and how vramscope names devices.

use std::fmt;

/// A `c10::DeviceType` value as written in traces (`Device Type` arg).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceType(pub i16);

impl DeviceType {
    /// Host memory.
    pub const CPU: DeviceType = DeviceType(0);
    /// NVIDIA GPU.
    pub const CUDA: DeviceType = DeviceType(1);
    /// oneDNN host memory.
    pub const MKLDNN: DeviceType = DeviceType(2);
    /// Intel IDEEP host memory.
    pub const IDEEP: DeviceType = DeviceType(5);
    /// AMD GPU under ROCm.
    pub const HIP: DeviceType = DeviceType(6);
    /// Intel GPU.
    pub const XPU: DeviceType = DeviceType(12);
    /// Apple GPU.
    pub const MPS: DeviceType = DeviceType(13);
    /// Out-of-tree accelerator backend.
    pub const PRIVATE_USE1: DeviceType = DeviceType(20);
    /// Page-locked host memory seen by a GPU profiler (not a c10 type, hence negative).
    pub const HOST_PINNED: DeviceType = DeviceType(-2);
    /// Pageable host memory seen by a GPU profiler.
    pub const HOST_PAGEABLE: DeviceType = DeviceType(-3);
    /// CUDA managed (unified) memory, per device.
    pub const CUDA_MANAGED: DeviceType = DeviceType(-4);

    /// How torch's `key_averages()` counts memory on this device type.
    pub fn class(self) -> DeviceClass {
        match self {
            DeviceType::CPU | DeviceType::MKLDNN | DeviceType::IDEEP => DeviceClass::Host,
            DeviceType::CUDA | DeviceType::HIP | DeviceType::XPU | DeviceType::PRIVATE_USE1 => {
                DeviceClass::Accelerator
            }
            _ => DeviceClass::Uncounted,
        }
    }
}

/// Which key_averages column a device's memory lands in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceClass {
    /// "CPU Mem": CPU, MKLDNN, IDEEP.
    Host,
    /// "CUDA Mem": CUDA, HIP, XPU, PrivateUse1.
    Accelerator,
    /// Neither (MPS, XLA, …): torch counts it nowhere.
    Uncounted,
}

/// A device: its c10 type and ordinal (−1 for the host). Analyses name devices by it
/// (a [`DeviceIdx`](super::DeviceIdx) is only a position in one recording); output spells
/// it as torch does (`cpu`, `cuda:0`) through `Display`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    /// c10 device type.
    pub device_type: DeviceType,
    /// Ordinal, −1 for CPU.
    pub index: i32,
}

impl DeviceId {
    /// The host.
    pub const CPU: DeviceId = DeviceId {
        device_type: DeviceType::CPU,
        index: -1,
    };

    /// A CUDA device.
    pub fn cuda(index: i32) -> DeviceId {
        DeviceId {
            device_type: DeviceType::CUDA,
            index,
        }
    }

    /// Whether this is accelerator memory (a GPU), as opposed to host memory.
    pub fn is_accelerator(self) -> bool {
        self.device_type.class() == DeviceClass::Accelerator
    }
}

impl fmt::Display for DeviceId {
    /// Torch's device strings: `cpu`, `cuda:0` (ROCm GPUs are `cuda:N` in torch too), `xpu:1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.device_type {
            DeviceType::CPU => return f.write_str("cpu"),
            DeviceType::MKLDNN => return f.write_str("mkldnn"),
            DeviceType::IDEEP => return f.write_str("ideep"),
            DeviceType::CUDA | DeviceType::HIP => "cuda",
            DeviceType::XPU => "xpu",
            DeviceType::MPS => "mps",
            DeviceType::PRIVATE_USE1 => "privateuseone",
            DeviceType::HOST_PINNED => return f.write_str("host-pinned"),
            DeviceType::HOST_PAGEABLE => return f.write_str("host-pageable"),
            DeviceType::CUDA_MANAGED => "cuda-managed",
            DeviceType(other) => return write!(f, "device-type-{other}:{}", self.index),
        };
        write!(f, "{kind}:{}", self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_torch() {
        assert_eq!(DeviceId::CPU.to_string(), "cpu");
        assert_eq!(DeviceId::cuda(3).to_string(), "cuda:3");
        let hip = DeviceId {
            device_type: DeviceType::HIP,
            index: 0,
        };
        assert_eq!(hip.to_string(), "cuda:0");
        assert!(hip.is_accelerator());
        assert_eq!(DeviceType::MKLDNN.class(), DeviceClass::Host);
        assert_eq!(DeviceType::MPS.class(), DeviceClass::Uncounted);
    }
}
