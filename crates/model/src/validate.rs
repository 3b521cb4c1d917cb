//! Validation of `POST /endpoints` request bodies, as pure functions: what the service accepts,
//! and the normalised endpoint it stores. A client can run the same checks before sending.
//!
//! * [`create_entries`] splits a body into its entries (one object, a bare array, or
//!   `{"endpoints": [...]}`) or refuses the whole request.
//! * [`validate_entry`] checks one entry on its own and returns the normalised [`NewEndpoint`]
//!   (its [`EndpointSettings`] and its secrets) or a reason that names the field (`url: private,
//!   loopback and link-local hosts are rejected; …`, which goes on to say how a self-hosted
//!   install allows the address). It is the one validator of the settings: a PATCH is merged
//!   into the stored settings first ([`EndpointPatch`](crate::EndpointPatch)) and checked here.
//!
//! The two rules that need workspace state (the plan's endpoint limit and the plan needed for
//! schedules) are the caller's. Unknown fields are ignored. An optional field given as `null` is
//! treated as absent.
//!
//! ```
//! use apidrift_model::net::AllowList;
//! use apidrift_model::validate::{create_entries, validate_entry};
//! use apidrift_model::{DiffMode, HttpMethod};
//!
//! let body = serde_json::json!({"endpoints": [
//!     {"name": "users", "url": "https://api.example.com/users", "diffMode": "exact"},
//!     {"name": "admin", "url": "http://10.0.0.7/admin"},
//! ]});
//! let entries = create_entries(&body)?;
//! let users = validate_entry(&entries[0], &AllowList::default())?;
//! assert_eq!((users.settings.method, users.settings.diff_mode), (HttpMethod::Get, DiffMode::Full));
//! assert_eq!(users.settings.environment, "production");
//! let refused = validate_entry(&entries[1], &AllowList::default()).err();
//! let reason = refused.unwrap_or_default();
//! assert!(reason.starts_with("url: private, loopback and link-local hosts are rejected; "));
//! assert!(reason.contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.1/32"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::enums::{AuthType, Cadence, DiffMode, Frequency, HttpMethod};
use crate::net::{AllowList, check_url};
use crate::secret::SecretString;
use crate::settings::EndpointSettings;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// Most entries in one request.
pub const MAX_BATCH: usize = 200;
/// Longest `name`.
pub const MAX_NAME_CHARS: usize = 200;

/// The longest `key` of an endpoint, in characters.
pub const MAX_KEY_CHARS: usize = 100;
/// Longest `environment`.
pub const MAX_ENVIRONMENT_CHARS: usize = 100;
/// Longest `description`.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// Most tags.
pub const MAX_TAGS: usize = 50;
/// Longest tag.
pub const MAX_TAG_CHARS: usize = 100;
/// Most `ignorePaths` patterns.
pub const MAX_IGNORE_PATHS: usize = 100;
/// Longest `ignorePaths` pattern, in bytes.
pub const MAX_IGNORE_PATH_CHARS: usize = 500;
/// Most `identityKeys` rules.
pub const MAX_IDENTITY_KEYS: usize = 20;
/// Longest `identityKeys` key (a member name), in bytes.
pub const MAX_IDENTITY_KEY_CHARS: usize = 100;
/// Most extra request headers.
pub const MAX_HEADERS: usize = 50;
/// Largest `requestBody`, in bytes.
pub const MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;
/// Smallest `timeoutMs`.
pub const MIN_TIMEOUT_MS: u32 = 1;
/// Largest `timeoutMs`.
pub const MAX_TIMEOUT_MS: u32 = 60_000;
/// `timeoutMs` when the entry gives none.
pub const DEFAULT_TIMEOUT_MS: u32 = 10_000;
/// `environment` when the entry gives none.
pub const DEFAULT_ENVIRONMENT: &str = "production";
/// `contentType` of the request body when the entry gives none.
pub const DEFAULT_CONTENT_TYPE: &str = "application/json";
/// The header of an `api_key` credential when the entry names none.
pub const DEFAULT_API_KEY_HEADER: &str = "X-API-Key";
/// Most retries of a fetch that yields no response or a 5xx.
pub const MAX_RETRIES: u8 = 3;
/// Retries when an entry names none.
pub const DEFAULT_RETRIES: u8 = 1;

