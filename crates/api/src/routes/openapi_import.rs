//! `POST /api/openapi/parse` (D15, D10, D6): the operations of an OpenAPI 3.0/3.1 document (JSON
//! or YAML) as candidate endpoints, and with `"import": true` their creation with `authType`
//! none and their response contracts attached, answering like `POST /endpoints`.
//!
//! The candidates and the import are the service's (`apidrift_app::openapi`).
//!
//! Order of checks: session (401) → CSRF (403) → the body's size (413, read up to the import
//! limit, never more) and fields (400) → role (member or above to import, any role to parse)
//! (403) → the `creates` budget for an import, the `checks` budget for a listing (429) → the
//! document (400: not OpenAPI, YAML nested deeper than 64 flow levels, or not read within the
//! `[limits] import_parse_secs` budget) → the workspace's plan
//! (402) and each entry on its own (D6 reasons in `skipped`). The body and the document are
//! parsed on the blocking pool: the HTTP workers keep answering meanwhile.

use crate::console::session::{ApiSession, Session};
use crate::error::ApiError;
use crate::ratelimit::Class;
use crate::routes::probe::take_budget;
use crate::routes::read_body;
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, post, web};
use apidrift_app::{ParseRequest as ImportRequest, ParseResult};
use apidrift_model::{ErrorBody, Role};
use serde_json::Value;

/// Request body: `{"document": "<JSON or YAML text>" | {…}, "import": false, "methods": […],
/// "operations": […], "parameters": {…}}`.
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ParseRequest {
    /// The OpenAPI document: its text (JSON or YAML) or the JSON object itself. The whole body
    /// may be up to 32 MiB (`[limits] import_max_bytes`).
    #[schema(value_type = Object)]
    pub document: Value,
    /// Create the importable candidates as endpoints.
    pub import: Option<bool>,
    /// The methods to import (default `["GET", "HEAD"]`); operations of other methods are
    /// listed with the reason and skipped.
    #[schema(value_type = Option<Vec<apidrift_model::HttpMethod>>, example = json!(["GET", "HEAD", "POST"]))]
    pub methods: Option<Vec<String>>,
    /// Import only these operations: `"METHOD /path"` labels (the path as the document writes
    /// it) or operationIds. Default: every operation.
    #[schema(example = json!(["GET /users", "getUser"]))]
    pub operations: Option<Vec<String>>,
    /// Values for path parameters that the document gives no example for, by name (at most
    /// 100; strings, numbers or booleans). Each candidate's `parametersNeeded` lists the names
    /// its path needs; the document's own examples win.
    #[schema(value_type = Option<Object>, example = json!({"owner": "octocat", "repo": "hello-world"}))]
    pub parameters: Option<Value>,
}

/// Parses (and with `import: true` imports) a request whose fields were read and whose CSRF was
/// checked: then (import only) the role and the `creates` budget, then the service.
/// Returns the result and whether anything was created.
pub(crate) async fn run(
    state: &AppState,
    req: &HttpRequest,
    session: &Session,
    request: ImportRequest,
) -> Result<(ParseResult, bool), ApiError> {
    if request.import() {
        session.require(Role::Member, "create endpoints")?;
        take_budget(state, req, session.workspace_id(), Class::Creates).await?;
    } else {
        // Reading a document costs CPU like a check does: a listing spends the checks budget.
        take_budget(state, req, session.workspace_id(), Class::Checks).await?;
    }
    let result = state
        .service
        .openapi(session.workspace_id(), request)
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
        (status = 400, description = "Not an OpenAPI 3.0/3.1 document (JSON or YAML), YAML nested deeper than 64 levels of flow collections, a document not read within the time budget (30 s unless `[limits] import_parse_secs` says otherwise), a malformed body, or `methods`/`operations` naming something unknown", body = ErrorBody),
        (status = 401, description = "No active console session", body = ErrorBody),
        (status = 402, description = "Import: the workspace plan's endpoint limit is already reached", body = ErrorBody),
        (status = 403, description = "Cross-origin request, missing X-CSRF-Token, or a viewer importing", body = ErrorBody),
        (status = 413, description = "Body larger than the import limit (32 MiB unless `[limits] import_max_bytes` says otherwise); the error names the limit and the setting", body = ErrorBody),
        (status = 415, description = "Content-Type is not application/json", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (creates class for an import, checks class for a listing)", body = ErrorBody),
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
    let max = state.service.import_max_bytes();
    let bytes = read_body(&req, body, max, ApiError::DocumentTooLarge).await?;
    let request = state.service.read_parse_request(bytes).await?;
    let (result, created) = run(&state, &req, &session, request).await?;
    Ok(if created {
        HttpResponse::Created().json(result)
    } else {
        HttpResponse::Ok().json(result)
    })
}
