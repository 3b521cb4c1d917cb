//! Monitors as code (D25): [`Service::apply_monitors`] makes the keyed endpoints of a workspace
//! match a monitors file (`POST /api/v1/apply`, `apidrift apply`), [`Service::export_monitors`]
//! writes the workspace's endpoints as such a file (`apidrift export`), and [`substitute`] fills
//! the `${NAME}` placeholders of a file from the environment of the process that reads it.
//!
//! The plan: every entry is validated first by the create rules (any invalid entry is a 400
//! naming its key, or its index without one, and the field; nothing is written); a key the
//! workspace does not hold is a create; a key it holds is an update when a setting or a secret
//! differs (the stored secrets are opened with the key ring and compared, never shown), else
//! unchanged and not written; with `prune`, a keyed endpoint the file does not name is a delete
//! (never one without a key). The plan's endpoint limit applies to the result. Not a dry run,
//! the whole plan is written in ONE store transaction, the updates as a PATCH writes them
//! (version + 1, health, baseline and figures kept, a changed schedule re-planned).

use super::actions::{Action, Actor};
use super::base::Service;
use super::endpoints::{seal_row, seal_secrets};
use super::error::ServiceError;
use apidrift_model::validate::{Credential, NewEndpoint};
use apidrift_model::{AuthType, ENTRY_FIELDS, SECRET_FIELDS, sealed};
use apidrift_seal::{Binding, Field, KeyRing};
use apidrift_store::{
    ApplyUpdate, ApplyWrite, EndpointChanges, EndpointFilter, PageRequest, StoreError,
    StoredEndpoint,
};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use uuid::Uuid;

/// The most entries a monitors file may hold.
pub const MAX_APPLY_ENTRIES: usize = 2000;

/// How many times an apply computes its plan again when the workspace changed between the plan
/// and its write.
const APPLY_ATTEMPTS: usize = 4;

/// The members of an apply request.
const REQUEST_FIELDS: &[&str] = &["endpoints", "prune", "dryRun"];

/// One endpoint an apply changes, with the wire names of the fields that differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlannedUpdate {
    /// The endpoint's key.
    pub key: String,
    /// The fields that change, in the order of the create fields (`auth`, `headers` and
    /// `requestBody` when a secret differs).
    pub fields: Vec<String>,
}

/// What an apply does (or would do, in a dry run).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApplyPlan {
    /// Keys created, in file order.
    pub create: Vec<String>,
    /// Endpoints changed, in file order.
    pub update: Vec<PlannedUpdate>,
    /// Keys deleted (only with `prune`), by key.
    pub delete: Vec<String>,
    /// Entries whose endpoint already matches the file (not written).
    pub unchanged: u32,
}

/// The answer of an apply: the plan, and whether it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApplyResult {
    pub plan: ApplyPlan,
    /// `false` for a dry run, `true` when the plan was written (in one transaction).
    pub applied: bool,
}

/// A workspace written as a monitors file ([`Service::export_monitors`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedMonitors {
    /// `{"endpoints": [...]}`: every keyed endpoint as a create entry with its key, its secrets
    /// as `${APIDRIFT_SECRET_<KEY>_<FIELD>}` placeholders.
    pub file: Value,
    /// The placeholders the file uses, in file order: the variables to set before applying it.
    pub variables: Vec<String>,
    /// The names of the endpoints left out because they have no key.
    pub skipped: Vec<String>,
}

/// A checked apply request.
struct Request<'a> {
    entries: &'a [Value],
    prune: bool,
    dry_run: bool,
}

fn request(body: &Value) -> Result<Request<'_>, ServiceError> {
    let invalid = |m: String| ServiceError::Invalid(m);
    let Value::Object(map) = body else {
        return Err(invalid(
            "request body must be a JSON object {\"endpoints\": [...]}".into(),
        ));
    };
    if let Some(k) = map.keys().find(|k| !REQUEST_FIELDS.contains(&k.as_str())) {
        return Err(invalid(format!(
            "{k}: not a field of an apply request (fields: {})",
            REQUEST_FIELDS.join(", ")
        )));
    }
    let flag = |name: &str| match map.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid(format!("{name}: must be a boolean"))),
    };
    let entries = match map.get("endpoints") {
        Some(Value::Array(a)) => a.as_slice(),
        _ => {
            return Err(invalid(
                "endpoints: required, a list of endpoint entries".into(),
            ));
        }
    };
    if entries.len() > MAX_APPLY_ENTRIES {
        return Err(invalid(format!(
            "endpoints: at most {MAX_APPLY_ENTRIES} entries in one file"
        )));
    }
    Ok(Request {
        entries,
        prune: flag("prune")?,
        dry_run: flag("dryRun")?,
    })
}

