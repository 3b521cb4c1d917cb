//! What a user sets on an endpoint ([`EndpointSettings`]), and a PATCH of it
//! ([`EndpointPatch`]).
//!
//! An endpoint is its settings plus what the service records about it (health, figures, baseline
//! version, version). The create request, the stored endpoint and a change of it all carry the
//! same [`EndpointSettings`]; [`validate::validate_entry`](crate::validate::validate_entry) is the
//! one place that checks it. A PATCH is merge-then-validate: [`EndpointPatch::merged`] lays the
//! fields the request names over the stored settings, and the result is a create entry that the
//! create rules check once.
//!
//! ```
//! use apidrift_model::net::AllowList;
//! use apidrift_model::validate::validate_entry;
//! use apidrift_model::EndpointPatch;
//!
//! let entry = serde_json::json!({"name": "users", "url": "https://api.example.com/users"});
//! let stored = validate_entry(&entry, &AllowList::default())?.settings;
//! let patch = EndpointPatch::parse(&serde_json::json!({"timeoutMs": 5000, "paused": true}))?;
//! let merged = validate_entry(&patch.merged(&stored), &AllowList::default())?.settings;
//! assert_eq!((merged.name.as_str(), merged.timeout_ms), ("users", 5000));
//! assert_eq!(patch.paused(), Some(true));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::endpoint::Schedule;
use crate::enums::{Cadence, DiffMode, HttpMethod};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Every field of a create entry, by its wire name, in the order the documentation lists them:
/// the [`EndpointSettings`] fields and the write-only [`SECRET_FIELDS`].
pub const ENTRY_FIELDS: &[&str] = &[
    "key",
    "name",
    "url",
    "method",
    "environment",
    "description",
    "tags",
    "auth",
    "headers",
    "requestBody",
    "contentType",
    "diffMode",
    "timeoutMs",
    "schedule",
    "ignorePaths",
    "identityKeys",
    "followRedirects",
    "retries",
    "severityOverrides",
    "maxResponseTimeMs",
    "slowAfter",
];

/// The write-only fields of a create entry: sealed at rest, never read back, so not part of
/// [`EndpointSettings`]. In a PATCH, present means "replace", absent means "keep".
pub const SECRET_FIELDS: &[&str] = &["auth", "headers", "requestBody"];

/// The PATCH field that is not a create field: scheduled runs skip a paused endpoint.
pub const PAUSED_FIELD: &str = "paused";

/// PATCH fields for which `null` means "unchanged", like an absent field: the settings every
/// endpoint has, the credential (`{"type": "none"}` drops it) and `paused`. On the other fields
/// `null` clears the value (or restores its default).
const KEEP_ON_NULL: &[&str] = &[
    "key",
    "name",
    "url",
    "method",
    "diffMode",
    "timeoutMs",
    "retries",
    "followRedirects",
    "auth",
    "paused",
];

