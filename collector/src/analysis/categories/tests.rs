//! Categories on small synthetic recordings (GIVEN / WHEN / THEN, exact bytes); the real
//! runs against torch's own profiler are checked in `collector/tests/categories.rs`.

use super::*;
use crate::model::*;

/// (name, category, start, end)
type RawOp<'a> = (&'a str, OpCategory, i64, i64);

/// A one-thread CPU recording: ops, and (time, bytes, addr) memory events whose
/// `Total Allocated` starts at `before_bytes`.
fn recording(ops: &[RawOp<'_>], events: &[(i64, i64, u64)], before_bytes: i64) -> Recording {
    let mut rec = Recording::empty(SourceFormat::TorchChromeTrace, "test");
    rec.device_index(DeviceId::CPU);
    rec.thread_index("1", "1");
    for &(name, category, start_ns, end_ns) in ops {
        let name = rec.strings.intern(name);
        rec.ops.push(OpSpan {
            name,
            category,
            thread: 0,
            start_ns,
            end_ns,
        });
    }
    let mut total = before_bytes;
    for &(time_ns, bytes, addr) in events {
        total += bytes;
        rec.mem_events.push(MemEvent {
            addr: addr.into(),
            total_allocated_bytes: total.into(),
            total_reserved_bytes: 0.into(),
            ..MemEvent::sized(time_ns, bytes)
        });
    }
    rec.meta.end_ns = 1000;
    rec
}

use OpCategory::{CpuOp, PythonFunction, UserAnnotation};

/// One training step: data, a module's forward, a backward node, an optimizer step.
fn step_ops() -> Vec<RawOp<'static>> {
    vec![
        ("ProfilerStep#0", UserAnnotation, 0, 1000),
        ("aten::randint", CpuOp, 10, 20),
        ("nn.Module: Net_0", PythonFunction, 100, 400),
        ("aten::linear", CpuOp, 110, 200),
        ("aten::addmm", CpuOp, 120, 190),
        (
            "autograd::engine::evaluate_function: AddmmBackward0",
            UserAnnotation,
            500,
            600,
        ),
        ("AddmmBackward0", CpuOp, 505, 595),
        ("aten::mm", CpuOp, 510, 540),
        ("aten::mm", CpuOp, 550, 580),
        (
            "autograd::engine::evaluate_function: MulBackward0",
            UserAnnotation,
            610,
            690,
        ),
        ("MulBackward0", CpuOp, 612, 688),
        ("Optimizer.step#SGD.step", UserAnnotation, 700, 800),
        ("aten::clone", CpuOp, 710, 720),
        ("aten::mul", CpuOp, 730, 740),
    ]
}

fn categories_of(rec: &Recording) -> Vec<&'static str> {
    let timeline = Timeline::build(rec);
    allocation_categories(rec, &timeline, &timeline.devices[0])
        .into_iter()
        .map(Category::as_str)
        .collect()
}

#[test]
fn each_phase_and_lifetime_gives_its_category() {
    // GIVEN a step whose allocations each follow one rule.
    let events = [
        (15, 1000, 0x10),  // randint before the first module: input
        (150, 2000, 0x20), // addmm's output, freed in backward: activation
        (160, 300, 0x30),  // addmm's scratch, freed inside addmm: unknown
        (170, -300, 0x30),
        (520, 4000, 0x40), // backward, never freed: gradient
        (530, 500, 0x50),  // backward, freed by the next node: autograd_detail
        (560, -2000, 0x20),
        (650, -500, 0x50),
        (715, 800, 0x60), // optimizer, outlives the step: optimizer_state
        (735, 100, 0x70), // optimizer, freed in the (last) step: unknown
        (790, -100, 0x70),
        (900, -1000, 0x10),
    ];
    let rec = recording(&step_ops(), &events, 50);
    // WHEN categorised THEN each allocation gets its rule's category.
    assert_eq!(
        categories_of(&rec),
        [
            "input",
            "activation",
            "unknown",
            "gradient",
            "autograd_detail",
            "optimizer_state",
            "unknown"
        ]
    );
    // AND the composition at the peak (7,550 B after the 530 ns allocation) sums to it,
    // with the 50 bytes no event names as before_trace.
    let timeline = Timeline::build(&rec);
    let c = composition_at_peak(&rec, &timeline, &timeline.devices[0]).expect("peak");
    assert_eq!(c.total_bytes, 7550);
    assert_eq!(c.at_ns, 530);
    let got: Vec<(&str, i64)> = c.entries().map(|(k, b)| (k.as_str(), b)).collect();
    assert_eq!(
        got,
        [
            ("input", 1000),
            ("activation", 2000),
            ("gradient", 4000),
            ("autograd_detail", 500),
            ("before_trace", 50)
        ]
    );
}

