//! The recorded process tree, from /proc: which processes descend from the child, and how
//! much host memory they hold (RSS, and PSS: see [`super::pss`]). Linux only; elsewhere the
//! tree is just the child.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::time::{Duration, Instant};

/// How often the whole tree is rebuilt from every process's parent. Between rebuilds each
/// sample lists /proc (about 1 µs an entry) and reads the `stat` of only the pids it has not
/// placed yet (about 10 µs each), so a process that lives one sampling interval is seen at
/// a sample, at a cost that grows with the processes started, not with the machine's
/// process count. The rebuild catches what the listing cannot: a pid that exited and was
/// reused by a new process between two samples.
pub const TREE_REBUILD: Duration = Duration::from_secs(1);
/// Longest parent chain followed from an unplaced pid.
const MAX_ANCESTRY: usize = 64;
/// Most processes the tree holds: a fork bomb under `record` must not grow vramscope's own
/// memory without bound (each member costs a few bytes here and a /proc read per sample).
const MAX_MEMBERS: usize = 1 << 16;

/// The recorded process and its descendants, kept up to date cheaply (see [`TREE_REBUILD`]).
pub struct ProcessTree {
    root: u32,
    /// Sorted members, the root included.
    members: Vec<u32>,
    /// Pids known not to descend from the root (forgotten once they leave /proc, and at
    /// every rebuild: pids are reused).
    foreign: HashSet<u32>,
    rebuilt_at: Option<Instant>,
    /// The last pid the kernel handed out when /proc was last listed (`/proc/loadavg`):
    /// while it stays the same no process was created, and the listing is skipped.
    last_pid: Option<u32>,
    /// Every pid that was ever a member (for the end of run: how many processes were seen).
    seen: HashSet<u32>,
}

impl ProcessTree {
    /// The tree of `root`, not yet walked.
    pub fn new(root: u32) -> ProcessTree {
        ProcessTree {
            root,
            members: vec![root],
            foreign: HashSet::new(),
            rebuilt_at: None,
            last_pid: None,
            seen: HashSet::from([root]),
        }
    }

    /// Bring the members up to date: a rebuild if the last one is older than
    /// [`TREE_REBUILD`], else place the pids that appeared since the last call.
    pub fn refresh(&mut self) {
        let last_pid = last_pid();
        if self.rebuilt_at.is_none_or(|t| t.elapsed() >= TREE_REBUILD) {
            self.members = process_tree(self.root);
            self.members.sort_unstable();
            self.members.dedup();
            self.members.truncate(MAX_MEMBERS);
            self.foreign.clear();
            self.rebuilt_at = Some(Instant::now());
        } else if last_pid.is_none() || last_pid != self.last_pid {
            let listed = listed_pids();
            self.foreign.retain(|p| listed.binary_search(p).is_ok());
            for pid in listed {
                self.contains(pid);
            }
        }
        self.last_pid = last_pid;
        if self.seen.len() < MAX_MEMBERS {
            self.seen.extend(self.members.iter().copied());
        }
    }

    /// How many distinct processes have been members so far, the root included.
    pub fn processes_seen(&self) -> usize {
        self.seen.len()
    }

    /// The members now (the root, and every descendant seen).
    pub fn pids(&self) -> &[u32] {
        &self.members
    }

    /// Whether `pid` descends from the root (or is it). A pid not seen at the last walk is
    /// placed by following its parents up to a member, the root, or init.
    pub fn contains(&mut self, pid: u32) -> bool {
        if self.members.binary_search(&pid).is_ok() {
            return true;
        }
        if self.foreign.contains(&pid) {
            return false;
        }
        let mut chain = vec![pid];
        let mut p = pid;
        for _ in 0..MAX_ANCESTRY {
            match parent_of(p) {
                Some(parent) if self.members.binary_search(&parent).is_ok() => {
                    for q in chain {
                        if self.members.len() >= MAX_MEMBERS {
                            break;
                        }
                        if let Err(at) = self.members.binary_search(&q) {
                            self.members.insert(at, q);
                        }
                    }
                    return true;
                }
                Some(parent) if self.foreign.contains(&parent) => break,
                Some(parent) if parent > 1 && parent != p => {
                    chain.push(parent);
                    p = parent;
                }
                _ => break,
            }
        }
        self.foreign.insert(pid);
        false
    }

