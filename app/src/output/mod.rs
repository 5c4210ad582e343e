//! Everything vramscope writes for people and other tools, by kind: text, JSON and CSV on
//! stdout (summary, table, live, diff), markdown reports, PNG/SVG charts and Perfetto JSON
//! files. Reporters are pure functions of analysis results writing to an `impl Write` or
//! returning bytes; files are written only through [`file`](mod@file), the one writer and the one
//! overwrite policy.

pub mod advise;
pub mod assumptions;
pub mod categories;
pub mod charts;
pub mod check;
pub mod diff;
pub mod file;
pub mod html;
pub mod json_docs;
pub mod live;
pub mod nvml;
pub mod oom;
pub mod parquet;
pub mod perfetto;
pub mod ranks;
pub mod ranks_check;
pub mod report;
pub mod simulate;
pub mod style;
pub mod summary;
pub mod table;
pub mod terminal;
pub mod text;
