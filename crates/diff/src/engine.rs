//! The walk: status, tracked headers, then the body, in document order. Objects pair members by
//! key (in lockstep while both sides list the same keys, then through a lookup); arrays pair by
//! identity (one hash map per array) or by position; schema mode merges array elements into
//! shapes. Recursion is bounded by [`MAX_DEPTH`].

use crate::node::{JsonNode, JsonType, Num};
use crate::parse::MAX_DEPTH;
use crate::path::{IdentValue, Seg};
use crate::pattern::BY_VALUE;
use crate::report::{Coverage, Emitter, Pending, Sink};
use crate::rules::Rule;
use crate::shape::{self, Shape, TypeSet, a_type};
use crate::{Body, DiffError, DiffMode, Input, Options};
use std::collections::HashMap;

type Hasher = foldhash::fast::RandomState;

/// Status and header changes (D9 rows "status …", "content type …", "… header …").
pub(crate) fn compare_meta<A, B>(
    em: &mut Emitter<'_>,
    old: &Input<A>,
    new: &Input<B>,
    options: &Options,
) {
    if let (Some(a), Some(b)) = (old.status, new.status)
        && a != b
    {
        let ok = |s: u16| (200..300).contains(&s);
        let rule = if ok(a) && !ok(b) {
            Rule::StatusLeft2xx
        } else {
            Rule::StatusChanged
        };
        em.status(
            Pending::new(rule, format!("status changed from {a} to {b}"))
                .values(Some((a.into(), None)), Some((b.into(), None))),
        );
    }
    let (Some(old_headers), Some(new_headers)) = (&old.headers, &new.headers) else {
        return;
    };
    for name in &options.tracked_headers {
        let name = name.to_ascii_lowercase();
        let a = header(old_headers, &name);
        let b = header(new_headers, &name);
        if name == "content-type" {
            let (a, b) = (a.map(media_type), b.map(media_type));
            if a == b {
                continue;
            }
            let was_json = a.as_deref().is_some_and(is_json_media_type);
            let is_json = b.as_deref().is_some_and(is_json_media_type);
            let rule = if was_json && !is_json {
                Rule::ContentTypeNotJson
            } else {
                Rule::ContentTypeChanged
            };
            let message = format!(
                "content type changed from {} to {}",
                a.as_deref().unwrap_or("(none)"),
                b.as_deref().unwrap_or("(none)")
            );
            em.header(
                &name,
                Pending::new(rule, message)
                    .values(a.map(|s| (s.into(), None)), b.map(|s| (s.into(), None))),
            );
            continue;
        }
        let rule = match (a.is_some(), b.is_some()) {
            (false, true) if name == "deprecation" || name == "sunset" => Rule::DeprecationAppeared,
            (true, false) if name == "deprecation" || name == "sunset" => {
                Rule::DeprecationDisappeared
            }
            (false, true) | (true, false) => Rule::HeaderPresence,
            _ => continue,
        };
        let message = if b.is_some() {
            format!("{name} header appeared")
        } else {
            format!("{name} header disappeared")
        };
        em.header(
            &name,
            Pending::new(rule, message).values(
                a.map(|s| (s.to_owned().into(), None)),
                b.map(|s| (s.to_owned().into(), None)),
            ),
        );
    }
}

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The lower-case media type of a content-type value, without parameters.
pub fn media_type(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// True for `application/json` and any `…+json` media type (parameters ignored).
pub fn is_json_media_type(value: &str) -> bool {
    let m = media_type(value);
    m == "application/json" || m.ends_with("+json")
}

/// Both bodies, both inputs, in the mode of the options.
pub(crate) fn compare_inputs<'a, J: JsonNode>(
    em: &mut Emitter<'_>,
    old: &'a Input<J>,
    new: &'a Input<J>,
    options: &'a Options,
) -> Result<(), DiffError> {
    if let Some(cause) = &new.failure {
        em.status(
            Pending::new(Rule::NoResponse, format!("no response: {cause}"))
                .values(old.status.map(|s| (s.into(), None)), None),
        );
        return Ok(());
    }
    compare_meta(em, old, new, options);
    match (&old.body, &new.body) {
        (Body::Json(a), Body::Json(b)) => compare_bodies(em, a, b, options),
        (Body::Text(a), Body::Text(b)) => {
            if options.mode == DiffMode::Full && a != b {
                em.body(
                    &[],
                    None,
                    Pending::new(
                        Rule::TextBodyChanged,
                        format!(
                            "non-JSON body changed (SHA-256 {}… → {}…)",
                            &a.sha256_hex()[..12],
                            &b.sha256_hex()[..12]
                        ),
                    ),
                );
            }
            Ok(())
        }
        // A JSON <-> non-JSON switch is reported by the content type alone.
        _ => Ok(()),
    }
}

