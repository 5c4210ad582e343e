//! Nsight Systems exports end to end: the real nsys 2022.4 exports of a CPU-only run in
//! ../shared/traces/nsys-cpu (NVTX, checked against `nsys stats`' own nvtxsum CSV), a
//! fixture with CUDA memory rows built from that real schema (numbers worked out here by
//! hand from the rows inserted), and bad input.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::support::*;

const MIB: i64 = 1 << 20;

fn nsys_cpu(name: &str) -> PathBuf {
    shared_traces().join("nsys-cpu").join(name)
}

fn fixture(name: &str) -> PathBuf {
    fixtures().join("nsight").join(name)
}

fn arg(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// NVTX range counts from `nsys stats --report nvtxsum` (Range → Instances), with
/// `ProfilerStep#N` summed into `ProfilerStep*` as the table groups steps.
fn nvtxsum_counts() -> BTreeMap<String, u64> {
    let csv = std::fs::read_to_string(nsys_cpu("run-stats_nvtxsum.csv")).expect("nvtxsum csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (instances, range) = (col("Instances"), col("Range"));
    let mut out = BTreeMap::new();
    for line in lines.filter(|l| !l.is_empty()) {
        // Range is the last column and the names here hold no commas.
        let cells: Vec<&str> = line.split(',').collect();
        let mut name = cells[range].to_owned();
        if name.starts_with("ProfilerStep#") {
            name = "ProfilerStep*".into();
        }
        let n: u64 = cells[instances].parse().expect("instances");
        *out.entry(name).or_insert(0) += n;
    }
    out
}

fn table_calls(rows: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for r in rows.as_array().expect("rows") {
        let name = r["name"].as_str().expect("name").to_owned();
        out.insert(name, r["calls"].as_u64().expect("calls"));
    }
    out
}

#[test]
fn real_exports_list_the_nvtx_ranges_nsys_stats_counts() {
    let truth = nvtxsum_counts();
    assert_eq!(truth["forward"], 6);
    assert_eq!(
        truth.len(),
        6 + 39,
        "steps, 5 nested names, 39 load_batch ranges"
    );
    let mut tables = Vec::new();
    for file in [
        "run.sqlite",
        "run-nolazy.sqlite",
        "run.json",
        "run-sepstr.json",
    ] {
        let path = nsys_cpu(file);
        let rows = vramscope_json(&["table", arg(&path), "--sort", "count"]);
        let calls = table_calls(&rows);
        for name in ["forward", "backward", "optimizer.step", "ProfilerStep*"] {
            assert_eq!(calls.get(name), Some(&6), "{file}: {name}");
        }
        assert_eq!(calls, truth, "{file}: every NVTX range and its count");
        let first = &rows[0];
        assert_eq!(first["calls"], 6, "{file}: sorted by count");
        for r in rows.as_array().expect("rows") {
            for col in [
                "self_cpu_memory_usage",
                "cpu_memory_usage",
                "device_memory_usage",
            ] {
                assert_eq!(r[col], 0, "{file}: a CPU-only run has no CUDA memory rows");
            }
        }
        tables.push((file, rows));
    }
    for (file, rows) in &tables[1..] {
        assert_eq!(
            rows, &tables[0].1,
            "{file} gives the same table as run.sqlite"
        );
    }
}

#[test]
fn real_exports_summarize_without_memory() {
    for (file, format) in [
        ("run.sqlite", "nsight-systems-sqlite"),
        ("run-nolazy.sqlite", "nsight-systems-sqlite"),
        ("run.json", "nsight-systems-json"),
        ("run-sepstr.json", "nsight-systems-json"),
    ] {
        let s = vramscope_json(&["summary", arg(&nsys_cpu(file))]);
        assert_eq!(s["format"], format, "{file}");
        assert_eq!(s["has_memory_data"], false, "{file}");
        assert_eq!(s["devices"], Value::Array(Vec::new()), "{file}");
        assert_eq!(s["gpus"], Value::Array(Vec::new()), "{file}");
        assert_eq!(
            s["ops"],
            36 + 39,
            "{file}: 36 push/pop + 39 start/end ranges"
        );
        assert_eq!(s["steps"], 6, "{file}");
        assert_eq!(s["warnings"], serde_json::json!({}), "{file}");
        // First range start to last range end, the same in all four exports.
        assert_eq!(s["duration_us"], 2_011_727.813, "{file}");
        assert!(s["era"].as_str().expect("era").contains("Nsight Systems"));
        let text = vramscope_ok(&["summary", arg(&nsys_cpu(file))]);
        assert!(text.contains("75 ops"), "{text}");
    }
}

/// Where a `CUDA_GPU_MEMORY_USAGE_EVENTS` row of the fixture counts: the documented
/// memKind ids (the fixture's ENUM tables are empty, as in the real --lazy=false export).
fn device_of(kind: i64, device: i64) -> Option<String> {
    match kind {
        2 | 5 => Some(format!("cuda:{device}")),
        1 => Some("host-pinned".into()),
        0 => Some("host-pageable".into()),
        4 | 6 => Some(format!("cuda-managed:{device}")),
        _ => None, // 3 Array, 7 Unknown: not charted
    }
}

#[test]
fn cuda_memory_fixture_reserved_memory_by_hand() {
    // GIVEN the rows make_fixtures.py inserted
    let rows = read_json(&fixture("cuda-memory.rows.json"));
    let mut memory: Vec<&Value> = rows["memory"].as_array().expect("memory").iter().collect();
    memory.sort_by_key(|r| r["t_us"].as_i64());
    // Independent reading: running sum of signed bytes per device, its peak and end.
    let mut expect: BTreeMap<String, (i64, i64, u64)> = BTreeMap::new();
    for r in memory {
        let Some(dev) = device_of(
            r["kind"].as_i64().expect("kind"),
            r["device"].as_i64().expect("d"),
        ) else {
            continue;
        };
        let bytes = r["mib"].as_i64().expect("mib") * MIB;
        let signed = if r["op"] == 1 { -bytes } else { bytes };
        let e = expect.entry(dev).or_insert((0, 0, 0));
        e.1 += signed;
        e.0 = e.0.max(e.1);
        e.2 += 1;
    }
    // The same numbers, worked out on paper from the rows: cuda:0 2+20-2+64 = 84 MiB peak,
    // then -20+2+1(static)-64 = 3 MiB at the end; cuda:1 4+6 = 10, then -4 = 6.
    assert_eq!(expect["cuda:0"], (84 * MIB, 3 * MIB, 8));
    assert_eq!(expect["cuda:1"], (10 * MIB, 6 * MIB, 3));
    assert_eq!(expect["host-pinned"], (8 * MIB, 0, 2));

    // WHEN vramscope summarises the fixture
    let s = vramscope_json(&["summary", arg(&fixture("cuda-memory.sqlite"))]);
    // THEN every device has exactly that reserved curve, and no allocated numbers
    let devices = s["devices"].as_array().expect("devices");
    let got: BTreeMap<String, (i64, i64, u64)> = devices
        .iter()
        .map(|d| {
            let key = d["device"].as_str().expect("device").to_owned();
            let peak = d["peak_reserved_bytes"].as_i64().expect("peak");
            let end = d["final_reserved_bytes"].as_i64().expect("final");
            (key, (peak, end, d["segment_events"].as_u64().expect("n")))
        })
        .collect();
    assert_eq!(got, expect);
    for d in devices {
        assert_eq!(d["peak_allocated_bytes"], Value::Null);
        assert_eq!(d["final_allocated_bytes"], Value::Null);
        assert_eq!(d["totals"], "none");
    }
    let cuda0 = &devices[0];
    assert_eq!(cuda0["device"], "cuda:0");
    assert_eq!(cuda0["name"], "NVIDIA H200 (fixture)");
    assert_eq!(s["gpus"].as_array().expect("gpus").len(), 2);
    assert_eq!(
        s["memory_events"], 15,
        "17 rows less one Array and one Unknown"
    );
    let warnings = s["warnings"].as_object().expect("warnings");
    let count = |needle: &str| {
        warnings
            .iter()
            .find(|(k, _)| k.contains(needle))
            .map_or(0, |(_, v)| v.as_u64().expect("count"))
    };
    assert_eq!(count("kind Array"), 1);
    assert_eq!(count("kind Unknown"), 1);
    assert_eq!(count("without an end"), 1, "fx.never-ended");
    assert_eq!(count("without a matching CUDA API call"), 15 - 4);
}

#[test]
fn cuda_memory_fixture_table_by_nvtx_range() {
    let path = fixture("cuda-memory.sqlite");
    let rows = vramscope_json(&["table", arg(&path), "--sort", "none"]);
    let by_name: BTreeMap<&str, &Value> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["name"].as_str().expect("name"), r))
        .collect();
    // (calls, total, self) in MiB of CUDA memory. Totals: every cuda:N row whose time lies
    // in the range, on any thread (torch's rule); self: total minus the ranges and CUDA API
    // calls nested in it on its own thread. From cuda-memory.rows.json:
    //   fx.step    [0,1000]   +2 +20 -2 +64 -20 +4 = 68, children forward 20 + backward 44 → self 4
    //              [2000,3000] +2 +1(static) = 3, child forward 2 → self 1
    //   fx.forward [100,400]  +2 +20 -2 = 20, no children; [2100,2400] +2 inside cudaMalloc → self 0
    //   fx.backward [500,800] +64 -20 = 44 (the rows of thread A count here too), self 44
    //   fx.autograd (A) [550,750] 44, all inside its cudaMalloc/cudaFree → self 0
    //   dataloader:fx.prefetch (W) 6, inside its cudaMalloc → self 0
    //   cudaMalloc_v3020 ×3: 64 + 6 + 2 = 72; cudaFree_v3020: -20
    //   [memory]: rows in no range: cuda:1 -4 at 1605 µs, cuda:0 -64 at 4000 µs
    let expect: &[(&str, u64, i64, i64)] = &[
        ("fx.step", 2, 71, 5),
        ("fx.forward", 2, 22, 20),
        ("fx.backward", 1, 44, 44),
        ("fx.autograd", 1, 44, 0),
        ("dataloader:fx.prefetch", 1, 6, 0),
        ("cudaMalloc_v3020", 3, 72, 72),
        ("cudaFree_v3020", 1, -20, -20),
        ("[memory]", 2, -68, -68),
    ];
    for &(name, calls, total, own) in expect {
        let r = by_name
            .get(name)
            .unwrap_or_else(|| panic!("no row {name}: {rows}"));
        let got = (
            r["calls"].as_u64().expect("calls"),
            r["device_memory_usage"].as_i64().expect("total"),
            r["self_device_memory_usage"].as_i64().expect("self"),
        );
        assert_eq!(got, (calls, total * MIB, own * MIB), "{name}");
        // Pinned, pageable and managed memory are not CUDA Mem; nothing is CPU Mem.
        assert_eq!(r["cpu_memory_usage"], 0, "{name}");
    }
    // The real NVTX ranges of the copied export are still there, without memory.
    assert_eq!(by_name["forward"]["calls"], 6);
    assert_eq!(by_name["forward"]["device_memory_usage"], 0);
    // Kernels are device-side rows without memory.
    assert_eq!(by_name["fx_gemm_kernel"]["calls"], 1);
    assert_eq!(by_name["fx_gemm_kernel"]["device_memory_usage"], 0);
    // Default sort: self CUDA memory, largest first (torch prints MiB as "MB").
    let text = vramscope_ok(&["table", arg(&path), "--limit", "3"]);
    let first = text.lines().find(|l| l.contains("cudaMalloc_v3020"));
    assert!(first.is_some_and(|l| l.contains("72.00 MB")), "{text}");
}

