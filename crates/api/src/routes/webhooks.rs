//! Alert channels (D11, D13): `POST /v1/webhooks`, `GET /v1/webhooks`, `DELETE /v1/webhooks/{id}`.
//! Scope `endpoints:write`, admin or above; POST and DELETE use the create rate class, GET the
//! read class (D17). The URL passes the outbound policy (D14, 400 when refused). The secret is
//! generated (and returned once, in the 201) or supplied (never echoed), sealed with
//! `Field::WebhookSecret` bound to the webhook's id, and never returned afterwards.

use crate::auth::{Authed, Policy};
use crate::error::ApiError;
use crate::ratelimit::Class;
use crate::routes::{parse_id, read_json_body};
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use apidrift_model::{ErrorBody, Role, Scope, Severity, timestamp};
use apidrift_seal::{Binding, Field};
use apidrift_store::{NewWebhook, StoredWebhook, new_id};
use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use utoipa_actix_web::service_config::ServiceConfig;

/// Longest accepted secret.
const MAX_SECRET_LEN: usize = 256;

/// Creating and removing webhooks: `endpoints:write`, admin or above, creates class.
#[derive(Debug)]
pub enum ManageWebhooks {}
impl Policy for ManageWebhooks {
    const SCOPE: Scope = Scope::EndpointsWrite;
    const MIN_ROLE: Role = Role::Admin;
    const ACTION: &'static str = "manage webhooks";
    const CLASS: Class = Class::Creates;
}

/// Listing webhooks: the same scope and role, reads class.
#[derive(Debug)]
pub enum ListWebhooks {}
impl Policy for ListWebhooks {
    const SCOPE: Scope = Scope::EndpointsWrite;
    const MIN_ROLE: Role = Role::Admin;
    const ACTION: &'static str = "manage webhooks";
    const CLASS: Class = Class::Reads;
}

/// Webhook routes under `/v1`.
pub fn configure_v1(config: &mut ServiceConfig) {
    config
        .service(create_webhook)
        .service(list_webhooks)
        .service(delete_webhook);
}

/// A webhook as answered (never its secret, except once at creation when generated).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    pub id: uuid::Uuid,
    pub url: String,
    /// `info`, `warning` or `breaking`.
    pub min_severity: String,
    pub created_at: String,
    /// Only in the 201 of a create that generated it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `{ "webhook": … }`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookEnvelope {
    pub webhook: WebhookView,
}

/// `{ "webhooks": [...] }`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}

/// Body of `POST /v1/webhooks`.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct CreateWebhook {
    /// http(s) URL; must pass the outbound policy (D14): private, loopback, link-local and other
    /// special-purpose addresses and `localhost`/`*.local`/`*.internal` names answer 400.
    #[schema(min_length = 1)]
    url: String,
    /// Signing secret; generated (and returned once) when absent.
    #[schema(min_length = 1, max_length = 256)]
    secret: Option<String>,
    /// Alerts of this severity and above are delivered (default `warning`).
    min_severity: Option<MinSeverity>,
}

/// The lowest severity a webhook is told about (D11).
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum MinSeverity {
    Info,
    Warning,
    Breaking,
}

fn view(w: &StoredWebhook, secret: Option<String>) -> Result<WebhookView, ApiError> {
    Ok(WebhookView {
        id: w.id,
        url: w.url.clone(),
        min_severity: w.min_severity.as_str().to_owned(),
        created_at: timestamp::format(w.created_at)
            .map_err(|e| ApiError::Internal(e.to_string()))?,
        secret,
    })
}

/// The validated body: (url, supplied secret, min severity).
fn validate(
    body: &Value,
    state: &AppState,
) -> Result<(String, Option<String>, Severity), ApiError> {
    let Value::Object(map) = body else {
        return Err(ApiError::BadRequest(
            "request body must be a JSON object".into(),
        ));
    };
    let url = match map.get("url") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim(),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err(ApiError::BadRequest("url: required".into()));
        }
        Some(_) => return Err(ApiError::BadRequest("url: must be a string".into())),
    };
    let url = apidrift_model::net::check_url(url, &state.allow)
        .map_err(|e| ApiError::BadRequest(format!("url: {e}")))?;
    let secret = match map.get("secret") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => {
            return Err(ApiError::BadRequest("secret: must not be empty".into()));
        }
        Some(Value::String(s)) if s.len() > MAX_SECRET_LEN => {
            return Err(ApiError::BadRequest(format!(
                "secret: at most {MAX_SECRET_LEN} characters"
            )));
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ApiError::BadRequest("secret: must be a string".into())),
    };
    let min = match map.get("minSeverity") {
        None | Some(Value::Null) => Severity::Warning,
        Some(Value::String(s)) => s.parse::<Severity>().map_err(|_| {
            ApiError::BadRequest("minSeverity: one of info, warning, breaking".into())
        })?,
        Some(_) => {
            return Err(ApiError::BadRequest(
                "minSeverity: one of info, warning, breaking".into(),
            ));
        }
    };
    Ok((url.to_string(), secret, min))
}

