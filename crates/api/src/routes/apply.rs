//! `POST /api/v1/apply`: monitors as code (D25).

use crate::auth::Authed;
use crate::docs::ApplyRequestDoc;
use crate::error::ApiError;
use crate::routes::read_json_body;
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, post, web};
use apidrift_app::{ApplyResult, act};
use apidrift_model::ErrorBody;

/// Make the workspace's keyed endpoints match a monitors file.
#[utoipa::path(
    post,
    path = "/apply",
    tag = "endpoints",
    operation_id = "applyMonitors",
    request_body(content = ApplyRequestDoc, content_type = "application/json"),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 200, description = "The plan (create, update with the changed fields, delete, unchanged); applied is false for a dry run", body = ApplyResult),
        (status = 400, description = "An invalid entry (named by its key or index, and the field), a duplicate key, or a malformed request; nothing was written", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 402, description = "The result would exceed the plan's endpoint limit; nothing was written", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role is below admin", body = ErrorBody),
        (status = 413, description = "Body larger than 2 MiB", body = ErrorBody),
        (status = 415, description = "Body is not application/json", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured, or the endpoints kept changing while the file was applied", body = ErrorBody),
    )
)]
#[post("/apply")]
pub async fn apply_monitors(
    auth: Authed<act::ApplyMonitors>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body = read_json_body(&req, body).await?;
    let result = state.service.apply_monitors(&auth.actor, &body).await?;
    Ok(HttpResponse::Ok().json(result))
}