/// Largest `maxResponseTimeMs`.
pub const MAX_RESPONSE_TIME_MS: u32 = 600_000;
/// Most `slowAfter`.
pub const MAX_SLOW_AFTER: u8 = 20;
/// `slowAfter` when the entry gives none.
pub const DEFAULT_SLOW_AFTER: u8 = 3;

/// [`DEFAULT_SLOW_AFTER`], for serde defaults.
pub fn default_slow_after() -> u8 {
    DEFAULT_SLOW_AFTER
}

/// [`DEFAULT_RETRIES`], for serde defaults.
pub fn default_retries() -> u8 {
    DEFAULT_RETRIES
}

/// Headers a user may not set, on an endpoint (`headers`, `auth.header`) or on a probe: the
/// fetcher owns framing and routing.
pub const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-connection",
];

/// A checked credential, one variant per [`AuthType`]. `Debug` prints `***` for every secret.
///
/// Non-exhaustive, like [`AuthType`]: a later version may add styles. When you `match`, give a
/// `_` arm that refuses the credential rather than sending a request without it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// No credential.
    None,
    /// Sent as `Authorization: Bearer <token>`.
    Bearer {
        /// The bearer token.
        token: SecretString,
    },
    /// Sent as `Authorization: Bearer <token>`.
    Oauth {
        /// The OAuth access token.
        token: SecretString,
    },
    /// Sent as `<header>: <key>`.
    ApiKey {
        /// The header name (default [`DEFAULT_API_KEY_HEADER`]).
        header: String,
        /// The key.
        key: SecretString,
    },
    /// Sent as `Authorization: Basic base64(username:password)`.
    Basic {
        /// The user name (validation refuses one that contains `:`).
        username: SecretString,
        /// The password.
        password: SecretString,
    },
    /// Sent as `<header>: <value>`.
    Custom {
        /// The header name.
        header: String,
        /// The header value.
        value: SecretString,
    },
}

impl Credential {
    /// The style of this credential, as endpoints report it.
    pub fn auth_type(&self) -> AuthType {
        match self {
            Credential::None => AuthType::None,
            Credential::Bearer { .. } => AuthType::Bearer,
            Credential::Oauth { .. } => AuthType::Oauth,
            Credential::ApiKey { .. } => AuthType::ApiKey,
            Credential::Basic { .. } => AuthType::Basic,
            Credential::Custom { .. } => AuthType::Custom,
        }
    }
}

/// One extra request header (`headers` extension field). The value is secret like a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraHeader {
    /// The header name, as given (a valid token, not one apidrift sets itself).
    pub name: String,
    /// The header value; no line breaks or NUL.
    pub value: SecretString,
}

/// A validated, normalised create entry: its [`EndpointSettings`] and its write-only secrets.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEndpoint {
    /// What the entry sets on the endpoint, defaults filled in.
    pub settings: EndpointSettings,
    /// The checked credential ([`Credential::None`] without `auth`).
    pub credential: Credential,
    /// Extra request headers, sealed like credentials.
    pub headers: Vec<ExtraHeader>,
    /// The raw body sent on each check (never for GET or HEAD).
    pub request_body: Option<String>,
}

impl NewEndpoint {
    /// The style of the entry's credential.
    pub fn auth_type(&self) -> AuthType {
        self.credential.auth_type()
    }
}

