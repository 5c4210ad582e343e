//! What decided each allocation's category, and the one classification every consumer
//! reads (category, phase, evidence).

use super::{Category, Phase};

/// What decided an allocation's category, most certain first.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Evidence {
    /// The program said: storages tagged by `record --torch-memory`'s shim.
    Metadata,
    /// The block's allocation stack (allocator snapshots, recordings).
    Frames,
    /// The op and module scopes enclosing the event (profiler traces).
    Scopes,
    /// Sizes and lifetimes matched to what the run made: a block made before the capture
    /// that has a gradient's size is that weight.
    Matching,
    /// A guess the text states: blocks alive from before the capture to the end of a run
    /// with no gradients are taken as its weights.
    Inference,
    /// Nothing named it: what the events do not account for (`before_trace`, or `unknown`
    /// where the totals are rebuilt), and blocks the capture found and nothing identifies.
    Residual,
}

impl Evidence {
    /// Every kind of evidence, in the order reports list them.
    pub const ALL: [Evidence; 6] = [
        Evidence::Metadata,
        Evidence::Frames,
        Evidence::Scopes,
        Evidence::Matching,
        Evidence::Inference,
        Evidence::Residual,
    ];

    /// The stable name: `metadata`, `frames`, `scopes`, `matching`, `inference`, `residual`.
    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::Metadata => "metadata",
            Evidence::Frames => "frames",
            Evidence::Scopes => "scopes",
            Evidence::Matching => "matching",
            Evidence::Inference => "inference",
            Evidence::Residual => "residual",
        }
    }

    /// Whether the category was guessed from sizes and lifetimes rather than read from
    /// what the capture recorded: reports mark such bytes as inferred.
    pub fn is_inferred(self) -> bool {
        matches!(self, Evidence::Matching | Evidence::Inference)
    }
}

/// One allocation as the classifier sees it: what it held, the phase that made it, and
/// what decided. Every consumer (summary, `categories`, `live`, the advisor, the viewer,
/// Parquet) reads this, so none decides a phase or a category of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    /// Its category.
    pub category: Category,
    /// The phase of the iteration its allocation happened in.
    pub phase: Phase,
    /// What decided the category.
    pub evidence: Evidence,
}

impl Classified {
    /// An allocation nothing can be said of.
    pub(super) fn unknown() -> Classified {
        Classified {
            category: Category::Unknown,
            phase: Phase::Outside,
            evidence: Evidence::Residual,
        }
    }
}

/// Bytes per category and evidence: `[category][evidence]`.
pub type EvidenceBytes = [[i64; Evidence::ALL.len()]; Category::ALL.len()];
