//! `POST /api/openapi/parse` (D15, D10, D6): the operations of an OpenAPI 3.0/3.1 document (JSON
//! or YAML) as candidate endpoints, and with `"import": true` their creation with `authType`
//! none and their response contracts attached, answering like `POST /endpoints`.
//!
//! Candidates: every operation under `paths` (get, post, put, patch, delete, head, options), by
//! path then method; `name` is the `operationId`, else the `summary`, else `METHOD /path`; `url` is
//! `servers[0].url` (its `{variables}` replaced by their defaults) followed by the path. A path
//! template with parameters is importable only when every path parameter has an example
//! (`example`, `schema.example` or the first of `examples`); otherwise it is listed with
//! `importable: false` and, on import, skipped with the reason.
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
use apidrift_model::validate;
use apidrift_model::{CreateEndpointsResponse, ErrorBody, Role, SkippedEntry};
use apidrift_store::{NewEndpointRow, new_id};
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

/// Largest document accepted (its text, JSON or YAML).
pub const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];

/// One operation of the document as a candidate endpoint.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub name: String,
    /// Upper-case method.
    pub method: String,
    /// The path template as written in the document.
    pub path: String,
    /// `servers[0].url` + the path, example values filled in; `null` when there is no absolute
    /// server URL.
    pub url: Option<String>,
    /// Whether the operation defines a JSON response schema usable as a contract (D10).
    pub has_response_contract: bool,
    /// Whether the candidate can be imported as it is.
    pub importable: bool,
    /// Why it cannot, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Answer of `POST /api/openapi/parse`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParseResult {
    /// The document's `openapi` version.
    pub openapi: String,
    pub operations: Vec<Candidate>,
    /// Present with `"import": true`: the `POST /endpoints` answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<CreateEndpointsResponse>,
}

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

/// The document as text and parsed.
fn document_of(body: &Value) -> Result<(String, Value), ApiError> {
    let doc = body
        .get("document")
        .ok_or_else(|| ApiError::BadRequest("document: required".into()))?;
    let text = match doc {
        Value::String(s) => s.clone(),
        Value::Object(_) => doc.to_string(),
        _ => {
            return Err(ApiError::BadRequest(
                "document: must be the document's text (JSON or YAML) or a JSON object".into(),
            ));
        }
    };
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(ApiError::PayloadTooLarge(MAX_DOCUMENT_BYTES));
    }
    let parsed = apidrift_diff::contract::parse_openapi(&text)
        .map_err(|e| ApiError::BadRequest(format!("document: {e}")))?;
    let version = parsed.get("openapi").and_then(Value::as_str).unwrap_or("");
    if !(version.starts_with("3.0") || version.starts_with("3.1")) {
        return Err(ApiError::BadRequest(
            "document: only OpenAPI 3.0 and 3.1 documents are supported (field openapi)".into(),
        ));
    }
    Ok((text, parsed))
}

/// `servers[0].url` with its variables' defaults, when it is absolute.
fn server_url(doc: &Value) -> Option<String> {
    let server = doc.get("servers")?.get(0)?;
    let mut url = server.get("url")?.as_str()?.to_owned();
    if let Some(vars) = server.get("variables").and_then(Value::as_object) {
        for (name, var) in vars {
            if let Some(default) = var.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("{{{name}}}"), default);
            }
        }
    }
    let lower = url.to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://"))
        .then(|| url.trim_end_matches('/').to_owned())
}

fn example_of(param: &Value) -> Option<String> {
    let value = param
        .get("example")
        .or_else(|| param.get("schema").and_then(|s| s.get("example")))
        .or_else(|| {
            param
                .get("examples")
                .and_then(Value::as_object)
                .and_then(|m| m.values().next())
                .and_then(|e| e.get("value"))
        })?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Resolves a `$ref` to a parameter within the document.
fn deref<'v>(doc: &'v Value, v: &'v Value) -> &'v Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix('#')
            .and_then(|p| doc.pointer(p))
            .unwrap_or(v),
        None => v,
    }
}

