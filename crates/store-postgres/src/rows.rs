//! Row structs of the PostgreSQL schema and their mapping to and from the store's types.

use crate::escape::{read_json, read_opt, store_json, store_opt};
use crate::schema::{baselines, checks, endpoints, tokens, workspaces};
use apidrift_model::EndpointSettings;
use apidrift_store::{
    NewBaseline, NewEndpointRow, NewToken, NewWorkspace, ResponseContract, SealedSecrets,
    StoreError, StoredBaseline, StoredCheck, StoredEndpoint, StoredToken, Workspace,
    latency_from_json, latency_to_json, parse_enum, scopes_from_text, scopes_to_text, to_u16,
    to_u32,
};
use diesel::pg::Pg;
use diesel::prelude::*;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

/// Truncates to the microsecond precision of `timestamptz`, so a value built from an input
/// equals the value read back.
pub fn micros(t: OffsetDateTime) -> OffsetDateTime {
    let nanos = t.nanosecond();
    t.replace_nanosecond(nanos - nanos % 1_000).unwrap_or(t)
}

/// A `u32` for an `int4` column.
pub fn int(column: &str, v: u32) -> Result<i32, StoreError> {
    i32::try_from(v).map_err(|_| StoreError::InvalidInput(format!("{column}: {v} is too large")))
}

// Every jsonb value is written through `store_json` and read through `read_json`, and every
// monitored text column through `store_opt`/`read_opt` (see `crate::escape`).

pub(crate) fn strings(items: &[String]) -> Value {
    store_json(Value::Array(
        items.iter().cloned().map(Value::String).collect(),
    ))
}

pub(crate) fn string_map(map: &std::collections::BTreeMap<String, String>) -> Value {
    store_json(Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    ))
}

fn string_map_from(
    column: &str,
    v: Value,
) -> Result<std::collections::BTreeMap<String, String>, StoreError> {
    serde_json::from_value(read_json(v)).map_err(|e| StoreError::corrupt(column, e))
}

/// A list of severity overrides as its JSON wire form.
pub(crate) fn overrides(items: &[apidrift_model::SeverityOverride]) -> Value {
    store_json(serde_json::to_value(items).unwrap_or_else(|_| Value::Array(Vec::new())))
}

pub(crate) fn overrides_from(
    column: &str,
    v: Value,
) -> Result<Vec<apidrift_model::SeverityOverride>, StoreError> {
    serde_json::from_value(read_json(v)).map_err(|e| StoreError::corrupt(column, e))
}

fn strings_from(column: &str, v: Value) -> Result<Vec<String>, StoreError> {
    serde_json::from_value(read_json(v)).map_err(|e| StoreError::corrupt(column, e))
}

pub fn contract_to_json(c: &ResponseContract) -> Result<Value, StoreError> {
    serde_json::to_value(c)
        .map(store_json)
        .map_err(|e| StoreError::InvalidInput(e.to_string()))
}

fn contract_from(v: Option<Value>) -> Result<Option<ResponseContract>, StoreError> {
    v.map(|v| {
        serde_json::from_value(read_json(v))
            .map_err(|e| StoreError::corrupt("endpoints.response_contract", e))
    })
    .transpose()
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = workspaces, check_for_backend(Pg))]
pub struct WorkspaceRow {
    pub id: Uuid,
    pub name: String,
    pub plan: String,
    pub endpoint_limit: Option<i32>,
    pub check_quota: Option<i32>,
    pub created_at: OffsetDateTime,
    pub severity_overrides: Value,
    pub version: i64,
}

impl WorkspaceRow {
    pub fn new(w: &NewWorkspace) -> Result<Self, StoreError> {
        Ok(WorkspaceRow {
            id: w.id,
            name: w.name.clone(),
            plan: w.plan.as_str().to_owned(),
            endpoint_limit: w
                .endpoint_limit
                .map(|v| int("endpoint_limit", v))
                .transpose()?,
            check_quota: w.check_quota.map(|v| int("check_quota", v)).transpose()?,
            created_at: micros(w.created_at),
            severity_overrides: overrides(&[]),
            version: 1,
        })
    }

