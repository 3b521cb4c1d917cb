//! Response contracts (D10): the JSON schema of one operation's response, taken from an OpenAPI
//! 3.0 or 3.1 document (JSON or YAML), with `$ref`s resolvable within the document and 3.0
//! `nullable` translated to the 3.1 (JSON Schema 2020-12) form. A [`Contract`] is plain data (the
//! resolved schema is a `serde_json::Value`) so that it can be stored; [`Contract::validator`]
//! compiles it with `jsonschema` (no network or file resolvers) and
//! [`ContractValidator::check`] reports each violation as a `contract_violation` change at the
//! instance path, in D9 path syntax.

use crate::Options;
use crate::node::JsonNode;
use crate::path::Seg;
use crate::report::{Emitter, Pending, Report};
use crate::rules::Rule;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why a contract cannot be built or compiled. Each message is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    #[error("the OpenAPI document is neither valid JSON nor valid YAML: {0}")]
    Document(String),
    #[error("not an OpenAPI 3.0 or 3.1 document (`openapi` is {0})")]
    Version(String),
    #[error("invalid operation {0:?}: expected \"METHOD /path\", e.g. \"GET /users/{{id}}\"")]
    OperationSyntax(String),
    #[error("operation {0} is not in the document")]
    NoOperation(String),
    #[error("operation {operation} has no response for status {status}")]
    NoStatus { operation: String, status: String },
    #[error("operation {0} has no 2xx response; pass a status")]
    NoSuccess(String),
    #[error("response {status} of {operation} has no JSON content with a schema")]
    NoSchema { operation: String, status: String },
    #[error("cannot resolve $ref {0:?} within the document")]
    Ref(String),
    #[error("invalid response schema: {0}")]
    Schema(String),
}

/// A response contract: which operation and status, and the resolved JSON schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contract {
    /// Upper-case method, e.g. `GET`.
    pub method: String,
    /// The path template as the document writes it, e.g. `/users/{id}`.
    pub path: String,
    /// The response key used (`200`, `2XX` or `default`).
    pub status: String,
    /// A JSON Schema 2020-12 document: the response schema, plus the parts of the OpenAPI
    /// document its `$ref`s point into (e.g. `components`).
    pub schema: Value,
}

/// A compiled contract.
pub struct ContractValidator {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for ContractValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ContractValidator")
    }
}

/// Parses an OpenAPI document written in JSON or YAML.
pub fn parse_openapi(text: &str) -> Result<Value, ContractError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str(text).map_err(|e| ContractError::Document(e.to_string()));
    }
    serde_yaml_ng::from_str::<Value>(text)
        .map_err(|e| ContractError::Document(e.to_string().lines().next().unwrap_or("").to_owned()))
}

/// Splits `GET /users/{id}` into (`GET`, `/users/{id}`).
pub fn parse_operation(operation: &str) -> Result<(String, String), ContractError> {
    let mut parts = operation.split_whitespace();
    let syntax = || ContractError::OperationSyntax(operation.to_owned());
    let method = parts.next().ok_or_else(syntax)?;
    let path = parts.next().ok_or_else(syntax)?;
    const METHODS: [&str; 8] = [
        "GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE",
    ];
    let method = method.to_ascii_uppercase();
    if parts.next().is_some() || !path.starts_with('/') || !METHODS.contains(&method.as_str()) {
        return Err(syntax());
    }
    Ok((method, path.to_owned()))
}

/// `/users/{id}` and `/users/{userId}` are the same template.
fn template_shape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_param = false;
    for ch in path.trim_end_matches('/').chars() {
        match ch {
            '{' => {
                in_param = true;
                out.push_str("{}");
            }
            '}' => in_param = false,
            c if !in_param => out.push(c),
            _ => {}
        }
    }
    out
}

fn pointer_get<'v>(doc: &'v Value, reference: &str) -> Option<&'v Value> {
    let pointer = reference.strip_prefix('#')?;
    doc.pointer(pointer)
}

/// Follows `$ref`s of OpenAPI objects (responses, media types) within the document.
fn deref<'v>(doc: &'v Value, mut value: &'v Value) -> Result<&'v Value, ContractError> {
    for _ in 0..32 {
        match value.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                value = pointer_get(doc, r).ok_or_else(|| ContractError::Ref(r.to_owned()))?
            }
            None => return Ok(value),
        }
    }
    Err(ContractError::Ref("(a cycle of references)".into()))
}

fn is_json_content(media: &str) -> bool {
    crate::engine::is_json_media_type(media)
}

impl Contract {
    /// Builds the contract of `operation` (`GET /users/{id}`) for `status` (default: the
    /// operation's `200`, else its first 2xx response) from an OpenAPI document.
    pub fn from_openapi(
        document: &str,
        operation: &str,
        status: Option<u16>,
    ) -> Result<Contract, ContractError> {
        let doc = parse_openapi(document)?;
        Self::from_document(&doc, operation, status)
    }

