//! The recorded process tree, from /proc: which processes descend from the child, and how
//! much host memory (RSS) they hold. Linux only; elsewhere the tree is just the child.

use std::collections::HashMap;
use std::fs;

/// `pid` and every process descending from it, now.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = parent_of(pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while let Some(&pid) = tree.get(i) {
        if let Some(kids) = children.get(&pid) {
            tree.extend(kids.iter().copied().filter(|k| *k != pid));
        }
        i += 1;
        if tree.len() > 1 << 20 {
            break;
        }
    }
    tree
}

/// The parent of `pid`, from /proc/PID/stat (the field after the parenthesised command,
/// which may itself contain spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Resident set size of one process in bytes (`VmRSS` of /proc/PID/status).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
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
    fn stat_parsing_survives_odd_names() {
        // Our own stat: the parent is the test harness's process.
        let ppid = parent_of(std::process::id()).expect("ppid");
        assert!(ppid > 0);
    }
}
