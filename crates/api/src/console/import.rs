//! The OpenAPI import: the console's import page and `POST /api/openapi/parse` (D15, D10, D6):
//! the operations of an OpenAPI 3.0/3.1 document (JSON or YAML) as candidate endpoints, and with
//! `"import": true` their creation with `authType` none and their response contracts attached,
//! answering like `POST /endpoints`.
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

use super::form::{FormLimit, SessionForm};
use super::kit::{Page, check_form, chrome, field, html, session_or_return};
use super::session::{ApiSession, Session};
use super::views;
use crate::body::read_body;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use apidrift_app::{Action, ParseRequest as ImportRequest, ParseResult};
use apidrift_model::ErrorBody;
use serde_json::Value;

/// Registers the import page.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/console/import")
            // A pasted document, form-encoded, read only for a signed-in user.
            .app_data(FormLimit::Import)
            .route(web::get().to(import_form))
            .route(web::post().to(import_submit)),
    );
}

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
/// checked: then the action's role and budget (an import: member or above, `creates`; a listing:
/// any role, `checks`, as reading a document costs CPU like a check does), then the service.
/// Returns the result and whether anything was created.
pub(crate) async fn run(
    state: &AppState,
    req: &HttpRequest,
    session: &Session,
    request: ImportRequest,
) -> Result<(ParseResult, bool), ApiError> {
    let action = if request.import() {
        Action::CreateEndpoints
    } else {
        Action::ParseOpenApi
    };
    let actor = session.actor();
    state.allow(req, &actor, action).await?;
    let result = state.service.openapi(&actor, request).await?;
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

fn import_page(
    s: &Session,
    form: &ImportForm,
    result: Option<Result<apidrift_app::ParseResult, ApiError>>,
) -> HttpResponse {
    use actix_web::ResponseError as _;
    use views::import::{Import, ImportOutcome, Imported, Operation};
    let mut status = StatusCode::OK;
    let outcome = match &result {
        Some(Ok(r)) => Some(ImportOutcome::Listed {
            operations: r
                .operations
                .iter()
                .map(|c| {
                    let label = c.label();
                    // A fresh listing ticks the importable operations; a listing again keeps the
                    // visitor's ticks and ticks those that just became importable (e.g. once
                    // their path values were given).
                    let checked = match &form.operations {
                        Some(ticked) => {
                            ticked.contains(&label)
                                || (c.importable && !form.was_importable.contains(&label))
                        }
                        None => c.importable,
                    };
                    Operation {
                        label,
                        checked,
                        name: &c.name,
                        method: &c.method,
                        url: c.url.as_deref(),
                        has_response_contract: c.has_response_contract,
                        not_importable: c.reason.as_deref(),
                    }
                })
                .collect(),
            parameters: needed_parameters(&r.operations, &form.parameters),
            imported: r.import.as_ref().map(|i| Imported {
                created: i.created,
                created_ids: i.endpoints.iter().map(|e| e.id).collect(),
                skipped: i
                    .skipped
                    .iter()
                    .map(|k| (k.name.as_str(), k.reason.as_str()))
                    .collect(),
            }),
        }),
        Some(Err(e)) => {
            status = e.status_code();
            Some(ImportOutcome::Failed(e.to_string()))
        }
        None => None,
    };
    let view = Import {
        document: &form.document,
        methods: form.methods.iter().map(String::as_str).collect(),
        outcome,
        can_delete: s.can(Action::DeleteEndpoints),
    };
    html(status, views::import::render(&chrome(s, "import"), &view))
}

/// The path parameters the listed operations need a value for, in order of first use, each
/// with the value the form holds and the operations that need it.
fn needed_parameters<'a>(
    operations: &'a [apidrift_app::Candidate],
    given: &[(String, String)],
) -> Vec<views::import::Parameter<'a>> {
    let mut out: Vec<views::import::Parameter<'a>> = Vec::new();
    for c in operations {
        for name in &c.parameters_needed {
            let i = match out.iter().position(|p| p.name == name.as_str()) {
                Some(i) => i,
                None => {
                    let value = given
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or_else(String::new, |(_, v)| v.clone());
                    out.push(views::import::Parameter {
                        name,
                        value,
                        needed_by: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            out[i].needed_by.push(c.label());
        }
    }
    out
}

/// The form field of a path parameter's value: `parameter.` and its name.
const PARAMETER_FIELD: &str = "parameter.";

/// What the import form sent.
struct ImportForm {
    document: String,
    /// The methods ticked (GET and HEAD on a fresh form).
    methods: Vec<String>,
    /// The operations ticked, when the form listed them.
    operations: Option<Vec<String>>,
    /// The operations the last listing found importable (hidden fields).
    was_importable: Vec<String>,
    /// The path parameter values typed (name, value), blanks left out.
    parameters: Vec<(String, String)>,
}

impl ImportForm {
    fn fresh() -> ImportForm {
        ImportForm {
            document: String::new(),
            methods: apidrift_app::DEFAULT_IMPORT_METHODS
                .iter()
                .map(|m| (*m).to_owned())
                .collect(),
            operations: None,
            was_importable: Vec::new(),
            parameters: Vec::new(),
        }
    }

    fn of(pairs: &[(String, String)]) -> ImportForm {
        let all = |name: &str| -> Vec<String> {
            pairs
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .collect()
        };
        ImportForm {
            document: field(pairs, "document").unwrap_or("").to_owned(),
            methods: all("methods"),
            operations: (field(pairs, "listed") == Some("yes")).then(|| all("operations")),
            was_importable: all("importable"),
            parameters: pairs
                .iter()
                .filter_map(|(k, v)| {
                    let name = k.strip_prefix(PARAMETER_FIELD)?;
                    let value = v.trim();
                    (!value.is_empty()).then(|| (name.to_owned(), value.to_owned()))
                })
                .collect(),
        }
    }
}

async fn import_form(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    Ok(import_page(&s, &ImportForm::fresh(), None))
}

/// The import form: "List operations" parses, "Import" creates the operations ticked (every
/// importable one when the document was not listed yet) of the methods ticked.
async fn import_submit(state: web::Data<AppState>, req: HttpRequest, form: SessionForm) -> Page {
    let SessionForm { session: s, pairs } = form;
    let form = ImportForm::of(&pairs);
    let import = field(&pairs, "action") == Some("import");
    let result = async {
        check_form(&s, &req, &pairs)?;
        if form.methods.is_empty() {
            return Err(ApiError::BadRequest(
                "methods: tick at least one method to import".into(),
            ));
        }
        if import && form.operations.as_ref().is_some_and(Vec::is_empty) {
            return Err(ApiError::BadRequest(
                "operations: tick at least one operation to import".into(),
            ));
        }
        let mut body = serde_json::json!({
            "document": form.document,
            "import": import,
            "methods": form.methods,
        });
        if import && let Some(ops) = &form.operations {
            body["operations"] = serde_json::json!(ops);
        }
        if !form.parameters.is_empty() {
            body["parameters"] = Value::Object(
                form.parameters
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect(),
            );
        }
        let request =
            apidrift_app::ParseRequest::from_value(body, state.service.import_max_bytes())?;
        run(&state, &req, &s, request).await.map(|(r, _)| r)
    }
    .await;
    Ok(import_page(&s, &form, Some(result)))
}
