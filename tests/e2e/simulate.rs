//! `vramscope simulate` end to end (issue 35): on a real snapshot the model check is exact
//! and the JSON carries the snapshot's own final segments; a capacity below what the run
//! needed makes the recorded settings run out of memory where expandable segments do not;
//! a real GPU trace's replay lands near the reserved memory it recorded; bad settings and
//! inputs with nothing to replay are refused with the reason.

use crate::support::{repo_root, shared_traces, vramscope, vramscope_json, vramscope_ok};

fn snapshot() -> String {
    let path = shared_traces().join("real/snapshots-cs336-nothanmin/memory_snapshot.pickle");
    path.to_string_lossy().into_owned()
}

#[test]
fn a_real_snapshot_replays_exactly_and_ends_with_its_own_segments() {
    let doc = vramscope_json(&["simulate", &snapshot()]);
    let device = &doc["devices"][0];
    assert_eq!(device["device"], "cuda:0");
    assert_eq!(device["recorded_conf"], "");
    let proof = &device["proof"];
    assert_eq!(proof["allocations"], 6488);
    assert_eq!(proof["placed_as_recorded"], 6488);
    assert_eq!(proof["placed_share"], 1.0);
    assert_eq!(proof["final_segments_identical"], true);
    // The segments the model ends with are the snapshot's: 999 of them, as much reserved
    // as summary says is reserved at the end.
    let segments = device["final_segments"].as_array().expect("segments");
    assert_eq!(segments.len(), 999);
    let total: u64 = segments
        .iter()
        .filter_map(|s| s["total_size"].as_u64())
        .sum();
    let summary = vramscope_json(&["summary", &snapshot()]);
    let final_reserved = summary["devices"][0]["final_reserved_bytes"].as_u64();
    assert_eq!(Some(total), final_reserved, "{}", summary["devices"][0]);
    for s in segments {
        let blocks: u64 = (s["blocks"].as_array().expect("blocks").iter())
            .filter_map(|b| b["size"].as_u64())
            .sum();
        assert_eq!(Some(blocks), s["total_size"].as_u64());
    }
    let settings: Vec<&str> = (device["settings"].as_array().expect("settings").iter())
        .filter_map(|s| s["allocator_conf"].as_str())
        .collect();
    assert_eq!(settings[..2], ["", "expandable_segments:True"]);
    assert!(
        settings[2].starts_with("max_split_size_mb:"),
        "{settings:?}"
    );
    let text = vramscope_ok(&["simulate", &snapshot()]);
    assert!(
        text.contains("model check: 6,488 of 6,488 allocations placed where the real allocator put them (100.00%); final segments identical"),
        "{text}"
    );
}

#[test]
fn a_capacity_below_the_runs_needs_is_an_oom_that_expandable_segments_avoid() {
    let doc = vramscope_json(&["simulate", &snapshot(), "--capacity", "21.5GiB"]);
    let device = &doc["devices"][0];
    assert_eq!(device["capacity"]["source"], "asked");
    let runs = device["settings"].as_array().expect("settings");
    let failures = |r: &serde_json::Value| -> Vec<serde_json::Value> {
        (r["ooms"].as_array().expect("ooms").iter())
            .filter(|o| o["happens"] == true)
            .cloned()
            .collect()
    };
    let recorded = failures(&runs[0]);
    assert!(!recorded.is_empty());
    assert_eq!(recorded[0]["recorded"], false);
    assert!(
        recorded[0]["short_by_bytes"]
            .as_u64()
            .is_some_and(|b| b > 0)
    );
    let expandable = &runs[1];
    assert_eq!(expandable["allocator_conf"], "expandable_segments:True");
    assert!(failures(expandable).is_empty());
    let capacity = 21.5 * (1u64 << 30) as f64;
    assert!(expandable["reserved_peak_bytes"].as_u64().expect("peak") as f64 <= capacity);
    let text = vramscope_ok(&["simulate", &snapshot(), "--capacity", "21.5GiB"]);
    assert!(
        text.contains("(defaults): runs out of memory at "),
        "{text}"
    );
    // Asked settings replace the defaults' alternatives.
    let asked = vramscope_json(&[
        "simulate",
        &snapshot(),
        "--allocator-conf",
        "roundup_power2_divisions:4,max_split_size_mb:256",
    ]);
    let confs: Vec<&str> = (asked["devices"][0]["settings"]
        .as_array()
        .expect("settings")
        .iter())
    .filter_map(|s| s["allocator_conf"].as_str())
    .collect();
    assert_eq!(
        confs,
        ["", "max_split_size_mb:256,roundup_power2_divisions:4"]
    );
}

