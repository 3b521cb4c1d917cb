//! What a response contract is, apart from how it is read or checked: the [`Contract`] data, the
//! [`ContractError`] of building or compiling one, and the `METHOD /path` operation syntax. Both
//! the document reader (`openapi`) and the validator (`contract`) use it; users see it through
//! [`crate::contract`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a contract cannot be built or compiled. Each message is one line and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContractError {
    /// The document is neither JSON nor YAML; the parser's message.
    #[error(
        "the OpenAPI document is neither valid JSON nor valid YAML: {0}; fix the document there"
    )]
    Document(String),
    /// The document is not OpenAPI 3.0, 3.1 or 3.2; what its `openapi` member is.
    #[error(
        "not an OpenAPI 3.0, 3.1 or 3.2 document (`openapi` is {0}); convert it to OpenAPI 3 first (e.g. with swagger2openapi)"
    )]
    Version(String),
    /// The operation is not written `METHOD /path`; the text given.
    #[error("invalid operation {0:?}: expected \"METHOD /path\", e.g. \"GET /users/{{id}}\"")]
    OperationSyntax(String),
    /// The document has no such operation.
    #[error("operation {operation} is not in the document; {hint}")]
    NoOperation {
        /// The operation asked for (`GET /users/{id}`).
        operation: String,
        /// What the document has instead (the closest operations), as a sentence.
        hint: String,
    },
    /// The operation has no response for the status asked for.
    #[error(
        "operation {operation} has no response for status {status} (its responses: {statuses}); pass one of those"
    )]
    NoStatus {
        /// The operation.
        operation: String,
        /// The status asked for.
        status: String,
        /// The response keys it has, comma-separated.
        statuses: String,
    },
    /// No status was given and the operation has no 2xx response.
    #[error(
        "operation {operation} has no 2xx response (its responses: {statuses}); pass the status to check"
    )]
    NoSuccess {
        /// The operation.
        operation: String,
        /// The response keys it has, comma-separated.
        statuses: String,
    },
    /// The response has no JSON media type with a schema.
    #[error(
        "response {status} of {operation} has no JSON content with a schema (its media types: {media_types}); pick a response that is JSON"
    )]
    NoSchema {
        /// The operation.
        operation: String,
        /// The response key.
        status: String,
        /// The media types it has, comma-separated.
        media_types: String,
    },
    /// The response has no media type matching the one asked for.
    #[error(
        "response {status} of {operation} has no media type matching {wanted} (it has {media_types}); pass one of those"
    )]
    NoMediaType {
        /// The operation.
        operation: String,
        /// The response key.
        status: String,
        /// The media type asked for.
        wanted: String,
        /// The media types it has, comma-separated.
        media_types: String,
    },
    /// A `$ref` points at nothing in the document; the reference.
    #[error("cannot resolve $ref {0} within the document; fix the reference")]
    Ref(String),
    /// A `$ref` points into another file or a URL, which is never fetched.
    #[error(
        "the $ref {reference:?} at {at} points into another file or URL; bundle the document first (e.g. `redocly bundle openapi.yaml -o bundled.yaml`) so that every $ref stays within it"
    )]
    ExternalRef {
        /// The reference as written.
        reference: String,
        /// Where in the document it is (a JSON pointer).
        at: String,
    },
    /// The response schema does not compile as JSON Schema; the compiler's message.
    #[error("invalid response schema: {0}; fix the schema in the document")]
    Schema(String),
}

/// A response contract: which operation and status, and the pruned, translated JSON schema.
///
/// Plain data that (de)serialises with serde, so that it can be stored and rebuilt; the fields
/// are public and the struct is exhaustive so that a caller can rebuild it from its own storage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contract {
    /// Upper-case method, e.g. `GET`.
    pub method: String,
    /// The path template as the document writes it, e.g. `/users/{id}`.
    pub path: String,
    /// The response key used (`200`, `2XX` or `default`).
    pub status: String,
    /// A JSON Schema 2020-12 document: `$ref` to the default media type's schema, the schemas
    /// the response reaches at their places in the OpenAPI document, and `x-apidrift` naming the
    /// media types and where their schemas are. A schema stored without `x-apidrift` is the
    /// response schema itself.
    pub schema: Value,
}

/// A response contract as a reference into a [`SchemaSet`]: [`ContractRef::contract`]'s schema
/// is only its root (a `$ref` to the default media type's schema and `x-apidrift` naming the
/// media types and where their schemas are); [`Contract::resolve`] puts it on the set's schemas.
#[derive(Debug, Clone, PartialEq)]
pub struct ContractRef {
    /// The operation, the response key and the root of the schema.
    pub contract: Contract,
    /// The places in the document of the schemas the response reaches (the outermost ones).
    pub(crate) roots: Vec<Vec<String>>,
}

/// The schemas some contracts of one document reach, each once, translated to JSON Schema
/// 2020-12, each at its place in the document, written as canonical JSON (object members
/// sorted by key, no white space) and identified by the SHA-256 of that text.
#[derive(Clone, PartialEq, Eq)]
pub struct SchemaSet {
    /// Lower-case hex SHA-256 of [`SchemaSet::document`].
    pub hash: String,
    /// The canonical JSON text.
    pub document: String,
}

impl std::fmt::Debug for SchemaSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaSet")
            .field("hash", &self.hash)
            .field("bytes", &self.document.len())
            .finish()
    }
}

impl SchemaSet {
    /// The set holding `document` (an object of schemas at their places).
    pub fn of(document: &Value) -> SchemaSet {
        let mut text = String::new();
        canonical(document, &mut text);
        SchemaSet {
            hash: sha256_hex(text.as_bytes()),
            document: text,
        }
    }
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = String::with_capacity(64);
    for b in digest.as_ref() {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    out
}

/// Writes `value` as canonical JSON: members sorted by key, no white space, strings and numbers
/// as serde_json writes them.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(m) => {
            let mut members: Vec<(&String, &Value)> = m.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

impl Contract {
    /// The contract whose schema is `set` (a [`SchemaSet`]'s document, parsed) with this
    /// contract's root on it: `$ref` and `x-apidrift` of a root-only contract
    /// ([`ContractRef::contract`]). The result validates as the contract built with
    /// [`crate::contract::OpenApiDocument::contract`] does.
    pub fn resolve(self, set: Value) -> Result<Contract, ContractError> {
        let Value::Object(mut schemas) = set else {
            return Err(ContractError::Schema(
                "the stored schema set is not a JSON object".into(),
            ));
        };
        let Value::Object(root) = self.schema else {
            return Err(ContractError::Schema(
                "the contract's root is not a JSON object".into(),
            ));
        };
        schemas.extend(root);
        Ok(Contract {
            method: self.method,
            path: self.path,
            status: self.status,
            schema: Value::Object(schemas),
        })
    }
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
