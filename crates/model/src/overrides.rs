//! Severity overrides (`severityOverrides`): a list of `{"rule", "path"?, "severity"}` that
//! changes the severity the diff engine gives the changes of one of its rules, or drops them.
//!
//! The list is checked here for form ([`SeverityOverride::parse_list`], [`SeverityOverride::check`]):
//! the rule id is one of the engine's ([`SeverityOverride::RULE_IDS`], the table of
//! `docs/severity.md`), the path has the form of an ignore pattern. The diff engine
//! (`apidrift-diff`, `OverrideRule`) parses the path and applies the list.

use crate::diff::Severity;
use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use serde_json::{Map, Value};
use std::fmt;

/// The severity an override gives a rule's changes: one of the three [`Severity`] levels, or
/// `ignore`, which drops them. Written in lower case on the wire.
///
/// ```
/// use apidrift_model::{OverrideSeverity, Severity};
///
/// assert_eq!("ignore".parse::<OverrideSeverity>(), Ok(OverrideSeverity::Ignore));
/// assert_eq!(OverrideSeverity::Breaking.severity(), Some(Severity::Breaking));
/// assert_eq!(OverrideSeverity::Ignore.severity(), None);
/// let err = "fatal".parse::<OverrideSeverity>().err().map(|e| e.to_string());
/// assert_eq!(err.as_deref(), Some("must be one of info, warning, breaking, ignore"));
/// ```
///
/// Non-exhaustive, like [`Severity`]: a later version may add a level. When you `match`, give a
/// `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OverrideSeverity {
    /// The changes become informational.
    Info,
    /// The changes become warnings.
    Warning,
    /// The changes become breaking.
    Breaking,
    /// The changes are dropped: not in the diff, its counts, the health or the exit code.
    Ignore,
}

impl OverrideSeverity {
    /// Every value, in declaration order.
    pub const ALL: &'static [OverrideSeverity] = &[
        OverrideSeverity::Info,
        OverrideSeverity::Warning,
        OverrideSeverity::Breaking,
        OverrideSeverity::Ignore,
    ];

    /// The wire spelling: `info`, `warning`, `breaking` or `ignore`.
    pub const fn as_str(self) -> &'static str {
        match self {
            OverrideSeverity::Info => "info",
            OverrideSeverity::Warning => "warning",
            OverrideSeverity::Breaking => "breaking",
            OverrideSeverity::Ignore => "ignore",
        }
    }

    /// The allowed spellings, comma separated (for error messages).
    pub fn expected() -> String {
        Self::ALL
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The severity the changes get; `None` for [`OverrideSeverity::Ignore`] (dropped).
    pub const fn severity(self) -> Option<Severity> {
        match self {
            OverrideSeverity::Info => Some(Severity::Info),
            OverrideSeverity::Warning => Some(Severity::Warning),
            OverrideSeverity::Breaking => Some(Severity::Breaking),
            OverrideSeverity::Ignore => None,
        }
    }
}

impl fmt::Display for OverrideSeverity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for OverrideSeverity {
    type Err = crate::UnknownValue;
    /// Exact match on the wire spelling.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OverrideSeverity::ALL
            .iter()
            .copied()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| crate::UnknownValue {
                expected: OverrideSeverity::expected(),
            })
    }
}

impl Serialize for OverrideSeverity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for OverrideSeverity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        text.parse().map_err(D::Error::custom)
    }
}

/// Feature `openapi`: a string schema listing the wire spellings.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for OverrideSeverity {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(OverrideSeverity::ALL.iter().map(|s| s.as_str())))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for OverrideSeverity {}