    pub fn into_model(self) -> Result<Workspace, StoreError> {
        Ok(Workspace {
            id: self.id,
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
            created_at: self.created_at,
            severity_overrides: overrides_from(
                "workspaces.severity_overrides",
                self.severity_overrides,
            )?,
            version: self.version,
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = tokens, check_for_backend(Pg))]
pub struct TokenRow {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub name: String,
    pub token_hash: String,
    pub hint: String,
    pub scopes: String,
    pub role: String,
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
    pub last_used_at: Option<OffsetDateTime>,
}

impl TokenRow {
    pub fn new(t: &NewToken) -> Self {
        TokenRow {
            id: t.id,
            workspace_id: t.workspace_id,
            name: t.name.clone(),
            token_hash: t.token_hash.clone(),
            hint: t.hint.clone(),
            scopes: scopes_to_text(&t.scopes),
            role: t.role.as_str().to_owned(),
            created_at: micros(t.created_at),
            expires_at: t.expires_at.map(micros),
            revoked_at: None,
            last_used_at: None,
        }
    }

    pub fn into_model(self) -> Result<StoredToken, StoreError> {
        Ok(StoredToken {
            id: self.id,
            workspace_id: self.workspace_id,
            name: self.name,
            token_hash: self.token_hash,
            hint: self.hint,
            scopes: scopes_from_text(&self.scopes)?,
            role: parse_enum("tokens.role", &self.role)?,
            created_at: self.created_at,
            expires_at: self.expires_at,
            revoked_at: self.revoked_at,
            last_used_at: self.last_used_at,
        })
    }
}

/// The columns of an endpoint's [`EndpointSettings`]: the one mapping of the settings to and from
/// the row, for inserts, reads and updates alike.
#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = endpoints, check_for_backend(Pg), treat_none_as_null = true)]
pub struct SettingsColumns {
    pub key: Option<String>,
    pub name: String,
    pub url: String,
    pub method: String,
    pub environment: String,
    pub description: Option<String>,
    pub tags: Value,
    pub content_type: String,
    pub diff_mode: String,
    pub timeout_ms: i32,
    pub schedule: Option<String>,
    pub ignore_paths: Value,
    pub follow_redirects: bool,
    pub retries: i32,
    pub identity_keys: Value,
    pub severity_overrides: Value,
    pub latency: Value,
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
            tags: strings(&s.tags),
            content_type: s.content_type.clone(),
            diff_mode: s.diff_mode.as_str().to_owned(),
            timeout_ms: int("timeout_ms", s.timeout_ms)?,
            schedule: s.schedule.map(|c| c.to_string()),
            ignore_paths: strings(&s.ignore_paths),
            follow_redirects: s.follow_redirects,
            retries: i32::from(s.retries),
            identity_keys: string_map(&s.identity_keys),
            severity_overrides: overrides(&s.severity_overrides),
            latency: latency_to_json(s),
        })
    }

    pub fn into_settings(self) -> Result<EndpointSettings, StoreError> {
        let (max_response_time_ms, slow_after) =
            latency_from_json("endpoints.latency", &self.latency)?;
        Ok(EndpointSettings {
            key: self.key,
            name: self.name,
            url: self.url,
            method: parse_enum("endpoints.method", &self.method)?,
            environment: self.environment,
            description: self.description,
            tags: strings_from("endpoints.tags", self.tags)?,
            content_type: self.content_type,
            diff_mode: parse_enum("endpoints.diff_mode", &self.diff_mode)?,
            timeout_ms: to_u32("endpoints.timeout_ms", self.timeout_ms.into())?,
            schedule: self
                .schedule
                .map(|s| parse_enum("endpoints.schedule", &s))
                .transpose()?,
            ignore_paths: strings_from("endpoints.ignore_paths", self.ignore_paths)?,
            follow_redirects: self.follow_redirects,
            retries: u8::try_from(self.retries)
                .map_err(|e| StoreError::corrupt("endpoints.retries", e))?,
            identity_keys: string_map_from("endpoints.identity_keys", self.identity_keys)?,
            severity_overrides: overrides_from(
                "endpoints.severity_overrides",
                self.severity_overrides,
            )?,
            max_response_time_ms,
            slow_after,
        })
    }
}

