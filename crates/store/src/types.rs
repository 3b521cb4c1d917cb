//! Row and input types of the [`crate::Store`] trait, and the small helpers both adapters share
//! (month keys, D7 health from counts, diff counts from changes, text lists).

use apidrift_model::{
    AuthType, DiffChange, Endpoint, EndpointSettings, Health, Plan, Role, Schedule, Scope, Severity,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use time::OffsetDateTime;
use uuid::Uuid;

/// Most endpoints one [`crate::Store::create_endpoints`] call takes (D6).
pub const MAX_BULK_ENDPOINTS: usize = 200;

/// Batch size of the rewrap iteration (`keys rotate`).
pub const REWRAP_BATCH: u32 = 500;

/// `touch_token` writes `last_used_at` at most once per this many seconds (D4).
pub const TOKEN_TOUCH_INTERVAL_SECS: i64 = 60;

/// The adapter behind a [`crate::Store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub const fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// Options of the adapters' `connect_with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Apply pending migrations while connecting (default true; `serve --no-migrate` clears it).
    pub migrate: bool,
    /// Pool size; `None` picks the adapter's default (SQLite 4, PostgreSQL 16). SQLite
    /// `:memory:` always uses one connection.
    pub max_connections: Option<usize>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            migrate: true,
            max_connections: None,
        }
    }
}

/// What [`crate::Store::migrate`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MigrationReport {
    /// Versions applied by this call, in order (empty when the schema was current).
    pub applied: Vec<String>,
}

// -------------------------------------------------------------------- workspaces

/// A workspace. `None` limits are unlimited (D3, D17).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    pub id: Uuid,
    pub name: String,
    pub plan: Plan,
    pub endpoint_limit: Option<u32>,
    pub check_quota: Option<u32>,
    pub created_at: OffsetDateTime,
    /// The workspace's default severity overrides, tried after an endpoint's own (D26).
    pub severity_overrides: Vec<apidrift_model::SeverityOverride>,
    /// The version of the workspace's settings: every update adds 1 (D27, the `ETag`).
    pub version: i64,
}

/// Input of [`crate::Store::create_workspace`]. The caller resolves plan defaults
/// ([`Plan::endpoint_limit`], [`Plan::check_quota`]) and overrides into the two limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWorkspace {
    pub id: Uuid,
    pub name: String,
    pub plan: Plan,
    pub endpoint_limit: Option<u32>,
    pub check_quota: Option<u32>,
    pub created_at: OffsetDateTime,
}

/// Input of [`crate::Store::update_workspace`]: `None` leaves a field alone; `Some(None)` makes a
/// limit unlimited. With `expected_version`, the update is written only while the workspace has
/// that version, else [`crate::StoreError::Changed`] and nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WorkspaceUpdate {
    pub name: Option<String>,
    pub plan: Option<Plan>,
    pub endpoint_limit: Option<Option<u32>>,
    pub check_quota: Option<Option<u32>>,
    /// The workspace's default severity overrides, replaced whole.
    pub severity_overrides: Option<Vec<apidrift_model::SeverityOverride>>,
    pub expected_version: Option<i64>,
}

/// Result of [`crate::Store::consume_check_unit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaOutcome {
    /// One unit was consumed; `used` counts it.
    Consumed { used: u64, quota: Option<u32> },
    /// The quota was already reached; nothing was consumed.
    Exhausted { used: u64, quota: u32 },
}

/// The monthly quota of a workspace as a read sees it ([`crate::Store::check_quota_usage`]): no
/// unit is consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaUsage {
    /// Units consumed in the month read.
    pub used: u64,
    /// The workspace's `check_quota` (`None`: unlimited).
    pub quota: Option<u32>,
}

impl QuotaUsage {
    /// `Some(quota)` when no unit is left this month.
    pub fn exhausted(&self) -> Option<u32> {
        self.quota.filter(|q| self.used >= u64::from(*q))
    }
}

