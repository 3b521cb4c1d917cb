//! # apidrift-diff
//!
//! The diff engine of apidrift, a self-hostable API drift monitor, as a library. Give it a
//! baseline response and a current one; it gives back the list of changes between them, each
//! with a stable id, a path (`$.users[id=42].email`), a kind (`removed`, `type_changed`, …) and a
//! severity (info, warning or breaking), decided by one of the documented rules below.
//!
//! Arrays of objects are paired by an identity key (`id`, `uuid`, …, or a key you name), so a
//! reordered list is not a change. Time is linear in the size of the documents and nesting is
//! bounded, so any input gives an answer or an error, never a stack overflow. The crate does no
//! I/O and needs no async runtime. The changes are the wire types of `apidrift-model`
//! ([`DiffChange`], [`ChangeType`], [`Severity`]), re-exported here, so a report reads exactly like
//! a diff from the apidrift service.
//!
//! ## Example
//!
//! ```
//! use apidrift_diff::{DiffMode, Options, Severity, diff_bodies};
//! let before = serde_json::json!({"id": 1, "email": "a@example.com"});
//! let after = serde_json::json!({"id": "1"});
//! let report = diff_bodies(&before, &after, &Options::with_mode(DiffMode::Full))?;
//! for c in &report.changes {
//!     println!("{} {} {}: {}", c.severity, c.change_type, c.path, c.message);
//! }
//! assert_eq!(report.max_severity(), Some(Severity::Breaking)); // `email` removed, `id` retyped
//! # Ok::<(), apidrift_diff::DiffError>(())
//! ```
//!
//! A whole response (status and headers too) is an [`Input::response`]; a document read from a
//! file is parsed by [`parse`] or [`read_document`]. `examples/embed.rs` in the repository is a
//! complete program: it diffs two files in full mode with an ignore pattern and an identity rule
//! and exits 1 on a breaking change.
//!
//! ## How documents are compared
//!
//! * **Modes** ([`DiffMode`]). `Schema` (the default) compares the shape of the documents: types,
//!   presence and nullability, with every array's elements merged into one element shape; leaf
//!   values are ignored. `Full` compares leaf values too, pairs array items by identity key or
//!   else by position, and then also reports what schema mode would find in the merged element
//!   shapes, unless an item-level change already says it with at least the same severity.
//! * **Paths**. Body paths start at `$`: `$.data.users[id=42].email`, `$["key with.dots"]`, `$[0]`
//!   (an item paired by position), `$.users[].email` (the merged elements). The status is
//!   `status`; a header is `headers.<lower-case-name>`.
//! * **Ids**. A change's id is the first 16 hex digits of the SHA-256 of `path + " " + type`
//!   ([`change_id`]), so the same drift keeps the same id from one diff to the next.
//! * **Ignore patterns** ([`IgnorePattern`]): `$.meta.requestId`, `$.items[].updatedAt` (`[]`
//!   matches any item), `$..traceId` (at any depth), `$.items[id=42]`, `status`, `headers.etag`.
//!   A pattern drops the changes at the path it matches and below it.
//! * **Identity keys**. An array of objects is paired by the first of [`DEFAULT_IDENTITY_KEYS`]
//!   that every item of both arrays has, with a string or number value unique within each array.
//!   An [`IdentityRule`] (`$.commits=sha`) names the key of the arrays its pattern matches; the
//!   key `.` (`$.tags=.`) pairs an array of scalars by value, as a multiset, in both modes, so
//!   only a value added or removed is a change (`$.tags[.=beta]`).
//! * **Severity overrides** ([`OverrideRule`]): `field-added=breaking`,
//!   `value-changed=$.meta=ignore`. Each change is graded by the first override of its rule whose
//!   path matches (an ignore pattern; none matches every path), or dropped by `ignore`; the
//!   counts follow. The wire form is the model's [`SeverityOverride`].
//! * **Tracked headers** ([`DEFAULT_TRACKED_HEADERS`]): the content type is compared by value
//!   (its media type), the others by presence.
//!
//! ## Severity rules
//!
//! Every change comes from exactly one [`Rule`]; a rule's id is stable. In the "when" column,
//! "merged" means the merged elements of an array (schema mode, and full mode's second look).
//!
//! | rule id | type | severity | when |
//! |---|---|---|---|
//! | `field-removed` | `removed` | breaking | an object member is gone (merged: it was in every item and is in none) |
//! | `field-removed-from-some` | `removed` | warning | merged: a member every item had is missing from some |
//! | `optional-field-removed` | `removed` | warning | merged: a member only some items had is gone from all |
//! | `field-added` | `added` | info | an object member appears (merged: in every item) |
//! | `field-added-in-some` | `added` | info | merged: a member no item had appears in some |
//! | `type-changed` | `type_changed` | breaking | the JSON type changed (string, number, integer, boolean, object, array) |
//! | `integer-to-number` | `type_changed` | warning | an integer becomes a number with a fraction |
//! | `number-to-integer` | `type_changed` | info | a number becomes an integer |
//! | `became-null` | `nullability_changed` | breaking | a value becomes `null` |
//! | `became-non-null` | `nullability_changed` | info | a `null` becomes a value |
//! | `value-changed` | `changed` | info | full mode: a leaf value changed within its type (`1.0` equals `1.00`) |
//! | `keyed-item-removed` | `removed` | warning | full mode: an item paired by identity key is gone (key `.`, either mode: a value is held fewer times) |
//! | `keyed-item-added` | `added` | info | full mode: an item paired by identity key is new (key `.`, either mode: a value is held more times) |
//! | `element-removed` | `removed` | warning | full mode, items paired by position: the array is shorter |
//! | `element-added` | `added` | info | full mode, items paired by position: the array is longer |
//! | `text-body-changed` | `changed` | info | full mode: a non-JSON body's SHA-256 differs |
//! | `status-left-2xx` | `status_changed` | breaking | the status was 2xx and is not now |
//! | `no-response` | `status_changed` | breaking | the fetch produced no response ([`Input::no_response`]) |
//! | `status-changed` | `status_changed` | warning | any other status change |
//! | `content-type-not-json` | `header_changed` | breaking | the content type was JSON and is not (or is gone) |
//! | `content-type-changed` | `header_changed` | warning | any other content-type change (parameters ignored) |
//! | `deprecation-appeared` | `header_changed` | warning | a `Deprecation` or `Sunset` header appears |
//! | `deprecation-disappeared` | `header_changed` | info | a `Deprecation` or `Sunset` header disappears |
//! | `header-presence` | `header_changed` | info | another tracked header appears or disappears |
//! | `contract-violation` | `contract_violation` | breaking | the body violates its OpenAPI response schema ([`contract`]) |
//!
//! One path gets one change: a type or nullability change is never also reported as `changed`,
//! and the children of a retyped object are not listed. `docs/severity.md` in the repository
//! gives an example of each rule.
//!
//! ## Feature flags
//!
//! None. Everything, OpenAPI contracts included, is always compiled in.
//!
//! ## What is here
//!
//! * **Diffing.** [`diff`] compares two [`Input`]s, [`diff_bodies`] two bare JSON bodies, and
//!   [`diff_shape`] a current input with a stored baseline [`Shape`]. Each returns a [`Report`] or
//!   a [`DiffError`].
//! * **Inputs.** An [`Input`] is a response ([`Input::response`]: status, headers and a [`Body`]),
//!   a bare JSON body ([`Input::bare`]: status and headers are not compared) or a fetch that
//!   failed ([`Input::no_response`]). A non-JSON body is compared by its digest ([`TextBody`]).
//! * **JSON trees.** The engine walks any [`JsonNode`]: a `serde_json::Value`, or the crate's
//!   own exact document [`Json`], which [`parse`] reads from text keeping integers of any size and
//!   `1.0` versus `1` exactly ([`ParseError`] says where a text is not JSON). [`read_document`]
//!   also understands the snapshot files of the `apidrift` command line ([`SNAPSHOT_KEY`],
//!   [`InputError`]). [`JsonType`], [`type_of`] and [`type_name`] name JSON types the way the
//!   changes do; [`Num`] is a number as a tree holds it.
//! * **Options.** [`Options`] holds the mode, the ignore patterns ([`IgnorePattern`]), the tracked
//!   headers, the identity keys and rules ([`IdentityRule`]) and the severity overrides
//!   ([`OverrideRule`], [`OverrideSeverity`]); a pattern, rule or override that cannot be used is
//!   a [`PatternError`] (see [`PatternKind`], [`PatternSeg`]).
//! * **Reports.** A [`Report`] holds the changes in a fixed order (status, tracked headers, then
//!   the body in document order) and their [`Counts`]; [`Report::to_json`] writes it as JSON with
//!   numbers exactly as the documents spelled them. [`group_changes`] gathers the changes of many
//!   items of one array into [`ChangeGroup`]s for people, using [`normalise_path`]
//!   ([`NormalisedPath`]).
//! * **Shapes.** [`Shape::infer`] gives the inferred shape of a body ([`TypeCounts`],
//!   [`TypeSet`], [`Field`]); it is serialisable, so [`Input::to_shape`] can keep a baseline
//!   without its body.
//! * **Volatile fields.** [`volatile_paths`] finds the values that change between samples of one
//!   response taken moments apart (timestamps, request ids), to propose as ignore patterns
//!   ([`VolatileError`]).
//! * **Contracts.** [`contract`] builds a response contract from an OpenAPI 3.0, 3.1 or 3.2 document
//!   and reports each violation of it as a breaking `contract_violation` change.
//! * **Media types.** [`is_json_media_type`] and [`media_type`] read `Content-Type` values.
//!
//! Nesting is limited to [`MAX_DEPTH`] levels: deeper input is a [`DiffError::TooDeep`] (or a
//! [`ParseError`]), never a stack overflow.
//!
//! ## Stability
//!
//! Until 1.0, a breaking change bumps the minor version (0.1 → 0.2); `CHANGELOG.md` lists every
//! change. Types that will grow are `#[non_exhaustive]`, so that growing them is not a breaking
//! change: a `match` on one of these enums needs a `_` arm, and these structs cannot be built
//! with a struct literal.
//!
//! * Enums: [`ChangeType`], [`Severity`], [`Rule`], [`Body`], [`Num`], [`PatternSeg`] and
//!   [`PatternKind`].
//! * Every error type: [`DiffError`], [`ParseError`], [`InputError`], [`PatternError`],
//!   [`VolatileError`], [`contract::ContractError`].
//! * Structs: [`Options`], [`Input`], [`Counts`], [`Field`], [`ChangeGroup`], [`NormalisedPath`]
//!   and the contract module's `Operation` and `SuccessResponse`. Their fields stay public to
//!   read and to assign. [`Options`] is built from [`Options::default`] or [`Options::with_mode`]
//!   and its `with_*` methods (or by assigning fields), not with `Options { .. }`: the options
//!   grow whenever the engine learns something new to be told, and that should not break
//!   callers. [`Input`] is built with its three constructors.
//! * [`JsonNode`] is sealed: it is implemented for `serde_json::Value` and [`Json`] only, so that
//!   the engine can ask more of a tree without breaking anyone.
//! * Closed on purpose: [`JsonType`] and [`Json`] follow JSON itself; [`TextBody`] is a digest;
//!   [`contract::Contract`] is the stored form of a contract, which a caller rebuilds from its
//!   own storage with a struct literal.

