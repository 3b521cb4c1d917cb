//! Endpoint lifecycle and history (D19): `PATCH` and `DELETE /api/v1/endpoints/{id}`,
//! `GET /api/v1/endpoints/{id}/checks`, `GET /api/v1/webhooks/{id}/deliveries` and
//! `POST /api/v1/webhooks/{id}/test` (the last two with their `/v1` twins). Thin callers of `apidrift_app::Service` (module
//! `service::lifecycle`): the handlers authenticate, parse the id and the page, and translate.

use crate::auth::Authed;
use crate::docs::{EndpointPatchDoc, PageQuery};
use crate::error::ApiError;
use crate::query::Params;
use crate::routes::{parse_id, precondition, read_json_body};
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, delete, get, patch, post, web};
use apidrift_app::{CheckRecord, DeliveryView, WebhookTestResult, act};
use apidrift_model::{Endpoint, ErrorBody, Pagination};
use serde::Serialize;
use utoipa_actix_web::service_config::ServiceConfig;

/// Routes under `/api/v1`.
pub fn configure_api_v1(config: &mut ServiceConfig) {
    config
        .service(update_endpoint)
        .service(delete_endpoint)
        .service(list_checks)
        .service(list_deliveries)
        .service(test_webhook);
}

/// Routes under `/v1`.
pub fn configure_v1(config: &mut ServiceConfig) {
    config.service(list_deliveries_v1).service(test_webhook_v1);
}

/// `{ "endpoint": Endpoint }`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UpdatedEndpoint {
    pub endpoint: Endpoint,
}

/// `{ "checks": [CheckRecord], "pagination" }`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CheckList {
    pub checks: Vec<CheckRecord>,
    pub pagination: Pagination,
}

/// `{ "deliveries": [Delivery], "pagination" }`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryView>,
    pub pagination: Pagination,
}

/// Change an endpoint.
#[utoipa::path(
    patch,
    path = "/endpoints/{id}",
    tag = "endpoints",
    operation_id = "updateEndpoint",
    params(
        ("id" = Uuid, Path, description = "Endpoint id"),
        ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^([ \t]*\*[ \t]*|[ \t,]*((W/)?"[!#-~]*"[ \t]*(,[ \t,]*((W/)?"[!#-~]*"[ \t]*)?)*)?)$"#, description = "The ETag of the endpoint as read (\"3\"), a comma-separated list of them, or *: the change is made only while the endpoint has that version (strong comparison; a weak W/\"3\" never matches), else 412. Without it, the fields the body names change on the current endpoint"),
    ),
    request_body(content = EndpointPatchDoc, content_type = "application/json"),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 200, description = "The endpoint after the change; only the fields the body names changed", body = UpdatedEndpoint,
            headers(("ETag" = String, description = "The endpoint's new version as a strong entity tag (\"4\"): send it as If-Match with the next change"))),
        (status = 400, description = "Not a JSON object, an invalid field (named), or an If-Match that is not * or a list of entity tags; nothing changed", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role is below member", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 412, description = "If-Match names another version than the current one: {\"error\": \"the endpoint changed since you read it\"}; nothing changed", body = ErrorBody),
        (status = 413, description = "Body larger than 2 MiB", body = ErrorBody),
        (status = 415, description = "Body is not application/json", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured (only when a credential, headers or a request body change), or the endpoint kept changing concurrently (try again)", body = ErrorBody),
    )
)]
#[patch("/endpoints/{id}")]
pub async fn update_endpoint(
    auth: Authed<act::UpdateEndpoints>,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let body = read_json_body(&req, body).await?;
    let expected = precondition::expected_version(&req, &state, &auth.actor, id).await?;
    let endpoint = state
        .service
        .update_endpoint(&auth.actor, id, &body, expected)
        .await?;
    Ok(HttpResponse::Ok()
        .insert_header(precondition::etag(endpoint.version))
        .json(UpdatedEndpoint {
            endpoint: endpoint.to_model(),
        }))
}

