//! Registering endpoints (D6), for `POST /api/v1/endpoints`, its alias `POST /v1/endpoints` and
//! the OpenAPI import.
//!
//! Order (D4): the body's shape (400), the workspace (404), the sealing key (503), the plan's
//! endpoint limit (402), then each entry on its own: an invalid entry is skipped with its reason,
//! never a failure of the request. The rows that pass are created in ONE store transaction,
//! which creates the first ones that fit the plan limit and reports the rest, skipped as "plan
//! endpoint limit reached".

use super::actions::{Action, Actor};
use super::base::Service;
use super::error::ServiceError;
use apidrift_diff::{IdentityRule, IgnorePattern, OverrideRule};
use apidrift_model::validate::{self, NewEndpoint};
use apidrift_model::{CreateEndpointsResponse, SkippedEntry, sealed};
use apidrift_seal::{Binding, Field, KeyRing};
use apidrift_store::{NewContractSet, NewEndpointRow, SealedSecrets, Workspace, new_id};
use serde_json::Value;
use std::collections::HashSet;
use time::OffsetDateTime;
use uuid::Uuid;

/// One entry on its way to the store: its position in the request, its name (for `skipped`),
/// and the row to create or the reason it is skipped.
pub(crate) struct Pending {
    pub index: usize,
    pub name: String,
    pub row: Result<NewEndpointRow, String>,
}

fn limit_reached(limit: u32) -> ServiceError {
    ServiceError::PlanLimit(format!(
        "workspace plan endpoint limit reached ({limit} endpoints)"
    ))
}

impl Service {
    /// D6: registers the endpoints of a create body (one object, an array, or
    /// `{"endpoints": [...]}`) in workspace `ws`. `created > 0` in the answer means HTTP 201.
    pub async fn register_endpoints(
        &self,
        actor: &Actor,
        body: &Value,
    ) -> Result<CreateEndpointsResponse, ServiceError> {
        actor.may(Action::CreateEndpoints)?;
        let ws = actor.workspace();
        let entries =
            validate::create_entries(body).map_err(|e| ServiceError::Invalid(e.to_string()))?;
        let workspace = self.workspace(ws).await?;
        let keys = self.keys_or(": credentials cannot be sealed")?;
        self.ensure_room(&workspace).await?;
        let now = self.now_millis();
        let schedules = workspace.plan.allows_schedules();
        let mut pending = Vec::with_capacity(entries.len());
        let mut taken: Option<HashSet<String>> = None;
        for (index, entry) in entries.iter().enumerate() {
            let row = match self.check_entry(entry, schedules) {
                Ok(valid) => match &valid.settings.key {
                    // A key is unique in the workspace: an entry with a key the workspace (or an
                    // earlier entry) holds is skipped like any invalid entry.
                    Some(key) => {
                        if taken.is_none() {
                            taken = Some(self.taken_keys(ws).await?);
                        }
                        let taken = taken.get_or_insert_default();
                        if taken.insert(key.clone()) {
                            Ok(seal_row(keys, ws, valid, now)?)
                        } else {
                            Err(format!(
                                "key: {key} is already used by another endpoint of the workspace"
                            ))
                        }
                    }
                    None => Ok(seal_row(keys, ws, valid, now)?),
                },
                Err(reason) => Err(reason),
            };
            pending.push(Pending {
                index,
                name: validate::entry_name(entry),
                row,
            });
        }
        self.create_rows(ws, pending).await
    }

    /// The keys the endpoints of workspace `ws` hold.
    pub(crate) async fn taken_keys(&self, ws: Uuid) -> Result<HashSet<String>, ServiceError> {
        Ok(self
            .store
            .keyed_endpoints(ws)
            .await?
            .into_iter()
            .filter_map(|e| e.settings.key)
            .collect())
    }

    /// The workspace, or 404.
    pub(crate) async fn workspace(&self, ws: Uuid) -> Result<Workspace, ServiceError> {
        self.store
            .get_workspace(ws)
            .await?
            .ok_or_else(|| ServiceError::not_found("workspace", ws))
    }

