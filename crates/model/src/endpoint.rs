//! The endpoint resource, the create request's write-only credential block, and the envelopes of
//! the endpoint routes.

use crate::enums::{AuthType, DiffMode, Frequency, Health, HttpMethod};
use crate::secret::SecretString;
use crate::timestamp;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

/// A monitored endpoint as every read route returns it (spec "Endpoint"). It holds no credential:
/// `authType` names the style only.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: Uuid,
    pub name: String,
    pub url: String,
    pub method: HttpMethod,
    pub environment: String,
    pub tags: Vec<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub health: Health,
    pub auth_type: AuthType,
    pub diff_mode: DiffMode,
    #[serde(default)]
    pub timeout_ms: Option<u32>,
    #[serde(default)]
    pub baseline_version: Option<u32>,
    pub has_response_contract: bool,
    #[serde(default, with = "timestamp::option")]
    pub last_checked_at: Option<OffsetDateTime>,
    /// Milliseconds, from the last check.
    #[serde(default)]
    pub response_time: Option<u32>,
    #[serde(default)]
    pub breaking_count: u32,
    #[serde(default)]
    pub warning_count: u32,
    #[serde(default, with = "timestamp::option")]
    pub created_at: Option<OffsetDateTime>,
    #[serde(default, with = "timestamp::option")]
    pub updated_at: Option<OffsetDateTime>,
    /// Scheduled runs skip a paused endpoint (manual checks and captures still run). Always present.
    #[serde(default)]
    pub paused: bool,
    /// How many times a fetch with no response or a 5xx is tried again (0–3) before a result is
    /// recorded.
    #[serde(default = "crate::validate::default_retries")]
    pub retries: u8,
}

/// The credential block of a create request (spec "EndpointAuth"). Write-only: it deserialises but
/// cannot be serialised, and its secret fields print `***`. Only the fields belonging to `type` are
/// read; [`crate::validate::validate_entry`] turns it into a checked credential.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointAuth {
    #[serde(rename = "type")]
    pub auth_type: AuthType,
    #[serde(default)]
    pub token: Option<SecretString>,
    #[serde(default)]
    pub key: Option<SecretString>,
    #[serde(default)]
    pub header: Option<String>,
    #[serde(default)]
    pub value: Option<SecretString>,
    #[serde(default)]
    pub username: Option<SecretString>,
    #[serde(default)]
    pub password: Option<SecretString>,
}

/// A recurring check (create request field `schedule`).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub frequency: Frequency,
}

/// The latest diff of an endpoint, embedded in `GET /endpoints/{id}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LatestDiff {
    pub id: Uuid,
    #[serde(with = "timestamp")]
    pub created_at: OffsetDateTime,
    pub breaking_count: u32,
    pub warning_count: u32,
    pub info_count: u32,
}

/// `pagination` of every list response. `total` counts every row matching the filters.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pagination {
    pub limit: u32,
    pub offset: u64,
    pub total: u64,
}

/// 200 body of `GET /endpoints`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointList {
    pub endpoints: Vec<Endpoint>,
    pub pagination: Pagination,
}

/// 200 body of `GET /endpoints/{id}`: `latestDiff` is `null` when the endpoint never produced one.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointEnvelope {
    pub endpoint: Endpoint,
    pub latest_diff: Option<LatestDiff>,
}

/// An entry of `POST /endpoints` that was not created, and why (D6). `name` is `""` when the entry
/// had none; `index` is the entry's position in the request.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedEntry {
    pub name: String,
    pub reason: String,
    pub index: usize,
}

/// 201 (or 200 when nothing was created) body of `POST /endpoints`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateEndpointsResponse {
    pub endpoints: Vec<Endpoint>,
    pub created: u32,
    /// Schedules created alongside; always present (D6).
    pub scheduled: u32,
    pub skipped: Vec<SkippedEntry>,
}

/// Every failure body: `{"error": "<human-readable reason>"}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
}

impl ErrorBody {
    pub fn new(error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
        }
    }
}
