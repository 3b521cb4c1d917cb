//! The JSON tree the engine walks: a small trait ([`JsonNode`]) implemented for
//! `serde_json::Value` (for integrators) and for the crate's own exact, borrowed document
//! ([`Json`], produced by [`crate::parse`]), which keeps number tokens as text.

use serde_json::Value;
use std::borrow::Cow;

/// A JSON type as changes name it (`oldType`, `newType`, messages). `integer` is a number
/// token without fraction or exponent; `number` is any other number.
///
/// ```
/// use apidrift_diff::{JsonType, type_of};
/// assert_eq!(type_of(&serde_json::json!(1)), JsonType::Integer);
/// assert_eq!(type_of(&serde_json::json!(1.0)), JsonType::Number);
/// assert_eq!(JsonType::from_name("string"), Some(JsonType::String));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JsonType {
    /// `[...]`
    Array,
    /// `true` or `false`
    Boolean,
    /// A number without fraction or exponent (`42`).
    Integer,
    /// `null`
    Null,
    /// A number with a fraction or an exponent (`1.5`, `1.0`, `1e3`).
    Number,
    /// `{...}`
    Object,
    /// `"..."`
    String,
}

impl JsonType {
    /// Every type, in the (alphabetical) order sets are written in.
    pub const ALL: [JsonType; 7] = [
        JsonType::Array,
        JsonType::Boolean,
        JsonType::Integer,
        JsonType::Null,
        JsonType::Number,
        JsonType::Object,
        JsonType::String,
    ];

    /// The name: `string`, `number`, `integer`, `boolean`, `object`, `array`, `null`.
    pub const fn as_str(self) -> &'static str {
        match self {
            JsonType::Array => "array",
            JsonType::Boolean => "boolean",
            JsonType::Integer => "integer",
            JsonType::Null => "null",
            JsonType::Number => "number",
            JsonType::Object => "object",
            JsonType::String => "string",
        }
    }

    /// Parses a name written by [`JsonType::as_str`].
    pub fn from_name(name: &str) -> Option<JsonType> {
        JsonType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// True for values that have no children.
    pub const fn is_leaf(self) -> bool {
        !matches!(self, JsonType::Array | JsonType::Object)
    }
}

impl std::fmt::Display for JsonType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The JSON type of a `serde_json::Value` (`1` is `integer`, `1.0` is `number`).
pub fn type_of(value: &Value) -> JsonType {
    value.json_type()
}

/// The JSON type of a `serde_json::Value` as its name (`"integer"`).
pub fn type_name(value: &Value) -> &'static str {
    value.json_type().as_str()
}

/// A number as a tree holds it: the exact token text, or a `serde_json::Number`.
///
/// ```
/// use apidrift_diff::Num;
/// assert!(Num::Token("1.0").equals(Num::Token("1.00")));
/// assert!(!Num::Token("1").equals(Num::Token("2")));
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Num<'a> {
    /// The token as written in the text ([`Json`] documents).
    Token(&'a str),
    /// A number of a `serde_json::Value`.
    Json(&'a serde_json::Number),
}

impl Num<'_> {
    /// Numeric equality within one type (`1.0` = `1.00`; integers exact at any size).
    pub fn equals(self, other: Num<'_>) -> bool {
        match (self, other) {
            (Num::Token(a), Num::Token(b)) => crate::number::tokens_equal(a, b),
            (Num::Json(a), Num::Json(b)) => {
                if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
                    x == y
                } else if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
                    x == y
                } else {
                    a.as_f64() == b.as_f64() && a.is_f64() == b.is_f64()
                }
            }
            (a, b) => crate::number::tokens_equal(&a.text(), &b.text()),
        }
    }

    /// The number as JSON text.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Num::Token(t) => Cow::Borrowed(t),
            Num::Json(n) => Cow::Owned(n.to_string()),
        }
    }

    /// The number as a `serde_json::Value`, and the exact token when the value cannot hold it
    /// (integers beyond 64 bits, numbers beyond `f64`).
    pub(crate) fn to_value(self) -> (Value, Option<Box<str>>) {
        match self {
            Num::Json(n) => (Value::Number(n.clone()), None),
            Num::Token(t) => {
                if crate::number::token_is_integer(t) {
                    if let Ok(i) = t.parse::<i64>() {
                        return (Value::from(i), None);
                    }
                    if let Ok(u) = t.parse::<u64>() {
                        return (Value::from(u), None);
                    }
                } else if let Ok(f) = t.parse::<f64>()
                    && let Some(n) = serde_json::Number::from_f64(f)
                {
                    // Exact enough: the value is a `number` and compares numerically.
                    return (Value::Number(n), None);
                }
                let approx = t
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map_or_else(|| Value::String(t.to_owned()), Value::Number);
                (approx, Some(t.into()))
            }
        }
    }
}