    /// Total RSS of the members; those that exited are dropped (the root is kept).
    pub fn rss_bytes(&mut self) -> u64 {
        let mut total = 0;
        let root = self.root;
        self.members.retain(|&p| match rss_bytes(p) {
            Some(r) => {
                total += r;
                true
            }
            None => p == root,
        });
        total
    }
}

/// `pid` and every process descending from it, now.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for pid in listed_pids() {
        if let Some(ppid) = parent_of(pid) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while let Some(&pid) = tree.get(i) {
        if let Some(kids) = children.get(&pid) {
            tree.extend(kids.iter().copied().filter(|k| *k != pid));
        }
        i += 1;
        if tree.len() > MAX_MEMBERS {
            break;
        }
    }
    tree
}

/// The most recently created pid, system-wide (the last field of /proc/loadavg): one small
/// read (~20 µs) that tells whether listing /proc (~70 µs for 80 processes, more on a busy
/// machine) can find anything new.
fn last_pid() -> Option<u32> {
    read_proc("/proc/loadavg")?
        .split_whitespace()
        .nth(4)?
        .parse()
        .ok()
}

/// The pids in /proc now, sorted.
fn listed_pids() -> Vec<u32> {
    let mut pids: Vec<u32> = fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

/// Room for a /proc file in one read. `fs::read_to_string` asks the file's size (0 for /proc),
/// then reads 32 bytes and doubles: 8 `read` calls, each regenerating text in the kernel,
/// plus a `statx` and an `lseek`, for a `status` file that one 4 KiB read returns whole.
const PROC_READ_BYTES: usize = 4096;

/// A small /proc file, read whole in as few calls as possible.
pub(super) fn read_proc(path: &str) -> Option<String> {
    use std::io::Read;
    let mut f = fs::File::open(path).ok()?;
    let mut buf = vec![0u8; PROC_READ_BYTES];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).ok()
}

/// The parent of `pid`, from /proc/PID/stat (the field after the parenthesised command,
/// which may itself contain spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = read_proc(&format!("/proc/{pid}/stat"))?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Resident set size of one process in bytes (`VmRSS` of /proc/PID/status).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = read_proc(&format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Total RSS of a set of processes (those that exited meanwhile count as 0).
pub fn tree_rss_bytes(pids: &[u32]) -> u64 {
    pids.iter().filter_map(|&p| rss_bytes(p)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn finds_children_and_their_memory() {
        // A shell that starts a sleeping grandchild.
        let mut child = Command::new("sh")
            .args(["-c", "sleep 5 & wait"])
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn sh");
        let root = child.id();
        let mut tree = Vec::new();
        for _ in 0..100 {
            tree = process_tree(root);
            if tree.len() >= 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tree[0], root);
        assert!(
            tree.len() >= 2,
            "the sleeping grandchild is in the tree: {tree:?}"
        );
        let own = rss_bytes(std::process::id()).expect("own RSS");
        assert!(own > 1 << 20, "a test process holds more than 1 MiB: {own}");
        assert_eq!(tree_rss_bytes(&[u32::MAX]), 0);
    }

    #[test]
    fn new_descendants_are_placed_by_their_parents_between_walks() {
        let mut tree = ProcessTree::new(std::process::id());
        tree.refresh();
        // Started after the walk: not a member until asked about.
        let mut child = Command::new("sleep")
            .arg("5")
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn sleep");
        let pid = child.id();
        assert!(!tree.pids().contains(&pid));
        let found = tree.contains(pid);
        let init_is_foreign = !tree.contains(1);
        let rss = tree.rss_bytes();
        let _ = child.kill();
        let _ = child.wait();
        assert!(found, "a child of the root is in the tree");
        assert!(tree.pids().contains(&pid));
        assert!(
            init_is_foreign,
            "pid 1 does not descend from the test process"
        );
        assert!(rss > own_rss_floor(), "{rss}");
        // The exited child leaves the tree at the next RSS read.
        tree.rss_bytes();
        assert!(!tree.pids().contains(&pid));
    }

    fn own_rss_floor() -> u64 {
        1 << 20
    }

    #[test]
    fn stat_parsing_survives_odd_names() {
        // Our own stat: the parent is the test harness's process.
        let ppid = parent_of(std::process::id()).expect("ppid");
        assert!(ppid > 0);
    }
}
