//! Categories known, not inferred: the storages `record --torch-memory`'s shim tagged in the
//! program (parameters, their gradients, optimizer state, by data pointer and the time it
//! saw them alive). An allocation whose address range holds a tagged storage seen while the
//! allocation was live takes the tag's category; the rules only name the rest.

use super::Category;
use crate::model::{DeviceIdx, Recording, StorageTag, TensorRole};
use crate::timeline::Allocation;

/// The recording's storage tags, sorted by (device, address, time seen) for range lookups.
pub(super) struct TagIndex {
    tags: Vec<StorageTag>,
}

impl TagIndex {
    /// Sort the recording's tags once: O(tags log tags); empty for every source but a
    /// `--torch-memory` recording.
    pub fn build(rec: &Recording) -> TagIndex {
        let mut tags = rec.storage_tags.clone();
        tags.sort_unstable_by_key(|t| (t.device, t.addr, t.since_ns, t.role));
        TagIndex { tags }
    }

    /// The category of allocation `a` of `device` if a tagged storage lies inside it
    /// (`a.addr ≤ tag.addr` and `tag.addr + tag.bytes ≤ a.addr + a.bytes`) and was seen
    /// while it was live (`a.alloc_ns ≤ since_ns`, before `a.free_ns.get()`). Where tags of
    /// several roles qualify (never, for tensors torch keeps apart) the first of parameter,
    /// optimizer state, gradient wins. O(log tags + tags at the block's addresses).
    pub fn category(&self, device: DeviceIdx, a: &Allocation) -> Option<Category> {
        if self.tags.is_empty() {
            return None;
        }
        let (lo, Some(hi)) = (a.addr, a.addr.checked_add(u64::try_from(a.bytes).ok()?)) else {
            return None;
        };
        let first = self
            .tags
            .partition_point(|t| (t.device, t.addr) < (device, lo));
        self.tags
            .get(first..)?
            .iter()
            .take_while(|t| t.device == device && t.addr < hi)
            .filter(|t| t.addr.checked_add(t.bytes).is_some_and(|end| end <= hi))
            .filter(|t| t.since_ns >= a.alloc_ns && a.free_ns.get().is_none_or(|f| t.since_ns < f))
            .map(|t| category_of(t.role))
            .min()
    }
}

/// A role's category.
fn category_of(role: TensorRole) -> Category {
    match role {
        TensorRole::Parameter => Category::Parameter,
        TensorRole::Gradient => Category::Gradient,
        TensorRole::OptimizerState => Category::OptimizerState,
        TensorRole::Input => Category::Input,
        TensorRole::Temporary => Category::Temporary,
        TensorRole::Activation => Category::Activation,
        TensorRole::AutogradDetail => Category::AutogradDetail,
        TensorRole::Unknown => Category::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SourceFormat;

    fn block(addr: u64, bytes: i64, alloc_ns: i64, free_ns: Option<i64>) -> Allocation {
        Allocation {
            addr,
            bytes,
            alloc_ns,
            free_ns: free_ns.into(),
            alloc_event: 0,
            thread: 0,
        }
    }

    #[test]
    fn a_tag_names_the_block_that_held_it_when_seen() {
        let mut rec = Recording::empty(SourceFormat::VramscopeRecording, "");
        let tag = |addr, bytes, role, since_ns| StorageTag {
            device: 0,
            addr,
            bytes,
            role,
            since_ns,
        };
        rec.storage_tags = vec![
            // A gradient seen at 150 in the block at 0x1000 (1,000 bytes in 1,024).
            tag(0x1000, 1000, TensorRole::Gradient, 150),
            // Optimizer state at an offset inside a larger block.
            tag(0x2200, 512, TensorRole::OptimizerState, 300),
        ];
        let index = TagIndex::build(&rec);
        let gradient = Some(Category::Gradient);
        assert_eq!(
            index.category(0, &block(0x1000, 1024, 100, Some(200))),
            gradient
        );
        // The same address before and after: other blocks, not named by the tag.
        assert_eq!(index.category(0, &block(0x1000, 1024, 10, Some(150))), None);
        assert_eq!(index.category(0, &block(0x1000, 1024, 151, None)), None);
        // Another device, a block too small to hold the storage.
        assert_eq!(
            index.category(1, &block(0x1000, 1024, 100, Some(200))),
            None
        );
        assert_eq!(index.category(0, &block(0x1000, 512, 100, Some(200))), None);
        assert_eq!(
            index.category(0, &block(0x2000, 4096, 0, None)),
            Some(Category::OptimizerState)
        );
        assert_eq!(index.category(0, &block(0x2400, 4096, 0, None)), None);
    }
}
