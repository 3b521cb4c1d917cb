//! # apidrift-model
//!
//! The wire types of the apidrift API, published for integrators. Everything a client sends to or
//! receives from the service is here as a plain Rust type with `serde`:
//!
//! * resources: [`Endpoint`], [`LatestDiff`], [`DiffSummary`], [`DiffDetail`], [`DiffChange`];
//! * envelopes: [`EndpointList`], [`EndpointEnvelope`], [`CreateEndpointsResponse`], [`DiffList`],
//!   [`DiffEnvelope`], [`CheckResponse`], [`ErrorBody`], [`Pagination`];
//! * enumerations: [`Health`], [`AuthType`], [`DiffMode`], [`HttpMethod`], [`Frequency`],
//!   [`ChangeType`], [`Severity`], [`Scope`], [`Role`], [`Plan`];
//! * write-only, secret-bearing input: [`EndpointAuth`] and [`SecretString`], which deserialise but
//!   cannot be serialised and print `***` in `Debug`, so a credential cannot be returned by accident;
//! * validation of one `POST /endpoints` entry ([`validate::validate_entry`], decision D6) and the
//!   outbound-address policy shared with the fetcher ([`net`], decision D14);
//! * the plaintext documents sealed at rest for an endpoint's credential and extra headers
//!   ([`sealed`]), written by the API and read by the check pipeline;
//! * feature `openapi`: `utoipa::ToSchema` for the wire types (used by the API's `/openapi.json`).
//!
//! Conventions (decision D5): field names are camelCase, enumerated values lowercase (HTTP methods
//! and schedule frequencies uppercase), timestamps RFC 3339 in UTC with millisecond precision and a
//! `Z` suffix (see [`timestamp`]).
//!
//! This crate does no I/O and carries no database, web framework or async runtime: integrators can
//! depend on it without pulling in the service.

mod diff;
mod endpoint;
mod enums;
pub mod net;
pub mod sealed;
mod secret;
pub mod timestamp;
pub mod validate;

pub use diff::{
    ChangeType, CheckResponse, DiffChange, DiffDetail, DiffEnvelope, DiffList, DiffSummary,
    Severity,
};
pub use endpoint::{
    CreateEndpointsResponse, Endpoint, EndpointAuth, EndpointEnvelope, EndpointList, ErrorBody,
    LatestDiff, Pagination, Schedule, SkippedEntry,
};
pub use enums::{
    AuthType, DiffMode, Frequency, Health, HttpMethod, Plan, Role, Scope, UnknownValue,
};
pub use secret::SecretString;

/// Re-exported so integrators use the same versions as the model.
pub use time::OffsetDateTime;
pub use uuid::Uuid;