/// Why a whole `POST /endpoints` request is refused (400), before any entry is looked at. Its
/// `Display` is the reason to answer.
///
/// Non-exhaustive: a later version may add reasons. When you `match`, give a `_` arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyError {
    /// A JSON scalar, or an object/array of the wrong shape.
    Shape,
    /// An empty array, bare or wrapped.
    Empty,
    /// More than [`MAX_BATCH`] entries.
    TooMany(usize),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Shape => f.write_str(
                "request body must be an endpoint object, an array of endpoint objects, or {\"endpoints\": [...]}",
            ),
            BodyError::Empty => f.write_str("request body contains no endpoints"),
            BodyError::TooMany(n) => {
                write!(f, "at most {MAX_BATCH} endpoints per request, got {n}")
            }
        }
    }
}

impl std::error::Error for BodyError {}

/// Splits a create body into its entries. An object with an `endpoints` array is the wrapped
/// form; any other object is a single entry.
pub fn create_entries(body: &Value) -> Result<&[Value], BodyError> {
    let entries: &[Value] = match body {
        Value::Array(items) => items,
        Value::Object(map) => match map.get("endpoints") {
            Some(Value::Array(items)) => items,
            Some(_) => return Err(BodyError::Shape),
            None => std::slice::from_ref(body),
        },
        _ => return Err(BodyError::Shape),
    };
    if entries.is_empty() {
        return Err(BodyError::Empty);
    }
    if entries.len() > MAX_BATCH {
        return Err(BodyError::TooMany(entries.len()));
    }
    Ok(entries)
}

/// The `name` of an entry for its `skipped` row: the string given, else `""`.
pub fn entry_name(entry: &Value) -> String {
    entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Validates one entry on its own. `allow` is the operator's outbound allow-list
/// ([`AllowList::default`] for none). The error is a one-line reason that starts with the field
/// it is about (`auth.token: required for bearer`), fit for a
/// [`SkippedEntry`](crate::SkippedEntry).
pub fn validate_entry(entry: &Value, allow: &AllowList) -> Result<NewEndpoint, String> {
    let Value::Object(map) = entry else {
        return Err("entry: must be a JSON object".into());
    };
    let key = match field(map, "key") {
        None => None,
        Some(v) => Some(endpoint_key(v)?),
    };
    let name = name(map)?;
    let url = url(map, allow)?;
    let method = match field(map, "method") {
        None => HttpMethod::Get,
        Some(Value::String(s)) => HttpMethod::read(s).map_err(|e| format!("method: {e}"))?,
        Some(_) => {
            return Err(format!(
                "method: {}",
                HttpMethod::read("")
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default()
            ));
        }
    };
    let environment = match field(map, "environment") {
        None => DEFAULT_ENVIRONMENT.to_owned(),
        Some(v) => bounded_text("environment", v, MAX_ENVIRONMENT_CHARS)?,
    };
    let description = match field(map, "description") {
        None => None,
        Some(Value::String(s)) if s.chars().count() > MAX_DESCRIPTION_CHARS => {
            return Err(format!(
                "description: longer than {MAX_DESCRIPTION_CHARS} characters"
            ));
        }
        Some(Value::String(s)) => {
            refuse_nul("description", s)?;
            Some(s.clone())
        }
        Some(_) => return Err("description: must be a string or null".into()),
    };
    let tags = tags(map)?;
    let credential = credential(map)?;
    let request_body = match field(map, "requestBody") {
        None => None,
        Some(Value::String(_)) if !method.allows_body() => {
            return Err(format!("requestBody: not allowed for {method}"));
        }
        Some(Value::String(s)) if s.len() > MAX_REQUEST_BODY_BYTES => {
            return Err(format!(
                "requestBody: larger than {MAX_REQUEST_BODY_BYTES} bytes"
            ));
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("requestBody: must be a string".into()),
    };
    let content_type = match field(map, "contentType") {
        None => DEFAULT_CONTENT_TYPE.to_owned(),
        Some(Value::String(s)) if is_media_type(s.trim()) => s.trim().to_owned(),
        Some(_) => {
            return Err("contentType: must be a media type such as application/json".into());
        }
    };
    let diff_mode = match field(map, "diffMode") {
        None => DiffMode::Schema,
        Some(Value::String(s)) => DiffMode::read(s)
            .map_err(|_| "diffMode: must be one of schema, exact, full".to_owned())?,
        Some(_) => return Err("diffMode: must be one of schema, exact, full".into()),
    };
    let timeout_ms = match field(map, "timeoutMs") {
        None => DEFAULT_TIMEOUT_MS,
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (MIN_TIMEOUT_MS..=MAX_TIMEOUT_MS).contains(n))
            .ok_or_else(|| {
                format!("timeoutMs: must be an integer from {MIN_TIMEOUT_MS} to {MAX_TIMEOUT_MS}")
            })?,
    };
    let schedule = schedule(map)?;
    let ignore_paths = ignore_paths(map)?;
    let identity_keys = identity_keys(map)?;
    let severity_overrides = crate::SeverityOverride::parse_list(
        "severityOverrides",
        field(map, "severityOverrides").unwrap_or(&Value::Null),
    )?;
    let headers = headers(map)?;
    let follow_redirects = match field(map, "followRedirects") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("followRedirects: must be a boolean".into()),
    };
    let retries = match field(map, "retries") {
        None => DEFAULT_RETRIES,
        Some(v) => v
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .filter(|n| *n <= MAX_RETRIES)
            .ok_or_else(|| format!("retries: must be an integer from 0 to {MAX_RETRIES}"))?,
    };
    let max_response_time_ms = match field(map, "maxResponseTimeMs") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| (1..=MAX_RESPONSE_TIME_MS).contains(n))
                .ok_or_else(|| {
                    format!(
                        "maxResponseTimeMs: must be an integer from 1 to {MAX_RESPONSE_TIME_MS}, \
                         or null for no latency alert"
                    )
                })?,
        ),
    };
    let slow_after = match field(map, "slowAfter") {
        None => DEFAULT_SLOW_AFTER,
        Some(v) => v
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .filter(|n| (1..=MAX_SLOW_AFTER).contains(n))
            .ok_or_else(|| format!("slowAfter: must be an integer from 1 to {MAX_SLOW_AFTER}"))?,
    };
    Ok(NewEndpoint {
        settings: EndpointSettings {
            key,
            name,
            url,
            method,
            environment,
            description,
            tags,
            content_type,
            diff_mode,
            timeout_ms,
            schedule,
            ignore_paths,
            identity_keys,
            follow_redirects,
            retries,
            severity_overrides,
            max_response_time_ms,
            slow_after,
        },
        credential,
        headers,
        request_body,
    })
}

