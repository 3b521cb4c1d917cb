//! The OpenAPI import (D15, D10, D6, D22): the operations of an OpenAPI 3.0/3.1 document (JSON or
//! YAML) as candidate endpoints, and with `"import": true` their creation with `authType` none
//! and their response contracts attached, through the same registration as `POST /endpoints`.
//!
//! Candidates: every operation under `paths`, by path then method; `name` is the `operationId`,
//! else the `summary`, else `METHOD /path`; `url` is the first server of the operation's own
//! `servers`, else of its path item's, else of the document's (its `{variables}` replaced by
//! their defaults), followed by the path. A path template with parameters is importable only
//! when every path parameter has a value: the document's example (its `example`, the first of its
//! `examples`, or its schema's `example` or first `examples` entry, through a `$ref`), else the
//! value the request gives for that name in `"parameters"` (`{"owner": "octocat"}`). Each
//! candidate lists the path parameters the document gives no example for
//! (`parametersNeeded`), so a caller knows which values to ask for.
//!
//! Which operations an import creates: those whose method is in `"methods"` (default GET and
//! HEAD: the others are listed with the reason and the way to opt in), restricted to
//! `"operations"` (labels `GET /users` or operationIds) when given, minus those whose method and
//! URL are already registered in the workspace (`already registered`).
//!
//! Size (D22): the document is parsed ONCE per request, on the blocking pool (never on an HTTP
//! worker), from the request body (at most [`crate::DEFAULT_IMPORT_MAX_BYTES`] unless configured); its
//! operations are listed from that one parse ([`OpenApiDocument`]) and each contract keeps only
//! the schemas its response reaches. The document is dropped before the rows are written.
//!
//! Order: the body (400, 413), the `import` flag, `methods` and `operations` (400; read first
//! with [`ParseRequest::from_json`], so that the front door can check the caller's role and
//! budget before the document), the document (400), then on import the workspace's plan (402)
//! and each entry on its own (D6 reasons in `skipped`).

use super::actions::{Action, Actor};
use super::base::Service;
use super::endpoints::{Pending, plain_row};
use super::error::ServiceError;
use apidrift_diff::contract::{ContractRef, OpenApiDocument, Operation};
use apidrift_model::CreateEndpointsResponse;
use apidrift_model::net::AllowList;
use apidrift_monitor::contracts::{new_set, stored_reference};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;
use uuid::Uuid;

/// The methods imported when the request does not name any.
pub const DEFAULT_IMPORT_METHODS: [&str; 2] = ["GET", "HEAD"];

/// The methods an endpoint may have (D6).
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

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
    /// The operation's `operationId`, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// The operation's first server (its own `servers`, else its path's, else the document's)
    /// + the path, example values filled in; `null` when there is no absolute server URL.
    pub url: Option<String>,
    /// Whether the operation defines a JSON response schema usable as a contract (D10).
    pub has_response_contract: bool,
    /// Whether an import with the same `methods` would create it (unless its method and URL are
    /// already registered).
    pub importable: bool,
    /// Why it would not, when it would not, saying what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The path template's parameters that the document gives no example for, in path order:
    /// the names whose values the request's `"parameters"` supplies (empty when none).
    pub parameters_needed: Vec<String>,
}

impl Candidate {
    /// `GET /users/{id}`.
    pub fn label(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// Answer of `POST /api/openapi/parse`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ParseResult {
    /// The document's `openapi` version.
    pub openapi: String,
    /// The methods an import takes (the request's `methods`, else GET and HEAD).
    pub methods: Vec<String>,
    pub operations: Vec<Candidate>,
    /// Present with `"import": true`: the `POST /endpoints` answer; `index` in `skipped` is the
    /// operation's position in `operations`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<CreateEndpointsResponse>,
}

/// A parse request, its fields checked, its document not parsed yet.
#[derive(Debug)]
pub struct ParseRequest {
    document: Document,
    import: bool,
    /// Upper-case, checked; `None`: GET and HEAD.
    methods: Option<Vec<String>>,
    /// Labels or operationIds; `None`: every operation.
    operations: Option<Vec<String>>,
    /// Values for path parameters the document gives no example for, by name.
    parameters: HashMap<String, String>,
}

/// Most entries `"parameters"` may hold.
pub const MAX_IMPORT_PARAMETERS: usize = 100;
/// Longest value of one entry of `"parameters"`, in characters.
const MAX_PARAMETER_CHARS: usize = 500;

#[derive(Debug)]
enum Document {
    Text(String),
    Object(Value),
}

impl ParseRequest {
    /// Reads a request body `{"document": text | object, "import"?, "methods"?, "operations"?}`
    /// of at most `max` bytes. CPU-bound on a large body: run it on the blocking pool
    /// ([`Service::read_parse_request`]).
    pub fn from_json(bytes: &[u8], max: usize) -> Result<ParseRequest, ServiceError> {
        if bytes.len() > max {
            return Err(ServiceError::TooLarge(max));
        }
        let body: Value = serde_json::from_slice(bytes)
            .map_err(|e| ServiceError::Invalid(format!("request body is not valid JSON: {e}")))?;
        ParseRequest::from_value(body, max)
    }

