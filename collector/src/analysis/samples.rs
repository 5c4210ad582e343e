//! Driver-side memory of a recording as curves: NVML's used memory per GPU (the whole
//! device, and the recorded process tree's share) and the process tree's host RSS and PSS. These
//! sit beside the allocator's allocated/reserved curves, so the gap between NVML used and
//! reserved — CUDA context, NCCL, other libraries and other processes — can be read off.

use crate::model::{DeviceIdx, Recording};

/// Which sampled quantity of a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleCurve {
    /// Memory in use on the whole device (every process and the driver).
    DeviceUsed,
    /// Memory of the recorded process and its descendants.
    ProcessUsed,
}

/// `(time_ns, bytes)` in time order for one GPU; empty when the recording has none.
pub fn gpu_curve(rec: &Recording, device: DeviceIdx, which: SampleCurve) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = rec
        .gpu_samples
        .iter()
        .filter(|s| s.device == device)
        .filter_map(|s| {
            let bytes = match which {
                SampleCurve::DeviceUsed => Some(s.used_bytes),
                SampleCurve::ProcessUsed => s.process_bytes,
            }?;
            Some((s.time_ns, i64::try_from(bytes).unwrap_or(i64::MAX)))
        })
        .collect();
    out.sort_by_key(|p| p.0);
    out
}

/// The devices that have NVML samples, in device order.
pub fn sampled_devices(rec: &Recording) -> Vec<DeviceIdx> {
    let mut out: Vec<DeviceIdx> = rec.gpu_samples.iter().map(|s| s.device).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Which host memory figure of the recorded process tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostCurve {
    /// Resident set size: a page shared by N processes counts N times.
    Rss,
    /// Proportional set size: a shared page counts 1/N in each (read less often).
    Pss,
}

/// The recorded process tree's host memory, `(time_ns, bytes)` in time order.
pub fn host_curve(rec: &Recording, which: HostCurve) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = rec
        .host_samples
        .iter()
        .filter_map(|s| {
            let bytes = match which {
                HostCurve::Rss => Some(s.rss_bytes),
                HostCurve::Pss => s.pss_bytes,
            }?;
            Some((s.time_ns, i64::try_from(bytes).unwrap_or(i64::MAX)))
        })
        .collect();
    out.sort_by_key(|p| p.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DeviceId, GpuSample, HostSample, SourceFormat};

    #[test]
    fn curves_per_device_in_time_order() {
        // GIVEN samples of two GPUs, out of order, one without a process reading
        let mut rec = Recording::empty(SourceFormat::VramscopeRecording, "test");
        let (a, b) = (
            rec.device_index(DeviceId::cuda(0)),
            rec.device_index(DeviceId::cuda(1)),
        );
        for (t, device, used, procs) in [(20, a, 5, Some(3)), (10, a, 4, None), (10, b, 9, Some(1))]
        {
            rec.gpu_samples.push(GpuSample {
                time_ns: t,
                device,
                used_bytes: used,
                total_bytes: None,
                process_bytes: procs,
                free_bytes: None,
                driver_reserved_bytes: None,
            });
        }
        rec.host_samples.push(HostSample {
            time_ns: 7,
            rss_bytes: 100,
            pss_bytes: Some(60),
            processes: Some(2),
        });
        // THEN each curve holds its device's readings, sorted by time
        assert_eq!(
            gpu_curve(&rec, a, SampleCurve::DeviceUsed),
            [(10, 4), (20, 5)]
        );
        assert_eq!(gpu_curve(&rec, a, SampleCurve::ProcessUsed), [(20, 3)]);
        assert_eq!(gpu_curve(&rec, b, SampleCurve::DeviceUsed), [(10, 9)]);
        assert_eq!(sampled_devices(&rec), [a, b]);
        assert_eq!(host_curve(&rec, HostCurve::Rss), [(7, 100)]);
        assert_eq!(host_curve(&rec, HostCurve::Pss), [(7, 60)]);
    }
}