/// How an entry is named in an error: `entry "users"` or, without a usable key, `entry 3`
/// (its position, from 0).
fn entry_label(index: usize, entry: &Value) -> String {
    match entry.get("key").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k.len() <= 200 => format!("entry {k:?}"),
        _ => format!("entry {index}"),
    }
}

/// The wire names of the settings that differ between `a` and `b` (secrets not included), in
/// the order of [`ENTRY_FIELDS`].
pub fn changed_settings(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<String> {
    ENTRY_FIELDS
        .iter()
        .filter(|f| !SECRET_FIELDS.contains(f) && a.get(**f) != b.get(**f))
        .map(|f| (*f).to_owned())
        .collect()
}

/// The plaintext of one sealed secret of `e`, or `None` when it has none. A blob that does not
/// open reads as `Some(empty)`: it differs from any value, so an apply seals it anew.
fn opened(
    keys: &KeyRing,
    e: &StoredEndpoint,
    blob: Option<&Vec<u8>>,
    field: Field,
) -> Option<zeroize::Zeroizing<Vec<u8>>> {
    let blob = blob?;
    let binding = Binding::new(*e.workspace_id.as_bytes(), *e.id.as_bytes(), field);
    Some(keys.open(blob, &binding).unwrap_or_default())
}

/// The secret fields (`auth`, `headers`, `requestBody`) whose value in `valid` differs from the
/// one sealed on `e`.
fn changed_secrets(keys: &KeyRing, e: &StoredEndpoint, valid: &NewEndpoint) -> Vec<&'static str> {
    let mut out = Vec::new();
    let s = &e.secrets;
    let auth_now = opened(keys, e, s.sealed_auth.as_ref(), Field::EndpointAuth);
    let auth_file = sealed::credential_to_json(&valid.credential);
    if s.auth_type != valid.auth_type() || auth_now != auth_file {
        out.push("auth");
    }
    let headers_now = opened(keys, e, s.sealed_headers.as_ref(), Field::EndpointHeaders);
    if headers_now != sealed::headers_to_json(&valid.headers) {
        out.push("headers");
    }
    let body_now = opened(
        keys,
        e,
        s.sealed_request_body.as_ref(),
        Field::EndpointRequestBody,
    );
    let body_file = valid.request_body.as_ref().map(|b| b.as_bytes());
    if body_now.as_deref().map(Vec::as_slice) != body_file {
        out.push("requestBody");
    }
    out
}

