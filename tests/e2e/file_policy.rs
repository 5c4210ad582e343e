//! The user's files: every command that writes (`export`, `pack`, `diff --chart`,
//! `report`) refuses an existing output without `--force` and replaces it with it, never
//! writes over an input however it is named (the path, `..`, a symlink, a hard link),
//! replaces a report directory whole and only a report directory.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::*;

/// A copy of a small real trace (torch 2.x, CPU memory) in `dir`, as the input to protect.
fn input_in(dir: &Path, name: &str, fixture: &str) -> PathBuf {
    let input = dir.join(name);
    std::fs::copy(fixtures().join(fixture), &input).expect("copy input");
    input
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The arguments of each writing command writing `out` from the inputs in `dir`.
fn commands(dir: &Path, out: &Path) -> Vec<(&'static str, Vec<String>)> {
    let (a, b) = (dir.join("a.json.gz"), dir.join("b.json.gz"));
    let owned = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    vec![
        (
            "export",
            owned(&["export", s(&a), "--format", "perfetto", "-o", s(out)]),
        ),
        ("pack", owned(&["pack", s(&a), "-o", s(out)])),
        (
            "diff --chart",
            owned(&["diff", s(&a), s(&b), "--chart", s(out)]),
        ),
    ]
}

fn run(args: &[String], extra: &[&str]) -> Output {
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.extend(extra);
    vramscope(&all)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}

/// What each command's output starts with once written.
fn magic(command: &str) -> &'static [u8] {
    match command {
        "export" => b"{\"traceEvents\": [",
        "pack" => b"\x1f\x8b",
        _ => b"\x89PNG\r\n\x1a\n",
    }
}

#[test]
fn every_writer_refuses_an_existing_output_unless_forced() {
    let dir = temp_dir("policy-exists");
    input_in(&dir, "a.json.gz", "torch-cpu/k06_lm_sched.json.gz");
    input_in(&dir, "b.json.gz", "torch-cpu/k08_lm_ckpt_sched.json.gz");
    let out = dir.join("out");
    for (command, args) in commands(&dir, &out) {
        std::fs::write(&out, b"the user's file").expect("write");
        let refused = run(&args, &[]);
        assert_eq!(
            refused.status.code(),
            Some(1),
            "{command}: {}",
            stderr(&refused)
        );
        assert!(
            stderr(&refused).contains(&format!(
                "{} exists; pass --force to overwrite it",
                out.display()
            )),
            "{command}: {}",
            stderr(&refused)
        );
        assert_eq!(std::fs::read(&out).expect("read"), b"the user's file");
        let forced = run(&args, &["--force"]);
        assert!(forced.status.success(), "{command}: {}", stderr(&forced));
        let bytes = std::fs::read(&out).expect("read");
        assert!(
            bytes.starts_with(magic(command)),
            "{command} wrote its output"
        );
        assert_eq!(names(&dir), ["a.json.gz", "b.json.gz", "out"], "{command}");
        std::fs::remove_file(&out).expect("remove");
    }
}

#[test]
fn no_writer_writes_over_an_input_even_forced() {
    let dir = temp_dir("policy-input");
    let a = input_in(&dir, "a.json.gz", "torch-cpu/k06_lm_sched.json.gz");
    let b = input_in(&dir, "b.json.gz", "torch-cpu/k08_lm_ckpt_sched.json.gz");
    std::fs::create_dir(dir.join("sub")).expect("sub");
    std::os::unix::fs::symlink(&a, dir.join("link-a")).expect("symlink");
    std::os::unix::fs::symlink(&b, dir.join("link-b")).expect("symlink");
    std::fs::hard_link(&a, dir.join("hard-a")).expect("hard link");
    let (bytes_a, bytes_b) = (std::fs::read(&a).expect("a"), std::fs::read(&b).expect("b"));
    // Every spelling of input A, and for diff input B too.
    let spellings = ["a.json.gz", "sub/../a.json.gz", "link-a", "hard-a"];
    let mut refused = 0;
    for (i, spelling) in spellings.iter().chain(&["b.json.gz", "link-b"]).enumerate() {
        let out = dir.join(spelling);
        let input = if i < spellings.len() { &a } else { &b };
        for (command, args) in commands(&dir, &out) {
            if input == &b && command != "diff --chart" {
                continue;
            }
            let r = run(&args, &["--force"]);
            assert_eq!(r.status.code(), Some(1), "{command} -o {spelling}");
            let want = format!(
                "refusing to write {}: it is the input {}; choose another name",
                out.display(),
                input.display()
            );
            assert!(stderr(&r).contains(&want), "{command}: {}", stderr(&r));
            refused += 1;
        }
    }
    assert_eq!(refused, 4 * 3 + 2, "every command, every spelling");
    assert!(std::fs::read(&a).expect("a") == bytes_a && std::fs::read(&b).expect("b") == bytes_b);
    assert_eq!(
        names(&dir),
        [
            "a.json.gz",
            "b.json.gz",
            "hard-a",
            "link-a",
            "link-b",
            "sub"
        ]
    );
    assert!(
        std::fs::symlink_metadata(dir.join("link-a"))
            .expect("link")
            .is_symlink()
    );
    // A report directory holding an input is not replaced either.
    let r = vramscope(&["report", s(&a), "-o", s(&dir), "--force"]);
    assert_eq!(r.status.code(), Some(1));
    let want = format!(
        "refusing to replace {}: it holds the input {}",
        dir.display(),
        a.display()
    );
    assert!(stderr(&r).contains(&want), "{}", stderr(&r));
    assert!(std::fs::read(&a).expect("a") == bytes_a);
}

