//! One question, three askers. The CLI, the report and the viewer each answer "what is the
//! peak, what was live then, what filled the memory, which ops hold the most memory" on
//! the same inputs; every answer comes from one collector function, so the numbers must be
//! the same wherever they are asked. Each side is asked the way a user asks it: the CLI
//! through `cli::run` with its JSON/text output, the report through the files it writes,
//! the viewer through its loaded model, its inspector's job and its Categories panel.

use std::time::Duration;

use clap::Parser;
use collector::LoadOptions;
use collector::analysis::SortKey;
use collector::analysis::live::{Instant, resolve_instant};
use collector::units::bytes_iec;
use serde_json::Value;

use super::super::categories::composition_at;
use super::super::doc::Document;
use super::super::jobs::inspect;
use super::super::loaded::Loaded;
use super::super::panels::OpColumn;
use super::super::panels::ops_table::refresh_order;
use super::repo;
use crate::cli::{Cli, run};
use crate::output::file::FRESH;
use crate::output::report::{Analysed, write_analysed};

/// Inputs of each kind the three askers share: a CPU profiler trace (no device memory),
/// a real allocator snapshot, and a snapshot with OOMs.
const INPUTS: [&str; 3] = [
    "samples/transformer-lm-train-cpu.json.gz",
    "samples/cs336-transformer-snapshot.pickle",
    "tests/fixtures/snapshot/oom.pickle",
];

/// `vramscope ARGS` through the real command line, its stdout.
fn cli(args: &[&str]) -> String {
    let cli = Cli::parse_from(std::iter::once("vramscope").chain(args.iter().copied()));
    let mut out = Vec::new();
    run(cli, &mut out).expect("the command succeeds");
    String::from_utf8(out).expect("UTF-8")
}

/// A file name for `input`'s scratch directory.
fn name_of(input: &str) -> String {
    input.replace(['/', '.'], "-")
}

fn cli_json(args: &[&str]) -> Value {
    serde_json::from_str(&cli(args)).expect("JSON")
}