/// Checks an endpoint `key`: a string of 1 to [`MAX_KEY_CHARS`] characters
/// `[a-z0-9][a-z0-9._-]*`. The error names the field.
pub fn endpoint_key(v: &Value) -> Result<String, String> {
    let ok = |s: &str| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-_".contains(c))
            && s.chars().count() <= MAX_KEY_CHARS
    };
    match v {
        Value::String(s) if ok(s) => Ok(s.clone()),
        _ => Err(format!(
            "key: must be 1 to {MAX_KEY_CHARS} characters of a-z, 0-9, '.', '_' or '-', \
             starting with a letter or digit"
        )),
    }
}

/// An optional field: absent and `null` are the same.
fn field<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_null())
}

fn name(map: &Map<String, Value>) -> Result<String, String> {
    match field(map, "name") {
        None => Err("name: required".into()),
        Some(Value::String(s)) => {
            let trimmed = s.trim();
            if trimmed.is_empty() {
                Err("name: must not be empty".into())
            } else if trimmed.chars().count() > MAX_NAME_CHARS {
                Err(format!("name: longer than {MAX_NAME_CHARS} characters"))
            } else if trimmed.chars().any(char::is_control) {
                Err("name: must not contain control characters".into())
            } else {
                Ok(trimmed.to_owned())
            }
        }
        Some(_) => Err("name: must be a string".into()),
    }
}

