//! vramscope's library: read GPU memory traces into one neutral model and analyse them.
//!
//! Data flows one way: a source file → [`parse::load`] → [`model::Recording`] →
//! [`timeline::Timeline`] (built once) → [`analysis`] → reports and views. The CLI and
//! the viewer read the same model, so they can never disagree.

pub mod analysis;
pub mod model;
pub mod parse;
pub mod redact;
pub mod sampler;
#[cfg(test)]
mod test_rng;
mod threads;
pub mod timeline;
pub mod units;

pub use model::Recording;
pub use parse::{LoadError, LoadOptions, LoadProgress, load, load_watched};
pub use timeline::Timeline;
