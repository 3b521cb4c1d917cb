//! Types that exist only to describe requests in `/openapi.json`: the create request (validated
//! from raw JSON by `apidrift_model::validate`, so there is no Rust struct to derive from) and the
//! query parameters (parsed by hand in [`crate::query`]).

#![allow(
    dead_code,
    reason = "documentation-only types: read by utoipa, never constructed"
)]

use apidrift_model::{AuthType, Frequency, Health, HttpMethod, SeverityOverride};
use serde::Deserialize;
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// `diffMode` on create: `exact` is stored and shown as `full`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CreateDiffMode {
    Schema,
    Exact,
    Full,
}

/// The credential block (write-only: sealed with AES-256-GCM, never returned). Only the fields
/// belonging to `type` are read.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = EndpointAuth)]
pub struct EndpointAuthDoc {
    #[serde(rename = "type")]
    pub auth_type: AuthType,
    /// For bearer and oauth (sent as `Authorization: Bearer`).
    pub token: Option<String>,
    /// For api_key.
    pub key: Option<String>,
    /// Header name for api_key (default X-API-Key) or custom.
    pub header: Option<String>,
    /// Header value for custom.
    pub value: Option<String>,
    /// For basic.
    pub username: Option<String>,
    /// For basic.
    pub password: Option<String>,
}

/// A recurring check; requires the Starter plan or above. Give `frequency`, or the extension
/// `intervalSeconds` in its place (not both).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = EndpointSchedule)]
pub struct ScheduleDoc {
    /// Any case is accepted; answered uppercase.
    pub frequency: Option<Frequency>,
    /// Extension: every so many seconds, 60 to 2592000, instead of a frequency.
    #[schema(minimum = 60, maximum = 2592000)]
    pub interval_seconds: Option<u32>,
}

/// One entry of `POST /endpoints`. Unknown fields are ignored. `ignorePaths` and `headers` are
/// apidrift extensions.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = EndpointCreate)]
pub struct EndpointCreateDoc {
    /// Stable key of a monitors file: 1 to 100 characters `[a-z0-9][a-z0-9._-]*`, unique in the
    /// workspace (an entry with a taken key is skipped), immutable once set.
    #[schema(min_length = 1, max_length = 100, pattern = r"^[a-z0-9][a-z0-9._-]*$")]
    pub key: Option<String>,
    /// Display name, 1 to 200 characters (surrounding spaces are trimmed), no control characters.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*\S[^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub name: String,
    /// Absolute http or https URL; private, loopback and link-local hosts are rejected.
    #[schema(format = "uri", max_length = 2048)]
    pub url: String,
    /// Default GET; lowercase is accepted.
    pub method: Option<HttpMethod>,
    /// Default production.
    pub environment: Option<String>,
    pub description: Option<String>,
    pub tags: Option<Vec<String>>,
    pub auth: Option<EndpointAuthDoc>,
    /// Raw body sent on each check; not allowed for GET and HEAD.
    pub request_body: Option<String>,
    /// Default application/json.
    pub content_type: Option<String>,
    /// Default schema.
    pub diff_mode: Option<CreateDiffMode>,
    /// 1 to 60000, default 10000.
    #[schema(minimum = 1, maximum = 60000)]
    pub timeout_ms: Option<u32>,
    pub schedule: Option<ScheduleDoc>,
    /// Extension: path patterns whose changes are dropped (`$.meta.requestId`,
    /// `$.items[].updatedAt`, `$..traceId`, `status`, `headers.<name>`).
    pub ignore_paths: Option<Vec<String>>,
    /// Extension: identity rules of full mode, array path pattern → the member that pairs its
    /// items (`{"$.commits": "sha", "$..pulls": "number"}`); at a matching array the key replaces
    /// the default list (id, uuid, key, slug, name, code, _id). At most 20.
    pub identity_keys: Option<BTreeMap<String, String>>,
    /// Extension: extra request headers sent on each check, sealed like credentials.
    pub headers: Option<BTreeMap<String, String>>,
    /// Extension: follow up to 5 redirects (each hop checked); default false.
    pub follow_redirects: Option<bool>,
    /// Extension: a fetch with no response or a 5xx is tried again after 2 s, up to this many
    /// times (0 to 3, default 1); one quota unit per check whatever the retries.
    #[schema(minimum = 0, maximum = 3)]
    pub retries: Option<u8>,
    /// Severity overrides of this endpoint's checks: at most 50 `{"rule", "path"?, "severity"}`
    /// (rule ids of docs/severity.md; severity info, warning, breaking or ignore, which drops
    /// the change), tried before the workspace's; the first match wins.
    #[schema(max_items = 50)]
    pub severity_overrides: Option<Vec<SeverityOverride>>,
    /// Extension: the latency threshold in milliseconds (1 to 600000); `slowAfter` checks in a
    /// row slower than it send a `latency.slow` alert (severity warning), the first faster one
    /// `latency.resolved`. Absent or `null`: no latency alert.
    #[schema(minimum = 1, maximum = 600000)]
    pub max_response_time_ms: Option<u32>,
    /// Extension: how many checks in a row over `maxResponseTimeMs` send `latency.slow` (1 to
    /// 20, default 3).
    #[schema(minimum = 1, maximum = 20)]
    pub slow_after: Option<u8>,
}

