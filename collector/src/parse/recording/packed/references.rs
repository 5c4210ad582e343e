//! The last check of a read pack: no index may point outside its table, so analyses can
//! index with them freely.

use crate::model::Recording;

/// Fail if any index in `rec` points outside its table, so analyses may index freely.
pub fn check_references(rec: &Recording) -> Result<(), String> {
    let devices = rec.devices.len();
    let threads = rec.threads.len();
    let strings = rec.strings.len();
    let stacks = rec.stacks.len();
    let bad = |what: &str, i: usize, value: usize, limit: usize| {
        Err(format!(
            "{what} {i} refers to entry {value} of {limit} (the pack is inconsistent)"
        ))
    };
    for (i, e) in rec.mem_events.iter().enumerate() {
        if e.device as usize >= devices {
            return bad("memory event", i, e.device as usize, devices);
        }
        // Sources without threads (allocator snapshots) use thread 0.
        if e.thread as usize >= threads.max(1) {
            return bad("memory event", i, e.thread as usize, threads);
        }
        if let Some(s) = e.stack.filter(|s| s.index() as usize >= stacks) {
            return bad("memory event", i, s.index() as usize, stacks);
        }
    }
    for (i, o) in rec.ops.iter().enumerate() {
        if o.name.0 as usize >= strings {
            return bad("op", i, o.name.0 as usize, strings);
        }
        if o.thread as usize >= threads {
            return bad("op", i, o.thread as usize, threads);
        }
    }
    for (i, frames) in rec.stacks.iter().enumerate() {
        if let Some(f) = frames
            .iter()
            .find(|f| f.name.0 as usize >= strings || f.file.0 as usize >= strings)
        {
            return bad("stack", i, f.name.0.max(f.file.0) as usize, strings);
        }
    }
    for (i, s) in rec.gpu_samples.iter().enumerate() {
        if s.device as usize >= devices {
            return bad("GPU sample", i, s.device as usize, devices);
        }
    }
    for (i, s) in rec.gpu_process_samples.iter().enumerate() {
        if s.device as usize >= devices {
            return bad("GPU process sample", i, s.device as usize, devices);
        }
    }
    for (i, t) in rec.storage_tags.iter().enumerate() {
        if t.device as usize >= devices {
            return bad("storage tag", i, t.device as usize, devices);
        }
    }
    for (i, o) in rec.oom_details.iter().enumerate() {
        if o.event as usize >= rec.mem_events.len() {
            return bad("OOM detail", i, o.event as usize, rec.mem_events.len());
        }
    }
    for (i, s) in rec.allocator.iter().flat_map(|a| &a.segments).enumerate() {
        if s.device as usize >= devices {
            return bad("segment", i, s.device as usize, devices);
        }
        if let Some(b) = s
            .blocks
            .iter()
            .find(|b| b.stack.is_some_and(|s| s.index() as usize >= stacks))
        {
            return bad(
                "segment",
                i,
                b.stack.map_or(0, |s| s.index() as usize),
                stacks,
            );
        }
    }
    Ok(())
}
