//! `POST /api/v1/diffs/{id}/accept` (D12): scope `baselines:write`, admin or above. Sets
//! `accepted`, promotes the response of the check that found the diff to a new baseline
//! (`baselineVersion` + 1) and sets health `healthy` when it was the endpoint's latest diff.
//! Idempotent: accepting an accepted diff answers the same body and records nothing.

use crate::auth::{Authed, Policy};
use crate::error::ApiError;
use crate::ratelimit::Class;
use crate::routes::checks::{client_for, monitor_error};
use crate::routes::parse_id;
use crate::state::AppState;
use actix_web::{HttpResponse, post, web};
use apidrift_model::{DiffSummary, ErrorBody, Role, Scope};
use apidrift_monitor::Monitor;
use serde::Serialize;

/// Accepting diffs: `baselines:write`, admin or above, checks class (it captures a baseline).
#[derive(Debug)]
pub enum AcceptDiffs {}
impl Policy for AcceptDiffs {
    const SCOPE: Scope = Scope::BaselinesWrite;
    const MIN_ROLE: Role = Role::Admin;
    const ACTION: &'static str = "accept diffs";
    const CLASS: Class = Class::Checks;
}

/// 200 body of an accept.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    /// The diff, now `accepted: true`.
    pub diff: DiffSummary,
    /// The endpoint's active baseline version after the accept (`null` when none exists).
    pub baseline_version: Option<u32>,
    /// True when this request accepted it (false: it was already accepted).
    pub newly_accepted: bool,
    /// True when the endpoint's health was set `healthy` (it was the latest diff).
    pub health_reset: bool,
}

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
    auth: Authed<AcceptDiffs>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    Ok(HttpResponse::Ok().json(accept(&state, auth.workspace_id, id).await?))
}

/// Accepts diff `id` of workspace `ws` (the route and the console share it): promotes the
/// response to a new baseline, resets health when it was the latest diff; idempotent.
pub(crate) async fn accept(
    state: &AppState,
    ws: uuid::Uuid,
    id: uuid::Uuid,
) -> Result<Accepted, ApiError> {
    let Some(keys) = state.keys.clone() else {
        state
            .store
            .get_diff(ws, id)
            .await
            .map_err(ApiError::store)?
            .ok_or(ApiError::NotFound)?;
        return Err(ApiError::Unavailable(
            "ENDPOINT_SECRET_KEY is not configured, so the response cannot be promoted".into(),
        ));
    };
    let monitor = Monitor::new(state.store.clone(), keys, client_for(&state.allow)?);
    let (detail, outcome) = monitor.accept_diff(ws, id).await.map_err(monitor_error)?;
    let mut diff = detail.base;
    diff.accepted = true;
    let baseline_version = match &outcome.baseline {
        Some(b) => Some(b.version),
        None => match diff.endpoint_id {
            Some(ep) => state
                .store
                .get_endpoint(ws, ep)
                .await
                .map_err(ApiError::store)?
                .and_then(|e| e.baseline_version),
            None => None,
        },
    };
    Ok(Accepted {
        diff,
        baseline_version,
        newly_accepted: outcome.newly_accepted,
        health_reset: outcome.health_reset,
    })
}
