//! Row structs of the SQLite schema and their mapping to and from the store's types.

use crate::schema::{baselines, checks, endpoints, tokens, workspaces};
use apidrift_model::EndpointSettings;
use apidrift_store::{
    NewBaseline, NewEndpointRow, NewToken, NewWorkspace, ResponseContract, SealedSecrets,
    StoreError, StoredBaseline, StoredCheck, StoredEndpoint, StoredToken, Workspace,
    latency_from_json, latency_to_json, overrides_from_json, overrides_to_json, parse_enum,
    scopes_from_text, scopes_to_text, string_map_from_json, string_map_to_json, strings_from_json,
    strings_to_json, to_u16, to_u32,
};
use diesel::prelude::*;
use diesel::sqlite::Sqlite;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

/// A timestamp as stored: microseconds since the Unix epoch (UTC).
pub fn ts(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000).unwrap_or(i64::MAX)
}

/// Reads [`ts`] back.
pub fn from_ts(column: &str, micros: i64) -> Result<OffsetDateTime, StoreError> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000)
        .map_err(|e| StoreError::corrupt(column, e))
}

pub(crate) fn from_ts_opt(
    column: &str,
    micros: Option<i64>,
) -> Result<Option<OffsetDateTime>, StoreError> {
    micros.map(|m| from_ts(column, m)).transpose()
}

/// A uuid as stored: lower-case hyphenated text (its text order is the uuid order).
pub fn id(u: Uuid) -> String {
    u.hyphenated().to_string()
}

/// Reads [`id`] back.
pub fn parse_id(column: &str, text: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(text).map_err(|e| StoreError::corrupt(column, e))
}

/// A `u32` for an INTEGER column.
pub fn int(column: &str, v: u32) -> Result<i32, StoreError> {
    i32::try_from(v).map_err(|_| StoreError::InvalidInput(format!("{column}: {v} is too large")))
}

fn json_text(column: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::corrupt(column, e))
}

pub fn contract_to_text(c: &ResponseContract) -> Result<String, StoreError> {
    serde_json::to_string(c).map_err(|e| StoreError::InvalidInput(e.to_string()))
}

fn contract_from_text(text: Option<&str>) -> Result<Option<ResponseContract>, StoreError> {
    text.map(|t| {
        serde_json::from_str(t).map_err(|e| StoreError::corrupt("endpoints.response_contract", e))
    })
    .transpose()
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = workspaces, check_for_backend(Sqlite))]
pub struct WorkspaceRow {
    pub id: String,
    pub name: String,
    pub plan: String,
    pub endpoint_limit: Option<i32>,
    pub check_quota: Option<i32>,
    pub created_at: i64,
    pub severity_overrides: String,
    pub version: i64,
}

impl WorkspaceRow {
    pub fn new(w: &NewWorkspace) -> Result<Self, StoreError> {
        Ok(WorkspaceRow {
            id: id(w.id),
            name: w.name.clone(),
            plan: w.plan.as_str().to_owned(),
            endpoint_limit: w
                .endpoint_limit
                .map(|v| int("endpoint_limit", v))
                .transpose()?,
            check_quota: w.check_quota.map(|v| int("check_quota", v)).transpose()?,
            created_at: ts(w.created_at),
            severity_overrides: overrides_to_json(&[]),
            version: 1,
        })
    }

