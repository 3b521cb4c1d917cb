//! A parsed OpenAPI 3.0, 3.1 or 3.2 document: parsed once (JSON or YAML), its
//! operations listed, and any number of response [`Contract`]s built from it without copying the
//! document.
//!
//! A contract keeps only what its response schema can reach: the schema of each JSON media type
//! of the chosen response, and every schema reachable from those through `$ref`s, each at the
//! place the document has it (so `$ref`s stay valid), translated once from OpenAPI 3.0 to JSON
//! Schema 2020-12 ([`translate_schema`]). Its root is a `$ref` to the schema of the default media
//! type; `x-apidrift` names the media types and where their schemas are:
//!
//! ```json
//! {"$ref": "#/components/schemas/User",
//!  "x-apidrift": {"mediaType": "application/json",
//!                 "mediaTypes": {"application/json": "#/components/schemas/User"}},
//!  "components": {"schemas": {"User": {…}, "Address": {…}}}}
//! ```

use crate::contract_data::{Contract, ContractError, ContractRef, SchemaSet};
use crate::engine::{is_json_media_type, media_type};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// The member of a stored contract's root that lists its media types.
pub(crate) const MEDIA_KEY: &str = "x-apidrift";

/// The HTTP methods of a path item, in the order OpenAPI lists them.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// How deep `$ref` chains and schemas may go before the document is refused.
const MAX_REF_HOPS: usize = 64;
const MAX_SCHEMA_DEPTH: usize = 256;

/// A parsed OpenAPI 3.0, 3.1 or 3.2 document. Building contracts from it is `&self` and thread-safe;
/// it keeps the translated schemas the contracts reached for the next contract (memory freed with
/// the document).
#[derive(Debug)]
pub struct OpenApiDocument {
    root: Value,
    version: String,
    /// What building contracts learnt about the document, reused by the next contract.
    memo: Mutex<Memo>,
}

/// Per-schema work shared by the contracts of one document.
#[derive(Debug, Default)]
struct Memo {
    /// The targets of the `$ref`s within the schema at a pointer.
    refs: HashMap<Pointer, Arc<[Pointer]>>,
    /// The translated copy of the schema at a pointer.
    translated: HashMap<Pointer, Arc<Translated>>,
    /// Schemas already compiled as part of a contract: a contract made only of those needs no
    /// compilation to prove it usable (a compile error is local to one schema).
    proven: HashSet<Pointer>,
}

/// A translated schema whose `$ref`s follow the schemas translation moved.
#[derive(Debug)]
struct Translated {
    value: Value,
}

impl Clone for OpenApiDocument {
    fn clone(&self) -> OpenApiDocument {
        OpenApiDocument {
            root: self.root.clone(),
            version: self.version.clone(),
            memo: Mutex::default(),
        }
    }
}

/// One operation of the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Operation {
    /// Upper-case method, e.g. `GET`.
    pub method: String,
    /// The path template as the document writes it.
    pub path: String,
    /// Its `operationId`, if any.
    pub operation_id: Option<String>,
    /// Its `summary`, if any.
    pub summary: Option<String>,
    /// The 2xx responses (`200`, `2XX`, …) in status order.
    pub responses: Vec<SuccessResponse>,
}

/// A 2xx response of an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SuccessResponse {
    /// The response key as written: `200`, `2XX`.
    pub status: String,
    /// Every media type of its `content`, as written.
    pub media_types: Vec<String>,
    /// The media types a contract can use: JSON (`application/json`, `…+json`) or a wildcard
    /// (`*/*`, `application/*`), with a schema.
    pub contract_media_types: Vec<String>,
}

impl Operation {
    /// `GET /users/{id}`.
    pub fn label(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// True when a 2xx response has a schema a contract can use.
    pub fn has_json_schema(&self) -> bool {
        self.responses
            .iter()
            .any(|r| !r.contract_media_types.is_empty())
    }
}

/// A JSON pointer as its unescaped segments.
type Pointer = Vec<String>;

impl OpenApiDocument {
    /// Parses a document written in JSON or YAML (a UTF-8 byte-order mark is skipped).
    pub fn parse(bytes: &[u8]) -> Result<OpenApiDocument, ContractError> {
        OpenApiDocument::from_value(parse_document(bytes)?)
    }

    /// A document already parsed into a `serde_json::Value`.
    pub fn from_value(root: Value) -> Result<OpenApiDocument, ContractError> {
        let version = check_version(&root)?;
        Ok(OpenApiDocument {
            root,
            version,
            memo: Mutex::default(),
        })
    }

    /// The `openapi` version, e.g. `3.0.3`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// True for an OpenAPI 3.0 document (`nullable`, boolean exclusive bounds).
    pub fn is_30(&self) -> bool {
        self.version.starts_with("3.0")
    }

    /// Where a 3.1 or 3.2 document uses a 3.0 form that contracts read with its 3.0 meaning
    /// rather than ignore or refuse: `nullable: true` (null is allowed there) and a boolean
    /// `exclusiveMinimum`/`exclusiveMaximum` (the neighbouring bound becomes exclusive). One
    /// line each, naming the keyword and the JSON pointer of its schema, in document order, at
    /// most 50 (then a line saying how many more). Empty for a 3.0 document, where both forms
    /// are the standard.
    pub fn lenient_readings(&self) -> Vec<String> {
        if self.is_30() {
            return Vec::new();
        }
        let mut found = Vec::new();
        let mut at = Vec::new();
        lenient_forms(&self.root, &mut at, &mut found, 0);
        const SHOWN: usize = 50;
        if found.len() > SHOWN {
            let more = found.len() - SHOWN;
            found.truncate(SHOWN);
            found.push(format!("… and {more} more"));
        }
        found
    }