fn expect_one_line_failure(path: &std::path::Path, needles: &[&str]) {
    for cmd in ["summary", "table"] {
        let out = vramscope(&[cmd, arg(path)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{cmd} {}: {stderr}",
            path.display()
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(arg(path)), "names the file: {stderr}");
        for n in needles {
            assert!(stderr.contains(n), "missing {n:?} in {stderr}");
        }
    }
}

#[test]
fn bad_nsys_input_fails_with_one_clear_line() {
    expect_one_line_failure(
        &fixture("not-nsys.sqlite"),
        &[
            "an SQLite database, but not an nsys export",
            "no StringIds table",
            "notes",
        ],
    );
    let dir = temp_dir("nsight-bad");
    let real = std::fs::read(nsys_cpu("run.sqlite")).expect("run.sqlite");
    let cut = dir.join("cut.sqlite");
    std::fs::write(&cut, &real[..4096]).expect("write");
    expect_one_line_failure(&cut, &["damaged or cut short"]);

    let json = std::fs::read_to_string(nsys_cpu("run.json")).expect("run.json");
    let mut lines: Vec<&str> = json.lines().take(5).collect();
    let garbage_at: usize = lines.iter().map(|l| l.len() + 1).sum();
    lines.push("this line is not JSON");
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, lines.join("\n")).expect("write");
    // serde stops one byte in, at the 'h' of "this".
    let at = format!("at byte {}", garbage_at + 1);
    expect_one_line_failure(&garbage, &["invalid JSON", "record 6", &at]);
}