#[test]
fn a_report_directory_is_replaced_whole_and_only_a_report() {
    let dir = temp_dir("policy-report");
    let a = input_in(&dir, "a.json.gz", "torch-cpu/k06_lm_sched.json.gz");
    let b = input_in(&dir, "b.json.gz", "torch-cpu/k08_lm_ckpt_sched.json.gz");
    let report = dir.join("report");
    // Two inputs: their charts are numbered.
    vramscope_ok(&["report", s(&a), s(&b), "-o", s(&report)]);
    let two = names(&report);
    assert!(two.contains(&"2-top-ops.png".to_owned()), "{two:?}");
    let refused = vramscope(&["report", s(&a), "-o", s(&report)]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("exists; pass --force"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(names(&report), two, "left alone");
    // Replaced by the report of one input: exactly the files a fresh report of it has.
    vramscope_ok(&["report", s(&a), "-o", s(&report), "--force"]);
    let fresh = dir.join("fresh");
    vramscope_ok(&["report", s(&a), "-o", s(&fresh)]);
    assert_eq!(names(&report), names(&fresh));
    assert!(
        !names(&report).iter().any(|n| n.starts_with("2-")),
        "no stale chart"
    );
    for n in names(&fresh) {
        assert!(
            std::fs::read(report.join(&n)).ok() == std::fs::read(fresh.join(&n)).ok(),
            "{n}"
        );
    }
    assert_eq!(names(&dir), ["a.json.gz", "b.json.gz", "fresh", "report"]);
    // A directory with anything else in it is never replaced, even forced.
    std::fs::write(report.join("notes.txt"), b"mine").expect("write");
    let r = vramscope(&["report", s(&a), "-o", s(&report), "--force"]);
    assert_eq!(r.status.code(), Some(1));
    let want = format!(
        "refusing to replace {}: it holds notes.txt, which is not part of a vramscope report; \
         choose a new or empty directory",
        report.display()
    );
    assert!(stderr(&r).contains(&want), "{}", stderr(&r));
    assert_eq!(
        std::fs::read(report.join("notes.txt")).expect("kept"),
        b"mine"
    );
    // An empty directory is used; a missing one is made with its parents.
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    vramscope_ok(&["report", s(&a), "-o", s(&empty)]);
    assert_eq!(names(&empty), names(&fresh));
    let deep = dir.join("x/y/report");
    vramscope_ok(&["report", s(&a), "-o", s(&deep)]);
    assert_eq!(names(&deep), names(&fresh));
}

#[test]
fn a_destination_that_is_not_a_regular_file_is_refused_even_forced() {
    // GIVEN a device, a FIFO, a socket, and links to a device and a FIFO as destinations
    let dir = temp_dir("policy-special");
    input_in(&dir, "a.json.gz", "torch-cpu/k06_lm_sched.json.gz");
    input_in(&dir, "b.json.gz", "torch-cpu/k08_lm_ckpt_sched.json.gz");
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.expect("mkfifo runs").success());
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("socket")).expect("socket");
    std::os::unix::fs::symlink("/dev/null", dir.join("to-null")).expect("symlink");
    std::os::unix::fs::symlink(&fifo, dir.join("to-fifo")).expect("symlink");
    let cases = [
        (PathBuf::from("/dev/null"), "a character device"),
        (dir.join("to-null"), "a character device"),
        (fifo.clone(), "a FIFO"),
        (dir.join("to-fifo"), "a FIFO"),
        (dir.join("socket"), "a socket"),
    ];
    for (dest, kind) in &cases {
        let mut every = commands(dir.as_path(), dest);
        every.push((
            "report",
            vec![
                "report".into(),
                s(&dir.join("a.json.gz")).into(),
                "-o".into(),
                s(dest).into(),
            ],
        ));
        for (command, args) in every {
            for force in [&[][..], &["--force"][..]] {
                // WHEN written with and without --force
                let r = run(&args, force);
                // THEN refused, naming what it is, and never suggesting --force
                assert_eq!(
                    r.status.code(),
                    Some(1),
                    "{command} {force:?}: {}",
                    stderr(&r)
                );
                let want = format!(
                    "refusing to write {}: it is {kind}, not a regular file; name a new file",
                    dest.display()
                );
                assert!(stderr(&r).contains(&want), "{command}: {}", stderr(&r));
                assert!(!stderr(&r).contains("--force"), "{command}: {}", stderr(&r));
            }
        }
    }
    // AND the links are still links, the FIFO still a FIFO
    for link in ["to-null", "to-fifo"] {
        let meta = std::fs::symlink_metadata(dir.join(link)).expect("link");
        assert!(meta.is_symlink(), "{link} kept");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::metadata(&fifo)
            .expect("fifo")
            .file_type()
            .is_fifo()
    );
}

#[test]
fn an_output_named_with_250_bytes_is_written() {
    // GIVEN an output name of 250 bytes (the temporary beside it once passed 255)
    let dir = temp_dir("policy-long-name");
    let a = input_in(&dir, "a.json.gz", "torch-cpu/k06_lm_sched.json.gz");
    let out = dir.join(format!("{}.json", "n".repeat(245)));
    // WHEN exported, THEN it is written under that name and nothing else is left
    let r = vramscope(&["export", s(&a), "--format", "perfetto", "-o", s(&out)]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(
        std::fs::read(&out)
            .expect("out")
            .starts_with(magic("export"))
    );
    assert_eq!(names(&dir).len(), 2);
}
