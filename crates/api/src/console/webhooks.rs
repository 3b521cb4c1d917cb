//! Webhooks: add (a generated secret shown once), list, remove.

use super::form::{Form, SignedIn};
use super::kit::{Page, chrome, error_page, field, html, parse_uuid, redirect};
use super::session::Session;
use super::views;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::web;
use apidrift_app::{WebhookView, act};

/// Registers the webhook list routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console/webhooks", web::get().to(webhooks_list))
        .route("/console/webhooks", web::post().to(webhook_add))
        .route(
            "/console/webhooks/{id}/remove",
            web::post().to(webhook_remove),
        );
}

/// What the webhooks page shows after a post: a created webhook (its generated secret once),
/// or the reason the add was refused (with the submitted values kept in the form).
enum HookOutcome {
    None,
    Created(WebhookView),
    Refused {
        error: ApiError,
        kind: String,
        url: String,
        min: String,
    },
}

/// The webhooks page of a user who may manage webhooks (the caller's extractor checked it).
async fn webhooks_page(state: &AppState, s: &Session, outcome: HookOutcome) -> Page {
    let list = state.service.list_webhooks(&s.actor()).await?;
    use actix_web::ResponseError as _;
    use views::webhooks::{HookNotice, WebhookRow, Webhooks};
    let mut status = StatusCode::OK;
    let refusal;
    let (notice, kind, url, min) = match &outcome {
        HookOutcome::None => (HookNotice::None, "generic", "", "warning"),
        HookOutcome::Created(w) => match &w.secret {
            Some(secret) => (
                HookNotice::AddedWithSecret(secret),
                "generic",
                "",
                "warning",
            ),
            None => (HookNotice::Added(&w.kind), "generic", "", "warning"),
        },
        HookOutcome::Refused {
            error,
            kind,
            url,
            min,
        } => {
            status = error.status_code();
            refusal = error.to_string();
            // A Slack or Discord URL is a secret, and so is any URL that holds one by its form
            // (a query value, a Discord token, …): a refused form does not send it back.
            let hook_kind = kind
                .parse()
                .unwrap_or(apidrift_app::read::WebhookKind::Generic);
            let url = if apidrift_app::redact::text_holds_secret(hook_kind, url) {
                ""
            } else {
                url.as_str()
            };
            (
                HookNotice::Refused(&refusal),
                kind.as_str(),
                url,
                min.as_str(),
            )
        }
    };
    let view = Webhooks {
        notice,
        kind,
        url,
        min_severity: min,
        rows: list
            .iter()
            .map(|w| WebhookRow {
                id: w.id,
                kind: &w.kind,
                url: &w.url,
                min_severity: &w.min_severity,
                created_at: &w.created_at,
            })
            .collect(),
    };
    Ok(html(
        status,
        views::webhooks::render(&chrome(s, "webhooks"), &view),
    ))
}

async fn webhooks_list(state: web::Data<AppState>, signed_in: SignedIn<act::ListWebhooks>) -> Page {
    webhooks_page(&state, &signed_in.session, HookOutcome::None).await
}

async fn webhook_add(state: web::Data<AppState>, form: Form<act::ManageWebhooks>) -> Page {
    let (s, pairs) = (form.session, form.pairs);
    let url = field(&pairs, "url").unwrap_or("").trim().to_owned();
    let kind = field(&pairs, "kind").unwrap_or("generic").to_owned();
    let min = field(&pairs, "min_severity")
        .unwrap_or("warning")
        .to_owned();
    let made = async {
        let mut body = serde_json::json!({ "kind": kind, "minSeverity": min });
        if !url.is_empty() {
            body["url"] = serde_json::Value::String(url.clone());
        }
        if let Some(secret) = field(&pairs, "secret").filter(|v| !v.is_empty()) {
            body["secret"] = serde_json::Value::String(secret.to_owned());
        }
        Ok(state.service.create_webhook(&s.actor(), &body).await?)
    }
    .await;
    let outcome = match made {
        Ok(w) => HookOutcome::Created(w),
        Err(error) => HookOutcome::Refused {
            error,
            kind,
            url,
            min,
        },
    };
    webhooks_page(&state, &s, outcome).await
}

async fn webhook_remove(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::ManageWebhooks>,
) -> Page {
    let s = form.session;
    let done: Result<(), ApiError> = async {
        let id = parse_uuid(&id)?;
        Ok(state.service.delete_webhook(&s.actor(), id).await?)
    }
    .await;
    match done {
        Ok(()) => Ok(redirect("/console/webhooks")),
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}
