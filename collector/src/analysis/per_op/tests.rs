use super::*;
use crate::model::*;

struct Fixture {
    rec: Recording,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            rec: Recording {
                meta: Meta {
                    format: SourceFormat::TorchChromeTrace,
                    era: String::new(),
                    compressed: false,
                    content_bytes: 0,
                    base_time_ns: None,
                    start_ns: 0,
                    end_ns: 300,
                    event_order: false,
                    distributed: None,
                    properties: Default::default(),
                    events_read: 0,
                    spans_left_out: 0,
                    memory_events_in_ops: None,
                },
                strings: StringTable::default(),
                devices: vec![
                    DeviceInfo {
                        key: DeviceId::CPU,
                        name: None,
                        total_memory_bytes: None,
                    },
                    DeviceInfo {
                        key: DeviceId::cuda(0),
                        name: None,
                        total_memory_bytes: None,
                    },
                    DeviceInfo {
                        key: DeviceId {
                            device_type: DeviceType::MPS,
                            index: 0,
                        },
                        name: None,
                        total_memory_bytes: None,
                    },
                ],
                threads: vec![
                    ThreadInfo {
                        pid: "1".into(),
                        tid: "1".into(),
                        name: None,
                    },
                    ThreadInfo {
                        pid: "1".into(),
                        tid: "2".into(),
                        name: None,
                    },
                ],
                mem_events: vec![],
                ops: Default::default(),
                compact_ops: Default::default(),
                steps: vec![],
                stacks: vec![],
                allocator: None,
                oom_details: vec![],
                gpu_samples: vec![],
                host_samples: vec![],
                gpu_process_samples: vec![],
                storage_tags: vec![],
                notes: vec![],
                diagnostics: Diagnostics::default(),
            },
        }
    }

    fn op(
        &mut self,
        name: &str,
        category: OpCategory,
        thread: u32,
        start_ns: i64,
        end_ns: i64,
    ) -> &mut Self {
        let name = self.rec.strings.intern(name);
        self.rec.ops.push(OpSpan {
            name,
            category,
            thread,
            start_ns,
            end_ns,
        });
        self
    }

    fn mem(&mut self, time_ns: i64, bytes: i64, device: u16, thread: u32) -> &mut Self {
        self.rec.mem_events.push(MemEvent {
            device,
            thread,
            ..MemEvent::sized(time_ns, bytes)
        });
        self
    }
}

fn row(
    name: &str,
    calls: u64,
    self_cpu: i64,
    cpu: i64,
    self_dev: i64,
    dev: i64,
) -> (String, u64, i64, i64, i64, i64) {
    (name.to_owned(), calls, self_cpu, cpu, self_dev, dev)
}

fn rows(table: &[OpRow]) -> Vec<(String, u64, i64, i64, i64, i64)> {
    table
        .iter()
        .map(|r| {
            (
                r.name.clone(),
                r.calls,
                r.self_cpu_memory_usage,
                r.cpu_memory_usage,
                r.self_device_memory_usage,
                r.device_memory_usage,
            )
        })
        .collect()
}

/// GIVEN a step with a nested duplicate op, a Python frame, a second thread and a stray
/// allocation, the table follows torch's rules.
fn scenario() -> Fixture {
    use OpCategory::*;
    let mut f = Fixture::new();
    f.op("ProfilerStep#1", UserAnnotation, 0, 0, 100)
        .op("model.py(12): forward", PythonFunction, 0, 5, 55)
        .op("aten::linear", CpuOp, 0, 10, 50)
        .op("aten::linear", CpuOp, 0, 10, 50)
        .op("aten::mm", CpuOp, 0, 20, 30)
        .op("aten::add", CpuOp, 1, 60, 70)
        .op("aten::is_leaf", CpuOp, 0, 80, 90)
        .op("void gemm_kernel<float>", Kernel, 0, 22, 40)
        .mem(25, 100, 0, 0)
        .mem(50, 10, 0, 0)
        .mem(52, 3, 0, 0)
        .mem(65, 1000, 1, 1)
        .mem(66, 5000, 2, 1)
        .mem(100, -5, 0, 0)
        .mem(200, 7, 0, 0)
        .mem(201, -7, 0, 1);
    f
}

