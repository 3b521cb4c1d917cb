//! The severity rules, each with a stable id (documented in `docs/severity.md`).

use apidrift_model::{ChangeType, Severity};

/// Where a rule's changes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// `status`.
    Status,
    /// `headers.<name>`.
    Header,
    /// A body path (`$…`).
    Body,
}

/// One row of the severity table (see the crate documentation). Every change the engine emits
/// comes from exactly one rule, which fixes its type and severity.
///
/// ```
/// use apidrift_diff::{ChangeType, Rule, Severity};
/// assert_eq!(Rule::FieldRemoved.id(), "field-removed");
/// assert_eq!(Rule::FieldRemoved.change_type(), ChangeType::Removed);
/// assert_eq!(Rule::FieldRemoved.severity(), Severity::Breaking);
/// assert!(Rule::ALL.iter().any(|r| r.id() == "contract-violation"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// An object member is gone (merged elements: it was in every item and is in none).
    FieldRemoved,
    /// Merged elements: a member every baseline item had is missing from some current items.
    FieldRemovedFromSome,
    /// Merged elements: a member only some baseline items had is gone from every current item.
    FieldGoneFromSome,
    /// An object member appears (merged elements: in every current item).
    FieldAdded,
    /// Merged elements: a member no baseline item had appears in some current items.
    FieldAddedInSome,
    /// The JSON type changed (string, number, integer, boolean, object, array).
    TypeChanged,
    /// An integer becomes a number with a fraction.
    IntegerToNumber,
    /// A number becomes an integer.
    NumberToInteger,
    /// A value becomes `null`.
    BecameNull,
    /// A `null` becomes a value.
    BecameNonNull,
    /// Full mode: a leaf value changed within its type.
    ValueChanged,
    /// Full mode: an item paired by identity key is gone.
    ItemRemoved,
    /// Full mode: an item paired by identity key is new.
    ItemAdded,
    /// Full mode, items paired by position: the current array is shorter.
    ElementRemoved,
    /// Full mode, items paired by position: the current array is longer.
    ElementAdded,
    /// Full mode: a non-JSON body's SHA-256 differs.
    TextBodyChanged,
    /// The status was 2xx and is not now.
    StatusLeft2xx,
    /// The fetch produced no response.
    NoResponse,
    /// Any other status change.
    StatusChanged,
    /// The content type was JSON and is not now (or is gone).
    ContentTypeNotJson,
    /// Any other content-type change (parameters such as `charset` are ignored).
    ContentTypeChanged,
    /// A `Deprecation` or `Sunset` header appears.
    DeprecationAppeared,
    /// A `Deprecation` or `Sunset` header disappears.
    DeprecationDisappeared,
    /// Another tracked header appears or disappears.
    HeaderPresence,
    /// The body violates its OpenAPI response contract.
    ContractViolation,
}

impl Rule {
    /// Every rule, in the order of the severity table.
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

    /// The stable rule id (`field-removed`).
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

    /// The rule with this id (`"field-added"`), if there is one.
    ///
    /// ```
    /// use apidrift_diff::Rule;
    /// assert_eq!(Rule::from_id("field-added"), Some(Rule::FieldAdded));
    /// assert_eq!(Rule::from_id("added"), None);
    /// ```
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.id() == id)
    }

    /// Where the changes of this rule are: at `status`, at a tracked header or in the body.
    pub(crate) const fn place(self) -> Place {
        match self {
            Rule::StatusLeft2xx | Rule::NoResponse | Rule::StatusChanged => Place::Status,
            Rule::ContentTypeNotJson
            | Rule::ContentTypeChanged
            | Rule::DeprecationAppeared
            | Rule::DeprecationDisappeared
            | Rule::HeaderPresence => Place::Header,
            _ => Place::Body,
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
