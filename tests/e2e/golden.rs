//! Golden outputs: every user-facing output (summary, table, live, diff, report, export) of
//! the samples, `../shared/traces` and a few fixtures, byte for byte as they were when the
//! goldens were written. A refactor that changes what a user sees fails here.
//!
//! The goldens live in `tests/golden/<input>/<command>` (gzip where large). After an
//! intended output change, rewrite them with `VRAMSCOPE_BLESS=1 cargo test --test e2e golden`
//! and review the diff like any other change.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::repo_root;

/// Inputs, relative to the repository root, and the short name their goldens go under.
const INPUTS: &[(&str, &str)] = &[
    ("sample-trace", "samples/transformer-lm-train-cpu.json.gz"),
    (
        "sample-snapshot",
        "samples/cs336-transformer-snapshot.pickle",
    ),
    ("t2", "../shared/traces/torch-cpu/t2.json.gz"),
    ("t3", "../shared/traces/torch-cpu/t3.json.gz"),
    ("t5", "../shared/traces/torch-cpu/t5.json.gz"),
    (
        "hta-gloo",
        "../shared/traces/real/hta-cpu-only-gloo/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    ),
    (
        "hta-df",
        "../shared/traces/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz",
    ),
    (
        "hta-rank0",
        "../shared/traces/real/hta-sampled-2ranks/sampled_rank-0.json.gz",
    ),
    (
        "hta-rank1",
        "../shared/traces/real/hta-sampled-2ranks/sampled_rank-1.json.gz",
    ),
    (
        "resnet-nomem",
        "../shared/traces/real/kineto-resnet50-2021-01-nomem/worker0.pt.trace.json.gz",
    ),
    (
        "resnet-w0",
        "../shared/traces/real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz",
    ),
    (
        "resnet-w4",
        "../shared/traces/real/kineto-resnet50-torch19-w4/worker0.1623212756351.pt.trace.json.gz",
    ),
    (
        "magma27",
        "../shared/traces/real/snapshot-cs336-magma27/memory_snapshot.pickle",
    ),
    (
        "h100-bert",
        "../shared/traces/real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
    ),
    (
        "h100-owlv2",
        "../shared/traces/real/tracelens-h100-owlv2-large/google_owlv2-large-patch14-ensemble__1016001.json.gz",
    ),
    (
        "h100-qwen",
        "../shared/traces/real/tracelens-h100-qwen-0.5b/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    ),
    (
        "mi300-bert",
        "../shared/traces/real/tracelens-mi300-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
    ),
    (
        "mi300-norm",
        "../shared/traces/real/tracelens-mi300-normalization-bwd/normalization_layer_test.json.gz",
    ),
    (
        "mi300-sglang",
        "../shared/traces/real/tracelens-mi300-sglang-decode/bs_32_rank0.json.gz",
    ),
    ("nsys-json", "../shared/traces/nsys-cpu/run.json"),
    ("nsys-sepstr", "../shared/traces/nsys-cpu/run-sepstr.json"),
    ("nsys-sqlite", "../shared/traces/nsys-cpu/run.sqlite"),
    ("nsys-nolazy", "../shared/traces/nsys-cpu/run-nolazy.sqlite"),
    ("nsys-cuda", "tests/fixtures/nsight/cuda-memory.sqlite"),
    ("snap-multi-gpu", "tests/fixtures/snapshot/multi_gpu.pickle"),
    ("snap-oom", "tests/fixtures/snapshot/oom.pickle"),
    ("snap-ring", "tests/fixtures/snapshot/ring.pickle"),
    (
        "snap-expandable",
        "tests/fixtures/snapshot/expandable.pickle",
    ),
    ("rec-train", "tests/fixtures/recording/v1-train.vsr"),
    ("rec-killed", "tests/fixtures/recording/v1-killed.vsr"),
    (
        "k03-sched",
        "tests/fixtures/torch-cpu/k03_mlp_sched.json.gz",
    ),
];

/// Commands run on every input: golden name, then arguments around `{in}`; `{out}` is a
/// fresh directory, and the golden is stdout, or the file named after `=>`.
const COMMANDS: &[(&str, &str)] = &[
    ("summary.txt", "summary {in}"),
    ("summary.json", "summary {in} --format json"),
    ("table.txt", "table {in}"),
    ("table.json", "table {in} --format json --sort none"),
    (
        "table-count.csv",
        "table {in} --format csv --sort count --limit 20",
    ),
    ("live-peak.txt", "live {in}"),
    ("live-end.json", "live {in} --at end --format json"),
    ("report.md", "report {in} -o {out} => report.md"),
    (
        "perfetto.json",
        "export {in} --format perfetto -o {out}/p.json => p.json",
    ),
];

/// Pairs compared with `diff`, and the arguments after them.
const DIFFS: &[(&str, &str, &str, &str)] = &[
    ("t2", "t3", "diff.txt", ""),
    ("t2", "t5", "diff-step.json", "--format json --align step"),
    ("hta-rank0", "hta-rank1", "diff.md", "--format markdown"),
    ("sample-snapshot", "magma27", "diff.txt", "--limit 10"),
    ("resnet-w0", "resnet-w4", "diff.txt", ""),
];

/// Goldens larger than this are kept gzip-compressed.
const GZIP_OVER_BYTES: usize = 64 * 1024;

fn golden_dir() -> PathBuf {
    repo_root().join("tests/golden")
}

fn blessing() -> bool {
    std::env::var_os("VRAMSCOPE_BLESS").is_some()
}

/// Runs `vramscope` with `args` from the repository root; the output is stdout (or the
/// named file in `out`), preceded by the exit code and stderr when the command failed.
fn run(args: &[String], out: &Path, file: Option<&str>) -> Vec<u8> {
    let result = Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("run vramscope");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    if !result.status.success() {
        let mut failed = format!("exit {:?}\n", result.status.code()).into_bytes();
        failed.extend_from_slice(&result.stderr);
        return failed;
    }
    match file {
        Some(name) => std::fs::read(out.join(name)).expect("the command's output file"),
        None => result.stdout,
    }
}

fn expand(template: &str, input: &str, out: &Path) -> (Vec<String>, Option<String>) {
    let (command, file) = match template.split_once(" => ") {
        Some((command, file)) => (command, Some(file.to_owned())),
        None => (template, None),
    };
    let out = out.to_str().expect("UTF-8 temp path");
    let args = command
        .split_whitespace()
        .map(|word| word.replace("{in}", input).replace("{out}", out))
        .collect();
    (args, file)
}

/// Compares `actual` with the golden at `path` (or writes it when blessing); returns a
/// description of the difference.
fn compare(path: &Path, actual: &[u8]) -> Option<String> {
    let gz_path = path.with_file_name(format!(
        "{}.gz",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    ));
    if blessing() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("golden dir");
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(&gz_path);
        if actual.len() > GZIP_OVER_BYTES {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            gz.write_all(actual).expect("gzip");
            std::fs::write(&gz_path, gz.finish().expect("gzip")).expect("write golden");
        } else {
            std::fs::write(path, actual).expect("write golden");
        }
        return None;
    }
    let expected = if gz_path.exists() {
        let mut raw = Vec::new();
        let file = std::fs::File::open(&gz_path).expect("golden");
        flate2::read::GzDecoder::new(file)
            .read_to_end(&mut raw)
            .expect("gunzip golden");
        raw
    } else {
        match std::fs::read(path) {
            Ok(raw) => raw,
            Err(e) => return Some(format!("{}: no golden ({e})", path.display())),
        }
    };
    if expected == actual {
        return None;
    }
    let first = expected
        .iter()
        .zip(actual)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(actual.len()));
    let line = expected[..first].iter().filter(|&&b| b == b'\n').count() + 1;
    let show = |bytes: &[u8]| {
        let start = first.saturating_sub(80);
        let end = (first + 160).min(bytes.len());
        String::from_utf8_lossy(&bytes[start.min(end)..end]).into_owned()
    };
    Some(format!(
        "{}: differs at byte {first} (line {line}); {} bytes expected, {} now\n--- expected\n{}\n--- now\n{}",
        path.display(),
        expected.len(),
        actual.len(),
        show(&expected),
        show(actual)
    ))
}

fn input_path(name: &str) -> &'static str {
    INPUTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, p)| *p)
        .expect("a named input")
}

#[test]
fn every_output_is_byte_identical_to_its_golden() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, input) in INPUTS {
        for (golden, template) in COMMANDS {
            let out = crate::support::temp_dir(&format!("golden-{name}-{golden}"));
            let (args, file) = expand(template, input, &out);
            let actual = run(&args, &out, file.as_deref());
            failures.extend(compare(&golden_dir().join(name).join(golden), &actual));
            checked += 1;
            let _ = std::fs::remove_dir_all(&out);
        }
    }
    for (a, b, golden, extra) in DIFFS {
        let out = crate::support::temp_dir(&format!("golden-diff-{a}-{b}"));
        let template = format!("diff {} {} {extra}", input_path(a), input_path(b));
        let (args, _) = expand(&template, "", &out);
        let actual = run(&args, &out, None);
        let path = golden_dir()
            .join("diff")
            .join(format!("{a}-vs-{b}-{golden}"));
        failures.extend(compare(&path, &actual));
        checked += 1;
        let _ = std::fs::remove_dir_all(&out);
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} outputs changed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