/// Everything a check reads before it fetches ([`crate::Store::check_context`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckContext {
    pub endpoint: StoredEndpoint,
    /// The active baseline (`None`: the endpoint has none yet).
    pub baseline: Option<StoredBaseline>,
    /// The workspace's quota usage in the month read.
    pub usage: QuotaUsage,
    /// The endpoint's newest diff, with its changes (the alert decision compares with it).
    pub latest_diff: Option<apidrift_model::DiffDetail>,
    /// The workspace's default severity overrides (tried after the endpoint's own).
    pub workspace_overrides: Vec<apidrift_model::SeverityOverride>,
    /// The workspace's plan (a scheduled run checks that it still allows schedules).
    pub plan: Plan,
}

/// Result of [`crate::AlertStore::record_check_run`].
#[derive(Debug, Clone, PartialEq)]
pub enum CheckRecording {
    /// Everything was written: the quota unit, the check, its diff, the endpoint's figures and
    /// the alerts; `alerts_sent` deliveries were queued.
    Recorded {
        /// Boxed: a check row is large next to the refusal.
        recorded: Box<RecordedCheck>,
        alerts_sent: u32,
        /// Whether the [`crate::ScheduleFinish`] given with the check was written in the same
        /// transaction (false without one, or when its owner no longer held the lease).
        schedule_finished: bool,
    },
    /// The month's quota was used up before this check could take its unit: nothing was written.
    QuotaExhausted { used: u64, quota: u32 },
}

/// The usage period of a timestamp: its calendar month in UTC, as `YYYY-MM`.
pub fn month_key(at: OffsetDateTime) -> String {
    let utc = at.to_offset(time::UtcOffset::UTC);
    format!("{:04}-{:02}", utc.year(), u8::from(utc.month()))
}

// -------------------------------------------------------------------- tokens

/// Input of [`crate::Store::create_token`]. The token text never reaches the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub name: String,
    /// Lower-case hex SHA-256 of the token text (64 characters), unique.
    pub token_hash: String,
    /// The last 4 characters of the token, to tell tokens apart in lists.
    pub hint: String,
    pub scopes: Vec<Scope>,
    pub role: Role,
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
}

/// A stored token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub name: String,
    pub token_hash: String,
    pub hint: String,
    pub scopes: Vec<Scope>,
    pub role: Role,
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
    pub last_used_at: Option<OffsetDateTime>,
}

impl StoredToken {
    /// Whether the token may authenticate at `now`: not revoked and not expired.
    pub fn is_active(&self, now: OffsetDateTime) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|e| now < e)
    }
}

/// Scopes as stored: their wire spellings joined by `,`.
pub fn scopes_to_text(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// Reads [`scopes_to_text`] back.
pub fn scopes_from_text(text: &str) -> Result<Vec<Scope>, crate::StoreError> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .map_err(|e| crate::StoreError::corrupt("tokens.scopes", e))
        })
        .collect()
}

// -------------------------------------------------------------------- endpoints

/// A response contract in force on an endpoint (D10): the operation it came from, the status
/// it checks, and its JSON Schema. Stored as one small JSON document on the endpoint row.
///
/// Written since migration `2026-11-28-100000_contract_sets`, a contract is a reference: `set`
/// names the workspace's stored schema set (see [`crate::ContractStore`]) and `schema` is only
/// the root (a `$ref` to the default media type's schema and `x-apidrift` naming the media
/// types and where their schemas are in the set). A contract stored before (no `set`) holds its
/// whole schema inline and is still read and checked as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseContract {
    /// `METHOD /path/template`, e.g. `GET /users/{id}`.
    pub operation: String,
    pub status: u16,
    /// Inline: the resolved schema (3.1 form, `$ref`s within it). With `set`: the root only.
    pub schema: Value,
    /// The content hash (lower-case hex SHA-256) of the workspace's schema set the root refers
    /// into; `None` for a contract stored inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
}

