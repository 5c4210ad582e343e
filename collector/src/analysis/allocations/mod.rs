//! Every allocation as a band over its lifetime, stacked as PyTorch's memory_viz stacks
//! its "Active Memory Timeline": the bytes allocated before the trace at the bottom, then
//! the live allocations in the order they were made, so a new allocation lands on top and
//! keeps its offset until something below it is freed, when it slides down by the freed
//! bytes. At any instant the stack's top is the allocator's allocated total.
//!
//! Built once per device ([`BandLayout::build`], one walk of the device's events): each
//! band's offset when allocated and the removals that move it, its moves found when asked
//! (`layout.rs`, `removals.rs`); a level-of-detail index of the
//! bands by size and lifetime so a view asks only for the bands a pixel can show
//! (`lod.rs`); each band's colour key by stack, op or category (`keys.rs`); search by op
//! or stack and the matching bytes over time (`search.rs`); and the icicle (flame graph)
//! of what is live at an instant by stack (`icicle.rs`). The same walk stacks the
//! allocator's segments (memory_viz's "Active Cached Memory Timeline", `cached.rs`).

mod cached;
mod icicle;
mod keys;
mod layout;
mod lod;
mod removals;
mod search;

pub use cached::{CacheBands, SegmentLife, segment_lives};
pub use icicle::{FlameNode, FlameTree, flame_at};
pub use keys::{BandKeys, ColorBy, band_keys, op_of, site_frame};
pub use layout::{BandLayout, Move};
pub use lod::{BandIndex, BandQuery};
pub use search::{Matches, search};

#[cfg(test)]
mod tests;