/// Fills the path's `{parameters}` from examples: the filled path, or the names without one.
fn fill_path(doc: &Value, path: &str, item: &Value, op: &Value) -> Result<String, Vec<String>> {
    let mut examples = std::collections::HashMap::new();
    for list in [item.get("parameters"), op.get("parameters")]
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
    {
        for p in list {
            let p = deref(doc, p);
            if p.get("in").and_then(Value::as_str) == Some("path")
                && let (Some(name), Some(ex)) =
                    (p.get("name").and_then(Value::as_str), example_of(p))
            {
                examples.insert(name.to_owned(), ex);
            }
        }
    }
    let mut out = String::new();
    let mut missing = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let name = &rest[start + 1..start + len];
        match examples.get(name) {
            Some(ex) => out.push_str(&crate::console::html::url_param(ex)),
            None => missing.push(name.to_owned()),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(missing)
    }
}

/// Every operation of the document as a candidate.
pub fn candidates(text: &str, doc: &Value) -> Vec<Candidate> {
    let base = server_url(doc);
    let mut out = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return out;
    };
    for (path, item) in paths {
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            let upper = method.to_ascii_uppercase();
            let name = op
                .get("operationId")
                .or_else(|| op.get("summary"))
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map_or_else(|| format!("{upper} {path}"), str::to_owned);
            let has_response_contract =
                apidrift_monitor::contract_from_openapi(text, &format!("{upper} {path}"), None)
                    .is_ok();
            let (url, reason) = match (&base, fill_path(doc, path, item, op)) {
                (None, _) => (
                    None,
                    Some("servers: the document names no absolute server URL".to_owned()),
                ),
                (Some(b), Ok(filled)) => (Some(format!("{b}{filled}")), None),
                (Some(b), Err(missing)) => (
                    Some(format!("{b}{path}")),
                    Some(format!(
                        "path parameters without example values: {}",
                        missing.join(", ")
                    )),
                ),
            };
            out.push(Candidate {
                name: name.chars().take(200).collect(),
                method: upper,
                path: path.clone(),
                url,
                has_response_contract,
                importable: reason.is_none(),
                reason,
            });
        }
    }
    out
}

/// Creates the importable candidates (D6 rules: plan limit, validation per entry, one
/// transaction).
async fn import(
    state: &AppState,
    session: &Session,
    text: &str,
    list: &[Candidate],
) -> Result<CreateEndpointsResponse, ApiError> {
    let ws = session.workspace_id();
    let workspace = state
        .store
        .get_workspace(ws)
        .await
        .map_err(ApiError::store)?
        .ok_or(ApiError::NotFound)?;
    if let Some(limit) = workspace.endpoint_limit {
        let count = state
            .store
            .count_endpoints(ws)
            .await
            .map_err(ApiError::store)?;
        if count >= u64::from(limit) {
            return Err(ApiError::PaymentRequired(format!(
                "workspace plan endpoint limit reached ({limit} endpoints)"
            )));
        }
    }
    let now = apidrift_model::timestamp::truncate_to_millis(OffsetDateTime::now_utc());
    let mut skipped = Vec::new();
    let mut rows: Vec<(usize, NewEndpointRow)> = Vec::new();
    for (index, c) in list.iter().enumerate() {
        if let Some(reason) = &c.reason {
            skipped.push(SkippedEntry {
                name: c.name.clone(),
                reason: reason.clone(),
                index,
            });
            continue;
        }
        let entry = json!({ "name": c.name, "url": c.url, "method": c.method });
        let valid = match validate::validate_entry(&entry, &state.allow) {
            Ok(v) => v,
            Err(reason) => {
                skipped.push(SkippedEntry {
                    name: c.name.clone(),
                    reason,
                    index,
                });
                continue;
            }
        };
        let contract = if c.has_response_contract {
            apidrift_monitor::contract_from_openapi(text, &format!("{} {}", c.method, c.path), None)
                .ok()
        } else {
            None
        };
        rows.push((
            index,
            NewEndpointRow {
                id: new_id(),
                auth_type: valid.auth_type(),
                name: valid.name,
                url: valid.url,
                method: valid.method,
                environment: valid.environment,
                description: valid.description,
                tags: valid.tags,
                sealed_auth: None,
                sealed_headers: None,
                sealed_request_body: None,
                content_type: valid.content_type,
                diff_mode: valid.diff_mode,
                timeout_ms: valid.timeout_ms,
                schedule: None,
                ignore_paths: valid.ignore_paths,
                follow_redirects: valid.follow_redirects,
                response_contract: contract,
                created_at: now,
            },
        ));
    }
    let mut created = Vec::new();
    if !rows.is_empty() {
        let indices: Vec<usize> = rows.iter().map(|(i, _)| *i).collect();
        let result = state
            .store
            .create_endpoints(ws, rows.into_iter().map(|(_, r)| r).collect())
            .await
            .map_err(ApiError::store)?;
        for &index in &indices[result.created.len()..] {
            skipped.push(SkippedEntry {
                name: list[index].name.clone(),
                reason: "plan endpoint limit reached".into(),
                index,
            });
        }
        created = result.created;
    }
    skipped.sort_by_key(|s| s.index);
    Ok(CreateEndpointsResponse {
        created: u32::try_from(created.len()).unwrap_or(u32::MAX),
        scheduled: 0,
        endpoints: created.iter().map(|e| e.to_model()).collect(),
        skipped,
    })
}