impl Service {
    /// D25: makes the keyed endpoints of the actor's workspace match the monitors file in
    /// `body` (`{"endpoints": [...], "prune": bool, "dryRun": bool}`). Order: the request's
    /// shape and every entry (400 naming the entry and the field, duplicate keys included), the
    /// workspace (404), the sealing key (503), the plan's endpoint limit for the result (402),
    /// then the write in one transaction. See [the module](self).
    pub async fn apply_monitors(
        &self,
        actor: &Actor,
        body: &Value,
    ) -> Result<ApplyResult, ServiceError> {
        actor.may(Action::ApplyMonitors)?;
        let ws = actor.workspace();
        let req = request(body)?;
        let workspace = self.workspace(ws).await?;
        let schedules = workspace.plan.allows_schedules();
        let mut valid: Vec<NewEndpoint> = Vec::with_capacity(req.entries.len());
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (index, entry) in req.entries.iter().enumerate() {
            let label = entry_label(index, entry);
            if entry.is_object() && entry.get("key").is_none_or(Value::is_null) {
                return Err(ServiceError::Invalid(format!(
                    "{label}: key: required in a monitors file"
                )));
            }
            let v = self
                .check_entry(entry, schedules)
                .map_err(|reason| ServiceError::Invalid(format!("{label}: {reason}")))?;
            let key = v.settings.key.clone().unwrap_or_default();
            if let Some(first) = seen.insert(key.clone(), index) {
                return Err(ServiceError::Invalid(format!(
                    "{label}: key: named twice in the file (entries {first} and {index})"
                )));
            }
            valid.push(v);
        }
        let keys = self.keys_or(": credentials cannot be sealed or compared")?;
        for _ in 0..APPLY_ATTEMPTS {
            let (plan, write) = self.plan(keys, ws, &valid, req.prune).await?;
            if let Some(limit) = workspace.endpoint_limit {
                let count = self.store.count_endpoints(ws).await?;
                let after = count + write.creates.len() as u64 - write.deletes.len() as u64;
                if write.creates.len() > write.deletes.len() && after > u64::from(limit) {
                    return Err(ServiceError::PlanLimit(format!(
                        "workspace plan endpoint limit reached ({limit} endpoints): the file \
                         would leave {after}; remove entries or apply with prune"
                    )));
                }
            }
            if req.dry_run {
                return Ok(ApplyResult {
                    plan,
                    applied: false,
                });
            }
            if write.is_empty() {
                return Ok(ApplyResult {
                    plan,
                    applied: true,
                });
            }
            match self
                .store
                .apply_endpoints(ws, write, self.now_millis())
                .await
            {
                Ok(()) => {
                    return Ok(ApplyResult {
                        plan,
                        applied: true,
                    });
                }
                // The workspace changed between the plan and its write (an endpoint edited or
                // deleted, a key taken, endpoints added): nothing was written; plan again.
                Err(StoreError::Changed | StoreError::NotFound | StoreError::Conflict(_)) => {
                    continue;
                }
                Err(StoreError::InvalidInput(m)) => return Err(ServiceError::Invalid(m)),
                Err(other) => return Err(other.into()),
            }
        }
        Err(ServiceError::Contended {
            what: "workspace's endpoints",
        })
    }

    /// The plan of `valid` (the checked entries) against the keyed endpoints of `ws`, and the
    /// write that carries it out.
    async fn plan(
        &self,
        keys: &KeyRing,
        ws: Uuid,
        valid: &[NewEndpoint],
        prune: bool,
    ) -> Result<(ApplyPlan, ApplyWrite), ServiceError> {
        let mut existing: BTreeMap<String, StoredEndpoint> = self
            .store
            .keyed_endpoints(ws)
            .await?
            .into_iter()
            .filter_map(|e| e.settings.key.clone().map(|k| (k, e)))
            .collect();
        let now = self.now_millis();
        let mut plan = ApplyPlan::default();
        let mut write = ApplyWrite::default();
        for v in valid {
            let key = v.settings.key.clone().unwrap_or_default();
            let Some(current) = existing.remove(&key) else {
                write.creates.push(seal_row(keys, ws, v.clone(), now)?);
                plan.create.push(key);
                continue;
            };
            let mut fields = changed_settings(&current.settings.to_entry(), &v.settings.to_entry());
            let secrets = changed_secrets(keys, &current, v);
            if fields.is_empty() && secrets.is_empty() {
                plan.unchanged += 1;
                continue;
            }
            let sealed = seal_secrets(keys, ws, current.id, v, &current.secrets, |k| {
                secrets.contains(&k)
            })?;
            fields.extend(secrets.iter().map(|s| (*s).to_owned()));
            fields.sort_by_key(|f| ENTRY_FIELDS.iter().position(|e| e == f));
            write.updates.push(ApplyUpdate {
                id: current.id,
                version: current.version,
                changes: EndpointChanges {
                    settings: v.settings.clone(),
                    secrets: sealed,
                    paused: current.paused,
                },
            });
            plan.update.push(PlannedUpdate { key, fields });
        }
        if prune {
            for (key, e) in existing {
                write.deletes.push((e.id, e.version));
                plan.delete.push(key);
            }
        }
        Ok((plan, write))
    }