#[test]
fn a_real_gpu_trace_replays_near_the_reserved_memory_it_recorded() {
    let trace = shared_traces()
        .join("real/tracelens-h100-qwen-0.5b/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    let doc = vramscope_json(&["simulate", &trace.to_string_lossy()]);
    let devices = doc["devices"].as_array().expect("devices");
    // The host's allocations do not go through the CUDA caching allocator.
    assert_eq!(devices.len(), 1);
    let d = &devices[0];
    assert_eq!(d["device"], "cuda:0");
    assert!(d["proof"].is_null());
    let measured = d["measured_reserved_peak_bytes"]
        .as_u64()
        .expect("measured") as f64;
    let simulated = d["settings"][0]["reserved_peak_bytes"]
        .as_u64()
        .expect("peak") as f64;
    assert!(
        (simulated / measured - 1.0).abs() < 0.05,
        "{simulated} vs {measured}"
    );
}

#[test]
fn bad_settings_and_inputs_without_addresses_are_refused() {
    let out = vramscope(&[
        "simulate",
        &snapshot(),
        "--allocator-conf",
        "expandable_segment:True",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown setting 'expandable_segment'"),
        "{stderr}"
    );
    let old = shared_traces()
        .join("real/kineto-resnet50-torch19-w0/worker0.1623143089861.pt.trace.json.gz");
    let out = vramscope(&["simulate", &old.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("nothing to simulate: its memory events carry no block addresses"),
        "{stderr}"
    );
}

#[test]
fn advise_offers_the_allocator_settings_with_simulates_numbers() {
    let capacity = ["--capacity", "21.5GiB"];
    let advice = vramscope_json(&[&["advise", &snapshot()][..], &capacity[..]].concat());
    let settings = advice["devices"][0]["allocator_settings"]
        .as_array()
        .expect("a snapshot's advice has the allocator settings");
    let sim = vramscope_json(&[&["simulate", &snapshot()][..], &capacity[..]].concat());
    let runs = sim["devices"][0]["settings"].as_array().expect("settings");
    // The same replays: each alternative's reserved peak, saved against the recorded one.
    assert_eq!(settings.len(), runs.len() - 1);
    let recorded = runs[0]["reserved_peak_bytes"].as_i64().expect("peak");
    for (s, run) in settings.iter().zip(&runs[1..]) {
        assert_eq!(s["allocator_conf"], run["allocator_conf"]);
        assert_eq!(s["reserved_peak_bytes"], run["reserved_peak_bytes"]);
        let peak = s["reserved_peak_bytes"].as_i64().expect("peak");
        assert_eq!(s["saving_bytes"].as_i64(), Some(recorded - peak));
        assert_eq!(s["ooms_with_recorded_settings"], 1);
    }
    // Expandable segments avoid the OOM that 21.5 GiB makes, and say what they do not
    // work with; max_split_size_mb does not avoid it.
    let expandable = &settings[0];
    assert_eq!(expandable["allocator_conf"], "expandable_segments:True");
    assert_eq!(expandable["ooms_avoided"], 1);
    assert!(expandable["saving_bytes"].as_i64().expect("saving") > 0);
    let not_with = expandable["incompatible_with"].as_array().expect("caveats");
    assert!(not_with.iter().any(|c| c == "cuda_ipc"), "{not_with:?}");
    assert_eq!(
        settings[1]["incompatible_with"].as_array().map(Vec::len),
        Some(0)
    );
    let text = vramscope_ok(&[&["advise", &snapshot()][..], &capacity[..]].concat());
    assert!(
        text.contains("allocator settings (PYTORCH_CUDA_ALLOC_CONF"),
        "{text}"
    );
    assert!(
        text.contains("not with: memory shared between processes"),
        "{text}"
    );
    // A trace whose memory events carry no device addresses has none.
    let sample = repo_root().join("samples/transformer-lm-train-cpu.json.gz");
    let cpu = vramscope_json(&["advise", &sample.to_string_lossy()]);
    assert!(cpu["devices"][0].get("allocator_settings").is_none());
}