/// Schema mode against a stored baseline shape.
pub(crate) fn compare_with_shape<J: JsonNode>(
    em: &mut Emitter<'_>,
    old: &Input<Shape>,
    new: &Input<J>,
    options: &Options,
) -> Result<(), DiffError> {
    if let Some(cause) = &new.failure {
        em.status(
            Pending::new(Rule::NoResponse, format!("no response: {cause}"))
                .values(old.status.map(|s| (s.into(), None)), None),
        );
        return Ok(());
    }
    compare_meta(em, old, new, options);
    if let (Body::Json(old_shape), Body::Json(b)) = (&old.body, &new.body) {
        let new_shape = Shape::infer(b)?;
        let mut path = Vec::new();
        shape::compare(em, &mut path, old_shape, &new_shape, None, 0)?;
    }
    Ok(())
}

/// Two JSON bodies.
pub(crate) fn compare_bodies<'a, J: JsonNode>(
    em: &mut Emitter<'_>,
    a: &'a J,
    b: &'a J,
    options: &'a Options,
) -> Result<(), DiffError> {
    let mut walker = Walker {
        em,
        options,
        path: Vec::new(),
        in_array: false,
    };
    walker.value(a, b, 0)
}

struct Walker<'e, 'o, 'a> {
    em: &'e mut Emitter<'o>,
    options: &'a Options,
    path: Vec<Seg<'a>>,
    /// Full mode: true while walking the items of an outermost array (whose merged-shape pass
    /// covers every array below it).
    in_array: bool,
}

/// An identity value as a hash key: `42` and `"42"` are different identities.
#[derive(Hash, PartialEq, Eq)]
enum IdentKey<'x> {
    Str(&'x str),
    Num(std::borrow::Cow<'x, str>),
}

fn ident_of<'x, J: JsonNode>(item: &'x J, key: &str) -> Option<IdentValue<'x>> {
    let v = item.get(key)?;
    match v.json_type() {
        JsonType::String => v.as_str().map(IdentValue::Str),
        JsonType::Integer | JsonType::Number => v.as_num().map(IdentValue::Num),
        _ => None,
    }
}

fn ident_key<'x>(v: &IdentValue<'x>) -> IdentKey<'x> {
    match v {
        IdentValue::Str(s) => IdentKey::Str(s),
        IdentValue::Num(Num::Token(t)) => IdentKey::Num(std::borrow::Cow::Borrowed(t)),
        IdentValue::Num(n @ Num::Json(_)) => {
            IdentKey::Num(std::borrow::Cow::Owned(n.text().into_owned()))
        }
        // `ident_of` gives strings and numbers only; booleans and null pair by value alone.
        IdentValue::Bool(b) => IdentKey::Str(if *b { "true" } else { "false" }),
        IdentValue::Null => IdentKey::Str("null"),
    }
}

/// A scalar item as a hash key for pairing by value (identity key `.`): equal keys exactly for
/// equal values of one type (`1.0` = `1.00`; `1` and `1.0` differ, as integer and number).
#[derive(Hash, PartialEq, Eq)]
enum ValueKey<'x> {
    Null,
    Bool(bool),
    Str(&'x str),
    Integer(String),
    Number(String),
}

/// The key and the path value of a scalar item; `None` for an object or an array.
fn value_key<J: JsonNode>(item: &J) -> Option<(ValueKey<'_>, IdentValue<'_>)> {
    let canonical = |n: Num<'_>| crate::number::canonical_text(&n.text());
    match item.json_type() {
        JsonType::Null => Some((ValueKey::Null, IdentValue::Null)),
        JsonType::Boolean => item
            .as_bool()
            .map(|b| (ValueKey::Bool(b), IdentValue::Bool(b))),
        JsonType::String => item
            .as_str()
            .map(|s| (ValueKey::Str(s), IdentValue::Str(s))),
        JsonType::Integer => item
            .as_num()
            .map(|n| (ValueKey::Integer(canonical(n)), IdentValue::Num(n))),
        JsonType::Number => item
            .as_num()
            .map(|n| (ValueKey::Number(canonical(n)), IdentValue::Num(n))),
        JsonType::Array | JsonType::Object => None,
    }
}

