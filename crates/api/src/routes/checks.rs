//! The check pipeline's routes (issue 6, `apidrift-monitor`): `POST /api/v1/endpoints/{id}/check`,
//! `POST /v1/endpoints/{id}/check` and `POST /v1/endpoints/{id}/baseline` (D8, D13).
//!
//! Each calls the service (`Service::run_check`, `Service::capture_baseline`), whose one monitor
//! serialises concurrent checks of one endpoint. A fetch that fails is never a 5xx: a check
//! records it as a `status_changed` change (200), a capture answers 400 naming the cause.

use crate::auth::{Authed, CaptureBaselines, RunChecks};
use crate::error::ApiError;
use crate::routes::parse_id;
use crate::state::AppState;
use actix_web::{HttpResponse, post, web};
use apidrift_model::{CheckResponse, ErrorBody};
use apidrift_monitor::service::BaselineCaptured;
use utoipa_actix_web::service_config::ServiceConfig;

/// Check routes under `/api/v1`.
pub fn configure_api_v1(config: &mut ServiceConfig) {
    config.service(run_check);
}

/// Check and baseline routes under `/v1`.
pub fn configure_v1(config: &mut ServiceConfig) {
    config.service(run_check_v1).service(capture_baseline_v1);
}

async fn check(
    auth: Authed<RunChecks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let outcome = state.service.run_check(auth.workspace_id, id).await?;
    Ok(HttpResponse::Ok().json(outcome.to_response()))
}

/// Run a check now.
#[utoipa::path(
    post,
    path = "/endpoints/{id}/check",
    tag = "checks",
    operation_id = "runCheck",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    security(("bearer" = ["checks:run"])),
    responses(
        (status = 200, description = "The check ran; diffId is null when nothing changed", body = CheckResponse),
        (status = 400, description = "No baseline captured yet, or the monthly check quota is exhausted", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks checks:run, or the role cannot run checks", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/endpoints/{id}/check")]
pub async fn run_check(
    auth: Authed<RunChecks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    check(auth, id, state).await
}

/// Run a check now (D13 alias of `POST /api/v1/endpoints/{id}/check`).
#[utoipa::path(
    post,
    path = "/endpoints/{id}/check",
    tag = "checks",
    operation_id = "runCheckV1",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    security(("bearer" = ["checks:run"])),
    responses(
        (status = 200, description = "The check ran; diffId is null when nothing changed", body = CheckResponse),
        (status = 400, description = "No baseline captured yet, or the monthly check quota is exhausted", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks checks:run, or the role cannot run checks", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/endpoints/{id}/check")]
pub async fn run_check_v1(
    auth: Authed<RunChecks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    check(auth, id, state).await
}

/// Capture a baseline (D13): uses no quota; shares the check rate-limit class.
#[utoipa::path(
    post,
    path = "/endpoints/{id}/baseline",
    tag = "checks",
    operation_id = "captureBaselineV1",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    security(("bearer" = ["baselines:write"])),
    responses(
        (status = 201, description = "The baseline was captured", body = BaselineCaptured),
        (status = 400, description = "The fetch failed (the cause is named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks baselines:write, or the role cannot capture baselines", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/endpoints/{id}/baseline")]
pub async fn capture_baseline_v1(
    auth: Authed<CaptureBaselines>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let captured = state
        .service
        .capture_baseline(auth.workspace_id, id)
        .await?;
    Ok(HttpResponse::Created().json(captured))
}