/// What the engine needs from a JSON tree. Implemented for `serde_json::Value` and [`Json`].
///
/// The trait is sealed (it cannot be implemented outside this crate), so that the engine can
/// ask more of a tree in a minor version; its methods can be called on either tree.
pub trait JsonNode: Sized + sealed::Sealed {
    /// Iterator over an object's members in the tree's order.
    type Entries<'a>: Iterator<Item = (&'a str, &'a Self)>
    where
        Self: 'a;

    /// The JSON type of this value.
    fn json_type(&self) -> JsonType;
    /// The value of a boolean.
    fn as_bool(&self) -> Option<bool>;
    /// The value of a string.
    fn as_str(&self) -> Option<&str>;
    /// The value of a number (integer or number).
    fn as_num(&self) -> Option<Num<'_>>;
    /// An array's elements; empty for anything else.
    fn elements(&self) -> &[Self];
    /// An object's members; empty for anything else.
    fn entries(&self) -> Self::Entries<'_>;
    /// How many members an object has (0 for anything else).
    fn entry_count(&self) -> usize;
    /// One member of an object.
    fn get(&self, key: &str) -> Option<&Self>;

    /// The value as a `serde_json::Value` when it is a leaf (`None` for objects and arrays), plus
    /// the exact number token when `serde_json` cannot hold it.
    fn leaf_value(&self) -> Option<(Value, Option<Box<str>>)> {
        match self.json_type() {
            JsonType::Null => Some((Value::Null, None)),
            JsonType::Boolean => self.as_bool().map(|b| (Value::Bool(b), None)),
            JsonType::String => self.as_str().map(|s| (Value::String(s.to_owned()), None)),
            JsonType::Integer | JsonType::Number => self.as_num().map(Num::to_value),
            JsonType::Array | JsonType::Object => None,
        }
    }
}

mod sealed {
    /// Implemented by the trees [`JsonNode`](super::JsonNode) supports, only.
    pub trait Sealed {}
    impl Sealed for serde_json::Value {}
    impl Sealed for super::Json<'_> {}
}

impl JsonNode for Value {
    type Entries<'a> = std::iter::Map<
        serde_json::map::Iter<'a>,
        fn((&'a String, &'a Value)) -> (&'a str, &'a Value),
    >;

