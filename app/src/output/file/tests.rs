//! The policy on real files in a temporary directory: what is refused, what is replaced,
//! and that no temporary is left behind.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::*;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vramscope-file-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}

const REPLACE: Policy<'static> = FRESH;
const REFUSE: Policy<'static> = Policy {
    overwrite: Overwrite::Refuse { hint: FORCE_HINT },
    inputs: &[],
};

/// A directory shape for the tests: `index.md` starting "# t", and `*.png`.
const SHAPE: DirShape = DirShape {
    what: "a test directory",
    marker: "index.md",
    marker_head: "# t",
    made: |n| n == "index.md" || n.ends_with(".png"),
};

#[test]
fn replace_writes_and_replaces_leaving_no_temporary_file() {
    let dir = temp_dir("replace");
    let dest = dir.join("out.json");
    assert_eq!(
        write_bytes(&dest, &REPLACE, "t", b"one").expect("written"),
        3
    );
    write_bytes(&dest, &REPLACE, "t", b"second").expect("replaced");
    assert_eq!(fs::read(&dest).expect("read"), b"second");
    assert_eq!(names(&dir), ["out.json"]);
}

#[test]
fn refuse_leaves_an_existing_file_alone() {
    let dir = temp_dir("refuse");
    let dest = dir.join("out.vsr");
    fs::write(&dest, b"keep").expect("write");
    let err = write_bytes(&dest, &REFUSE, "t", b"new").expect_err("refused");
    assert_eq!(
        err.to_string(),
        format!("{} exists; pass --force to overwrite it", dest.display())
    );
    assert_eq!(fs::read(&dest).expect("read"), b"keep");
    assert_eq!(names(&dir), ["out.vsr"]);
}

#[test]
fn an_input_is_refused_however_it_is_named_even_with_replace() {
    let dir = temp_dir("input");
    fs::create_dir(dir.join("sub")).expect("sub");
    let input = dir.join("in.json");
    fs::write(&input, b"input").expect("write");
    std::os::unix::fs::symlink(&input, dir.join("link.json")).expect("symlink");
    fs::hard_link(&input, dir.join("hard.json")).expect("hard link");
    let inputs = [input.as_path()];
    let force = Policy::new(Overwrite::Replace, &inputs);
    for dest in ["in.json", "sub/../in.json", "link.json", "hard.json"] {
        let dest = dir.join(dest);
        let err = write_bytes(&dest, &force, "t", b"new").expect_err("refused");
        assert_eq!(
            err.to_string(),
            format!(
                "refusing to write {}: it is the input {}; choose another name",
                dest.display(),
                input.display()
            )
        );
    }
    assert_eq!(fs::read(&input).expect("read"), b"input");
    assert_eq!(names(&dir), ["hard.json", "in.json", "link.json", "sub"]);
    // Another file, even beside it, is written.
    write_bytes(&dir.join("other.json"), &force, "t", b"x").expect("written");
}

#[test]
fn a_failed_body_removes_the_temporary_file_and_keeps_the_old_one() {
    let dir = temp_dir("fail");
    let dest = dir.join("out.json");
    fs::write(&dest, b"old").expect("write");
    let err = write(&dest, &REPLACE, "t", |w| {
        w.write_all(b"half")?;
        anyhow::bail!("disk full")
    })
    .expect_err("failed");
    let message = format!("{:#}", anyhow::Error::from(err));
    assert_eq!(
        message,
        format!("cannot write {}: disk full", dest.display())
    );
    assert_eq!(fs::read(&dest).expect("read"), b"old");
    assert_eq!(names(&dir), ["out.json"]);
}

#[test]
fn a_path_writer_gets_a_temporary_path_with_the_extension() {
    let dir = temp_dir("path");
    let dest = dir.join("chart");
    write_to_path(&dest, &REPLACE, "chart", "png", |temp| {
        assert_eq!(temp.extension(), Some("png".as_ref()));
        assert_eq!(temp.parent(), Some(dir.as_path()));
        Ok(fs::write(temp, b"png")?)
    })
    .expect("written");
    assert_eq!(names(&dir), ["chart"]);
    let err = write_to_path(&dir, &REPLACE, "chart", "png", |_| Ok(())).expect_err("a directory");
    assert!(err.to_string().contains("is a directory"), "{err}");
}

/// Write a directory of `SHAPE` holding `files`.
fn write_shape(dest: &Path, policy: &Policy<'_>, files: &[&str]) -> Result<(), FileError> {
    write_dir(dest, policy, &SHAPE, "t", |dir| {
        write_bytes(&dir.join("index.md"), &FRESH, "t", b"# t\n")?;
        for f in files {
            write_bytes(&dir.join(f), &FRESH, "t", f.as_bytes())?;
        }
        Ok(())
    })
}