fn url(map: &Map<String, Value>, allow: &AllowList) -> Result<String, String> {
    match field(map, "url") {
        None => Err("url: required".into()),
        Some(Value::String(s)) => match check_url(s.trim(), allow) {
            Ok(url) => Ok(url.into()),
            Err(e) => Err(format!("url: {e}")),
        },
        Some(_) => Err("url: must be a string".into()),
    }
}

fn bounded_text(field_name: &str, v: &Value, max: usize) -> Result<String, String> {
    let Value::String(s) = v else {
        return Err(format!("{field_name}: must be a string"));
    };
    let trimmed = s.trim();
    if trimmed.is_empty() {
        Err(format!("{field_name}: must not be empty"))
    } else if trimmed.chars().count() > max {
        Err(format!("{field_name}: longer than {max} characters"))
    } else if trimmed.chars().any(char::is_control) {
        Err(format!("{field_name}: must not contain control characters"))
    } else {
        Ok(trimmed.to_owned())
    }
}

fn tags(map: &Map<String, Value>) -> Result<Vec<String>, String> {
    let Some(v) = field(map, "tags") else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = v else {
        return Err("tags: must be an array of strings".into());
    };
    if items.len() > MAX_TAGS {
        return Err(format!("tags: at most {MAX_TAGS} tags"));
    }
    let mut tags: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let tag = bounded_text(&format!("tags[{i}]"), item, MAX_TAG_CHARS)?;
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    Ok(tags)
}

fn secret(auth: &Map<String, Value>, key: &str, kind: &str) -> Result<SecretString, String> {
    match auth.get(key) {
        Some(Value::String(s)) if !s.is_empty() => {
            header_value(&format!("auth.{key}"), s)?;
            Ok(SecretString::new(s.clone()))
        }
        Some(Value::String(_)) => Err(format!("auth.{key}: must not be empty")),
        Some(v) if !v.is_null() => Err(format!("auth.{key}: must be a string")),
        _ => Err(format!("auth.{key}: required for {kind}")),
    }
}

/// The one rule for user text that reaches storage: a NUL character (U+0000) is refused, with a
/// reason naming the field. (Monitored content is kept as it is; this is for what users type.)
pub fn refuse_nul(field_name: &str, value: &str) -> Result<(), String> {
    if value.contains('\0') {
        Err(format!(
            "{field_name}: must not contain a NUL character (U+0000)"
        ))
    } else {
        Ok(())
    }
}

/// An HTTP field value apidrift sends on a user's behalf (RFC 9110 `field-value`): no control
/// characters except horizontal tab, and no DEL. `field_name` names the field in the reason; the
/// value is never quoted (it may be a secret).
pub fn header_value(field_name: &str, value: &str) -> Result<(), String> {
    if value.contains('\0') {
        return Err(format!(
            "{field_name}: must not contain a NUL character (U+0000)"
        ));
    }
    if value.contains(['\r', '\n']) {
        return Err(format!("{field_name}: must not contain line breaks"));
    }
    if value.chars().any(|c| c.is_ascii_control() && c != '\t') {
        return Err(format!(
            "{field_name}: must not contain control characters (only tab is allowed)"
        ));
    }
    Ok(())
}

/// An HTTP field name apidrift sends on a user's behalf: an RFC 9110 token that is not one of the
/// [`RESERVED_HEADERS`].
pub fn header_name(field_name: &str, name: &str) -> Result<String, String> {
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return Err(format!("{field_name}: not a valid header name"));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "{field_name}: {name} is set by apidrift and cannot be overridden"
        ));
    }
    Ok(name.to_owned())
}

