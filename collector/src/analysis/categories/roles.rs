//! What an op span says about the events it encloses ([`Role`]), worked out once a name.
//!
//! Every event's site asks the role of each span enclosing it — a few dozen on a trace
//! recorded `with_stack`, whose Python frames' names are parsed to answer — so the same few
//! thousand names were parsed millions of times: ~45 % of `categories` on the stack-heavy
//! benchmark shape (`perf`). The answer depends only on the name and the span's category;
//! it is kept per name id, for the category the name came with (a name seen with a second
//! category is answered without the memo). `summary` of a compact recording asks the same
//! memo which spans mark phases, over each of its millions of compressed spans.

use std::cell::RefCell;

use super::phase::{Role, role_of};
use crate::model::{OpCategory, Recording, StrId};

/// The roles of the recording's span names, as they are asked.
#[derive(Default)]
pub(crate) struct Roles {
    /// By name id: the category it was first asked with and its role then.
    by_name: RefCell<Vec<Option<(OpCategory, Role)>>>,
}

impl Roles {
    /// The role of a span of `category` named `name`.
    pub(super) fn of(&self, rec: &Recording, category: OpCategory, name: StrId) -> Role {
        let id = name.0 as usize;
        let mut by_name = self.by_name.borrow_mut();
        if by_name.len() <= id {
            by_name.resize(rec.strings.len().max(id + 1), None);
        }
        match by_name[id] {
            Some((c, role)) if c == category => role,
            Some(_) => role_of(rec, category, name),
            None => {
                let role = role_of(rec, category, name);
                by_name[id] = Some((category, role));
                role
            }
        }
    }

    /// Whether [`super::phase::Phases::build`] reads a span of `category` named `name`: an
    /// optimizer step's, a module's frame or autograd's entry frame (`summary` of a compact
    /// recording takes those spans whatever their time).
    pub(crate) fn marks_phases(&self, rec: &Recording, category: OpCategory, name: StrId) -> bool {
        self.of(rec, category, name).marks_phases()
    }
}