/// The write-only part of an endpoint as stored: the credential style and the sealed secrets
/// (each `None` when there is none). The API never reads them back.
#[derive(Debug, Clone, PartialEq)]
pub struct SealedSecrets {
    /// The credential style (`none` without a credential); the API shows it.
    pub auth_type: AuthType,
    /// The sealed credential (`None` for auth type `none`).
    pub sealed_auth: Option<Vec<u8>>,
    /// The sealed extra request headers (`None` when there are none).
    pub sealed_headers: Option<Vec<u8>>,
    /// The sealed request body sent on each check (`None` when there is none).
    pub sealed_request_body: Option<Vec<u8>>,
}

impl SealedSecrets {
    /// No credential, no extra headers, no request body.
    pub fn none() -> Self {
        SealedSecrets {
            auth_type: AuthType::None,
            sealed_auth: None,
            sealed_headers: None,
            sealed_request_body: None,
        }
    }
}

/// Input of [`crate::Store::create_endpoints`]: a validated entry with its secrets already sealed.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEndpointRow {
    pub id: Uuid,
    /// What the user set, validated.
    pub settings: EndpointSettings,
    pub secrets: SealedSecrets,
    pub response_contract: Option<ResponseContract>,
    /// Also the initial `updated_at`. Health starts `unknown` (D7).
    pub created_at: OffsetDateTime,
}

/// A stored endpoint: its settings, its secrets, and what the service records about it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEndpoint {
    pub id: Uuid,
    pub workspace_id: Uuid,
    /// What the user set.
    pub settings: EndpointSettings,
    pub secrets: SealedSecrets,
    pub health: Health,
    pub response_contract: Option<ResponseContract>,
    pub baseline_version: Option<u32>,
    pub last_checked_at: Option<OffsetDateTime>,
    /// Milliseconds, from the last check.
    pub response_time: Option<u32>,
    pub breaking_count: u32,
    pub warning_count: u32,
    pub created_at: OffsetDateTime,
    /// Set by every write to the row.
    pub updated_at: OffsetDateTime,
    /// Scheduled runs skip a paused endpoint.
    pub paused: bool,
    /// The version of the editable state: 1 at creation, +1 on every
    /// [`crate::LifecycleStore::update_endpoint`]; checks, health and figures leave it. The API
    /// sends it as the strong `ETag` and compares `If-Match` with it.
    pub version: i64,
    /// Not a column: the adapters read `None`; the read use cases fill it from the checks
    /// history ([`crate::LifecycleStore::uptime_counts`], [`crate::rules::uptime`]).
    pub uptime: Option<apidrift_model::Uptime>,
    /// When the next scheduled check is due (the schedule row's next run), read with the
    /// endpoint by [`crate::Store::get_endpoint`], [`crate::Store::list_endpoints`] (one batched
    /// read per page) and the result of [`crate::LifecycleStore::update_endpoint`]; `None` when
    /// the endpoint has no schedule, is paused, or the scheduler has not created its schedule
    /// row yet ([`crate::rules::visible_next_run`]), and always `None` on the rows a create
    /// returns (the scheduler creates their schedule rows afterwards).
    pub next_run_at: Option<OffsetDateTime>,
}

impl StoredEndpoint {
    /// The wire form (no credential, no headers, no contract body). The answer shows the
    /// settings the API documents for an endpoint, `schedule` and `nextRunAt` included;
    /// `contentType`, `ignorePaths` and `followRedirects` are read in the console's edit form,
    /// not in the answer.
    pub fn to_model(&self) -> Endpoint {
        let s = &self.settings;
        Endpoint {
            id: self.id,
            key: s.key.clone(),
            name: s.name.clone(),
            url: s.url.clone(),
            method: s.method,
            environment: s.environment.clone(),
            tags: s.tags.clone(),
            description: s.description.clone(),
            health: self.health,
            auth_type: self.secrets.auth_type,
            diff_mode: s.diff_mode,
            timeout_ms: Some(s.timeout_ms),
            baseline_version: self.baseline_version,
            has_response_contract: self.response_contract.is_some(),
            last_checked_at: self.last_checked_at,
            response_time: self.response_time,
            breaking_count: self.breaking_count,
            warning_count: self.warning_count,
            created_at: Some(self.created_at),
            updated_at: Some(self.updated_at),
            paused: self.paused,
            retries: s.retries,
            identity_keys: s.identity_keys.clone(),
            severity_overrides: s.severity_overrides.clone(),
            max_response_time_ms: s.max_response_time_ms,
            slow_after: s.slow_after,
            uptime: self.uptime,
            schedule: s.schedule.map(Schedule::from),
            next_run_at: self.next_run_at,
        }
    }
}