/// How often one value occurs in each array, and where first.
struct Tally {
    old: usize,
    new: usize,
    first_old: Option<usize>,
    first_new: Option<usize>,
    /// Items of each side already counted as paired (for the item shapes).
    paired_old: usize,
    paired_new: usize,
}

/// `item removed`, `2 items removed`, `1 of 3 items removed` (called with `before > now`).
fn removed_message(before: usize, now: usize) -> String {
    match (before.saturating_sub(now), now) {
        (1, 0) => "item removed".to_owned(),
        (n, 0) => format!("{n} items removed"),
        (n, _) => format!("{n} of {before} items removed"),
    }
}

/// `item added`, `2 items added`, `item added (3 now)`, `2 items added (3 now)` (called with
/// `now > before`).
fn added_message(before: usize, now: usize) -> String {
    match (now.saturating_sub(before), before) {
        (1, 0) => "item added".to_owned(),
        (n, 0) => format!("{n} items added"),
        (1, _) => format!("item added ({now} now)"),
        (n, _) => format!("{n} items added ({now} now)"),
    }
}

/// The identity values of every item, and a value → position map, when the key fits all items.
#[allow(clippy::type_complexity)]
fn keyed<'x, J: JsonNode>(
    items: &'x [J],
    key: &str,
    hasher: &Hasher,
) -> Option<(Vec<IdentValue<'x>>, HashMap<IdentKey<'x>, usize, Hasher>)> {
    let mut values = Vec::with_capacity(items.len());
    let mut map = HashMap::with_capacity_and_hasher(items.len(), hasher.clone());
    for (i, item) in items.iter().enumerate() {
        let v = ident_of(item, key)?;
        if map.insert(ident_key(&v), i).is_some() {
            return None;
        }
        values.push(v);
    }
    Some((values, map))
}

/// Looks up object members: the trait's own lookup for small objects, a map for large ones.
struct Lookup<'x, J: JsonNode> {
    node: &'x J,
    map: Option<HashMap<&'x str, &'x J, Hasher>>,
}

impl<'x, J: JsonNode> Lookup<'x, J> {
    fn new(node: &'x J) -> Self {
        Lookup { node, map: None }
    }
    fn get(&mut self, key: &str) -> Option<&'x J> {
        if self.node.entry_count() <= 16 {
            return self.node.get(key);
        }
        let node = self.node;
        self.map
            .get_or_insert_with(|| {
                let mut m =
                    HashMap::with_capacity_and_hasher(node.entry_count(), Hasher::default());
                for (k, v) in node.entries() {
                    m.insert(k, v);
                }
                m
            })
            .get(key)
            .copied()
    }
}

impl<'a> Walker<'_, '_, 'a> {
    fn value<J: JsonNode>(&mut self, a: &'a J, b: &'a J, depth: usize) -> Result<(), DiffError> {
        if depth > MAX_DEPTH {
            return Err(DiffError::TooDeep { limit: MAX_DEPTH });
        }
        let (ta, tb) = (a.json_type(), b.json_type());
        if ta != tb {
            self.type_changed(a, b, ta, tb);
            return Ok(());
        }
        match ta {
            JsonType::Object => self.objects(a, b, depth),
            JsonType::Array => match self.options.mode {
                DiffMode::Full if self.in_array => {
                    self.arrays(a.elements(), b.elements(), depth, None)
                }
                DiffMode::Full => self.outermost(a.elements(), b.elements(), depth),
                DiffMode::Schema => {
                    if self.by_value_rule() {
                        self.by_value(a.elements(), b.elements(), depth, None)?;
                    }
                    self.merged(a.elements(), b.elements(), depth)
                }
            },
            _ => {
                if self.options.mode == DiffMode::Full && !leaf_equal(a, b) {
                    self.em.body(
                        &self.path,
                        None,
                        Pending::new(Rule::ValueChanged, "value changed")
                            .values(a.leaf_value(), b.leaf_value())
                            .types(Some(ta.as_str().into()), Some(tb.as_str().into())),
                    );
                }
                Ok(())
            }
        }
    }

