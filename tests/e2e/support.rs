//! Helpers: run the binary, find the shared traces, read JSON and gzip.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `../shared/traces` beside the repository; the tests need it and say so if it is missing.
pub fn shared_traces() -> PathBuf {
    let dir = repo_root().join("../shared/traces");
    assert!(
        dir.is_dir(),
        "ground truth not found at {} (the tests read ../shared beside the repository)",
        dir.display()
    );
    dir
}

/// This repository's own fixtures.
pub fn fixtures() -> PathBuf {
    repo_root().join("tests/fixtures")
}

/// A fresh temporary directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vramscope-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Run `vramscope ARGS`.
pub fn vramscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(args)
        .output()
        .expect("run vramscope")
}

/// Run `vramscope ARGS`, require success, and return stdout.
pub fn vramscope_ok(args: &[&str]) -> String {
    let out = vramscope(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "vramscope {args:?} failed: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Run `vramscope ARGS --format json` and parse the output.
pub fn vramscope_json(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    serde_json::from_str(&vramscope_ok(&all)).expect("JSON output")
}

/// The content of a plain or gzip file (by magic bytes).
pub fn read_maybe_gz(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .expect("gunzip");
        out
    } else {
        raw
    }
}

/// Parse a (possibly gzip) JSON file as a DOM — fine for test-sized files.
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&read_maybe_gz(path)).expect("valid JSON")
}

/// All `*.json.gz` files with a `*.key_averages.json` beside them, in `dir`.
pub fn truth_pairs(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut pairs: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_owned();
            let base = name.strip_suffix(".json.gz")?;
            let truth = p.with_file_name(format!("{base}.key_averages.json"));
            truth.exists().then_some((p, truth))
        })
        .collect();
    pairs.sort();
    pairs
}

/// Compare `actual` with the committed expected file `tests/fixtures/expected/NAME`
/// (`UPDATE_EXPECT=1 cargo test` rewrites it). The repository's path is replaced by `<repo>`
/// first, so the files are the same on every machine.
pub fn assert_expected(name: &str, actual: &str) {
    let root = repo_root().canonicalize().expect("repo root");
    let actual = actual
        .replace(&repo_root().display().to_string(), "<repo>")
        .replace(&root.display().to_string(), "<repo>");
    let path = fixtures().join("expected").join(name);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("create");
        std::fs::write(&path, &actual).expect("write expected");
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (UPDATE_EXPECT=1 cargo test writes it)",
            path.display()
        )
    });
    if actual != expected {
        let first = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or(actual.lines().count().min(expected.lines().count()));
        panic!(
            "{name} changed at line {}:\n  now:      {:?}\n  expected: {:?}\n\
             (rerun with UPDATE_EXPECT=1 if the change is intended, and review the diff)",
            first + 1,
            actual.lines().nth(first),
            expected.lines().nth(first),
        );
    }
}

/// The fake libnvidia-ml (`fake-nvml/`) for this build profile. `cargo test --workspace`
/// builds it with everything else; a narrower `cargo test` (one package, one test) does not,
/// so then it is built here, once, into the same target directory.
pub fn fake_nvml() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        let bin = Path::new(env!("CARGO_BIN_EXE_vramscope"));
        let profile_dir = bin.parent().expect("target/<profile>");
        let lib = profile_dir.join("libfake_nvml.so");
        if !is_fresh(&lib) {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut build = Command::new(cargo);
            build
                .args(["build", "-p", "vramscope-fake-nvml", "--target-dir"])
                .arg(profile_dir.parent().expect("target"))
                .current_dir(repo_root());
            match profile_dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") | None => {}
                Some("release") => {
                    build.arg("--release");
                }
                Some(other) => {
                    build.args(["--profile", other]);
                }
            }
            let status = build.status().expect("run cargo to build fake-nvml");
            assert!(status.success(), "building fake-nvml failed");
        }
        assert!(lib.is_file(), "{} missing", lib.display());
        lib
    })
    .clone()
}

/// Whether `lib` is newer than every source of fake-nvml.
fn is_fresh(lib: &Path) -> bool {
    let Ok(built) = lib.metadata().and_then(|m| m.modified()) else {
        return false;
    };
    let dir = repo_root().join("fake-nvml");
    let mut sources = vec![dir.join("Cargo.toml")];
    if let Ok(entries) = std::fs::read_dir(dir.join("src")) {
        sources.extend(entries.flatten().map(|e| e.path()));
    }
    sources.iter().all(|s| {
        s.metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t <= built)
    })
}