#[test]
fn an_intermediate_is_temporary_only_if_an_op_could_take_it_in() {
    // GIVEN aten::add casting its input (to → _to_copy → empty_strided, then copy_ fills
    // it) and freeing the copy before it returns.
    let mut ops = vec![
        ("aten::add", CpuOp, 100, 200),
        ("aten::to", CpuOp, 110, 150),
        ("aten::_to_copy", CpuOp, 112, 148),
        ("aten::empty_strided", CpuOp, 113, 115),
        ("aten::copy_", CpuOp, 120, 140),
    ];
    let events = [(114, 64, 0x1), (180, -64, 0x1)];
    // THEN it is a temporary.
    assert_eq!(categories_of(&recording(&ops, &events, 0)), ["temporary"]);
    // GIVEN the same buffer that no op ever reads (only another empty follows).
    ops[4] = ("aten::empty", CpuOp, 120, 140);
    // THEN torch has no identity for it: unknown.
    assert_eq!(categories_of(&recording(&ops, &events, 0)), ["unknown"]);
}

#[test]
fn more_live_bytes_than_the_total_are_taken_from_the_least_specific_categories() {
    let mut bytes: CategoryBytes = [0; Category::ALL.len()];
    bytes[Category::Activation.index()] = 700;
    bytes[Category::Unknown.index()] = 200;
    balance(&mut bytes, 800, Category::BeforeTrace);
    assert_eq!(bytes[Category::Unknown.index()], 100);
    assert_eq!(bytes[Category::Activation.index()], 700);
    assert_eq!(bytes.iter().sum::<i64>(), 800);
}

#[test]
fn the_series_sums_to_the_allocated_total_after_every_event() {
    let events = [
        (15, 1000, 0x10),
        (150, 2000, 0x20),
        (520, 4000, 0x40),
        (560, -2000, 0x20),
    ];
    let rec = recording(&step_ops(), &events, 50);
    let timeline = Timeline::build(&rec);
    let s = categories_over_time(&rec, &timeline, &timeline.devices[0]);
    assert_eq!(s.times_ns, [15, 150, 520, 560]);
    let totals: Vec<i64> = s.bytes.iter().map(|b| b.iter().sum()).collect();
    assert_eq!(totals, [1050, 3050, 7050, 5050]);
    assert_eq!(s.bytes[3][Category::Gradient.index()], 4000);
    assert_eq!(s.bytes[3][Category::Activation.index()], 0);
    assert_eq!(s.bytes[3][Category::BeforeTrace.index()], 50);
}

#[test]
fn a_long_run_is_decimated_keeping_the_peak_and_the_end() {
    // GIVEN 25,001 events: 12,500 allocations, a free of each, and one more allocation,
    // the peak after the 12,500th.
    let mut events = Vec::new();
    for i in 0..12_500u64 {
        events.push((i as i64, 8, 0x1000 + i));
    }
    for i in 0..12_500u64 {
        events.push((20_000 + i as i64, -8, 0x1000 + i));
    }
    events.push((40_000, 16, 0x9));
    let rec = recording(&[], &events, 0);
    let timeline = Timeline::build(&rec);
    let s = categories_over_time(&rec, &timeline, &timeline.devices[0]);
    // THEN every third point is kept (⌈25,001 / 10,000⌉), plus the peak and the last.
    assert_eq!(s.events, 25_001);
    assert_eq!(s.times_ns.len(), 8_335);
    assert!(s.times_ns.len() <= MAX_SERIES_POINTS);
    let peak: i64 = s
        .bytes
        .iter()
        .map(|b| b.iter().sum::<i64>())
        .max()
        .expect("points");
    assert_eq!(peak, 100_000);
    assert_eq!(s.times_ns.last(), Some(&40_000));
    assert_eq!(s.bytes.last().map(|b| b.iter().sum::<i64>()), Some(16));
}