    /// D25: the actor's workspace as a monitors file (`apidrift export`): every endpoint with a
    /// key, newest last, as its create entry; secrets only as placeholders
    /// `${APIDRIFT_SECRET_<KEY>_<FIELD>}` (never a value). Endpoints without a key are left out
    /// and named in [`ExportedMonitors::skipped`]. Header names and the credential's style are
    /// read from the sealed values, so the key ring is needed when an endpoint has secrets.
    pub async fn export_monitors(&self, actor: &Actor) -> Result<ExportedMonitors, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        let ws = actor.workspace();
        self.workspace(ws).await?;
        let mut all = Vec::new();
        let mut offset = 0;
        loop {
            let page = PageRequest { limit: 200, offset };
            let got = self
                .store
                .list_endpoints(ws, &EndpointFilter::default(), page)
                .await?;
            let n = got.items.len() as u64;
            all.extend(got.items);
            offset += n;
            if n == 0 || offset >= got.total {
                break;
            }
        }
        all.reverse();
        let mut entries = Vec::new();
        let mut variables = Vec::new();
        let mut skipped = Vec::new();
        for e in &all {
            let Some(key) = e.settings.key.clone() else {
                skipped.push(e.settings.name.clone());
                continue;
            };
            let mut entry = e.settings.to_entry();
            let mut var = |field: &str| {
                let name = secret_variable(&key, field);
                let placeholder = format!("${{{name}}}");
                variables.push(name);
                Value::String(placeholder)
            };
            let s = &e.secrets;
            let needs_key = s.sealed_auth.is_some() || s.sealed_headers.is_some();
            let keys = if needs_key {
                Some(self.keys_or(": sealed credentials cannot be read to export them")?)
            } else {
                None
            };
            if let (Some(keys), Some(_)) = (keys, &s.sealed_auth) {
                let plain = opened(keys, e, s.sealed_auth.as_ref(), Field::EndpointAuth)
                    .unwrap_or_default();
                let credential = sealed::credential_from_json(&plain).map_err(|_| {
                    ServiceError::Internal(format!("endpoint {}: credential does not open", e.id))
                })?;
                let auth = match credential {
                    Credential::Bearer { .. } => {
                        json!({"type": "bearer", "token": var("AUTH_TOKEN")})
                    }
                    Credential::Oauth { .. } => {
                        json!({"type": "oauth", "token": var("AUTH_TOKEN")})
                    }
                    Credential::ApiKey { header, .. } => {
                        json!({"type": "api_key", "header": header, "key": var("AUTH_KEY")})
                    }
                    Credential::Basic { .. } => json!({
                        "type": "basic",
                        "username": var("AUTH_USERNAME"),
                        "password": var("AUTH_PASSWORD"),
                    }),
                    Credential::Custom { header, .. } => {
                        json!({"type": "custom", "header": header, "value": var("AUTH_VALUE")})
                    }
                    _ => json!({"type": AuthType::None.as_str()}),
                };
                entry.insert("auth".into(), auth);
            }
            if let (Some(keys), Some(_)) = (keys, &s.sealed_headers) {
                let plain = opened(keys, e, s.sealed_headers.as_ref(), Field::EndpointHeaders)
                    .unwrap_or_default();
                let headers = sealed::headers_from_json(&plain).map_err(|_| {
                    ServiceError::Internal(format!("endpoint {}: headers do not open", e.id))
                })?;
                let map: Map<String, Value> = headers
                    .iter()
                    .map(|h| (h.name.clone(), var(&format!("HEADER_{}", h.name))))
                    .collect();
                entry.insert("headers".into(), Value::Object(map));
            }
            if s.sealed_request_body.is_some() {
                entry.insert("requestBody".into(), var("REQUEST_BODY"));
            }
            entries.push(Value::Object(entry));
        }
        Ok(ExportedMonitors {
            file: json!({ "endpoints": entries }),
            variables,
            skipped,
        })
    }
}

/// The variable an export names for a secret: `APIDRIFT_SECRET_<KEY>_<FIELD>`, uppercase, every
/// character other than a letter or digit as `_`.
pub fn secret_variable(key: &str, field: &str) -> String {
    let up = |s: &str| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    format!("APIDRIFT_SECRET_{}_{}", up(key), up(field))
}

/// Replaces `${NAME}` (NAME: a letter or `_`, then letters, digits, `_`) in the string values of
/// `auth`, `headers` and `requestBody` of every entry of a monitors file with `env(NAME)`; `$${`
/// stands for a literal `${`. Other fields are left as they are. The error names the first
/// variable `env` does not know, and its entry.
pub fn substitute(
    file: &mut Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), SubstituteError> {
    let Some(entries) = file.get_mut("endpoints").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for (index, entry) in entries.iter_mut().enumerate() {
        let label = entry_label(index, entry);
        let Value::Object(map) = entry else { continue };
        for field in SECRET_FIELDS {
            if let Some(v) = map.get_mut(*field) {
                fill(v, env).map_err(|variable| SubstituteError {
                    variable,
                    entry: label.clone(),
                    field: (*field).to_owned(),
                })?;
            }
        }
    }
    Ok(())
}

