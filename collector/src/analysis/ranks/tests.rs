use std::path::PathBuf;

use super::*;
use crate::analysis::DeviceSummary;
use crate::model::{Recording, SourceFormat};

fn device(ordinal: i32, peak_bytes: Option<i64>, ooms: u64) -> DeviceSummary {
    DeviceSummary {
        device: DeviceId::cuda(ordinal),
        name: None,
        total_memory_bytes: None,
        memory_events: 2,
        allocs: 1,
        frees: 1,
        ooms,
        segment_events: 0,
        peak_allocated_bytes: peak_bytes,
        peak_allocated_at_ns: None,
        peak_allocated_op: None,
        peak_reserved_bytes: None,
        peak_reserved_at_ns: None,
        cache_at_peak_bytes: None,
        final_allocated_bytes: None,
        final_reserved_bytes: None,
        peak_requested_bytes: None,
        peak_requested_at_ns: None,
        final_requested_bytes: None,
        totals: None,
        frees_without_alloc: 0,
        live_at_end: 0,
        composition_at_peak: None,
    }
}

fn input(
    name: &str,
    rank: Option<i64>,
    stage: Option<i64>,
    devices: Vec<DeviceSummary>,
) -> RankInput {
    let rec = Recording::empty(SourceFormat::TorchChromeTrace, "test");
    let timeline = crate::Timeline::build(&rec);
    let mut summary = crate::analysis::summarize(&rec, &timeline);
    summary.devices = devices;
    RankInput {
        path: PathBuf::from(name),
        rank,
        stage,
        summary,
    }
}

#[test]
fn file_names_give_ranks_in_each_spelling() {
    let cases = [
        ("trace_rank3.json", Some(3)),
        ("rank_12.pickle", Some(12)),
        ("Rank-0.json.gz", Some(0)),
        ("node2/RANK7", Some(7)),
        ("cranky5.json", None),
        ("rank.json", None),
        ("rank__3.json", None),
        ("frank1_rank2.json", Some(2)),
        ("trace.json", None),
        ("rank1234567890123456789", None),
    ];
    for (name, rank) in cases {
        assert_eq!(rank_from_file_name(name), rank, "{name}");
    }
}

#[test]
fn files_are_ranks_of_one_run_when_their_names_say_so() {
    // The real two-rank HTA sample's names, and rank files alike before their rank.
    assert!(one_run_by_names(&[
        "sampled_rank-0.json.gz",
        "sampled_rank-1.json.gz"
    ]));
    assert!(one_run_by_names(&[
        "rank_0.json",
        "rank_1.json",
        "Rank_2.json"
    ]));
    // Three unrelated traces (the "3 ranks" grid): no rank in their names.
    assert!(!one_run_by_names(&[
        "gaunernst_bert-small-uncased__1016001.json.gz",
        "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "transformer-lm-train-cpu.json.gz"
    ]));
    // A rank each, but of two runs, or the same rank twice; one without a rank.
    assert!(!one_run_by_names(&[
        "a_rank0.json",
        "b_rank1.json",
        "a_rank2.json"
    ]));
    assert!(!one_run_by_names(&[
        "rank0.json",
        "rank0.json.gz",
        "rank1.json"
    ]));
    assert!(!one_run_by_names(&[
        "rank0.json",
        "rank1.json",
        "trace.json"
    ]));
}

#[test]
fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[5]), Some(5.0));
    assert_eq!(median(&[9, 1, 5]), Some(5.0));
    assert_eq!(median(&[8, 2, 4, 6]), Some(5.0));
}

#[test]
fn the_ranks_name_the_worst_rank_the_skew_the_ooms_and_the_stages() {
    // GIVEN four ranks of two stages, rank 2 the worst on its second GPU, rank 3 OOM.
    let inputs = vec![
        input("r0", Some(0), Some(0), vec![device(0, Some(100), 0)]),
        input("r1", Some(1), Some(0), vec![device(0, Some(300), 0)]),
        input(
            "r2",
            Some(2),
            Some(1),
            vec![device(0, Some(50), 0), device(1, Some(900), 0)],
        ),
        input("r3", Some(3), Some(1), vec![device(0, Some(200), 1)]),
        input("x", None, None, vec![]),
    ];
    // WHEN
    let f = across_ranks(&inputs);
    // THEN peaks 100, 300, 900, 200: median (200 + 300) / 2 = 250, skew 900 / 250.
    let worst = f.worst.expect("worst");
    assert_eq!(
        (worst.input, worst.device, worst.peak_allocated_bytes),
        (2, DeviceId::cuda(1), 900)
    );
    assert_eq!(f.skew_max_over_median, Some(3.6));
    assert_eq!(f.oom_inputs, vec![3]);
    type Stage = (i64, Vec<usize>, Option<(usize, i64)>);
    let stages: Vec<Stage> = f
        .stages
        .into_iter()
        .map(|s| (s.stage, s.inputs, s.worst))
        .collect();
    assert_eq!(
        stages,
        vec![
            (0, vec![0, 1], Some((1, 300))),
            (1, vec![2, 3], Some((2, 900)))
        ]
    );
}

#[test]
fn inputs_sort_by_rank_then_path_with_unranked_last() {
    let mut inputs = vec![
        input("b", None, None, vec![]),
        input("z", Some(10), None, vec![]),
        input("a", None, None, vec![]),
        input("y", Some(2), None, vec![]),
    ];
    sort_inputs(&mut inputs);
    let order: Vec<String> = inputs
        .iter()
        .map(|i| i.path.display().to_string())
        .collect();
    assert_eq!(order, ["y", "z", "a", "b"]);
}
