//! `export --format parquet` (issue 19): the three files read back with the parquet
//! crate's own reader, on real traces of several ranks, a snapshot and a recording, and
//! checked against `summary` of each input alone and against the events themselves:
//! one memory row per memory event, one op row per op, `op` null exactly for the events
//! outside every op, per (rank, device) the allocations' and frees' signed sizes summing
//! to the change of the allocated total, and the largest allocated total the peak.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use serde_json::Value;

use crate::support::{
    fixtures, read_maybe_gz, repo_root, shared_traces, temp_dir, vramscope, vramscope_json,
    vramscope_ok,
};

/// Every row of a Parquet file, as column name → value.
fn rows(path: &Path) -> Vec<BTreeMap<String, Field>> {
    let reader = SerializedFileReader::new(File::open(path).expect("open")).expect("parquet");
    reader
        .get_row_iter(None)
        .expect("rows")
        .map(|r| {
            let r: Row = r.expect("row");
            r.get_column_iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect()
        })
        .collect()
}

fn long(row: &BTreeMap<String, Field>, name: &str) -> Option<i64> {
    match row.get(name) {
        Some(Field::Long(v)) => Some(*v),
        Some(Field::Null) | None => None,
        other => panic!("{name}: {other:?}"),
    }
}

fn int(row: &BTreeMap<String, Field>, name: &str) -> Option<i32> {
    match row.get(name) {
        Some(Field::Int(v)) => Some(*v),
        Some(Field::Null) | None => None,
        other => panic!("{name}: {other:?}"),
    }
}

fn string<'a>(row: &'a BTreeMap<String, Field>, name: &str) -> Option<&'a str> {
    match row.get(name) {
        Some(Field::Str(v)) => Some(v.as_str()),
        Some(Field::Null) | None => None,
        other => panic!("{name}: {other:?}"),
    }
}

/// `vramscope export INPUT --format parquet -o OUT`, which must succeed.
fn export_parquet(input: &str, out: &Path) {
    let out = out.to_str().expect("utf-8");
    vramscope_ok(&["export", input, "--format", "parquet", "-o", out]);
}

/// Three ranks of a real CPU trace (t2), rank inside each, allocation sizes and totals
/// times the rank + 1 (as bench/make_ranks.py makes them), in `dir`.
fn scaled_ranks(dir: &Path) -> Vec<PathBuf> {
    let base: Value = serde_json::from_slice(&read_maybe_gz(
        &shared_traces().join("torch-cpu/t2.json.gz"),
    ))
    .expect("JSON");
    (0..3)
        .map(|rank| {
            let mut trace = base.clone();
            for e in trace["traceEvents"].as_array_mut().expect("events") {
                if e["name"] == "[memory]" {
                    for key in ["Bytes", "Total Allocated", "Total Reserved"] {
                        if let Some(v) = e["args"][key].as_i64() {
                            e["args"][key] = Value::from(v * (rank + 1));
                        }
                    }
                }
            }
            trace["distributedInfo"] =
                serde_json::json!({"backend": "gloo", "rank": rank, "world_size": 3});
            let path = dir.join(format!("trace-{rank}.json"));
            std::fs::write(&path, serde_json::to_vec(&trace).expect("JSON")).expect("write");
            path
        })
        .collect()
}

/// The real inputs: two real ranks without memory events, real GPU traces (one of rank
/// 1), a snapshot, three scaled ranks.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let real = shared_traces().join("real");
    let mut files = vec![
        real.join("hta-sampled-2ranks"),
        real.join("hta-df-index-resolver-rank1"),
        real.join("tracelens-h100-qwen-0.5b"),
        real.join("kineto-resnet50-torch19-w0"),
        real.join("kineto-resnet50-torch19-w4"),
        real.join("tracelens-mi300-bert-small"),
        real.join("snapshot-cs336-magma27/memory_snapshot.pickle"),
    ];
    files.extend(scaled_ranks(dir));
    files
}

