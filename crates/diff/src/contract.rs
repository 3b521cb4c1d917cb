//! Response contracts: the JSON schema of one operation's response, taken from an OpenAPI 3.0 or
//! 3.1 document (JSON or YAML) through [`OpenApiDocument`], pruned to the schemas the response
//! reaches and translated once to JSON Schema 2020-12 ([`translate_schema`]). A [`Contract`] is plain data
//! (the schema is a `serde_json::Value`) so that it can be stored; [`Contract::validator_for`]
//! compiles it for the response's media type with `jsonschema` (no network or file resolvers)
//! and [`ContractValidator::check`] reports each violation as a `contract_violation` change.
//!
//! Where a violation is reported:
//! * at the instance path of the failing value (`$.items[3].id`); a missing required member or a
//!   member the schema forbids at the member's own path (`$.email`);
//! * for a failing `anyOf`/`oneOf`, at the paths of the best-matching alternative's violations
//!   (the one whose type fits, whose `object`-like enum members match, with the fewest
//!   violations), never at the parent with the whole value; when no alternative has the value's
//!   type, once at the value: `expected string or object, got integer`;
//! * each change id is the first 16 hex digits of SHA-256 of `path type keywordPath`, so two
//!   violations at one path keep distinct ids.
//!
//! A `oneOf` that more than one alternative satisfies is accepted (published documents often
//! have overlapping alternatives); `format` is an annotation, not checked.
//!
//! ```
//! use apidrift_diff::Options;
//! use apidrift_diff::contract::OpenApiDocument;
//! let document = OpenApiDocument::parse(br#"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
//!   "paths": {"/users/{id}": {"get": {"responses": {"200": {"description": "ok",
//!     "content": {"application/json": {"schema": {"type": "object", "required": ["id"],
//!       "properties": {"id": {"type": "integer"}, "email": {"type": "string", "nullable": true}}}}}}}}}}}"#)?;
//! let contract = document.contract("GET /users/{id}", None, None)?;
//! let validator = contract.validator_for(Some("application/json"))?;
//! let report = validator.check(&serde_json::json!({"id": "7", "email": null}), &Options::default());
//! assert_eq!(report.changes.len(), 1);
//! assert_eq!(report.changes[0].path, "$.id");
//! assert_eq!(report.changes[0].change_type, apidrift_diff::ChangeType::ContractViolation);
//! # Ok::<(), apidrift_diff::contract::ContractError>(())
//! ```

pub use crate::contract_data::{
    Contract, ContractError, ContractRef, SchemaSet, parse_operation, sha256_hex,
};
use crate::openapi::select_media_type;
pub use crate::openapi::{OpenApiDocument, Operation, SuccessResponse, translate_schema};

use crate::Options;
use crate::node::{JsonNode, type_name};
use crate::openapi::stored_media;
use crate::path::Seg;
use crate::report::Report;
use crate::rules::Rule;
use apidrift_model::DiffChange;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError};
use serde_json::Value;
use std::collections::HashSet;

/// A compiled contract, for one media type.
pub struct ContractValidator {
    validator: jsonschema::Validator,
    media_type: Option<String>,
}

impl std::fmt::Debug for ContractValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContractValidator")
            .field("media_type", &self.media_type)
            .finish_non_exhaustive()
    }
}

/// Parses an OpenAPI document written in JSON or YAML into a `serde_json::Value` (no version
/// check; [`OpenApiDocument::parse`] checks it).
pub fn parse_openapi(text: &str) -> Result<Value, ContractError> {
    crate::openapi::parse_document(text.as_bytes())
}

impl Contract {
    /// Parses a document and builds the contract of `operation` (`GET /users/{id}`) for
    /// `status` (default: the operation's `200`, else its first 2xx response). To build several
    /// contracts, parse once with [`OpenApiDocument::parse`] and call
    /// [`OpenApiDocument::contract`].
    pub fn from_openapi(
        document: &str,
        operation: &str,
        status: Option<u16>,
    ) -> Result<Contract, ContractError> {
        OpenApiDocument::parse(document.as_bytes())?.contract(operation, status, None)
    }