    /// As [`Contract::from_openapi`], from a parsed document.
    pub fn from_document(
        doc: &Value,
        operation: &str,
        status: Option<u16>,
    ) -> Result<Contract, ContractError> {
        let version = doc.get("openapi").and_then(Value::as_str).unwrap_or("");
        let v30 = version.starts_with("3.0");
        if !(v30 || version.starts_with("3.1")) {
            let shown = doc
                .get("openapi")
                .map_or_else(|| "missing".to_owned(), Value::to_string);
            return Err(ContractError::Version(shown));
        }
        let (method, path) = parse_operation(operation)?;
        let label = format!("{method} {path}");
        let no_op = || ContractError::NoOperation(label.clone());
        let paths = doc
            .get("paths")
            .and_then(Value::as_object)
            .ok_or_else(no_op)?;
        let wanted = template_shape(&path);
        let (path_key, item) = paths
            .get_key_value(&path)
            .or_else(|| paths.iter().find(|(k, _)| template_shape(k) == wanted))
            .ok_or_else(no_op)?;
        let item = deref(doc, item)?;
        let op = item.get(method.to_ascii_lowercase()).ok_or_else(no_op)?;
        let responses = op
            .get("responses")
            .and_then(Value::as_object)
            .ok_or_else(|| ContractError::NoSuccess(label.clone()))?;
        let status_key = match status {
            Some(s) => {
                let exact = s.to_string();
                let range = format!("{}XX", s / 100);
                [
                    exact.clone(),
                    range.clone(),
                    range.to_ascii_lowercase(),
                    "default".into(),
                ]
                .into_iter()
                .find(|k| responses.contains_key(k))
                .ok_or(ContractError::NoStatus {
                    operation: label.clone(),
                    status: exact,
                })?
            }
            None => {
                let mut keys: Vec<&String> = responses.keys().collect();
                keys.sort();
                keys.iter()
                    .find(|k| k.as_str() == "200")
                    .or_else(|| {
                        keys.iter().find(|k| {
                            k.len() == 3
                                && k.starts_with('2')
                                && k.bytes().all(|b| b.is_ascii_digit())
                        })
                    })
                    .or_else(|| keys.iter().find(|k| k.eq_ignore_ascii_case("2XX")))
                    .map(|k| (*k).clone())
                    .ok_or_else(|| ContractError::NoSuccess(label.clone()))?
            }
        };
        let no_schema = || ContractError::NoSchema {
            operation: label.clone(),
            status: status_key.clone(),
        };
        let response = deref(doc, &responses[&status_key])?;
        let content = response
            .get("content")
            .and_then(Value::as_object)
            .ok_or_else(no_schema)?;
        let media = content
            .iter()
            .find(|(k, _)| is_json_content(k))
            .map(|(_, v)| v)
            .ok_or_else(no_schema)?;
        let schema = deref_media(doc, media)?
            .get("schema")
            .ok_or_else(no_schema)?;

        let mut schema = schema.clone();
        if v30 {
            translate_30(&mut schema, 0);
        }
        // Bring along the top-level parts of the document that references point into.
        let mut tops: Vec<String> = Vec::new();
        collect_ref_tops(&schema, &mut tops);
        let mut i = 0;
        while i < tops.len() {
            if let Some(part) = doc.get(&tops[i]) {
                collect_ref_tops(part, &mut tops);
            }
            i += 1;
        }
        let mut root = match schema {
            Value::Object(m) => m,
            Value::Bool(true) => Map::new(),
            other => {
                let mut m = Map::new();
                m.insert("allOf".into(), Value::Array(vec![other]));
                m
            }
        };
        for top in &tops {
            let mut part = doc
                .get(top)
                .ok_or_else(|| ContractError::Ref(format!("#/{top}")))?
                .clone();
            if root.contains_key(top) {
                return Err(ContractError::Schema(format!(
                    "the response schema has a `{top}` member that references also point into"
                )));
            }
            if v30 {
                translate_30(&mut part, 0);
            }
            root.insert(top.clone(), part);
        }
        let schema = Value::Object(root);
        let contract = Contract {
            method,
            path: path_key.clone(),
            status: status_key,
            schema,
        };
        contract.validator()?;
        Ok(contract)
    }

    /// Compiles the schema (JSON Schema 2020-12; references within the schema only).
    pub fn validator(&self) -> Result<ContractValidator, ContractError> {
        let validator = jsonschema::draft202012::options()
            .build(&self.schema)
            .map_err(|e| ContractError::Schema(one_line(&e.to_string(), 300)))?;
        Ok(ContractValidator { validator })
    }