    /// The whole document.
    pub fn value(&self) -> &Value {
        &self.root
    }

    /// The document, given back.
    pub fn into_value(self) -> Value {
        self.root
    }

    /// Every operation under `paths`, by path then method. A path item that is a `$ref` the
    /// document cannot resolve is skipped.
    pub fn operations(&self) -> Vec<Operation> {
        self.view().operations()
    }

    /// Builds the contract of `operation` (`GET /users/{id}`) for `status` (default: the
    /// operation's `200`, else its first 2xx response). The contract holds every JSON media type
    /// of that response; `media_type` picks the default one (exact, then the same `+json`
    /// family, then `application/json`), else `application/json`, else the first JSON one.
    pub fn contract(
        &self,
        operation: &str,
        status: Option<u16>,
        media_type: Option<&str>,
    ) -> Result<Contract, ContractError> {
        self.view().contract(operation, status, media_type)
    }

    /// The contract of `operation` as a reference into a [`SchemaSet`] (see
    /// [`OpenApiDocument::contract`] for the arguments): its root names the media types and
    /// where their schemas are, without copying any schema. It is proven to compile as
    /// [`OpenApiDocument::contract`] proves it. Store [`OpenApiDocument::schema_set`] of the
    /// references once, and rebuild each contract with [`Contract::resolve`].
    pub fn contract_ref(
        &self,
        operation: &str,
        status: Option<u16>,
        media_type: Option<&str>,
    ) -> Result<ContractRef, ContractError> {
        self.view().contract_ref(operation, status, media_type)
    }

    /// The schemas that the contracts `refs` (built from this document) reach, each once,
    /// translated, at its place in the document, as canonical JSON with its SHA-256.
    pub fn schema_set(&self, refs: &[&ContractRef]) -> Result<SchemaSet, ContractError> {
        self.view().schema_set(refs)
    }

    fn view(&self) -> View<'_> {
        View {
            root: &self.root,
            v30: self.is_30(),
            memo: Some(&self.memo),
        }
    }
}

/// The version of a document, when it is 3.0, 3.1 or 3.2 (3.2 describes schemas as 3.1 does:
/// JSON Schema 2020-12).
fn check_version(root: &Value) -> Result<String, ContractError> {
    let version = root
        .get("openapi")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if ["3.0.", "3.1.", "3.2."]
        .iter()
        .any(|v| version.starts_with(v) || version == v.trim_end_matches('.'))
    {
        return Ok(version);
    }
    let shown = match root.get("openapi") {
        Some(v) => v.to_string(),
        None if root.get("swagger").is_some() => "missing: a Swagger 2.0 document".into(),
        None => "missing".into(),
    };
    Err(ContractError::Version(shown))
}

/// A borrowed, version-checked document: what contracts are built from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'a> {
    root: &'a Value,
    v30: bool,
    memo: Option<&'a Mutex<Memo>>,
}