    /// As [`Contract::from_openapi`], from a parsed document.
    pub fn from_document(
        doc: &Value,
        operation: &str,
        status: Option<u16>,
    ) -> Result<Contract, ContractError> {
        crate::openapi::View::of(doc)?.contract(operation, status, None)
    }

    /// Compiles the schema for its default media type.
    pub fn validator(&self) -> Result<ContractValidator, ContractError> {
        let media = stored_media(&self.schema).map(|(d, _)| d.to_owned());
        compile(&self.schema, media, &self.operation())
    }

    /// Compiles the schema for a response of this content type: the media type that
    /// [`Contract::select_media_type`] picks among the contract's, else the default one.
    pub fn validator_for(
        &self,
        content_type: Option<&str>,
    ) -> Result<ContractValidator, ContractError> {
        let chosen = content_type.and_then(|ct| self.select_media_type(ct));
        let Some((default, list)) = stored_media(&self.schema) else {
            return self.validator();
        };
        match chosen {
            Some(name) if name != default => {
                let pointer = list
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, p)| (*p).to_owned())
                    .ok_or_else(|| ContractError::Schema(format!("no schema for {name}")))?;
                let mut schema = self.schema.clone();
                if let Some(root) = schema.as_object_mut() {
                    root.insert("$ref".into(), Value::String(pointer));
                }
                compile(&schema, Some(name), &self.operation())
            }
            _ => self.validator(),
        }
    }

    /// The media types the contract holds (empty for a contract stored without them).
    pub fn media_types(&self) -> Vec<String> {
        stored_media(&self.schema)
            .map(|(_, list)| list.iter().map(|(n, _)| (*n).to_owned()).collect())
            .unwrap_or_default()
    }

    /// The media type used when the response's is unknown.
    pub fn media_type(&self) -> Option<String> {
        stored_media(&self.schema).map(|(d, _)| d.to_owned())
    }

    /// The contract's media type a response of type `wanted` is checked against (exact, same
    /// `+json` family, `application/json`, wildcard), if any.
    pub fn select_media_type(&self, wanted: &str) -> Option<String> {
        let names = self.media_types();
        select_media_type(&names, wanted).and_then(|i| names.get(i).cloned())
    }

    /// `GET /users/{id}`.
    pub fn operation(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

fn compile(
    schema: &Value,
    media_type: Option<String>,
    operation: &str,
) -> Result<ContractValidator, ContractError> {
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(false)
        .build(schema)
        .map_err(|e| {
            // The schema is checked as an instance of the meta-schema: the error's instance
            // path is the refused schema's place, which the contract keeps where the document
            // has it.
            let at = e.instance_path().as_str().to_owned();
            let place = if at.is_empty() {
                String::new()
            } else {
                format!(" (at #{at}")
            };
            let reached = match (place.is_empty(), operation.trim().is_empty()) {
                (true, true) => String::new(),
                (true, false) => format!(" (reached from {operation})"),
                (false, true) => format!("{place})"),
                (false, false) => format!("{place}, reached from {operation})"),
            };
            ContractError::Schema(format!("{}{reached}", one_line(&e.to_string(), 300)))
        })?;
    Ok(ContractValidator {
        validator,
        media_type,
    })
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

/// One violation before it has a rendered path.
#[derive(Debug)]
struct Violation {
    /// The instance location (JSON pointer).
    pointer: String,
    /// A member of that object the violation is about (missing or forbidden).
    member: Option<String>,
    /// The schema keyword location (JSON pointer), with the member appended.
    keyword: String,
    message: String,
    /// The value's type is not one the schema allows: the expected types.
    expected: Option<Vec<String>>,
    /// An `enum` or `const` mismatch.
    value_mismatch: bool,
}

impl ContractValidator {
    /// The media type this validator checks (`None` for a contract stored without them).
    pub fn media_type(&self) -> Option<&str> {
        self.media_type.as_deref()
    }

    /// True when the body satisfies the contract.
    pub fn is_valid(&self, body: &Value) -> bool {
        self.validator.is_valid(body)
    }

    /// Validates a response body; each violation is a `contract_violation`/breaking change (see
    /// the module documentation for where), filtered by `options.ignore` and graded by
    /// `options.severity_overrides` (rule `contract-violation`).
    pub fn check(&self, body: &Value, options: &Options) -> Report {
        let mut found = Vec::new();
        for error in self.validator.iter_errors(body) {
            collect(&error, &mut found, 0);
        }
        let rule = Rule::ContractViolation;
        let mut seen: HashSet<(String, String)> = HashSet::new();
        let mut changes = Vec::new();
        for v in found {
            let (segs, at) = segments(body, &v.pointer, v.member.as_deref());
            let borrowed: Vec<Seg<'_>> = segs
                .iter()
                .map(|s| match s {
                    OwnedSeg::Key(k) => Seg::Key(k),
                    OwnedSeg::Index(i) => Seg::Index(*i),
                })
                .collect();
            if options
                .ignore
                .iter()
                .any(|p| p.matches_body(&borrowed, None))
            {
                continue;
            }
            let place = crate::overrides::At::Body(&borrowed, None);
            let Some(severity) = crate::overrides::apply(&options.severity_overrides, rule, place)
            else {
                continue;
            };
            let path = crate::path::render(&borrowed, None);
            if !seen.insert((path.clone(), v.keyword.clone())) {
                continue;
            }
            let id = violation_id(&path, &v.keyword);
            changes.push(DiffChange {
                id,
                path,
                change_type: rule.change_type(),
                severity,
                message: v.message,
                old_value: None,
                new_value: at.and_then(JsonNode::leaf_value).map(|(value, _)| value),
                old_type: None,
                new_type: at.map(|value| type_name(value).to_owned()),
            });
        }
        Report::from_changes(changes)
    }
}

/// The change id of a violation: the first 16 hex digits of SHA-256 of
/// `path + " contract_violation " + keywordPath`.
pub fn violation_id(path: &str, keyword_path: &str) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(path.as_bytes());
    ctx.update(b" ");
    ctx.update(Rule::ContractViolation.change_type().as_str().as_bytes());
    ctx.update(b" ");
    ctx.update(keyword_path.as_bytes());
    let digest = ctx.finish();
    digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

enum OwnedSeg {
    Key(String),
    Index(usize),
}

/// The body path of a JSON pointer (plus a member), and the value there if any.
fn segments<'b>(
    body: &'b Value,
    pointer: &str,
    member: Option<&str>,
) -> (Vec<OwnedSeg>, Option<&'b Value>) {
    let mut owned = Vec::new();
    let mut at = Some(body);
    let raw = pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"));
    for key in raw.chain(member.map(str::to_owned)) {
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
    (owned, at)
}

const MAX_BRANCH_DEPTH: usize = 64;

/// Turns one validation error into violations, choosing the best alternative of a failing
/// `anyOf`/`oneOf`.
fn collect(error: &ValidationError<'_>, out: &mut Vec<Violation>, depth: usize) {
    let pointer = error.instance_path().as_str().to_owned();
    let keyword = error.schema_path().as_str().to_owned();
    let plain = |message: String| Violation {
        pointer: pointer.clone(),
        member: None,
        keyword: keyword.clone(),
        message,
        expected: None,
        value_mismatch: false,
    };
    match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context }
            if depth < MAX_BRANCH_DEPTH =>
        {
            let mut best: Option<((bool, usize, usize), Vec<Violation>)> = None;
            let mut expected: Vec<String> = Vec::new();
            for branch in context {
                let mut found = Vec::new();
                for e in branch {
                    collect(e, &mut found, depth + 1);
                }
                let mut type_miss = false;
                for v in &found {
                    if v.pointer == pointer
                        && v.member.is_none()
                        && let Some(types) = &v.expected
                    {
                        type_miss = true;
                        for t in types {
                            if !expected.contains(t) {
                                expected.push(t.clone());
                            }
                        }
                    }
                }
                let discriminator = found
                    .iter()
                    .filter(|v| v.value_mismatch && is_child(&v.pointer, &pointer))
                    .count();
                let score = (type_miss, discriminator, found.len());
                if best.as_ref().is_none_or(|(s, _)| score < *s) {
                    best = Some((score, found));
                }
            }
            match best {
                Some(((false, _, _), found)) if !found.is_empty() => out.extend(found),
                _ => {
                    // `null` last: "expected string, object or null".
                    expected.sort_by_key(|t| t == "null");
                    let message = if expected.is_empty() {
                        format!("matches none of the {} alternatives", context.len().max(1))
                    } else {
                        format!(
                            "expected {}, got {}",
                            or_list(&expected),
                            type_name(error.instance().as_ref())
                        )
                    };
                    out.push(Violation {
                        expected: Some(expected),
                        ..plain(message)
                    });
                }
            }
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {}
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            out.push(Violation {
                member: Some(name.clone()),
                keyword: format!("{keyword}/{}", escape(&name)),
                ..plain("required member is missing".into())
            });
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            for name in unexpected {
                out.push(Violation {
                    member: Some(name.clone()),
                    keyword: format!("{keyword}/{}", escape(name)),
                    ..plain(format!(
                        "member not allowed by the contract ({})",
                        error.kind().keyword()
                    ))
                });
            }
        }
        ValidationErrorKind::Type { kind } => {
            let types: Vec<String> = match kind {
                TypeKind::Single(t) => vec![json_type(*t)],
                TypeKind::Multiple(set) => set.iter().map(json_type).collect(),
            };
            let message = format!(
                "expected {}, got {}",
                or_list(&types),
                type_name(error.instance().as_ref())
            );
            out.push(Violation {
                expected: Some(types),
                ..plain(message)
            });
        }
        ValidationErrorKind::Enum { .. } | ValidationErrorKind::Constant { .. } => {
            out.push(Violation {
                value_mismatch: true,
                ..plain(message_of(error))
            });
        }
        _ => out.push(plain(message_of(error))),
    }
}

