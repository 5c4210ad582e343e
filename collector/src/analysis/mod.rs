//! Analyses: pure functions of a [`Recording`](crate::Recording) and its
//! [`Timeline`](crate::Timeline).

pub mod advise;
pub mod allocations;
pub mod categories;
pub mod columnar;
pub mod decimate;
pub mod diff;
pub mod fragmentation;
pub mod growth;
pub mod lanes;
pub mod live;
pub mod markers;
pub mod oom;
pub mod owners;
pub mod per_op;
pub mod pyramid;
pub mod ranks;
pub mod samples;
pub mod segments;
pub mod simulate;
pub mod summary;

pub use per_op::{
    Net, OpRow, RangeNet, SortKey, TimeWindow, key_averages, key_averages_with_net, row_spans,
    sort_rows,
};
pub use summary::{DeviceSummary, Summary, summarize, summarize_compact};