impl<'a> View<'a> {
    /// Checks the version of a parsed document.
    pub(crate) fn of(root: &'a Value) -> Result<View<'a>, ContractError> {
        let version = check_version(root)?;
        Ok(View {
            root,
            v30: version.starts_with("3.0"),
            memo: None,
        })
    }

    pub(crate) fn operations(&self) -> Vec<Operation> {
        let mut out = Vec::new();
        let Some(paths) = self.root.get("paths").and_then(Value::as_object) else {
            return out;
        };
        for (path, item) in paths {
            let Ok((item, _)) = self.deref(item, pointer(&["paths", path])) else {
                continue;
            };
            for method in METHODS {
                let Some(op) = item.get(method).filter(|v| v.is_object()) else {
                    continue;
                };
                // An operation written as a `$ref` (multi-file layouts do it) is listed with
                // what it refers to when that is in the document.
                let op = self
                    .deref(op, pointer(&["paths", path, method]))
                    .map_or(op, |(v, _)| v);
                let text = |k: &str| {
                    op.get(k)
                        .and_then(Value::as_str)
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                };
                let mut responses = Vec::new();
                if let Some(map) = op.get("responses").and_then(Value::as_object) {
                    let mut keys: Vec<&String> = map.keys().filter(|k| is_success_key(k)).collect();
                    keys.sort();
                    for key in keys {
                        let Ok((response, _)) = self.deref(&map[key], Vec::new()) else {
                            continue;
                        };
                        let mut media_types = Vec::new();
                        let mut contract_media_types = Vec::new();
                        if let Some(content) = response.get("content").and_then(Value::as_object) {
                            for (media, object) in content {
                                media_types.push(media.clone());
                                if is_contract_media(media)
                                    && self
                                        .deref(object, Vec::new())
                                        .is_ok_and(|(m, _)| m.get("schema").is_some())
                                {
                                    contract_media_types.push(media.clone());
                                }
                            }
                        }
                        responses.push(SuccessResponse {
                            status: key.clone(),
                            media_types,
                            contract_media_types,
                        });
                    }
                }
                out.push(Operation {
                    method: method.to_ascii_uppercase(),
                    path: path.clone(),
                    operation_id: text("operationId"),
                    summary: text("summary"),
                    responses,
                });
            }
        }
        out
    }

    /// The contract of `operation` as a reference: its root (`$ref` and `x-apidrift`) and the
    /// places of the schemas it reaches, proven to compile.
    pub(crate) fn contract_ref(
        &self,
        operation: &str,
        status: Option<u16>,
        media_type: Option<&str>,
    ) -> Result<ContractRef, ContractError> {
        let (method, path) = crate::contract_data::parse_operation(operation)?;
        let label = format!("{method} {path}");
        let paths = self.root.get("paths").and_then(Value::as_object);
        let no_op = || ContractError::NoOperation {
            operation: label.clone(),
            hint: self.operation_hint(&method, &path),
        };
        let paths = paths.ok_or_else(no_op)?;
        let wanted = template_shape(&path);
        let (path_key, item) = paths
            .get_key_value(&path)
            .or_else(|| paths.iter().find(|(k, _)| template_shape(k) == wanted))
            .ok_or_else(no_op)?;
        let (item, item_at) = self.deref(item, pointer(&["paths", path_key]))?;
        let lower = method.to_ascii_lowercase();
        let op = item
            .get(&lower)
            .filter(|v| v.is_object())
            .ok_or_else(no_op)?;
        // An operation written as a `$ref`: into the document it is followed; into another
        // file it is refused, naming the reference (never "no 2xx response").
        let mut op_at = item_at.clone();
        op_at.push(lower.clone());
        let (op, _) = self.deref(op, op_at)?;
        let label = format!("{method} {path_key}");
        let responses = op.get("responses").and_then(Value::as_object);
        let keys = || {
            let mut keys: Vec<String> = responses
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            keys.sort();
            if keys.is_empty() {
                "none".to_owned()
            } else {
                keys.join(", ")
            }
        };
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
                .find(|k| responses.is_some_and(|m| m.contains_key(k)))
                .ok_or_else(|| ContractError::NoStatus {
                    operation: label.clone(),
                    status: exact,
                    statuses: keys(),
                })?
            }
            None => {
                let mut success: Vec<&String> = responses
                    .map(|m| m.keys().filter(|k| is_success_key(k)).collect())
                    .unwrap_or_default();
                success.sort_by_key(|k| (k.as_str() != "200", k.to_ascii_uppercase()));
                success
                    .first()
                    .map(|k| (*k).clone())
                    .ok_or_else(|| ContractError::NoSuccess {
                        operation: label.clone(),
                        statuses: keys(),
                    })?
            }
        };
        let mut at = item_at;
        at.extend([lower, "responses".to_owned(), status_key.clone()]);
        let raw = responses
            .and_then(|m| m.get(&status_key))
            .ok_or_else(|| ContractError::Ref(encode_pointer(&at)))?;
        let (response, response_at) = self.deref(raw, at)?;
        let content = response.get("content").and_then(Value::as_object);
        let all: Vec<String> = content
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default();
        let no_schema = || ContractError::NoSchema {
            operation: label.clone(),
            status: status_key.clone(),
            media_types: if all.is_empty() {
                "none".into()
            } else {
                all.join(", ")
            },
        };
        // The schema of each usable media type, and where it is.
        let mut media: Vec<(String, Pointer)> = Vec::new();
        for (name, object) in content.into_iter().flatten() {
            if !is_contract_media(name) {
                continue;
            }
            let mut object_at = response_at.clone();
            object_at.extend(["content".to_owned(), name.clone()]);
            let (object, object_at) = self.deref(object, object_at)?;
            let Some(schema) = object.get("schema") else {
                continue;
            };
            let mut schema_at = object_at;
            schema_at.push("schema".to_owned());
            // A schema that is only a `$ref` is pointed at directly.
            let target = match schema.as_object() {
                Some(m) if m.len() == 1 => match m.get("$ref").and_then(Value::as_str) {
                    Some(r) => {
                        let target = parse_ref(r, &schema_at)?;
                        self.get(&target)
                            .ok_or_else(|| ContractError::Ref(r.to_owned()))?;
                        target
                    }
                    None => schema_at,
                },
                _ => schema_at,
            };
            media.push((name.clone(), target));
        }
        if media.is_empty() {
            return Err(no_schema());
        }
        let names: Vec<String> = media.iter().map(|(n, _)| n.clone()).collect();
        let default = match media_type {
            Some(wanted) => {
                select_media_type(&names, wanted).ok_or_else(|| ContractError::NoMediaType {
                    operation: label.clone(),
                    status: status_key.clone(),
                    wanted: wanted.to_owned(),
                    media_types: names.join(", "),
                })?
            }
            None => default_media_type(&names).unwrap_or(0),
        };
        let roots = self.reach(&media)?;
        let contract = Contract {
            method,
            path: path_key.clone(),
            status: status_key,
            schema: self.root_of(&media, default),
        };
        self.prove(&contract, &roots)?;
        Ok(ContractRef { contract, roots })
    }

    /// The contract with its schemas: the reference resolved against the schemas it reaches.
    pub(crate) fn contract(
        &self,
        operation: &str,
        status: Option<u16>,
        media_type: Option<&str>,
    ) -> Result<Contract, ContractError> {
        let r = self.contract_ref(operation, status, media_type)?;
        let set = self.placed(&r.roots)?;
        r.contract.resolve(set)
    }

    /// The schema set of several contracts of this document: every schema one of them reaches,
    /// once, translated, at its place.
    pub(crate) fn schema_set(&self, refs: &[&ContractRef]) -> Result<SchemaSet, ContractError> {
        let all: Vec<Pointer> = refs.iter().flat_map(|r| r.roots.iter().cloned()).collect();
        let document = self.placed(&outermost(all))?;
        Ok(SchemaSet::of(&document))
    }

    /// What to suggest when an operation is not found: the methods the path has, or a few
    /// operations of the document.
    fn operation_hint(&self, method: &str, path: &str) -> String {
        let Some(paths) = self.root.get("paths").and_then(Value::as_object) else {
            return "the document has no `paths`".into();
        };
        let wanted = template_shape(path);
        if let Some((key, item)) = paths.iter().find(|(k, _)| template_shape(k) == wanted) {
            let methods: Vec<String> = METHODS
                .iter()
                .filter(|m| item.get(**m).is_some())
                .map(|m| m.to_ascii_uppercase())
                .collect();
            if !methods.is_empty() {
                return format!("{key} has {}; pass one of them", methods.join(", "));
            }
        }
        let mut near: Vec<&String> = paths
            .keys()
            .filter(|k| {
                let last = path.rsplit('/').find(|s| !s.is_empty()).unwrap_or(path);
                k.contains(last)
            })
            .take(3)
            .collect();
        if near.is_empty() {
            near = paths.keys().take(3).collect();
        }
        let shown: Vec<String> = near.iter().map(|p| format!("{method} {p}")).collect();
        format!(
            "pass one of the document's {} paths, e.g. {}",
            paths.len(),
            shown.join(", ")
        )
    }

    /// The value at a pointer.
    fn get(&self, at: &[String]) -> Option<&'a Value> {
        let mut v: &'a Value = self.root;
        for seg in at {
            v = match v {
                Value::Object(m) => m.get(seg)?,
                Value::Array(items) => items.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(v)
    }

    /// Follows `$ref`s of OpenAPI objects (path items, responses, media types): the object and
    /// where it is.
    fn deref(
        &self,
        mut value: &'a Value,
        mut at: Pointer,
    ) -> Result<(&'a Value, Pointer), ContractError> {
        for _ in 0..MAX_REF_HOPS {
            match value.get("$ref").and_then(Value::as_str) {
                Some(r) => {
                    let target = parse_ref(r, &at)?;
                    value = self
                        .get(&target)
                        .ok_or_else(|| ContractError::Ref(r.to_owned()))?;
                    at = target;
                }
                None => return Ok((value, at)),
            }
        }
        Err(ContractError::Ref(format!(
            "{} (a cycle of references)",
            encode_pointer(&at)
        )))
    }

    /// The outermost places of the schemas the media types' schemas reach through `$ref`s
    /// (themselves included), sorted.
    fn reach(&self, media: &[(String, Pointer)]) -> Result<Vec<Pointer>, ContractError> {
        let mut seen: HashSet<Pointer> = HashSet::new();
        let mut queue: Vec<Pointer> = Vec::new();
        for (_, at) in media {
            if seen.insert(at.clone()) {
                queue.push(at.clone());
            }
        }
        while let Some(at) = queue.pop() {
            for target in self.ref_targets(&at)?.iter() {
                if seen.insert(target.clone()) {
                    queue.push(target.clone());
                }
            }
        }
        Ok(outermost(seen.into_iter().collect()))
    }

    /// The translated schemas at `roots`, each at its place.
    fn placed(&self, roots: &[Pointer]) -> Result<Value, ContractError> {
        let mut out = Value::Object(Map::new());
        for at in roots {
            place(&mut out, at, self.translated(at)?.value.clone());
        }
        Ok(out)
    }

    /// The root of a contract's schema: a `$ref` to the default media type's schema, and
    /// `x-apidrift` naming the media types and where their (translated) schemas are.
    fn root_of(&self, media: &[(String, Pointer)], default: usize) -> Value {
        let mut media_map = Map::new();
        for (name, at) in media {
            media_map.insert(
                name.clone(),
                Value::String(encode_pointer(&self.relocate(at))),
            );
        }
        let mut root = Map::new();
        let (default_name, default_at) = &media[default];
        root.insert(
            "$ref".into(),
            Value::String(encode_pointer(&self.relocate(default_at))),
        );
        let mut meta = Map::new();
        meta.insert("mediaType".into(), Value::String(default_name.clone()));
        meta.insert("mediaTypes".into(), Value::Object(media_map));
        root.insert(MEDIA_KEY.into(), Value::Object(meta));
        Value::Object(root)
    }

    fn memo(&self) -> Option<std::sync::MutexGuard<'a, Memo>> {
        self.memo
            .map(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The targets of the `$ref`s of the schema at `at`, each checked to exist.
    fn ref_targets(&self, at: &Pointer) -> Result<Arc<[Pointer]>, ContractError> {
        if let Some(hit) = self.memo().and_then(|m| m.refs.get(at).cloned()) {
            return Ok(hit);
        }
        let schema = self
            .get(at)
            .ok_or_else(|| ContractError::Ref(encode_pointer(at)))?;
        let mut refs = Vec::new();
        collect_refs(schema, &mut at.clone(), &mut refs, 0)?;
        let mut targets = Vec::with_capacity(refs.len());
        for (r, from) in refs {
            let target = parse_ref(&r, &from)?;
            if self.get(&target).is_none() {
                return Err(ContractError::Ref(r));
            }
            targets.push(target);
        }
        let targets: Arc<[Pointer]> = targets.into();
        if let Some(mut m) = self.memo() {
            m.refs.insert(at.clone(), Arc::clone(&targets));
        }
        Ok(targets)
    }

    /// The translated copy of the schema at `at`.
    fn translated(&self, at: &Pointer) -> Result<Arc<Translated>, ContractError> {
        if let Some(hit) = self.memo().and_then(|m| m.translated.get(at).cloned()) {
            return Ok(hit);
        }
        let schema = self
            .get(at)
            .ok_or_else(|| ContractError::Ref(encode_pointer(at)))?;
        let mut value = schema.clone();
        translate(&mut value, self.v30, 0);
        self.rewrite_refs(&mut value, 0);
        let t = Arc::new(Translated { value });
        if let Some(mut m) = self.memo() {
            m.translated.insert(at.clone(), Arc::clone(&t));
        }
        Ok(t)
    }

    /// Where a pointer of the document is in the translated copy: below each schema that
    /// translation wraps (see [`wraps`]), the schema is under `anyOf/1`.
    fn relocate(&self, at: &[String]) -> Pointer {
        let mut out = Vec::with_capacity(at.len());
        let mut node = Some(self.root);
        for (i, seg) in at.iter().enumerate() {
            node = node.and_then(|n| match n {
                Value::Object(m) => m.get(seg),
                Value::Array(items) => items.get(seg.parse::<usize>().ok()?),
                _ => None,
            });
            out.push(seg.clone());
            if i + 1 < at.len() && node.and_then(Value::as_object).is_some_and(wraps) {
                out.push("anyOf".into());
                out.push("1".into());
            }
        }
        out
    }

    /// Rewrites each `$ref` of a translated copy that points below a wrapped schema.
    fn rewrite_refs(&self, value: &mut Value, depth: usize) {
        if depth > MAX_SCHEMA_DEPTH {
            return;
        }
        let Value::Object(m) = value else { return };
        if let Some(Value::String(r)) = m.get_mut("$ref")
            && let Ok(target) = parse_ref(r, &[])
        {
            let moved = self.relocate(&target);
            if moved.len() != target.len() {
                *r = encode_pointer(&moved);
            }
        }
        each_subschema_mut(m, |_, sub| self.rewrite_refs(sub, depth + 1));
    }

    /// Proves that the contract compiles. With a memo, only the schemas no earlier contract
    /// compiled are compiled, the others standing in as `{}`; if that is not conclusive (a
    /// `$ref` into a stand-in), the whole contract is compiled.
    fn prove(&self, contract: &Contract, roots: &[Pointer]) -> Result<(), ContractError> {
        let (new, old): (Vec<&Pointer>, Vec<&Pointer>) = match self.memo() {
            None => {
                return contract
                    .clone()
                    .resolve(self.placed(roots)?)?
                    .validator()
                    .map(|_| ());
            }
            Some(m) => roots.iter().partition(|r| !m.proven.contains(*r)),
        };
        if new.is_empty() {
            return Ok(());
        }
        let mut conclusive = false;
        if !old.is_empty() {
            let mut proof = Value::Object(Map::new());
            for at in &new {
                place(&mut proof, at, self.translated(at)?.value.clone());
            }
            for at in &old {
                place(&mut proof, at, Value::Object(Map::new()));
            }
            let any: Vec<Value> = new
                .iter()
                .map(|at| {
                    let mut m = Map::new();
                    m.insert("$ref".into(), Value::String(encode_pointer(at)));
                    Value::Object(m)
                })
                .collect();
            if let Some(root) = proof.as_object_mut() {
                root.insert("anyOf".into(), Value::Array(any));
            }
            let probe = Contract {
                method: String::new(),
                path: String::new(),
                status: String::new(),
                schema: proof,
            };
            conclusive = probe.validator().is_ok();
        }
        if !conclusive {
            contract.clone().resolve(self.placed(roots)?)?.validator()?;
        }
        if let Some(mut m) = self.memo() {
            m.proven.extend(new.into_iter().cloned());
        }
        Ok(())
    }
}

/// Only the outermost of nested pointers, sorted.
fn outermost(mut targets: Vec<Pointer>) -> Vec<Pointer> {
    targets.sort();
    targets.dedup();
    let mut roots: Vec<Pointer> = Vec::new();
    for t in targets {
        if roots.last().is_some_and(|r| t.starts_with(r)) {
            continue;
        }
        roots.push(t);
    }
    roots
}

/// Parses JSON (when the text starts with `{`) or YAML into a `serde_json::Value`.
pub(crate) fn parse_document(bytes: &[u8]) -> Result<Value, ContractError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return serde_json::from_slice(bytes).map_err(|e| ContractError::Document(e.to_string()));
    }
    // The YAML parser's cost grows with the flow nesting depth: bound it before it runs.
    crate::yaml_guard::check(bytes).map_err(ContractError::Document)?;
    serde_yaml_ng::from_slice::<Value>(bytes)
        .map_err(|e| ContractError::Document(e.to_string().lines().next().unwrap_or("").to_owned()))
}