#[test]
fn a_directory_is_replaced_whole_and_only_when_it_is_ours() {
    let root = temp_dir("dir");
    let dest = root.join("report");
    write_shape(&dest, &REFUSE, &["a.png", "b.png"]).expect("new");
    assert_eq!(names(&dest), ["a.png", "b.png", "index.md"]);
    let err = write_shape(&dest, &REFUSE, &["a.png"]).expect_err("exists");
    assert_eq!(
        err.to_string(),
        format!("{} exists; pass --force to overwrite it", dest.display())
    );
    // Replaced whole: b.png of the first write is gone, and nothing is left beside it.
    write_shape(&dest, &REPLACE, &["a.png"]).expect("replaced");
    assert_eq!(names(&dest), ["a.png", "index.md"]);
    assert_eq!(names(&root), ["report"]);
    // An empty directory is used as is; a file or a foreign directory is never replaced.
    let empty = root.join("empty");
    fs::create_dir(&empty).expect("mkdir");
    write_shape(&empty, &REFUSE, &[]).expect("into an empty directory");
    assert_eq!(names(&empty), ["index.md"]);
    fs::write(dest.join("notes.txt"), b"mine").expect("write");
    let err = write_shape(&dest, &REPLACE, &[]).expect_err("foreign");
    assert_eq!(
        err.to_string(),
        format!(
            "refusing to replace {}: it holds notes.txt, which is not part of a test \
             directory; choose a new or empty directory",
            dest.display()
        )
    );
    let impostor = root.join("impostor");
    fs::create_dir(&impostor).expect("mkdir");
    fs::write(impostor.join("index.md"), b"my notes").expect("write");
    let err = write_shape(&impostor, &REPLACE, &[]).expect_err("foreign");
    assert!(
        err.to_string()
            .contains("it has no index.md of a test directory"),
        "{err}"
    );
    let err = write_shape(&root.join("report/a.png"), &REPLACE, &[]).expect_err("a file");
    assert!(err.to_string().contains("is a file"), "{err}");
    assert_eq!(names(&root), ["empty", "impostor", "report"]);
}

#[test]
fn a_directory_holding_an_input_is_never_replaced() {
    let root = temp_dir("dir-input");
    let dest = root.join("report");
    write_shape(&dest, &REPLACE, &["a.png"]).expect("new");
    let input = root.join("trace.png");
    fs::write(&input, b"trace").expect("write");
    fs::hard_link(&input, dest.join("b.png")).expect("hard link");
    let inputs = [input.as_path()];
    let err =
        write_shape(&dest, &Policy::new(Overwrite::Replace, &inputs), &[]).expect_err("input");
    assert_eq!(
        err.to_string(),
        format!(
            "refusing to replace {}: it holds the input {}; choose another directory",
            dest.display(),
            input.display()
        )
    );
    assert_eq!(names(&dest), ["a.png", "b.png", "index.md"]);
}

#[test]
fn a_failed_directory_body_leaves_the_old_directory_and_no_temporary() {
    let root = temp_dir("dir-fail");
    let dest = root.join("report");
    write_shape(&dest, &REPLACE, &["a.png"]).expect("new");
    let err = write_dir(&dest, &REPLACE, &SHAPE, "t", |dir| {
        write_bytes(&dir.join("index.md"), &FRESH, "t", b"# t\n")?;
        anyhow::bail!("no space")
    })
    .expect_err("failed");
    assert_eq!(
        format!("{:#}", anyhow::Error::from(err)),
        format!("cannot write {}: no space", dest.display())
    );
    assert_eq!(names(&dest), ["a.png", "index.md"]);
    assert_eq!(names(&root), ["report"]);
}

#[test]
fn temporaries_sit_beside_the_destination_named_after_it() {
    let pid = std::process::id();
    let t = temps::sibling(Path::new("/x/y/run.vsr"), "pack", None);
    assert_eq!(t.parent(), Some(Path::new("/x/y")));
    let name = t.file_name().expect("name").to_string_lossy().into_owned();
    assert!(name.starts_with(&format!(".run.vsr.pack-{pid}-")), "{name}");
    let u = temps::sibling(Path::new("/x/y/run.vsr"), "pack", Some("png".as_ref()));
    assert!(
        u.to_string_lossy().ends_with(".png") && u != t,
        "{}",
        u.display()
    );
}
