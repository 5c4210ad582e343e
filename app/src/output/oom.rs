//! An OOM verdict in words: the collector decides the cause from the numbers
//! ([`collector::analysis::oom`]); this says it, with the allocator simulation's answer in
//! place of a hint where the input has the history to replay. The CLI's summary, the
//! report, report.html, the JSON and the viewer all say it through [`verdict_words`].

use collector::analysis::oom::{OomCause, OomVerdict, SimulatedOom};
use collector::units::bytes_iec;

/// The hint a fragmentation verdict ends with where no simulation replaces it.
const EXPANDABLE_HINT: &str = "try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";

/// One sentence for a human: the cause with its numbers, then what the simulation says.
pub fn verdict_words(o: &OomVerdict) -> String {
    let said = cause_words(o);
    match &o.simulation {
        Some(s) => with_simulation(said, s),
        None => said,
    }
}

fn cause_words(o: &OomVerdict) -> String {
    let want = bytes_iec(o.requested_bytes);
    let free = o.device_free_bytes.map_or(0, |f| f as i64);
    let cache = o.cache_free_bytes.unwrap_or(0);
    match o.cause {
        OomCause::StreamOrPool => format!(
            "a cached free block of {} could hold the {want} request, but it belongs to another stream or memory pool",
            bytes_iec(o.largest_free_block_bytes.unwrap_or(0))
        ),
        OomCause::Fragmentation => {
            let largest = (o.largest_free_block_bytes)
                .map_or(String::new(), |l| format!(", the largest {}", bytes_iec(l)));
            format!(
                "fragmentation: {} is free in the allocator's cache{largest} and {} on the device, but no single block of {want}; {EXPANDABLE_HINT}",
                bytes_iec(cache),
                bytes_iec(free)
            )
        }
        OomCause::OutsideAllocator => format!(
            "memory held outside this allocator ({}: other processes, the CUDA context, NCCL buffers) leaves too little for the {want} request",
            bytes_iec(o.outside_allocator_bytes.unwrap_or(0))
        ),
        OomCause::Capacity => format!(
            "capacity: live tensors hold {}, with {} cached and {} free on the device — not enough for {want}; reduce batch size or activation memory (checkpointing, mixed precision)",
            bytes_iec(o.allocated_bytes),
            bytes_iec(cache),
            bytes_iec(free)
        ),
    }
}

/// The verdict with the simulation's answer in place of a hint: the first setting under
/// which the OOM would not happen, or that none of those tried avoids it.
fn with_simulation(verdict: String, s: &SimulatedOom) -> String {
    let base = verdict
        .strip_suffix(EXPANDABLE_HINT)
        .map_or(verdict.as_str(), |v| v.trim_end_matches("; "));
    if !s.reproduced {
        // The replay does not fail where the run did (its start or the capacity is not
        // the run's): what other settings do there says nothing.
        return format!(
            "{verdict} (the allocator simulation does not reproduce this OOM under the recorded settings, so it cannot judge other settings)"
        );
    }
    let said = match s.settings.iter().find(|o| !o.happens) {
        Some(o) => format!(
            "simulated: with {} this OOM would not happen (reserved peak {} → {})",
            o.allocator_conf,
            bytes_iec(s.reserved_peak_bytes as i64),
            bytes_iec(o.reserved_peak_bytes as i64)
        ),
        None => {
            let tried: Vec<&str> = (s.settings.iter())
                .map(|o| o.allocator_conf.as_str())
                .collect();
            format!("simulated: it happens with {} too", tried.join(" and "))
        }
    };
    format!("{base}; {said}")
}

#[cfg(test)]
mod tests {
    use collector::analysis::oom::SimulatedSetting;
    use collector::model::DeviceId;

    use super::*;

    const MIB: i64 = 1 << 20;

    fn fragmented() -> OomVerdict {
        OomVerdict {
            device: DeviceId::CPU,
            at_ns: 0,
            requested_bytes: 60 * MIB,
            device_free_bytes: Some(12 << 20),
            allocated_bytes: 130 * MIB,
            reserved_bytes: Some(220 * MIB),
            cache_free_bytes: Some(90 * MIB),
            largest_free_block_bytes: Some(18 * MIB),
            outside_allocator_bytes: None,
            cause: OomCause::Fragmentation,
            largest_live: Vec::new(),
            simulation: None,
        }
    }

    #[test]
    fn each_cause_is_said_with_its_numbers() {
        let mut o = fragmented();
        assert_eq!(
            verdict_words(&o),
            "fragmentation: 90.00 MiB is free in the allocator's cache, the largest 18.00 MiB and 12.00 MiB on the device, but no single block of 60.00 MiB; try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
        );
        o.cause = OomCause::Capacity;
        assert!(verdict_words(&o).starts_with("capacity: live tensors hold 130.00 MiB"));
        o.cause = OomCause::StreamOrPool;
        assert!(verdict_words(&o).starts_with("a cached free block of 18.00 MiB could hold"));
        o.cause = OomCause::OutsideAllocator;
        o.outside_allocator_bytes = Some(4096 * MIB);
        assert!(verdict_words(&o).contains("(4.00 GiB: other processes"));
    }

    #[test]
    fn the_simulation_replaces_the_hint_only_where_it_reproduces_the_oom() {
        let setting = |conf: &str, happens: bool, peak: u64| SimulatedSetting {
            allocator_conf: conf.to_owned(),
            happens,
            short_by_bytes: happens.then_some(4 << 20),
            headroom_bytes: (!happens).then_some(8 << 20),
            reserved_peak_bytes: peak,
        };
        let hinted = verdict_words(&fragmented());
        let mut o = fragmented();
        o.simulation = Some(SimulatedOom {
            reproduced: true,
            reserved_peak_bytes: 220 << 20,
            settings: vec![
                setting("expandable_segments:True", false, 200 << 20),
                setting("max_split_size_mb:64", true, 220 << 20),
            ],
        });
        let said = verdict_words(&o);
        assert!(!said.contains("try PYTORCH_CUDA_ALLOC_CONF"), "{said}");
        assert!(
            said.ends_with("; simulated: with expandable_segments:True this OOM would not happen (reserved peak 220.00 MiB → 200.00 MiB)"),
            "{said}"
        );
        let s = o.simulation.as_mut().expect("simulation");
        s.settings[0].happens = true;
        let said = verdict_words(&o);
        assert!(
            said.ends_with(
                "simulated: it happens with expandable_segments:True and max_split_size_mb:64 too"
            ),
            "{said}"
        );
        o.simulation.as_mut().expect("simulation").reproduced = false;
        let said = verdict_words(&o);
        assert!(
            said.starts_with(&hinted) && said.contains("does not reproduce"),
            "{said}"
        );
    }
}
