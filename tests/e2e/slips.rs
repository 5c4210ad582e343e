//! What a new user tripped on (issue 39's "commands that disagree, and slips"): each
//! command says what it did instead of falling back in silence, and the exit codes are
//! the README's.

use serde_json::Value;

use crate::support::{fixtures, repo_root, vramscope, vramscope_json, vramscope_ok};

fn sample() -> String {
    repo_root()
        .join("samples/transformer-lm-train-cpu.json.gz")
        .display()
        .to_string()
}

fn stepless() -> String {
    fixtures()
        .join("memory-timeline/mlp-adam-cpu.trace.json.gz")
        .display()
        .to_string()
}

#[test]
fn diff_aligned_at_steps_says_which_run_has_none() {
    let (a, b) = (stepless(), sample());
    let text = vramscope_ok(&["diff", &a, &b, "--align", "step"]);
    assert!(
        text.contains(
            "note: A has no training steps (ProfilerStep#N): its times are from its start"
        ),
        "{text}"
    );
    assert!(!text.contains("B has no training steps"), "{text}");
    let doc = vramscope_json(&["diff", &a, &b, "--align", "step"]);
    let kinds: Vec<&Value> = doc["notes"].as_array().expect("notes").iter().collect();
    assert!(
        kinds
            .iter()
            .any(|n| n["kind"] == "no_steps_to_align" && n["run"] == "a"),
        "{kinds:?}"
    );
    // Aligned at the start, there is nothing to say.
    let doc = vramscope_json(&["diff", &a, &b]);
    assert!(
        doc["notes"].as_array().is_none_or(Vec::is_empty),
        "{}",
        doc["notes"]
    );
}

#[test]
fn diff_limit_lists_only_changes() {
    // A run against itself: nothing changed, so --limit lists no row of 0 B.
    let a = sample();
    let doc = vramscope_json(&["diff", &a, &a, "--limit", "5"]);
    assert_eq!(
        doc["ops"].as_array().expect("ops").len(),
        0,
        "{}",
        doc["ops"]
    );
    let all = vramscope_json(&["diff", &a, &a]);
    assert!(all["ops"].as_array().expect("ops").len() > 5);
}

#[test]
fn live_at_a_time_outside_the_trace_is_refused() {
    let out = vramscope(&["live", &sample(), "--at", "99s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--at 99.000 s is outside the trace, which lasts 248.963 ms"),
        "{stderr}"
    );
    assert!(
        vramscope(&["live", &sample(), "--at", "100ms"])
            .status
            .success()
    );
}

#[test]
fn check_on_a_device_the_input_lacks_has_no_data_to_judge() {
    let out = vramscope(&[
        "check",
        &sample(),
        "--device",
        "cuda:0",
        "--max-peak",
        "1GB",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("no memory recorded on cuda:0: the input has cpu"),
        "{stderr}"
    );
}

#[test]
fn advise_refuses_to_shard_over_one_rank() {
    let out = vramscope(&["advise", &sample(), "--world-size", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("1 is not in 2..=65536"), "{stderr}");
    assert!(
        vramscope(&["advise", &sample(), "--world-size", "2"])
            .status
            .success()
    );
}

#[test]
fn commands_say_alike_what_memory_a_recording_without_allocations_has() {
    // A recording of NVML and host readings only: live, advise, categories and check each
    // say what it has and how to record allocations, in the same words.
    let path = fixtures().join("recording/v1-train.vsr");
    let p = path.to_str().expect("utf-8");
    let has = "it has NVML readings of its GPUs and host RSS readings \
               (`vramscope summary` shows them); next time, record with vramscope record \
               --torch-memory on a GPU";
    for (args, code) in [
        (vec!["live", p], 1),
        (vec!["advise", p], 0),
        (vec!["categories", p], 0),
        (vec!["check", p, "--max-peak", "1G"], 3),
    ] {
        let out = vramscope(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(has), "{args:?}: {stderr}");
    }
}