/// The columns of an endpoint's [`SealedSecrets`].
#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = endpoints, check_for_backend(Pg), treat_none_as_null = true)]
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

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = endpoints, check_for_backend(Pg))]
pub struct EndpointRow {
    pub id: Uuid,
    pub workspace_id: Uuid,
    #[diesel(embed)]
    pub settings: SettingsColumns,
    #[diesel(embed)]
    pub secrets: SecretColumns,
    pub health: String,
    pub response_contract: Option<Value>,
    pub baseline_version: Option<i32>,
    pub last_checked_at: Option<OffsetDateTime>,
    pub response_time: Option<i32>,
    pub breaking_count: i32,
    pub warning_count: i32,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub paused: bool,
    pub version: i64,
}

impl EndpointRow {
    pub fn new(workspace_id: Uuid, e: &NewEndpointRow) -> Result<Self, StoreError> {
        Ok(EndpointRow {
            id: e.id,
            workspace_id,
            settings: SettingsColumns::new(&e.settings)?,
            secrets: SecretColumns::new(&e.secrets),
            health: apidrift_model::Health::Unknown.as_str().to_owned(),
            response_contract: e
                .response_contract
                .as_ref()
                .map(contract_to_json)
                .transpose()?,
            baseline_version: None,
            last_checked_at: None,
            response_time: None,
            breaking_count: 0,
            warning_count: 0,
            created_at: micros(e.created_at),
            updated_at: micros(e.created_at),
            paused: false,
            version: 1,
        })
    }