/// Result of [`crate::Store::create_endpoints`].
#[derive(Debug, Clone, PartialEq)]
pub struct BulkCreated {
    /// The rows created, in input order (the first `created.len()` inputs).
    pub created: Vec<StoredEndpoint>,
    /// Inputs past the plan limit, not created (the last `not_created` inputs).
    pub not_created: usize,
    /// Endpoints the workspace held before this call.
    pub existing: u64,
    /// The workspace's limit at the time (`None` = unlimited).
    pub endpoint_limit: Option<u32>,
}

impl BulkCreated {
    /// True when the workspace was already at its limit before the call (the API's 402).
    pub fn limit_already_reached(&self) -> bool {
        crate::rules::endpoints_that_fit(self.endpoint_limit, self.existing, 1) == 0
    }
}

/// Filters of `GET /endpoints`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EndpointFilter {
    pub health: Option<Health>,
    pub environment: Option<String>,
}

/// Filters of `GET /diffs`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiffFilter {
    pub endpoint_id: Option<Uuid>,
    /// Diffs created at or after this instant.
    pub since: Option<OffsetDateTime>,
    /// Only diffs with at least one breaking change.
    pub breaking_only: bool,
}

/// A page request: `limit` rows after skipping `offset`. The store does not clamp; the API does
/// (D5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: u32,
    pub offset: u64,
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest {
            limit: 25,
            offset: 0,
        }
    }
}

/// One page of a list and the number of rows matching the filters, ignoring pagination.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: u64,
}

// -------------------------------------------------------------------- baselines

/// Input of [`crate::Store::record_baseline`]; the version is assigned by the store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBaseline {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    /// The captured HTTP status.
    pub status: u16,
    pub content_type: Option<String>,
    /// The tracked headers (D9) as a JSON object of lower-case name → value.
    pub headers: Value,
    /// The sealed response body.
    pub sealed_body: Vec<u8>,
    /// The inferred shape (JSON).
    pub shape: Value,
    pub captured_at: OffsetDateTime,
    /// Leaf paths learned volatile from several samples (D20), ignored by full-mode checks.
    pub volatile_paths: Vec<String>,
}

/// A stored baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredBaseline {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub endpoint_id: Uuid,
    /// 1, 2, … per endpoint.
    pub version: u32,
    pub status: u16,
    pub content_type: Option<String>,
    pub headers: Value,
    pub sealed_body: Vec<u8>,
    pub shape: Value,
    pub captured_at: OffsetDateTime,
    /// Leaf paths learned volatile from several samples (D20), ignored by full-mode checks.
    pub volatile_paths: Vec<String>,
}

// -------------------------------------------------------------------- checks and diffs

/// Input of [`crate::Store::record_check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCheck {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub started_at: OffsetDateTime,
    pub finished_at: OffsetDateTime,
    /// `None` when the fetch produced no response.
    pub http_status: Option<u16>,
    /// Milliseconds.
    pub response_time: Option<u32>,
    /// Short machine word for a failed fetch (`dns`, `connect`, `tls`, `timeout`, `too_large`, …).
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    /// The response's content type, tracked headers (JSON object) and sealed body, kept so that
    /// accepting this check's diff can promote the response to a baseline (D12). Callers keep
    /// them only for checks that record a diff.
    pub content_type: Option<String>,
    pub headers: Option<Value>,
    pub sealed_body: Option<Vec<u8>>,
    /// Run by a schedule (false: a manual check).
    pub scheduled: bool,
}

