//! # apidrift-diff
//!
//! The diff engine of apidrift (decisions D9, D10, D16): identity-keyed, severity-classified and
//! linear. A library with no I/O and no async runtime; the CLI (`apidrift diff`, `apidrift
//! validate`) and the check pipeline call it.
//!
//! ## Public API
//!
//! * [`diff`]`(baseline, current, &Options) -> Result<Report, DiffError>` compares two
//!   [`Input`]s: a response (status, headers, a JSON or non-JSON [`Body`]) or a bare JSON body
//!   ([`Input::bare`]), or a fetch that produced no response ([`Input::no_response`]).
//!   [`diff_bodies`] compares two bare bodies. The JSON tree is any [`JsonNode`]: implemented for
//!   `serde_json::Value` (for integrators) and for the crate's exact document [`Json`] (from
//!   [`parse()`], which keeps integers of any size and `1.0` vs `1` exact).
//! * [`Report`] holds the changes (model [`DiffChange`]; `id` = first
//!   16 hex digits of SHA-256 of `path + " " + type`, see [`change_id`]) in a deterministic order
//!   (status, tracked headers, then the body in document order) and their [`Counts`];
//!   [`Report::to_json`] writes the D16 JSON document with numbers exactly as the inputs spelled
//!   them.
//! * [`Options`] (`mode`, `ignore`, `tracked_headers`, `identity_keys`, `identity_rules`;
//!   [`Options::default`] has the D9 defaults, mode `schema`); [`IgnorePattern::parse`] validates
//!   `ignorePaths` entries and [`IdentityRule::parse`] `identityKeys` entries (pattern → key), both
//!   with a one-line [`PatternError`].
//! * Full mode covers schema mode (D20): after pairing, each outermost array's merged element
//!   shape is compared as schema mode does, and what the item-level changes do not already report
//!   (at the same normalised path or an ancestor, with at least the same severity) is reported at
//!   its `name[]` path.
//! * [`group_changes`] groups changes that share a normalised path ([`normalise_path`]) and a type,
//!   for people (the CLI's text, markdown and GitHub formats); the wire form stays one change per
//!   path.
//! * [`volatile_paths`] finds the leaf paths whose values differ between several samples of one
//!   response (D20 learned volatile fields).
//! * [`Shape`] ([`Shape::infer`], serde-serialisable) is the inferred shape of a body;
//!   [`Input::to_shape`] keeps a baseline as a shape and [`diff_shape`] diffs a current response
//!   against it in schema mode without the baseline body.
//! * [`contract::Contract`] (D10): built from an OpenAPI 3.0/3.1 document (JSON or YAML), an
//!   operation (`GET /users/{id}`) and a status; storable (the resolved schema is a
//!   `serde_json::Value`); [`contract::Contract::validator`] compiles it with `jsonschema` and
//!   [`contract::ContractValidator::check`] turns each violation into a `contract_violation`.
//! * [`read_document`] reads a D16 snapshot file or a bare JSON document.
//! * [`type_name`] / [`type_of`] classify a `serde_json::Value` as D9 spells types;
//!   [`is_json_media_type`] and [`media_type`] classify content types.
//! * [`Rule`] lists the severity rules with their stable ids (documented in `docs/severity.md`).
//!
//! Nesting is limited to [`MAX_DEPTH`] levels: deeper input is a [`DiffError::TooDeep`] (or a
//! [`ParseError`]), never a stack overflow. Arrays are paired through one hash map per array, object
//! members in lockstep or through a map, so time is linear in the size of the documents.

pub mod contract;
mod engine;
mod node;
mod number;
pub mod openapi;
mod parse;
mod path;
mod pattern;
mod report;
mod rules;
mod shape;
mod snapshot;
mod volatile;

pub use apidrift_model::{ChangeType, DiffChange, DiffMode, Severity};
pub use engine::{is_json_media_type, media_type};
pub use node::{Json, JsonNode, JsonType, Num, type_name, type_of};
pub use parse::{MAX_DEPTH, ParseError, parse};
pub use path::{NormalisedPath, normalise_path};
pub use pattern::{
    IdentityRule, IgnorePattern, PatternError, PatternKind, PatternSeg, parse_segments,
};
pub use report::{ChangeGroup, Counts, Report, change_id, group_changes};
pub use rules::Rule;
pub use shape::{Field, Shape, TypeCounts, TypeSet};
pub use snapshot::{InputError, SNAPSHOT_KEY, read_document};
pub use volatile::{VolatileError, volatile_paths};

/// Why a diff could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    #[error("the document nests deeper than {limit} levels")]
    TooDeep { limit: usize },
}

/// The identity-key candidates of D9, in order of preference.
pub const DEFAULT_IDENTITY_KEYS: &[&str] = &["id", "uuid", "key", "slug", "name", "code", "_id"];