    /// 402 when the workspace already holds as many endpoints as its plan allows.
    pub(crate) async fn ensure_room(&self, workspace: &Workspace) -> Result<(), ServiceError> {
        if let Some(limit) = workspace.endpoint_limit {
            let count = self.store.count_endpoints(workspace.id).await?;
            if apidrift_store::rules::endpoints_that_fit(Some(limit), count, 1) == 0 {
                return Err(limit_reached(limit));
            }
        }
        Ok(())
    }

    /// One entry: D6 validation, `ignorePaths`, `identityKeys` and the paths of
    /// `severityOverrides` through the diff engine's parser, and the plan rule for schedules.
    pub(crate) fn check_entry(
        &self,
        entry: &Value,
        schedules: bool,
    ) -> Result<NewEndpoint, String> {
        let valid = validate::validate_entry(entry, &self.allow)?;
        let settings = &valid.settings;
        for (i, pattern) in settings.ignore_paths.iter().enumerate() {
            IgnorePattern::parse(pattern).map_err(|e| format!("ignorePaths[{i}]: {e}"))?;
        }
        for (pattern, key) in &settings.identity_keys {
            IdentityRule::parse(pattern, key)
                .map_err(|e| format!("{}: {e}", validate::identity_key_field(pattern)))?;
        }
        check_overrides("severityOverrides", &settings.severity_overrides)?;
        if settings.schedule.is_some() && !schedules {
            return Err("schedule: requires the Starter plan or above".into());
        }
        Ok(valid)
    }

    /// Creates the valid rows in one store call and assembles the answer: skipped entries in
    /// request order, with those past the plan limit.
    pub(crate) async fn create_rows(
        &self,
        ws: Uuid,
        pending: Vec<Pending>,
    ) -> Result<CreateEndpointsResponse, ServiceError> {
        self.create_rows_with_sets(ws, pending, Vec::new()).await
    }

    /// [`Service::create_rows`] for rows whose contracts refer into `sets`: each store call
    /// carries the sets its rows refer to, written in its transaction.
    pub(crate) async fn create_rows_with_sets(
        &self,
        ws: Uuid,
        pending: Vec<Pending>,
        sets: Vec<NewContractSet>,
    ) -> Result<CreateEndpointsResponse, ServiceError> {
        let mut skipped = Vec::new();
        let mut rows = Vec::new();
        let mut names = Vec::new();
        for p in pending {
            match p.row {
                Ok(row) => {
                    rows.push(row);
                    names.push((p.index, p.name));
                }
                Err(reason) => skipped.push(SkippedEntry {
                    name: p.name,
                    reason,
                    index: p.index,
                }),
            }
        }
        // At most MAX_BULK_ENDPOINTS rows per store call (one transaction each): a create body
        // never has more, an OpenAPI import may.
        let mut created = Vec::new();
        let mut names = names.into_iter();
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<NewEndpointRow> = rows
                .by_ref()
                .take(apidrift_store::MAX_BULK_ENDPOINTS)
                .collect();
            let sent = chunk.len();
            let chunk_names: Vec<(usize, String)> = names.by_ref().take(sent).collect();
            let referred: Vec<NewContractSet> = sets
                .iter()
                .filter(|s| {
                    chunk.iter().any(|r| {
                        r.response_contract
                            .as_ref()
                            .and_then(|c| c.set.as_ref())
                            .is_some_and(|h| *h == s.hash)
                    })
                })
                .cloned()
                .collect();
            let written = if referred.is_empty() {
                self.store.create_endpoints(ws, chunk).await
            } else {
                self.store
                    .create_endpoints_with_sets(ws, chunk, referred)
                    .await
            };
            let result = written.map_err(|e| match e {
                apidrift_store::StoreError::NotFound => ServiceError::not_found("workspace", ws),
                // Only a key can be taken (row ids are fresh): by a concurrent request.
                apidrift_store::StoreError::Conflict(_) => ServiceError::Conflict(
                    "key: already used by another endpoint of the workspace; nothing was \
                         created, send the request again"
                        .into(),
                ),
                other => other.into(),
            })?;
            if created.is_empty() && result.created.is_empty() && result.limit_already_reached() {
                return Err(limit_reached(result.endpoint_limit.unwrap_or_default()));
            }
            let full = result.created.len() < sent;
            for (index, name) in chunk_names.into_iter().skip(result.created.len()) {
                skipped.push(SkippedEntry {
                    name,
                    reason: "plan endpoint limit reached".into(),
                    index,
                });
            }
            created.extend(result.created);
            if full {
                for (index, name) in names.by_ref() {
                    skipped.push(SkippedEntry {
                        name,
                        reason: "plan endpoint limit reached".into(),
                        index,
                    });
                }
                break;
            }
        }
        skipped.sort_by_key(|s| s.index);
        let scheduled = created
            .iter()
            .filter(|e| e.settings.schedule.is_some())
            .count();
        Ok(CreateEndpointsResponse {
            created: u32::try_from(created.len()).unwrap_or(u32::MAX),
            scheduled: u32::try_from(scheduled).unwrap_or(u32::MAX),
            endpoints: created.iter().map(|e| e.to_model()).collect(),
            skipped,
        })
    }
}

