//! The endpoint resource, the create request's write-only credential block, and the envelopes of
//! the endpoint routes.

use crate::enums::{AuthType, Cadence, DiffMode, Frequency, Health, HttpMethod};
use crate::secret::SecretString;
use crate::timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use time::OffsetDateTime;
use uuid::Uuid;

/// A monitored endpoint as every read route returns it. It holds no credential: `authType` names
/// the style only.
///
/// Fields that a response may omit (`description`, `timeoutMs`, the counts, the timestamps, …)
/// read as `None` or `0`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The endpoint's id.
    pub id: Uuid,
    /// The stable key of a monitors file, unique in the workspace, or `None` (always present on
    /// the wire, `null` when unset).
    #[serde(default)]
    pub key: Option<String>,
    /// Display name.
    pub name: String,
    /// The monitored URL (absolute http or https, without fragment).
    pub url: String,
    /// The HTTP method of each check.
    pub method: HttpMethod,
    /// Free text naming the environment, `production` unless the creator said otherwise.
    pub environment: String,
    /// Free-form labels, without duplicates.
    pub tags: Vec<String>,
    /// Free-form description.
    #[serde(default)]
    pub description: Option<String>,
    /// The endpoint's health after its last baseline capture or check.
    pub health: Health,
    /// The credential style used on each check; never the credential itself.
    pub auth_type: AuthType,
    /// How responses are compared with the baseline.
    pub diff_mode: DiffMode,
    /// How long a check waits for the response, in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u32>,
    /// How many baselines were captured (1, 2, …); `None` before the first.
    #[serde(default)]
    pub baseline_version: Option<u32>,
    /// Whether an OpenAPI response contract is in force for the endpoint.
    pub has_response_contract: bool,
    /// When the last check finished.
    #[serde(default, with = "timestamp::option")]
    pub last_checked_at: Option<OffsetDateTime>,
    /// Milliseconds, from the last check; `None` when it got no response.
    #[serde(default)]
    pub response_time: Option<u32>,
    /// Breaking changes found by the last check.
    #[serde(default)]
    pub breaking_count: u32,
    /// Warnings found by the last check.
    #[serde(default)]
    pub warning_count: u32,
    /// When the endpoint was registered.
    #[serde(default, with = "timestamp::option")]
    pub created_at: Option<OffsetDateTime>,
    /// When the endpoint's definition last changed.
    #[serde(default, with = "timestamp::option")]
    pub updated_at: Option<OffsetDateTime>,
    /// Scheduled runs skip a paused endpoint (manual checks and captures still run). Always present.
    #[serde(default)]
    pub paused: bool,
    /// How many times a fetch with no response or a 5xx is tried again (0–3) before a result is
    /// recorded.
    #[serde(default = "crate::validate::default_retries")]
    pub retries: u8,
    /// Identity rules of full mode: array path pattern → the member that pairs its items
    /// (`{"$.commits": "sha"}`). Always present (`{}` when none).
    #[serde(default)]
    pub identity_keys: BTreeMap<String, String>,
    /// Severity overrides of this endpoint's checks (`[{"rule", "path"?, "severity"}]`), tried
    /// before the workspace's. Always present (`[]` when none).
    #[serde(default)]
    pub severity_overrides: Vec<crate::SeverityOverride>,
    /// The latency threshold in milliseconds; `None`: no `slow` alert. Always present.
    #[serde(default)]
    pub max_response_time_ms: Option<u32>,
    /// How many consecutive checks over `maxResponseTimeMs` raise a `slow` alert (1–20).
    #[serde(default = "crate::validate::default_slow_after")]
    pub slow_after: u8,
    /// The share of checks whose fetch succeeded over the last day, week and month; on the read
    /// answers (`GET` of one endpoint or a list), `None` on the others.
    #[serde(default)]
    pub uptime: Option<Uptime>,
    /// The recurring check the endpoint asked for: `{"frequency": …}`, `{"intervalSeconds": n}`,
    /// or `null` when it runs only on demand. Always present.
    #[serde(default)]
    pub schedule: Option<Schedule>,
    /// When the next scheduled check is due; `null` when the endpoint has no schedule, is paused,
    /// or its schedule was set moments ago and the scheduler has not taken it up yet (within one
    /// poll interval). Always present.
    #[serde(default, with = "timestamp::option")]
    pub next_run_at: Option<OffsetDateTime>,
}

/// The share of an endpoint's checks in a window whose fetch succeeded (a response arrived
/// within the timeout, with a status below 500), from 0.0 to 1.0; `None` when no check ran in
/// the window. The windows end now: the last 24 hours, 7 days and 30 days.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Uptime {
    /// The last 24 hours.
    pub day: Option<f64>,
    /// The last 7 days.
    pub week: Option<f64>,
    /// The last 30 days.
    pub month: Option<f64>,
}

