//! End-to-end tests of the `vramscope` binary, on real traces and torch's own numbers.
//!
//! Ground truth lives outside the repository in `../shared/traces` (real public traces and
//! torch-generated truth) and, for traces made for this project, in `tests/fixtures`.

mod bad_input;
mod categories;
mod check;
mod diff;
mod export;
mod golden;
mod nsight;
mod odd_input;
mod pack;
mod real_traces;
mod record;
mod record_signals;
mod record_support;
mod record_torch;
mod report;
mod snapshot;
mod snapshot_notes;
mod snapshots;
mod support;
mod table_truth;