/// The tracked headers of D9 (lower case).
pub const DEFAULT_TRACKED_HEADERS: &[&str] = &[
    "content-type",
    "deprecation",
    "sunset",
    "cache-control",
    "content-encoding",
    "etag",
    "x-ratelimit-limit",
];

/// How to compare. [`Options::default`] gives the D9 defaults (mode `schema`, as endpoints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub mode: DiffMode,
    /// Changes at or below a matching path are dropped.
    pub ignore: Vec<IgnorePattern>,
    /// Lower-case header names compared (content type by value, the others by presence).
    pub tracked_headers: Vec<String>,
    /// Identity-key candidates for arrays of objects, first that fits wins.
    pub identity_keys: Vec<String>,
    /// Identity rules (D20): at an array whose path matches a rule's pattern, the rule's key
    /// replaces `identity_keys` (the first matching rule wins).
    pub identity_rules: Vec<IdentityRule>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: DiffMode::Schema,
            ignore: Vec::new(),
            tracked_headers: DEFAULT_TRACKED_HEADERS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            identity_keys: DEFAULT_IDENTITY_KEYS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            identity_rules: Vec::new(),
        }
    }
}

impl Options {
    /// The defaults with another mode.
    pub fn with_mode(mode: DiffMode) -> Options {
        Options {
            mode,
            ..Options::default()
        }
    }
}

/// The SHA-256 of a non-JSON body (full mode compares bodies by digest, D9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TextBody {
    pub sha256: [u8; 32],
}

impl TextBody {
    /// The digest of a body.
    pub fn of(bytes: &[u8]) -> TextBody {
        let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(digest.as_ref());
        TextBody { sha256 }
    }

    /// The digest in lower-case hex.
    pub fn sha256_hex(&self) -> String {
        self.sha256.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A response body: JSON (any [`JsonNode`], or a stored [`Shape`]), non-JSON text (by digest),
/// or none.
#[derive(Debug, Clone, PartialEq)]
pub enum Body<B> {
    Json(B),
    Text(TextBody),
    Absent,
}

/// One side of a diff.
#[derive(Debug, Clone, PartialEq)]
pub struct Input<B> {
    /// The HTTP status; `None` for a bare body (then status is not compared).
    pub status: Option<u16>,
    /// The response headers; `None` for a bare body (then headers are not compared).
    pub headers: Option<Vec<(String, String)>>,
    pub body: Body<B>,
    /// Set when the fetch produced no response (DNS, connect, TLS, timeout, size): the cause.
    pub failure: Option<String>,
}

impl<B> Input<B> {
    /// A bare JSON body: status and headers are not compared.
    pub fn bare(body: B) -> Input<B> {
        Input {
            status: None,
            headers: None,
            body: Body::Json(body),
            failure: None,
        }
    }

    /// A response.
    pub fn response(status: u16, headers: Vec<(String, String)>, body: Body<B>) -> Input<B> {
        Input {
            status: Some(status),
            headers: Some(headers),
            body,
            failure: None,
        }
    }

    /// A fetch that produced no response, with its cause (D8).
    pub fn no_response(cause: impl Into<String>) -> Input<B> {
        Input {
            status: None,
            headers: None,
            body: Body::Absent,
            failure: Some(cause.into()),
        }
    }
}

impl<J: JsonNode> Input<J> {
    /// The same input with its JSON body replaced by its inferred shape (to store a baseline).
    pub fn to_shape(&self) -> Result<Input<Shape>, DiffError> {
        let body = match &self.body {
            Body::Json(j) => Body::Json(Shape::infer(j)?),
            Body::Text(t) => Body::Text(*t),
            Body::Absent => Body::Absent,
        };
        Ok(Input {
            status: self.status,
            headers: self.headers.clone(),
            body,
            failure: self.failure.clone(),
        })
    }
}

/// Compares a current input with a baseline (D9).
pub fn diff<J: JsonNode>(
    baseline: &Input<J>,
    current: &Input<J>,
    options: &Options,
) -> Result<Report, DiffError> {
    let mut em = report::Emitter::new(options);
    engine::compare_inputs(&mut em, baseline, current, options)?;
    Ok(em.finish())
}

/// Compares two bare JSON bodies.
pub fn diff_bodies<J: JsonNode>(
    baseline: &J,
    current: &J,
    options: &Options,
) -> Result<Report, DiffError> {
    let mut em = report::Emitter::new(options);
    engine::compare_bodies(&mut em, baseline, current, options)?;
    Ok(em.finish())
}

/// Compares a current input with a stored baseline shape, in schema mode whatever
/// `options.mode` says. Changes carry no old values (a shape keeps none) except `null`.
pub fn diff_shape<J: JsonNode>(
    baseline: &Input<Shape>,
    current: &Input<J>,
    options: &Options,
) -> Result<Report, DiffError> {
    let mut em = report::Emitter::new(options);
    engine::compare_with_shape(&mut em, baseline, current, options)?;
    Ok(em.finish())
}

#[cfg(test)]
mod tests;
