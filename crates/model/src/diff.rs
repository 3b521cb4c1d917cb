//! Diffs and their changes (spec "DiffSummary", "DiffDetail", "DiffChange") and the check result.

use crate::timestamp;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

/// How much a change matters. Ordered `Info < Warning < Breaking`, so "this severity or worse"
/// is a comparison:
///
/// ```
/// use apidrift_model::Severity;
///
/// let worst = [Severity::Info, Severity::Breaking, Severity::Warning].into_iter().max();
/// assert_eq!(worst, Some(Severity::Breaking));
/// assert!(Severity::Warning >= Severity::Warning && Severity::Info < Severity::Warning);
/// assert_eq!("warning".parse::<Severity>(), Ok(Severity::Warning));
/// ```
///
/// Non-exhaustive: a later version may add a level. When you `match`, give a `_` arm (for
/// example, treat an unknown level like [`Severity::Warning`]).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// Worth knowing, nothing breaks: a field or item added, a value changed.
    Info,
    /// May break some clients: an item removed from a list, a status change within 2xx, a new
    /// `Deprecation` header.
    Warning,
    /// Clients relying on the baseline break: a field removed, a type changed, a value became
    /// `null`, the status left 2xx, a contract violation.
    Breaking,
}

impl Severity {
    /// Every level, from the least to the most severe.
    pub const ALL: &'static [Severity] = &[Severity::Info, Severity::Warning, Severity::Breaking];

    /// The wire spelling: `info`, `warning` or `breaking`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Breaking => "breaking",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Severity {
    type Err = crate::UnknownValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "info" => Ok(Severity::Info),
            "warning" => Ok(Severity::Warning),
            "breaking" => Ok(Severity::Breaking),
            _ => Err(crate::UnknownValue {
                expected: "info, warning, breaking".into(),
            }),
        }
    }
}

/// What kind of change a [`DiffChange`] is. Written in `snake_case` on the wire
/// (`type_changed`).
///
/// ```
/// use apidrift_model::ChangeType;
///
/// assert_eq!(ChangeType::NullabilityChanged.to_string(), "nullability_changed");
/// let json = serde_json::to_string(&ChangeType::TypeChanged)?;
/// assert_eq!(json, r#""type_changed""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// Non-exhaustive: a later version may add kinds of change. When you `match`, give a `_` arm.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeType {
    /// A field, array item or element that the baseline did not have.
    Added,
    /// A field, array item or element of the baseline that is gone.
    Removed,
    /// A leaf value changed within its type (full mode), or a non-JSON body's digest changed.
    Changed,
    /// The JSON type changed (`string`, `number`, `integer`, `boolean`, `object`, `array`).
    TypeChanged,
    /// A value became `null`, or stopped being `null`.
    NullabilityChanged,
    /// The HTTP status changed, or the fetch produced no response at all.
    StatusChanged,
    /// A tracked response header changed (content type) or appeared or disappeared.
    HeaderChanged,
    /// The response violates the endpoint's OpenAPI response contract.
    ContractViolation,
}

impl ChangeType {
    /// Every kind, in declaration order.
    pub const ALL: &'static [ChangeType] = &[
        ChangeType::Added,
        ChangeType::Removed,
        ChangeType::Changed,
        ChangeType::TypeChanged,
        ChangeType::NullabilityChanged,
        ChangeType::StatusChanged,
        ChangeType::HeaderChanged,
        ChangeType::ContractViolation,
    ];

    /// The wire spelling, e.g. `type_changed`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ChangeType::Added => "added",
            ChangeType::Removed => "removed",
            ChangeType::Changed => "changed",
            ChangeType::TypeChanged => "type_changed",
            ChangeType::NullabilityChanged => "nullability_changed",
            ChangeType::StatusChanged => "status_changed",
            ChangeType::HeaderChanged => "header_changed",
            ChangeType::ContractViolation => "contract_violation",
        }
    }
}