/// What a user sets on an endpoint: every field of a create entry except the write-only secrets
/// (`auth`, `headers`, `requestBody`), normalised by
/// [`validate::validate_entry`](crate::validate::validate_entry) (defaults filled in, method
/// uppercase, `exact` read as `full`, URL in its WHATWG serialisation without fragment).
///
/// It serialises as a create entry (camelCase; `schedule` as `{"frequency": …}` or
/// `{"intervalSeconds": …}`; an absent `description` or `schedule` left out), and reading that
/// entry back with the create rules gives the same settings. That is how a PATCH is validated:
/// [`EndpointPatch::merged`].
///
/// Adding a user-settable field: a field here and its default in [`EndpointSettings::new`], its
/// rule in `validate_entry`, its wire name in [`ENTRY_FIELDS`] (and in `KEEP_ON_NULL` when `null`
/// must not clear it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSettings {
    /// The stable key of a monitors file (1–[`MAX_KEY_CHARS`](crate::validate::MAX_KEY_CHARS)
    /// characters `[a-z0-9][a-z0-9._-]*`), unique in the workspace and immutable once set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Display name, trimmed, at most [`MAX_NAME_CHARS`](crate::validate::MAX_NAME_CHARS)
    /// characters.
    pub name: String,
    /// The URL as the fetcher will use it: WHATWG serialisation, no fragment, host allowed by
    /// the outbound policy of [`net`](crate::net).
    pub url: String,
    /// The method (default `GET`).
    pub method: HttpMethod,
    /// The environment label (default
    /// [`DEFAULT_ENVIRONMENT`](crate::validate::DEFAULT_ENVIRONMENT)).
    pub environment: String,
    /// Free-form description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Tags, trimmed, duplicates dropped, in the order given.
    pub tags: Vec<String>,
    /// The content type of the request body (default
    /// [`DEFAULT_CONTENT_TYPE`](crate::validate::DEFAULT_CONTENT_TYPE)).
    pub content_type: String,
    /// How responses are compared (default `schema`; `exact` reads as `full`).
    pub diff_mode: DiffMode,
    /// How long a check waits, in milliseconds (default
    /// [`DEFAULT_TIMEOUT_MS`](crate::validate::DEFAULT_TIMEOUT_MS)).
    pub timeout_ms: u32,
    /// When a recurring check runs, if the entry asked for one.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "schedule_entry"
    )]
    pub schedule: Option<Cadence>,
    /// Path patterns whose changes are dropped (`$.meta.requestId`, `status`,
    /// `headers.<name>`).
    pub ignore_paths: Vec<String>,
    /// Identity rules: array path pattern (`$.commits`, `$..lines.data`) → the member that
    /// pairs its items in full mode (`sha`), or `.` to pair them by their own value. Checked here
    /// for form only; the service parses the patterns with the diff engine.
    pub identity_keys: BTreeMap<String, String>,
    /// Whether a check follows redirects (default `false`).
    pub follow_redirects: bool,
    /// 0 to [`MAX_RETRIES`](crate::validate::MAX_RETRIES), default
    /// [`DEFAULT_RETRIES`](crate::validate::DEFAULT_RETRIES).
    pub retries: u8,
    /// Severity overrides of this endpoint's checks, at most
    /// [`SeverityOverride::MAX`](crate::SeverityOverride::MAX); tried before the workspace's,
    /// the first match wins. Checked here for form only; the service parses the paths with the
    /// diff engine.
    pub severity_overrides: Vec<crate::SeverityOverride>,
    /// The latency threshold in milliseconds (1 to
    /// [`MAX_RESPONSE_TIME_MS`](crate::validate::MAX_RESPONSE_TIME_MS)); `None`: no `slow`
    /// alert.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_response_time_ms: Option<u32>,
    /// How many consecutive checks over `max_response_time_ms` raise a `slow` alert (1 to
    /// [`MAX_SLOW_AFTER`](crate::validate::MAX_SLOW_AFTER), default
    /// [`DEFAULT_SLOW_AFTER`](crate::validate::DEFAULT_SLOW_AFTER)).
    pub slow_after: u8,
}

fn schedule_entry<S: Serializer>(c: &Option<Cadence>, s: S) -> Result<S::Ok, S::Error> {
    c.map(Schedule::from).serialize(s)
}

impl EndpointSettings {
    /// The settings as a create entry (see [the type](Self)).
    pub fn to_entry(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            // Strings, enums with a wire spelling, numbers, lists and a string map: serialising
            // them cannot fail, and a struct serialises as an object.
            _ => Map::new(),
        }
    }
}

/// A PATCH of an endpoint, its shape checked: the create fields it names (any subset) and
/// `paused`. What each field means is decided by the create rules, after [`EndpointPatch::merged`].
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointPatch {
    fields: Map<String, Value>,
    paused: Option<bool>,
}

impl EndpointPatch {
    /// Checks a PATCH body: a JSON object whose members are create fields or `paused`
    /// (a boolean). A field every endpoint has, sent as `null`, is left as it is, like an absent
    /// field; `null` clears only the optional fields (`schedule`, `description`, `requestBody`,
    /// …). The error names the field.
    pub fn parse(body: &Value) -> Result<Self, String> {
        let Value::Object(body) = body else {
            return Err("request body must be a JSON object".into());
        };
        let fields: Map<String, Value> = body
            .iter()
            .filter(|(k, v)| !(v.is_null() && KEEP_ON_NULL.contains(&k.as_str())))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(unknown) = fields
            .keys()
            .find(|k| *k != PAUSED_FIELD && !ENTRY_FIELDS.contains(&k.as_str()))
        {
            return Err(format!(
                "{unknown}: not a field that can be changed (fields: {}, {PAUSED_FIELD})",
                ENTRY_FIELDS.join(", ")
            ));
        }
        let paused = match fields.get(PAUSED_FIELD) {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err("paused: must be a boolean".into()),
        };
        Ok(EndpointPatch { fields, paused })
    }

