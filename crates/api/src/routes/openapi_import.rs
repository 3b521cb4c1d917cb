//! `POST /api/openapi/parse` (D15, D10, D6): the operations of an OpenAPI 3.0/3.1 document (JSON
//! or YAML) as candidate endpoints, and with `"import": true` their creation with `authType`
//! none and their response contracts attached, answering like `POST /endpoints`.
//!
//! The candidates and the import are the service's (`apidrift_monitor::service::openapi`).
//!
//! Order of checks: session (401) → CSRF (403) → role (member or above to import, any role to
//! parse) (403) → the `creates` budget (429, import only) → the body (400) → the workspace's plan
//! (402) and each entry on its own (D6 reasons in `skipped`).

use crate::console::session::{ApiSession, Session};
use crate::error::ApiError;
use crate::ratelimit::Class;
use crate::routes::probe::take_budget;
use crate::routes::read_json_body;
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, post, web};
use apidrift_model::{ErrorBody, Role};
use apidrift_monitor::service::{ParseResult, wants_import};
use serde_json::Value;

/// Request body: `{"document": "<JSON or YAML text>" | {…}, "import": false}`.
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ParseRequest {
    /// The OpenAPI document: its text (JSON or YAML) or the JSON object itself.
    #[schema(value_type = Object)]
    pub document: Value,
    /// Create the importable candidates as endpoints.
    pub import: Option<bool>,
}

/// Parses (and with `import: true` imports) a document for a session whose CSRF was checked:
/// the flag first, then (import only) the role and the `creates` budget, then the service.
/// Returns the result and whether anything was created.
pub(crate) async fn run(
    state: &AppState,
    req: &HttpRequest,
    session: &Session,
    body: &Value,
) -> Result<(ParseResult, bool), ApiError> {
    let import = wants_import(body)?;
    if import {
        session.require(Role::Member, "create endpoints")?;
        take_budget(state, req, session.workspace_id(), Class::Creates).await?;
    }
    let result = state
        .service
        .openapi(session.workspace_id(), body, import)
        .await?;
    let created = result.import.as_ref().is_some_and(|r| r.created > 0);
    Ok((result, created))
}

/// List (and optionally import) the operations of an OpenAPI document (session cookie).
#[utoipa::path(
    post,
    path = "/api/openapi/parse",
    tag = "console",
    operation_id = "parseOpenApi",
    request_body(content = ParseRequest, content_type = "application/json"),
    security(("session" = [])),
    responses(
        (status = 200, description = "The operations as candidate endpoints (and, on import, nothing created)", body = ParseResult),
        (status = 201, description = "Imported: at least one endpoint was created (see import.created, import.skipped)", body = ParseResult),
        (status = 400, description = "Not an OpenAPI 3.0/3.1 document (JSON or YAML), or a malformed body", body = ErrorBody),
        (status = 401, description = "No active console session", body = ErrorBody),
        (status = 402, description = "Import: the workspace plan's endpoint limit is already reached", body = ErrorBody),
        (status = 403, description = "Cross-origin request, missing X-CSRF-Token, or a viewer importing", body = ErrorBody),
        (status = 413, description = "Body larger than 2 MiB or document larger than 1 MiB", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (creates class)", body = ErrorBody),
    )
)]
#[post("/api/openapi/parse")]
pub async fn parse_openapi(
    session: ApiSession,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session = session.0;
    session.check_csrf(&req, None)?;
    let body = read_json_body(&req, body).await?;
    let (result, created) = run(&state, &req, &session, &body).await?;
    Ok(if created {
        HttpResponse::Created().json(result)
    } else {
        HttpResponse::Ok().json(result)
    })
}