impl std::fmt::Display for ChangeType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change of a diff.
///
/// `old_value`/`new_value` distinguish "no value" (`None`, the field is absent on the wire) from
/// "the value was null" (`Some(Value::Null)`, written as `null`), and keep that distinction
/// through a round trip:
///
/// ```
/// use apidrift_model::{ChangeType, DiffChange, Severity};
/// use serde_json::Value;
///
/// let json = r#"{"id":"9c1d4e5b6a703f2a","path":"$.user.email","type":"nullability_changed",
///                "severity":"breaking","message":"value became null","oldValue":"a@example.com",
///                "newValue":null}"#;
/// let change: DiffChange = serde_json::from_str(json)?;
/// assert_eq!(change.change_type, ChangeType::NullabilityChanged);
/// assert_eq!(change.severity, Severity::Breaking);
/// assert_eq!(change.new_value, Some(Value::Null)); // `null` on the wire, not absent
/// assert_eq!(change.old_type, None); // absent on the wire
/// # Ok::<(), serde_json::Error>(())
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffChange {
    /// A stable id: the first 16 hex digits of the SHA-256 of `path + " " + type`, so the same
    /// drift keeps the same id from one diff to the next.
    pub id: String,
    /// Where the change is: `status`, `headers.<lower-case-name>`, or a body path starting at `$`
    /// (`$.data.users[id=42].email`; arrays of keyed objects are written by identity, merged
    /// array elements as `name[]`).
    pub path: String,
    /// The kind of change (`type` on the wire).
    #[serde(rename = "type")]
    pub change_type: ChangeType,
    /// How much it matters.
    pub severity: Severity,
    /// A one-line human-readable description.
    pub message: String,
    /// The baseline's value; `None` when there was none (the field is absent on the wire).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub old_value: Option<Value>,
    /// The current value; `None` when there is none (a removed field, a fetch without response).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub new_value: Option<Value>,
    /// The baseline's JSON type (`string`, `number`, `integer`, `boolean`, `object`, `array`,
    /// `null`) when the change concerns a type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_type: Option<String>,
    /// The current JSON type, spelled like `old_type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_type: Option<String>,
}

/// A field that is present deserialises to `Some`, even when its value is `null`; an absent field
/// falls back to `#[serde(default)]`, i.e. `None`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A diff as lists return it (`GET /diffs`): its identity and its counts, without the changes.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffSummary {
    /// The diff's id.
    pub id: Uuid,
    /// The endpoint the diff belongs to (nullable on the wire).
    pub endpoint_id: Option<Uuid>,
    /// The endpoint's name, when known.
    #[serde(default)]
    pub endpoint_name: Option<String>,
    /// When the check that produced the diff ran.
    #[serde(with = "timestamp::option")]
    pub created_at: Option<OffsetDateTime>,
    /// True once a human has acknowledged the diff (accepting it also makes the response the
    /// new baseline).
    pub accepted: bool,
    /// Changes of severity `breaking`.
    pub breaking_count: u32,
    /// Changes of severity `warning`.
    pub warning_count: u32,
    /// Changes of severity `info`.
    pub info_count: u32,
    /// All changes.
    pub change_count: u32,
    /// When the drift was first seen: the check that opened the diff (its `createdAt`).
    #[serde(default, with = "timestamp::option")]
    pub first_seen_at: Option<OffsetDateTime>,
    /// When a check last saw the same drift (the same fingerprint) while the diff was open.
    #[serde(default, with = "timestamp::option")]
    pub last_seen_at: Option<OffsetDateTime>,
    /// How many checks saw this drift: 1 for the check that opened the diff, one more for every
    /// later check with the same fingerprint while it stayed open.
    #[serde(default = "one")]
    pub seen_count: u32,
}

fn one() -> u32 {
    1
}

/// One diff with all its changes (`GET /diffs/{id}`). Never carries a response body.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffDetail {
    /// The summary fields, flattened into the same JSON object.
    #[serde(flatten)]
    pub base: DiffSummary,
    /// Every change, in a deterministic order: status, tracked headers, then the body in
    /// document order.
    pub changes: Vec<DiffChange>,
    /// The baseline the check was compared with.
    #[serde(default)]
    pub baseline_id: Option<Uuid>,
    /// The check that produced the diff.
    #[serde(default)]
    pub check_id: Option<Uuid>,
    /// Free-form figures about the diff; omitted when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Map<String, Value>>,
}

/// 200 body of `GET /diffs`: one page of diff summaries.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffList {
    /// One page of diffs, newest first.
    pub diffs: Vec<DiffSummary>,
    /// Where the page is in the whole list.
    pub pagination: crate::Pagination,
}

/// 200 body of `GET /diffs/{id}`: one diff with its changes.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffEnvelope {
    /// The diff with its changes.
    pub diff: DiffDetail,
}

/// 200 body of `POST /endpoints/{id}/check`: the outcome of one check. `diffId` is `null` when
/// nothing changed.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResponse {
    /// Always `true` in a 200 answer: a check that cannot run answers an error instead. A fetch
    /// that got no response still completes, as a breaking `status_changed` change.
    pub success: bool,
    /// The diff of the check's drift: a new diff, or the endpoint's open diff with the same
    /// fingerprint that the check was linked to; `null` when the response matched the baseline.
    pub diff_id: Option<Uuid>,
    /// How many checks saw that diff's drift, this one included; `null` without a diff.
    #[serde(default)]
    pub seen_count: Option<u32>,
    /// Changes of severity `breaking`.
    pub breaking_count: u32,
    /// Changes of severity `warning`.
    pub warning_count: u32,
    /// All changes.
    pub change_count: u32,
    /// Alerts queued for delivery because of this check.
    pub alerts_sent: u32,
}