/// One severity override: the changes of rule `rule` at `path` (and below it; every path when
/// absent) get `severity`, or are dropped when it is `ignore`. In a list the first matching
/// override wins.
///
/// ```
/// use apidrift_model::{OverrideSeverity, SeverityOverride};
///
/// let list = serde_json::json!([
///     {"rule": "field-added", "path": "$.debug", "severity": "ignore"},
///     {"rule": "field-added", "severity": "breaking"},
/// ]);
/// let overrides = SeverityOverride::parse_list("severityOverrides", &list)?;
/// assert_eq!(overrides[1].severity, OverrideSeverity::Breaking);
/// assert_eq!(serde_json::to_value(&overrides)?, list);
///
/// let bad = serde_json::json!([{"rule": "field-addded", "severity": "info"}]);
/// let reason = SeverityOverride::parse_list("severityOverrides", &bad).err().unwrap_or_default();
/// assert!(reason.starts_with(r#"severityOverrides[0].rule: unknown rule "field-addded"; the rules are field-removed, "#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeverityOverride {
    /// A rule id of the diff engine (`field-added`), one of [`SeverityOverride::RULE_IDS`].
    pub rule: String,
    /// A path pattern in the syntax of ignore patterns (`$.items[].price`, `$..debug`, `status`,
    /// `headers.etag`): the override applies to changes at that path and below it. Absent: at
    /// every path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The severity the changes get, or `ignore`.
    pub severity: OverrideSeverity,
}

impl SeverityOverride {
    /// Most overrides in one list.
    pub const MAX: usize = 50;

    /// Longest `path`, in bytes (as for ignore patterns).
    pub const MAX_PATH_CHARS: usize = crate::validate::MAX_IGNORE_PATH_CHARS;

    /// The rule ids of the diff engine, in the order of the table in `docs/severity.md`.
    pub const RULE_IDS: &'static [&'static str] = &[
        "field-removed",
        "field-removed-from-some",
        "optional-field-removed",
        "field-added",
        "field-added-in-some",
        "type-changed",
        "integer-to-number",
        "number-to-integer",
        "became-null",
        "became-non-null",
        "value-changed",
        "keyed-item-removed",
        "keyed-item-added",
        "element-removed",
        "element-added",
        "text-body-changed",
        "status-left-2xx",
        "no-response",
        "status-changed",
        "content-type-not-json",
        "content-type-changed",
        "deprecation-appeared",
        "deprecation-disappeared",
        "header-presence",
        "contract-violation",
    ];

    /// An override of `rule` at every path.
    pub fn new(rule: impl Into<String>, severity: OverrideSeverity) -> SeverityOverride {
        SeverityOverride {
            rule: rule.into(),
            path: None,
            severity,
        }
    }

    /// This override restricted to `path` and below it.
    #[must_use]
    pub fn at(mut self, path: impl Into<String>) -> SeverityOverride {
        self.path = Some(path.into());
        self
    }

    /// The reason an unknown rule id is refused: `unknown rule "x"; the rules are …` (every
    /// rule id).
    pub fn unknown_rule(rule: &str) -> String {
        let quoted = serde_json::to_string(rule).unwrap_or_else(|_| format!("{rule:?}"));
        format!(
            "unknown rule {quoted}; the rules are {}",
            Self::RULE_IDS.join(", ")
        )
    }

    /// Checks one override for form; the reason names the member (`rule: …`, `path: …`).
    pub fn check(&self) -> Result<(), String> {
        if !Self::RULE_IDS.contains(&self.rule.as_str()) {
            return Err(format!("rule: {}", Self::unknown_rule(&self.rule)));
        }
        if let Some(path) = &self.path {
            check_path(path).map_err(|reason| format!("path: {reason}"))?;
        }
        Ok(())
    }

    /// Reads and checks a list of overrides as a request body gives it (`null` reads as an empty
    /// list). `field_name` names the list in the reason (`severityOverrides[2].rule: …`). Each
    /// entry is an object of `rule`, `path` (optional) and `severity`, and nothing else; at most
    /// [`SeverityOverride::MAX`] entries.
    pub fn parse_list(field_name: &str, value: &Value) -> Result<Vec<SeverityOverride>, String> {
        let items = match value {
            Value::Null => return Ok(Vec::new()),
            Value::Array(items) => items,
            _ => {
                return Err(format!(
                    "{field_name}: must be an array of {{\"rule\", \"path\"?, \"severity\"}} objects"
                ));
            }
        };
        if items.len() > Self::MAX {
            return Err(format!("{field_name}: at most {} overrides", Self::MAX));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| entry(item).map_err(|reason| format!("{field_name}[{i}]{reason}")))
            .collect()
    }
}