/// A stored check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCheck {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub endpoint_id: Uuid,
    pub started_at: OffsetDateTime,
    pub finished_at: OffsetDateTime,
    pub http_status: Option<u16>,
    pub response_time: Option<u32>,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    pub content_type: Option<String>,
    pub headers: Option<Value>,
    pub sealed_body: Option<Vec<u8>>,
    pub diff_id: Option<Uuid>,
    /// Run by a schedule (false: a manual check).
    pub scheduled: bool,
}

/// Input of [`crate::Store::record_check`]'s diff. Counts are computed from `changes`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDiff {
    pub id: Uuid,
    /// The baseline the check compared against.
    pub baseline_id: Option<Uuid>,
    pub changes: Vec<DiffChange>,
    pub summary: Option<Map<String, Value>>,
    pub created_at: OffsetDateTime,
    /// The fingerprint of `changes` (D11: their set of (path, type, severity)), the one the
    /// alert draft carries. A later check with the same fingerprint while this diff is open is
    /// linked to it instead of writing a diff (D26); `None` is never joined.
    pub fingerprint: Option<String>,
}

/// An endpoint's open diff: not accepted and not closed by a clean check or a different drift.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenDiff {
    pub id: Uuid,
    /// The baseline it was compared with.
    pub baseline_id: Option<Uuid>,
    pub fingerprint: Option<String>,
}

/// The diff a check was recorded with (a new one, or the open one it was linked to) and how
/// often its drift was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffSeen {
    pub id: Uuid,
    pub first_seen_at: OffsetDateTime,
    pub last_seen_at: OffsetDateTime,
    pub seen_count: u32,
}

/// Result of [`crate::Store::record_check`].
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCheck {
    pub check: StoredCheck,
    pub counts: DiffCounts,
    /// The health written to the endpoint.
    pub health: Health,
    /// The check's diff: the one it wrote, or the open diff of the same fingerprint it was
    /// linked to (D26); `None` for a check without changes.
    pub diff: Option<DiffSeen>,
}

/// Result of [`crate::Store::accept_diff`].
#[derive(Debug, Clone, PartialEq)]
pub struct AcceptOutcome {
    /// False when the diff was already accepted (nothing changed).
    pub newly_accepted: bool,
    /// The baseline recorded by this call.
    pub baseline: Option<StoredBaseline>,
    /// Whether the endpoint's health was set `healthy` (the diff was its latest).
    pub health_reset: bool,
}

/// Severity counts of a change list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiffCounts {
    pub breaking: u32,
    pub warning: u32,
    pub info: u32,
    pub changes: u32,
}

impl DiffCounts {
    pub fn of(changes: &[DiffChange]) -> Self {
        let mut c = DiffCounts::default();
        for ch in changes {
            match ch.severity {
                Severity::Breaking => c.breaking += 1,
                Severity::Warning => c.warning += 1,
                Severity::Info => c.info += 1,
                // A severity added after this version is counted as a change only.
                _ => {}
            }
            c.changes += 1;
        }
        c
    }

    /// The health D7 gives an endpoint after a check with these counts.
    pub fn health(&self) -> Health {
        if self.breaking > 0 {
            Health::Breaking
        } else if self.warning > 0 {
            Health::Warning
        } else {
            Health::Healthy
        }
    }
}

/// Serialises a change list for the `changes` column (a JSON array of the wire form, which keeps
/// absent `oldValue`/`newValue` absent and `null` as `null`).
pub fn changes_to_json(changes: &[DiffChange]) -> Result<Value, crate::StoreError> {
    serde_json::to_value(changes).map_err(|e| crate::StoreError::InvalidInput(e.to_string()))
}

