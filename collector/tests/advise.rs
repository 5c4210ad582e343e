//! The what-if advisor against reality: for each base run in `tests/fixtures/advise` (made
//! by its `gen_truth.py`), every alternative the generator actually ran on CPU in a fresh
//! process — bf16 autocast, checkpointing, ZeRO-1 (ZeroRedundancyOptimizer), ZeRO-2 and
//! ZeRO-3 (FSDP) at 2 and 4 ranks, micro-batching, on deeper bases bf16 with checkpointing
//! together; bf16 optimizer states, LoRA, chunked loss, and on the gpt bases selective
//! checkpointing, tensor and sequence parallelism (DTensor) and pipeline parallelism
//! (torch.distributed.pipelining) — has a measured peak; the advisor's estimate from the base trace
//! alone must be within [`TOLERANCE_SHARE`] of it on at least [`REQUIRED_SHARE`] of the
//! estimates, and within [`TIGHT_TOLERANCE_SHARE`] on at least [`TIGHT_REQUIRED_SHARE`]. A sharded run's measured peak is its most loaded rank's (the one that runs out
//! of memory first), averaged over the repeats.

use std::path::PathBuf;

use collector::analysis::advise::{Options, Technique, advise, estimate_together, techniques};

/// Techniques a CPU cannot re-run (they move device memory to the host, or need CUDA
/// kernels): docs/ADVISOR.md cites published figures and bench/gpu/advise_truth.py re-runs
/// them on a GPU.
const GPU_ONLY: [&str; 3] = ["activation_offload", "optimizer_8bit", "optimizer_offload"];
use collector::{LoadOptions, Timeline, load};

/// |estimate − measured| allowed, as a share of measured.
const TOLERANCE_SHARE: f64 = 0.15;
/// Estimates that must be within the tolerance.
const REQUIRED_SHARE: f64 = 0.90;
/// The tighter tolerance, and the estimates that must be within it.
const TIGHT_TOLERANCE_SHARE: f64 = 0.05;
const TIGHT_REQUIRED_SHARE: f64 = 0.70;

/// The committed bases; `VRAMSCOPE_ADVISE_DIR` points the same check at other runs made by
/// the same generator (held-out runs).
fn truth_files() -> Vec<PathBuf> {
    let dir = std::env::var_os("VRAMSCOPE_ADVISE_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/advise"),
        PathBuf::from,
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".truth.json"))
        .collect();
    files.sort();
    files
}

fn technique(name: &str, n: u32) -> Technique {
    Technique::named(name, n).unwrap_or_else(|| panic!("no technique {name}"))
}

