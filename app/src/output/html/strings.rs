//! The page's one table of strings: every op name, frame, category and formatted number
//! is stored once and named by its index, so a stack shared by ten thousand allocations
//! or a `1.00 Mb` in every row costs its bytes once.

use std::collections::HashMap;

use serde::Serialize;

/// Strings by first use; serialized as the list.
#[derive(Debug, Default)]
pub struct Strings {
    ids: HashMap<String, u32>,
    list: Vec<String>,
}

impl Strings {
    /// The index of `text`, added on first use.
    pub fn id(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let id = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        self.ids.insert(text.to_owned(), id);
        self.list.push(text.to_owned());
        id
    }

    /// The indices of `texts`.
    pub fn ids<'a>(&mut self, texts: impl IntoIterator<Item = &'a str>) -> Vec<u32> {
        texts.into_iter().map(|t| self.id(t)).collect()
    }
}

impl Serialize for Strings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.list.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::Strings;

    #[test]
    fn a_string_is_stored_once() {
        let mut s = Strings::default();
        assert_eq!(s.ids(["a", "b", "a"]), vec![0, 1, 0]);
        assert_eq!(
            serde_json::to_string(&s).ok().as_deref(),
            Some(r#"["a","b"]"#)
        );
    }
}