/// Reads a `changes` column back.
pub fn changes_from_json(value: Value) -> Result<Vec<DiffChange>, crate::StoreError> {
    serde_json::from_value(value).map_err(|e| crate::StoreError::corrupt("diffs.changes", e))
}

// -------------------------------------------------------------------- rate limits

/// What [`crate::Store::rate_limit_read`] sees: the database clock and a key's stored TAT, both
/// in nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitRow {
    pub now_nanos: i64,
    /// `None` when the key has no row (a full budget).
    pub tat: Option<i64>,
}

// -------------------------------------------------------------------- sealed values

/// A column holding sealed values, for key rotation. Later issues add webhook secrets here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SealedField {
    /// `endpoints.sealed_auth`.
    EndpointAuth,
    /// `endpoints.sealed_headers`.
    EndpointHeaders,
    /// `baselines.sealed_body`.
    BaselineBody,
    /// `checks.sealed_body`.
    CheckBody,
    /// `endpoints.sealed_request_body`.
    EndpointRequestBody,
    /// `webhooks.sealed_secret` (D11).
    WebhookSecret,
}

impl SealedField {
    /// Every sealed column.
    pub const ALL: &'static [SealedField] = &[
        SealedField::EndpointAuth,
        SealedField::EndpointHeaders,
        SealedField::EndpointRequestBody,
        SealedField::BaselineBody,
        SealedField::CheckBody,
        SealedField::WebhookSecret,
    ];

    /// `table.column`, the name the seal crate binds into the associated data.
    pub const fn column(self) -> &'static str {
        match self {
            SealedField::EndpointAuth => "endpoints.sealed_auth",
            SealedField::EndpointHeaders => "endpoints.sealed_headers",
            SealedField::BaselineBody => "baselines.sealed_body",
            SealedField::CheckBody => "checks.sealed_body",
            SealedField::EndpointRequestBody => "endpoints.sealed_request_body",
            SealedField::WebhookSecret => "webhooks.sealed_secret",
        }
    }
}

/// One sealed value with what binds it: workspace, row and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedValue {
    pub field: SealedField,
    pub workspace_id: Uuid,
    pub row_id: Uuid,
    pub blob: Vec<u8>,
}

// -------------------------------------------------------------------- shared helpers

/// Lists stored as a JSON array of strings (tags, ignore paths).
pub fn strings_to_json(items: &[String]) -> String {
    Value::Array(items.iter().cloned().map(Value::String).collect()).to_string()
}

/// Reads [`strings_to_json`] back.
pub fn strings_from_json(column: &str, text: &str) -> Result<Vec<String>, crate::StoreError> {
    serde_json::from_str(text).map_err(|e| crate::StoreError::corrupt(column, e))
}

/// A list of severity overrides stored as its JSON wire form.
pub fn overrides_to_json(items: &[apidrift_model::SeverityOverride]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".into())
}

/// Reads [`overrides_to_json`] back.
pub fn overrides_from_json(
    column: &str,
    text: &str,
) -> Result<Vec<apidrift_model::SeverityOverride>, crate::StoreError> {
    serde_json::from_str(text).map_err(|e| crate::StoreError::corrupt(column, e))
}

/// A map stored as a JSON object of strings (identity keys).
pub fn string_map_to_json(map: &BTreeMap<String, String>) -> String {
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
    .to_string()
}

/// Reads [`string_map_to_json`] back.
pub fn string_map_from_json(
    column: &str,
    text: &str,
) -> Result<BTreeMap<String, String>, crate::StoreError> {
    serde_json::from_str(text).map_err(|e| crate::StoreError::corrupt(column, e))
}

/// The `endpoints.latency` column: an endpoint's `maxResponseTimeMs` and `slowAfter` as one JSON
/// object (`{"maxResponseTimeMs": 800, "slowAfter": 3}`; one column keeps the table within
/// diesel's 32 columns).
pub fn latency_to_json(settings: &apidrift_model::EndpointSettings) -> Value {
    let mut map = serde_json::Map::new();
    if let Some(ms) = settings.max_response_time_ms {
        map.insert("maxResponseTimeMs".into(), Value::from(ms));
    }
    map.insert("slowAfter".into(), Value::from(settings.slow_after));
    Value::Object(map)
}