/// What `export` wrote per input path, checked against `summary` of that input alone.
#[test]
fn parquet_rows_keep_summary_numbers_on_real_traces() {
    let dir = temp_dir("parquet-real");
    let out = dir.join("export");
    let inputs = inputs(&dir);
    let mut args: Vec<&str> = vec!["export"];
    args.extend(inputs.iter().map(|p| p.to_str().expect("utf-8")));
    args.extend(["--format", "parquet", "-o", out.to_str().expect("utf-8")]);
    let said = vramscope_ok(&args);
    // The fleet summary's rank of each input (from the trace, else the file name).
    args[0] = "summary";
    args.truncate(args.len() - 4);
    let fleet = vramscope_json(&args);
    let ranks: BTreeMap<&str, Option<i32>> = fleet["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|i| {
            (
                i["path"].as_str().expect("path"),
                i["rank"].as_i64().map(|r| r as i32),
            )
        })
        .collect();
    assert_eq!(
        ranks.values().filter(|r| r.is_some()).count(),
        6,
        "{ranks:?}"
    );
    assert!(
        said.starts_with(&format!("wrote {}", out.display())),
        "{said}"
    );

    let memory = rows(&out.join("memory_events.parquet"));
    let ops = rows(&out.join("ops.parquet"));
    let samples = rows(&out.join("samples.parquet"));
    assert!(samples.is_empty(), "traces have no samples");
    let paths: std::collections::BTreeSet<&str> = memory
        .iter()
        .chain(&ops)
        .filter_map(|r| string(r, "path"))
        .collect();
    assert_eq!(paths.len(), 11, "{paths:?}");
    let mut checked_devices = 0;
    for path in &paths {
        let summary = vramscope_json(&["summary", path]);
        let mine: Vec<_> = memory
            .iter()
            .filter(|r| string(r, "path") == Some(path))
            .collect();
        let events = summary["memory_events"].as_u64().expect("events");
        assert_eq!(mine.len() as u64, events, "{path}");
        let outside = events - summary["memory_events_in_ops"].as_u64().expect("in ops");
        let nulls = mine.iter().filter(|r| string(r, "op").is_none()).count() as u64;
        assert_eq!(nulls, outside, "{path}");
        let my_ops = ops
            .iter()
            .filter(|r| string(r, "path") == Some(path))
            .count();
        assert_eq!(
            my_ops as u64,
            summary["ops"].as_u64().expect("ops"),
            "{path}"
        );
        let rank = ranks.get(path).copied().flatten();
        assert!(mine.iter().all(|r| int(r, "rank") == rank), "{path}");
        for d in summary["devices"].as_array().expect("devices") {
            let device = d["device"].as_str().expect("device");
            checked_devices += check_device(path, device, d, &mine);
        }
    }
    assert!(checked_devices >= 14, "{checked_devices}");
    // Depth: a top-level op has depth 0 and something lies inside another.
    assert!(ops.iter().any(|r| int(r, "depth") == Some(0)));
    assert!(ops.iter().any(|r| int(r, "depth") >= Some(2)));
}

/// One device of one input: its peak and final allocated from the rows, and the sizes of
/// its allocations and frees summing to the change of its allocated total.
fn check_device(path: &str, device: &str, d: &Value, mine: &[&BTreeMap<String, Field>]) -> usize {
    let rows: Vec<_> = mine
        .iter()
        .filter(|r| string(r, "device") == Some(device))
        .collect();
    let Some(peak) = d["peak_allocated_bytes"].as_i64() else {
        return 0;
    };
    let max = rows.iter().filter_map(|r| long(r, "allocated_bytes")).max();
    assert_eq!(max, Some(peak), "{path} {device}");
    let changes: Vec<_> = rows
        .iter()
        .filter(|r| matches!(string(r, "kind"), Some("alloc" | "free")))
        .collect();
    let (Some(first), Some(last)) = (changes.first(), changes.last()) else {
        return 0;
    };
    let before =
        long(first, "allocated_bytes").expect("allocated") - long(first, "bytes").expect("bytes");
    let after = long(last, "allocated_bytes").expect("allocated");
    assert_eq!(
        Some(after),
        d["final_allocated_bytes"].as_i64(),
        "{path} {device}"
    );
    let sum: i64 = changes.iter().filter_map(|r| long(r, "bytes")).sum();
    assert_eq!(sum, after - before, "{path} {device}");
    1
}

