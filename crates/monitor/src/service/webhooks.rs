//! Alert channels (D11): create, list, delete. The URL passes the outbound policy (D14); the
//! signing secret is generated (and returned once) or supplied (never echoed), sealed with
//! `Field::WebhookSecret` bound to the webhook's id, and never returned afterwards.

use super::base::Service;
use super::error::ServiceError;
use apidrift_model::{Severity, timestamp};
use apidrift_seal::{Binding, Field};
use apidrift_store::{NewWebhook, StoreError, StoredWebhook, new_id};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

/// Longest accepted secret.
pub const MAX_SECRET_LEN: usize = 256;

/// A webhook as answered (never its secret, except once at creation when generated).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    pub id: Uuid,
    pub url: String,
    /// `info`, `warning` or `breaking`.
    pub min_severity: String,
    pub created_at: String,
    /// Only in the 201 of a create that generated it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

fn view(w: &StoredWebhook, secret: Option<String>) -> Result<WebhookView, ServiceError> {
    Ok(WebhookView {
        id: w.id,
        url: w.url.clone(),
        min_severity: w.min_severity.as_str().to_owned(),
        created_at: timestamp::format(w.created_at)
            .map_err(|e| ServiceError::Internal(e.to_string()))?,
        secret,
    })
}

impl Service {
    /// The validated create body `{"url", "secret"?, "minSeverity"?}`: (url, supplied secret,
    /// min severity, default `warning`).
    fn webhook_input(
        &self,
        body: &Value,
    ) -> Result<(String, Option<String>, Severity), ServiceError> {
        let invalid = |text: &str| ServiceError::Invalid(text.to_owned());
        let Value::Object(map) = body else {
            return Err(invalid("request body must be a JSON object"));
        };
        let url = match map.get("url") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim(),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                return Err(invalid("url: required"));
            }
            Some(_) => return Err(invalid("url: must be a string")),
        };
        let url = apidrift_model::net::check_url(url, &self.allow)
            .map_err(|e| ServiceError::Invalid(format!("url: {e}")))?;
        let secret = match map.get("secret") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => {
                return Err(invalid("secret: must not be empty"));
            }
            Some(Value::String(s)) if s.len() > MAX_SECRET_LEN => {
                return Err(ServiceError::Invalid(format!(
                    "secret: at most {MAX_SECRET_LEN} characters"
                )));
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(invalid("secret: must be a string")),
        };
        let min = match map.get("minSeverity") {
            None | Some(Value::Null) => Severity::Warning,
            Some(Value::String(s)) => s
                .parse::<Severity>()
                .map_err(|_| invalid("minSeverity: one of info, warning, breaking"))?,
            Some(_) => return Err(invalid("minSeverity: one of info, warning, breaking")),
        };
        Ok((url.to_string(), secret, min))
    }

    /// Creates a webhook of workspace `ws` from a create body (`POST /v1/webhooks`, the console
    /// and `apidrift webhook add` send the same document). The view carries the secret only when
    /// it was generated.
    pub async fn create_webhook(
        &self,
        ws: Uuid,
        body: &Value,
    ) -> Result<WebhookView, ServiceError> {
        let (url, supplied, min_severity) = self.webhook_input(body)?;
        let keys = self.keys_or(", so webhook secrets cannot be sealed")?;
        let generated = match supplied {
            Some(_) => None,
            None => Some(crate::alerts::generate_secret().map_err(ServiceError::Internal)?),
        };
        let secret = supplied
            .as_deref()
            .or(generated.as_deref())
            .unwrap_or_default();
        let id = new_id();
        let sealed_secret = keys
            .seal(
                secret.as_bytes(),
                &Binding::new(*ws.as_bytes(), *id.as_bytes(), Field::WebhookSecret),
            )
            .map_err(|e| ServiceError::Internal(format!("sealing failed: {e}")))?;
        let stored = self
            .store
            .create_webhook(NewWebhook {
                id,
                workspace_id: ws,
                url,
                min_severity,
                sealed_secret,
                created_at: self.now_millis(),
            })
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found("workspace", ws),
                other => other.into(),
            })?;
        view(&stored, generated)
    }

    /// Every webhook of workspace `ws`, oldest first, without secrets.
    pub async fn list_webhooks(&self, ws: Uuid) -> Result<Vec<WebhookView>, ServiceError> {
        let hooks = self.store.list_webhooks(ws).await?;
        hooks.iter().map(|w| view(w, None)).collect()
    }

    /// Removes webhook `id` of workspace `ws` and its pending deliveries.
    pub async fn delete_webhook(&self, ws: Uuid, id: Uuid) -> Result<(), ServiceError> {
        self.store
            .delete_webhook(ws, id)
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found("webhook", id),
                other => other.into(),
            })
    }
}