/// Reads [`latency_to_json`] back: (`maxResponseTimeMs`, `slowAfter`).
pub fn latency_from_json(
    column: &str,
    value: &Value,
) -> Result<(Option<u32>, u8), crate::StoreError> {
    let corrupt = || crate::StoreError::corrupt(column, "not a latency object");
    let max = match value.get("maxResponseTimeMs") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(corrupt)?,
        ),
    };
    let slow_after = match value.get("slowAfter") {
        None => apidrift_model::validate::DEFAULT_SLOW_AFTER,
        Some(v) => v
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .ok_or_else(corrupt)?,
    };
    Ok((max, slow_after))
}

/// Parses an enum column stored as its wire spelling.
pub fn parse_enum<T: std::str::FromStr>(column: &str, text: &str) -> Result<T, crate::StoreError>
where
    T::Err: std::fmt::Display,
{
    text.parse()
        .map_err(|e| crate::StoreError::corrupt(column, e))
}

/// A non-negative integer column into `u32`.
pub fn to_u32(column: &str, v: i64) -> Result<u32, crate::StoreError> {
    u32::try_from(v).map_err(|e| crate::StoreError::corrupt(column, e))
}

/// A non-negative integer column into `u16`.
pub fn to_u16(column: &str, v: i32) -> Result<u16, crate::StoreError> {
    u16::try_from(v).map_err(|e| crate::StoreError::corrupt(column, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use apidrift_model::ChangeType;
    use time::macros::datetime;

    #[test]
    fn month_key_is_utc_calendar_month() {
        assert_eq!(month_key(datetime!(2026-11-30 23:30 -02:00)), "2026-12");
        assert_eq!(month_key(datetime!(2026-01-01 00:00 UTC)), "2026-01");
    }

    #[test]
    fn scopes_round_trip() -> Result<(), crate::StoreError> {
        let scopes = vec![Scope::EndpointsRead, Scope::ChecksRun];
        assert_eq!(scopes_from_text(&scopes_to_text(&scopes))?, scopes);
        assert_eq!(scopes_from_text("")?, Vec::<Scope>::new());
        assert!(scopes_from_text("endpoints:read,bogus").is_err());
        Ok(())
    }

    #[test]
    fn counts_and_health() {
        let change = |severity| DiffChange {
            id: "x".into(),
            path: "$.a".into(),
            change_type: ChangeType::Changed,
            severity,
            message: "m".into(),
            old_value: None,
            new_value: Some(Value::Null),
            old_type: None,
            new_type: None,
        };
        let c = DiffCounts::of(&[change(Severity::Info), change(Severity::Warning)]);
        assert_eq!(
            c,
            DiffCounts {
                breaking: 0,
                warning: 1,
                info: 1,
                changes: 2
            }
        );
        assert_eq!(c.health(), Health::Warning);
        assert_eq!(DiffCounts::default().health(), Health::Healthy);
        assert_eq!(
            DiffCounts::of(&[change(Severity::Breaking)]).health(),
            Health::Breaking
        );
    }

    #[test]
    fn changes_keep_absent_versus_null() -> Result<(), crate::StoreError> {
        let change = DiffChange {
            id: "x".into(),
            path: "$.a".into(),
            change_type: ChangeType::NullabilityChanged,
            severity: Severity::Breaking,
            message: "m".into(),
            old_value: None,
            new_value: Some(Value::Null),
            old_type: Some("string".into()),
            new_type: Some("null".into()),
        };
        let json = changes_to_json(std::slice::from_ref(&change))?;
        assert_eq!(json[0].get("oldValue"), None);
        assert_eq!(json[0].get("newValue"), Some(&Value::Null));
        assert_eq!(changes_from_json(json)?, vec![change]);
        Ok(())
    }
}