    /// The same from a body already parsed (the console's form).
    pub fn from_value(body: Value, max: usize) -> Result<ParseRequest, ServiceError> {
        let Value::Object(mut map) = body else {
            return Err(ServiceError::Invalid(
                "request body: must be a JSON object: {\"document\": …, \"import\": false}".into(),
            ));
        };
        let import = match map.get("import") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(ServiceError::Invalid("import: must be a boolean".into())),
        };
        let methods = match strings(map.get("methods"), "methods", METHODS_HINT)? {
            None => None,
            Some(list) => {
                let mut out: Vec<String> = Vec::with_capacity(list.len());
                for m in list {
                    let upper = m.trim().to_ascii_uppercase();
                    if !METHODS.contains(&upper.as_str()) {
                        return Err(ServiceError::Invalid(format!(
                            "methods: {m:?} is not one of {}",
                            METHODS.join(", ")
                        )));
                    }
                    if !out.contains(&upper) {
                        out.push(upper);
                    }
                }
                Some(out)
            }
        };
        let operations = strings(map.get("operations"), "operations", OPERATIONS_HINT)?;
        let parameters = parameter_values(map.get("parameters"))?;
        let document = match map.remove("document") {
            None | Some(Value::Null) => {
                return Err(ServiceError::Invalid("document: required".into()));
            }
            Some(Value::String(text)) if text.len() > max => {
                return Err(ServiceError::TooLarge(max));
            }
            Some(Value::String(text)) => Document::Text(text),
            Some(object @ Value::Object(_)) => Document::Object(object),
            Some(_) => {
                return Err(ServiceError::Invalid(
                    "document: must be the document's text (JSON or YAML) or a JSON object".into(),
                ));
            }
        };
        Ok(ParseRequest {
            document,
            import,
            methods,
            operations,
            parameters,
        })
    }

    /// Whether the request asks to create the candidates.
    pub fn import(&self) -> bool {
        self.import
    }
}

const METHODS_HINT: &str = "e.g. [\"GET\", \"HEAD\", \"POST\"]";
const OPERATIONS_HINT: &str = "of \"METHOD /path\" labels or operationIds, e.g. [\"GET /users\"]";

/// The optional `"parameters"` object: path parameter names to values (strings, numbers or
/// booleans, written as text).
fn parameter_values(value: Option<&Value>) -> Result<HashMap<String, String>, ServiceError> {
    const HINT: &str = "e.g. {\"owner\": \"octocat\", \"repo\": \"hello-world\"}";
    let map = match value {
        None | Some(Value::Null) => return Ok(HashMap::new()),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(ServiceError::Invalid(format!(
                "parameters: must be an object of path parameter values, {HINT}"
            )));
        }
    };
    if map.len() > MAX_IMPORT_PARAMETERS {
        return Err(ServiceError::Invalid(format!(
            "parameters: at most {MAX_IMPORT_PARAMETERS} values, got {}",
            map.len()
        )));
    }
    let mut out = HashMap::with_capacity(map.len());
    for (name, v) in map {
        let field = || format!("parameters.{}", name.chars().take(100).collect::<String>());
        if name.trim().is_empty() {
            return Err(ServiceError::Invalid(
                "parameters: a name must not be empty".into(),
            ));
        }
        let text = match v {
            Value::String(s) => s.trim().to_owned(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(ServiceError::Invalid(format!(
                    "{}: must be a string or a number",
                    field()
                )));
            }
        };
        if text.is_empty() {
            return Err(ServiceError::Invalid(format!(
                "{}: must not be empty (leave the name out instead)",
                field()
            )));
        }
        if text.chars().count() > MAX_PARAMETER_CHARS {
            return Err(ServiceError::Invalid(format!(
                "{}: at most {MAX_PARAMETER_CHARS} characters",
                field()
            )));
        }
        out.insert(name.clone(), text);
    }
    Ok(out)
}

