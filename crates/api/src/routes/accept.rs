//! `POST /api/v1/diffs/{id}/accept` (D12): scope `baselines:write`, admin or above. Sets
//! `accepted`, promotes the response of the check that found the diff to a new baseline
//! (`baselineVersion` + 1) and sets health `healthy` when it was the endpoint's latest diff.
//! Idempotent: accepting an accepted diff answers the same body and records nothing.

use crate::auth::Authed;
use crate::error::ApiError;
use crate::routes::parse_id;
use crate::state::AppState;
use actix_web::{HttpResponse, post, web};
use apidrift_app::{Accepted, act};
use apidrift_model::ErrorBody;

/// Accept a diff: its response becomes the new baseline.
#[utoipa::path(
    post,
    path = "/diffs/{id}/accept",
    tag = "diffs",
    operation_id = "acceptDiff",
    params(("id" = uuid::Uuid, Path, description = "Diff id")),
    security(("bearer" = ["baselines:write"])),
    responses(
        (status = 200, description = "Accepted (idempotent)", body = Accepted),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks baselines:write or role below admin", body = ErrorBody),
        (status = 404, description = "No such diff in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/diffs/{id}/accept")]
pub async fn accept_diff(
    auth: Authed<act::AcceptDiffs>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let accepted = state.service.accept_diff(&auth.actor, id).await?;
    Ok(HttpResponse::Ok().json(accepted))
}