fn pointer(segs: &[&str]) -> Pointer {
    segs.iter().map(|s| (*s).to_owned()).collect()
}

/// `200`, `201`, `2XX`.
fn is_success_key(key: &str) -> bool {
    key.len() == 3
        && key.starts_with('2')
        && (key[1..].eq_ignore_ascii_case("XX") || key.bytes().all(|b| b.is_ascii_digit()))
}

/// JSON media types and the wildcards that cover JSON.
fn is_contract_media(name: &str) -> bool {
    is_json_media_type(name) || matches!(media_type(name).as_str(), "*/*" | "application/*")
}

/// `/users/{id}` and `/users/{userId}` are the same template.
pub(crate) fn template_shape(path: &str) -> String {
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

/// The `+json` family of a media type: lower case, parameters and version segments (`.v3`)
/// dropped, e.g. `application/vnd.github.v3.star+json` → `application/vnd.github.star+json`.
fn family(media: &str) -> Option<String> {
    let m = media_type(media);
    let base = m.strip_suffix("+json")?;
    let (ty, sub) = base.split_once('/')?;
    let kept: Vec<&str> = sub
        .split('.')
        .filter(|s| {
            !(s.len() > 1 && s.starts_with('v') && s[1..].bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    Some(format!("{ty}/{}+json", kept.join(".")))
}

/// Picks the media type of `available` a response of type `wanted` is checked against: the
/// exact type, then one of the same `+json` family, then `application/json`, then a wildcard
/// (`application/*`, `*/*`). Parameters and case are ignored.
pub(crate) fn select_media_type(available: &[String], wanted: &str) -> Option<usize> {
    let w = media_type(wanted);
    if let Some(i) = available.iter().position(|a| media_type(a) == w) {
        return Some(i);
    }
    if let Some(f) = family(&w)
        && let Some(i) = available
            .iter()
            .position(|a| family(a).as_deref() == Some(f.as_str()))
    {
        return Some(i);
    }
    if let Some(i) = available
        .iter()
        .position(|a| media_type(a) == "application/json")
    {
        return Some(i);
    }
    let top = w.split('/').next().unwrap_or("");
    available.iter().position(|a| {
        let a = media_type(a);
        a == "*/*" || a.strip_suffix("/*").is_some_and(|t| t == top)
    })
}

/// The media type used when the response's is unknown: `application/json`, else the first
/// `+json` one, else the first wildcard.
pub(crate) fn default_media_type(available: &[String]) -> Option<usize> {
    available
        .iter()
        .position(|a| media_type(a) == "application/json")
        .or_else(|| available.iter().position(|a| is_json_media_type(a)))
        .or_else(|| (!available.is_empty()).then_some(0))
}

/// Splits a `$ref` into the pointer it names within the document; `at` is where it was found
/// (for the message). A reference into another file or URL is refused.
fn parse_ref(reference: &str, at: &[String]) -> Result<Pointer, ContractError> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(ContractError::ExternalRef {
            reference: reference.to_owned(),
            at: encode_pointer(at),
        });
    };
    if fragment.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = fragment.strip_prefix('/') else {
        return Err(ContractError::Ref(format!(
            "{reference} (anchors are not supported; use a JSON pointer such as #/components/schemas/Name)"
        )));
    };
    Ok(rest
        .split('/')
        .map(|s| percent_decode(s).replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// `#/a/b~1c`, percent-encoded where a URI fragment needs it (`{id}` → `%7Bid%7D`).
pub(crate) fn encode_pointer(at: &[String]) -> String {
    let mut out = String::from("#");
    for seg in at {
        out.push('/');
        for b in seg.bytes() {
            match b {
                b'~' => out.push_str("~0"),
                b'/' => out.push_str("~1"),
                b'A'..=b'Z'
                | b'a'..=b'z'
                | b'0'..=b'9'
                | b'-'
                | b'.'
                | b'_'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@' => out.push(char::from(b)),
                other => out.push_str(&format!("%{other:02X}")),
            }
        }
    }
    out
}

/// Schema keywords whose value is a schema, a map of schemas or a list of schemas.
enum Sub {
    One,
    Map,
    List,
    OneOrList,
}

const SUBSCHEMAS: [(&str, Sub); 21] = [
    ("properties", Sub::Map),
    ("patternProperties", Sub::Map),
    ("additionalProperties", Sub::One),
    ("unevaluatedProperties", Sub::One),
    ("propertyNames", Sub::One),
    ("items", Sub::OneOrList),
    ("prefixItems", Sub::List),
    ("additionalItems", Sub::One),
    ("unevaluatedItems", Sub::One),
    ("contains", Sub::One),
    ("allOf", Sub::List),
    ("anyOf", Sub::List),
    ("oneOf", Sub::List),
    ("not", Sub::One),
    ("if", Sub::One),
    ("then", Sub::One),
    ("else", Sub::One),
    ("dependentSchemas", Sub::Map),
    ("$defs", Sub::Map),
    ("definitions", Sub::Map),
    ("contentSchema", Sub::One),
];

/// Calls `f` on each direct subschema of a schema object with its pointer segments.
fn each_subschema_mut(m: &mut Map<String, Value>, mut f: impl FnMut(&[&str], &mut Value)) {
    for (key, kind) in &SUBSCHEMAS {
        let Some(v) = m.get_mut(*key) else { continue };
        match (kind, v) {
            (Sub::Map, Value::Object(map)) => {
                for (name, s) in map.iter_mut() {
                    f(&[key, name], s);
                }
            }
            (Sub::List | Sub::OneOrList, Value::Array(items)) => {
                for (i, s) in items.iter_mut().enumerate() {
                    f(&[key, &i.to_string()], s);
                }
            }
            (Sub::One | Sub::OneOrList, s @ (Value::Object(_) | Value::Bool(_))) => f(&[key], s),
            _ => {}
        }
    }
}

fn each_subschema(m: &Map<String, Value>, mut f: impl FnMut(&[&str], &Value)) {
    for (key, kind) in &SUBSCHEMAS {
        let Some(v) = m.get(*key) else { continue };
        match (kind, v) {
            (Sub::Map, Value::Object(map)) => {
                for (name, s) in map {
                    f(&[key, name], s);
                }
            }
            (Sub::List | Sub::OneOrList, Value::Array(items)) => {
                for (i, s) in items.iter().enumerate() {
                    f(&[key, &i.to_string()], s);
                }
            }
            (Sub::One | Sub::OneOrList, s @ (Value::Object(_) | Value::Bool(_))) => f(&[key], s),
            _ => {}
        }
    }
}

/// The `$ref`s of a schema (not of its examples or enum values), each with where it is.
fn collect_refs(
    schema: &Value,
    at: &mut Pointer,
    out: &mut Vec<(String, Pointer)>,
    depth: usize,
) -> Result<(), ContractError> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(ContractError::Schema(format!(
            "the schema at {} nests deeper than {MAX_SCHEMA_DEPTH} levels",
            encode_pointer(at)
        )));
    }
    let Value::Object(m) = schema else {
        return Ok(());
    };
    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
        out.push((r.to_owned(), at.clone()));
    }
    let mut result = Ok(());
    each_subschema(m, |segs, sub| {
        if result.is_err() {
            return;
        }
        let n = at.len();
        at.extend(segs.iter().map(|s| (*s).to_owned()));
        result = collect_refs(sub, at, out, depth + 1);
        at.truncate(n);
    });
    result
}

/// Translates one schema of an OpenAPI document to JSON Schema 2020-12, in place, as contracts
/// do:
///
/// * OpenAPI 3.0 `nullable: true` admits `null` wherever it sits: added to `type` and `enum`,
///   and when the schema holds `$ref`, `allOf`, `anyOf`, `oneOf`, `not` or `const` (whose
///   subschemas would refuse `null`), the schema becomes `{"anyOf": [{"type": "null"}, S]}`.
///   A 3.1 document that still carries `nullable: true` (converted from 3.0) is read the same
///   way ([`OpenApiDocument::lenient_readings`] lists where).
/// * 3.0 boolean `exclusiveMinimum`/`exclusiveMaximum` become the 2020-12 numbers, in a 3.1
///   document too; the siblings of a 3.0 `$ref` other than `nullable` are dropped (3.0 ignores
///   them).
/// * A name listed twice in `required` is required once.
/// * In both versions, a `writeOnly` property is not required in a response, and the
///   annotations that never change validity (`description`, `title`, `example(s)`, `default`,
///   `x-…`, …) are dropped.
///
/// Enum and const values are left alone. Idempotent.
///
/// ```
/// use apidrift_diff::contract::translate_schema;
/// let mut schema = serde_json::json!({"type": "string", "nullable": true, "description": "x"});
/// translate_schema(&mut schema, true);
/// assert_eq!(schema, serde_json::json!({"type": ["string", "null"]}));
/// ```
pub fn translate_schema(schema: &mut Value, openapi_30: bool) {
    translate(schema, openapi_30, 0);
}

/// True when the 3.0 translation wraps this schema in `{"anyOf": [{"type": "null"}, S]}`:
/// `nullable: true` beside `$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `const` or `if`.
fn wraps(m: &Map<String, Value>) -> bool {
    m.get("nullable") == Some(&Value::Bool(true))
        && ["$ref", "allOf", "anyOf", "oneOf", "not", "const", "if"]
            .iter()
            .any(|k| m.contains_key(*k))
}

fn translate(value: &mut Value, v30: bool, depth: usize) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let Value::Object(m) = value else { return };
    // `nullable` is a 3.0 keyword; a 3.1 document converted from 3.0 often still carries it,
    // and its author meant null to be allowed: it is read as 3.0 reads it in both versions
    // (see `OpenApiDocument::lenient_readings`).
    let nullable = m.get("nullable") == Some(&Value::Bool(true));
    let wrap = wraps(m);
    m.remove("nullable");
    if v30 && m.contains_key("$ref") {
        m.retain(|k, _| k == "$ref");
        if wrap {
            let inner = std::mem::take(m);
            *value = null_or(Value::Object(inner));
        }
        return;
    }
    // The 3.0 (draft 4) boolean bounds, also when a 3.1 document kept them: the neighbouring
    // `minimum`/`maximum` becomes exclusive. In 3.1 the boolean form is invalid JSON Schema, so
    // reading it this way changes no valid document.
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
    dedupe_required(m);
    drop_write_only_required(m);
    m.retain(|k, _| !is_annotation(k));
    each_subschema_mut(m, |_, sub| translate(sub, v30, depth + 1));
    if wrap {
        let inner = std::mem::take(m);
        *value = null_or(Value::Object(inner));
        return;
    }
    if !nullable {
        return;
    }
    match m.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            m.insert(
                "type".into(),
                Value::Array(vec![Value::String(t), "null".into()]),
            );
        }
        Some(Value::Array(ts)) if !ts.contains(&Value::from("null")) => ts.push("null".into()),
        _ => {}
    }
    if let Some(Value::Array(values)) = m.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// Keywords that never change whether a value is valid: not kept in a contract (Stripe's