#![deny(missing_docs)]

pub mod contract;
mod contract_data;
mod engine;
mod node;
mod normalise;
mod number;
mod openapi;
mod overrides;
mod parse;
mod path;
mod pattern;
mod report;
mod rules;
mod shape;
mod snapshot;
mod volatile;
mod yaml_guard;

pub use apidrift_model::{
    ChangeType, DiffChange, DiffMode, OverrideSeverity, Severity, SeverityOverride,
};
pub use engine::{is_json_media_type, media_type};
pub use node::{Json, JsonNode, JsonType, Num, type_name, type_of};
pub use normalise::{NormalisedPath, normalise_path};
pub use overrides::OverrideRule;
pub use parse::{MAX_DEPTH, ParseError, parse};
pub use pattern::{IdentityRule, IgnorePattern, PatternError, PatternKind, PatternSeg};
pub use report::{ChangeGroup, Counts, Report, change_id, group_changes};
pub use rules::Rule;
pub use shape::{Field, Shape, TypeCounts, TypeSet};
pub use snapshot::{InputError, SNAPSHOT_KEY, read_document};
pub use volatile::{VolatileError, volatile_paths};

/// Why a diff could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    /// A document nests arrays and objects deeper than [`MAX_DEPTH`] levels.
    #[error("the document nests deeper than {limit} levels")]
    TooDeep {
        /// The limit that was passed ([`MAX_DEPTH`]).
        limit: usize,
    },
}

