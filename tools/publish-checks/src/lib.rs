//! Checks of the two crates apidrift publishes, `apidrift-model` and `apidrift-diff`, that belong
//! to neither of them:
//!
//! * the public-API snapshot ([`public_api`], test `tests/public_api.rs`): the public items of each
//!   crate, read from rustdoc's JSON output, as a sorted listing committed next to the crate
//!   (`crates/model/public-api.txt`, `crates/diff/public-api.txt`), so that an accidental change
//!   to the surface is a visible diff in review;
//! * the examples of both crates' `README.md`, which run as doctests of this crate
//!   (`cargo test --doc -p apidrift-publish-checks`), so the first thing a stranger copies compiles.

pub mod public_api;

/// The examples of `crates/model/README.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../crates/model/README.md")]
pub struct ModelReadme;

/// The examples of `crates/diff/README.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../crates/diff/README.md")]
pub struct DiffReadme;
