//! The net size change per op (issue 37, as TensorBoard's memory view shows it), over a
//! selected range or the whole run: the Ops table's allocated, freed and net columns, from
//! the collector — the CPU's on a CPU trace, the device's with the CPU's net beside them on
//! a GPU trace.

use collector::analysis::key_averages_with_net;
use collector::model::DeviceId;
use egui_kittest::kittest::Queryable;

use super::super::panels::OpColumn;
use super::super::units;
use super::{harness, sample, select_second_quarter, settle};

/// GIVEN the CPU sample with the second quarter of the plot shift-dragged, THEN each row of
/// the range's table carries the collector's allocated and freed bytes, its net is
/// allocated − freed and equals its self CPU memory, the nets of all rows add up to the
/// change of the CPU's allocated memory across the range (every record in the range is
/// attributed: to an op or to the `[memory]` row), the columns are drawn with those numbers,
/// and a click on "CPU Net" sorts by it.
#[test]
fn a_range_shows_each_ops_allocated_freed_and_net_change() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    // The whole recording's table has them too, the collector's over the whole run.
    assert!(h.query_by_label("CPU Net").is_some());
    let doc = h.state().active_doc().expect("doc");
    let whole = key_averages_with_net(&doc.data.rec, None);
    assert_eq!(*doc.panels.table.rows, whole);
    assert!(whole.iter().all(|r| {
        r.net
            .is_some_and(|n| n.host.net() == r.self_cpu_memory_usage)
    }));
    select_second_quarter(&mut h);
    let doc = h.state().active_doc().expect("doc");
    let w = doc.panels.table.window.expect("a range");
    let rec = &doc.data.rec;
    assert_eq!(*doc.panels.table.rows, key_averages_with_net(rec, Some(w)));
    let (mut sum, mut allocated, mut freed) = (0i64, 0i64, 0i64);
    for r in doc.panels.table.rows.iter() {
        let net = r.net.expect("a range's row has its net").host;
        assert_eq!(net.net(), net.allocated - net.freed);
        assert_eq!(net.net(), r.self_cpu_memory_usage, "{}", r.name);
        assert_eq!(OpColumn::CpuNet.value(r), Some(net.net()));
        sum += net.net();
        allocated += net.allocated;
        freed += net.freed;
    }
    let cpu = (doc.data.timeline.devices.iter())
        .find(|d| rec.devices[d.device as usize].key == DeviceId::CPU)
        .expect("the CPU's curve");
    let at = |t: i64| cpu.at(t).map_or(0, |p| p.allocated_bytes);
    let change = at(w.end_ns) - at(w.start_ns - 1);
    assert_eq!(sum, change, "the rows' nets vs the curve's change");
    assert!(
        allocated > 1 << 20 && freed > 1 << 20,
        "{allocated} {freed}"
    );
    // The first row shown has its three numbers drawn.
    let first = &doc.panels.table.rows[doc.panels.table.order[0]];
    let net = first.net.expect("net").host;
    let texts = [
        units::op_bytes(net.allocated),
        units::op_bytes(net.freed),
        units::op_bytes_delta(net.net()),
    ];
    for text in texts {
        assert!(
            h.query_all_by_label(&text).next().is_some(),
            "{text} of {} not drawn",
            first.name
        );
    }
    // Sorting by net: largest first.
    h.get_by_label("CPU Net").click();
    h.run_steps(3);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.table.sort, OpColumn::CpuNet);
    let nets: Vec<i64> = (doc.panels.table.order.iter())
        .map(|&i| doc.panels.table.rows[i].net.expect("net").host.net())
        .collect();
    assert!(nets.windows(2).all(|p| p[0] >= p[1]), "{nets:?}");
    assert!(nets[0] > 0 && nets[nets.len() - 1] < 0, "{nets:?}");
}

/// GIVEN a real GPU trace (TraceLens, BERT small on an H100) at 1920×1080, THEN the whole
/// run's Ops table shows CUDA Alloc, CUDA Freed and CUDA Net with CPU Net beside them, its
/// rows are the collector's, every row's device net is its self CUDA memory; at 1000×700
/// the nets stay (allocated and freed give way) and every text fits the window.
#[test]
fn a_gpu_trace_shows_the_devices_net_change_and_the_cpus_beside_it() {
    let path = super::repo().join(
        "../shared/traces/real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
    );
    let mut h = super::layout::harness_sized(vec![path], super::layout::LARGE);
    settle(&mut h);
    for header in ["CUDA Alloc", "CUDA Freed", "CUDA Net", "CPU Net"] {
        assert!(h.query_by_label(header).is_some(), "{header} drawn");
    }
    assert!(h.query_by_label("CPU Alloc").is_none());
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(
        *doc.panels.table.rows,
        key_averages_with_net(&doc.data.rec, None)
    );
    let device_allocated: i64 = (doc.panels.table.rows.iter())
        .map(|r| {
            let net = r.net.expect("net").device;
            assert_eq!(net.net(), r.self_device_memory_usage, "{}", r.name);
            net.allocated
        })
        .sum();
    assert!(device_allocated > 1 << 20, "{device_allocated}");
    h.set_size(super::layout::SMALL);
    h.run_steps(4);
    for header in ["CUDA Net", "CPU Net"] {
        assert!(
            h.query_by_label(header).is_some(),
            "{header} drawn at 1000×700"
        );
    }
    super::layout::assert_fits(&h, "a GPU trace's whole-run Ops tab");
}