#[test]
fn a_snapshot_block_is_categorised_from_its_frames_with_either_path_separator() {
    // GIVEN three blocks never freed: one allocated in the optimizer (a Windows path), one
    // in a module's forward, one with no stack.
    let mut rec = recording(&[], &[(10, 512, 0x1), (20, 1024, 0x2), (30, 2048, 0x3)], 0);
    let frame = |rec: &mut Recording, name: &str, file: &str| Frame {
        name: rec.strings.intern(name),
        file: rec.strings.intern(file),
        line: 1,
    };
    let adam = frame(
        &mut rec,
        "_single_tensor_adam",
        r"C:\venv\Lib\site-packages\torch\optim\adam.py",
    );
    let fwd = frame(&mut rec, "forward", "/home/u/model.py");
    let call = frame(
        &mut rec,
        "_call_impl",
        "/venv/lib/torch/nn/modules/module.py",
    );
    rec.stacks = vec![vec![adam], vec![fwd, call]];
    rec.mem_events[0].stack = Some(StackId::new(0));
    rec.mem_events[1].stack = Some(StackId::new(1));
    // THEN: optimizer state, an activation, and unknown.
    assert_eq!(
        categories_of(&rec),
        ["optimizer_state", "activation", "unknown"]
    );
}

#[test]
fn outside_pytorch_is_nvml_used_minus_reserved_at_the_peak() {
    // GIVEN a CUDA recording whose peak (1,024 B allocated, 2 MiB reserved at 20 ns) has
    // NVML samples before and after it, without per-process memory.
    let (rec, timeline) = nvml_recording(&[(5, 300, None), (15, 500, None), (25, 900, None)]);
    let c = composition_at_peak(&rec, &timeline, &timeline.devices[0]).expect("peak");
    // THEN the last sample at or before the peak (500 MiB) minus the 2 MiB reserved, not
    // split.
    assert_eq!(c.total_bytes, 1024);
    let o = c.outside_pytorch.expect("NVML and reserved totals");
    assert_eq!(o.bytes, 498 << 20);
    assert_eq!(o.own_process_bytes, None);
    assert_eq!(o.other_processes_bytes, None);
}

#[test]
fn outside_pytorch_splits_own_processes_from_the_others() {
    // GIVEN the same recording where NVML also reports 350 MiB for the recorded processes
    // at the sample before the peak.
    let (rec, timeline) = nvml_recording(&[
        (5, 300, Some(100)),
        (15, 500, Some(350)),
        (25, 900, Some(800)),
    ]);
    let o = composition_at_peak(&rec, &timeline, &timeline.devices[0])
        .expect("peak")
        .outside_pytorch
        .expect("NVML");
    // THEN own = 350 - 2 MiB reserved (the context and libraries), the others the 150 MiB
    // left of the 498 MiB beyond the reserve.
    assert_eq!(o.bytes, 498 << 20);
    assert_eq!(o.own_process_bytes, Some(348 << 20));
    assert_eq!(o.other_processes_bytes, Some(150 << 20));
}

#[test]
fn outside_pytorch_parts_stay_within_the_whole() {
    // GIVEN a per-process figure read above the device's used bytes (NVML reads them at
    // different moments) and one below the reserve.
    for (process_mib, own_mib) in [(600, 498), (1, 0)] {
        let (rec, timeline) = nvml_recording(&[(15, 500, Some(process_mib))]);
        let o = composition_at_peak(&rec, &timeline, &timeline.devices[0])
            .expect("peak")
            .outside_pytorch
            .expect("NVML");
        // THEN each part is clamped to [0, whole] and the parts sum to the whole.
        assert_eq!(
            o.own_process_bytes,
            Some(own_mib << 20),
            "{process_mib} MiB"
        );
        assert_eq!(
            o.own_process_bytes
                .zip(o.other_processes_bytes)
                .map(|(a, b)| a + b),
            Some(o.bytes)
        );
    }
}

/// A CUDA recording with a 1,024 B peak at 20 ns under 2 MiB reserved, and NVML samples
/// (ns, used MiB, the recorded processes' MiB).
fn nvml_recording(samples: &[(i64, u64, Option<u64>)]) -> (Recording, Timeline) {
    let mut rec = recording(&[], &[(10, 512, 0x1), (20, 512, 0x2), (30, -512, 0x1)], 0);
    rec.devices[0].key = DeviceId {
        device_type: DeviceType::CUDA,
        index: 0,
    };
    for e in &mut rec.mem_events {
        e.total_reserved_bytes = (2 << 20).into();
    }
    for &(time_ns, used_mib, process_mib) in samples {
        rec.gpu_samples.push(GpuSample {
            time_ns,
            device: 0,
            used_bytes: used_mib << 20,
            total_bytes: None,
            process_bytes: process_mib.map(|p| p << 20),
            free_bytes: None,
            driver_reserved_bytes: None,
        });
    }
    let timeline = Timeline::build(&rec);
    (rec, timeline)
}