/// descriptions alone are most of its document).
fn is_annotation(keyword: &str) -> bool {
    keyword.starts_with("x-")
        || matches!(
            keyword,
            "description"
                | "title"
                | "example"
                | "examples"
                | "externalDocs"
                | "xml"
                | "deprecated"
                | "default"
                | "readOnly"
                | "writeOnly"
                | "discriminator"
                | "$comment"
        )
}

/// Collects the 3.0 forms of a 3.1 document (see [`OpenApiDocument::lenient_readings`]):
/// every object but the values of examples, defaults, enums and consts, which are data.
fn lenient_forms(value: &Value, at: &mut Vec<String>, found: &mut Vec<String>, depth: usize) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    match value {
        Value::Object(m) => {
            let here = || encode_pointer(at);
            if m.get("nullable") == Some(&Value::Bool(true)) {
                found.push(format!(
                    "{}: `nullable: true` is a 3.0 keyword; read as 3.0 reads it (null is allowed)",
                    here()
                ));
            }
            for flag in ["exclusiveMinimum", "exclusiveMaximum"] {
                if let Some(Value::Bool(on)) = m.get(flag) {
                    found.push(format!(
                        "{}: boolean `{flag}: {on}` is the 3.0 form; read as 3.0 reads it{}",
                        here(),
                        if *on {
                            " (the neighbouring bound is exclusive)"
                        } else {
                            ""
                        }
                    ));
                }
            }
            for (k, v) in m {
                if matches!(
                    k.as_str(),
                    "example" | "examples" | "default" | "enum" | "const"
                ) || k.starts_with("x-")
                {
                    continue;
                }
                at.push(k.clone());
                lenient_forms(v, at, found, depth + 1);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                at.push(i.to_string());
                lenient_forms(v, at, found, depth + 1);
                at.pop();
            }
        }
        _ => {}
    }
}