/// Delete an endpoint with its schedule, baselines, checks, diffs, contract and secrets.
#[utoipa::path(
    delete,
    path = "/endpoints/{id}",
    tag = "endpoints",
    operation_id = "deleteEndpoint",
    params(
        ("id" = Uuid, Path, description = "Endpoint id"),
        ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^([ \t]*\*[ \t]*|[ \t,]*((W/)?"[!#-~]*"[ \t]*(,[ \t,]*((W/)?"[!#-~]*"[ \t]*)?)*)?)$"#, description = "The ETag of the endpoint as read (\"3\"), a comma-separated list of them, or *: the endpoint is deleted only while it has that version (strong comparison), else 412"),
    ),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 204, description = "Deleted; its queued deliveries are dropped"),
        (status = 400, description = "An If-Match that is not * or a list of entity tags", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role is below admin", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 412, description = "If-Match names another version than the current one: {\"error\": \"the endpoint changed since you read it\"}; nothing is deleted", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[delete("/endpoints/{id}")]
pub async fn delete_endpoint(
    auth: Authed<act::DeleteEndpoints>,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let expected = precondition::expected_version(&req, &state, &auth.actor, id).await?;
    state
        .service
        .delete_endpoint(&auth.actor, id, expected)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// An endpoint's check history, newest first.
#[utoipa::path(
    get,
    path = "/endpoints/{id}/checks",
    tag = "endpoints",
    operation_id = "listEndpointChecks",
    params(("id" = Uuid, Path, description = "Endpoint id"), PageQuery),
    security(("bearer" = ["endpoints:read"])),
    responses(
        (status = 200, description = "A page of checks, newest first", body = CheckList),
        (status = 400, description = "A malformed query parameter (named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:read", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/endpoints/{id}/checks")]
pub async fn list_checks(
    auth: Authed<act::ReadEndpoints>,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let page = Params::parse(req.query_string())?.page()?;
    let found = state.service.list_checks(&auth.actor, id, page).await?;
    Ok(HttpResponse::Ok().json(CheckList {
        checks: found.items,
        pagination: Pagination {
            limit: page.limit,
            offset: page.offset,
            total: found.total,
        },
    }))
}

async fn deliveries(
    auth: Authed<act::ListWebhooks>,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let page = Params::parse(req.query_string())?.page()?;
    let found = state.service.list_deliveries(&auth.actor, id, page).await?;
    Ok(HttpResponse::Ok().json(DeliveryList {
        deliveries: found.items,
        pagination: Pagination {
            limit: page.limit,
            offset: page.offset,
            total: found.total,
        },
    }))
}

/// A webhook's deliveries, newest first, with their last attempt.
#[utoipa::path(
    get,
    path = "/webhooks/{id}/deliveries",
    tag = "webhooks",
    operation_id = "listWebhookDeliveries",
    params(("id" = Uuid, Path, description = "Webhook id"), PageQuery),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 200, description = "A page of deliveries, newest first", body = DeliveryList),
        (status = 400, description = "A malformed query parameter (named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role is below admin", body = ErrorBody),
        (status = 404, description = "No such webhook in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/webhooks/{id}/deliveries")]
pub async fn list_deliveries(
    auth: Authed<act::ListWebhooks>,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    deliveries(auth, id, req, state).await
}

/// A webhook's deliveries, newest first, with their last attempt (D13 alias of
/// `GET /api/v1/webhooks/{id}/deliveries`).
#[utoipa::path(
    get,
    path = "/webhooks/{id}/deliveries",
    tag = "second surface",
    operation_id = "listWebhookDeliveriesV1",
    params(("id" = Uuid, Path, description = "Webhook id"), PageQuery),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 200, description = "A page of deliveries, newest first", body = DeliveryList),
        (status = 400, description = "A malformed query parameter (named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role is below admin", body = ErrorBody),
        (status = 404, description = "No such webhook in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/webhooks/{id}/deliveries")]
pub async fn list_deliveries_v1(
    auth: Authed<act::ListWebhooks>,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    deliveries(auth, id, req, state).await
}

async fn test(
    auth: Authed<act::ManageWebhooks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let result = state.service.test_webhook(&auth.actor, id).await?;
    Ok(HttpResponse::Ok().json(result))
}

/// Send one signed `ping` event to a webhook now.
#[utoipa::path(
    post,
    path = "/webhooks/{id}/test",
    tag = "webhooks",
    operation_id = "testWebhook",
    params(("id" = Uuid, Path, description = "Webhook id")),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 200, description = "What the receiver answered (delivered is false when it did not answer 2xx)", body = WebhookTestResult),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role is below admin", body = ErrorBody),
        (status = 404, description = "No such webhook in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/webhooks/{id}/test")]
pub async fn test_webhook(
    auth: Authed<act::ManageWebhooks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    test(auth, id, state).await
}
/// Send one signed `ping` event to a webhook now (D13 alias of
/// `POST /api/v1/webhooks/{id}/test`).
#[utoipa::path(
    post,
    path = "/webhooks/{id}/test",
    tag = "second surface",
    operation_id = "testWebhookV1",
    params(("id" = Uuid, Path, description = "Webhook id")),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 200, description = "What the receiver answered (delivered is false when it did not answer 2xx)", body = WebhookTestResult),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role is below admin", body = ErrorBody),
        (status = 404, description = "No such webhook in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/webhooks/{id}/test")]
pub async fn test_webhook_v1(
    auth: Authed<act::ManageWebhooks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    test(auth, id, state).await
}
