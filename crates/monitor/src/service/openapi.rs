//! The OpenAPI import (D15, D10, D6): the operations of an OpenAPI 3.0/3.1 document (JSON or
//! YAML) as candidate endpoints, and with `"import": true` their creation with `authType` none
//! and their response contracts attached, answering like registering endpoints.
//!
//! Candidates: every operation under `paths` (get, post, put, patch, delete, head, options), by
//! path then method; `name` is the `operationId`, else the `summary`, else `METHOD /path`; `url` is
//! `servers[0].url` (its `{variables}` replaced by their defaults) followed by the path. A path
//! template with parameters is importable only when every path parameter has an example
//! (`example`, `schema.example` or the first of `examples`); otherwise it is listed with
//! `importable: false` and, on import, skipped with the reason.
//!
//! Order: the `import` flag (400; read first with [`wants_import`], so that the front door can
//! check the caller's role and budget before the document), the document (400, 413), then on
//! import the workspace's plan (402) and each entry on its own (D6 reasons in `skipped`).

use super::base::Service;
use super::endpoints::{Pending, plain_row};
use super::error::ServiceError;
use apidrift_model::CreateEndpointsResponse;
use apidrift_model::net::AllowList;
use apidrift_model::validate;
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt::Write as _;
use uuid::Uuid;

/// Largest document accepted (its text, JSON or YAML).
pub const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];

/// One operation of the document as a candidate endpoint.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ParseResult {
    /// The document's `openapi` version.
    pub openapi: String,
    pub operations: Vec<Candidate>,
    /// Present with `"import": true`: the `POST /endpoints` answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<CreateEndpointsResponse>,
}

/// The `import` flag of a parse request body: absent or `null` is false.
pub fn wants_import(body: &Value) -> Result<bool, ServiceError> {
    match body.get("import") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ServiceError::Invalid("import: must be a boolean".into())),
    }
}

/// Percent-encodes a path parameter's example value.
fn path_param(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The document as text and parsed.
pub(crate) fn document_of(body: &Value) -> Result<(String, Value), ServiceError> {
    let doc = body
        .get("document")
        .ok_or_else(|| ServiceError::Invalid("document: required".into()))?;
    let text = match doc {
        Value::String(s) => s.clone(),
        Value::Object(_) => doc.to_string(),
        _ => {
            return Err(ServiceError::Invalid(
                "document: must be the document's text (JSON or YAML) or a JSON object".into(),
            ));
        }
    };
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(ServiceError::TooLarge(MAX_DOCUMENT_BYTES));
    }
    let parsed = apidrift_diff::contract::parse_openapi(&text)
        .map_err(|e| ServiceError::Invalid(format!("document: {e}")))?;
    let version = parsed.get("openapi").and_then(Value::as_str).unwrap_or("");
    if !(version.starts_with("3.0") || version.starts_with("3.1")) {
        return Err(ServiceError::Invalid(
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
            Some(ex) => out.push_str(&path_param(ex)),
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

/// Every operation of the document as a candidate. A candidate is importable when the import
/// would create it: a URL with every path parameter filled in that passes the create rules (D6,
/// the outbound allow-list `allow` included); otherwise `reason` is the skip reason the import
/// would give.
pub fn candidates(text: &str, doc: &Value, allow: &AllowList) -> Vec<Candidate> {
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
                crate::contract_from_openapi(text, &format!("{upper} {path}"), None).is_ok();
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
            let name: String = name.chars().take(200).collect();
            let reason = reason.or_else(|| {
                let entry = json!({ "name": name, "url": url, "method": upper });
                validate::validate_entry(&entry, allow).err()
            });
            out.push(Candidate {
                name,
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

impl Service {
    /// Parses the document of a parse request body (`{"document": text | object, "import"?}`)
    /// into candidates; with `import`, creates the importable ones in workspace `ws` (D6 rules:
    /// plan limit, validation per entry, one transaction). The caller has read the flag with
    /// [`wants_import`] and checked that the caller may create endpoints.
    pub async fn openapi(
        &self,
        ws: Uuid,
        body: &Value,
        import: bool,
    ) -> Result<ParseResult, ServiceError> {
        let (text, doc) = document_of(body)?;
        let operations = candidates(&text, &doc, &self.allow);
        let import = if import {
            Some(self.import(ws, &text, &operations).await?)
        } else {
            None
        };
        Ok(ParseResult {
            openapi: doc
                .get("openapi")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            operations,
            import,
        })
    }

    async fn import(
        &self,
        ws: Uuid,
        text: &str,
        list: &[Candidate],
    ) -> Result<CreateEndpointsResponse, ServiceError> {
        let workspace = self.workspace(ws).await?;
        self.ensure_room(&workspace).await?;
        let now = self.now_millis();
        let mut pending = Vec::with_capacity(list.len());
        for (index, c) in list.iter().enumerate() {
            let row = match &c.reason {
                Some(reason) => Err(reason.clone()),
                None => {
                    let entry = json!({ "name": c.name, "url": c.url, "method": c.method });
                    validate::validate_entry(&entry, &self.allow).map(|valid| {
                        let mut row = plain_row(valid, now);
                        if c.has_response_contract {
                            row.response_contract = crate::contract_from_openapi(
                                text,
                                &format!("{} {}", c.method, c.path),
                                None,
                            )
                            .ok();
                        }
                        row
                    })
                }
            };
            pending.push(Pending {
                index,
                name: c.name.clone(),
                row,
            });
        }
        self.create_rows(ws, pending).await
    }
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
    fn lists_operations_with_urls_examples_and_contracts() -> Result<(), ServiceError> {
        let (text, doc) = document_of(&json!({ "document": DOC }))?;
        let c = candidates(&text, &doc, &AllowList::default());
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
    fn a_private_server_is_not_importable() -> Result<(), ServiceError> {
        let private = DOC.replace("https://{host}/v1", "http://10.0.0.1/v1");
        let (text, doc) = document_of(&json!({ "document": private }))?;
        let c = candidates(&text, &doc, &AllowList::default());
        assert_eq!(c[1].name, "listUsers");
        assert!(!c[1].importable);
        assert_eq!(
            c[1].reason.as_deref(),
            Some("url: private, loopback and link-local hosts are rejected")
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
            Err(ServiceError::TooLarge(_))
        ));
    }
}
