//! Device identity: PyTorch's `c10::DeviceType` numbering and how vramscope names devices.

use std::fmt;

/// A `c10::DeviceType` value as written in traces (`Device Type` arg).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
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
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
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

/// A device name that is not one vramscope writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownDevice(pub String);

impl std::str::FromStr for DeviceId {
    type Err = UnknownDevice;

    /// The inverse of `Display`: `cpu`, `cuda:0`, `xpu:1`, `host-pinned`, `device-type-9:0`.
    fn from_str(text: &str) -> Result<DeviceId, UnknownDevice> {
        let unknown = || UnknownDevice(text.to_owned());
        let host = |device_type| DeviceId {
            device_type,
            index: -1,
        };
        match text {
            "cpu" => return Ok(DeviceId::CPU),
            "mkldnn" => return Ok(host(DeviceType::MKLDNN)),
            "ideep" => return Ok(host(DeviceType::IDEEP)),
            "host-pinned" => return Ok(host(DeviceType::HOST_PINNED)),
            "host-pageable" => return Ok(host(DeviceType::HOST_PAGEABLE)),
            _ => {}
        }
        let (kind, index) = text.rsplit_once(':').ok_or_else(unknown)?;
        let index: i32 = index.parse().map_err(|_| unknown())?;
        let device_type = match kind {
            "cuda" => DeviceType::CUDA,
            "xpu" => DeviceType::XPU,
            "mps" => DeviceType::MPS,
            "privateuseone" => DeviceType::PRIVATE_USE1,
            "cuda-managed" => DeviceType::CUDA_MANAGED,
            other => other
                .strip_prefix("device-type-")
                .and_then(|t| t.parse().ok())
                .map(DeviceType)
                .ok_or_else(unknown)?,
        };
        Ok(DeviceId { device_type, index })
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

    #[test]
    fn names_read_back() {
        let types = [
            DeviceType::CPU,
            DeviceType::CUDA,
            DeviceType::MKLDNN,
            DeviceType::IDEEP,
            DeviceType::XPU,
            DeviceType::MPS,
            DeviceType::PRIVATE_USE1,
            DeviceType::HOST_PINNED,
            DeviceType::HOST_PAGEABLE,
            DeviceType::CUDA_MANAGED,
            DeviceType(9),
        ];
        for device_type in types {
            let index = if device_type.class() == DeviceClass::Host || device_type.0 < -1 {
                -1
            } else {
                3
            };
            let id = DeviceId { device_type, index };
            assert_eq!(id.to_string().parse::<DeviceId>(), Ok(id), "{id}");
        }
        for bad in ["gpu", "cuda:", "cuda:x", "cuda", "", "tpu:0"] {
            assert!(bad.parse::<DeviceId>().is_err(), "{bad}");
        }
    }
}