/// The settings of a workspace, as `GET` and `PATCH /api/v1/workspace` answer them: its id, name
/// and plan, and its default severity overrides (tried after an endpoint's own; the first match
/// wins). The version of these settings travels as the answer's `ETag`.
///
/// ```
/// use apidrift_model::{Plan, WorkspaceSettings};
///
/// let wire = serde_json::json!({
///     "id": "00000000-0000-0000-0000-000000000001", "name": "acme", "plan": "free",
///     "severityOverrides": [{"rule": "field-added", "severity": "breaking"}],
/// });
/// let settings: WorkspaceSettings = serde_json::from_value(wire.clone())?;
/// assert_eq!(settings.plan, Plan::Free);
/// assert_eq!(serde_json::to_value(&settings)?, wire);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSettings {
    /// The workspace's id.
    pub id: uuid::Uuid,
    /// The workspace's name.
    pub name: String,
    /// The workspace's plan.
    pub plan: crate::Plan,
    /// The default severity overrides of every check in the workspace, at most
    /// [`SeverityOverride::MAX`]. Always present (`[]` when none).
    #[serde(default)]
    pub severity_overrides: Vec<SeverityOverride>,
}

/// One entry; the reason starts with `.member: ` or `: `.
fn entry(item: &Value) -> Result<SeverityOverride, String> {
    let Value::Object(map) = item else {
        return Err(": must be an object with rule, severity and an optional path".into());
    };
    if let Some(unknown) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "rule" | "path" | "severity"))
    {
        let quoted = serde_json::to_string(unknown).unwrap_or_else(|_| format!("{unknown:?}"));
        return Err(format!(
            ": unknown member {quoted}; the members are rule, path and severity"
        ));
    }
    let rule = match member(map, "rule") {
        None => return Err(".rule: required".into()),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(".rule: must be a string (a rule id)".into()),
    };
    let severity = match member(map, "severity") {
        None => return Err(".severity: required".into()),
        Some(Value::String(s)) => s
            .parse::<OverrideSeverity>()
            .map_err(|e| format!(".severity: {e}"))?,
        Some(_) => {
            return Err(format!(
                ".severity: must be one of {}",
                OverrideSeverity::expected()
            ));
        }
    };
    let path = match member(map, "path") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(".path: must be a string (a path pattern)".into()),
    };
    let o = SeverityOverride {
        rule,
        path,
        severity,
    };
    o.check().map_err(|reason| format!(".{reason}"))?;
    Ok(o)
}

/// An optional member: absent and `null` are the same.
fn member<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_null())
}

