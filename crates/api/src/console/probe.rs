//! The URL probe: the console's probe page and `POST /api/check` (D15), a one-off URL probe for a
//! signed-in console user (`Service::probe`). The fetch goes through the SSRF-safe client (D14); the answer describes
//! the response (status, time, content type, size, the inferred shape of a JSON body) and never
//! returns the body itself.
//!
//! Order of checks: session (401) → CSRF: same-origin `Origin` and `X-CSRF-Token` (403) → role
//! member or above (403) → the workspace's `checks` budget (429) → request validation, including
//! the URL policy (400). A fetch that fails answers 400 naming the cause.

use super::form::Form;
use super::kit::{Page, chrome, field, html, session_or_return};
use super::session::{ApiSession, Session};
use super::views;
use crate::body::read_json_body;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use apidrift_app::probe::ProbeRequest;
use apidrift_app::{Action, ProbeResult, act};
use apidrift_model::ErrorBody;

/// Registers the probe page.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console/probe", web::get().to(probe_form))
        .route("/console/probe", web::post().to(probe_submit));
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
    session.check_csrf(&req, None)?;
    let actor = session.actor();
    state.allow(&req, &actor, Action::ProbeUrls).await?;
    let body = read_json_body(&req, body).await?;
    let result = state.service.probe(&actor, &body).await?;
    Ok(HttpResponse::Ok().json(result))
}

fn probe_page(
    s: &Session,
    url: &str,
    result: Option<Result<ProbeResult, ApiError>>,
) -> HttpResponse {
    use actix_web::ResponseError as _;
    use views::probe::{Probe, ProbeOutcome};
    let mut status = StatusCode::OK;
    let outcome = match &result {
        Some(Ok(r)) => Some(ProbeOutcome::Done {
            status: r.status,
            response_time: r.response_time,
            content_type: r.content_type.as_deref(),
            size: r.size,
            shape: r
                .shape
                .as_ref()
                .and_then(|sh| serde_json::to_string_pretty(sh).ok()),
        }),
        Some(Err(e)) => {
            status = e.status_code();
            Some(ProbeOutcome::Failed(e.to_string()))
        }
        None => None,
    };
    let view = Probe { url, outcome };
    html(status, views::probe::render(&chrome(s, "probe"), &view))
}

async fn probe_form(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    Ok(probe_page(&s, "", None))
}

async fn probe_submit(state: web::Data<AppState>, form: Form<act::ProbeUrls>) -> Page {
    let (s, pairs) = (form.session, form.pairs);
    let url = field(&pairs, "url").unwrap_or("").to_owned();
    let body = serde_json::json!({ "url": url, "method": field(&pairs, "method") });
    let result = state
        .service
        .probe(&s.actor(), &body)
        .await
        .map_err(ApiError::from);
    Ok(probe_page(&s, &url, Some(result)))
}