    fn type_changed<J: JsonNode>(&mut self, a: &J, b: &J, ta: JsonType, tb: JsonType) {
        let Some(rule) = shape::type_rule(TypeSet::of(ta), TypeSet::of(tb)) else {
            return;
        };
        let message = match rule {
            Rule::BecameNull => "value became null".to_owned(),
            Rule::BecameNonNull => format!("no longer null, now {}", a_type(tb)),
            _ => format!("type changed from {ta} to {tb}"),
        };
        self.em.body(
            &self.path,
            None,
            Pending::new(rule, message)
                .values(a.leaf_value(), b.leaf_value())
                .types(Some(ta.as_str().into()), Some(tb.as_str().into())),
        );
    }

    fn objects<J: JsonNode>(&mut self, a: &'a J, b: &'a J, depth: usize) -> Result<(), DiffError> {
        let mut in_b = Lookup::new(b);
        let mut lockstep = b.entries();
        let mut in_sync = true;
        let mut matched = 0usize;
        for (key, va) in a.entries() {
            let vb = if in_sync {
                match lockstep.next() {
                    Some((kb, vb)) if kb == key => Some(vb),
                    _ => {
                        in_sync = false;
                        in_b.get(key)
                    }
                }
            } else {
                in_b.get(key)
            };
            match vb {
                Some(vb) => {
                    matched += 1;
                    self.path.push(Seg::Key(key));
                    let result = self.value(va, vb, depth + 1);
                    self.path.pop();
                    result?;
                }
                None => {
                    let t = va.json_type();
                    self.em.body(
                        &self.path,
                        Some(Seg::Key(key)),
                        Pending::new(
                            Rule::FieldRemoved,
                            format!("field removed (was {})", a_type(t)),
                        )
                        .values(va.leaf_value(), None)
                        .types(Some(t.as_str().into()), None),
                    );
                }
            }
        }
        if matched < b.entry_count() {
            let mut in_a = Lookup::new(a);
            for (key, vb) in b.entries() {
                if in_a.get(key).is_some() {
                    continue;
                }
                let t = vb.json_type();
                self.em.body(
                    &self.path,
                    Some(Seg::Key(key)),
                    Pending::new(Rule::FieldAdded, format!("field added ({})", a_type(t)))
                        .values(None, vb.leaf_value())
                        .types(None, Some(t.as_str().into())),
                );
            }
        }
        Ok(())
    }

