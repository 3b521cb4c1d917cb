//! `POST /api/check` (D15): a one-off URL probe for a signed-in console user
//! (`Service::probe`). The fetch goes through the SSRF-safe client (D14); the answer describes
//! the response (status, time, content type, size, the inferred shape of a JSON body) and never
//! returns the body itself.
//!
//! Order of checks: session (401) → CSRF: same-origin `Origin` and `X-CSRF-Token` (403) → role
//! member or above (403) → the workspace's `checks` budget (429) → request validation, including
//! the URL policy (400). A fetch that fails answers 400 naming the cause.

use crate::console::session::{ApiSession, Session};
use crate::error::ApiError;
use crate::ratelimit::Class;
use crate::routes::read_json_body;
use crate::state::AppState;
use actix_web::{HttpMessage, HttpRequest, HttpResponse, post, web};
use apidrift_app::ProbeResult;
use apidrift_app::probe::ProbeRequest;
use apidrift_model::{ErrorBody, Role};

/// Spends one unit of the workspace's `checks` budget.
pub(crate) async fn take_budget(
    state: &AppState,
    req: &HttpRequest,
    workspace: uuid::Uuid,
    class: Class,
) -> Result<(), ApiError> {
    let key = format!("{workspace}:{}", class.as_str());
    let info = state
        .limiter
        .take(&key, class, state.limits.quota(class))
        .await?;
    req.extensions_mut().insert(info);
    Ok(())
}

/// The common guard of the session JSON routes: CSRF, then the role.
pub(crate) fn guard(
    session: &Session,
    req: &HttpRequest,
    min: Role,
    action: &str,
) -> Result<(), ApiError> {
    session.check_csrf(req, None)?;
    session.require(min, action)
}

/// Probe a URL once (session cookie).
#[utoipa::path(
    post,
    path = "/api/check",
    tag = "console",
    operation_id = "probeUrl",
    request_body(content = ProbeRequest, content_type = "application/json"),
    security(("session" = [])),
    responses(
        (status = 200, description = "The response's status, time, content type, size and inferred shape (never the body)", body = ProbeResult),
        (status = 400, description = "A malformed body, a URL refused by the outbound policy, or a failed fetch (the cause is named)", body = ErrorBody),
        (status = 401, description = "No active console session", body = ErrorBody),
        (status = 403, description = "Cross-origin request, missing X-CSRF-Token, or a viewer", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (checks class)", body = ErrorBody),
    )
)]
#[post("/api/check")]
pub async fn probe(
    session: ApiSession,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session = session.0;
    guard(&session, &req, Role::Member, "run checks")?;
    take_budget(&state, &req, session.workspace_id(), Class::Checks).await?;
    let body = read_json_body(&req, body).await?;
    let result = state.service.probe(session.workspace_id(), &body).await?;
    Ok(HttpResponse::Ok().json(result))
}