/// The identity-key candidates tried on an array of objects, in order of preference: the first
/// that every item of both arrays has, with a string or number value unique within each array,
/// pairs the items.
pub const DEFAULT_IDENTITY_KEYS: &[&str] = &["id", "uuid", "key", "slug", "name", "code", "_id"];

/// The response headers compared by default (lower case): `content-type` by its media type, the
/// others by presence.
pub const DEFAULT_TRACKED_HEADERS: &[&str] = &[
    "content-type",
    "deprecation",
    "sunset",
    "cache-control",
    "content-encoding",
    "etag",
    "x-ratelimit-limit",
];

/// How to compare: the mode, what to ignore, which headers to compare and how to pair array items.
///
/// [`Options::default`] is schema mode, no ignore patterns, [`DEFAULT_TRACKED_HEADERS`],
/// [`DEFAULT_IDENTITY_KEYS`] and no identity rules. The struct is `#[non_exhaustive]`: build it
/// with [`Options::default`] or [`Options::with_mode`] and the `with_*` methods, or assign its
/// fields.
///
/// ```
/// use apidrift_diff::{DiffMode, IdentityRule, IgnorePattern, Options};
/// let options = Options::with_mode(DiffMode::Full)
///     .with_ignore(IgnorePattern::parse("$.meta.requestId")?)
///     .with_identity_rule(IdentityRule::parse("$.commits", "sha")?);
/// assert_eq!(options.ignore.len(), 1);
/// # Ok::<(), apidrift_diff::PatternError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// `Schema` compares types, presence and nullability; `Full` compares leaf values too and
    /// pairs array items.
    pub mode: DiffMode,
    /// Changes at or below a matching path are dropped.
    pub ignore: Vec<IgnorePattern>,
    /// Lower-case header names compared (content type by value, the others by presence).
    pub tracked_headers: Vec<String>,
    /// Identity-key candidates for arrays of objects, first that fits wins.
    pub identity_keys: Vec<String>,
    /// Identity rules: at an array whose path matches a rule's pattern, the rule's key replaces
    /// `identity_keys` (the first matching rule wins).
    pub identity_rules: Vec<IdentityRule>,
    /// Severity overrides, applied to each change after the ignore patterns: the first override
    /// of the change's rule whose path matches gives its severity, or drops it. The counts
    /// and [`Report::max_severity`] follow.
    pub severity_overrides: Vec<OverrideRule>,
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
            severity_overrides: Vec::new(),
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

    /// These options with one more ignore pattern.
    #[must_use]
    pub fn with_ignore(mut self, pattern: IgnorePattern) -> Options {
        self.ignore.push(pattern);
        self
    }

    /// These options with one more identity rule (rules are tried in the order they were added).
    #[must_use]
    pub fn with_identity_rule(mut self, rule: IdentityRule) -> Options {
        self.identity_rules.push(rule);
        self
    }

    /// These options with one more severity override (after those already given: the first
    /// matching override wins).
    #[must_use]
    pub fn with_severity_override(mut self, rule: OverrideRule) -> Options {
        self.severity_overrides.push(rule);
        self
    }

    /// These options with another list of identity-key candidates, in order of preference.
    ///
    /// ```
    /// use apidrift_diff::{DiffMode, Options, diff_bodies};
    /// let before = serde_json::json!([{"sku": "a", "n": 1}, {"sku": "b", "n": 2}]);
    /// let after = serde_json::json!([{"sku": "b", "n": 2}, {"sku": "a", "n": 1}]);
    /// let options = Options::with_mode(DiffMode::Full).with_identity_keys(["sku"]);
    /// assert!(diff_bodies(&before, &after, &options)?.changes.is_empty());
    /// # Ok::<(), apidrift_diff::DiffError>(())
    /// ```
    #[must_use]
    pub fn with_identity_keys<I, S>(mut self, keys: I) -> Options
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.identity_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// These options with another list of tracked headers (names are lower-cased).
    #[must_use]
    pub fn with_tracked_headers<I, S>(mut self, names: I) -> Options
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tracked_headers = names
            .into_iter()
            .map(|n| n.into().to_ascii_lowercase())
            .collect();
        self
    }
}