fn json_type(t: JsonType) -> String {
    t.to_string()
}

fn is_child(pointer: &str, parent: &str) -> bool {
    pointer
        .strip_prefix(parent)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| !rest.contains('/'))
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[String]) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// A short value from the schema (an enum member, a limit) for a message.
fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= 40 {
        text
    } else {
        let mut t: String = text.chars().take(37).collect();
        t.push_str("...");
        t
    }
}

/// A one-line message that never repeats the response's value (the change carries leaf values).
fn message_of(error: &ValidationError<'_>) -> String {
    use ValidationErrorKind as K;
    match error.kind() {
        K::Enum { options } => {
            let list = options.as_array().map(Vec::as_slice).unwrap_or_default();
            let shown: Vec<String> = list.iter().take(3).map(short).collect();
            if list.len() > 3 {
                format!(
                    "not one of the {} allowed values ({}, …)",
                    list.len(),
                    shown.join(", ")
                )
            } else {
                format!("not one of the allowed values ({})", shown.join(", "))
            }
        }
        K::Constant { expected_value } => format!("expected {}", short(expected_value)),
        K::Minimum { limit } => format!("less than the minimum {limit}"),
        K::Maximum { limit } => format!("greater than the maximum {limit}"),
        K::ExclusiveMinimum { limit } => format!("not greater than {limit}"),
        K::ExclusiveMaximum { limit } => format!("not less than {limit}"),
        K::MinLength { limit } => format!("shorter than {limit} characters"),
        K::MaxLength { limit } => format!("longer than {limit} characters"),
        K::MinItems { limit } => format!("fewer than {limit} items"),
        K::MaxItems { limit } => format!("more than {limit} items"),
        K::MinProperties { limit } => format!("fewer than {limit} members"),
        K::MaxProperties { limit } => format!("more than {limit} members"),
        K::Pattern { pattern } => format!(
            "does not match the pattern {}",
            short(&Value::String(pattern.clone()))
        ),
        K::Format { format } => format!("not a valid {format}"),
        K::MultipleOf { multiple_of } => format!("not a multiple of {multiple_of}"),
        K::UniqueItems => "items are not unique".into(),
        K::Not { .. } => "matches a schema it must not match (not)".into(),
        K::FalseSchema => "no value is allowed here".into(),
        K::Contains => "no item matches the `contains` schema".into(),
        K::AdditionalItems { limit } => format!("more than the {limit} items the schema allows"),
        K::UnevaluatedItems { .. } => "items not allowed by the contract (unevaluatedItems)".into(),
        K::PropertyNames { .. } => "a member name is not allowed (propertyNames)".into(),
        _ => one_line(&error.masked().to_string(), 160),
    }
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

    /// A reference resolved against its schema set is the contract built with its schemas, and
    /// validates alike; the set holds each schema once, whatever the number of contracts, and
    /// its hash depends on the content only.
    #[test]
    fn references_resolve_to_the_contract_and_share_one_set() -> R {
        let doc = OpenApiDocument::parse(YAML_30.as_bytes())?;
        let users = doc.contract_ref("GET /users/{id}", None, None)?;
        let missing = doc.contract_ref("GET /users/{id}", Some(404), None)?;
        assert!(users.contract.schema.get("components").is_none());
        let set = doc.schema_set(&[&users, &missing])?;
        assert_eq!(set.hash.len(), 64);
        let parsed: serde_json::Value = serde_json::from_str(&set.document)?;
        assert!(parsed["components"]["schemas"]["User"].is_object());
        for (r, status) in [(&users, None), (&missing, Some(404))] {
            let inline = doc.contract("GET /users/{id}", status, None)?;
            let resolved = r.contract.clone().resolve(parsed.clone())?;
            let bad = json!({"id": "1", "email": null, "tags": [2], "title": 3});
            let (a, b) = (
                inline.validator()?.check(&bad, &Options::default()),
                resolved.validator()?.check(&bad, &Options::default()),
            );
            assert_eq!(a.changes, b.changes);
            assert_eq!(resolved.media_types(), inline.media_types());
        }
        // The same content gives the same text and hash, whatever the order it was built in.
        let again = OpenApiDocument::parse(YAML_30.as_bytes())?;
        let m = again.contract_ref("GET /users/{id}", Some(404), None)?;
        let u = again.contract_ref("GET /users/{id}", None, None)?;
        assert_eq!(again.schema_set(&[&m, &u])?, set);
        // One contract alone: a smaller set, another hash.
        assert_ne!(doc.schema_set(&[&users])?.hash, set.hash);
        // A set that is not an object is a clear error.
        assert!(users.contract.clone().resolve(json!([1])).is_err());
        Ok(())
    }

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
        assert_eq!(paths, vec!["$.age", "$.friend.email", "$.id", "$.tags[1]"]);
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
        assert!(err("swagger: '2.0'", "GET /a", None).contains("not an OpenAPI 3.0, 3.1 or 3.2"));
        assert!(err("{not json", "GET /a", None).contains("neither valid JSON nor valid YAML"));
        let no_schema = r#"{"openapi":"3.1.0","paths":{"/a":{"get":{"responses":{"200":{"description":"x"}}}}}}"#;
        assert!(err(no_schema, "GET /a", None).contains("no JSON content with a schema"));
        let bad_ref = r##"{"openapi":"3.1.0","paths":{"/a":{"get":{"responses":{"200":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Nope"}}}}}}}}}"##;
        assert!(!err(bad_ref, "GET /a", None).is_empty());
        let remote = r#"{"openapi":"3.1.0","paths":{"/a":{"get":{"responses":{"200":{"content":{"application/json":{"schema":{"$ref":"https://example.com/s.json"}}}}}}}}}"#;
        assert!(!err(remote, "GET /a", None).is_empty());
        assert!(err(r#"{"openapi":"4.0.0","paths":{}}"#, "GET /a", None).contains("is \"4.0.0\""));
    }

    /// OpenAPI 3.2 describes schemas as 3.1 does (JSON Schema 2020-12): its documents are read
    /// like 3.1 ones.
    #[test]
    fn a_32_document_is_read_like_31() -> Result<(), Box<dyn std::error::Error>> {
        let doc = r#"{"openapi":"3.2.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{
            "responses":{"200":{"description":"x","content":{"application/json":{"schema":{
            "type":"object","required":["id"],"properties":{"id":{"type":["integer","null"]}}}}}}}}}}}"#;
        let contract = Contract::from_openapi(doc, "GET /a", None)?;
        let validator = contract.validator()?;
        let ok = serde_json::json!({"id": null});
        assert!(validator.check(&ok, &Options::default()).changes.is_empty());
        let bad = serde_json::json!({"id": "x"});
        let report = validator.check(&bad, &Options::default());
        assert_eq!(report.changes.len(), 1);
        assert_eq!(report.changes[0].path, "$.id");
        Ok(())
    }
}

#[cfg(test)]
#[path = "contract_d21_tests.rs"]
mod d21_tests;
