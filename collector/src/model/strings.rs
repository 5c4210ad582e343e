//! Interned strings: op names repeat millions of times in a trace, so each is stored once.

use rustc_hash::FxHashMap;

/// Handle to an interned string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub u32);

/// An append-only string interner.
#[derive(Clone, Debug, Default)]
pub struct StringTable {
    strings: Vec<Box<str>>,
    index: FxHashMap<Box<str>, StrId>,
}

impl StringTable {
    /// The id of `s`, adding it if new.
    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = StrId(self.strings.len() as u32);
        self.strings.push(s.into());
        self.index.insert(s.into(), id);
        id
    }

    /// The id of `s` if it was interned.
    pub fn find(&self, s: &str) -> Option<StrId> {
        self.index.get(s).copied()
    }

    /// The string behind `id` (empty for an id from another table).
    pub fn get(&self, id: StrId) -> &str {
        self.strings.get(id.0 as usize).map_or("", |s| s)
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// Whether nothing was interned.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable() {
        let mut t = StringTable::default();
        let a = t.intern("aten::mm");
        let b = t.intern("aten::add");
        assert_eq!(t.intern("aten::mm"), a);
        assert_ne!(a, b);
        assert_eq!(t.get(b), "aten::add");
        assert_eq!(t.find("aten::add"), Some(b));
        assert_eq!(t.find("nope"), None);
        assert_eq!(t.len(), 2);
    }
}
