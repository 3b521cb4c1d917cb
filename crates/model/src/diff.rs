//! Diffs and their changes (spec "DiffSummary", "DiffDetail", "DiffChange") and the check result.

use crate::timestamp;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

/// How much a change matters (D9). Ordered: `Info < Warning < Breaking`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    Info,
    Warning,
    Breaking,
}

impl Severity {
    pub const ALL: &'static [Severity] = &[Severity::Info, Severity::Warning, Severity::Breaking];

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

/// What kind of change (D9).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeType {
    Added,
    Removed,
    Changed,
    TypeChanged,
    NullabilityChanged,
    StatusChanged,
    HeaderChanged,
    ContractViolation,
}

impl ChangeType {
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

/// One change of a diff. `old_value`/`new_value` distinguish "no value" (`None`, the field is
/// absent on the wire) from "the value was null" (`Some(Value::Null)`, written as `null`), and keep
/// that distinction through a round trip.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffChange {
    pub id: String,
    pub path: String,
    #[serde(rename = "type")]
    pub change_type: ChangeType,
    pub severity: Severity,
    pub message: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub old_value: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub new_value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_type: Option<String>,
}

/// A field that is present deserialises to `Some`, even when its value is `null`; an absent field
/// falls back to `#[serde(default)]`, i.e. `None`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A diff as lists return it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffSummary {
    pub id: Uuid,
    pub endpoint_id: Option<Uuid>,
    #[serde(default)]
    pub endpoint_name: Option<String>,
    #[serde(with = "timestamp::option")]
    pub created_at: Option<OffsetDateTime>,
    /// True once a human has acknowledged the diff (D12).
    pub accepted: bool,
    pub breaking_count: u32,
    pub warning_count: u32,
    pub info_count: u32,
    pub change_count: u32,
}

/// One diff with all its changes (`GET /diffs/{id}`). Never carries a response body.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffDetail {
    #[serde(flatten)]
    pub base: DiffSummary,
    pub changes: Vec<DiffChange>,
    #[serde(default)]
    pub baseline_id: Option<Uuid>,
    #[serde(default)]
    pub check_id: Option<Uuid>,
    /// Free-form figures about the diff; omitted when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Map<String, Value>>,
}

/// 200 body of `GET /diffs`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffList {
    pub diffs: Vec<DiffSummary>,
    pub pagination: crate::Pagination,
}

/// 200 body of `GET /diffs/{id}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffEnvelope {
    pub diff: DiffDetail,
}

/// 200 body of `POST /endpoints/{id}/check`. `diffId` is `null` when nothing changed.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResponse {
    pub success: bool,
    pub diff_id: Option<Uuid>,
    pub breaking_count: u32,
    pub warning_count: u32,
    pub change_count: u32,
    pub alerts_sent: u32,
}