/// A name listed twice in `required` (`[id, name, id]`, seen in publishers' documents) is
/// required once: JSON Schema wants the names unique, and the validator misreads the list
/// otherwise.
fn dedupe_required(m: &mut Map<String, Value>) {
    if let Some(Value::Array(names)) = m.get_mut("required") {
        let mut seen = std::collections::HashSet::new();
        names.retain(|n| seen.insert(n.to_string()));
    }
}

/// `{"anyOf": [{"type": "null"}, schema]}`: the schema moves to `anyOf/1`.
fn null_or(schema: Value) -> Value {
    let mut null = Map::new();
    null.insert("type".into(), "null".into());
    let mut m = Map::new();
    m.insert(
        "anyOf".into(),
        Value::Array(vec![Value::Object(null), schema]),
    );
    Value::Object(m)
}

/// A `writeOnly` property "SHOULD NOT be sent as part of the response": not required there.
fn drop_write_only_required(m: &mut Map<String, Value>) {
    let write_only: Vec<String> = match m.get("properties").and_then(Value::as_object) {
        Some(props) => props
            .iter()
            .filter(|(_, s)| s.get("writeOnly") == Some(&Value::Bool(true)))
            .map(|(k, _)| k.clone())
            .collect(),
        None => return,
    };
    if write_only.is_empty() {
        return;
    }
    if let Some(Value::Array(required)) = m.get_mut("required") {
        required.retain(|r| {
            r.as_str()
                .is_none_or(|r| !write_only.iter().any(|w| w == r))
        });
    }
}

/// Puts `value` at `at` in `out`, creating the containers on the way as objects (a JSON pointer
/// segment `0` names the member `"0"` of an object as well as the first item of an array).
fn place(out: &mut Value, at: &[String], value: Value) {
    let mut node = out;
    for seg in at {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        let Value::Object(m) = node else { return };
        node = m
            .entry(seg.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    *node = value;
}

/// The media types of a stored contract, with their schema pointers, and the default one.
pub(crate) fn stored_media(schema: &Value) -> Option<(&str, Vec<(&str, &str)>)> {
    let meta = schema.get(MEDIA_KEY)?;
    let default = meta.get("mediaType")?.as_str()?;
    let list = meta
        .get("mediaTypes")?
        .as_object()?
        .iter()
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
        .collect();
    Some((default, list))
}