/// A `${NAME}` of a monitors file whose variable is not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{entry}: {field}: environment variable {variable} is not set")]
pub struct SubstituteError {
    /// The variable's name.
    pub variable: String,
    /// The entry (`entry "key"` or `entry 3`).
    pub entry: String,
    /// The field (`auth`, `headers`, `requestBody`).
    pub field: String,
}

fn fill(v: &mut Value, env: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    match v {
        Value::String(s) => {
            *s = expand(s, env)?;
            Ok(())
        }
        Value::Object(map) => map.values_mut().try_for_each(|v| fill(v, env)),
        Value::Array(items) => items.iter_mut().try_for_each(|v| fill(v, env)),
        _ => Ok(()),
    }
}

fn expand(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
            continue;
        }
        let name = tail.strip_prefix("${").and_then(|t| {
            let end = t.find('}')?;
            let name = &t[..end];
            let mut chars = name.chars();
            let ok = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            ok.then_some(name)
        });
        match name {
            Some(name) => {
                out.push_str(&env(name).ok_or_else(|| name.to_owned())?);
                rest = &tail[name.len() + 3..];
            }
            None => {
                out.push('$');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn substitution_fills_secret_fields_only() {
        let mut file = json!({"endpoints": [{
            "key": "a",
            "name": "${TOKEN}",
            "auth": {"type": "bearer", "token": "${TOKEN}"},
            "headers": {"X-A": "pre-${TOKEN}-${EMPTY}-post", "X-B": "$${TOKEN} $5 ${ bad}"},
            "requestBody": "{\"t\": \"${TOKEN}\"}",
        }]});
        assert_eq!(substitute(&mut file, &env), Ok(()));
        let e = &file["endpoints"][0];
        assert_eq!(e["name"], "${TOKEN}");
        assert_eq!(e["auth"]["token"], "s3cret");
        assert_eq!(e["headers"]["X-A"], "pre-s3cret--post");
        assert_eq!(e["headers"]["X-B"], "${TOKEN} $5 ${ bad}");
        assert_eq!(e["requestBody"], "{\"t\": \"s3cret\"}");
    }

    #[test]
    fn a_missing_variable_is_named_with_its_entry() {
        let mut file = json!({"endpoints": [
            {"key": "a"},
            {"auth": {"type": "bearer", "token": "x${NOPE}"}},
        ]});
        let err = substitute(&mut file, &env).err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("entry 1: auth: environment variable NOPE is not set")
        );
    }

    #[test]
    fn secret_variables_are_shell_names() {
        assert_eq!(
            secret_variable("users.v2-list", "HEADER_X-Api-Key"),
            "APIDRIFT_SECRET_USERS_V2_LIST_HEADER_X_API_KEY"
        );
    }

    #[test]
    fn changed_settings_names_wire_fields_in_order() {
        let a = json!({"key": "k", "name": "a", "url": "u", "timeoutMs": 5, "tags": []});
        let b = json!({"key": "k", "name": "b", "url": "u", "tags": [], "schedule": {"x": 1}});
        let (Value::Object(a), Value::Object(b)) = (a, b) else {
            unreachable!("literals are objects")
        };
        assert_eq!(changed_settings(&a, &b), ["name", "timeoutMs", "schedule"]);
        assert!(changed_settings(&a, &a).is_empty());
    }

    #[test]
    fn requests_are_checked_before_entries() {
        let err = |body: Value| request(&body).err().map(|e| e.to_string());
        assert_eq!(
            err(json!({"endpoints": [], "prun": true})).as_deref(),
            Some("prun: not a field of an apply request (fields: endpoints, prune, dryRun)")
        );
        assert_eq!(
            err(json!({"endpoints": [], "dryRun": "yes"})).as_deref(),
            Some("dryRun: must be a boolean")
        );
        assert!(err(json!({"prune": true})).is_some_and(|e| e.starts_with("endpoints: required")));
        let body = json!({"endpoints": [{}], "dryRun": true});
        let ok = request(&body);
        assert!(ok.is_ok_and(|r| r.dry_run && !r.prune && r.entries.len() == 1));
    }
}
