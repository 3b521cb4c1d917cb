//! Shape inference (schema mode): the types seen at each path, the merged shape of array
//! elements, and which object members are present in all or only some objects. A [`Shape`] is
//! serialisable so that a baseline's shape can be stored and diffed without the baseline body.

use crate::DiffError;
use crate::node::{JsonNode, JsonType};
use crate::parse::MAX_DEPTH;
use crate::path::Seg;
use crate::report::{Pending, Sink};
use crate::rules::Rule;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// A set of JSON types, displayed sorted and joined by `|` (`integer|string`), as a change's
/// `oldType` and `newType` write merged elements.
///
/// ```
/// use apidrift_diff::{JsonType, TypeSet};
/// let set = TypeSet::of(JsonType::String).with(JsonType::Integer);
/// assert_eq!(set.to_string(), "integer|string");
/// assert!(set.contains(JsonType::String) && !set.contains(JsonType::Null));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TypeSet(u8);

impl TypeSet {
    /// The empty set.
    pub const EMPTY: TypeSet = TypeSet(0);

    /// The set of one type.
    pub fn of(t: JsonType) -> TypeSet {
        TypeSet(1 << t.index())
    }
    /// True when `t` is in the set.
    pub fn contains(self, t: JsonType) -> bool {
        self.0 & (1 << t.index()) != 0
    }
    /// True when the set has no type.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The set with `t` added.
    pub fn with(self, t: JsonType) -> TypeSet {
        TypeSet(self.0 | (1 << t.index()))
    }
    /// The set with `t` removed.
    pub fn without(self, t: JsonType) -> TypeSet {
        TypeSet(self.0 & !(1 << t.index()))
    }
    /// The types of this set that are not in `other`.
    pub fn minus(self, other: TypeSet) -> TypeSet {
        TypeSet(self.0 & !other.0)
    }
    /// The types in the set, in written order.
    pub fn iter(self) -> impl Iterator<Item = JsonType> {
        JsonType::ALL.into_iter().filter(move |t| self.contains(*t))
    }
}

impl std::fmt::Display for TypeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for t in self.iter() {
            if !first {
                f.write_str("|")?;
            }
            f.write_str(t.as_str())?;
            first = false;
        }
        Ok(())
    }
}

/// The rule for a change of type set at one path (a new non-null type is `type_changed`, a new
/// `null` is `nullability_changed`, a type that disappears is nothing; the table rows win where
/// they apply; with two differences the more severe wins, the type change on a tie).
pub(crate) fn type_rule(old: TypeSet, new: TypeSet) -> Option<Rule> {
    if old.is_empty() {
        return None;
    }
    let added = new.minus(old);
    if added.is_empty() {
        return None;
    }
    let non_null_added = added.without(JsonType::Null);
    let old_non_null = old.without(JsonType::Null);
    let type_change = if non_null_added.is_empty() {
        None
    } else if old_non_null.is_empty() {
        Some(Rule::BecameNonNull)
    } else if old_non_null == TypeSet::of(JsonType::Integer)
        && non_null_added == TypeSet::of(JsonType::Number)
    {
        Some(Rule::IntegerToNumber)
    } else if old_non_null == TypeSet::of(JsonType::Number)
        && non_null_added == TypeSet::of(JsonType::Integer)
    {
        Some(Rule::NumberToInteger)
    } else {
        Some(Rule::TypeChanged)
    };
    let null_change = added.contains(JsonType::Null).then_some(Rule::BecameNull);
    more_severe(type_change, null_change)
}