    /// `GET /users/{id}`.
    pub fn operation(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

fn deref_media<'v>(doc: &'v Value, media: &'v Value) -> Result<&'v Value, ContractError> {
    deref(doc, media)
}

fn collect_ref_tops(value: &Value, tops: &mut Vec<String>) {
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "$ref"
                    && let Some(r) = v.as_str()
                    && let Some(rest) = r.strip_prefix("#/")
                {
                    let top = rest
                        .split('/')
                        .next()
                        .unwrap_or("")
                        .replace("~1", "/")
                        .replace("~0", "~");
                    if !top.is_empty() && !tops.contains(&top) {
                        tops.push(top);
                    }
                } else {
                    collect_ref_tops(v, tops);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_ref_tops(v, tops)),
        _ => {}
    }
}

/// OpenAPI 3.0 → JSON Schema 2020-12: `nullable: true` adds `null` to `type` (and to `enum`);
/// boolean `exclusiveMinimum`/`exclusiveMaximum` become numbers; siblings of `$ref` are ignored.
fn translate_30(value: &mut Value, depth: usize) {
    if depth > 200 {
        return;
    }
    match value {
        Value::Object(m) => {
            if m.contains_key("$ref") && m.len() > 1 {
                m.retain(|k, _| k == "$ref");
                return;
            }
            if m.remove("nullable") == Some(Value::Bool(true)) {
                match m.get_mut("type") {
                    Some(Value::String(t)) => {
                        let t = std::mem::take(t);
                        m.insert(
                            "type".into(),
                            Value::Array(vec![Value::String(t), "null".into()]),
                        );
                    }
                    Some(Value::Array(ts)) if !ts.contains(&Value::from("null")) => {
                        ts.push("null".into());
                    }
                    _ => {}
                }
                if let Some(Value::Array(values)) = m.get_mut("enum")
                    && !values.contains(&Value::Null)
                {
                    values.push(Value::Null);
                }
            }
            for (flag, bound) in [
                ("exclusiveMinimum", "minimum"),
                ("exclusiveMaximum", "maximum"),
            ] {
                if let Some(Value::Bool(on)) = m.get(flag).cloned() {
                    m.remove(flag);
                    if on && let Some(b) = m.remove(bound) {
                        m.insert(flag.into(), b);
                    }
                }
            }
            for v in m.values_mut() {
                translate_30(v, depth + 1);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| translate_30(v, depth + 1)),
        _ => {}
    }
}

fn one_line(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        line
    } else {
        let mut cut: String = line.chars().take(max).collect();
        cut.push('…');
        cut
    }
}

impl ContractValidator {
    /// Validates a response body; each violation is a `contract_violation`/breaking change at
    /// the instance path (positional segments for arrays), filtered by `options.ignore`.
    pub fn check(&self, body: &Value, options: &Options) -> Report {
        let mut em = Emitter::new(options);
        for error in self.validator.iter_errors(body) {
            let location = error.instance_path();
            let mut owned: Vec<OwnedSeg> = Vec::new();
            let mut at = Some(body);
            for raw in location.as_str().split('/').skip(1) {
                let key = raw.replace("~1", "/").replace("~0", "~");
                match at {
                    Some(Value::Array(items)) if key.parse::<usize>().is_ok() => {
                        let i = key.parse::<usize>().unwrap_or(0);
                        at = items.get(i);
                        owned.push(OwnedSeg::Index(i));
                    }
                    Some(v) => {
                        at = v.get(&key);
                        owned.push(OwnedSeg::Key(key));
                    }
                    None => owned.push(OwnedSeg::Key(key)),
                }
            }
            let segs: Vec<Seg<'_>> = owned
                .iter()
                .map(|s| match s {
                    OwnedSeg::Key(k) => Seg::Key(k),
                    OwnedSeg::Index(i) => Seg::Index(*i),
                })
                .collect();
            let message = one_line(&error.to_string(), 300);
            let pending = Pending::new(Rule::ContractViolation, message)
                .types(None, at.map(|v| v.json_type().as_str().to_owned()));
            let pending = match at.and_then(JsonNode::leaf_value) {
                Some(leaf) => pending.values(None, Some(leaf)),
                None => pending,
            };
            em.body(&segs, None, pending);
        }
        em.finish()
    }
}

enum OwnedSeg {
    Key(String),
    Index(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use apidrift_model::{ChangeType, Severity};
    use serde_json::json;

    type R = Result<(), Box<dyn std::error::Error>>;

    const YAML_30: &str = r#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /users/{id}:
    get:
      responses:
        200:
          description: ok
          content:
            application/json; charset=utf-8:
              schema:
                $ref: '#/components/schemas/User'
        404:
          description: missing
          content:
            application/problem+json:
              schema: {type: object, required: [title], properties: {title: {type: string}}}
components:
  schemas:
    User:
      type: object
      required: [id, email, tags]
      properties:
        id: {type: integer}
        email: {type: string, nullable: true}
        age: {type: integer, minimum: 0, exclusiveMinimum: true}
        tags: {type: array, items: {type: string}}
        friend: {$ref: '#/components/schemas/User'}
"#;

    #[test]
    fn builds_from_yaml_30_and_reports_violations_at_instance_paths() -> R {
        let contract = Contract::from_openapi(YAML_30, "GET /users/{userId}", None)?;
        assert_eq!(
            (
                contract.method.as_str(),
                contract.path.as_str(),
                contract.status.as_str()
            ),
            ("GET", "/users/{id}", "200")
        );
        let v = contract.validator()?;
        let ok = json!({"id": 1, "email": null, "tags": ["a"], "friend": {"id": 2, "email": "x", "tags": []}});
        assert!(v.check(&ok, &Options::default()).changes.is_empty());
        let bad = json!({"id": "1", "email": null, "tags": ["a", 2], "age": 0, "friend": {"id": 2, "tags": []}});
        let report = v.check(&bad, &Options::default());
        let mut paths: Vec<&str> = report.changes.iter().map(|c| c.path.as_str()).collect();
        paths.sort();
        assert_eq!(paths, vec!["$.age", "$.friend", "$.id", "$.tags[1]"]);
        assert!(
            report
                .changes
                .iter()
                .all(|c| c.change_type == ChangeType::ContractViolation
                    && c.severity == Severity::Breaking)
        );
        let id = report
            .changes
            .iter()
            .find(|c| c.path == "$.id")
            .ok_or("no $.id")?;
        assert_eq!(id.new_value, Some(json!("1")));
        // Storable: a round trip through JSON gives the same validator.
        let stored: Contract = serde_json::from_str(&serde_json::to_string(&contract)?)?;
        assert_eq!(
            stored
                .validator()?
                .check(&bad, &Options::default())
                .changes
                .len(),
            4
        );
        // Ignore patterns apply.
        let options = Options {
            ignore: vec![crate::IgnorePattern::parse("$.tags")?],
            ..Options::default()
        };
        assert_eq!(v.check(&bad, &options).changes.len(), 3);
        Ok(())
    }

    #[test]
    fn other_statuses_and_31_documents() -> R {
        let c = Contract::from_openapi(YAML_30, "get /users/{id}", Some(404))?;
        assert_eq!(c.status, "404");
        assert_eq!(
            c.validator()?
                .check(&json!({}), &Options::default())
                .changes
                .len(),
            1
        );
        let doc31 = json!({
            "openapi": "3.1.0",
            "paths": {"/items": {"post": {"responses": {"201": {"content": {"application/json": {
                "schema": {"type": "array", "items": {"type": ["string", "null"]}}}}}}}}}
        })
        .to_string();
        let c = Contract::from_openapi(&doc31, "POST /items", None)?;
        assert_eq!(c.status, "201");
        let r = c
            .validator()?
            .check(&json!(["a", null, 3]), &Options::default());
        assert_eq!(
            r.changes
                .iter()
                .map(|c| c.path.as_str())
                .collect::<Vec<_>>(),
            vec!["$[2]"]
        );
        Ok(())
    }

    #[test]
    fn clear_errors() {
        let err = |doc: &str, op: &str, status| {
            Contract::from_openapi(doc, op, status)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(
            err(YAML_30, "GET /nope", None).contains("operation GET /nope is not in the document")
        );
        assert!(err(YAML_30, "DELETE /users/{id}", None).contains("not in the document"));
        assert!(err(YAML_30, "GET /users/{id}", Some(500)).contains("no response for status 500"));
        assert!(err(YAML_30, "users", None).contains("expected \"METHOD /path\""));
        assert!(err("swagger: '2.0'", "GET /a", None).contains("not an OpenAPI 3.0 or 3.1"));
        assert!(err("{not json", "GET /a", None).contains("neither valid JSON nor valid YAML"));
        let no_schema = r#"{"openapi":"3.1.0","paths":{"/a":{"get":{"responses":{"200":{"description":"x"}}}}}}"#;
        assert!(err(no_schema, "GET /a", None).contains("no JSON content with a schema"));
        let bad_ref = r##"{"openapi":"3.1.0","paths":{"/a":{"get":{"responses":{"200":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Nope"}}}}}}}}}"##;
        assert!(!err(bad_ref, "GET /a", None).is_empty());
        let remote = r#"{"openapi":"3.1.0","paths":{"/a":{"get":{"responses":{"200":{"content":{"application/json":{"schema":{"$ref":"https://example.com/s.json"}}}}}}}}}"#;
        assert!(!err(remote, "GET /a", None).is_empty());
    }
}
