//! The techniques' rules, by family: each file holds the [`super::technique::Rule`]s of one
//! family (its reshaping, its buffers, its words), registered in
//! [`super::technique::REGISTRY`].

pub(super) mod batch;
pub(super) mod checkpoint;
pub(super) mod lora;
pub(super) mod loss;
pub(super) mod optimizer;
pub(super) mod parallel;
pub(super) mod pipeline;
pub(super) mod precision;
pub(super) mod zero;