/// An optional array of non-empty strings.
fn strings(
    value: Option<&Value>,
    field: &str,
    hint: &str,
) -> Result<Option<Vec<String>>, ServiceError> {
    let list = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) if !list.is_empty() => list,
        Some(Value::Array(_)) => {
            return Err(ServiceError::Invalid(format!(
                "{field}: must not be empty (leave it out for the default)"
            )));
        }
        Some(_) => {
            return Err(ServiceError::Invalid(format!(
                "{field}: must be an array {hint}"
            )));
        }
    };
    list.iter()
        .map(|v| match v {
            Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
            _ => Err(ServiceError::Invalid(format!(
                "{field}: must be an array {hint}"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Runs CPU-bound work on the blocking pool, so that the HTTP workers keep answering.
async fn off_workers<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ServiceError::Internal(format!("OpenAPI import task failed: {e}")))?
}

/// Raised when the reading of a document must stop: the step that notices gives up. A drop
/// raises it, so when the awaiting side lets go (it answered, the budget ran out, or the
/// client went away and the request's future was dropped) the worker stops at its next step;
/// the worker's own drop comes after its work, when raising changes nothing.
#[derive(Clone, Default)]
struct StopFlag(Arc<std::sync::atomic::AtomicBool>);

impl StopFlag {
    /// `Err` once the flag is raised (the answer is no longer awaited, its text unused).
    fn check(&self) -> Result<(), ServiceError> {
        if self.0.load(std::sync::atomic::Ordering::Relaxed) {
            Err(ServiceError::Invalid(
                "document: reading it was stopped".into(),
            ))
        } else {
            Ok(())
        }
    }
}

impl Drop for StopFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The answer when reading a document took longer than the budget.
fn over_budget(budget: std::time::Duration) -> ServiceError {
    ServiceError::Invalid(format!(
        "document: reading it took longer than the {} s budget for an import; import a smaller document (or fewer operations), or raise `[limits] import_parse_secs` (APIDRIFT_LIMITS__IMPORT_PARSE_SECS)",
        budget.as_secs()
    ))
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

/// The base URL of an operation: the first server of the operation's own `servers`, else of its
/// path item's, else of the document's, with its variables' defaults; or why there is no
/// absolute base URL (saying what to do).
fn operation_server(doc: &Value, path: &str, method: &str) -> Result<String, String> {
    let item = doc
        .get("paths")
        .and_then(|p| p.get(path))
        .map(|item| deref(doc, item));
    let op = item.and_then(|i| i.get(method.to_ascii_lowercase()));
    fn own(v: Option<&Value>) -> Option<&Vec<Value>> {
        v.and_then(|v| v.get("servers"))
            .and_then(Value::as_array)
            .filter(|list| !list.is_empty())
    }
    match (own(op), own(item)) {
        (Some(list), _) => server_url(list, "the operation's servers"),
        (None, Some(list)) => server_url(list, "the path's servers"),
        (None, None) => match own(Some(doc)) {
            Some(list) => server_url(list, "servers"),
            None => Err(
                "servers: the document names no server; add its absolute URL (e.g. \
                 `servers: [{url: \"https://api.example.com\"}]`) and import again"
                    .into(),
            ),
        },
    }
}

/// The first server of `list` with its variables' defaults, or why it gives no absolute base
/// URL (`place` names the list in the reason).
fn server_url(list: &[Value], place: &str) -> Result<String, String> {
    let server = &list[0];
    let Some(mut url) = server.get("url").and_then(Value::as_str).map(str::to_owned) else {
        return Err(format!(
            "{place}: the first server has no `url`; give it the API's absolute URL \
             and import again"
        ));
    };
    if let Some(vars) = server.get("variables").and_then(Value::as_object) {
        for (name, var) in vars {
            if let Some(default) = var.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("{{{name}}}"), default);
            }
        }
    }
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        Ok(url.trim_end_matches('/').to_owned())
    } else {
        Err(format!(
            "{place}: the first server URL {url:?} is not absolute; make it one \
             (e.g. \"https://api.example.com{}\") and import again",
            if url.starts_with('/') {
                url.as_str()
            } else {
                ""
            }
        ))
    }
}

/// A path parameter's example: its own `example`, else the first of its `examples`, else its
/// schema's (through a `$ref`) `example`, else the first of the schema's `examples` (3.1).
fn example_of(doc: &Value, param: &Value) -> Option<String> {
    let schema = param.get("schema").map(|s| deref(doc, s));
    let value = param
        .get("example")
        .or_else(|| {
            param
                .get("examples")
                .and_then(Value::as_object)
                .and_then(|m| m.values().next())
                .map(|e| deref(doc, e))
                .and_then(|e| e.get("value"))
        })
        .or_else(|| schema.and_then(|s| s.get("example")))
        .or_else(|| {
            schema
                .and_then(|s| s.get("examples"))
                .and_then(Value::as_array)
                .and_then(|a| a.first())
        })?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The reference of an operation written as a `$ref` into another file (`get: {$ref:
/// account_get.yml}`), which a document received in one piece cannot resolve.
fn external_operation<'v>(doc: &'v Value, path: &str, method: &str) -> Option<&'v str> {
    let item = doc
        .get("paths")
        .and_then(|p| p.get(path))
        .map(|i| deref(doc, i))?;
    item.get(method.to_ascii_lowercase())
        .and_then(|op| op.get("$ref"))
        .and_then(Value::as_str)
        .filter(|r| !r.starts_with('#'))
}

/// Resolves a local `$ref` (a path item or a parameter) within the document.
fn deref<'v>(doc: &'v Value, v: &'v Value) -> &'v Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix('#')
            .and_then(|p| doc.pointer(p))
            .unwrap_or(v),
        None => v,
    }
}

/// A path template filled in: the URL path, or the names that have no value.
struct FilledPath {
    path: Result<String, Vec<String>>,
    /// The template's parameters the document gives no example for.
    needed: Vec<String>,
}

