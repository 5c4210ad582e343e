//! Growth across training steps: allocated memory at each step boundary, and whether it
//! keeps climbing (a leak: something kept alive from every step).

use crate::model::{DeviceId, Recording};
use crate::timeline::Timeline;

/// At least this many steps are needed to call growth steady.
pub const MIN_STEPS: usize = 3;

/// Allocated memory at step boundaries on one device.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepGrowth {
    /// The device.
    pub device: DeviceId,
    /// (step number, allocated bytes at the step's end).
    pub allocated_at_step_end: Vec<(i64, i64)>,
    /// Average change per step, bytes.
    pub average_growth_bytes: i64,
    /// Whether allocated memory rose at every boundary.
    pub steady_growth: bool,
}

/// Growth per device with memory events, when the recording has steps.
pub fn step_growth(rec: &Recording, timeline: &Timeline) -> Vec<StepGrowth> {
    if rec.steps.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, d) in timeline.devices.iter().enumerate() {
        if !d.allocated_known {
            continue;
        }
        let points: Vec<(i64, i64)> = (rec.steps.iter())
            .zip(d.at_each(rec.steps.iter().map(|s| s.end_ns)))
            .filter_map(|(s, at)| at.map(|p| (s.number, p.allocated_bytes)))
            .collect();
        if points.len() < 2 {
            continue;
        }
        let first = points.first().map_or(0, |p| p.1);
        let last = points.last().map_or(0, |p| p.1);
        let average = (last - first) / (points.len() as i64 - 1);
        let rising = points.windows(2).all(|w| w[1].1 > w[0].1);
        out.push(StepGrowth {
            device: rec.devices.get(i).map_or(DeviceId::CPU, |d| d.key),
            allocated_at_step_end: points.clone(),
            average_growth_bytes: average,
            steady_growth: rising && points.len() >= MIN_STEPS,
        });
    }
    out
}