fn credential(map: &Map<String, Value>) -> Result<Credential, String> {
    let Some(v) = field(map, "auth") else {
        return Ok(Credential::None);
    };
    let Value::Object(auth) = v else {
        return Err("auth: must be an object".into());
    };
    let expected = || format!("auth.type: must be one of {}", AuthType::expected());
    let auth_type = match auth.get("type") {
        None | Some(Value::Null) => return Err("auth.type: required".into()),
        Some(Value::String(s)) => s.parse::<AuthType>().map_err(|_| expected())?,
        Some(_) => return Err(expected()),
    };
    let kind = auth_type.as_str();
    // The credential fields are strings whatever the type uses, as the published schema says.
    for name in ["token", "key", "username", "password", "value", "header"] {
        if auth
            .get(name)
            .is_some_and(|v| !v.is_null() && !v.is_string())
        {
            return Err(format!("auth.{name}: must be a string"));
        }
    }
    let header = |default: Option<&str>| -> Result<String, String> {
        match auth.get("header") {
            Some(Value::String(s)) => header_name("auth.header", s.trim()),
            Some(v) if !v.is_null() => Err("auth.header: must be a string".into()),
            _ => default
                .map(str::to_owned)
                .ok_or_else(|| format!("auth.header: required for {kind}")),
        }
    };
    Ok(match auth_type {
        AuthType::None => Credential::None,
        AuthType::Bearer => Credential::Bearer {
            token: secret(auth, "token", kind)?,
        },
        AuthType::Oauth => Credential::Oauth {
            token: secret(auth, "token", kind)?,
        },
        AuthType::ApiKey => Credential::ApiKey {
            key: secret(auth, "key", kind)?,
            header: header(Some(DEFAULT_API_KEY_HEADER))?,
        },
        AuthType::Basic => {
            let username = secret(auth, "username", kind)?;
            if username.expose().contains(':') {
                return Err("auth.username: must not contain ':'".into());
            }
            Credential::Basic {
                username,
                password: secret(auth, "password", kind)?,
            }
        }
        AuthType::Custom => {
            let header = header(None)?;
            Credential::Custom {
                header,
                value: secret(auth, "value", kind)?,
            }
        }
    })
}