/// Fills the path's `{parameters}` from the document's examples, else from `given`.
fn fill_path(doc: &Value, path: &str, method: &str, given: &HashMap<String, String>) -> FilledPath {
    let item = doc
        .get("paths")
        .and_then(|p| p.get(path))
        .map(|item| deref(doc, item));
    let op = item.and_then(|i| i.get(method.to_ascii_lowercase()));
    let mut examples = HashMap::new();
    for list in [item, op]
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("parameters"))
        .filter_map(Value::as_array)
    {
        for p in list {
            let p = deref(doc, p);
            if p.get("in").and_then(Value::as_str) == Some("path")
                && let (Some(name), Some(ex)) =
                    (p.get("name").and_then(Value::as_str), example_of(doc, p))
            {
                examples.insert(name.to_owned(), ex);
            }
        }
    }
    let mut out = String::new();
    let mut missing = Vec::new();
    let mut needed: Vec<String> = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let name = &rest[start + 1..start + len];
        let value = match examples.get(name) {
            Some(ex) => Some(ex),
            None => {
                if !needed.iter().any(|n| n == name) {
                    needed.push(name.to_owned());
                }
                given.get(name)
            }
        };
        match value {
            Some(v) => out.push_str(&path_param(v)),
            None => missing.push(name.to_owned()),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    FilledPath {
        path: if missing.is_empty() {
            Ok(out)
        } else {
            Err(missing)
        },
        needed,
    }
}

/// Why an operation of `method` is not imported with `methods` (`None`: the default).
fn method_reason(method: &str, methods: Option<&[String]>) -> Option<String> {
    match methods {
        None if DEFAULT_IMPORT_METHODS.contains(&method) => None,
        None => Some(format!(
            "method: only GET and HEAD are imported by default; pass \"methods\": \
             [\"GET\", \"HEAD\", \"{method}\"] to include {method}"
        )),
        Some(list) if list.iter().any(|m| m == method) => None,
        Some(_) => Some(format!(
            "method: {method} is not in \"methods\"; add it there to include it"
        )),
    }
}

/// Every operation of the document as a candidate. A candidate is importable when the import
/// would create it (unless already registered): a method in `methods`, a URL with every path
/// parameter filled in that passes the create rules (D6, the outbound allow-list `allow`
/// included); otherwise `reason` is the skip reason the import would give.
pub fn candidates(
    doc: &OpenApiDocument,
    allow: &AllowList,
    methods: Option<&[String]>,
    parameters: &HashMap<String, String>,
) -> Vec<Candidate> {
    let root = doc.value();
    doc.operations()
        .into_iter()
        .map(|op: Operation| {
            let has_response_contract = op.has_json_schema();
            let name = op
                .operation_id
                .clone()
                .or_else(|| op.summary.clone())
                .unwrap_or_else(|| op.label());
            let name: String = name.chars().take(200).collect();
            let base = operation_server(root, &op.path, &op.method);
            let filled = fill_path(root, &op.path, &op.method, parameters);
            let (url, mut reason) = match (&base, filled.path) {
                (Err(why), _) => (None, Some(why.clone())),
                (Ok(b), Ok(filled)) => (Some(format!("{b}{filled}")), None),
                (Ok(b), Err(missing)) => (
                    Some(format!("{b}{}", op.path)),
                    Some(format!(
                        "path parameters without example values: {}; add an `example` to each \
                         and import again, or give their values in \"parameters\" (e.g. \
                         {{\"{}\": \"…\"}})",
                        missing.join(", "),
                        missing[0]
                    )),
                ),
            };
            if let Some(r) = external_operation(root, &op.path, &op.method) {
                reason = Some(format!(
                    "contract: the operation is defined in another file ({r}), which an import \
                     cannot read; bundle the document into one file first (e.g. `redocly bundle \
                     openapi.yaml -o bundled.yaml`) and import again"
                ));
            }
            if let Some(why) = method_reason(&op.method, methods) {
                reason = Some(why);
            }
            let reason = reason.or_else(|| {
                let entry = json!({ "name": name, "url": url, "method": op.method });
                apidrift_model::validate::validate_entry(&entry, allow).err()
            });
            Candidate {
                name,
                method: op.method,
                path: op.path,
                operation_id: op.operation_id,
                url,
                has_response_contract,
                importable: reason.is_none(),
                reason,
                parameters_needed: filled.needed,
            }
        })
        .collect()
}

/// The positions in `list` the request's `operations` select (all when `None`), or which one
/// names no operation.
fn selection(list: &[Candidate], wanted: Option<&[String]>) -> Result<Vec<usize>, ServiceError> {
    let Some(wanted) = wanted else {
        return Ok((0..list.len()).collect());
    };
    let mut chosen = HashSet::new();
    for w in wanted {
        let (method, path) = match w.split_once(char::is_whitespace) {
            Some((m, p)) => (m.to_ascii_uppercase(), p.trim()),
            None => (String::new(), ""),
        };
        let matches = |c: &Candidate| {
            (c.method == method && c.path == path) || c.operation_id.as_deref() == Some(w)
        };
        let mut found = false;
        for (i, c) in list.iter().enumerate() {
            if matches(c) {
                found = true;
                chosen.insert(i);
            }
        }
        if !found {
            return Err(ServiceError::Invalid(format!(
                "operations: {w:?} is not an operation of the document; name it \"METHOD /path\" \
                 as the document writes the path, or by its operationId"
            )));
        }
    }
    let mut out: Vec<usize> = chosen.into_iter().collect();
    out.sort_unstable();
    Ok(out)
}