/// The SHA-256 of a non-JSON body: full mode compares non-JSON bodies by digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TextBody {
    /// The digest.
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
#[non_exhaustive]
pub enum Body<B> {
    /// A JSON body.
    Json(B),
    /// A body that is not JSON, by its digest.
    Text(TextBody),
    /// No body (or an empty one).
    Absent,
}

/// One side of a diff: a response, a bare JSON body, or a fetch that produced no response.
///
/// ```
/// use apidrift_diff::{Body, Input, Options, diff};
/// let headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
/// let before = Input::response(200, headers.clone(), Body::Json(serde_json::json!({"ok": true})));
/// let after = Input::response(503, headers, Body::Json(serde_json::json!({"ok": true})));
/// let report = diff(&before, &after, &Options::default())?;
/// assert_eq!(report.changes[0].path, "status");
/// # Ok::<(), apidrift_diff::DiffError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Input<B> {
    /// The HTTP status; `None` for a bare body (then status is not compared).
    pub status: Option<u16>,
    /// The response headers; `None` for a bare body (then headers are not compared).
    pub headers: Option<Vec<(String, String)>>,
    /// The body.
    pub body: Body<B>,
    /// Set when the fetch produced no response (DNS, connect, TLS, timeout, size): the cause.
    pub failure: Option<String>,
    /// The volatile paths a multi-sample snapshot file carries (`"volatilePaths"`, see
    /// [`volatile_paths`]); empty otherwise. [`diff`] does not read them: a caller that compares
    /// against this input as a baseline adds them to [`Options::ignore`] in full mode.
    pub volatile_paths: Vec<String>,
}