/// The more severe of two candidate rules; the first on a tie.
pub(crate) fn more_severe(first: Option<Rule>, second: Option<Rule>) -> Option<Rule> {
    match (first, second) {
        (Some(a), Some(b)) => Some(if b.severity() > a.severity() { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// How many merged values had each type. Serialises as a map from type name to count
/// (`{"integer": 3, "null": 1}`), without the zero counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypeCounts([u64; 7]);

impl TypeCounts {
    /// How many values had type `t`.
    pub fn get(&self, t: JsonType) -> u64 {
        self.0[t.index()]
    }
    /// The types seen at least once.
    pub fn set(&self) -> TypeSet {
        JsonType::ALL
            .into_iter()
            .filter(|t| self.get(*t) > 0)
            .fold(TypeSet::EMPTY, TypeSet::with)
    }
    fn bump(&mut self, t: JsonType) {
        self.0[t.index()] += 1;
    }
    fn sum(&self, set: TypeSet) -> u64 {
        set.iter().map(|t| self.get(t)).sum()
    }
}

impl Serialize for TypeCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map: BTreeMap<&str, u64> = JsonType::ALL
            .into_iter()
            .filter(|t| self.get(*t) > 0)
            .map(|t| (t.as_str(), self.get(t)))
            .collect();
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for TypeCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(d)?;
        let mut counts = TypeCounts::default();
        for (name, n) in map {
            let t = JsonType::from_name(&name)
                .ok_or_else(|| serde::de::Error::custom(format!("unknown JSON type {name:?}")))?;
            counts.0[t.index()] = n;
        }
        Ok(counts)
    }
}

/// The inferred shape of one or more JSON values merged together: the types seen, the object
/// members (and in how many objects each was), and the merged shape of array elements. It
/// (de)serialises with serde, so a baseline can be kept as a shape ([`Input::to_shape`]) and
/// diffed later with [`diff_shape`](crate::diff_shape) without its body.
///
/// ```
/// use apidrift_diff::Shape;
/// let shape = Shape::infer(&serde_json::json!([{"id": 1, "tag": "a"}, {"id": 2}]))?;
/// let items = shape.elements.as_deref().unwrap();
/// assert_eq!(items.object_count(), 2);
/// assert_eq!(items.fields[1].name, "tag");
/// assert_eq!(items.fields[1].count, 1); // in one of the two objects
/// assert_eq!(items.fields[0].shape.type_set().to_string(), "integer");
/// # Ok::<(), apidrift_diff::DiffError>(())
/// ```
///
/// [`Input::to_shape`]: crate::Input::to_shape
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Shape {
    /// How many values were merged.
    pub count: u64,
    /// How many of them had each type (`{"integer": 3, "null": 1}`).
    pub types: TypeCounts,
    /// Members of the object values, in first-seen order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<Field>,
    /// The merged shape of every element of the array values; absent when all were empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elements: Option<Box<Shape>>,
    #[serde(skip)]
    index: FieldIndex,
}

/// One object member of a [`Shape`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Field {
    /// The member name.
    pub name: String,
    /// How many of the merged objects had this member (equal to the shape's object count when
    /// the member is present in all of them).
    pub count: u64,
    /// The merged shape of the member's values.
    pub shape: Shape,
}

/// A name → position index for shapes with many fields (not serialised, rebuilt on demand).
#[derive(Debug, Clone, Default)]
struct FieldIndex(Option<HashMap<String, usize>>);

impl PartialEq for FieldIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

const INDEX_AFTER: usize = 24;

impl Shape {
    /// The shape of one value.
    pub fn infer<J: JsonNode>(value: &J) -> Result<Shape, DiffError> {
        let mut shape = Shape::default();
        shape.add(value, 0)?;
        Ok(shape)
    }

    /// The merged shape of a list of values (`None` when the list is empty).
    pub fn merge<J: JsonNode>(values: &[J]) -> Result<Option<Shape>, DiffError> {
        Self::merge_at(values, 0)
    }

    pub(crate) fn merge_at<J: JsonNode>(
        values: &[J],
        depth: usize,
    ) -> Result<Option<Shape>, DiffError> {
        if values.is_empty() {
            return Ok(None);
        }
        let mut shape = Shape::default();
        for v in values {
            shape.add(v, depth)?;
        }
        Ok(Some(shape))
    }

    /// The set of types merged.
    pub fn type_set(&self) -> TypeSet {
        self.types.set()
    }

    /// How many objects were merged.
    pub fn object_count(&self) -> u64 {
        self.types.get(JsonType::Object)
    }

    /// Merges one more value into the shape, `depth` levels below the document root.
    pub(crate) fn add<J: JsonNode>(&mut self, value: &J, depth: usize) -> Result<(), DiffError> {
        if depth > MAX_DEPTH {
            return Err(DiffError::TooDeep { limit: MAX_DEPTH });
        }
        self.count += 1;
        let t = value.json_type();
        self.types.bump(t);
        match t {
            JsonType::Object => {
                for (pos, (key, child)) in value.entries().enumerate() {
                    let slot = self.slot(pos, key);
                    let field = &mut self.fields[slot];
                    field.count += 1;
                    field.shape.add(child, depth + 1)?;
                }
            }
            JsonType::Array => {
                for child in value.elements() {
                    self.elements
                        .get_or_insert_with(Box::default)
                        .add(child, depth + 1)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Merges another shape into this one (as if its values had been added here).
    pub(crate) fn absorb(&mut self, other: &Shape) {
        self.count += other.count;
        for t in JsonType::ALL {
            self.types.0[t.index()] += other.types.get(t);
        }
        for (pos, field) in other.fields.iter().enumerate() {
            let slot = self.slot(pos, &field.name);
            let mine = &mut self.fields[slot];
            mine.count += field.count;
            mine.shape.absorb(&field.shape);
        }
        if let Some(el) = &other.elements {
            self.elements.get_or_insert_with(Box::default).absorb(el);
        }
    }

    fn slot(&mut self, pos: usize, key: &str) -> usize {
        if self.fields.get(pos).is_some_and(|f| f.name == key) {
            return pos;
        }
        let found = match &self.index.0 {
            Some(map) => map.get(key).copied(),
            None => self.fields.iter().position(|f| f.name == key),
        };
        if let Some(at) = found {
            return at;
        }
        let at = self.fields.len();
        self.fields.push(Field {
            name: key.to_owned(),
            count: 0,
            shape: Shape::default(),
        });
        if let Some(map) = &mut self.index.0 {
            map.insert(key.to_owned(), at);
        } else if self.fields.len() > INDEX_AFTER {
            self.index.0 = Some(
                self.fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (f.name.clone(), i))
                    .collect(),
            );
        }
        at
    }
}

/// Finds fields of a shape by name: by position first, then by scan or a built map.
struct FieldLookup<'s> {
    fields: &'s [Field],
    map: Option<HashMap<&'s str, &'s Field>>,
}

impl<'s> FieldLookup<'s> {
    fn new(shape: &'s Shape) -> FieldLookup<'s> {
        FieldLookup {
            fields: &shape.fields,
            map: None,
        }
    }
    fn get(&mut self, pos: usize, name: &str) -> Option<&'s Field> {
        if let Some(f) = self.fields.get(pos)
            && f.name == name
        {
            return Some(f);
        }
        if self.fields.len() <= INDEX_AFTER {
            return self.fields.iter().find(|f| f.name == name);
        }
        let fields = self.fields;
        self.map
            .get_or_insert_with(|| fields.iter().map(|f| (f.name.as_str(), f)).collect())
            .get(name)
            .copied()
    }
}

/// A type in words, with its article: `a string`, `an integer`, `null`.
pub(crate) fn a_type(t: JsonType) -> &'static str {
    match t {
        JsonType::Array => "an array",
        JsonType::Boolean => "a boolean",
        JsonType::Integer => "an integer",
        JsonType::Null => "null",
        JsonType::Number => "a number",
        JsonType::Object => "an object",
        JsonType::String => "a string",
    }
}

/// A type set in words: `an integer or a string` (`articles`) or `integer or string`.
pub(crate) fn set_words(set: TypeSet, articles: bool) -> String {
    let words: Vec<&str> = set
        .iter()
        .map(|t| if articles { a_type(t) } else { t.as_str() })
        .collect();
    words.join(" or ")
}

/// ` in 2 of 3 items`, ` in all 3 items`, or nothing for a single item.
fn in_items(k: u64, n: u64) -> String {
    if n <= 1 {
        String::new()
    } else if k == n {
        format!(" in all {n} items")
    } else {
        format!(" in {k} of {n} items")
    }
}

/// The type-set change between two shapes, as a pending change (no values: shapes keep none).
pub(crate) fn type_change(old: &Shape, new: &Shape) -> Option<Pending> {
    let (old_set, new_set) = (old.type_set(), new.type_set());
    let rule = type_rule(old_set, new_set)?;
    let added = new_set.minus(old_set);
    let non_null_added = added.without(JsonType::Null);
    let concerned = match rule {
        Rule::BecameNull => new.types.get(JsonType::Null),
        _ => new.types.sum(non_null_added),
    };
    let n = new.count;
    let message = match rule {
        Rule::BecameNull if n <= 1 => "value became null".to_owned(),
        Rule::BecameNull => format!("became null{}", in_items(concerned, n)),
        Rule::BecameNonNull => format!(
            "no longer null{}, now {}",
            in_items(concerned, n),
            set_words(non_null_added, true)
        ),
        _ => format!(
            "type changed from {} to {}{}",
            set_words(old_set, false),
            set_words(non_null_added, false),
            in_items(concerned, n)
        ),
    };
    let mut pending =
        Pending::new(rule, message).types(Some(old_set.to_string()), Some(new_set.to_string()));
    // A value that is null on either side is known without keeping values.
    if old_set == TypeSet::of(JsonType::Null) {
        pending.old = Some((serde_json::Value::Null, None));
    }
    if new_set == TypeSet::of(JsonType::Null) {
        pending.new = Some((serde_json::Value::Null, None));
    }
    Some(pending)
}

/// Compares two shapes at `path` (schema mode), emitting one change per path.
pub(crate) fn compare<'s, S: Sink + ?Sized>(
    em: &mut S,
    path: &mut Vec<Seg<'s>>,
    old: &'s Shape,
    new: &'s Shape,
    presence: Option<Pending>,
    depth: usize,
) -> Result<(), DiffError> {
    if depth > MAX_DEPTH {
        return Err(DiffError::TooDeep { limit: MAX_DEPTH });
    }
    let typed = type_change(old, new);
    let chosen = match (typed, presence) {
        (Some(t), Some(p)) => Some(if p.rule.severity() > t.rule.severity() {
            p
        } else {
            t
        }),
        (t, p) => t.or(p),
    };
    if let Some(p) = chosen {
        em.body(path, None, p);
    }
    let (old_objects, new_objects) = (old.object_count(), new.object_count());
    if old_objects > 0 && new_objects > 0 {
        let mut lookup = FieldLookup::new(new);
        let mut matched = 0usize;
        for (pos, field) in old.fields.iter().enumerate() {
            let Some(now) = lookup.get(pos, &field.name) else {
                let was = set_words(field.shape.type_set(), true);
                let (rule, message) = if field.count == old_objects {
                    let every = if new_objects > 1 {
                        " from every item"
                    } else {
                        ""
                    };
                    (
                        Rule::FieldRemoved,
                        format!("field removed{every} (was {was})"),
                    )
                } else {
                    (
                        Rule::FieldGoneFromSome,
                        format!(
                            "optional field removed (was in {} of {old_objects} items)",
                            field.count
                        ),
                    )
                };
                let pending = Pending::new(rule, message)
                    .types(Some(field.shape.type_set().to_string()), None);
                em.body(path, Some(Seg::Key(&field.name)), pending);
                continue;
            };
            matched += 1;
            let presence = (field.count == old_objects && now.count < new_objects).then(|| {
                Pending::new(
                    Rule::FieldRemovedFromSome,
                    format!(
                        "field missing from {} of {new_objects} items",
                        new_objects - now.count
                    ),
                )
                .types(
                    Some(field.shape.type_set().to_string()),
                    Some(now.shape.type_set().to_string()),
                )
            });
            path.push(Seg::Key(&field.name));
            compare(em, path, &field.shape, &now.shape, presence, depth + 1)?;
            path.pop();
        }
        if matched < new.fields.len() {
            let mut old_lookup = FieldLookup::new(old);
            for (pos, field) in new.fields.iter().enumerate() {
                if old_lookup.get(pos, &field.name).is_some() {
                    continue;
                }
                let what = set_words(field.shape.type_set(), true);
                let (rule, message) = if field.count == new_objects {
                    (
                        Rule::FieldAdded,
                        format!("field added{} ({what})", in_items(field.count, new_objects)),
                    )
                } else {
                    (
                        Rule::FieldAddedInSome,
                        format!(
                            "field added in {} of {new_objects} items ({what})",
                            field.count
                        ),
                    )
                };
                let pending = Pending::new(rule, message)
                    .types(None, Some(field.shape.type_set().to_string()));
                em.body(path, Some(Seg::Key(&field.name)), pending);
            }
        }
    }
    if let (Some(old_el), Some(new_el)) = (&old.elements, &new.elements) {
        path.push(Seg::Merged);
        compare(em, path, old_el, new_el, None, depth + 1)?;
        path.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(types: &[JsonType]) -> TypeSet {
        types.iter().copied().fold(TypeSet::EMPTY, TypeSet::with)
    }

    #[test]
    fn type_sets_follow_the_table_and_the_set_rule() {
        use JsonType::*;
        assert_eq!(
            type_rule(set(&[String]), set(&[Integer])),
            Some(Rule::TypeChanged)
        );
        assert_eq!(
            type_rule(set(&[Integer]), set(&[Number])),
            Some(Rule::IntegerToNumber)
        );
        assert_eq!(
            type_rule(set(&[Integer]), set(&[Integer, Number])),
            Some(Rule::IntegerToNumber)
        );
        assert_eq!(
            type_rule(set(&[Number]), set(&[Integer])),
            Some(Rule::NumberToInteger)
        );
        assert_eq!(
            type_rule(set(&[String]), set(&[Null])),
            Some(Rule::BecameNull)
        );
        assert_eq!(
            type_rule(set(&[Null]), set(&[String])),
            Some(Rule::BecameNonNull)
        );
        assert_eq!(
            type_rule(set(&[Null]), set(&[Null, Integer])),
            Some(Rule::BecameNonNull)
        );
        assert_eq!(type_rule(set(&[String, Integer]), set(&[Integer])), None);
        assert_eq!(
            type_rule(set(&[Integer, String]), set(&[Number])),
            Some(Rule::TypeChanged)
        );
        // Two differences: the more severe wins.
        assert_eq!(
            type_rule(set(&[Integer]), set(&[Number, Null])),
            Some(Rule::BecameNull)
        );
        assert_eq!(
            type_rule(set(&[String]), set(&[Integer, Null])),
            Some(Rule::TypeChanged)
        );
        assert_eq!(set(&[String, Integer]).to_string(), "integer|string");
    }

    #[test]
    fn shapes_round_trip_through_json() -> Result<(), Box<dyn std::error::Error>> {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"a":[{"x":1},{"x":"s","y":null}],"b":[]}"#)?;
        let shape = Shape::infer(&v)?;
        let text = serde_json::to_string(&shape)?;
        let back: Shape = serde_json::from_str(&text)?;
        assert_eq!(back, shape);
        let a = &shape.fields[0].shape;
        let el = a.elements.as_deref().ok_or("no elements")?;
        assert_eq!(el.count, 2);
        assert_eq!(el.fields[0].count, 2);
        assert_eq!(el.fields[1].count, 1);
        assert_eq!(el.fields[0].shape.type_set().to_string(), "integer|string");
        assert!(shape.fields[1].shape.elements.is_none());
        Ok(())
    }

    #[test]
    fn absorbing_shapes_equals_merging_their_values() -> Result<(), Box<dyn std::error::Error>> {
        let x: serde_json::Value = serde_json::from_str(r#"{"a":1,"b":[{"c":null}],"d":"s"}"#)?;
        let y: serde_json::Value = serde_json::from_str(r#"{"a":"t","b":[{"c":2},{"e":[]}]}"#)?;
        let mut absorbed = Shape::infer(&x)?;
        absorbed.absorb(&Shape::infer(&y)?);
        let merged = Shape::merge(&[x, y])?.ok_or("no shape")?;
        assert_eq!(absorbed, merged);
        let mut empty = Shape::default();
        empty.absorb(&merged);
        assert_eq!(empty, merged);
        Ok(())
    }
}