/// What the first, blocking step of a request found.
struct Parsed {
    /// Kept for an import only.
    doc: Option<OpenApiDocument>,
    openapi: String,
    operations: Vec<Candidate>,
    selected: Vec<usize>,
}

impl Service {
    /// The largest parse request body (and document) accepted, in bytes.
    pub fn import_max_bytes(&self) -> usize {
        self.import_max_bytes
    }

    /// Sets [`Service::import_max_bytes`] (`[limits] import_max_bytes`).
    pub fn with_import_max_bytes(mut self, max: usize) -> Service {
        self.import_max_bytes = max;
        self
    }

    /// Sets how long reading a document may take (`[limits] import_parse_secs`).
    pub fn with_import_parse_budget(mut self, budget: std::time::Duration) -> Service {
        self.import_parse_budget = budget;
        self
    }

    /// [`ParseRequest::from_json`] on the blocking pool, with this service's size limit.
    pub async fn read_parse_request(
        &self,
        body: bytes::Bytes,
    ) -> Result<ParseRequest, ServiceError> {
        let max = self.import_max_bytes;
        off_workers(move || ParseRequest::from_json(&body, max)).await
    }

    /// Parses the request's document into candidates; with `import`, creates the selected,
    /// importable ones in the actor's workspace (D6 rules: plan limit, validation per entry). A
    /// listing is [`Action::ParseOpenApi`], an import [`Action::CreateEndpoints`].
    pub async fn openapi(
        &self,
        actor: &Actor,
        request: ParseRequest,
    ) -> Result<ParseResult, ServiceError> {
        actor.may(if request.import() {
            Action::CreateEndpoints
        } else {
            Action::ParseOpenApi
        })?;
        let ws = actor.workspace();
        let ParseRequest {
            document,
            import,
            methods,
            operations: wanted,
            parameters,
        } = request;
        let allow = Arc::clone(&self.allow);
        let methods_for_list = methods.clone();
        // Reading the document is bounded: the YAML guard keeps the parse linear in the
        // document's size, and the budget bounds the whole step. Past the budget, or when the
        // caller went away (this future dropped), the blocking work stops at its next step.
        let stop = StopFlag::default();
        let seen = stop.clone();
        let budget = self.import_parse_budget;
        let work = off_workers(move || {
            let doc = match document {
                Document::Text(text) => OpenApiDocument::parse(text.as_bytes()),
                Document::Object(value) => OpenApiDocument::from_value(value),
            }
            .map_err(|e| ServiceError::Invalid(format!("document: {e}")))?;
            seen.check()?;
            let operations = candidates(&doc, &allow, methods_for_list.as_deref(), &parameters);
            seen.check()?;
            let selected = selection(&operations, wanted.as_deref())?;
            let openapi = doc.version().to_owned();
            // Without an import the document is dropped here, off the HTTP workers.
            Ok(Parsed {
                openapi,
                doc: import.then_some(doc),
                operations,
                selected,
            })
        });
        let parsed = match tokio::time::timeout(budget, work).await {
            Ok(parsed) => parsed?,
            Err(_) => return Err(over_budget(budget)),
        };
        let Parsed {
            doc,
            openapi,
            operations,
            selected,
        } = parsed;
        let import = match doc {
            Some(doc) => Some(self.import(ws, doc, &operations, &selected).await?),
            None => None,
        };
        Ok(ParseResult {
            openapi,
            methods: methods.unwrap_or_else(|| {
                DEFAULT_IMPORT_METHODS
                    .iter()
                    .map(|m| (*m).to_owned())
                    .collect()
            }),
            operations,
            import,
        })
    }