    /// Whether the PATCH names `field` (by wire name; a `null` that keeps the value does not
    /// count).
    pub fn names(&self, field: &str) -> bool {
        self.fields.contains_key(field)
    }

    /// The new `paused` flag, if the PATCH sets one.
    pub fn paused(&self) -> Option<bool> {
        self.paused
    }

    /// `current` as a create entry with the create fields of this PATCH laid over it (a field
    /// replaces the stored value whole; `null` clears it): the entry to validate by the create
    /// rules. The secrets appear only when the PATCH names them.
    pub fn merged(&self, current: &EndpointSettings) -> Value {
        let mut entry = current.to_entry();
        for (k, v) in &self.fields {
            if k != PAUSED_FIELD {
                entry.insert(k.clone(), v.clone());
            }
        }
        Value::Object(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enums::Frequency;

    fn settings() -> EndpointSettings {
        EndpointSettings {
            key: Some("k".into()),
            name: "n".into(),
            url: "https://example.com/".into(),
            method: HttpMethod::Post,
            environment: "e".into(),
            description: Some("d".into()),
            tags: vec!["t".into()],
            content_type: "text/plain".into(),
            diff_mode: DiffMode::Full,
            timeout_ms: 5,
            schedule: Some(Cadence::Every(Frequency::Daily)),
            ignore_paths: vec!["$.a".into()],
            identity_keys: BTreeMap::from([("$.c".into(), "sha".into())]),
            follow_redirects: true,
            retries: 2,
            severity_overrides: vec![
                crate::SeverityOverride::new("field-added", crate::OverrideSeverity::Breaking)
                    .at("$.a"),
            ],
            max_response_time_ms: Some(750),
            slow_after: 5,
        }
    }

    #[test]
    fn every_setting_is_an_entry_field() {
        let entry = settings().to_entry();
        let mut names: Vec<&str> = entry.keys().map(String::as_str).collect();
        names.extend(SECRET_FIELDS);
        names.sort_unstable();
        let mut fields = ENTRY_FIELDS.to_vec();
        fields.sort_unstable();
        assert_eq!(names, fields);
        assert_eq!(entry["schedule"], serde_json::json!({"frequency": "DAILY"}));
    }

    #[test]
    fn new_gives_the_defaults_of_the_create_rules() {
        let entry = serde_json::json!({"name": "n", "url": "https://example.com/"});
        let valid = crate::validate::validate_entry(&entry, &crate::net::AllowList::default());
        assert_eq!(
            valid.map(|v| v.settings),
            Ok(EndpointSettings::new("n", "https://example.com/"))
        );
    }

    #[test]
    fn a_stored_entry_reads_back_as_the_same_settings() {
        let s = settings();
        let valid = crate::validate::validate_entry(
            &Value::Object(s.to_entry()),
            &crate::net::AllowList::default(),
        );
        assert_eq!(valid.map(|v| v.settings), Ok(s));
    }

    #[test]
    fn absent_options_are_left_out() {
        let mut s = settings();
        s.description = None;
        s.schedule = None;
        s.max_response_time_ms = None;
        let entry = s.to_entry();
        assert!(!entry.contains_key("description") && !entry.contains_key("schedule"));
        assert!(!entry.contains_key("maxResponseTimeMs"));
        s.key = None;
        let entry = s.to_entry();
        assert!(!entry.contains_key("description") && !entry.contains_key("schedule"));
        assert!(!entry.contains_key("key"));
    }

    #[test]
    fn patch_keeps_on_null_and_names_unknown_fields() {
        let patch = EndpointPatch::parse(&serde_json::json!({
            "name": null, "schedule": null, "paused": null
        }));
        let patch = patch.unwrap_or_else(|e| panic!("{e}"));
        assert!(!patch.names("name") && patch.names("schedule"));
        assert_eq!(patch.paused(), None);
        let merged = patch.merged(&settings());
        assert_eq!(merged["name"], "n");
        assert_eq!(merged["schedule"], Value::Null);
        let err = EndpointPatch::parse(&serde_json::json!({"bogus": 1})).err();
        assert!(err.is_some_and(|e| e.starts_with("bogus: not a field that can be changed")));
        let err = EndpointPatch::parse(&serde_json::json!({"paused": "yes"})).err();
        assert_eq!(err.as_deref(), Some("paused: must be a boolean"));
    }
}