    fn json_type(&self) -> JsonType {
        match self {
            Value::Null => JsonType::Null,
            Value::Bool(_) => JsonType::Boolean,
            Value::Number(n) if n.is_f64() => JsonType::Number,
            Value::Number(_) => JsonType::Integer,
            Value::String(_) => JsonType::String,
            Value::Array(_) => JsonType::Array,
            Value::Object(_) => JsonType::Object,
        }
    }
    fn as_bool(&self) -> Option<bool> {
        Value::as_bool(self)
    }
    fn as_str(&self) -> Option<&str> {
        Value::as_str(self)
    }
    fn as_num(&self) -> Option<Num<'_>> {
        match self {
            Value::Number(n) => Some(Num::Json(n)),
            _ => None,
        }
    }
    fn elements(&self) -> &[Self] {
        match self {
            Value::Array(a) => a,
            _ => &[],
        }
    }
    fn entries(&self) -> Self::Entries<'_> {
        static EMPTY: std::sync::OnceLock<serde_json::Map<String, Value>> =
            std::sync::OnceLock::new();
        let map = match self {
            Value::Object(m) => m,
            _ => EMPTY.get_or_init(serde_json::Map::new),
        };
        map.iter().map(|(k, v)| (k.as_str(), v))
    }
    fn entry_count(&self) -> usize {
        match self {
            Value::Object(m) => m.len(),
            _ => 0,
        }
    }
    fn get(&self, key: &str) -> Option<&Self> {
        match self {
            Value::Object(m) => m.get(key),
            _ => None,
        }
    }
}

/// The crate's own JSON document: borrowed from the source text, number tokens kept exactly,
/// object members in document order (duplicate keys: the last value wins, at the first position).
///
/// [`parse`](crate::parse) reads one from text:
///
/// ```
/// use apidrift_diff::{Json, parse};
/// let doc = parse(r#"{"big": 123456789012345678901234567890, "f": 1.0}"#)?;
/// let Json::Object(members) = &doc else { unreachable!() };
/// assert_eq!(members[0].1, Json::Number("123456789012345678901234567890"));
/// assert_eq!(members[1].1, Json::Number("1.0"));
/// # Ok::<(), apidrift_diff::ParseError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// The number token as written (`1`, `1.0`, `1e3`, `123456789012345678901234567890`).
    Number(&'a str),
    /// A string, unescaped (borrowed from the text when it had no escapes).
    String(Cow<'a, str>),
    /// An array's elements.
    Array(Box<[Json<'a>]>),
    /// An object's members, in document order.
    Object(Box<[(Cow<'a, str>, Json<'a>)]>),
}

impl Json<'_> {
    /// Converts to a `serde_json::Value` (numbers beyond `serde_json`'s range are approximated).
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(t) => Num::Token(t).to_value().0,
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
        }
    }
}

fn entry_pair<'a, 'b>(e: &'a (Cow<'b, str>, Json<'b>)) -> (&'a str, &'a Json<'b>) {
    (e.0.as_ref(), &e.1)
}

impl<'b> JsonNode for Json<'b> {
    type Entries<'a>
        = std::iter::Map<
        std::slice::Iter<'a, (Cow<'b, str>, Json<'b>)>,
        fn(&'a (Cow<'b, str>, Json<'b>)) -> (&'a str, &'a Json<'b>),
    >
    where
        Self: 'a;

    fn json_type(&self) -> JsonType {
        match self {
            Json::Null => JsonType::Null,
            Json::Bool(_) => JsonType::Boolean,
            Json::Number(t) if crate::number::token_is_integer(t) => JsonType::Integer,
            Json::Number(_) => JsonType::Number,
            Json::String(_) => JsonType::String,
            Json::Array(_) => JsonType::Array,
            Json::Object(_) => JsonType::Object,
        }
    }
    fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }
    fn as_num(&self) -> Option<Num<'_>> {
        match self {
            Json::Number(t) => Some(Num::Token(t)),
            _ => None,
        }
    }
    fn elements(&self) -> &[Self] {
        match self {
            Json::Array(a) => a,
            _ => &[],
        }
    }
    fn entries(&self) -> Self::Entries<'_> {
        let members: &[(Cow<'b, str>, Json<'b>)] = match self {
            Json::Object(m) => m,
            _ => &[],
        };
        members.iter().map(entry_pair)
    }
    fn entry_count(&self) -> usize {
        match self {
            Json::Object(m) => m.len(),
            _ => 0,
        }
    }
    fn get(&self, key: &str) -> Option<&Self> {
        match self {
            Json::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}
