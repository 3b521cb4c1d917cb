//! # apidrift-model
//!
//! The wire types of the apidrift API, for Rust programs that
//! talk to an apidrift service or read what it produces. apidrift is a self-hostable API drift
//! monitor: it fetches the HTTP endpoints you register, compares each response with a stored
//! baseline and records every difference as a change with a severity. Everything a client sends
//! to or receives from the service is here as a plain Rust type with `serde`.
//!
//! This crate does no I/O and carries no database, web framework or async runtime. The diff engine
//! that produces the changes is the sibling crate `apidrift-diff`.
//!
//! ## Example
//!
//! Read a diff as `GET /api/v1/diffs/{id}` returns it and keep its breaking changes:
//!
//! ```
//! use apidrift_model::{DiffEnvelope, Severity};
//!
//! # let body = r#"{"diff":{"id":"0190f5c2-7a1e-7cc0-8a59-2b0c3d4e5f60","endpointId":null,
//! #   "createdAt":"2026-11-21T07:57:09.123Z","accepted":false,"breakingCount":1,"warningCount":0,
//! #   "infoCount":1,"changeCount":2,"changes":[
//! #   {"id":"9c1d4e5b6a703f2a","path":"$.user.email","type":"removed","severity":"breaking",
//! #    "message":"field removed","oldValue":"a@example.com"},
//! #   {"id":"1b2c3d4e5f607182","path":"$.user.nickname","type":"added","severity":"info",
//! #    "message":"field added","newValue":"al"}]}}"#;
//! let envelope: DiffEnvelope = serde_json::from_str(body)?;
//! let breaking = envelope.diff.changes.iter().filter(|c| c.severity >= Severity::Breaking);
//! for change in breaking {
//!     println!("{} {} {}: {}", change.severity, change.change_type, change.path, change.message);
//! }
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! ## What is here
//!
//! * Resources: [`Endpoint`] (and its [`Schedule`], with its [`Cadence`]), [`LatestDiff`], [`DiffSummary`], [`DiffDetail`], [`DiffChange`].
//! * Response bodies: [`EndpointList`], [`EndpointEnvelope`], [`CreateEndpointsResponse`]
//!   (with [`SkippedEntry`]), [`DiffList`], [`DiffEnvelope`], [`CheckResponse`], [`ErrorBody`],
//!   [`Pagination`].
//! * Enumerations, each with its wire spelling (`as_str`, `Display`), an exact `FromStr`, `ALL`
//!   and serde: [`Health`], [`AuthType`], [`DiffMode`], [`HttpMethod`], [`Frequency`],
//!   [`ChangeType`], [`Severity`], [`Scope`], [`Role`], [`Plan`]; [`UnknownValue`] is their parse
//!   error.
//! * Write-only, secret-bearing input: [`EndpointAuth`] and [`SecretString`], which deserialise
//!   but cannot be serialised and print `***` in `Debug`, so a credential cannot be echoed by
//!   accident.
//! * Severity overrides: [`SeverityOverride`] (`{"rule", "path"?, "severity"}`, with
//!   [`OverrideSeverity`]) and the checks of a `severityOverrides` list
//!   ([`SeverityOverride::parse_list`]).
//! * [`EndpointSettings`]: what a user sets on an endpoint, the one shape the create request, the
//!   stored endpoint and a change of it share; [`EndpointPatch`]: a PATCH, merged into the
//!   settings before they are validated.
//! * [`validate`]: the rules of `POST /endpoints`, as pure functions a client can run before
//!   sending ([`validate::validate_entry`]).
//! * [`net`]: the outbound-address policy (which hosts the service refuses to fetch).
//! * [`timestamp`]: the wire format of timestamps, as serde helpers.
//! * [`sealed`]: the plaintext documents the service encrypts at rest for an endpoint's
//!   credential and extra headers.
//!
//! ## Severity
//!
//! Every [`DiffChange`] has a [`ChangeType`] and a [`Severity`]. The rules of the diff engine, in
//! short (the full table, with a stable id per rule, is `docs/severity.md` in the repository):
//!
//! | situation | type | severity |
//! |---|---|---|
//! | field removed | `removed` | breaking |
//! | field present in every baseline element, now missing from some (schema mode) | `removed` | warning |
//! | field added | `added` | info |
//! | JSON type changed (string, number, integer, boolean, object, array) | `type_changed` | breaking |
//! | integer → number (fractional values appear) / number → integer | `type_changed` | warning / info |
//! | non-null → null / null → non-null | `nullability_changed` | breaking / info |
//! | leaf value changed (full mode only) | `changed` | info |
//! | keyed array item removed / added (full mode) | `removed` / `added` | warning / info |
//! | status left 2xx, or no response at all / other status change | `status_changed` | breaking / warning |
//! | content type no longer JSON / other content-type change | `header_changed` | breaking / warning |
//! | `Deprecation` or `Sunset` header appears / disappears | `header_changed` | warning / info |
//! | response violates its OpenAPI contract | `contract_violation` | breaking |
//!
//! ## Wire conventions
//!
//! Field names are camelCase; enumerated values lowercase, except HTTP methods and schedule
//! frequencies (uppercase); timestamps RFC 3339 in UTC with millisecond precision and a `Z`
//! suffix ([`timestamp`]). An optional value is `None` whether the field is absent or `null`,
//! except [`DiffChange::old_value`] and [`DiffChange::new_value`], which keep the difference.
//!
//! ## Feature flags
//!
//! * `openapi` (off by default): derives `utoipa::ToSchema` for the wire types, which is how the
//!   service builds its `/openapi.json`. Pulls in `utoipa`.
//!
//! ## Stability
//!
//! Until 1.0, a breaking change bumps the minor version (0.1 → 0.2); `CHANGELOG.md` lists every
//! change. Enumerations that will grow ([`Severity`], [`ChangeType`], [`Health`], [`AuthType`],
//! [`Plan`], [`validate::Credential`], [`OverrideSeverity`]) and the error types are
//! `#[non_exhaustive]`: a new variant is not a breaking change, so a `match` on them needs a `_`
//! arm. [`HttpMethod`], [`Frequency`], [`DiffMode`], [`Scope`] and [`Role`] are closed sets
//! whose every consumer must handle a new value (a new scope or role changes what a token may
//! do), so adding one would be a breaking change. The response structs have public fields and are exhaustive, so that tests can build
//! them; a new field is a breaking change for code that builds them with a struct literal.

