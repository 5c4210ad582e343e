//! `vramscope record --torch-memory`, without torch and without a GPU: the fake torch of
//! tests/fixtures/torch-memory (real snapshot layout, real epoch clock) and the fake NVML.
//! The allocator history lands in the recording byte for byte and on the NVML samples' time
//! axis; the user's PYTHONPATH and sitecustomize keep working; every reason for no history
//! is said; a killed vramscope loses nothing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::record_support::*;
use crate::support::*;

fn fake_torch() -> PathBuf {
    fixtures().join("torch-memory/fake-torch")
}

fn train() -> String {
    fixtures()
        .join("torch-memory/train.py")
        .to_str()
        .expect("utf-8")
        .to_owned()
}

/// Two GPUs; the training script (matched by its path in argv) uses 3 GiB on GPU 0.
fn nvml_script() -> Value {
    json!({"devices": [
        {"name": "Fake H200", "uuid": "GPU-5f0c1d2e-0000-4000-8000-000000000000",
         "total": 141 * GIB, "used": [[0, 4 * GIB]],
         "processes": [{"argv_has": train(), "used": [[0, 3 * GIB]]}]},
        {"name": "Fake H200", "uuid": "GPU-5f0c1d2e-0000-4000-8000-000000000001",
         "total": 141 * GIB, "used": [[0, GIB]]}
    ]})
}

fn torch_record(dir: &Path, env: &[(&str, &str)], cmd: &[&str]) -> Command {
    let mut c = record_command(
        dir,
        &nvml_script(),
        &["--torch-memory", "--interval-ms", "20", "-o", "run.vsr"],
        cmd,
    );
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// The embedded snapshots: (snapshot line, decoded bytes).
fn embedded(path: &Path) -> Vec<(Value, Vec<u8>)> {
    let mut out: Vec<(Value, Vec<u8>)> = Vec::new();
    for l in lines(path) {
        if let Some(info) = l.get("snapshot") {
            out.push((info.clone(), Vec::new()));
        } else if let Some(c) = l.get("snapshot_chunk") {
            let b64 = c["b64"].as_str().expect("b64");
            let raw = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .expect("base64");
            out.last_mut().expect("a snapshot line first").1.extend(raw);
        }
    }
    out
}

fn pid_files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn allocator_history_and_nvml_share_one_time_axis() {
    let dir = record_dir("torch");
    let (copies, user) = (dir.join("copies"), dir.join("user-site"));
    std::fs::create_dir_all(&copies).expect("copies");
    std::fs::create_dir_all(&user).expect("user");
    // The user's own sitecustomize must still run, with the user's PYTHONPATH.
    std::fs::write(
        user.join("sitecustomize.py"),
        "import os\nopen(os.environ['USER_SITE_MARKER'], 'w').write('ran')\n",
    )
    .expect("sitecustomize");
    let pythonpath = format!("{}:{}", user.display(), fake_torch().display());
    let marker = dir.join("user-site-ran");
    let d = dir.to_str().expect("utf-8");
    let out = torch_record(
        &dir,
        &[
            ("PYTHONPATH", &pythonpath),
            ("FAKE_TORCH_COPY_DIR", copies.to_str().expect("utf-8")),
            ("USER_SITE_MARKER", marker.to_str().expect("utf-8")),
        ],
        &[&python3(), &train(), d],
    )
    .output()
    .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&marker).ok().as_deref(),
        Some("ran"),
        "{stderr}"
    );
    let sys_path: Vec<String> = serde_json::from_str(
        &std::fs::read_to_string(&pid_files(&dir, "sys_path-")[0]).expect("sys.path"),
    )
    .expect("json");
    assert!(
        sys_path.iter().any(|p| Path::new(p) == user),
        "{sys_path:?}"
    );
    assert!(
        !sys_path.iter().any(|p| p.contains("vramscope-shim-")),
        "{sys_path:?}"
    );

    let path = dir.join("run.vsr");
    assert!(
        !dir.join("run.vsr.torch").exists(),
        "the folder goes once all is embedded"
    );
    // Lossless: the embedded exit snapshot is the pickle torch's _snapshot() produced.
    let snaps = embedded(&path);
    assert_eq!(snaps.len(), 2, "the OOM and the exit snapshot");
    let (info, bytes) = &snaps[1];
    assert_eq!(info["reason"], "exit");
    let pid = info["pid"].as_u64().expect("pid");
    let copy = std::fs::read(copies.join(format!("copy-{pid}-2.pickle"))).expect("copy");
    assert_eq!(bytes, &copy);
    assert_eq!(info["bytes"], copy.len());

    let s = summary_json(&path);
    let dev = s["devices"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["device"] == "cuda:0"))
        .expect("allocator history on cuda:0");
    assert_eq!(dev["peak_allocated_bytes"], 160 * MIB, "32 + 128 MiB");
    assert_eq!(
        dev["peak_reserved_bytes"],
        224 * MIB,
        "segments of 64, 32 and 128 MiB: {dev}"
    );
    assert_eq!(s["ooms"].as_array().map(Vec::len), Some(1));
    assert_eq!(s["ooms"][0]["requested_bytes"], 1u64 << 40);
    assert_eq!(
        s["nvml"][0]["peak_process_bytes"],
        3 * GIB,
        "NVML on the same device"
    );
    // One clock: the peak allocation sits just before the program read the time after it.
    let header = &lines(&path)[0];
    let start = header["start_unix_ns"].as_i64().expect("start");
    let times: Value = serde_json::from_str(
        &std::fs::read_to_string(&pid_files(&dir, "times-")[0]).expect("times"),
    )
    .expect("json");
    let logged_ns = times["peak_unix_ns"].as_i64().expect("ns") - start;
    let peak_ns = (dev["peak_allocated_at_us"].as_f64().expect("at") * 1000.0) as i64;
    assert!(
        peak_ns <= logged_ns + 1000 && peak_ns > logged_ns - 100_000_000,
        "peak at {peak_ns} ns, program saw {logged_ns} ns"
    );
    let warnings = s["warnings"].as_object().expect("warnings");
    assert!(
        warnings
            .keys()
            .any(|k| k.contains("allocator history on (torch 2.5.1+fake"))
    );
    assert!(
        stderr.contains("allocator history of 1 process (2 snapshots kept)"),
        "{stderr}"
    );
}