/// Parses (and with `import: true` imports) a document for a session whose CSRF was checked.
pub(crate) async fn run(
    state: &AppState,
    req: &HttpRequest,
    session: &Session,
    body: &Value,
) -> Result<(ParseResult, bool), ApiError> {
    let wants_import = match body.get("import") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ApiError::BadRequest("import: must be a boolean".into())),
    };
    if wants_import {
        session.require(Role::Member, "create endpoints")?;
        take_budget(state, req, session.workspace_id(), Class::Creates).await?;
    }
    let (text, doc) = document_of(body)?;
    let operations = candidates(&text, &doc);
    let imported = if wants_import {
        Some(import(state, session, &text, &operations).await?)
    } else {
        None
    };
    let created = imported.as_ref().is_some_and(|r| r.created > 0);
    Ok((
        ParseResult {
            openapi: doc
                .get("openapi")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            operations,
            import: imported,
        },
        created,
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"
openapi: 3.0.3
servers:
  - url: "https://{host}/v1"
    variables:
      host: { default: api.example.com }
paths:
  /users:
    get:
      operationId: listUsers
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: { type: array, items: { type: object } }
  /users/{id}:
    parameters:
      - { name: id, in: path, required: true, schema: { type: integer, example: 7 } }
    get:
      summary: One user
      responses: { "200": { description: ok } }
  /orders/{orderId}:
    delete:
      responses: { "204": { description: gone } }
"#;

    #[test]
    fn lists_operations_with_urls_examples_and_contracts() -> Result<(), ApiError> {
        let (text, doc) = document_of(&json!({ "document": DOC }))?;
        let c = candidates(&text, &doc);
        assert_eq!(c.len(), 3);
        assert_eq!(c[1].name, "listUsers");
        assert_eq!(
            c[1].url.as_deref(),
            Some("https://api.example.com/v1/users")
        );
        assert!(c[1].has_response_contract && c[1].importable);
        assert_eq!(c[2].name, "One user");
        assert_eq!(
            c[2].url.as_deref(),
            Some("https://api.example.com/v1/users/7")
        );
        assert!(!c[2].has_response_contract);
        assert_eq!(c[0].name, "DELETE /orders/{orderId}");
        assert!(!c[0].importable);
        assert_eq!(
            c[0].reason.as_deref(),
            Some("path parameters without example values: orderId")
        );
        Ok(())
    }

    #[test]
    fn refuses_other_documents() {
        assert!(document_of(&json!({ "document": "swagger: '2.0'" })).is_err());
        assert!(document_of(&json!({ "document": 3 })).is_err());
        assert!(document_of(&json!({})).is_err());
        let big = "a".repeat(MAX_DOCUMENT_BYTES + 1);
        assert!(matches!(
            document_of(&json!({ "document": big })),
            Err(ApiError::PayloadTooLarge(_))
        ));
    }
}