#[test]
fn follows_torch_rules() {
    let f = scenario();
    let table = key_averages(&f.rec, None);
    assert_eq!(
        rows(&table),
        vec![
            // cpu 100+10+3-5; device 1000 (MPS is counted nowhere); child: the Python frame (113)
            row("ProfilerStep*", 1, -5, 108, 1000, 1000),
            // the inner duplicate folds into the outer; its child aten::mm remains
            row("aten::linear", 1, 10, 110, 0, 0),
            row("aten::mm", 1, 100, 100, 0, 0),
            row("void gemm_kernel<float>", 1, 0, 0, 0, 0),
            row("aten::add", 1, 0, 0, 1000, 1000),
            // two records outside every op, one row with two calls
            row("[memory]", 2, 0, 0, 0, 0),
        ]
    );
    assert!(table[3].on_device);
    assert!(table[0].user_annotation);
}

#[test]
fn window_limits_ops_and_records() {
    let f = scenario();
    let table = key_averages(
        &f.rec,
        Some(TimeWindow {
            start_ns: 0,
            end_ns: 60,
        }),
    );
    assert_eq!(
        rows(&table),
        vec![
            row("ProfilerStep*", 1, 0, 113, 0, 0),
            row("aten::linear", 1, 10, 110, 0, 0),
            row("aten::mm", 1, 100, 100, 0, 0),
            row("void gemm_kernel<float>", 1, 0, 0, 0, 0),
            row("aten::add", 1, 0, 0, 0, 0),
        ]
    );
}

#[test]
fn duplicate_chains_fold_completely() {
    use OpCategory::*;
    let mut f = Fixture::new();
    f.op("block", UserAnnotation, 0, 0, 100)
        .op("block", UserAnnotation, 0, 1, 99)
        .op("block", UserAnnotation, 0, 2, 98)
        .op("aten::empty", CpuOp, 0, 3, 4)
        .op("aten::empty", CpuOp, 0, 5, 6)
        .mem(3, 64, 0, 0)
        .mem(5, 32, 0, 0);
    // A parent with two same-named children keeps both.
    assert_eq!(
        rows(&key_averages(&f.rec, None)),
        vec![
            row("block", 1, 0, 96, 0, 0),
            row("aten::empty", 2, 96, 96, 0, 0)
        ]
    );
}

#[test]
fn sorting_is_stable_and_descending() {
    let f = scenario();
    let mut table = key_averages(&f.rec, None);
    sort_rows(&mut table, SortKey::SelfCpuMemory);
    let names: Vec<&str> = table.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "aten::mm",
            "aten::linear",
            "void gemm_kernel<float>",
            "aten::add",
            "[memory]",
            "ProfilerStep*"
        ]
    );
    assert_eq!(
        SortKey::parse("self_cuda_memory_usage"),
        Some(SortKey::SelfDeviceMemory)
    );
    assert_eq!(SortKey::parse("count"), Some(SortKey::Calls));
    assert_eq!(SortKey::parse("cpu_time_total"), None);
}

/// GIVEN two steps out of order and an op run twice, a row's spans are its ops (every
/// step for `ProfilerStep*`), sorted by start.
#[test]
fn a_rows_spans_are_its_ops_or_every_step() {
    use OpCategory::*;
    let mut f = Fixture::new();
    f.op("ProfilerStep#2", UserAnnotation, 0, 100, 200)
        .op("ProfilerStep#1", UserAnnotation, 0, 0, 100)
        .op("aten::add", CpuOp, 0, 110, 120)
        .op("aten::add", CpuOp, 0, 10, 20);
    assert_eq!(row_spans(&f.rec, "ProfilerStep*"), [(0, 100), (100, 200)]);
    assert_eq!(row_spans(&f.rec, "aten::add"), [(10, 20), (110, 120)]);
    assert!(row_spans(&f.rec, "aten::mul").is_empty());
}