    pub fn into_model(self) -> Result<Workspace, StoreError> {
        Ok(Workspace {
            id: parse_id("workspaces.id", &self.id)?,
            name: self.name,
            plan: parse_enum("workspaces.plan", &self.plan)?,
            endpoint_limit: self
                .endpoint_limit
                .map(|v| to_u32("workspaces.endpoint_limit", v.into()))
                .transpose()?,
            check_quota: self
                .check_quota
                .map(|v| to_u32("workspaces.check_quota", v.into()))
                .transpose()?,
            created_at: from_ts("workspaces.created_at", self.created_at)?,
            severity_overrides: overrides_from_json(
                "workspaces.severity_overrides",
                &self.severity_overrides,
            )?,
            version: self.version,
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = tokens, check_for_backend(Sqlite))]
pub struct TokenRow {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub token_hash: String,
    pub hint: String,
    pub scopes: String,
    pub role: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub last_used_at: Option<i64>,
}

impl TokenRow {
    pub fn new(t: &NewToken) -> Self {
        TokenRow {
            id: id(t.id),
            workspace_id: id(t.workspace_id),
            name: t.name.clone(),
            token_hash: t.token_hash.clone(),
            hint: t.hint.clone(),
            scopes: scopes_to_text(&t.scopes),
            role: t.role.as_str().to_owned(),
            created_at: ts(t.created_at),
            expires_at: t.expires_at.map(ts),
            revoked_at: None,
            last_used_at: None,
        }
    }

    pub fn into_model(self) -> Result<StoredToken, StoreError> {
        Ok(StoredToken {
            id: parse_id("tokens.id", &self.id)?,
            workspace_id: parse_id("tokens.workspace_id", &self.workspace_id)?,
            name: self.name,
            token_hash: self.token_hash,
            hint: self.hint,
            scopes: scopes_from_text(&self.scopes)?,
            role: parse_enum("tokens.role", &self.role)?,
            created_at: from_ts("tokens.created_at", self.created_at)?,
            expires_at: from_ts_opt("tokens.expires_at", self.expires_at)?,
            revoked_at: from_ts_opt("tokens.revoked_at", self.revoked_at)?,
            last_used_at: from_ts_opt("tokens.last_used_at", self.last_used_at)?,
        })
    }
}

/// The columns of an endpoint's [`EndpointSettings`]: the one mapping of the settings to and from
/// the row, for inserts, reads and updates alike.
#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = endpoints, check_for_backend(Sqlite), treat_none_as_null = true)]
pub struct SettingsColumns {
    pub key: Option<String>,
    pub name: String,
    pub url: String,
    pub method: String,
    pub environment: String,
    pub description: Option<String>,
    pub tags: String,
    pub content_type: String,
    pub diff_mode: String,
    pub timeout_ms: i32,
    pub schedule: Option<String>,
    pub ignore_paths: String,
    pub follow_redirects: bool,
    pub retries: i32,
    pub identity_keys: String,
    pub severity_overrides: String,
    pub latency: String,
}

impl SettingsColumns {
    pub fn new(s: &EndpointSettings) -> Result<Self, StoreError> {
        Ok(SettingsColumns {
            key: s.key.clone(),
            name: s.name.clone(),
            url: s.url.clone(),
            method: s.method.as_str().to_owned(),
            environment: s.environment.clone(),
            description: s.description.clone(),
            tags: strings_to_json(&s.tags),
            content_type: s.content_type.clone(),
            diff_mode: s.diff_mode.as_str().to_owned(),
            timeout_ms: int("timeout_ms", s.timeout_ms)?,
            schedule: s.schedule.map(|c| c.to_string()),
            ignore_paths: strings_to_json(&s.ignore_paths),
            follow_redirects: s.follow_redirects,
            retries: i32::from(s.retries),
            identity_keys: string_map_to_json(&s.identity_keys),
            severity_overrides: overrides_to_json(&s.severity_overrides),
            latency: latency_to_json(s).to_string(),
        })
    }

    pub fn into_settings(self) -> Result<EndpointSettings, StoreError> {
        let (max_response_time_ms, slow_after) = latency_from_json(
            "endpoints.latency",
            &json_text("endpoints.latency", &self.latency)?,
        )?;
        Ok(EndpointSettings {
            key: self.key,
            name: self.name,
            url: self.url,
            method: parse_enum("endpoints.method", &self.method)?,
            environment: self.environment,
            description: self.description,
            tags: strings_from_json("endpoints.tags", &self.tags)?,
            content_type: self.content_type,
            diff_mode: parse_enum("endpoints.diff_mode", &self.diff_mode)?,
            timeout_ms: to_u32("endpoints.timeout_ms", self.timeout_ms.into())?,
            schedule: self
                .schedule
                .map(|s| parse_enum("endpoints.schedule", &s))
                .transpose()?,
            ignore_paths: strings_from_json("endpoints.ignore_paths", &self.ignore_paths)?,
            follow_redirects: self.follow_redirects,
            retries: u8::try_from(self.retries)
                .map_err(|e| StoreError::corrupt("endpoints.retries", e))?,
            identity_keys: string_map_from_json("endpoints.identity_keys", &self.identity_keys)?,
            severity_overrides: overrides_from_json(
                "endpoints.severity_overrides",
                &self.severity_overrides,
            )?,
            max_response_time_ms,
            slow_after,
        })
    }
}

/// The columns of an endpoint's [`SealedSecrets`].
#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = endpoints, check_for_backend(Sqlite), treat_none_as_null = true)]
pub struct SecretColumns {
    pub auth_type: String,
    pub sealed_auth: Option<Vec<u8>>,
    pub sealed_headers: Option<Vec<u8>>,
    pub sealed_request_body: Option<Vec<u8>>,
}

impl SecretColumns {
    pub fn new(s: &SealedSecrets) -> Self {
        SecretColumns {
            auth_type: s.auth_type.as_str().to_owned(),
            sealed_auth: s.sealed_auth.clone(),
            sealed_headers: s.sealed_headers.clone(),
            sealed_request_body: s.sealed_request_body.clone(),
        }
    }

    pub fn into_secrets(self) -> Result<SealedSecrets, StoreError> {
        Ok(SealedSecrets {
            auth_type: parse_enum("endpoints.auth_type", &self.auth_type)?,
            sealed_auth: self.sealed_auth,
            sealed_headers: self.sealed_headers,
            sealed_request_body: self.sealed_request_body,
        })
    }
}

/// The columns of an endpoint that every read of it maps alike, whole rows and list rows: its
/// health, latest-check figures, timestamps, pause and version.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = endpoints, check_for_backend(Sqlite))]
pub struct FigureColumns {
    pub health: String,
    pub baseline_version: Option<i32>,
    pub last_checked_at: Option<i64>,
    pub response_time: Option<i32>,
    pub breaking_count: i32,
    pub warning_count: i32,
    pub created_at: i64,
    pub updated_at: i64,
    pub paused: bool,
    pub version: i64,
}

impl FigureColumns {
    /// A new endpoint's: health unknown, no check yet, version 1.
    fn new(created_at: OffsetDateTime) -> Self {
        FigureColumns {
            health: apidrift_model::Health::Unknown.as_str().to_owned(),
            baseline_version: None,
            last_checked_at: None,
            response_time: None,
            breaking_count: 0,
            warning_count: 0,
            created_at: ts(created_at),
            updated_at: ts(created_at),
            paused: false,
            version: 1,
        }
    }

    /// The endpoint of these figures with the columns each read maps its own way; `uptime` and
    /// `next_run_at` are the reads' to fill.
    pub fn into_endpoint(
        self,
        (id, workspace_id): (Uuid, Uuid),
        settings: SettingsColumns,
        secrets: SealedSecrets,
        response_contract: Option<ResponseContract>,
    ) -> Result<StoredEndpoint, StoreError> {
        let u = |c: &str, v: i32| to_u32(c, v.into());
        Ok(StoredEndpoint {
            id,
            workspace_id,
            settings: settings.into_settings()?,
            secrets,
            health: parse_enum("endpoints.health", &self.health)?,
            response_contract,
            baseline_version: self
                .baseline_version
                .map(|v| u("endpoints.baseline_version", v))
                .transpose()?,
            last_checked_at: from_ts_opt("endpoints.last_checked_at", self.last_checked_at)?,
            response_time: self
                .response_time
                .map(|v| u("endpoints.response_time", v))
                .transpose()?,
            breaking_count: u("endpoints.breaking_count", self.breaking_count)?,
            warning_count: u("endpoints.warning_count", self.warning_count)?,
            created_at: from_ts("endpoints.created_at", self.created_at)?,
            updated_at: from_ts("endpoints.updated_at", self.updated_at)?,
            paused: self.paused,
            version: self.version,
            uptime: None,
            // Read from the schedules table by the endpoint reads (`with_next_runs`).
            next_run_at: None,
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = endpoints, check_for_backend(Sqlite))]
pub struct EndpointRow {
    pub id: String,
    pub workspace_id: String,
    #[diesel(embed)]
    pub settings: SettingsColumns,
    #[diesel(embed)]
    pub secrets: SecretColumns,
    pub response_contract: Option<String>,
    #[diesel(embed)]
    pub figures: FigureColumns,
}

impl EndpointRow {
    pub fn new(workspace_id: Uuid, e: &NewEndpointRow) -> Result<Self, StoreError> {
        Ok(EndpointRow {
            id: id(e.id),
            workspace_id: id(workspace_id),
            settings: SettingsColumns::new(&e.settings)?,
            secrets: SecretColumns::new(&e.secrets),
            response_contract: e
                .response_contract
                .as_ref()
                .map(contract_to_text)
                .transpose()?,
            figures: FigureColumns::new(e.created_at),
        })
    }

    pub fn into_model(self) -> Result<StoredEndpoint, StoreError> {
        self.figures.into_endpoint(
            (
                parse_id("endpoints.id", &self.id)?,
                parse_id("endpoints.workspace_id", &self.workspace_id)?,
            ),
            self.settings,
            self.secrets.into_secrets()?,
            contract_from_text(self.response_contract.as_deref())?,
        )
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = baselines, check_for_backend(Sqlite))]
pub struct BaselineRow {
    pub id: String,
    pub workspace_id: String,
    pub endpoint_id: String,
    pub version: i32,
    pub status: i32,
    pub content_type: Option<String>,
    pub headers: String,
    pub sealed_body: Vec<u8>,
    pub shape: String,
    pub captured_at: i64,
    pub volatile_paths: String,
}

impl BaselineRow {
    pub fn new(workspace_id: Uuid, b: &NewBaseline, version: i32) -> Self {
        BaselineRow {
            id: id(b.id),
            workspace_id: id(workspace_id),
            endpoint_id: id(b.endpoint_id),
            version,
            status: i32::from(b.status),
            content_type: b.content_type.clone(),
            headers: b.headers.to_string(),
            sealed_body: b.sealed_body.clone(),
            shape: b.shape.to_string(),
            captured_at: ts(b.captured_at),
            volatile_paths: strings_to_json(&b.volatile_paths),
        }
    }

    pub fn into_model(self) -> Result<StoredBaseline, StoreError> {
        Ok(StoredBaseline {
            id: parse_id("baselines.id", &self.id)?,
            workspace_id: parse_id("baselines.workspace_id", &self.workspace_id)?,
            endpoint_id: parse_id("baselines.endpoint_id", &self.endpoint_id)?,
            version: to_u32("baselines.version", self.version.into())?,
            status: to_u16("baselines.status", self.status)?,
            content_type: self.content_type,
            headers: json_text("baselines.headers", &self.headers)?,
            sealed_body: self.sealed_body,
            shape: json_text("baselines.shape", &self.shape)?,
            captured_at: from_ts("baselines.captured_at", self.captured_at)?,
            volatile_paths: strings_from_json("baselines.volatile_paths", &self.volatile_paths)?,
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = checks, check_for_backend(Sqlite))]
pub struct CheckRow {
    pub id: String,
    pub workspace_id: String,
    pub endpoint_id: String,
    pub started_at: i64,
    pub finished_at: i64,
    pub http_status: Option<i32>,
    pub response_time: Option<i32>,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    pub content_type: Option<String>,
    pub headers: Option<String>,
    pub sealed_body: Option<Vec<u8>>,
    pub diff_id: Option<String>,
    pub scheduled: bool,
}

impl CheckRow {
    pub fn into_model(self) -> Result<StoredCheck, StoreError> {
        Ok(StoredCheck {
            id: parse_id("checks.id", &self.id)?,
            workspace_id: parse_id("checks.workspace_id", &self.workspace_id)?,
            endpoint_id: parse_id("checks.endpoint_id", &self.endpoint_id)?,
            started_at: from_ts("checks.started_at", self.started_at)?,
            finished_at: from_ts("checks.finished_at", self.finished_at)?,
            http_status: self
                .http_status
                .map(|v| to_u16("checks.http_status", v))
                .transpose()?,
            response_time: self
                .response_time
                .map(|v| to_u32("checks.response_time", v.into()))
                .transpose()?,
            error_kind: self.error_kind,
            error_message: self.error_message,
            content_type: self.content_type,
            headers: self
                .headers
                .map(|h| json_text("checks.headers", &h))
                .transpose()?,
            sealed_body: self.sealed_body,
            diff_id: self
                .diff_id
                .map(|d| parse_id("checks.diff_id", &d))
                .transpose()?,
            scheduled: self.scheduled,
        })
    }
}

/// The columns of a diff summary plus the endpoint name (from the join).
pub type SummaryTuple = (
    String,
    String,
    String,
    i64,
    bool,
    i32,
    i32,
    i32,
    i32,
    (i64, i64, i32),
);

/// The columns of a diff detail beyond the summary.
pub type DetailTuple = (SummaryTuple, Option<String>, String, String, Option<String>);

pub fn summary_from(t: SummaryTuple) -> Result<apidrift_model::DiffSummary, StoreError> {
    let (id, endpoint_id, name, created_at, accepted, b, w, i, c, (first, last, seen)) = t;
    let u = |col: &str, v: i32| to_u32(col, v.into());
    Ok(apidrift_model::DiffSummary {
        id: parse_id("diffs.id", &id)?,
        endpoint_id: Some(parse_id("diffs.endpoint_id", &endpoint_id)?),
        endpoint_name: Some(name),
        created_at: Some(from_ts("diffs.created_at", created_at)?),
        accepted,
        breaking_count: u("diffs.breaking_count", b)?,
        warning_count: u("diffs.warning_count", w)?,
        info_count: u("diffs.info_count", i)?,
        change_count: u("diffs.change_count", c)?,
        first_seen_at: Some(from_ts("diffs.first_seen_at", first)?),
        last_seen_at: Some(from_ts("diffs.last_seen_at", last)?),
        seen_count: u("diffs.seen_count", seen)?,
    })
}

pub fn detail_from(t: DetailTuple) -> Result<apidrift_model::DiffDetail, StoreError> {
    let (summary, baseline_id, check_id, changes, extra) = t;
    let summary_map = match extra {
        None => None,
        Some(text) => match json_text("diffs.summary", &text)? {
            Value::Object(map) => Some(map),
            _ => return Err(StoreError::corrupt("diffs.summary", "not a JSON object")),
        },
    };
    Ok(apidrift_model::DiffDetail {
        base: summary_from(summary)?,
        changes: apidrift_store::changes_from_json(json_text("diffs.changes", &changes)?)?,
        baseline_id: baseline_id
            .map(|b| parse_id("diffs.baseline_id", &b))
            .transpose()?,
        check_id: Some(parse_id("diffs.check_id", &check_id)?),
        summary: summary_map,
    })
}