    /// The identity key that fits both arrays (D9: every element of both arrays has it with a
    /// string or number value unique within each array; with one side empty, the other decides).
    #[allow(clippy::type_complexity)]
    fn identity<J: JsonNode>(
        &self,
        ea: &'a [J],
        eb: &'a [J],
    ) -> Option<(
        &'a str,
        Vec<IdentValue<'a>>,
        Vec<IdentValue<'a>>,
        HashMap<IdentKey<'a>, usize, Hasher>,
    )> {
        let first = ea.first().or(eb.first())?;
        if first.json_type() != JsonType::Object {
            return None;
        }
        let hasher = Hasher::default();
        // An identity rule that names this array replaces the default key list.
        let rule = self
            .options
            .identity_rules
            .iter()
            .find(|r| r.matches(&self.path));
        let keys: &'a [String] = match rule {
            // Items paired by their own value are not paired by a member.
            Some(rule) if rule.key() == BY_VALUE => return None,
            Some(rule) => std::slice::from_ref(rule.key_string()),
            None => &self.options.identity_keys,
        };
        for key in keys {
            let key = key.as_str();
            if ident_of(first, key).is_none() {
                continue;
            }
            let Some((va, _)) = keyed(ea, key, &hasher) else {
                continue;
            };
            let Some((vb, map_b)) = keyed(eb, key, &hasher) else {
                continue;
            };
            return Some((key, va, vb, map_b));
        }
        None
    }

    /// Full mode, an array that is not inside another: pairs the items, then compares the merged
    /// element shapes as schema mode does (which covers every array below this one too) and
    /// reports what the item-level changes do not cover (D20). Kept out of the recursion so that
    /// nested arrays cost no larger stack frames.
    #[inline(never)]
    fn outermost<J: JsonNode>(
        &mut self,
        ea: &'a [J],
        eb: &'a [J],
        depth: usize,
    ) -> Result<(), DiffError> {
        if ea.is_empty() && eb.is_empty() {
            return Ok(());
        }
        self.in_array = true;
        self.em.start_coverage();
        let mut shapes = ItemShapes::default();
        let result = self.arrays(ea, eb, depth, Some(&mut shapes));
        self.in_array = false;
        let coverage = self.em.take_coverage();
        result?;
        // No item-level change at all: the arrays are equal up to the order of keyed items, so
        // their merged shapes are equal too.
        if coverage.is_empty() {
            return Ok(());
        }
        let Some((sa, sb)) = shapes.finish(ea, depth + 1)? else {
            return Ok(());
        };
        let mut base = crate::path::render(&self.path, None);
        base.push_str("[]");
        let mut path: Vec<Seg<'_>> = self.path.clone();
        path.push(Seg::Merged);
        let mut sink = Uncovered {
            em: self.em,
            coverage: &coverage,
            base_len: path.len(),
            base,
        };
        shape::compare(&mut sink, &mut path, &sa, &sb, None, depth + 1)
    }

    /// Full mode: pairs the items by identity or by position (D9, D20 identity rules).
    fn arrays<J: JsonNode>(
        &mut self,
        ea: &'a [J],
        eb: &'a [J],
        depth: usize,
        mut shapes: Option<&mut ItemShapes>,
    ) -> Result<(), DiffError> {
        if ea.is_empty() && eb.is_empty() {
            return Ok(());
        }
        if self.by_value_rule() && self.by_value(ea, eb, depth, shapes.as_deref_mut())? {
            return Ok(());
        }
        if let Some((key, va, vb, map_b)) = self.identity(ea, eb) {
            let mut seen = vec![false; eb.len()];
            for (i, (item, value)) in ea.iter().zip(&va).enumerate() {
                let seg = Seg::Ident { key, value: *value };
                match map_b.get(&ident_key(value)) {
                    Some(&j) => {
                        seen[j] = true;
                        self.pair(i, item, &eb[j], seg, depth, shapes.as_deref_mut())?;
                    }
                    None => {
                        if let Some(s) = shapes.as_deref_mut() {
                            s.active = true;
                            s.old.add(item, depth + 1)?;
                        }
                        self.em.body(
                            &self.path,
                            Some(seg),
                            Pending::new(Rule::ItemRemoved, "item removed")
                                .values(item.leaf_value(), None)
                                .types(Some(item.json_type().as_str().into()), None),
                        );
                    }
                }
            }
            for ((item, value), seen) in eb.iter().zip(&vb).zip(&seen) {
                if !seen {
                    if let Some(s) = shapes.as_deref_mut() {
                        s.active = true;
                        s.new.add(item, depth + 1)?;
                    }
                    self.em.body(
                        &self.path,
                        Some(Seg::Ident { key, value: *value }),
                        Pending::new(Rule::ItemAdded, "item added")
                            .values(None, item.leaf_value())
                            .types(None, Some(item.json_type().as_str().into())),
                    );
                }
            }
            return Ok(());
        }
        let common = ea.len().min(eb.len());
        for i in 0..common {
            self.pair(
                i,
                &ea[i],
                &eb[i],
                Seg::Index(i),
                depth,
                shapes.as_deref_mut(),
            )?;
        }
        for (i, item) in ea.iter().enumerate().skip(common) {
            if let Some(s) = shapes.as_deref_mut() {
                s.active = true;
                s.old.add(item, depth + 1)?;
            }
            let t = item.json_type();
            self.em.body(
                &self.path,
                Some(Seg::Index(i)),
                Pending::new(
                    Rule::ElementRemoved,
                    format!("element removed (was {})", a_type(t)),
                )
                .values(item.leaf_value(), None)
                .types(Some(t.as_str().into()), None),
            );
        }
        for (i, item) in eb.iter().enumerate().skip(common) {
            if let Some(s) = shapes.as_deref_mut() {
                s.active = true;
                s.new.add(item, depth + 1)?;
            }
            let t = item.json_type();
            self.em.body(
                &self.path,
                Some(Seg::Index(i)),
                Pending::new(Rule::ElementAdded, format!("element added ({})", a_type(t)))
                    .values(None, item.leaf_value())
                    .types(None, Some(t.as_str().into())),
            );
        }
        Ok(())
    }

    /// Compares one pair of items; for an outermost array, adds them to the item shapes.
    #[inline]
    fn pair<J: JsonNode>(
        &mut self,
        index: usize,
        a: &'a J,
        b: &'a J,
        seg: Seg<'a>,
        depth: usize,
        shapes: Option<&mut ItemShapes>,
    ) -> Result<(), DiffError> {
        let before = self.em.recorded();
        self.path.push(seg);
        let result = self.value(a, b, depth + 1);
        self.path.pop();
        result?;
        match shapes {
            // No change recorded while walking the pair: both items have the same shape.
            Some(s) => s.pair(index, a, b, self.em.recorded() != before, depth + 1),
            None => Ok(()),
        }
    }

    /// True when the first identity rule that names the array at the current path has the key
    /// `.` (pair the items by their own value).
    fn by_value_rule(&self) -> bool {
        self.options
            .identity_rules
            .iter()
            .find(|r| r.matches(&self.path))
            .is_some_and(|r| r.key() == BY_VALUE)
    }

    /// Pairs the items of two arrays of scalars by their own value, as multisets (identity key
    /// `.`): a value pairs as many times as both arrays hold it. Each value held fewer times now
    /// is one `keyed-item-removed` change at `[.=value]` (in baseline order), each value held more
    /// times one `keyed-item-added` (in current order); the message gives the count. For an
    /// outermost array in full mode, the items go to `shapes` as paired or unpaired. `false`, and
    /// nothing reported, when an item is an object or an array.
    fn by_value<J: JsonNode>(
        &mut self,
        ea: &'a [J],
        eb: &'a [J],
        depth: usize,
        shapes: Option<&mut ItemShapes>,
    ) -> Result<bool, DiffError> {
        let mut at: HashMap<ValueKey<'a>, usize, Hasher> =
            HashMap::with_capacity_and_hasher(ea.len().max(eb.len()), Hasher::default());
        let mut tallies: Vec<Tally> = Vec::new();
        let mut values: Vec<IdentValue<'a>> = Vec::new();
        let mut slot = |item: &'a J| -> Option<usize> {
            let (key, value) = value_key(item)?;
            Some(*at.entry(key).or_insert_with(|| {
                tallies.push(Tally {
                    old: 0,
                    new: 0,
                    first_old: None,
                    first_new: None,
                    paired_old: 0,
                    paired_new: 0,
                });
                values.push(value);
                tallies.len() - 1
            }))
        };
        let mut in_a = Vec::with_capacity(ea.len());
        for item in ea {
            let Some(t) = slot(item) else {
                return Ok(false);
            };
            in_a.push(t);
        }
        let mut in_b = Vec::with_capacity(eb.len());
        for item in eb {
            let Some(t) = slot(item) else {
                return Ok(false);
            };
            in_b.push(t);
        }
        for (i, &t) in in_a.iter().enumerate() {
            let tally = &mut tallies[t];
            tally.old += 1;
            tally.first_old.get_or_insert(i);
        }
        for (j, &t) in in_b.iter().enumerate() {
            let tally = &mut tallies[t];
            tally.new += 1;
            tally.first_new.get_or_insert(j);
        }
        if let Some(s) = shapes {
            for (i, (item, &t)) in ea.iter().zip(&in_a).enumerate() {
                let tally = &mut tallies[t];
                if tally.paired_old < tally.new {
                    tally.paired_old += 1;
                    s.pair(i, item, item, false, depth + 1)?;
                } else {
                    s.active = true;
                    s.old.add(item, depth + 1)?;
                }
            }
            for (item, &t) in eb.iter().zip(&in_b) {
                let tally = &mut tallies[t];
                if tally.paired_new < tally.old {
                    tally.paired_new += 1;
                } else {
                    s.active = true;
                    s.new.add(item, depth + 1)?;
                }
            }
        }
        for (i, (item, &t)) in ea.iter().zip(&in_a).enumerate() {
            let tally = &tallies[t];
            if tally.first_old == Some(i) && tally.old > tally.new {
                self.em.body(
                    &self.path,
                    Some(Seg::Ident {
                        key: BY_VALUE,
                        value: values[t],
                    }),
                    Pending::new(Rule::ItemRemoved, removed_message(tally.old, tally.new))
                        .values(item.leaf_value(), None)
                        .types(Some(item.json_type().as_str().into()), None),
                );
            }
        }
        for (j, (item, &t)) in eb.iter().zip(&in_b).enumerate() {
            let tally = &tallies[t];
            if tally.first_new == Some(j) && tally.new > tally.old {
                self.em.body(
                    &self.path,
                    Some(Seg::Ident {
                        key: BY_VALUE,
                        value: values[t],
                    }),
                    Pending::new(Rule::ItemAdded, added_message(tally.old, tally.new))
                        .values(None, item.leaf_value())
                        .types(None, Some(item.json_type().as_str().into())),
                );
            }
        }
        Ok(true)
    }

    fn merged<J: JsonNode>(
        &mut self,
        ea: &'a [J],
        eb: &'a [J],
        depth: usize,
    ) -> Result<(), DiffError> {
        let (Some(sa), Some(sb)) = (
            Shape::merge_at(ea, depth + 1)?,
            Shape::merge_at(eb, depth + 1)?,
        ) else {
            return Ok(());
        };
        let mut path: Vec<Seg<'_>> = self.path.clone();
        path.push(Seg::Merged);
        shape::compare(self.em, &mut path, &sa, &sb, None, depth + 1)
    }
}