/// The credential block (`auth`) of a create request. Write-only: it deserialises but cannot be
/// serialised, and its secret fields print `***`. Only the fields belonging to `type` are read;
/// [`validate::validate_entry`](crate::validate::validate_entry) turns it into a checked
/// [`Credential`](crate::validate::Credential).
///
/// ```
/// use apidrift_model::{AuthType, EndpointAuth};
///
/// let auth: EndpointAuth = serde_json::from_str(r#"{"type":"bearer","token":"s3cr3t"}"#)?;
/// assert_eq!(auth.auth_type, AuthType::Bearer);
/// assert!(!format!("{auth:?}").contains("s3cr3t")); // Debug prints `***`
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointAuth {
    /// The credential style (`type` on the wire); decides which other fields are read.
    #[serde(rename = "type")]
    pub auth_type: AuthType,
    /// The token, for `bearer` and `oauth` (sent as `Authorization: Bearer <token>`).
    #[serde(default)]
    pub token: Option<SecretString>,
    /// The key, for `api_key` (sent in `header`).
    #[serde(default)]
    pub key: Option<SecretString>,
    /// The header name, for `api_key` (default `X-API-Key`) and `custom`.
    #[serde(default)]
    pub header: Option<String>,
    /// The header value, for `custom`.
    #[serde(default)]
    pub value: Option<SecretString>,
    /// The user name, for `basic`.
    #[serde(default)]
    pub username: Option<SecretString>,
    /// The password, for `basic`.
    #[serde(default)]
    pub password: Option<SecretString>,
}

/// A recurring check (create request field `schedule`): a named `frequency`, or
/// `intervalSeconds` (60 to 2,592,000) in its place.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    /// How often the check runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency: Option<Frequency>,
    /// Every so many seconds, instead of a frequency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_seconds: Option<u32>,
}

impl Schedule {
    /// When the check runs, or `None` when the schedule names neither a frequency nor an
    /// interval within the limits.
    pub fn cadence(&self) -> Option<Cadence> {
        match (self.frequency, self.interval_seconds) {
            (Some(f), None) => Some(Cadence::Every(f)),
            (None, Some(n))
                if (Cadence::MIN_INTERVAL_SECONDS..=Cadence::MAX_INTERVAL_SECONDS).contains(&n) =>
            {
                Some(Cadence::Interval(n))
            }
            _ => None,
        }
    }
}

impl From<Cadence> for Schedule {
    fn from(c: Cadence) -> Schedule {
        match c {
            Cadence::Every(f) => Schedule {
                frequency: Some(f),
                interval_seconds: None,
            },
            Cadence::Interval(n) => Schedule {
                frequency: None,
                interval_seconds: Some(n),
            },
        }
    }
}

/// The latest diff of an endpoint, embedded in `GET /endpoints/{id}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LatestDiff {
    /// The diff's id (read it with `GET /diffs/{id}`).
    pub id: Uuid,
    /// When the check that produced it ran.
    #[serde(with = "timestamp")]
    pub created_at: OffsetDateTime,
    /// Changes of severity `breaking`.
    pub breaking_count: u32,
    /// Changes of severity `warning`.
    pub warning_count: u32,
    /// Changes of severity `info`.
    pub info_count: u32,
}

/// `pagination` of every list response. `total` counts every row matching the filters.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pagination {
    /// The page size used (the request's `limit`, default 25, at most 100).
    pub limit: u32,
    /// How many rows precede the page (the request's `offset`, default 0).
    pub offset: u64,
    /// Rows matching the filters, ignoring pagination.
    pub total: u64,
}

/// 200 body of `GET /endpoints`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointList {
    /// One page of endpoints.
    pub endpoints: Vec<Endpoint>,
    /// Where the page is in the whole list.
    pub pagination: Pagination,
}

/// 200 body of `GET /endpoints/{id}`: `latestDiff` is `null` when the endpoint never produced one.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointEnvelope {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// Its most recent diff, if any.
    pub latest_diff: Option<LatestDiff>,
}

/// An entry of `POST /endpoints` that was not created, and why.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedEntry {
    /// The entry's `name`, or `""` when it had none.
    pub name: String,
    /// Why, naming the field: `url: private, loopback and link-local hosts are rejected`.
    pub reason: String,
    /// The entry's position in the request, from 0.
    pub index: usize,
}

/// 201 (or 200 when nothing was created) body of `POST /endpoints`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateEndpointsResponse {
    /// The endpoints created, in request order.
    pub endpoints: Vec<Endpoint>,
    /// How many were created.
    pub created: u32,
    /// Schedules created alongside; always present (0 when none).
    pub scheduled: u32,
    /// The entries that were not created.
    pub skipped: Vec<SkippedEntry>,
}

/// Every failure body: `{"error": "<human-readable reason>"}`.
///
/// ```
/// use apidrift_model::ErrorBody;
///
/// let json = serde_json::to_string(&ErrorBody::new("token lacks scope endpoints:write"))?;
/// assert_eq!(json, r#"{"error":"token lacks scope endpoints:write"}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong and, where it helps, what to do next.
    pub error: String,
}

impl ErrorBody {
    /// An error body with this reason.
    pub fn new(error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
        }
    }
}
