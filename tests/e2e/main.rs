//! End-to-end tests of the `vramscope` binary, on real traces and torch's own numbers.
//!
//! Ground truth lives outside the repository in `../shared/traces` (real public traces and
//! torch-generated truth) and, for traces made for this project, in `tests/fixtures`.

mod advise;
mod bad_input;
mod categories;
mod check;
mod check_codes;
mod cli;
mod diff;
mod error_hints;
mod export;
mod export_duckdb;
mod export_parquet;
mod file_policy;
mod file_signals;
mod golden;
mod gzip_input;
mod hostile_input;
mod hostile_names;
mod live_sums;
mod memory_timeline;
mod nsight;
mod odd_input;
mod pack;
mod pack_stored;
mod python_json;

mod ranks;
mod real_traces;
mod record;
mod record_host;
mod record_outputs;
mod record_signals;
mod record_support;
mod record_tags;
mod record_torch;
mod report;
mod report_categories;
mod report_html;
mod simulate;
mod slips;
mod snapshot;
mod snapshot_notes;
mod snapshots;
mod support;
mod table_truth;
