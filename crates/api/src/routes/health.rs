//! `GET /healthz` (liveness) and `GET /readyz` (the database answers), without auth (D2).

use crate::error::ApiError;
use crate::state::AppState;
use actix_web::{HttpResponse, get, web};
use apidrift_model::ErrorBody;
use serde::Serialize;
use utoipa::ToSchema;

/// Body of the health routes.
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    /// `ok` or `ready`.
    pub status: &'static str,
}

/// Liveness: the process serves requests.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    operation_id = "healthz",
    responses((status = 200, description = "The process is alive", body = Status))
)]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(Status { status: "ok" })
}

/// Readiness: the database answers.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    operation_id = "readyz",
    responses(
        (status = 200, description = "The database answers", body = Status),
        (status = 503, description = "The database does not answer", body = ErrorBody),
    )
)]
#[get("/readyz")]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    match state.service.ping().await {
        Ok(()) => Ok(HttpResponse::Ok().json(Status { status: "ready" })),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            Err(ApiError::Unavailable("database unavailable".into()))
        }
    }
}