/// The merged element shapes of an outermost array, built while its items are paired: a pair
/// with no change anywhere below it has the same shape on both sides, so it is merged once into
/// `same`; changed pairs and unpaired items go to `old` and `new`. Until the first change the
/// unchanged pairs are only counted (`pending`, their baseline positions): an array without a
/// change needs no shape at all.
#[derive(Default)]
struct ItemShapes {
    same: Shape,
    old: Shape,
    new: Shape,
    pending: Vec<usize>,
    active: bool,
}

impl ItemShapes {
    /// A pair of items: `index` is the baseline item's position.
    fn pair<J: JsonNode>(
        &mut self,
        index: usize,
        a: &J,
        b: &J,
        changed: bool,
        depth: usize,
    ) -> Result<(), DiffError> {
        if changed {
            self.active = true;
            self.old.add(a, depth)?;
            self.new.add(b, depth)
        } else if self.active {
            self.same.add(a, depth)
        } else {
            self.pending.push(index);
            Ok(())
        }
    }

    /// The merged shapes of both arrays; `None` when either array is empty (no element shape).
    fn finish<J: JsonNode>(
        mut self,
        ea: &[J],
        depth: usize,
    ) -> Result<Option<(Shape, Shape)>, DiffError> {
        for &i in &self.pending {
            if let Some(item) = ea.get(i) {
                self.same.add(item, depth)?;
            }
        }
        let mut old = self.same.clone();
        old.absorb(&self.old);
        let mut new = self.same;
        new.absorb(&self.new);
        Ok((old.count > 0 && new.count > 0).then_some((old, new)))
    }
}

