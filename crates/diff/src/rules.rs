//! The severity rules of D9, each with a stable id (documented in `docs/severity.md`).

use apidrift_model::{ChangeType, Severity};

/// One row of the severity table (plus the details D9 adds). Every change the engine emits comes
/// from exactly one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    FieldRemoved,
    FieldRemovedFromSome,
    FieldGoneFromSome,
    FieldAdded,
    FieldAddedInSome,
    TypeChanged,
    IntegerToNumber,
    NumberToInteger,
    BecameNull,
    BecameNonNull,
    ValueChanged,
    ItemRemoved,
    ItemAdded,
    ElementRemoved,
    ElementAdded,
    TextBodyChanged,
    StatusLeft2xx,
    NoResponse,
    StatusChanged,
    ContentTypeNotJson,
    ContentTypeChanged,
    DeprecationAppeared,
    DeprecationDisappeared,
    HeaderPresence,
    ContractViolation,
}

impl Rule {
    /// Every rule, in the order of `docs/severity.md`.
    pub const ALL: &'static [Rule] = &[
        Rule::FieldRemoved,
        Rule::FieldRemovedFromSome,
        Rule::FieldGoneFromSome,
        Rule::FieldAdded,
        Rule::FieldAddedInSome,
        Rule::TypeChanged,
        Rule::IntegerToNumber,
        Rule::NumberToInteger,
        Rule::BecameNull,
        Rule::BecameNonNull,
        Rule::ValueChanged,
        Rule::ItemRemoved,
        Rule::ItemAdded,
        Rule::ElementRemoved,
        Rule::ElementAdded,
        Rule::TextBodyChanged,
        Rule::StatusLeft2xx,
        Rule::NoResponse,
        Rule::StatusChanged,
        Rule::ContentTypeNotJson,
        Rule::ContentTypeChanged,
        Rule::DeprecationAppeared,
        Rule::DeprecationDisappeared,
        Rule::HeaderPresence,
        Rule::ContractViolation,
    ];

    /// The stable rule id.
    pub const fn id(self) -> &'static str {
        match self {
            Rule::FieldRemoved => "field-removed",
            Rule::FieldRemovedFromSome => "field-removed-from-some",
            Rule::FieldGoneFromSome => "optional-field-removed",
            Rule::FieldAdded => "field-added",
            Rule::FieldAddedInSome => "field-added-in-some",
            Rule::TypeChanged => "type-changed",
            Rule::IntegerToNumber => "integer-to-number",
            Rule::NumberToInteger => "number-to-integer",
            Rule::BecameNull => "became-null",
            Rule::BecameNonNull => "became-non-null",
            Rule::ValueChanged => "value-changed",
            Rule::ItemRemoved => "keyed-item-removed",
            Rule::ItemAdded => "keyed-item-added",
            Rule::ElementRemoved => "element-removed",
            Rule::ElementAdded => "element-added",
            Rule::TextBodyChanged => "text-body-changed",
            Rule::StatusLeft2xx => "status-left-2xx",
            Rule::NoResponse => "no-response",
            Rule::StatusChanged => "status-changed",
            Rule::ContentTypeNotJson => "content-type-not-json",
            Rule::ContentTypeChanged => "content-type-changed",
            Rule::DeprecationAppeared => "deprecation-appeared",
            Rule::DeprecationDisappeared => "deprecation-disappeared",
            Rule::HeaderPresence => "header-presence",
            Rule::ContractViolation => "contract-violation",
        }
    }

    /// The change type this rule emits.
    pub const fn change_type(self) -> ChangeType {
        match self {
            Rule::FieldRemoved
            | Rule::FieldRemovedFromSome
            | Rule::FieldGoneFromSome
            | Rule::ItemRemoved
            | Rule::ElementRemoved => ChangeType::Removed,
            Rule::FieldAdded | Rule::FieldAddedInSome | Rule::ItemAdded | Rule::ElementAdded => {
                ChangeType::Added
            }
            Rule::TypeChanged | Rule::IntegerToNumber | Rule::NumberToInteger => {
                ChangeType::TypeChanged
            }
            Rule::BecameNull | Rule::BecameNonNull => ChangeType::NullabilityChanged,
            Rule::ValueChanged | Rule::TextBodyChanged => ChangeType::Changed,
            Rule::StatusLeft2xx | Rule::NoResponse | Rule::StatusChanged => {
                ChangeType::StatusChanged
            }
            Rule::ContentTypeNotJson
            | Rule::ContentTypeChanged
            | Rule::DeprecationAppeared
            | Rule::DeprecationDisappeared
            | Rule::HeaderPresence => ChangeType::HeaderChanged,
            Rule::ContractViolation => ChangeType::ContractViolation,
        }
    }

    /// The severity this rule gives.
    pub const fn severity(self) -> Severity {
        match self {
            Rule::FieldRemoved
            | Rule::TypeChanged
            | Rule::BecameNull
            | Rule::StatusLeft2xx
            | Rule::NoResponse
            | Rule::ContentTypeNotJson
            | Rule::ContractViolation => Severity::Breaking,
            Rule::FieldRemovedFromSome
            | Rule::FieldGoneFromSome
            | Rule::IntegerToNumber
            | Rule::ItemRemoved
            | Rule::ElementRemoved
            | Rule::StatusChanged
            | Rule::ContentTypeChanged
            | Rule::DeprecationAppeared => Severity::Warning,
            Rule::FieldAdded
            | Rule::FieldAddedInSome
            | Rule::NumberToInteger
            | Rule::BecameNonNull
            | Rule::ValueChanged
            | Rule::ItemAdded
            | Rule::ElementAdded
            | Rule::TextBodyChanged
            | Rule::DeprecationDisappeared
            | Rule::HeaderPresence => Severity::Info,
        }
    }
}
