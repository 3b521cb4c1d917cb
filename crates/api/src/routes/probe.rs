//! `POST /api/check` (D15): a one-off URL probe for a signed-in console user. The fetch goes
//! through the SSRF-safe client ([`apidrift_monitor::Client`], D14); the answer describes the
//! response (status, time, content type, size, the inferred shape of a JSON body) and never
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
use apidrift_diff::Shape;
use apidrift_model::net::AllowList;
use apidrift_model::validate::ExtraHeader;
use apidrift_model::{ErrorBody, HttpMethod, Role, SecretString};
use apidrift_monitor::{Client, FetchRequest};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Mutex;
use std::time::Duration;

/// Request body of `POST /api/check`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ProbeRequest {
    /// Absolute http(s) URL; the outbound policy of D14 applies.
    pub url: String,
    /// Default `GET`.
    #[serde(default)]
    pub method: Option<String>,
    /// Extra request headers, name → value (never stored, never echoed).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub headers: Option<serde_json::Map<String, Value>>,
}

/// Answer of `POST /api/check`: what the response looked like, never its body.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResult {
    pub status: u16,
    /// Milliseconds from the first lookup to the last body byte.
    pub response_time: u32,
    pub content_type: Option<String>,
    /// Body size in bytes (after decompression).
    pub size: usize,
    /// Whether the body parsed as JSON.
    pub json: bool,
    /// The inferred shape of a JSON body (types per path), `null` otherwise.
    #[schema(value_type = Option<Object>)]
    pub shape: Option<Shape>,
}

/// Per-request timeout of a probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

static CLIENT: Mutex<Option<(AllowList, Client)>> = Mutex::new(None);

/// The process's probe client, rebuilt only when the allow-list changes.
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

/// Runs a probe for a session whose CSRF and role were checked.
pub(crate) async fn run(state: &AppState, body: &Value) -> Result<ProbeResult, ApiError> {
    let request: ProbeRequest = serde_json::from_value(body.clone())
        .map_err(|e| ApiError::BadRequest(format!("request body: {e}")))?;
    let method = match request.method.as_deref() {
        None | Some("") => HttpMethod::Get,
        Some(m) => m
            .parse::<HttpMethod>()
            .map_err(|_| ApiError::BadRequest(format!("method: unknown method {m:?}")))?,
    };
    let client = client_for(&state.allow)?;
    let url = client
        .check_url(request.url.trim())
        .map_err(|e| ApiError::BadRequest(format!("url: {}", e.message)))?;
    let mut headers = Vec::new();
    for (name, value) in request.headers.unwrap_or_default() {
        let Some(text) = value.as_str() else {
            return Err(ApiError::BadRequest(format!(
                "headers.{name}: must be a string"
            )));
        };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
            return Err(ApiError::BadRequest(format!(
                "headers: invalid header name {name:?}"
            )));
        }
        headers.push(ExtraHeader {
            name,
            value: SecretString::new(text),
        });
    }
    let mut request = FetchRequest::get(url);
    request.method = method;
    request.headers = headers;
    request.timeout = PROBE_TIMEOUT;
    let response = client
        .fetch(&request)
        .await
        .map_err(|e| ApiError::BadRequest(format!("fetch failed: {} ({})", e.message, e.kind)))?;
    let parsed = serde_json::from_slice::<Value>(&response.body).ok();
    let shape = match &parsed {
        Some(v) => Shape::infer(v).ok(),
        None => None,
    };
    Ok(ProbeResult {
        status: response.status,
        response_time: response.elapsed_ms(),
        content_type: response.content_type().map(str::to_owned),
        size: response.body.len(),
        json: parsed.is_some(),
        shape,
    })
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
    let result = run(&state, &body).await?;
    Ok(HttpResponse::Ok().json(result))
}