#[test]
fn torch_2_0_signature_and_a_history_without_timestamps() {
    let dir = record_dir("torch-2.0");
    let fake = fake_torch();
    let out = torch_record(
        &dir,
        &[
            ("PYTHONPATH", fake.to_str().expect("utf-8")),
            ("FAKE_TORCH_API", "2.0"),
            ("FAKE_TORCH_VERSION", "2.0.1"),
        ],
        &[&python3(), &train(), dir.to_str().expect("utf-8")],
    )
    .output()
    .expect("run");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary_json(&dir.join("run.vsr"));
    assert_eq!(s["devices"][0]["peak_allocated_bytes"], 160 * MIB);
    let warnings: Vec<&String> = s["warnings"].as_object().expect("w").keys().collect();
    assert!(
        warnings.iter().any(|k| k.contains("(torch 2.0)")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|k| k.contains("writes no timestamps")),
        "{warnings:?}"
    );
}

/// Environment, command, and the reason the recording must give.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], &'a str);

#[test]
fn every_reason_for_no_history_is_said() {
    let dir = record_dir("torch-none");
    let fake = fake_torch();
    let fake = fake.to_str().expect("utf-8");
    let cases: [Case<'_>; 5] = [
        (&[], &[&python3(), "-c", "print(1)"], "never imported torch"),
        (
            &[("PYTHONPATH", fake), ("FAKE_TORCH_CUDA", "0")],
            &[&python3(), "-c", "import torch"],
            "CUDA is not available to torch 2.5.1+fake",
        ),
        (
            &[("PYTHONPATH", fake), ("FAKE_TORCH_CUDA", "none")],
            &[&python3(), "-c", "import torch"],
            "a build without CUDA",
        ),
        (
            &[("PYTHONPATH", fake)],
            &[&python3(), "-c", "import torch"],
            "never initialised CUDA",
        ),
        (&[], &["true"], "no Python process reported"),
    ];
    for (i, (env, cmd, why)) in cases.iter().enumerate() {
        let run_dir = dir.join(i.to_string());
        std::fs::create_dir_all(&run_dir).expect("dir");
        let out = torch_record(&run_dir, env, cmd).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{cmd:?}: {stderr}");
        assert!(stderr.contains("no allocator history"), "{cmd:?}: {stderr}");
        assert!(stderr.contains(why), "{cmd:?}: {stderr}");
        let path = run_dir.join("run.vsr");
        assert!(
            notes(&path).iter().any(|n| n.contains(why)),
            "{cmd:?}: {:?}",
            notes(&path)
        );
        assert!(!run_dir.join("run.vsr.torch").exists());
    }
}

