//! The icicle (flame graph) of what is live at an instant, by stack, as memray draws it:
//! the root is everything allocated then, its children the outermost frames, down to the
//! frame that allocated; allocations without a stack hang under "(no stack recorded)" by
//! the op that made them, and the bytes no allocation seen holds (allocated before the
//! trace…) are children of the root, named as `live` names them — so the root's children
//! sum to the allocated bytes at the instant.

use super::keys::op_of;
use crate::analysis::live::{GroupBy, frame_label, live_at};
use crate::model::{DeviceIdx, Recording};
use crate::timeline::Timeline;

/// One frame of the tree.
#[derive(Clone, Debug, PartialEq)]
pub struct FlameNode {
    /// Its frame ("file:line function"), op, or what a remainder is.
    pub name: String,
    /// Bytes live under it.
    pub bytes: i64,
    /// Live blocks under it.
    pub blocks: u64,
    /// Its parent (`None` for the root).
    pub parent: Option<u32>,
    /// Its children, largest first.
    pub children: Vec<u32>,
    /// Depth: 0 for the root.
    pub depth: u32,
}

/// The tree: node 0 is the root.
#[derive(Clone, Debug, PartialEq)]
pub struct FlameTree {
    /// The instant, ns on the recording's clock.
    pub time_ns: i64,
    /// The allocator's allocated bytes then (the root's bytes).
    pub allocated_bytes: i64,
    /// Nodes; `nodes[0]` is the root.
    pub nodes: Vec<FlameNode>,
}

impl FlameTree {
    /// The root.
    pub fn root(&self) -> Option<&FlameNode> {
        self.nodes.first()
    }

    /// The nodes from the root down to `id`, both included (the flame view's breadcrumb);
    /// empty for an id not in the tree.
    pub fn path_to(&self, id: u32) -> Vec<u32> {
        let mut path = Vec::new();
        let mut at = self.nodes.get(id as usize).map(|_| id);
        while let Some(n) = at {
            path.push(n);
            at = self.nodes.get(n as usize).and_then(|node| node.parent);
        }
        path.reverse();
        path
    }

    /// The deepest level.
    pub fn depth(&self) -> u32 {
        self.nodes.iter().map(|n| n.depth).max().unwrap_or(0)
    }

    fn child(&mut self, parent: u32, name: &str) -> u32 {
        let found = self.nodes.get(parent as usize).and_then(|p| {
            p.children
                .iter()
                .copied()
                .find(|&c| self.nodes.get(c as usize).is_some_and(|n| n.name == name))
        });
        if let Some(c) = found {
            return c;
        }
        let id = self.nodes.len() as u32;
        let depth = self.nodes.get(parent as usize).map_or(0, |p| p.depth + 1);
        self.nodes.push(FlameNode {
            name: name.to_owned(),
            bytes: 0,
            blocks: 0,
            parent: Some(parent),
            children: Vec::new(),
            depth,
        });
        if let Some(p) = self.nodes.get_mut(parent as usize) {
            p.children.push(id);
        }
        id
    }

    /// Add `bytes` (in `blocks`) along `path` from the root.
    fn add(&mut self, path: &[String], bytes: i64, blocks: u64) {
        let mut at = 0u32;
        if let Some(root) = self.nodes.get_mut(0) {
            root.bytes += bytes;
            root.blocks += blocks;
        }
        for name in path {
            at = self.child(at, name);
            if let Some(n) = self.nodes.get_mut(at as usize) {
                n.bytes += bytes;
                n.blocks += blocks;
            }
        }
    }
}

/// The icicle of what was live on `device` at `time_ns`.
pub fn flame_at(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    time_ns: i64,
) -> FlameTree {
    let mut tree = FlameTree {
        time_ns,
        allocated_bytes: 0,
        nodes: vec![FlameNode {
            name: "all live memory".to_owned(),
            bytes: 0,
            blocks: 0,
            parent: None,
            children: Vec::new(),
            depth: 0,
        }],
    };
    let Some(d) = timeline.devices.get(device as usize) else {
        return tree;
    };
    let mut paths: rustc_hash::FxHashMap<u32, Vec<String>> = Default::default();
    for (i, a) in d.allocations.iter().enumerate() {
        if !(a.alloc_ns <= time_ns && a.free_ns.get().is_none_or(|f| f > time_ns)) {
            continue;
        }
        let stack = rec
            .mem_events
            .get(a.alloc_event as usize)
            .and_then(|e| e.stack);
        let path = match stack.filter(|s| !rec.stack(Some(*s)).is_empty()) {
            Some(s) => paths
                .entry(s.index())
                .or_insert_with(|| outermost_first(rec, s))
                .clone(),
            None => vec!["(no stack recorded)".to_owned(), op_of(rec, timeline, d, i)],
        };
        tree.add(&path, a.bytes, 1);
    }
    let live = live_at(rec, timeline, device, time_ns, GroupBy::Op);
    for g in live.groups.iter().filter(|g| !g.kind.is_seen()) {
        tree.add(std::slice::from_ref(&g.site), g.bytes, 0);
    }
    tree.allocated_bytes = live.allocated_bytes.unwrap_or(0);
    sort_children(&mut tree);
    tree
}

/// A stack's frames from the outermost in (C++ frames without symbols dropped, unless the
/// stack has nothing else).
fn outermost_first(rec: &Recording, s: crate::model::StackId) -> Vec<String> {
    let frames = rec.stack(Some(s));
    let useful: Vec<String> = frames
        .iter()
        .filter(|f| {
            let file = rec.strings.get(f.file);
            file != "??" && !file.is_empty()
        })
        .rev()
        .map(|f| frame_label(rec, f))
        .collect();
    if useful.is_empty() {
        frames.iter().rev().map(|f| frame_label(rec, f)).collect()
    } else {
        useful
    }
}

fn sort_children(tree: &mut FlameTree) {
    let bytes: Vec<i64> = tree.nodes.iter().map(|n| n.bytes).collect();
    for n in &mut tree.nodes {
        n.children
            .sort_by_key(|&c| std::cmp::Reverse(bytes.get(c as usize).copied().unwrap_or(0)));
    }
}