/// A recording's samples: NVML and host RSS readings, their peaks those of `summary`.
#[test]
fn parquet_samples_of_a_recording() {
    let dir = temp_dir("parquet-samples");
    let out = dir.join("export");
    let input = fixtures().join("recording/v1-train.vsr");
    let input = input.to_str().expect("utf-8");
    export_parquet(input, &out);
    let samples = rows(&out.join("samples.parquet"));
    let summary = vramscope_json(&["summary", input]);
    let rss = samples
        .iter()
        .filter(|r| string(r, "source") == Some("rss"));
    let rss_peak = rss.filter_map(|r| long(r, "used_bytes")).max();
    assert_eq!(rss_peak, summary["host_rss_peak_bytes"].as_i64());
    let nvml: Vec<_> = samples
        .iter()
        .filter(|r| string(r, "source") == Some("nvml"))
        .collect();
    assert!(!nvml.is_empty());
    assert!(
        nvml.iter()
            .all(|r| string(r, "device").is_some_and(|d| d.starts_with("cuda:")))
    );
    // Every file is written, even one without rows.
    for name in ["memory_events.parquet", "ops.parquet"] {
        assert!(out.join(name).is_file(), "{name}");
    }
}

/// The one output policy: an existing export replaced only with --force, never a
/// directory holding an input or other files.
#[test]
fn parquet_output_directory_policy() {
    let dir = temp_dir("parquet-policy");
    let input = shared_traces().join("torch-cpu/t2.json.gz");
    let input = input.to_str().expect("utf-8");
    let out = dir.join("export");
    let out_s = out.to_str().expect("utf-8");
    vramscope_ok(&["export", input, "--format", "parquet", "-o", out_s]);
    let again = vramscope(&["export", input, "--format", "parquet", "-o", out_s]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    vramscope_ok(&[
        "export", input, "--format", "parquet", "-o", out_s, "--force",
    ]);
    // A directory holding an input is never replaced.
    let copy = out.join("t2.json.gz");
    std::fs::copy(input, &copy).expect("copy");
    let held = vramscope(&[
        "export",
        copy.to_str().expect("utf-8"),
        "--format",
        "parquet",
        "-o",
        out_s,
        "--force",
    ]);
    assert!(!held.status.success());
    assert!(copy.is_file());
}

/// The `category` column: walking the memory rows of one device and keeping each live
/// block's category, the bytes live when the allocated total first reaches its peak,
/// summed by category, are `summary`'s `composition_at_peak` — on a whole-script CPU
/// trace and on a real GPU snapshot whose weights were made before recording.
#[test]
fn parquet_category_column_sums_to_the_composition_at_peak() {
    let dir = temp_dir("parquet-categories");
    for (input, device) in [
        (
            fixtures().join("categories/c09_lm_adamw_inside_wide.json.gz"),
            "cpu",
        ),
        (
            repo_root().join("samples/cs336-transformer-snapshot.pickle"),
            "cuda:0",
        ),
    ] {
        let out = dir.join(input.file_name().expect("name"));
        let input = input.to_str().expect("utf-8");
        export_parquet(input, &out);
        let summary = vramscope_json(&["summary", input]);
        let d = summary["devices"]
            .as_array()
            .expect("devices")
            .iter()
            .find(|d| d["device"] == device)
            .expect("the device");
        let peak = d["peak_allocated_bytes"].as_i64().expect("peak");
        let mut live: BTreeMap<i64, (i64, String)> = BTreeMap::new();
        let mut at_peak = None;
        for r in rows(&out.join("memory_events.parquet")) {
            if string(&r, "device") != Some(device) {
                continue;
            }
            let addr = long(&r, "addr").expect("addr");
            match string(&r, "kind") {
                Some("alloc") => {
                    let category = string(&r, "category").expect("an alloc has a category");
                    live.insert(addr, (long(&r, "bytes").expect("bytes"), category.into()));
                }
                Some("free") => {
                    live.remove(&addr);
                }
                _ => assert_eq!(string(&r, "category"), None, "{input}"),
            }
            if at_peak.is_none() && long(&r, "allocated_bytes") == Some(peak) {
                let mut sums: BTreeMap<String, i64> = BTreeMap::new();
                for (bytes, category) in live.values() {
                    *sums.entry(category.clone()).or_default() += bytes;
                }
                at_peak = Some(sums);
            }
        }
        let want: BTreeMap<String, i64> = d["composition_at_peak"]
            .as_object()
            .expect("composition")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_i64().expect("bytes")))
            .filter(|(_, v)| *v != 0)
            .collect();
        assert!(want.len() >= 3, "{input}: {want:?}");
        assert_eq!(at_peak, Some(want), "{input}");
    }
}