/// `PATCH /api/v1/endpoints/{id}`: any subset of the EndpointCreate fields, plus `paused`. Each
/// field follows the create rules; an invalid one answers 400 naming it and nothing changes.
/// `auth` replaces the stored credential (`{"type": "none"}` drops it; absent, it stays);
/// `headers: null` and `requestBody: null` drop them; `schedule: null` removes the schedule.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = EndpointPatch)]
pub struct EndpointPatchDoc {
    /// Sets the key of an endpoint that has none; changing a set key is a 400.
    #[schema(min_length = 1, max_length = 100, pattern = r"^[a-z0-9][a-z0-9._-]*$")]
    pub key: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*\S[^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub name: Option<String>,
    #[schema(format = "uri", max_length = 2048)]
    pub url: Option<String>,
    pub method: Option<HttpMethod>,
    pub environment: Option<String>,
    pub description: Option<String>,
    pub tags: Option<Vec<String>>,
    pub auth: Option<EndpointAuthDoc>,
    pub request_body: Option<String>,
    pub content_type: Option<String>,
    pub diff_mode: Option<CreateDiffMode>,
    #[schema(minimum = 1, maximum = 60000)]
    pub timeout_ms: Option<u32>,
    /// `null` removes the schedule.
    pub schedule: Option<ScheduleDoc>,
    pub ignore_paths: Option<Vec<String>>,
    /// Replaces every identity rule; `{}` or `null` removes them.
    pub identity_keys: Option<BTreeMap<String, String>>,
    pub headers: Option<BTreeMap<String, String>>,
    pub follow_redirects: Option<bool>,
    #[schema(minimum = 0, maximum = 3)]
    pub retries: Option<u8>,
    /// Replaces every severity override; `[]` or `null` removes them.
    #[schema(max_items = 50)]
    pub severity_overrides: Option<Vec<SeverityOverride>>,
    /// `null` switches the latency alert off.
    #[schema(minimum = 1, maximum = 600000)]
    pub max_response_time_ms: Option<u32>,
    /// `null` restores the default, 3.
    #[schema(minimum = 1, maximum = 20)]
    pub slow_after: Option<u8>,
    /// Scheduled runs skip a paused endpoint (no quota used); manual checks still run.
    pub paused: Option<bool>,
}

/// `PATCH /api/v1/workspace`: the workspace's settings to change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = WorkspacePatch)]
pub struct WorkspacePatchDoc {
    /// The workspace's default severity overrides, replaced whole (`[]` or `null` removes
    /// them): at most 50 `{"rule", "path"?, "severity"}`, tried after an endpoint's own; the
    /// first match wins.
    #[schema(max_items = 50)]
    pub severity_overrides: Option<Vec<SeverityOverride>>,
}

/// Optional body of `POST /v1/endpoints/{id}/baseline`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = CaptureRequest)]
pub struct CaptureRequestDoc {
    /// Responses to sample, about a second apart (1 to 5, default 1). Leaf paths whose values
    /// differ between them are learned as volatile.
    #[schema(minimum = 1, maximum = 5)]
    pub samples: Option<u8>,
}

/// Query of the paged history routes (`/checks`, `/deliveries`).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Rows per page: 1 to 100 (larger values are clamped to 100), default 25.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// Rows to skip, at least 0, default 0.
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// `{ "endpoints": [EndpointCreate] }`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EndpointCreateBatch {
    #[schema(min_items = 1, max_items = 200)]
    pub endpoints: Vec<EndpointCreateDoc>,
}

/// `POST /api/v1/apply`: a monitors file. Each entry is an EndpointCreate whose `key` is
/// required; `${NAME}` placeholders are filled by the CLI before it sends the file.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = ApplyRequest)]
pub struct ApplyRequestDoc {
    /// The endpoints the workspace should hold, each with its `key` (at most 2000).
    #[schema(max_items = 2000)]
    pub endpoints: Vec<EndpointCreateDoc>,
    /// Delete the keyed endpoints the file does not name (never one without a key). Default
    /// false.
    pub prune: Option<bool>,
    /// Compute and answer the plan, write nothing. Default false.
    pub dry_run: Option<bool>,
}

/// The create body: one entry, a bare array (1 to 200), or `{ "endpoints": [...] }`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum EndpointCreateRequest {
    One(Box<EndpointCreateDoc>),
    Many(Vec<EndpointCreateDoc>),
    Wrapped(EndpointCreateBatch),
}

/// Query of `GET /api/v1/endpoints`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListEndpointsQuery {
    /// Rows per page: 1 to 100 (larger values are clamped to 100), default 25.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// Rows to skip, at least 0, default 0.
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// Only endpoints in this health state (exact, lowercase).
    #[param(inline)]
    pub health: Option<Health>,
    /// Only endpoints tagged with this environment.
    pub environment: Option<String>,
}

/// `breakingOnly`: the only allowed value is `true`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BreakingOnly {
    True,
}

/// Query of `GET /api/v1/diffs`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ListDiffsQuery {
    /// Rows per page: 1 to 100 (larger values are clamped to 100), default 25.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// Rows to skip, at least 0, default 0.
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// Only diffs of this endpoint.
    pub endpoint_id: Option<uuid::Uuid>,
    /// Only diffs created at or after this RFC 3339 date-time.
    #[param(format = DateTime)]
    pub since: Option<String>,
    /// Only diffs with at least one breaking change.
    #[param(inline)]
    pub breaking_only: Option<BreakingOnly>,
}

/// Query of `GET /v1/endpoints/{id}/diffs`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct EndpointDiffsQuery {
    /// Rows per page: 1 to 100 (larger values are clamped to 100), default 25.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// Rows to skip, at least 0, default 0.
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// Only diffs created at or after this RFC 3339 date-time.
    #[param(format = DateTime)]
    pub since: Option<String>,
    /// Only diffs with at least one breaking change.
    #[param(inline)]
    pub breaking_only: Option<BreakingOnly>,
}