fn schedule(map: &Map<String, Value>) -> Result<Option<Cadence>, String> {
    let Some(v) = field(map, "schedule") else {
        return Ok(None);
    };
    let Value::Object(schedule) = v else {
        return Err("schedule: must be an object with a frequency or intervalSeconds".into());
    };
    let frequency = schedule.get("frequency").filter(|v| !v.is_null());
    let interval = schedule.get("intervalSeconds").filter(|v| !v.is_null());
    match (frequency, interval) {
        (None, None) => {
            Err("schedule.frequency: required (or intervalSeconds in its place)".into())
        }
        (Some(_), Some(_)) => {
            Err("schedule: give either frequency or intervalSeconds, not both".into())
        }
        (Some(Value::String(s)), None) => Frequency::read(s)
            .map(|f| Some(Cadence::Every(f)))
            .map_err(|_| frequency_expected()),
        (Some(_), None) => Err(frequency_expected()),
        (None, Some(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (Cadence::MIN_INTERVAL_SECONDS..=Cadence::MAX_INTERVAL_SECONDS).contains(n))
            .map(|n| Some(Cadence::Interval(n)))
            .ok_or_else(|| {
                format!(
                    "schedule.intervalSeconds: must be an integer from {} to {} (seconds)",
                    Cadence::MIN_INTERVAL_SECONDS,
                    Cadence::MAX_INTERVAL_SECONDS
                )
            }),
    }
}

fn frequency_expected() -> String {
    format!(
        "schedule.frequency: must be one of {}",
        Frequency::expected()
    )
}

fn ignore_paths(map: &Map<String, Value>) -> Result<Vec<String>, String> {
    let Some(v) = field(map, "ignorePaths") else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = v else {
        return Err("ignorePaths: must be an array of path patterns".into());
    };
    if items.len() > MAX_IGNORE_PATHS {
        return Err(format!("ignorePaths: at most {MAX_IGNORE_PATHS} patterns"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) if s.len() > MAX_IGNORE_PATH_CHARS => {
                Err(format!("ignorePaths[{i}]: longer than {MAX_IGNORE_PATH_CHARS} characters"))
            }
            Value::String(s) if s.contains('\0') => Err(format!(
                "ignorePaths[{i}]: must not contain a NUL character (U+0000)"
            )),
            Value::String(s)
                if s.starts_with('$') || s == "status" || s.starts_with("headers.") =>
            {
                Ok(s.clone())
            }
            _ => Err(format!(
                "ignorePaths[{i}]: must be a path pattern starting with $, or status, or headers.<name>"
            )),
        })
        .collect()
}

/// How an `identityKeys` entry is named in a reason: `identityKeys["$.commits"]`.
pub fn identity_key_field(pattern: &str) -> String {
    let quoted = serde_json::to_string(pattern).unwrap_or_else(|_| format!("{pattern:?}"));
    format!("identityKeys[{quoted}]")
}

fn identity_keys(map: &Map<String, Value>) -> Result<BTreeMap<String, String>, String> {
    const SHAPE: &str = "identityKeys: must be an object of array path patterns to member names, e.g. {\"$.commits\": \"sha\"}";
    let Some(v) = field(map, "identityKeys") else {
        return Ok(BTreeMap::new());
    };
    let Value::Object(items) = v else {
        return Err(SHAPE.into());
    };
    if items.len() > MAX_IDENTITY_KEYS {
        return Err(format!("identityKeys: at most {MAX_IDENTITY_KEYS} rules"));
    }
    let mut out = BTreeMap::new();
    for (pattern, key) in items {
        let name = identity_key_field(pattern);
        if pattern.len() > MAX_IGNORE_PATH_CHARS {
            return Err(format!(
                "identityKeys: a pattern is longer than {MAX_IGNORE_PATH_CHARS} characters"
            ));
        }
        if pattern.contains('\0') {
            return Err("identityKeys: a pattern must not contain a NUL character (U+0000)".into());
        }
        if !pattern.starts_with('$') {
            return Err(format!(
                "{name}: the pattern names an array in the body and starts with $ (e.g. $.commits)"
            ));
        }
        let Value::String(key) = key else {
            return Err(format!(
                "{name}: must be a member name (a string), e.g. \"sha\""
            ));
        };
        if key.is_empty() {
            return Err(format!("{name}: the member name must not be empty"));
        }
        if key.len() > MAX_IDENTITY_KEY_CHARS {
            return Err(format!(
                "{name}: the member name is longer than {MAX_IDENTITY_KEY_CHARS} characters"
            ));
        }
        // `.` pairs the items by their own value (an array of strings, numbers, booleans).
        if key != "." && !is_member_name(key) {
            return Err(format!(
                "{name}: the member name must be letters, digits, _ and -, starting with a letter or _"
            ));
        }
        out.insert(pattern.clone(), key.clone());
    }
    Ok(out)
}

/// `[A-Za-z_][A-Za-z0-9_-]*`.
fn is_member_name(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn headers(map: &Map<String, Value>) -> Result<Vec<ExtraHeader>, String> {
    match field(map, "headers") {
        None => Ok(Vec::new()),
        Some(v) => request_headers(v),
    }
}

/// The extra request headers of an endpoint (`headers`) or of a probe: an object of header names
/// to string values, at most [`MAX_HEADERS`], each name a token that is not reserved, each value a
/// valid field value ([`header_value`]).
pub fn request_headers(v: &Value) -> Result<Vec<ExtraHeader>, String> {
    let Value::Object(items) = v else {
        return Err("headers: must be an object of header names to string values".into());
    };
    if items.len() > MAX_HEADERS {
        return Err(format!("headers: at most {MAX_HEADERS} headers"));
    }
    let mut out: Vec<ExtraHeader> = Vec::with_capacity(items.len());
    for (name, value) in items {
        let name = header_name(&format!("headers.{name}"), name)?;
        if out.iter().any(|h| h.name.eq_ignore_ascii_case(&name)) {
            return Err(format!("headers.{name}: given twice"));
        }
        let Value::String(value) = value else {
            return Err(format!("headers.{name}: must be a string"));
        };
        header_value(&format!("headers.{name}"), value)?;
        out.push(ExtraHeader {
            name,
            value: SecretString::new(value.clone()),
        });
    }
    Ok(out)
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `type/subtype` with optional `; parameters`, no line breaks.
fn is_media_type(s: &str) -> bool {
    let essence = s.split(';').next().unwrap_or_default().trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    !kind.is_empty()
        && !sub.is_empty()
        && kind.bytes().all(is_token_byte)
        && sub.bytes().all(is_token_byte)
        && !s.chars().any(|c| c.is_control())
}

/// The create defaults, written beside the rules that fill them in.
impl EndpointSettings {
    /// The settings of a create entry that gives only `name` and `url`: every other field at
    /// its default. `url` is taken as given (the create rules normalise and check it).
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        EndpointSettings {
            key: None,
            name: name.into(),
            url: url.into(),
            method: HttpMethod::Get,
            environment: DEFAULT_ENVIRONMENT.to_owned(),
            description: None,
            tags: Vec::new(),
            content_type: DEFAULT_CONTENT_TYPE.to_owned(),
            diff_mode: DiffMode::Schema,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            schedule: None,
            ignore_paths: Vec::new(),
            identity_keys: BTreeMap::new(),
            follow_redirects: false,
            retries: DEFAULT_RETRIES,
            severity_overrides: Vec::new(),
            max_response_time_ms: None,
            slow_after: DEFAULT_SLOW_AFTER,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_lowercase_slugs() {
        for good in ["a", "0", "users.v2-list_all", &"k".repeat(MAX_KEY_CHARS)] {
            assert_eq!(endpoint_key(&Value::from(good)).as_deref(), Ok(good));
        }
        for bad in [
            Value::from(""),
            Value::from("-a"),
            Value::from("Users"),
            Value::from("a b"),
            Value::from("k".repeat(MAX_KEY_CHARS + 1)),
            Value::from(1),
        ] {
            let err = endpoint_key(&bad).err().unwrap_or_default();
            assert!(err.starts_with("key: must be 1 to 100"), "{bad}: {err}");
        }
    }

    #[test]
    fn header_values_follow_rfc_9110() {
        assert!(header_value("h", "a\tb c~\u{e9}").is_ok());
        for bad in ["\0", "\r", "\n", "\u{1}", "\u{b}", "\u{1f}", "\u{7f}"] {
            let err = header_value("h", &format!("a{bad}b"))
                .err()
                .unwrap_or_default();
            assert!(err.starts_with("h: must not contain"), "{bad:?}: {err}");
            assert!(!err.contains(bad), "the value is never quoted: {err:?}");
        }
    }

    #[test]
    fn identity_key_dot_pairs_items_by_value() {
        let entry = serde_json::json!({
            "name": "n",
            "url": "https://example.com/",
            "identityKeys": {"$.tags": ".", "$.commits": "sha"},
        });
        let ok = validate_entry(&entry, &AllowList::default()).map(|e| e.settings.identity_keys);
        let expected: BTreeMap<String, String> = [("$.commits", "sha"), ("$.tags", ".")]
            .into_iter()
            .map(|(p, k)| (p.to_owned(), k.to_owned()))
            .collect();
        assert_eq!(ok, Ok(expected));
        for bad in ["..", ".a", "a."] {
            let entry = serde_json::json!({
                "name": "n", "url": "https://example.com/", "identityKeys": {"$.tags": bad},
            });
            assert!(
                validate_entry(&entry, &AllowList::default()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn reserved_names_whatever_the_case() {
        for name in RESERVED_HEADERS {
            assert!(
                header_name("h", &name.to_ascii_uppercase()).is_err(),
                "{name}"
            );
        }
        assert!(header_name("h", "X-Ok").is_ok());
        assert!(header_name("h", "X Bad").is_err());
    }
}
