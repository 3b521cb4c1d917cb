//! Alert channels (D11, D13, D25): `POST /api/v1/webhooks`, `GET /api/v1/webhooks`,
//! `DELETE /api/v1/webhooks/{id}`, each with its `/v1` twin.
//! Scope `endpoints:write`, admin or above; POST and DELETE use the create rate class, GET the
//! read class (D17). The rules are the service's (`apidrift_app::webhooks`): `kind`
//! is `generic` (default), `slack`, `discord` or `pagerduty` (D24); the URL passes the outbound
//! policy (D14, 400 when refused); a generic secret is generated (and returned once, in the
//! 201) or supplied (never echoed); a PagerDuty routing key and a Slack or Discord URL are
//! secrets too: sealed, never returned (the URL only in a redacted form).

use crate::auth::Authed;
use crate::error::ApiError;
use crate::routes::{parse_id, read_json_body};
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use apidrift_app::{WebhookView, act};
use apidrift_model::ErrorBody;
use serde::Serialize;
use utoipa_actix_web::service_config::ServiceConfig;

/// Webhook routes under `/api/v1`.
pub fn configure_api_v1(config: &mut ServiceConfig) {
    config
        .service(create_webhook)
        .service(list_webhooks)
        .service(delete_webhook);
}

/// Webhook routes under `/v1`.
pub fn configure_v1(config: &mut ServiceConfig) {
    config
        .service(create_webhook_v1)
        .service(list_webhooks_v1)
        .service(delete_webhook_v1);
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
    /// What the webhook delivers (default `generic`).
    kind: Option<WebhookKindName>,
    /// http(s) URL; must pass the outbound policy: private, loopback, link-local and other
    /// special-purpose addresses and `localhost`/`*.local`/`*.internal` names answer 400.
    /// Required except for `pagerduty` (default `https://events.pagerduty.com/v2/enqueue`). For
    /// `slack` and `discord` the incoming-webhook URL, which is kept secret (listed redacted).
    #[schema(min_length = 1)]
    url: Option<String>,
    /// `generic`: the signing secret, generated (and returned once) when absent. `pagerduty`:
    /// the Events API v2 routing key, required (32 letters and digits), never returned.
    /// `slack`, `discord`: not accepted (their URL is the secret).
    #[schema(min_length = 1, max_length = 256)]
    secret: Option<String>,
    /// Alerts of this severity and above are delivered (default `warning`).
    min_severity: Option<MinSeverity>,
}

/// What a webhook delivers: the signed generic event, a Slack incoming-webhook message, a
/// Discord webhook message or a PagerDuty Events API v2 event.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = WebhookKind)]
#[allow(dead_code)]
pub enum WebhookKindName {
    Generic,
    Slack,
    Discord,
    Pagerduty,
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

async fn create(
    auth: Authed<act::ManageWebhooks>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body = read_json_body(&req, body).await?;
    let webhook = state.service.create_webhook(&auth.actor, &body).await?;
    Ok(HttpResponse::Created().json(WebhookEnvelope { webhook }))
}

/// Register an alert channel.
#[utoipa::path(
    post,
    path = "/webhooks",
    tag = "webhooks",
    operation_id = "createWebhook",
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
    auth: Authed<act::ManageWebhooks>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    create(auth, req, body, state).await
}

/// Register an alert channel (D13 alias of `POST /api/v1/webhooks`).
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
pub async fn create_webhook_v1(
    auth: Authed<act::ManageWebhooks>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    create(auth, req, body, state).await
}

async fn list(
    auth: Authed<act::ListWebhooks>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let webhooks = state.service.list_webhooks(&auth.actor).await?;
    Ok(HttpResponse::Ok().json(WebhookList { webhooks }))
}

/// List alert channels (never their secrets).
#[utoipa::path(
    get,
    path = "/webhooks",
    tag = "webhooks",
    operation_id = "listWebhooks",
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
    auth: Authed<act::ListWebhooks>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    list(auth, state).await
}

/// List alert channels, never their secrets (D13 alias of `GET /api/v1/webhooks`).
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
pub async fn list_webhooks_v1(
    auth: Authed<act::ListWebhooks>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    list(auth, state).await
}

async fn delete(
    auth: Authed<act::ManageWebhooks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    state.service.delete_webhook(&auth.actor, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Remove an alert channel (its pending deliveries go with it).
#[utoipa::path(
    delete,
    path = "/webhooks/{id}",
    tag = "webhooks",
    operation_id = "deleteWebhook",
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
    auth: Authed<act::ManageWebhooks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    delete(auth, id, state).await
}
/// Remove an alert channel and its pending deliveries (D13 alias of
/// `DELETE /api/v1/webhooks/{id}`).
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
pub async fn delete_webhook_v1(
    auth: Authed<act::ManageWebhooks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    delete(auth, id, state).await
}
