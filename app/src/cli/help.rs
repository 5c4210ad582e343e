//! The long text of `vramscope --help`: the inputs vramscope reads, the units policy and the
//! exit codes.

/// The formats vramscope reads, one per line, from the importers; the units policy; the
/// exit codes.
pub fn inputs_help() -> String {
    format!(
        "Inputs (recognised by content, whatever the file is called):\n{}\n\n{UNITS_HELP}\n\n{EXIT_HELP}",
        collector::parse::importer::formats_help()
    )
}

/// The units policy, for `--help`.
const UNITS_HELP: &str = "\
Units: sizes are written in binary units everywhere (1 KiB = 1024 B, MiB, GiB), except
the key_averages() tables (table, and the per-op parts of diff and report), which keep
torch's own labels (KB, MB, GB: also 1024-based) so they read like torch's table.
Sizes given to options: 10G or 10GiB = 10 x 2^30 B, 10GB = 10 x 10^9 B, 1.5e9, or bytes.
Times given to options: 1.5ms, 250us (or 250µs), 2s, 100ns, or a plain number of µs,
after the start of the recording. Devices: 0 (an ordinal; -1 is the host), cuda:0, cpu.";

/// The exit codes, for `--help`.
const EXIT_HELP: &str = "\
Exit codes: 0 success; 1 a problem with the input; 2 a mistake in the command line.
check: 0 within the limit, 1 over it, 2 input unreadable, 3 no memory data to judge.
record: the program's own exit code (see record --help).";