/// ATen overload names: `ns::op.overload` loses the overload; nothing else does.
#[test]
fn overloads_are_cut_from_aten_names_only() {
    use super::events::without_overload;
    assert_eq!(without_overload("aten::mul.Tensor"), Some("aten::mul"));
    assert_eq!(without_overload("aten::add_.out"), Some("aten::add_"));
    for other in [
        "aten::mul",
        "Optimizer.step#AdamW.step",
        "model.py(12): forward",
        "at::native::kernel<float>.x",
        "::mul.Tensor",
        "aten::mul.",
        "aten::mul.Tensor.x",
    ] {
        assert_eq!(without_overload(other), None, "{other}");
    }
}

/// GIVEN `aten::mul.Scalar` calling `aten::mul.Tensor` as its only child, and a lone
/// `aten::mul.Tensor`, THEN as in torch's key_averages() the rows are keyed by `aten::mul`
/// and the only child folds into its parent: one row, two calls.
#[test]
fn overloads_share_a_row_and_fold_like_one_name() {
    use OpCategory::*;
    let mut f = Fixture::new();
    f.op("aten::mul.Scalar", CpuOp, 0, 0, 50)
        .op("aten::mul.Tensor", CpuOp, 0, 10, 40)
        .op("aten::mul.Tensor", CpuOp, 0, 60, 70)
        .mem(20, 100, 0, 0)
        .mem(65, 10, 0, 0);
    let rows = key_averages(&f.rec, None);
    let mul: Vec<&OpRow> = rows
        .iter()
        .filter(|r| r.name.starts_with("aten::mul"))
        .collect();
    assert_eq!(mul.len(), 1, "{rows:?}");
    assert_eq!(mul[0].name, "aten::mul");
    assert_eq!(mul[0].calls, 2);
    assert_eq!(mul[0].cpu_memory_usage, 110);
    assert_eq!(mul[0].self_cpu_memory_usage, 110);
    // The row's spans are every overload's ops.
    assert_eq!(
        row_spans(&f.rec, "aten::mul"),
        [(0, 50), (10, 40), (60, 70)]
    );
}

/// Every Chrome trace under ../shared/traces and tests/fixtures/torch-cpu.
fn chrome_traces() -> Vec<std::path::PathBuf> {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    let roots = [repo.join("../shared/traces"), repo.join("tests/fixtures")];
    let mut dirs: Vec<std::path::PathBuf> = roots.to_vec();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            let name = p.to_string_lossy();
            if p.is_dir() {
                dirs.push(p);
            } else if name.ends_with(".json.gz") && !name.contains("key_averages") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_table_in_chunks_of_time_equals_the_table_in_one() {
    let (mut traces, mut cut) = (0, 0);
    for path in chrome_traces() {
        let Ok(rec) = crate::load(&path, crate::LoadOptions::default()) else {
            continue;
        };
        if rec.ops.len() < 1_000 {
            continue;
        }
        traces += 1;
        let whole = key_averages_in_chunks(&rec, None, usize::MAX, events::split);
        let window = TimeWindow {
            start_ns: rec.meta.start_ns + (rec.meta.end_ns - rec.meta.start_ns) / 3,
            end_ns: rec.meta.end_ns - (rec.meta.end_ns - rec.meta.start_ns) / 4,
        };
        let whole_window = key_averages_in_chunks(&rec, Some(window), usize::MAX, events::split);
        for chunk_ops in [50, 700, 5_000] {
            let filter = events::OpFilter::new(&rec, None);
            let n = chunks::Chunks::plan(&rec, &filter, chunk_ops).len();
            cut += usize::from(n > 1);
            let what = format!("{} in chunks of {chunk_ops} ({n})", path.display());
            assert_eq!(
                key_averages_in_chunks(&rec, None, chunk_ops, events::split),
                whole,
                "{what}"
            );
            let windowed = key_averages_in_chunks(&rec, Some(window), chunk_ops, events::split);
            assert_eq!(windowed, whole_window, "{what}, window");
        }
    }
    // Most tries cut the trace (41 traces, 75 of 123 tries when written); those with a
    // span over the whole run, or too few ops for the chunk size, stay whole.
    assert!(traces >= 12, "{traces} traces");
    assert!(cut * 2 >= traces * 3, "{cut} of {} tries cut", traces * 3);
}
