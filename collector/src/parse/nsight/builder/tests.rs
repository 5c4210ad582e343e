use super::*;

#[test]
fn memory_kinds_map_to_devices() {
    let cases = [
        (MemKind::Device, Some("cuda:3")),
        (MemKind::DeviceStatic, Some("cuda:3")),
        (MemKind::Pinned, Some("host-pinned")),
        (MemKind::Pageable, Some("host-pageable")),
        (MemKind::Managed, Some("cuda-managed:3")),
        (MemKind::ManagedStatic, Some("cuda-managed:3")),
        (MemKind::Array, None),
        (MemKind::Unknown, None),
    ];
    for (kind, want) in cases {
        assert_eq!(kind.device(3).map(|k| k.to_string()).as_deref(), want);
    }
}

#[test]
fn enum_names_decode() {
    let names = [
        (
            "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC",
            MemKind::DeviceStatic,
        ),
        ("CUDA_MEMOPR_MEMORY_KIND_DEVICE", MemKind::Device),
        ("Managed Static", MemKind::ManagedStatic),
        ("Pinned", MemKind::Pinned),
    ];
    for (name, kind) in names {
        assert_eq!(MemKind::from_enum_name(name), Some(kind), "{name}");
    }
    assert_eq!(MemKind::from_enum_name("CUDA_MEMOPR_MEMORY_KIND_FOO"), None);
    assert_eq!(
        MemOp::from_enum_name("CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION"),
        Some(MemOp::Free)
    );
    assert_eq!(MemOp::from_enum_name("Allocation"), Some(MemOp::Alloc));
    assert_eq!(MemOp::from_documented_id(2), None);
    assert_eq!(MemKind::from_documented_id(5), Some(MemKind::DeviceStatic));
}

#[test]
fn memory_events_follow_their_api_call_or_the_main_thread() {
    let mut b = Builder::new(SourceFormat::NsightSqlite, "test", 1_000);
    let process = GlobalId(281_475_295_477_760);
    let worker = GlobalId(process.0 | 30);
    b.api_call(worker, 7);
    let row = |correlation, op| MemRow {
        rel_ns: 10,
        device_id: 0,
        kind: MemKind::Device,
        op,
        bytes: 4096,
        address: Some(0x7f00),
        process: Some(process),
        correlation,
    };
    b.memory(row(Some(7), MemOp::Alloc));
    b.memory(row(Some(8), MemOp::Free));
    b.memory(MemRow {
        kind: MemKind::Array,
        ..row(None, MemOp::Alloc)
    });
    let rec = b.finish(false, 0);
    assert_eq!(rec.mem_events.len(), 2);
    assert_eq!({ rec.mem_events[0].bytes }, 4096);
    assert_eq!({ rec.mem_events[1].bytes }, -4096);
    assert_eq!({ rec.mem_events[0].time_ns }, 1_010);
    let tid = |i: usize| rec.threads[rec.mem_events[i].thread as usize].tid.clone();
    assert_eq!((tid(0).as_str(), tid(1).as_str()), ("30", "19"));
    assert_eq!(rec.diagnostics.total(), 2);
}

#[test]
fn bad_ranges_are_counted_not_kept() {
    let mut b = Builder::new(SourceFormat::NsightJson, "test", 0);
    let t = b.thread(GlobalId(1 << 24 | 1));
    b.span("ProfilerStep#4", OpCategory::Nvtx, t, 5, Some(9));
    b.span("open", OpCategory::Nvtx, t, 5, None);
    b.span("backwards", OpCategory::Nvtx, t, 9, Some(5));
    let rec = b.finish(false, 0);
    assert_eq!(rec.ops.len(), 1);
    assert_eq!(rec.steps.len(), 1);
    assert_eq!(rec.steps[0].number, 4);
    assert_eq!((rec.meta.start_ns, rec.meta.end_ns), (5, 9));
    assert_eq!(rec.diagnostics.total(), 2);
}

#[test]
fn a_block_freed_but_reserved_before_the_capture_counts_from_its_start() {
    // GIVEN an export whose first memory row frees 8 MiB it never allocated, then
    // allocates and frees 4 MiB
    let mut b = Builder::new(SourceFormat::NsightSqlite, "test", 0);
    let row = |rel_ns, op, bytes, address| MemRow {
        rel_ns,
        device_id: 0,
        kind: MemKind::Device,
        op,
        bytes,
        address: Some(address),
        process: None,
        correlation: None,
    };
    b.memory(row(100, MemOp::Free, 8 << 20, 0xa000));
    b.memory(row(200, MemOp::Alloc, 4 << 20, 0xb000));
    b.memory(row(300, MemOp::Free, 4 << 20, 0xb000));
    let rec = b.finish(false, 0);
    // THEN the reserved memory starts at 8 MiB, never below zero
    let timeline = crate::Timeline::build(&rec);
    let reserved: Vec<i64> = timeline.devices[0]
        .points
        .iter()
        .filter_map(|p| p.reserved_bytes.get())
        .collect();
    assert_eq!(reserved, [8 << 20, 0, 4 << 20, 0]);
    assert_eq!({ rec.mem_events[0].time_ns }, 100);
    // AND a note says how many blocks, and how much, came from before the capture
    let note = "CUDA memory freed in the capture but reserved before it: counted from the capture's start (8388608 bytes)";
    assert_eq!(
        rec.diagnostics.counts.get(note),
        Some(&1),
        "{:?}",
        rec.diagnostics.counts
    );
}