#[test]
fn a_killed_vramscope_leaves_the_snapshots_beside_the_recording() {
    let dir = record_dir("torch-killed");
    let fake = fake_torch();
    let d = dir.to_str().expect("utf-8");
    let mut vs: Child = torch_record(
        &dir,
        &[
            ("PYTHONPATH", fake.to_str().expect("utf-8")),
            ("TRAIN_LINGER", "1.5"),
        ],
        &[&python3(), &train(), d],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .expect("start");
    let path = dir.join("run.vsr");
    let program = header_pid(&path);
    wait_for("the program past its OOM", || {
        pid_files(&dir, "ready-").first().cloned()
    });
    kill("KILL", vs.id());
    let _ = vs.wait();
    // The program goes on, exits, and its exit snapshot lands beside the recording.
    wait_for("the program's exit", || {
        (!Path::new(&format!("/proc/{program}")).exists()).then_some(())
    });
    assert!(dir.join("run.vsr.torch").is_dir());
    let s = summary_json(&path);
    assert_eq!(s["devices"][0]["peak_allocated_bytes"], 160 * MIB);
    let warnings: Vec<&String> = s["warnings"].as_object().expect("w").keys().collect();
    assert!(
        warnings
            .iter()
            .any(|k| k.contains("read from beside the recording")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|k| k.contains("not finalised")),
        "{warnings:?}"
    );
}

#[test]
fn each_process_lands_on_its_gpu_by_uuid() {
    let dir = record_dir("torch-ddp");
    let fake = fake_torch();
    let d = dir.to_str().expect("utf-8");
    // Rank 1 sees only GPU 1 (as with CUDA_VISIBLE_DEVICES=1): its cuda:0 is NVML's GPU 1.
    let program = format!(
        "FAKE_TORCH_UUIDS=5f0c1d2e-0000-4000-8000-000000000000 {py} {t} {d} 1 & \
         FAKE_TORCH_UUIDS=5f0c1d2e-0000-4000-8000-000000000001 {py} {t} {d} 2 & wait",
        t = train(),
        py = python3()
    );
    let out = torch_record(
        &dir,
        &[("PYTHONPATH", fake.to_str().expect("utf-8"))],
        &["sh", "-c", &program],
    )
    .output()
    .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary_json(&dir.join("run.vsr"));
    let peak = |name: &str| {
        s["devices"]
            .as_array()
            .and_then(|d| d.iter().find(|d| d["device"] == name))
            .map(|d| d["peak_allocated_bytes"].clone())
    };
    assert_eq!(peak("cuda:0"), Some(json!(160 * MIB)));
    assert_eq!(peak("cuda:1"), Some(json!(320 * MIB)), "scale 2 on GPU 1");
}