    /// Creates the selected candidates: the registration's rules (plan, each entry), minus the
    /// method and URL pairs the workspace already has; contracts built on the blocking pool from
    /// the one parsed document, which is dropped before the rows are written.
    async fn import(
        &self,
        ws: Uuid,
        doc: OpenApiDocument,
        list: &[Candidate],
        selected: &[usize],
    ) -> Result<CreateEndpointsResponse, ServiceError> {
        let workspace = self.workspace(ws).await?;
        self.ensure_room(&workspace).await?;
        let mut registered = self.registered(ws).await?;
        let now = self.now_millis();
        let mut pending = Vec::with_capacity(selected.len());
        for &index in selected {
            let c = &list[index];
            let row = match &c.reason {
                Some(reason) => Err(reason.clone()),
                None => {
                    let entry = json!({ "name": c.name, "url": c.url, "method": c.method });
                    self.check_entry(&entry, false).and_then(|valid| {
                        let key = (
                            valid.settings.method.as_str().to_owned(),
                            valid.settings.url.clone(),
                        );
                        if registered.insert(key) {
                            Ok(plain_row(valid, now))
                        } else {
                            Err("already registered".to_owned())
                        }
                    })
                }
            };
            let contract = (row.is_ok() && c.has_response_contract).then(|| c.label());
            pending.push((
                Pending {
                    index,
                    name: c.name.clone(),
                    row,
                },
                contract,
            ));
        }
        // Each contract is a reference (its operation, status and media types); the schemas
        // they reach are one schema set, stored once for the whole import (and not again when
        // the workspace already stores the same content). The document is dropped here, off
        // the HTTP workers, before the rows are written.
        let (pending, set) = off_workers(move || {
            let mut pending = pending;
            let mut refs = Vec::new();
            for (i, (p, contract)) in pending.iter_mut().enumerate() {
                if let (Some(label), Ok(_)) = (contract.as_deref(), &p.row) {
                    match doc.contract_ref(label, None, None) {
                        Ok(r) => refs.push((i, r)),
                        Err(e) => p.row = Err(format!("contract: {e}")),
                    }
                }
            }
            let set = if refs.is_empty() {
                None
            } else {
                let all: Vec<&ContractRef> = refs.iter().map(|(_, r)| r).collect();
                let set = doc
                    .schema_set(&all)
                    .map_err(|e| ServiceError::Invalid(format!("contract: {e}")))?;
                for (i, r) in refs {
                    if let Some((p, _)) = pending.get_mut(i)
                        && let Ok(row) = &mut p.row
                    {
                        row.response_contract = Some(stored_reference(r.contract, &set));
                    }
                }
                Some(new_set(set))
            };
            drop(doc);
            let pending: Vec<Pending> = pending.into_iter().map(|(p, _)| p).collect();
            Ok((pending, set))
        })
        .await?;
        self.create_rows_with_sets(ws, pending, set.into_iter().collect())
            .await
    }

    /// The method and URL of every endpoint of the workspace.
    async fn registered(&self, ws: Uuid) -> Result<HashSet<(String, String)>, ServiceError> {
        Ok(self
            .store
            .endpoint_keys(ws)
            .await?
            .into_iter()
            .map(|(method, url)| (method.as_str().to_owned(), url))
            .collect())
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

    fn parse(text: &str) -> Result<OpenApiDocument, ServiceError> {
        OpenApiDocument::parse(text.as_bytes()).map_err(|e| ServiceError::Invalid(e.to_string()))
    }

    /// An operation written as a `$ref` into another file is listed, not imported, with a
    /// `contract: …` reason that says how to bundle the document.
    #[test]
    fn operations_in_other_files_are_skipped_with_a_contract_reason() -> Result<(), ServiceError> {
        let text = r##"
openapi: 3.0.3
info: {title: t, version: "1"}
servers: [{url: "https://api.example.com"}]
paths:
  /account:
    get: {$ref: "account_get.yml"}
  /local:
    get: {$ref: "#/x-operations/local"}
x-operations:
  local:
    responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
"##;
        let doc = parse(text)?;
        let list = candidates(&doc, &AllowList::default(), None, &HashMap::new());
        let account = list.iter().find(|c| c.path == "/account");
        let reason = account.and_then(|c| c.reason.clone()).unwrap_or_default();
        assert!(
            reason.starts_with(
                "contract: the operation is defined in another file (account_get.yml)"
            ) && reason.contains("bundle"),
            "{reason}"
        );
        let local = list.iter().find(|c| c.path == "/local");
        assert!(
            local.is_some_and(|c| c.importable && c.has_response_contract),
            "{list:?}"
        );
        let err = doc
            .contract("GET /account", None, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("account_get.yml") && err.contains("bundle"),
            "{err}"
        );
        Ok(())
    }

    /// An operation's own `servers` win over its path's, which win over the document's; a path
    /// parameter's example may sit in its `$ref`'d schema, or in the schema's `examples`.
    #[test]
    fn operation_servers_and_examples_behind_refs() -> Result<(), ServiceError> {
        let text = r##"
openapi: 3.1.0
info: {title: t, version: "1"}
servers: [{url: "https://api.example.com"}]
paths:
  /models/{id}:
    get:
      servers: [{url: "https://{region}.inference.example.com", variables: {region: {default: eu}}}]
      parameters: [{name: id, in: path, required: true, schema: {$ref: '#/components/schemas/Id'}}]
      responses: {"200": {description: ok}}
  /files/{name}:
    servers: [{url: "https://files.example.com/v2"}]
    get:
      parameters: [{name: name, in: path, required: true, schema: {type: string, examples: [report.pdf]}}]
      responses: {"200": {description: ok}}
  /plain:
    get:
      responses: {"200": {description: ok}}
components:
  schemas:
    Id: {type: string, example: gpt-x}
"##;
        let doc = parse(text)?;
        let list = candidates(&doc, &AllowList::default(), None, &HashMap::new());
        let url = |path: &str| {
            list.iter()
                .find(|c| c.path == path)
                .and_then(|c| c.url.clone())
                .unwrap_or_default()
        };
        assert_eq!(
            url("/models/{id}"),
            "https://eu.inference.example.com/models/gpt-x"
        );
        assert_eq!(
            url("/files/{name}"),
            "https://files.example.com/v2/files/report.pdf"
        );
        assert_eq!(url("/plain"), "https://api.example.com/plain");
        assert!(list.iter().all(|c| c.importable), "{list:?}");
        Ok(())
    }

    #[test]
    fn lists_operations_with_urls_examples_and_contracts() -> Result<(), ServiceError> {
        let doc = parse(DOC)?;
        let c = candidates(
            &doc,
            &AllowList::default(),
            Some(&["GET".into(), "DELETE".into()]),
            &HashMap::new(),
        );
        assert_eq!(c.len(), 3);
        assert_eq!(c[1].name, "listUsers");
        assert_eq!(c[1].operation_id.as_deref(), Some("listUsers"));
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
            Some(
                "path parameters without example values: orderId; add an `example` to each and \
                 import again, or give their values in \"parameters\" (e.g. {\"orderId\": \"…\"})"
            )
        );
        assert_eq!(c[0].parameters_needed, vec!["orderId".to_owned()]);
        // The user's example comes from the document: nothing is needed from the request.
        assert!(c[2].parameters_needed.is_empty());
        Ok(())
    }

