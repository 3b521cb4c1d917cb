//! The check pipeline's routes (issue 6, `apidrift-monitor`): `POST /api/v1/endpoints/{id}/check`,
//! `POST /v1/endpoints/{id}/check` and `POST /v1/endpoints/{id}/baseline` (D8, D13).
//!
//! Each builds an [`apidrift_monitor::Monitor`] over the state's store and keys with one outbound
//! client per process (built on first use from the state's allow-list); the monitor serialises
//! concurrent checks of one endpoint. A fetch that fails is never a 5xx: a check records it as a
//! `status_changed` change (200), a capture answers 400 naming the cause.

use crate::auth::{Authed, CaptureBaselines, RunChecks};
use crate::error::ApiError;
use crate::routes::parse_id;
use crate::state::AppState;
use actix_web::{HttpResponse, post, web};
use apidrift_model::net::AllowList;
use apidrift_model::{CheckResponse, ErrorBody};
use apidrift_monitor::{Client, Monitor, MonitorError};
use serde::Serialize;
use std::sync::Mutex;
use utoipa_actix_web::service_config::ServiceConfig;
use uuid::Uuid;

/// Check routes under `/api/v1`.
pub fn configure_api_v1(config: &mut ServiceConfig) {
    config.service(run_check);
}

/// Check and baseline routes under `/v1`.
pub fn configure_v1(config: &mut ServiceConfig) {
    config.service(run_check_v1).service(capture_baseline_v1);
}

/// 201 body of `POST /v1/endpoints/{id}/baseline` (D13).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BaselineCaptured {
    /// 1 for the first capture, then + 1.
    pub baseline_version: u32,
    /// RFC 3339, milliseconds, `Z`.
    pub captured_at: String,
    /// The captured HTTP status.
    pub status: u16,
}

/// The outbound client of the process, rebuilt only if the allow-list changes.
static CLIENT: Mutex<Option<(AllowList, Client)>> = Mutex::new(None);

pub(crate) fn client_for(allow: &AllowList) -> Result<Client, ApiError> {
    let mut slot = CLIENT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((cached, client)) = slot.as_ref()
        && cached == allow
    {
        return Ok(client.clone());
    }
    let client = Client::new(allow.clone())
        .map_err(|e| ApiError::Internal(format!("outbound client: {e}")))?;
    *slot = Some((allow.clone(), client.clone()));
    Ok(client)
}

/// The monitor for a request: 404 before 503 (D4 order) when no sealing key is configured.
pub(crate) async fn monitor(
    state: &AppState,
    workspace_id: Uuid,
    id: Uuid,
) -> Result<Monitor, ApiError> {
    let Some(keys) = state.keys.clone() else {
        state
            .store
            .get_endpoint(workspace_id, id)
            .await
            .map_err(ApiError::store)?
            .ok_or(ApiError::NotFound)?;
        return Err(ApiError::Unavailable(
            "ENDPOINT_SECRET_KEY is not configured, so stored credentials cannot be opened".into(),
        ));
    };
    Ok(Monitor::new(
        state.store.clone(),
        keys,
        client_for(&state.allow)?,
    ))
}

pub(crate) fn monitor_error(e: MonitorError) -> ApiError {
    match e {
        MonitorError::NotFound => ApiError::NotFound,
        MonitorError::NoBaseline
        | MonitorError::QuotaExhausted { .. }
        | MonitorError::CaptureFailed(_)
        | MonitorError::Endpoint(_)
        | MonitorError::Diff(_) => ApiError::BadRequest(e.to_string()),
        MonitorError::Store(s) => ApiError::store(s),
        other => ApiError::Internal(other.to_string()),
    }
}

async fn check(
    auth: Authed<RunChecks>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let monitor = monitor(&state, auth.workspace_id, id).await?;
    let outcome = monitor
        .run_check(auth.workspace_id, id)
        .await
        .map_err(monitor_error)?;
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
    let monitor = monitor(&state, auth.workspace_id, id).await?;
    let baseline = monitor
        .capture_baseline(auth.workspace_id, id)
        .await
        .map_err(monitor_error)?;
    let captured_at = apidrift_model::timestamp::format(baseline.captured_at)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(HttpResponse::Created().json(BaselineCaptured {
        baseline_version: baseline.version,
        captured_at,
        status: baseline.status,
    }))
}