#![deny(missing_docs)]

mod diff;
mod endpoint;
mod enums;
pub mod net;
mod overrides;
pub mod sealed;
mod secret;
mod settings;
pub mod timestamp;
pub mod validate;

pub use diff::{
    ChangeType, CheckResponse, DiffChange, DiffDetail, DiffEnvelope, DiffList, DiffSummary,
    Severity,
};
pub use endpoint::{
    CreateEndpointsResponse, Endpoint, EndpointAuth, EndpointEnvelope, EndpointList, ErrorBody,
    LatestDiff, Pagination, Schedule, SkippedEntry, Uptime,
};
pub use enums::{
    AuthType, Cadence, DiffMode, Frequency, Health, HttpMethod, Plan, Role, Scope, UnknownValue,
};
pub use overrides::{OverrideSeverity, SeverityOverride, WorkspaceSettings};
pub use secret::SecretString;
pub use settings::{ENTRY_FIELDS, EndpointPatch, EndpointSettings, PAUSED_FIELD, SECRET_FIELDS};

/// The timestamp type of the wire types (from `time`), re-exported so integrators use the same
/// version as the model.
pub use time::OffsetDateTime;
/// The id type of the wire types (from `uuid`), re-exported so integrators use the same version
/// as the model.
pub use uuid::Uuid;
