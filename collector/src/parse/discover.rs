//! Many inputs at once: the files named, and every recognised input under the directories
//! named (a rank's trace, snapshot or recording), found by content through the importers'
//! [`detect`](super::importer::detect) — never by file name — in a stable order.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::importer;
use super::input;

/// Most inputs one command takes. Each input's summary is kept until the end (a few KiB:
/// peaks per device, OOM verdicts), so 65,536 inputs cost a few hundred MiB at most; a
/// set of ranks larger than that is a job for a per-node `summary` and a query engine.
pub const MAX_INPUTS: usize = 65_536;

/// Deepest directory level searched below a directory named on the command line. Rank
/// layouts are a few levels deep (`run/node/rank`); the cap bounds the walk of a wrongly
/// named directory (`/`) and the open directory handles (one per level).
pub const MAX_DEPTH: usize = 32;

/// The inputs found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovered {
    /// Files to read: those named, as given, and those found in directories, each
    /// directory's in name order.
    pub files: Vec<PathBuf>,
    /// Files in directories that no importer recognised (skipped).
    pub skipped: u64,
    /// Of `files`, those found in directories whose content is torch's memory timeline
    /// export, told apart when found.
    pub memory_timelines: Vec<PathBuf>,
    /// Of `files`, those named (taken as given, unread).
    pub named: Vec<PathBuf>,
    /// Directories more than [`MAX_DEPTH`] levels below a named one, not searched: how
    /// many, and the first met (an unrelated deep tree is skipped, not an error).
    pub too_deep: Option<(u64, PathBuf)>,
}

impl Discovered {
    /// The warning for the directories too deep to search, if any.
    pub fn too_deep_warning(&self) -> Option<String> {
        let (n, first) = self.too_deep.as_ref()?;
        Some(format!(
            "{n} directories more than {MAX_DEPTH} levels below the directory named not \
             searched (the first: {}); name a deeper directory itself to read them",
            first.display()
        ))
    }
}

/// Why the inputs could not be listed.
#[derive(Debug)]
pub enum DiscoverError {
    /// A path could not be read (missing, no permission).
    Io(PathBuf, io::Error),
    /// More than [`MAX_INPUTS`] inputs.
    TooMany(PathBuf),
    /// Directories named but none holds a recognised input.
    Empty { skipped: u64 },
}

impl fmt::Display for DiscoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoverError::Io(path, e) => write!(f, "{}: {e}", path.display()),
            DiscoverError::TooMany(path) => write!(
                f,
                "{}: more than {MAX_INPUTS} inputs; summarise each group of ranks on its own",
                path.display()
            ),
            DiscoverError::Empty { skipped } => write!(
                f,
                "no trace, snapshot or recording found in the directories named \
                 ({skipped} other files skipped)"
            ),
        }
    }
}

impl std::error::Error for DiscoverError {}

/// The inputs `paths` mean: a file is taken as given (it is read, and any problem with it
/// reported, like a single input); a directory is searched to [`MAX_DEPTH`] levels for
/// files an importer recognises, the others counted in [`Discovered::skipped`] (and
/// directories deeper than that in [`Discovered::too_deep`]). Symbolic
/// links to directories are not followed (no cycles); links to files are.
pub fn discover(paths: &[PathBuf]) -> Result<Discovered, DiscoverError> {
    let mut found = Discovered::default();
    let mut named_dirs = false;
    for path in paths {
        let meta = fs::metadata(path).map_err(|e| DiscoverError::Io(path.clone(), e))?;
        if meta.is_dir() {
            named_dirs = true;
            walk(path, 0, &mut found)?;
        } else {
            found.named.push(path.clone());
            push(&mut found, path.clone())?;
        }
    }
    if named_dirs && found.files.is_empty() {
        return Err(DiscoverError::Empty {
            skipped: found.skipped,
        });
    }
    Ok(found)
}

fn push(found: &mut Discovered, path: PathBuf) -> Result<(), DiscoverError> {
    if found.files.len() >= MAX_INPUTS {
        return Err(DiscoverError::TooMany(path));
    }
    found.files.push(path);
    Ok(())
}

/// Add the recognised files under `dir` (at `depth` below a named directory).
fn walk(dir: &Path, depth: usize, found: &mut Discovered) -> Result<(), DiscoverError> {
    if depth > MAX_DEPTH {
        let (n, _) = found.too_deep.get_or_insert_with(|| (0, dir.to_path_buf()));
        *n += 1;
        return Ok(());
    }
    let io = |e| DiscoverError::Io(dir.to_path_buf(), e);
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    for path in entries {
        let link = fs::symlink_metadata(&path).map_err(|e| DiscoverError::Io(path.clone(), e))?;
        if link.is_dir() {
            walk(&path, depth + 1, found)?;
            continue;
        }
        // A link to a directory, or a dangling link, is not an input.
        if !fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            found.skipped += 1;
            continue;
        }
        match format_of(&path).map_err(|e| DiscoverError::Io(path.clone(), e))? {
            Some(format) => {
                if format == super::SourceFormat::TorchMemoryTimeline {
                    found.memory_timelines.push(path.clone());
                }
                push(found, path)?;
            }
            None => found.skipped += 1,
        }
    }
    Ok(())
}

/// Whether an importer claims the file's first bytes (gzip read through).
pub fn recognised(path: &Path) -> io::Result<bool> {
    format_of(path).map(|f| f.is_some())
}

/// The format an importer claims the file's first bytes for (gzip read through), if any.
pub fn format_of(path: &Path) -> io::Result<Option<super::SourceFormat>> {
    let opened = input::open(path)?;
    Ok(importer::detect(&opened.head).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("vramscope-discover-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn directories_give_their_recognised_files_in_order_and_count_the_rest() {
        let dir = temp_dir("walk");
        fs::create_dir_all(dir.join("node1/deeper")).expect("dirs");
        fs::write(dir.join("b.json"), b"{\"traceEvents\":[]}").expect("write");
        fs::write(dir.join("a.txt"), b"hello").expect("write");
        fs::write(dir.join("node1/deeper/x.pickle"), b"\x80\x04\x95").expect("write");
        fs::write(dir.join("node1/empty"), b"").expect("write");
        let found = discover(std::slice::from_ref(&dir)).expect("discover");
        assert_eq!(
            found.files,
            vec![dir.join("b.json"), dir.join("node1/deeper/x.pickle")]
        );
        assert_eq!(found.skipped, 2);
        // A file named is taken as given, recognised or not.
        let named = discover(&[dir.join("a.txt")]).expect("discover");
        assert_eq!((named.files.len(), named.skipped), (1, 0));
        fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_directory_without_inputs_and_a_missing_path_are_errors() {
        let dir = temp_dir("empty");
        fs::write(dir.join("notes.txt"), b"nothing").expect("write");
        let err = discover(std::slice::from_ref(&dir)).expect_err("empty");
        assert!(err.to_string().contains("1 other files skipped"), "{err}");
        let missing = discover(&[dir.join("nope")]).expect_err("missing");
        assert!(missing.to_string().contains("nope"), "{missing}");
        fs::remove_dir_all(&dir).expect("clean up");
    }
}
