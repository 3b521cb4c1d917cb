//! Endpoint lifecycle and history (D19): change, pause and delete an endpoint, read its check
//! history, read a webhook's deliveries and send it a test event, and the two upkeep jobs of the
//! worker (no endpoint left `checking`, retention of check rows).
//!
//! PATCH is merge-then-validate on the endpoint's [`EndpointSettings`](apidrift_model::EndpointSettings),
//! never a second validator: the request's fields ([`EndpointPatch`]) are laid over the stored
//! settings, and the merged entry goes once through
//! [`apidrift_model::validate::validate_entry`] and the service's `ignorePaths`/plan checks. Any invalid field is a 400 naming it, and nothing is written. Credentials, headers and
//! the request body are write-only: present in the request they are validated and sealed anew
//! (`auth: {"type": "none"}`, `headers: null`, `requestBody: null` drop them), absent they stay.

use super::actions::{Action, Actor};
use super::base::Service;
use super::endpoints::seal_secrets;
use super::error::ServiceError;
use apidrift_model::validate::{Credential, ExtraHeader};
use apidrift_model::{Endpoint, EndpointPatch, HttpMethod, SECRET_FIELDS, SecretString, timestamp};
use apidrift_monitor::FetchRequest;
use apidrift_monitor::alerts::{SIGNATURE_HEADER, signature};
use apidrift_monitor::channels;
use apidrift_seal::{Binding, Field};
use apidrift_store::{
    CheckHistoryRow, EndpointChanges, Page, PageRequest, StoreError, StoredDelivery,
    StoredEndpoint, WebhookKind,
};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

/// How many times a PATCH without a version is applied again on the freshly read endpoint when a
/// concurrent change got in between its read and its write.
const UPDATE_ATTEMPTS: usize = 16;

/// Default retention of check rows without a diff, in days (`[retention] check_days`).
pub const DEFAULT_CHECK_RETENTION_DAYS: u32 = 90;

/// How long a webhook test may take.
const TEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One check of an endpoint's history (`GET /api/v1/endpoints/{id}/checks`). Never a body, a
/// header value or a credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CheckRecord {
    pub id: Uuid,
    /// RFC 3339, milliseconds, UTC.
    pub started_at: String,
    pub finished_at: String,
    /// `null` when the fetch got no response.
    pub http_status: Option<u16>,
    /// Milliseconds.
    pub response_time: Option<u32>,
    /// The kind of fetch error (`timeout`, `connect`, `dns`, …) or `null`.
    pub error: Option<String>,
    /// The diff this check recorded, or `null` when the response matched the baseline.
    pub diff_id: Option<Uuid>,
    pub breaking_count: u32,
    pub warning_count: u32,
    pub change_count: u32,
    /// Run by a schedule (false: a manual check).
    pub scheduled: bool,
}

/// One delivery of a webhook (`GET /v1/webhooks/{id}/deliveries`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    pub id: Uuid,
    /// `drift.detected` or `drift.resolved`.
    pub event: String,
    pub endpoint_id: Uuid,
    /// The diff the event reports, when it names one.
    pub diff_id: Option<Uuid>,
    pub created_at: String,
    pub attempts: u32,
    pub last_attempt_at: Option<String>,
    /// The receiver's HTTP status at the last attempt (`null`: no answer or no attempt yet).
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
}

/// The answer of `POST /v1/webhooks/{id}/test`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookTestResult {
    /// True when the receiver answered 2xx.
    pub delivered: bool,
    /// The receiver's HTTP status (`null` when it did not answer).
    pub status: Option<u16>,
    /// Why the test failed (`null` when delivered). Never the receiver's body.
    pub error: Option<String>,
}

fn ts(t: OffsetDateTime) -> Result<String, ServiceError> {
    timestamp::format(t).map_err(|e| ServiceError::Internal(e.to_string()))
}

fn record(c: &CheckHistoryRow) -> Result<CheckRecord, ServiceError> {
    Ok(CheckRecord {
        id: c.id,
        started_at: ts(c.started_at)?,
        finished_at: ts(c.finished_at)?,
        http_status: c.http_status,
        response_time: c.response_time,
        error: c.error_kind.clone(),
        diff_id: c.diff_id,
        breaking_count: c.breaking_count,
        warning_count: c.warning_count,
        change_count: c.change_count,
        scheduled: c.scheduled,
    })
}