/// Register an alert channel.
#[utoipa::path(
    post,
    path = "/webhooks",
    tag = "second surface",
    operation_id = "createWebhookV1",
    request_body(content = CreateWebhook, content_type = "application/json"),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 201, description = "Created; `secret` only when it was generated", body = WebhookEnvelope),
        (status = 400, description = "Invalid body or a URL the outbound policy refuses", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write or role below admin", body = ErrorBody),
        (status = 413, description = "Body larger than 2 MiB", body = ErrorBody),
        (status = 415, description = "Body is not application/json", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/webhooks")]
pub async fn create_webhook(
    auth: Authed<ManageWebhooks>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body = read_json_body(&req, body).await?;
    let webhook = create(&state, auth.workspace_id, &body).await?;
    Ok(HttpResponse::Created().json(WebhookEnvelope { webhook }))
}

/// Validates a create body and stores the webhook of workspace `ws` with its secret sealed (the
/// route and the console share it). The view carries the secret only when it was generated.
pub(crate) async fn create(
    state: &AppState,
    ws: uuid::Uuid,
    body: &Value,
) -> Result<WebhookView, ApiError> {
    let (url, supplied, min_severity) = validate(body, state)?;
    let Some(keys) = state.keys.clone() else {
        return Err(ApiError::Unavailable(
            "ENDPOINT_SECRET_KEY is not configured, so webhook secrets cannot be sealed".into(),
        ));
    };
    let generated = match supplied {
        Some(_) => None,
        None => Some(apidrift_monitor::alerts::generate_secret().map_err(ApiError::Internal)?),
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
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let now = OffsetDateTime::now_utc();
    let now = now
        .replace_nanosecond(now.millisecond() as u32 * 1_000_000)
        .unwrap_or(now);
    let stored = state
        .store
        .create_webhook(NewWebhook {
            id,
            workspace_id: ws,
            url,
            min_severity,
            sealed_secret,
            created_at: now,
        })
        .await
        .map_err(ApiError::store)?;
    view(&stored, generated)
}

/// Every webhook of workspace `ws`, oldest first, without secrets.
pub(crate) async fn list(state: &AppState, ws: uuid::Uuid) -> Result<Vec<WebhookView>, ApiError> {
    let hooks = state
        .store
        .list_webhooks(ws)
        .await
        .map_err(ApiError::store)?;
    hooks.iter().map(|w| view(w, None)).collect()
}

/// List alert channels (never their secrets).
#[utoipa::path(
    get,
    path = "/webhooks",
    tag = "second surface",
    operation_id = "listWebhooksV1",
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 200, description = "Every webhook of the workspace, oldest first", body = WebhookList),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write or role below admin", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/webhooks")]
pub async fn list_webhooks(
    auth: Authed<ListWebhooks>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let webhooks = list(&state, auth.workspace_id).await?;
    Ok(HttpResponse::Ok().json(WebhookList { webhooks }))
}

/// Remove an alert channel (its pending deliveries go with it).
#[utoipa::path(
    delete,
    path = "/webhooks/{id}",
    tag = "second surface",
    operation_id = "deleteWebhookV1",
    params(("id" = uuid::Uuid, Path, description = "Webhook id")),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write or role below admin", body = ErrorBody),
        (status = 404, description = "No such webhook in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[delete("/webhooks/{id}")]
pub async fn delete_webhook(
    auth: Authed<ManageWebhooks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    state
        .store
        .delete_webhook(auth.workspace_id, id)
        .await
        .map_err(ApiError::store)?;
    Ok(HttpResponse::NoContent().finish())
}