/// A list of severity overrides (checked for form by the model) parsed by the diff engine, so
/// that a path it cannot use, or one where the rule never reports, is refused with the entry's
/// position (`severityOverrides[1]: invalid severity override …`).
pub(crate) fn check_overrides(
    field_name: &str,
    list: &[apidrift_model::SeverityOverride],
) -> Result<(), String> {
    for (i, o) in list.iter().enumerate() {
        OverrideRule::from_wire(o).map_err(|e| format!("{field_name}[{i}]: {e}"))?;
    }
    Ok(())
}

/// The row of a valid entry, without its secrets: the import creates endpoints without
/// credentials ([`seal_row`] adds them).
pub(crate) fn plain_row(valid: NewEndpoint, now: OffsetDateTime) -> NewEndpointRow {
    NewEndpointRow {
        id: new_id(),
        settings: valid.settings,
        secrets: SealedSecrets::none(),
        response_contract: None,
        created_at: now,
    }
}

/// Seals the entry's secrets, each bound to the workspace, the new row's id and its column.
pub(crate) fn seal_row(
    keys: &KeyRing,
    ws: Uuid,
    valid: NewEndpoint,
    now: OffsetDateTime,
) -> Result<NewEndpointRow, ServiceError> {
    let id = new_id();
    let secrets = seal_secrets(keys, ws, id, &valid, &SealedSecrets::none(), |_| true)?;
    Ok(NewEndpointRow {
        id,
        settings: valid.settings,
        secrets,
        response_contract: None,
        created_at: now,
    })
}

/// Seals the secrets of `valid` that `replaces` names (`auth`, `headers`, `requestBody`), each
/// bound to the workspace, the endpoint's id and its column; the others are taken from `kept`.
pub(crate) fn seal_secrets(
    keys: &KeyRing,
    ws: Uuid,
    id: Uuid,
    valid: &NewEndpoint,
    kept: &SealedSecrets,
    replaces: impl Fn(&str) -> bool,
) -> Result<SealedSecrets, ServiceError> {
    let seal = |plain: &[u8], field: Field| {
        keys.seal(plain, &Binding::new(*ws.as_bytes(), *id.as_bytes(), field))
            .map_err(|e| ServiceError::Internal(format!("sealing failed: {e}")))
    };
    let (auth_type, sealed_auth) = if replaces("auth") {
        let plain = sealed::credential_to_json(&valid.credential);
        let sealed = plain.map(|plain| seal(&plain, Field::EndpointAuth));
        (valid.auth_type(), sealed.transpose()?)
    } else {
        (kept.auth_type, kept.sealed_auth.clone())
    };
    let sealed_headers = if replaces("headers") {
        let plain = sealed::headers_to_json(&valid.headers);
        plain
            .map(|plain| seal(&plain, Field::EndpointHeaders))
            .transpose()?
    } else {
        kept.sealed_headers.clone()
    };
    let sealed_request_body = if replaces("requestBody") {
        let plain = valid.request_body.as_ref();
        plain
            .map(|body| seal(body.as_bytes(), Field::EndpointRequestBody))
            .transpose()?
    } else {
        kept.sealed_request_body.clone()
    };
    Ok(SealedSecrets {
        auth_type,
        sealed_auth,
        sealed_headers,
        sealed_request_body,
    })
}