fn delivery(d: &StoredDelivery) -> Result<DeliveryView, ServiceError> {
    let diff_id = serde_json::from_str::<Value>(&d.payload)
        .ok()
        .and_then(|v| {
            v.pointer("/diff/id")
                .or_else(|| v.get("diffId"))
                .and_then(Value::as_str)
                .and_then(|s| Uuid::parse_str(s).ok())
        });
    Ok(DeliveryView {
        id: d.id,
        event: d.event.clone(),
        endpoint_id: d.endpoint_id,
        diff_id,
        created_at: ts(d.created_at)?,
        attempts: d.attempts,
        last_attempt_at: d.last_attempt_at.map(ts).transpose()?,
        last_status: d.last_status,
        last_error: d.last_error.clone(),
        state: d.state.clone(),
    })
}

impl Service {
    /// D19 PATCH: changes any subset of the create fields and `paused` of endpoint `id` of
    /// workspace `ws` (`PATCH /api/v1/endpoints/{id}`, the console's edit form, `apidrift
    /// endpoint update`). Order: the body's shape (400), the endpoint (404), `if_match` (412),
    /// the key when a secret changes (503), then every field by the create rules (400 naming the
    /// field; nothing is written). `schedule: null` removes the schedule; the baseline is kept.
    /// Every edit adds 1 to the endpoint's version.
    ///
    /// Optimistic concurrency: with `if_match` (the version the caller read), the write happens
    /// only while the endpoint still has that version, else [`ServiceError::Changed`] and
    /// nothing is written. Without it, only the fields the body names change: the body is laid
    /// over the endpoint as read, written while that version holds, and laid again over the
    /// fresh endpoint when a concurrent change got in between (up to 16 times, then
    /// [`ServiceError::Contended`]), so concurrent PATCHes of different fields all land.
    pub async fn update_endpoint(
        &self,
        actor: &Actor,
        id: Uuid,
        body: &Value,
        if_match: Option<i64>,
    ) -> Result<StoredEndpoint, ServiceError> {
        actor.may(Action::UpdateEndpoints)?;
        let ws = actor.workspace();
        let patch = EndpointPatch::parse(body).map_err(ServiceError::Invalid)?;
        for _ in 0..UPDATE_ATTEMPTS {
            let current = self.endpoint(ws, id).await?;
            // An invalid body is a 400 whatever the version: validated before it is compared.
            let changes = self.patched(ws, id, &patch, &current).await?;
            if if_match.is_some_and(|v| v != current.version) {
                return Err(ServiceError::Changed { what: "endpoint" });
            }
            match self
                .store
                .update_endpoint(ws, id, changes, Some(current.version), self.now_millis())
                .await
            {
                // The answer reads as `GET` does, uptime included.
                Ok(mut updated) => {
                    self.with_uptime(ws, std::slice::from_mut(&mut updated))
                        .await?;
                    return Ok(updated);
                }
                Err(StoreError::Changed) if if_match.is_some() => {
                    return Err(ServiceError::Changed { what: "endpoint" });
                }
                // Changed between the read and the write: read again and lay the body over the
                // new state, so the concurrent change stays.
                Err(StoreError::Changed) => continue,
                Err(StoreError::NotFound) => return Err(ServiceError::not_found("endpoint", id)),
                Err(StoreError::InvalidInput(m)) => return Err(ServiceError::Invalid(m)),
                // Only the key is unique: taken by a concurrent change.
                Err(StoreError::Conflict(_)) => {
                    return Err(ServiceError::Conflict(
                        "key: already used by another endpoint of the workspace".into(),
                    ));
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(ServiceError::Contended { what: "endpoint" })
    }

    /// Merge-then-validate: the settings of `current` with the PATCH `patch` laid over them,
    /// validated once by the create rules; the secrets the PATCH names sealed anew, the others
    /// kept.
    async fn patched(
        &self,
        ws: Uuid,
        id: Uuid,
        patch: &EndpointPatch,
        current: &StoredEndpoint,
    ) -> Result<EndpointChanges, ServiceError> {
        let keys = if SECRET_FIELDS.iter().any(|k| patch.names(k)) {
            Some(self.keys_or(": credentials cannot be sealed")?.clone())
        } else {
            None
        };
        let workspace = self.workspace(ws).await?;
        let valid = self
            .check_entry(
                &patch.merged(&current.settings),
                workspace.plan.allows_schedules(),
            )
            .map_err(ServiceError::Invalid)?;
        if current.settings.key.is_some() && valid.settings.key != current.settings.key {
            return Err(ServiceError::Invalid(format!(
                "key: cannot be changed once set (this endpoint's key is {}); delete the \
                 endpoint and create it with the new key instead",
                current.settings.key.as_deref().unwrap_or_default()
            )));
        }
        if valid.settings.key.is_some() && valid.settings.key != current.settings.key {
            let key = valid.settings.key.clone().unwrap_or_default();
            if self.taken_keys(ws).await?.contains(&key) {
                return Err(ServiceError::Conflict(format!(
                    "key: {key} is already used by another endpoint of the workspace"
                )));
            }
        }
        let keeps_body =
            !patch.names("requestBody") && current.secrets.sealed_request_body.is_some();
        if keeps_body && !valid.settings.method.allows_body() {
            return Err(ServiceError::Invalid(format!(
                "requestBody: not allowed for {}; send \"requestBody\": null to remove it",
                valid.settings.method
            )));
        }
        let secrets = match &keys {
            Some(keys) => seal_secrets(keys, ws, id, &valid, &current.secrets, |k| patch.names(k))?,
            None => current.secrets.clone(),
        };
        Ok(EndpointChanges {
            settings: valid.settings,
            secrets,
            paused: patch.paused().unwrap_or(current.paused),
        })
    }

    /// Pauses (`true`) or resumes (`false`) endpoint `id`: schedules skip a paused endpoint and
    /// use no quota; manual checks and captures still run. The same as `PATCH {"paused": …}`.
    pub async fn set_paused(
        &self,
        actor: &Actor,
        id: Uuid,
        paused: bool,
    ) -> Result<Endpoint, ServiceError> {
        actor.may(Action::PauseEndpoints)?;
        self.update_endpoint(actor, id, &serde_json::json!({ "paused": paused }), None)
            .await
            .map(|e| e.to_model())
    }

    /// D19 DELETE: removes endpoint `id` of workspace `ws` with its schedule, baselines, checks,
    /// diffs, contract and sealed secrets in one transaction, and drops its queued deliveries
    /// (`DELETE /api/v1/endpoints/{id}`, the console, `apidrift endpoint delete`). 404 when
    /// missing. With `if_match` (the version the caller read), only while the endpoint still has
    /// that version, else [`ServiceError::Changed`] and the endpoint stays.
    pub async fn delete_endpoint(
        &self,
        actor: &Actor,
        id: Uuid,
        if_match: Option<i64>,
    ) -> Result<(), ServiceError> {
        actor.may(Action::DeleteEndpoints)?;
        let ws = actor.workspace();
        self.store
            .delete_endpoint(ws, id, if_match)
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found("endpoint", id),
                StoreError::Changed => ServiceError::Changed { what: "endpoint" },
                other => other.into(),
            })
    }

    /// Most endpoints one [`Service::delete_endpoints`] call removes (the size of a bulk create).
    pub const DELETE_MANY_MAX: usize = 200;

    /// Deletes several endpoints of workspace `ws` (the console's "Delete selected" and the undo
    /// of an import), each as [`Service::delete_endpoint`] does, in its own transaction. All of
    /// them must exist first: one unknown id (or one of another workspace) is a 404 and nothing
    /// is deleted. An endpoint deleted meanwhile by someone else is not counted. At most
    /// [`Service::DELETE_MANY_MAX`] ids (400 beyond); duplicates count once. Returns how many
    /// were deleted.
    pub async fn delete_endpoints(&self, actor: &Actor, ids: &[Uuid]) -> Result<u32, ServiceError> {
        actor.may(Action::DeleteEndpoints)?;
        let ws = actor.workspace();
        let mut unique: Vec<Uuid> = Vec::with_capacity(ids.len());
        for id in ids {
            if !unique.contains(id) {
                unique.push(*id);
            }
        }
        if unique.is_empty() {
            return Err(ServiceError::Invalid(
                "select at least one endpoint to delete".to_owned(),
            ));
        }
        if unique.len() > Self::DELETE_MANY_MAX {
            return Err(ServiceError::Invalid(format!(
                "at most {} endpoints are deleted at once; select fewer",
                Self::DELETE_MANY_MAX
            )));
        }
        for id in &unique {
            self.endpoint(ws, *id).await?;
        }
        let mut deleted = 0;
        for id in unique {
            match self.store.delete_endpoint(ws, id, None).await {
                Ok(()) => deleted += 1,
                Err(StoreError::NotFound) => {}
                Err(other) => return Err(other.into()),
            }
        }
        Ok(deleted)
    }

    /// The check history of endpoint `id`, newest first, one page, and the total (404 when the
    /// endpoint is not in workspace `ws`).
    pub async fn list_checks(
        &self,
        actor: &Actor,
        id: Uuid,
        page: PageRequest,
    ) -> Result<Page<CheckRecord>, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        let ws = actor.workspace();
        self.endpoint(ws, id).await?;
        let found = self.store.list_checks(ws, id, page).await?;
        Ok(Page {
            items: found.items.iter().map(record).collect::<Result<_, _>>()?,
            total: found.total,
        })
    }