/// (base, technique, measured, estimated) for every run of one base.
fn rows(truth_path: &PathBuf) -> Vec<(String, String, i64, i64)> {
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(truth_path).expect("truth")).expect("json");
    let trace = truth_path
        .to_string_lossy()
        .replace(".truth.json", ".json.gz");
    let rec = load(trace.as_ref(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let timeline = Timeline::build(&rec);
    let base = truth_path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .replace(".truth.json", "");
    let mut out = Vec::new();
    for r in truth["runs"].as_array().expect("runs") {
        let name = r["technique"].as_str().expect("technique");
        let n = ["world_size", "factor", "degree", "rank"]
            .iter()
            .find_map(|k| r[k].as_u64())
            .unwrap_or(1) as u32;
        let options = Options {
            world_size: n,
            micro_batches: n,
            capacity_bytes: None,
            tensor_parallel: n,
            pipeline_stages: n,
            lora_rank: n,
            loss_chunks: n,
        };
        let advice = advise(&rec, &timeline, &options);
        let device = advice.first().expect("a device");
        assert_eq!(
            device.measured_peak_bytes,
            truth["base_peak_bytes"].as_i64().expect("base peak"),
            "{trace}: the base peak"
        );
        let plan: Vec<Technique> = name.split('+').map(|t| technique(t, n)).collect();
        let estimated = match plan.as_slice() {
            [one] => {
                device
                    .estimates
                    .iter()
                    .find(|e| e.technique == *one)
                    .expect("estimate")
                    .estimated_peak_bytes
            }
            _ => estimate_together(&rec, &timeline, device.device, &plan, &options)
                .expect("estimate"),
        };
        let label = match plan.first().and_then(|t| t.parameter()) {
            Some((_, n)) => format!("{name} {n}"),
            None => name.to_owned(),
        };
        out.push((base.clone(), label, measured(r), estimated));
    }
    out
}

/// A run's measured peak: for sharded runs (peaks listed rank by rank, repeat after
/// repeat) the most loaded rank's, averaged over the repeats; else the one run's.
fn measured(run: &serde_json::Value) -> i64 {
    let peaks: Vec<i64> = run["peaks_bytes"]
        .as_array()
        .expect("peaks")
        .iter()
        .map(|p| p.as_i64().expect("peak"))
        .collect();
    let ranks = run["world_size"].as_u64().unwrap_or(1).max(1) as usize;
    let worst: Vec<i64> = peaks
        .chunks(ranks)
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .collect();
    worst.iter().sum::<i64>() / worst.len().max(1) as i64
}

#[test]
fn estimates_are_within_15_percent_of_the_real_reruns_on_90_percent_and_5_percent_on_70() {
    let (mut within, mut within_10, mut within_5) = (0, 0, 0);
    let mut all = 0;
    // Per technique: (rows, within 15 %, within 5 %).
    let mut per: std::collections::BTreeMap<String, (usize, usize, usize)> = Default::default();
    println!("| base | technique | measured (B) | estimated (B) | error % |");
    println!("|---|---|---:|---:|---:|");
    let files = truth_files();
    for f in &files {
        for (base, tech, measured, estimated) in rows(f) {
            let error = (estimated - measured) as f64 / measured as f64;
            println!(
                "| {base} | {tech} | {measured} | {estimated} | {:+.1} |",
                100.0 * error
            );
            all += 1;
            let name = tech.split(' ').next().unwrap_or_default().to_owned();
            let row = per.entry(name).or_default();
            row.0 += 1;
            row.1 += usize::from(error.abs() <= TOLERANCE_SHARE);
            row.2 += usize::from(error.abs() <= TIGHT_TOLERANCE_SHARE);
            within += usize::from(error.abs() <= TOLERANCE_SHARE);
            within_10 += usize::from(error.abs() <= 0.10);
            within_5 += usize::from(error.abs() <= TIGHT_TOLERANCE_SHARE);
        }
    }
    println!(
        "{within}/{all} within {:.0} %, {within_10} within 10 %, {within_5} within {:.0} %",
        100.0 * TOLERANCE_SHARE,
        100.0 * TIGHT_TOLERANCE_SHARE
    );
    println!();
    println!("| technique | rows | within 15 % | within 5 % |");
    println!("|---|---:|---:|---:|");
    for (name, (rows, w15, w5)) in &per {
        println!("| {name} | {rows} | {w15} | {w5} |");
    }
    // Every technique a CPU can run has measured rows in the committed truth.
    if std::env::var_os("VRAMSCOPE_ADVISE_DIR").is_none() {
        for t in techniques(&Options::DEFAULTS) {
            let name = t.as_str();
            assert!(
                GPU_ONLY.contains(&name) || per.contains_key(name),
                "{name}: no re-run measured it"
            );
        }
    }
    // Each base has at least four re-runs.
    assert!(
        !files.is_empty() && all >= 4 * files.len(),
        "{all} estimates: runs are missing"
    );
    assert!(
        within as f64 >= REQUIRED_SHARE * all as f64,
        "{within}/{all} within the tolerance"
    );
    assert!(
        within_5 as f64 >= TIGHT_REQUIRED_SHARE * all as f64,
        "{within_5}/{all} within the tight tolerance"
    );
}

/// Bases built inside the profiled region (`--build-inside`: weights and optimizer state in
/// the totals, the peak in the optimizer step): micro-batching cannot lower that step, and
/// its estimate must be within 2 % of the real micro-batched re-runs.
#[test]
fn micro_batching_an_optimizer_bound_step_is_within_2_percent_of_the_reruns() {
    let mut checked = 0;
    for f in truth_files() {
        let truth: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&f).expect("truth")).expect("json");
        if truth["args"]["build_inside"] != true {
            continue;
        }
        for (base, tech, measured, estimated) in rows(&f) {
            if !tech.starts_with("micro_batch") {
                continue;
            }
            let error = (estimated - measured) as f64 / measured as f64;
            assert!(
                error.abs() <= 0.02,
                "{base} {tech}: {estimated} vs {measured}"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 2 || std::env::var_os("VRAMSCOPE_ADVISE_DIR").is_some(),
        "{checked} micro-batched re-runs of optimizer-bound bases"
    );
}

/// A real allocator snapshot whose history holds an annotation range (CS336 bcrafton: one
/// `Optimizer.step#AdamW.step` span) is still a snapshot to the rules that read module
/// scopes: they send it to the profiler rather than ask for the stacks it has.
#[test]
fn a_snapshot_with_an_annotation_is_sent_to_the_profiler_for_blocks() {
    use collector::analysis::advise::{Basis, Found};
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/real/snapshot-cs336-bcrafton/memory_snapshot.pickle");
    let rec = load(&path, LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.ops.len(), 1, "the annotation");
    let timeline = Timeline::build(&rec);
    let advice = advise(&rec, &timeline, &Options::DEFAULTS);
    let basis = |name: &str| {
        advice[0]
            .estimates
            .iter()
            .find(|e| e.technique.as_str() == name)
            .map(|e| e.basis)
    };
    assert_eq!(
        basis("activation_checkpointing"),
        Some(Basis::ActivationCheckpointing {
            blocks: Found::NoneInSnapshot
        })
    );
    assert_eq!(
        basis("selective_checkpointing"),
        Some(Basis::SelectiveCheckpointing {
            cores: Found::NoneInSnapshot
        })
    );
}