/// The form of an ignore pattern (the diff engine parses it fully).
fn check_path(path: &str) -> Result<(), String> {
    if path.len() > SeverityOverride::MAX_PATH_CHARS {
        return Err(format!(
            "longer than {} characters",
            SeverityOverride::MAX_PATH_CHARS
        ));
    }
    if path.contains('\0') {
        return Err("must not contain a NUL character (U+0000)".into());
    }
    if !(path.starts_with('$') || path == "status" || path.starts_with("headers.")) {
        return Err("must be a path pattern starting with $, or status, or headers.<name>".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason(v: Value) -> String {
        match SeverityOverride::parse_list("severityOverrides", &v) {
            Ok(list) => format!("accepted: {list:?}"),
            Err(reason) => reason,
        }
    }

    #[test]
    fn lists_are_read_with_reasons_naming_the_member() {
        assert_eq!(reason(json!(null)), "accepted: []");
        let cases = [
            (
                json!({"rule": "field-added"}),
                "severityOverrides: must be an array of {\"rule\", \"path\"?, \"severity\"} objects",
            ),
            (
                json!(["x"]),
                "severityOverrides[0]: must be an object with rule, severity and an optional path",
            ),
            (
                json!([{"severity": "info"}]),
                "severityOverrides[0].rule: required",
            ),
            (
                json!([{"rule": "field-added"}]),
                "severityOverrides[0].severity: required",
            ),
            (
                json!([{"rule": 3, "severity": "info"}]),
                "severityOverrides[0].rule: must be a string (a rule id)",
            ),
            (
                json!([{"rule": "field-added", "severity": "fatal"}]),
                "severityOverrides[0].severity: must be one of info, warning, breaking, ignore",
            ),
            (
                json!([{"rule": "field-added", "severity": 1}]),
                "severityOverrides[0].severity: must be one of info, warning, breaking, ignore",
            ),
            (
                json!([{"rule": "field-added", "severity": "info", "path": "meta"}]),
                "severityOverrides[0].path: must be a path pattern starting with $, or status, or headers.<name>",
            ),
            (
                json!([{"rule": "field-added", "severity": "info", "path": 1}]),
                "severityOverrides[0].path: must be a string (a path pattern)",
            ),
            (
                json!([{"rule": "field-added", "severity": "info", "path": "$\u{0}"}]),
                "severityOverrides[0].path: must not contain a NUL character (U+0000)",
            ),
            (
                json!([{"rule": "field-added", "severity": "info", "paths": "$.a"}]),
                "severityOverrides[0]: unknown member \"paths\"; the members are rule, path and severity",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(reason(input.clone()), expected, "{input}");
        }
        let long = format!("$.{}", "a".repeat(SeverityOverride::MAX_PATH_CHARS));
        assert_eq!(
            reason(json!([{"rule": "field-added", "severity": "info", "path": long}])),
            "severityOverrides[0].path: longer than 500 characters"
        );
        let unknown = reason(json!([{"rule": "added", "severity": "breaking"}]));
        assert!(
            unknown.starts_with("severityOverrides[0].rule: unknown rule \"added\"; the rules are field-removed, field-removed-from-some, "),
            "{unknown}"
        );
        for id in SeverityOverride::RULE_IDS {
            assert!(unknown.contains(id), "{id} is named: {unknown}");
        }
    }

    #[test]
    fn at_most_fifty() {
        let one = json!({"rule": "field-added", "severity": "info"});
        let fifty = Value::Array(vec![one.clone(); SeverityOverride::MAX]);
        assert!(SeverityOverride::parse_list("f", &fifty).is_ok());
        let more = Value::Array(vec![one; SeverityOverride::MAX + 1]);
        assert_eq!(
            SeverityOverride::parse_list("f", &more).err().as_deref(),
            Some("f: at most 50 overrides")
        );
    }

    #[test]
    fn every_rule_and_level_is_accepted_and_round_trips() -> Result<(), serde_json::Error> {
        for rule in SeverityOverride::RULE_IDS {
            for level in OverrideSeverity::ALL {
                let o = SeverityOverride::new(*rule, *level).at("$.a[id=1]");
                assert_eq!(o.check(), Ok(()));
                let wire = serde_json::to_value(&o)?;
                assert_eq!(
                    wire,
                    json!({"rule": rule, "path": "$.a[id=1]", "severity": level.as_str()})
                );
                assert_eq!(serde_json::from_value::<SeverityOverride>(wire)?, o);
            }
        }
        let bare = SeverityOverride::new("status-changed", OverrideSeverity::Ignore);
        assert_eq!(
            serde_json::to_value(&bare)?,
            json!({"rule": "status-changed", "severity": "ignore"})
        );
        Ok(())
    }
}