/// Full mode's merged-shape pass (D20): forwards a merged-shape change unless an item-level change
/// at the same normalised path, or at an ancestor of it below the array, already reports it with at
/// least the same severity. The candidate paths lie below an outermost array, so they are already
/// normalised; each check renders the path once, prefix by prefix.
struct Uncovered<'x, 'o> {
    em: &'x mut Emitter<'o>,
    coverage: &'x Coverage,
    /// The rendered path of the array's merged elements (`$.lines.data[]`) and its length in
    /// segments.
    base: String,
    base_len: usize,
}

impl Sink for Uncovered<'_, '_> {
    fn body(&mut self, path: &[Seg<'_>], last: Option<Seg<'_>>, pending: Pending) {
        let severity = pending.rule.severity();
        let mut at = self.base.clone();
        let covered_at = |at: &str| self.coverage.get(at).is_some_and(|s| *s >= severity);
        let mut covered = covered_at(&at);
        let below = path.get(self.base_len..).unwrap_or(&[]);
        for seg in below.iter().chain(last.as_ref()) {
            if covered {
                break;
            }
            crate::path::push_seg(&mut at, seg);
            covered = covered_at(&at);
        }
        if !covered {
            self.em.body(path, last, pending);
        }
    }
}

fn leaf_equal<J: JsonNode>(a: &J, b: &J) -> bool {
    match a.json_type() {
        JsonType::Null => true,
        JsonType::Boolean => a.as_bool() == b.as_bool(),
        JsonType::String => a.as_str() == b.as_str(),
        JsonType::Integer | JsonType::Number => match (a.as_num(), b.as_num()) {
            (Some(x), Some(y)) => x.equals(y),
            _ => false,
        },
        JsonType::Array | JsonType::Object => false,
    }
}
