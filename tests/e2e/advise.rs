//! `vramscope advise` end to end (issue 18): the JSON document's shape and numbers on a
//! committed base run against its real re-runs, the capacity search, the text table, and
//! bad input and bad options.

use crate::support::{fixtures, read_json, temp_dir, vramscope, vramscope_json, vramscope_ok};

#[test]
fn advise_json_estimates_the_real_reruns_and_finds_what_fits() {
    let base = fixtures().join("advise/a05_lm_sgdm.json.gz");
    let truth = read_json(&fixtures().join("advise/a05_lm_sgdm.truth.json"));
    let base = base.to_string_lossy();
    let doc = vramscope_json(&[
        "advise",
        &base,
        "--world-size",
        "4",
        "--micro-batches",
        "4",
        "--capacity",
        "1.5MiB",
    ]);
    let device = &doc["devices"][0];
    assert_eq!(device["device"], "cpu");
    let measured = device["measured_peak_bytes"].as_i64().expect("measured");
    assert_eq!(measured, truth["base_peak_bytes"].as_i64().expect("base"));
    let techniques = device["techniques"].as_array().expect("techniques");
    let names: Vec<&str> = techniques
        .iter()
        .filter_map(|t| t["technique"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "bf16_autocast",
            "activation_checkpointing",
            "zero1",
            "zero2",
            "zero3",
            "optimizer_offload",
            "micro_batch",
            "selective_checkpointing",
            "activation_offload",
            "optimizer_bf16_states",
            "optimizer_8bit",
            "lora",
            "chunked_loss",
            "tensor_parallel",
            "sequence_parallel",
            "pipeline_parallel",
            "pipeline_parallel_gpipe"
        ]
    );
    for t in techniques {
        let peak = t["estimated_peak_bytes"].as_i64().expect("peak");
        assert_eq!(t["saving_bytes"].as_i64(), Some(measured - peak), "{t}");
        assert!(
            t["assumptions"].as_str().is_some_and(|s| s.len() > 20),
            "{t}"
        );
        assert!(t["cost"].as_str().is_some_and(|s| !s.is_empty()), "{t}");
    }
    assert_eq!(techniques[2]["world_size"], 4);
    assert_eq!(techniques[6]["factor"], 4);
    assert!(techniques[5]["host_bytes"].as_i64().is_some_and(|h| h > 0));
    // Each parameter under its own key, the defaults where no flag set it.
    assert_eq!(techniques[11]["rank"], 8);
    assert_eq!(techniques[12]["factor"], 4);
    assert_eq!(techniques[13]["degree"], 2);
    assert_eq!(techniques[15]["degree"], 2);
    assert!(techniques[8]["host_bytes"].as_i64().is_some_and(|h| h > 0));
    // Incompatibilities both ways.
    let not_with = |i: usize| -> Vec<&str> {
        techniques[i]["incompatible_with"]
            .as_array()
            .expect("incompatible_with")
            .iter()
            .filter_map(|v| v.as_str())
            .collect()
    };
    assert!(not_with(8).contains(&"activation_checkpointing"));
    assert!(not_with(8).contains(&"pipeline_parallel"));
    assert!(not_with(1).contains(&"activation_offload"));
    assert!(not_with(0).is_empty());
    // The real re-runs: micro-batching ÷4 and ZeRO-1 at 4 ranks within 5 % of measured.
    for (i, run) in [(6, "micro_batch"), (2, "zero1")] {
        let real = truth["runs"]
            .as_array()
            .and_then(|r| {
                r.iter()
                    .find(|r| r["technique"] == run && (r["factor"] == 4 || r["world_size"] == 4))
            })
            .and_then(|r| r["measured_peak_bytes"].as_i64())
            .expect("measured re-run");
        let got = techniques[i]["estimated_peak_bytes"]
            .as_i64()
            .expect("estimate");
        assert!(
            (got - real).abs() * 20 <= real,
            "{run}: {got} vs measured {real}"
        );
    }
    // 1.5 MiB is below the measured peak: the fewest techniques under it.
    let fits = &device["fits"];
    assert_eq!(fits["capacity_bytes"], 1_572_864);
    assert_eq!(fits["fits_as_measured"], false);
    let combination = fits["combination"].as_array().expect("a combination");
    assert!(!combination.is_empty());
    assert!(
        fits["estimated_peak_bytes"]
            .as_i64()
            .is_some_and(|p| p <= 1_572_864)
    );
}

#[test]
fn advise_text_is_a_table_and_says_when_it_fits() {
    let base = fixtures().join("advise/a02_cnn_sgdm.json.gz");
    let text = vramscope_ok(&["advise", &base.to_string_lossy(), "--capacity", "1GiB"]);
    assert!(text.starts_with("cpu  measured peak 2.98 MiB"), "{text}");
    for line in [
        "bf16_autocast",
        "zero1 ×2 ranks",
        "micro_batch ÷2",
        "tensor_parallel ×2",
        "lora r=8",
        "chunked_loss ÷4",
        "price: one more forward per step",
        "not with: selective_checkpointing, activation_offload",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(text.contains("fits in 1.00 GiB as measured"), "{text}");
    // The model-parallel degrees, the adapters' rank and the loss chunks are flags.
    let text = vramscope_ok(&[
        "advise",
        &base.to_string_lossy(),
        "--tensor-parallel",
        "4",
        "--pipeline-stages",
        "3",
        "--lora-rank",
        "16",
        "--loss-chunks",
        "8",
    ]);
    for line in [
        "tensor_parallel ×4",
        "sequence_parallel ×4",
        "pipeline_parallel ×3",
        "pipeline_parallel_gpipe ×3",
        "lora r=16",
        "chunked_loss ÷8",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
}

#[test]
fn advise_refuses_bad_input_and_bad_options() {
    let dir = temp_dir("advise_bad");
    let cut = dir.join("cut.json");
    let full = crate::support::read_maybe_gz(&fixtures().join("advise/a02_cnn_sgdm.json.gz"));
    std::fs::write(&cut, full.get(..full.len() / 2).unwrap_or_default()).expect("write");
    let out = vramscope(&["advise", &cut.to_string_lossy()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cut.json") && err.contains("at byte"), "{err}");
    let out = vramscope(&["advise", &cut.to_string_lossy(), "--world-size", "0"]);
    assert_eq!(out.status.code(), Some(2));
}
