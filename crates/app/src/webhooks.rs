//! Alert channels (D11, D24): create, list, delete. The URL passes the outbound policy (D14);
//! the secret is sealed with `Field::WebhookSecret` bound to the webhook's id and never returned
//! afterwards. Per kind:
//!
//! * `generic`: the signing secret is generated (and returned once) or supplied (never echoed);
//! * `slack`, `discord`: the incoming-webhook URL is itself the secret: it is sealed, no
//!   `secret` is accepted, and only a redacted form (`https://hooks.slack.com/services/T…/B…/…`)
//!   is stored and shown;
//! * `pagerduty`: `secret` is the Events API v2 routing key (required, 32 letters and digits,
//!   never echoed); `url` defaults to PagerDuty's events endpoint.
//!
//! A `generic` or `pagerduty` URL that holds a secret by its form ([`redact::holds_secret`]: a
//! query value, a Discord token, a Mattermost `/hooks/…` key, …) is sealed too: the sealed text
//! is then `<full URL>\n<secret>` and only the redacted form is stored, so a stored URL with `…`
//! in it says the full one is sealed (a parsed URL never holds `…`: it is percent-encoded).
//! [`delivery_target`] reads both forms, so rows stored before keep working.

use super::actions::{Action, Actor};
use super::base::Service;
use super::error::ServiceError;
use apidrift_model::{Severity, timestamp};
use apidrift_monitor::channels::PAGERDUTY_EVENTS_URL;
use apidrift_monitor::redact;
use apidrift_seal::{Binding, Field};
use apidrift_store::{NewWebhook, StoreError, StoredWebhook, WebhookKind, new_id};
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
    /// `generic` (the signed event), `slack`, `discord` or `pagerduty`.
    pub kind: String,
    /// Where deliveries go, redacted: every query value, a `slack` or `discord` URL's token and
    /// the secret path segments of any known channel URL form are `…` (the full URL is sealed).
    pub url: String,
    /// `info`, `warning` or `breaking`.
    pub min_severity: String,
    pub created_at: String,
    /// Only in the 201 of a `generic` create that generated it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

fn view(w: &StoredWebhook, secret: Option<String>) -> Result<WebhookView, ServiceError> {
    Ok(WebhookView {
        id: w.id,
        kind: w.kind.as_str().to_owned(),
        // Redacted again when shown: a row stored before a URL form was known may hold its secret.
        url: redact::webhook_text(w.kind, &w.url),
        min_severity: w.min_severity.as_str().to_owned(),
        created_at: timestamp::format(w.created_at)
            .map_err(|e| ServiceError::Internal(e.to_string()))?,
        secret,
    })
}

/// A validated create body.
struct WebhookInput {
    kind: WebhookKind,
    /// The URL stored and shown ([`redact::webhook_url`]).
    url: String,
    /// The full URL when it holds a secret and is not the secret itself (a `generic` or
    /// `pagerduty` URL): sealed with the secret as `<full URL>\n<secret>`.
    sealed_url: Option<String>,
    /// What is sealed: the supplied secret or routing key, the full URL of a `slack` or
    /// `discord` webhook; `None` when a `generic` secret is to be generated.
    secret: Option<String>,
    min_severity: Severity,
}

pub use apidrift_monitor::outbox::delivery_target;

/// The length of a PagerDuty routing (integration) key.
pub const ROUTING_KEY_LEN: usize = 32;

impl Service {
    /// The validated create body `{"kind"?, "url", "secret"?, "minSeverity"?}` (kind default
    /// `generic`, min severity default `warning`).
    fn webhook_input(&self, body: &Value) -> Result<WebhookInput, ServiceError> {
        let invalid = |text: &str| ServiceError::Invalid(text.to_owned());
        let Value::Object(map) = body else {
            return Err(invalid("request body must be a JSON object"));
        };
        let kinds = || {
            WebhookKind::ALL
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let kind = match map.get("kind") {
            None | Some(Value::Null) => WebhookKind::Generic,
            Some(Value::String(s)) => s
                .parse::<WebhookKind>()
                .map_err(|_| ServiceError::Invalid(format!("kind: one of {}", kinds())))?,
            Some(_) => return Err(ServiceError::Invalid(format!("kind: one of {}", kinds()))),
        };
        let url = match map.get("url") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim(),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                if kind == WebhookKind::Pagerduty {
                    PAGERDUTY_EVENTS_URL
                } else {
                    return Err(invalid(match kind {
                        WebhookKind::Slack => {
                            "url: required (the Slack incoming-webhook URL, https://hooks.slack.com/services/...)"
                        }
                        WebhookKind::Discord => {
                            "url: required (the Discord webhook URL, https://discord.com/api/webhooks/...)"
                        }
                        _ => "url: required",
                    }));
                }
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
        let min_severity = match map.get("minSeverity") {
            None | Some(Value::Null) => Severity::Warning,
            Some(Value::String(s)) => s
                .parse::<Severity>()
                .map_err(|_| invalid("minSeverity: one of info, warning, breaking"))?,
            Some(_) => return Err(invalid("minSeverity: one of info, warning, breaking")),
        };
        let shown = redact::webhook_url(kind, &url);
        let sealed_url = match kind {
            WebhookKind::Generic | WebhookKind::Pagerduty if shown != url.as_str() => {
                Some(url.to_string())
            }
            _ => None,
        };
        let (url, secret) = match kind {
            WebhookKind::Generic => (shown, secret),
            WebhookKind::Slack | WebhookKind::Discord => {
                if secret.is_some() {
                    return Err(ServiceError::Invalid(format!(
                        "secret: a {kind} webhook is authenticated by its URL; leave secret out"
                    )));
                }
                (shown, Some(url.to_string()))
            }
            WebhookKind::Pagerduty => {
                let key = secret.ok_or_else(|| {
                    invalid("secret: required: the routing key (integration key) of a PagerDuty Events API v2 integration")
                })?;
                if key.len() != ROUTING_KEY_LEN || !key.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err(ServiceError::Invalid(format!(
                        "secret: a PagerDuty routing key is {ROUTING_KEY_LEN} letters and digits; \
                         copy the integration key of an Events API v2 integration"
                    )));
                }
                (shown, Some(key))
            }
        };
        Ok(WebhookInput {
            kind,
            url,
            sealed_url,
            secret,
            min_severity,
        })
    }

