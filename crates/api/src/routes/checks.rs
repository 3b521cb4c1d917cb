//! The check pipeline's routes (issue 6, `apidrift-monitor`): `POST /api/v1/endpoints/{id}/check`,
//! `POST /api/v1/endpoints/{id}/baseline` and their `/v1` twins (D8, D13, D25).
//!
//! Each calls the service (`Service::run_check`, `Service::capture_baseline`), whose one monitor
//! serialises concurrent checks of one endpoint. A fetch that fails is never a 5xx: a check
//! records it as a `status_changed` change (200), a capture answers 400 naming the cause.

use crate::auth::Authed;
use crate::error::ApiError;
use crate::routes::{parse_id, read_optional_json_body};
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, post, web};
use apidrift_app::MAX_SAMPLES;
use apidrift_app::{BaselineCaptured, act};
use apidrift_model::{CheckResponse, ErrorBody};
use serde_json::Value;
use utoipa_actix_web::service_config::ServiceConfig;

/// Check routes under `/api/v1`.
pub fn configure_api_v1(config: &mut ServiceConfig) {
    config.service(run_check).service(capture_baseline);
}

/// Check and baseline routes under `/v1`.
pub fn configure_v1(config: &mut ServiceConfig) {
    config.service(run_check_v1).service(capture_baseline_v1);
}

async fn check(
    auth: Authed<act::RunChecks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let outcome = state.service.run_check(&auth.actor, id).await?;
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
    auth: Authed<act::RunChecks>,
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
    auth: Authed<act::RunChecks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    check(auth, id, state).await
}

async fn capture(
    auth: Authed<act::CaptureBaselines>,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let samples = samples_of(read_optional_json_body(&req, body).await?.as_ref())?;
    let captured = state
        .service
        .capture_baseline_sampled(&auth.actor, id, samples)
        .await?;
    Ok(HttpResponse::Created().json(captured))
}

/// Capture a baseline: uses no quota, whatever the number of samples; shares the check
/// rate-limit class. With `{"samples": N}` (1 to 5, default 1) the endpoint is fetched N times
/// about a second apart and the leaf paths whose values differ are learned as `volatilePaths`
/// (ignored by full-mode checks until the next capture). The body is optional.
#[utoipa::path(
    post,
    path = "/endpoints/{id}/baseline",
    tag = "checks",
    operation_id = "captureBaseline",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    request_body(content = Option<crate::docs::CaptureRequestDoc>, content_type = "application/json", description = "Optional"),
    security(("bearer" = ["baselines:write"])),
    responses(
        (status = 201, description = "The baseline was captured", body = BaselineCaptured),
        (status = 400, description = "The fetch failed (the cause is named), samples is not 1 to 5, or the samples differ in status or shape (the sample and the path are named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks baselines:write, or the role cannot capture baselines", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/endpoints/{id}/baseline")]
pub async fn capture_baseline(
    auth: Authed<act::CaptureBaselines>,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    capture(auth, id, req, body, state).await
}

/// Capture a baseline (D13 alias of `POST /api/v1/endpoints/{id}/baseline`): uses no quota,
/// whatever the number of samples; shares the check rate-limit class. With `{"samples": N}` (1 to 5, default 1) the endpoint is fetched N times
/// about a second apart and the leaf paths whose values differ are learned as `volatilePaths`
/// (ignored by full-mode checks until the next capture). The body is optional.
#[utoipa::path(
    post,
    path = "/endpoints/{id}/baseline",
    tag = "checks",
    operation_id = "captureBaselineV1",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    request_body(content = Option<crate::docs::CaptureRequestDoc>, content_type = "application/json", description = "Optional"),
    security(("bearer" = ["baselines:write"])),
    responses(
        (status = 201, description = "The baseline was captured", body = BaselineCaptured),
        (status = 400, description = "The fetch failed (the cause is named), samples is not 1 to 5, or the samples differ in status or shape (the sample and the path are named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks baselines:write, or the role cannot capture baselines", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/endpoints/{id}/baseline")]
pub async fn capture_baseline_v1(
    auth: Authed<act::CaptureBaselines>,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    capture(auth, id, req, body, state).await
}

/// `samples` of a capture body: absent (or no body) is 1.
fn samples_of(body: Option<&Value>) -> Result<u8, ApiError> {
    let bad = || {
        ApiError::BadRequest(format!(
            "samples: must be an integer from 1 to {MAX_SAMPLES}"
        ))
    };
    match body {
        None => Ok(1),
        Some(Value::Object(map)) => match map.get("samples") {
            None | Some(Value::Null) => Ok(1),
            Some(v) => v
                .as_u64()
                .and_then(|n| u8::try_from(n).ok())
                .filter(|n| (1..=MAX_SAMPLES).contains(n))
                .ok_or_else(bad),
        },
        Some(_) => Err(ApiError::BadRequest(
            "request body must be a JSON object, e.g. {\"samples\": 3}".into(),
        )),
    }
}