    /// The deliveries of webhook `id`, newest first, one page, and the total (404 when the
    /// webhook is not in workspace `ws`).
    pub async fn list_deliveries(
        &self,
        actor: &Actor,
        id: Uuid,
        page: PageRequest,
    ) -> Result<Page<DeliveryView>, ServiceError> {
        actor.may(Action::ListWebhooks)?;
        let ws = actor.workspace();
        self.webhook(ws, id).await?;
        let found = self.store.list_deliveries(ws, id, page).await?;
        Ok(Page {
            items: found.items.iter().map(delivery).collect::<Result<_, _>>()?,
            total: found.total,
        })
    }

    async fn webhook(
        &self,
        ws: Uuid,
        id: Uuid,
    ) -> Result<apidrift_store::StoredWebhook, ServiceError> {
        self.store
            .list_webhooks(ws)
            .await?
            .into_iter()
            .find(|w| w.id == id)
            .ok_or_else(|| ServiceError::not_found("webhook", id))
    }

    /// Sends one signed `ping` event to webhook `id` now and reports what the receiver answered
    /// (`POST /v1/webhooks/{id}/test`, the console's "send test" button). Nothing is queued or
    /// retried. 404 when missing, 503 without a key.
    pub async fn test_webhook(
        &self,
        actor: &Actor,
        id: Uuid,
    ) -> Result<WebhookTestResult, ServiceError> {
        actor.may(Action::ManageWebhooks)?;
        let ws = actor.workspace();
        let hook = self.webhook(ws, id).await?;
        let keys = self.keys_or(", so the webhook secret cannot be opened")?;
        let secret = keys
            .open(
                &hook.sealed_secret,
                &Binding::new(*ws.as_bytes(), *id.as_bytes(), Field::WebhookSecret),
            )
            .map_err(|e| ServiceError::Internal(format!("webhook secret: {e}")))?;
        let now = self.now_millis();
        let failed = |error: String| WebhookTestResult {
            delivered: false,
            status: None,
            error: Some(error),
        };
        // What to send: the signed ping of a generic webhook, or the service's own test
        // message(s) of a native channel (a Slack or Discord URL is the sealed secret, and so is
        // any URL that holds a secret).
        let (target, secret) = match super::webhooks::delivery_target(hook.kind, &hook.url, &secret)
        {
            Ok(found) => found,
            Err(e) => return Ok(failed(e)),
        };
        let (bodies, headers) = if hook.kind == WebhookKind::Generic {
            let payload = serde_json::json!({
                "type": "ping",
                "webhookId": id,
                "sentAt": ts(now)?,
            })
            .to_string();
            let sig = signature(secret, now.unix_timestamp(), payload.as_bytes());
            let headers = vec![ExtraHeader {
                name: SIGNATURE_HEADER.to_owned(),
                value: SecretString::new(sig),
            }];
            (vec![payload], headers)
        } else {
            let Ok(secret) = std::str::from_utf8(secret) else {
                return Ok(failed("the webhook secret is not UTF-8 text".to_owned()));
            };
            let bodies = channels::test_messages(hook.kind, &id.to_string(), secret);
            (bodies, Vec::new())
        };
        let url = match self.client.check_url(&target) {
            Ok(u) => u,
            Err(e) => return Ok(failed(e.to_string())),
        };
        let mut result = failed("nothing to send".to_owned());
        for body in bodies {
            let request = FetchRequest {
                url: url.clone(),
                method: HttpMethod::Post,
                credential: Credential::None,
                headers: headers.clone(),
                body: Some(body.into_bytes()),
                content_type: Some("application/json".to_owned()),
                timeout: TEST_TIMEOUT,
                follow_redirects: false,
                workspace: Some(ws),
            };
            result = match self.client.fetch(&request).await {
                Ok(r) if (200..300).contains(&r.status) => WebhookTestResult {
                    delivered: true,
                    status: Some(r.status),
                    error: None,
                },
                Ok(r) => WebhookTestResult {
                    delivered: false,
                    status: Some(r.status),
                    error: Some(format!("HTTP {}", r.status)),
                },
                Err(e) => failed(e.to_string()),
            };
            if !result.delivered {
                break;
            }
        }
        Ok(result)
    }

    /// Upkeep (start-up and the worker): every endpoint still `checking` whose run's deadline has
    /// passed gets back the health it had before the run. Returns how many.
    pub async fn reset_stale_checking(&self) -> Result<u64, ServiceError> {
        Ok(self.store.reset_stale_checking(self.now()).await?)
    }

    /// Upkeep (the worker): deletes check rows without a diff older than `days` days, their
    /// sealed bodies with them, in batches. Returns how many.
    pub async fn prune_checks(&self, days: u32) -> Result<u64, ServiceError> {
        let before = self.now() - time::Duration::days(i64::from(days));
        let mut total = 0;
        loop {
            let n = self.store.prune_checks(before, 1_000).await?;
            total += n;
            if n < 1_000 {
                return Ok(total);
            }
        }
    }
}