    /// Creates a webhook of workspace `ws` from a create body (`POST /v1/webhooks`, the console
    /// and `apidrift webhook add` send the same document). The view carries the secret only when
    /// it was generated.
    pub async fn create_webhook(
        &self,
        actor: &Actor,
        body: &Value,
    ) -> Result<WebhookView, ServiceError> {
        actor.may(Action::ManageWebhooks)?;
        let ws = actor.workspace();
        let input = self.webhook_input(body)?;
        let keys = self.keys_or(", so webhook secrets cannot be sealed")?;
        let generated = match input.secret {
            Some(_) => None,
            None => {
                Some(apidrift_monitor::alerts::generate_secret().map_err(ServiceError::Internal)?)
            }
        };
        let secret = input
            .secret
            .as_deref()
            .or(generated.as_deref())
            .unwrap_or_default();
        let plaintext = match &input.sealed_url {
            Some(full) => format!("{full}\n{secret}"),
            None => secret.to_owned(),
        };
        let id = new_id();
        let sealed_secret = keys
            .seal(
                plaintext.as_bytes(),
                &Binding::new(*ws.as_bytes(), *id.as_bytes(), Field::WebhookSecret),
            )
            .map_err(|e| ServiceError::Internal(format!("sealing failed: {e}")))?;
        let stored = self
            .store
            .create_webhook(NewWebhook {
                id,
                workspace_id: ws,
                kind: input.kind,
                url: input.url,
                min_severity: input.min_severity,
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
    pub async fn list_webhooks(&self, actor: &Actor) -> Result<Vec<WebhookView>, ServiceError> {
        actor.may(Action::ListWebhooks)?;
        let ws = actor.workspace();
        let hooks = self.store.list_webhooks(ws).await?;
        hooks.iter().map(|w| view(w, None)).collect()
    }

    /// Removes webhook `id` of workspace `ws` and its pending deliveries.
    pub async fn delete_webhook(&self, actor: &Actor, id: Uuid) -> Result<(), ServiceError> {
        actor.may(Action::ManageWebhooks)?;
        let ws = actor.workspace();
        self.store
            .delete_webhook(ws, id)
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found("webhook", id),
                other => other.into(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_targets_read_old_and_new_rows() {
        let opened = b"https://discord.com/api/webhooks/1/TOKEN/slack";
        // A slack or discord row: the sealed secret is the URL, whatever the stored form.
        for stored in [
            "https://discord.com/api/webhooks/1/TOKEN/…",
            "https://discord.com/api/webhooks/1/…/slack",
        ] {
            assert_eq!(
                delivery_target(WebhookKind::Slack, stored, opened),
                Ok((String::from_utf8_lossy(opened).into_owned(), &opened[..]))
            );
        }
        // A generic row stored in full (before, or a URL without a secret): the stored URL.
        let full = "https://chat.example/in?key=K&token=T";
        assert_eq!(
            delivery_target(WebhookKind::Generic, full, b"signing\nsecret"),
            Ok((full.to_owned(), &b"signing\nsecret"[..]))
        );
        // A redacted row: `<full URL>\n<secret>` (the secret may hold a newline itself).
        let sealed = format!("{full}\nsigning\nsecret");
        assert_eq!(
            delivery_target(
                WebhookKind::Generic,
                "https://chat.example/in?key=…&token=…",
                sealed.as_bytes()
            ),
            Ok((full.to_owned(), &b"signing\nsecret"[..]))
        );
        assert_eq!(
            delivery_target(WebhookKind::Pagerduty, "https://pd.example/x?k=…", b"K"),
            Err("the sealed webhook URL is missing".to_owned())
        );
        assert!(delivery_target(WebhookKind::Discord, "https://d/…", &[0xff]).is_err());
    }
}