    /// Path templates without examples take the request's values; the document's own examples
    /// win over them, and a value is percent-encoded into the path.
    #[test]
    fn request_parameters_fill_templates_without_examples() -> Result<(), ServiceError> {
        let doc = parse(
            r#"
openapi: 3.0.3
servers: [{url: "https://api.github.example"}]
paths:
  /repos/{owner}/{repo}/issues/{issue_number}:
    get:
      operationId: issues/get
      parameters:
        - {name: owner, in: path, required: true, schema: {type: string}}
        - {name: repo, in: path, required: true, schema: {type: string}}
        - {name: issue_number, in: path, required: true, schema: {type: integer, example: 1347}}
      responses: {"200": {description: ok}}
  /users/{username}:
    get:
      parameters: [{name: username, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
"#,
        )?;
        let given: HashMap<String, String> = [
            ("owner".to_owned(), "octocat".to_owned()),
            ("repo".to_owned(), "hello world".to_owned()),
            ("issue_number".to_owned(), "9".to_owned()),
        ]
        .into();
        let c = candidates(&doc, &AllowList::default(), None, &given);
        assert_eq!(
            c[0].url.as_deref(),
            Some("https://api.github.example/repos/octocat/hello%20world/issues/1347")
        );
        assert!(c[0].importable, "{:?}", c[0].reason);
        assert_eq!(c[0].parameters_needed, vec!["owner", "repo"]);
        assert!(!c[1].importable);
        assert_eq!(c[1].parameters_needed, vec!["username"]);
        Ok(())
    }

    #[test]
    fn parameter_values_are_checked() {
        let read = |v: Value| {
            ParseRequest::from_value(json!({"document": "x", "parameters": v}), 1 << 20)
                .map(|r| r.parameters)
        };
        assert_eq!(
            read(json!({"id": 7, "on": true, "name": " a "})).ok(),
            Some(
                [
                    ("id".to_owned(), "7".to_owned()),
                    ("on".to_owned(), "true".to_owned()),
                    ("name".to_owned(), "a".to_owned())
                ]
                .into()
            )
        );
        let error = |v: Value| match read(v) {
            Err(ServiceError::Invalid(m)) => m,
            other => format!("{other:?}"),
        };
        assert_eq!(
            error(json!(["owner"])),
            "parameters: must be an object of path parameter values, e.g. {\"owner\": \"octocat\", \"repo\": \"hello-world\"}"
        );
        assert_eq!(
            error(json!({"owner": null})),
            "parameters.owner: must be a string or a number"
        );
        assert_eq!(
            error(json!({"owner": "  "})),
            "parameters.owner: must not be empty (leave the name out instead)"
        );
        let many: serde_json::Map<String, Value> = (0..=MAX_IMPORT_PARAMETERS)
            .map(|i| (format!("p{i}"), json!("v")))
            .collect();
        assert_eq!(
            error(Value::Object(many)),
            "parameters: at most 100 values, got 101"
        );
    }

    #[test]
    fn only_get_and_head_by_default() -> Result<(), ServiceError> {
        let doc = parse(&DOC.replace("/orders/{orderId}", "/orders"))?;
        let c = candidates(&doc, &AllowList::default(), None, &HashMap::new());
        assert_eq!(c[0].method, "DELETE");
        assert!(!c[0].importable);
        assert_eq!(
            c[0].reason.as_deref(),
            Some(
                "method: only GET and HEAD are imported by default; pass \"methods\": \
                 [\"GET\", \"HEAD\", \"DELETE\"] to include DELETE"
            )
        );
        assert!(c[1].importable && c[2].importable);
        let c = candidates(
            &doc,
            &AllowList::default(),
            Some(&["DELETE".into()]),
            &HashMap::new(),
        );
        assert!(c[0].importable, "{:?}", c[0].reason);
        assert_eq!(
            c[1].reason.as_deref(),
            Some("method: GET is not in \"methods\"; add it there to include it")
        );
        Ok(())
    }

    #[test]
    fn operations_select_by_label_or_operation_id() -> Result<(), ServiceError> {
        let doc = parse(DOC)?;
        let c = candidates(&doc, &AllowList::default(), None, &HashMap::new());
        assert_eq!(selection(&c, None)?, vec![0, 1, 2]);
        let wanted = ["get /users/{id}".to_owned(), "listUsers".to_owned()];
        assert_eq!(selection(&c, Some(&wanted))?, vec![1, 2]);
        let err = selection(&c, Some(&["GET /nope".to_owned()]));
        assert!(
            matches!(&err, Err(ServiceError::Invalid(m)) if m.starts_with("operations: \"GET /nope\" is not an operation")),
            "{err:?}"
        );
        Ok(())
    }

    #[test]
    fn servers_missing_or_relative_say_what_to_do() -> Result<(), ServiceError> {
        let none = parse(
            "openapi: 3.1.0\npaths:\n  /a:\n    get:\n      responses: {\"200\": {description: ok}}\n",
        )?;
        let c = candidates(&none, &AllowList::default(), None, &HashMap::new());
        assert!(c[0].reason.as_deref().is_some_and(|r| {
            r.starts_with("servers: the document names no server; add its absolute URL")
        }));
        let relative = parse(&DOC.replace("https://{host}/v1", "/v1"))?;
        let c = candidates(&relative, &AllowList::default(), None, &HashMap::new());
        assert!(
            c[1].reason
                .as_deref()
                .is_some_and(|r| r.contains("\"/v1\" is not absolute")
                    && r.contains("https://api.example.com/v1")),
            "{:?}",
            c[1].reason
        );
        Ok(())
    }

    #[test]
    fn a_private_server_is_not_importable() -> Result<(), ServiceError> {
        let doc = parse(&DOC.replace("https://{host}/v1", "http://10.0.0.1/v1"))?;
        let c = candidates(&doc, &AllowList::default(), None, &HashMap::new());
        assert_eq!(c[1].name, "listUsers");
        assert!(!c[1].importable);
        let reason = c[1].reason.as_deref().unwrap_or_default();
        assert!(
            reason.starts_with("url: private, loopback and link-local hosts are rejected; ")
                && reason.contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.1/32"),
            "{reason}"
        );
        Ok(())
    }

    #[test]
    fn request_fields_are_checked() {
        let read = |v: Value| ParseRequest::from_json(v.to_string().as_bytes(), 1 << 20);
        assert!(read(json!({ "document": "swagger: '2.0'" })).is_ok());
        for (body, wanted) in [
            (json!({ "document": 3 }), "document: must be"),
            (json!({}), "document: required"),
            (json!([]), "request body: must be a JSON object"),
            (
                json!({ "document": {}, "import": "yes" }),
                "import: must be a boolean",
            ),
            (
                json!({ "document": {}, "methods": "GET" }),
                "methods: must be an array",
            ),
            (
                json!({ "document": {}, "methods": [] }),
                "methods: must not be empty",
            ),
            (
                json!({ "document": {}, "methods": ["FETCH"] }),
                "methods: \"FETCH\" is not one of",
            ),
            (
                json!({ "document": {}, "operations": [1] }),
                "operations: must be an array",
            ),
        ] {
            let got = read(body.clone());
            assert!(
                matches!(&got, Err(ServiceError::Invalid(m)) if m.starts_with(wanted)),
                "{body}: {got:?}"
            );
        }
        let Ok(r) =
            read(json!({ "document": {}, "import": true, "methods": ["get", "Post", "GET"] }))
        else {
            panic!("a valid request is refused");
        };
        assert!(r.import());
        assert_eq!(
            r.methods.as_deref(),
            Some(&["GET".to_owned(), "POST".to_owned()][..])
        );
    }

    #[test]
    fn too_large_bodies_and_documents_are_413_naming_the_setting() {
        let body = json!({ "document": "a".repeat(100) }).to_string();
        let err = ParseRequest::from_json(body.as_bytes(), 50);
        assert!(matches!(err, Err(ServiceError::TooLarge(50))), "{err:?}");
        let err = ParseRequest::from_value(json!({ "document": "a".repeat(100) }), 50);
        let Err(e) = err else {
            panic!("a large document is accepted");
        };
        assert!(matches!(e, ServiceError::TooLarge(50)));
        let text = e.to_string();
        assert!(
            text.contains("50 bytes") && text.contains("import_max_bytes"),
            "{text}"
        );
    }
}