    pub fn into_model(self) -> Result<StoredEndpoint, StoreError> {
        let u = |c: &str, v: i32| to_u32(c, v.into());
        Ok(StoredEndpoint {
            id: self.id,
            workspace_id: self.workspace_id,
            settings: self.settings.into_settings()?,
            secrets: self.secrets.into_secrets()?,
            health: parse_enum("endpoints.health", &self.health)?,
            response_contract: contract_from(self.response_contract)?,
            baseline_version: self
                .baseline_version
                .map(|v| u("endpoints.baseline_version", v))
                .transpose()?,
            last_checked_at: self.last_checked_at,
            response_time: self
                .response_time
                .map(|v| u("endpoints.response_time", v))
                .transpose()?,
            breaking_count: u("endpoints.breaking_count", self.breaking_count)?,
            warning_count: u("endpoints.warning_count", self.warning_count)?,
            created_at: self.created_at,
            updated_at: self.updated_at,
            paused: self.paused,
            version: self.version,
            uptime: None,
            // Read from the schedules table by the endpoint reads (`with_next_runs`).
            next_run_at: None,
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = baselines, check_for_backend(Pg))]
pub struct BaselineRow {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub endpoint_id: Uuid,
    pub version: i32,
    pub status: i32,
    pub content_type: Option<String>,
    pub headers: Value,
    pub sealed_body: Vec<u8>,
    pub shape: Value,
    pub captured_at: OffsetDateTime,
    pub volatile_paths: Value,
}

impl BaselineRow {
    pub fn new(workspace_id: Uuid, b: &NewBaseline, version: i32) -> Self {
        BaselineRow {
            id: b.id,
            workspace_id,
            endpoint_id: b.endpoint_id,
            version,
            status: i32::from(b.status),
            content_type: store_opt(b.content_type.as_deref()),
            headers: store_json(b.headers.clone()),
            sealed_body: b.sealed_body.clone(),
            shape: store_json(b.shape.clone()),
            captured_at: micros(b.captured_at),
            volatile_paths: strings(&b.volatile_paths),
        }
    }

    pub fn into_model(self) -> Result<StoredBaseline, StoreError> {
        Ok(StoredBaseline {
            id: self.id,
            workspace_id: self.workspace_id,
            endpoint_id: self.endpoint_id,
            version: to_u32("baselines.version", self.version.into())?,
            status: to_u16("baselines.status", self.status)?,
            content_type: read_opt(self.content_type),
            headers: read_json(self.headers),
            sealed_body: self.sealed_body,
            shape: read_json(self.shape),
            captured_at: self.captured_at,
            volatile_paths: strings_from("baselines.volatile_paths", self.volatile_paths)?,
        })
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = checks, check_for_backend(Pg))]
pub struct CheckRow {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub endpoint_id: Uuid,
    pub started_at: OffsetDateTime,
    pub finished_at: OffsetDateTime,
    pub http_status: Option<i32>,
    pub response_time: Option<i32>,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    pub content_type: Option<String>,
    pub headers: Option<Value>,
    pub sealed_body: Option<Vec<u8>>,
    pub diff_id: Option<Uuid>,
    pub scheduled: bool,
}

impl CheckRow {
    pub fn into_model(self) -> Result<StoredCheck, StoreError> {
        Ok(StoredCheck {
            id: self.id,
            workspace_id: self.workspace_id,
            endpoint_id: self.endpoint_id,
            started_at: self.started_at,
            finished_at: self.finished_at,
            http_status: self
                .http_status
                .map(|v| to_u16("checks.http_status", v))
                .transpose()?,
            response_time: self
                .response_time
                .map(|v| to_u32("checks.response_time", v.into()))
                .transpose()?,
            error_kind: read_opt(self.error_kind),
            error_message: read_opt(self.error_message),
            content_type: read_opt(self.content_type),
            headers: self.headers.map(read_json),
            sealed_body: self.sealed_body,
            diff_id: self.diff_id,
            scheduled: self.scheduled,
        })
    }
}

/// The columns of a diff summary plus the endpoint name (from the join).
pub type SummaryTuple = (
    Uuid,
    Uuid,
    String,
    OffsetDateTime,
    bool,
    i32,
    i32,
    i32,
    i32,
    (OffsetDateTime, OffsetDateTime, i32),
);

/// The columns of a diff detail beyond the summary.
pub type DetailTuple = (SummaryTuple, Option<Uuid>, Uuid, Value, Option<Value>);

pub fn summary_from(t: SummaryTuple) -> Result<apidrift_model::DiffSummary, StoreError> {
    let (id, endpoint_id, name, created_at, accepted, b, w, i, c, (first, last, seen)) = t;
    let u = |col: &str, v: i32| to_u32(col, v.into());
    Ok(apidrift_model::DiffSummary {
        id,
        endpoint_id: Some(endpoint_id),
        endpoint_name: Some(name),
        created_at: Some(created_at),
        accepted,
        breaking_count: u("diffs.breaking_count", b)?,
        warning_count: u("diffs.warning_count", w)?,
        info_count: u("diffs.info_count", i)?,
        change_count: u("diffs.change_count", c)?,
        first_seen_at: Some(first),
        last_seen_at: Some(last),
        seen_count: u("diffs.seen_count", seen)?,
    })
}

pub fn detail_from(t: DetailTuple) -> Result<apidrift_model::DiffDetail, StoreError> {
    let (summary, baseline_id, check_id, changes, extra) = t;
    let summary_map = match extra.map(read_json) {
        None => None,
        Some(Value::Object(map)) => Some(map),
        Some(_) => return Err(StoreError::corrupt("diffs.summary", "not a JSON object")),
    };
    Ok(apidrift_model::DiffDetail {
        base: summary_from(summary)?,
        changes: apidrift_store::changes_from_json(read_json(changes))?,
        baseline_id,
        check_id: Some(check_id),
        summary: summary_map,
    })
}