#[test]
fn the_cli_the_report_and_the_viewer_give_the_same_numbers() {
    for input in INPUTS {
        let path = repo().join(input);
        let path_text = path.to_str().expect("UTF-8 path");
        let rec = collector::load(&path, LoadOptions::default()).expect("loads");
        let data = Loaded::build(&path, 0, rec, Duration::ZERO);

        // The peak: `summary --format json` and the viewer's summary.
        let summary = cli_json(&["summary", path_text, "--format", "json"]);
        let device = &summary["devices"][0];
        let name = device["device"].as_str().expect("device name");
        let peak_bytes = device["peak_allocated_bytes"].as_i64().expect("peak");
        let idx = data
            .rec
            .devices
            .iter()
            .position(|d| d.key.to_string() == name)
            .expect("the device") as u16;
        let viewer_device = data
            .summary
            .devices
            .iter()
            .find(|d| Some(d.device) == data.device_id(idx))
            .expect("the viewer's summary has the device");
        assert_eq!(
            viewer_device.peak_allocated_bytes,
            Some(peak_bytes),
            "{input}"
        );

        // What was live at the peak: `live --format json`, the viewer's inspector.
        let live = cli_json(&["live", path_text, "--format", "json", "--limit", "100000"]);
        assert_eq!(live["device"].as_str(), Some(name), "{input}");
        assert_eq!(
            live["allocated_bytes"].as_i64(),
            Some(peak_bytes),
            "{input}"
        );
        let peak_ns =
            resolve_instant(&data.rec, &data.timeline, idx, Instant::Peak).expect("a peak");
        let inspection = inspect(&data, idx, peak_ns, false);
        assert_eq!(inspection.allocated_bytes, Some(peak_bytes), "{input}");
        let cli_groups: Vec<(String, i64)> = live["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| {
                let site = g["site"].as_str().expect("site").to_owned();
                (site, g["bytes"].as_i64().expect("bytes"))
            })
            .collect();
        let viewer_groups: Vec<(String, i64)> = inspection
            .groups
            .iter()
            .map(|g| (g.site.clone(), g.bytes))
            .collect();
        assert!(!cli_groups.is_empty(), "{input}: something was live");
        assert_eq!(cli_groups, viewer_groups, "{input}");
        let groups_bytes: i64 = cli_groups.iter().map(|g| g.1).sum();
        assert_eq!(
            groups_bytes, peak_bytes,
            "{input}: the groups sum to the peak"
        );
        let live_bytes = live["live_bytes"].as_i64().expect("live bytes");
        let seen = live["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .filter(|g| matches!(g["kind"].as_str(), Some("stack" | "op" | "category")))
            .count();

        // What filled the memory at the peak: the JSON summary's composition, the
        // viewer's Categories panel at the peak, and (below) the report's table.
        let composition: Vec<(String, i64)> = device["composition_at_peak"]
            .as_object()
            .expect("a composition at the peak")
            .iter()
            .map(|(c, b)| (c.clone(), b.as_i64().expect("bytes")))
            .collect();
        let shown = composition_at(&data, idx, None).expect("the viewer's composition");
        let mut viewer_composition: Vec<(String, i64)> = shown
            .entries()
            .into_iter()
            .map(|(c, b)| (c.as_str().to_owned(), b))
            .collect();
        viewer_composition.sort();
        let mut sorted = composition.clone();
        sorted.sort();
        assert_eq!(sorted, viewer_composition, "{input}");
        assert_eq!(shown.total_bytes, peak_bytes, "{input}");

        // The report says the same peak and the same live groups.
        let dir = std::env::temp_dir().join(format!(
            "vramscope-consistency-{}-{}",
            std::process::id(),
            name_of(input)
        ));
        let name_shown = path.file_name().and_then(|n| n.to_str()).expect("name");
        let analysed = Analysed {
            name: name_shown,
            rec: &data.rec,
            timeline: &data.timeline,
            summary: &data.summary,
        };
        let report_dir = dir.join("report");
        write_analysed(&report_dir, &[analysed], &Default::default(), &FRESH).expect("report");
        let md = std::fs::read_to_string(report_dir.join("report.md")).expect("report.md");
        let peak_row = format!(
            "| peak allocated | {} ({peak_bytes} B)",
            bytes_iec(peak_bytes)
        );
        assert!(md.contains(&peak_row), "{input}: {peak_row} in\n{md}");
        let live_line = format!(
            "Live at the peak ({} allocated: {} in {seen} {} of blocks seen",
            bytes_iec(peak_bytes),
            bytes_iec(live_bytes),
            if seen == 1 { "group" } else { "groups" }
        );
        assert!(md.contains(&live_line), "{input}: {live_line} in\n{md}");
        for (category, bytes) in &composition {
            let row = format!("| {category} | {} ({bytes} B) |", bytes_iec(*bytes));
            assert!(md.contains(&row), "{input}: {row} in\n{md}");
        }

        // The per-op table: the same rows, sorted by the same default key everywhere.
        let rows = cli_json(&["table", path_text, "--format", "json", "--sort", "none"]);
        let cli_names: Vec<&str> = rows
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["name"].as_str().expect("name"))
            .collect();
        let viewer_names: Vec<&str> = data.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(cli_names, viewer_names, "{input}");
        let key = SortKey::default_for(&data.rows);
        let text = cli(&["table", path_text]);
        assert!(
            text.contains(&format!("sorted by {}", key.torch_name())),
            "{input}: the CLI sorts by {}",
            key.torch_name()
        );
        // The report's top-ops table, where the source has ops (a snapshot has none).
        assert_eq!(
            md.contains(&format!("sorted by {}", key.torch_name())),
            !data.rec.ops.is_empty(),
            "{input}"
        );
        let mut doc = Document::new(1, std::sync::Arc::new(data));
        assert_eq!(doc.panels.table.sort, OpColumn::of(key), "{input}");
        refresh_order(&mut doc.panels.table);
        let top_value = |i: usize| {
            let r = &doc.panels.table.rows[doc.panels.table.order[i]];
            doc.panels.table.sort.value(r)
        };
        let cli_sorted = cli_json(&["table", path_text, "--format", "json"]);
        let column = match key {
            SortKey::SelfDeviceMemory => "self_device_memory_usage",
            _ => "self_cpu_memory_usage",
        };
        let cli_top = cli_sorted[0][column].as_i64();
        assert_eq!(top_value(0), cli_top, "{input}: the largest row agrees");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The what-if advice: `advise --format json`, the viewer's Advice job (what its panel
/// shows) and the report's advice section give the same estimates and the same fit, with
/// `advise`'s defaults and with other ranks, micro-batches and a capacity.
#[test]
fn the_cli_the_report_and_the_viewer_give_the_same_advice() {
    use super::super::jobs::{Job, Outcome, Request, run_now};
    use crate::output::advise::{fit_sentence, label};
    use collector::analysis::advise::Options;
    for input in INPUTS {
        let path = repo().join(input);
        let path_text = path.to_str().expect("UTF-8 path");
        let rec = collector::load(&path, LoadOptions::default()).expect("loads");
        let data = std::sync::Arc::new(Loaded::build(&path, 0, rec, Duration::ZERO));
        let asked = [
            (Options::DEFAULTS, vec![]),
            (
                Options {
                    world_size: 4,
                    micro_batches: 3,
                    capacity_bytes: Some(1 << 20),
                    ..Options::DEFAULTS
                },
                vec![
                    "--world-size",
                    "4",
                    "--micro-batches",
                    "3",
                    "--capacity",
                    "1MiB",
                ],
            ),
        ];
        for (options, flags) in asked {
            let mut args = vec!["advise", path_text, "--format", "json"];
            args.extend(flags);
            let cli_advice = cli_json(&args);
            let reply = run_now(Request {
                doc: 1,
                generation: 1,
                data: data.clone(),
                job: Job::Advise { options },
            });
            let Outcome::Advise(viewer) = reply.outcome else {
                panic!("{input}: the advice job answers with advice");
            };
            let cli_devices = cli_advice["devices"].as_array().expect("devices");
            assert_eq!(cli_devices.len(), viewer.len(), "{input}");
            assert!(!viewer.is_empty(), "{input}: a device to advise on");
            for (c, v) in cli_devices.iter().zip(&viewer) {
                assert_eq!(
                    c["measured_peak_bytes"].as_i64(),
                    Some(v.measured_peak_bytes)
                );
                let cli_estimates: Vec<(String, i64)> = c["techniques"]
                    .as_array()
                    .expect("techniques")
                    .iter()
                    .map(|t| {
                        let name = t["technique"].as_str().expect("name").to_owned();
                        (name, t["estimated_peak_bytes"].as_i64().expect("bytes"))
                    })
                    .collect();
                let viewer_estimates: Vec<(String, i64)> = v
                    .estimates
                    .iter()
                    .map(|e| (e.technique.as_str().to_owned(), e.estimated_peak_bytes))
                    .collect();
                assert_eq!(cli_estimates, viewer_estimates, "{input} {options:?}");
                let cli_fit = c["fits"]["estimated_peak_bytes"].as_i64();
                let viewer_fit = v.fit.as_ref().and_then(|f| f.estimated_peak_bytes);
                assert_eq!(cli_fit, viewer_fit, "{input} {options:?}");
            }
            if options != Options::DEFAULTS {
                continue;
            }
            // The report advises with `advise`'s defaults.
            let dir = std::env::temp_dir().join(format!(
                "vramscope-consistency-advice-{}-{}",
                std::process::id(),
                name_of(input)
            ));
            let analysed = Analysed {
                name: "input",
                rec: &data.rec,
                timeline: &data.timeline,
                summary: &data.summary,
            };
            write_analysed(&dir, &[analysed], &Default::default(), &FRESH).expect("report");
            let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
            for v in &viewer {
                for e in &v.estimates {
                    let row = format!(
                        "| {} | {} | {} |",
                        label(e.technique),
                        bytes_iec(e.estimated_peak_bytes),
                        bytes_iec(e.saving_bytes)
                    );
                    assert!(md.contains(&row), "{input}: {row} in\n{md}");
                }
                if let Some(f) = &v.fit {
                    let line = fit_sentence(f);
                    assert!(md.contains(&line), "{input}: {line} in\n{md}");
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