impl<B> Input<B> {
    /// A bare JSON body: status and headers are not compared.
    pub fn bare(body: B) -> Input<B> {
        Input {
            status: None,
            headers: None,
            body: Body::Json(body),
            failure: None,
            volatile_paths: Vec::new(),
        }
    }

    /// A response.
    pub fn response(status: u16, headers: Vec<(String, String)>, body: Body<B>) -> Input<B> {
        Input {
            status: Some(status),
            headers: Some(headers),
            body,
            failure: None,
            volatile_paths: Vec::new(),
        }
    }

    /// A fetch that produced no response (DNS, connect, TLS, timeout, size), with its cause:
    /// compared with a response, it is a breaking `no-response` change at `status`.
    pub fn no_response(cause: impl Into<String>) -> Input<B> {
        Input {
            status: None,
            headers: None,
            body: Body::Absent,
            failure: Some(cause.into()),
            volatile_paths: Vec::new(),
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
            volatile_paths: self.volatile_paths.clone(),
        })
    }
}

/// Compares a current input with a baseline: status and tracked headers (when both sides have
/// them), then the bodies, according to `options`.
pub fn diff<J: JsonNode>(
    baseline: &Input<J>,
    current: &Input<J>,
    options: &Options,
) -> Result<Report, DiffError> {
    let mut em = report::Emitter::new(options);
    engine::compare_inputs(&mut em, baseline, current, options)?;
    Ok(em.finish())
}

/// Compares two bare JSON bodies (status and headers play no part), according to `options`.
///
/// ```
/// use apidrift_diff::{ChangeType, DiffMode, Options, diff_bodies, parse};
/// let before = parse(r#"{"price": 10, "tags": ["a"]}"#)?;
/// let after = parse(r#"{"price": 10.5, "tags": ["a"]}"#)?;
/// let report = diff_bodies(&before, &after, &Options::with_mode(DiffMode::Schema))?;
/// assert_eq!(report.changes[0].change_type, ChangeType::TypeChanged); // integer → number
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
///
/// ```
/// use apidrift_diff::{Input, Options, diff_shape};
/// use serde_json::json;
/// // Keep the baseline as a shape (it serialises with serde), not as a body.
/// let baseline = Input::bare(json!({"id": 1, "email": "a@example.com"})).to_shape()?;
/// let report = diff_shape(&baseline, &Input::bare(json!({"id": 2})), &Options::default())?;
/// assert_eq!(report.changes[0].path, "$.email");
/// # Ok::<(), apidrift_diff::DiffError>(())
/// ```
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
