//! `ignorePaths` patterns: `$.meta.requestId`, `$.items[].updatedAt`, `$..traceId`,
//! `$.users[id=42]`, `$["a b"]`, `status`, `headers.etag`. A pattern drops the changes at the
//! path it matches and below it. `[]` matches any element segment (keyed, positional or merged).

use crate::path::{IdentValue, Seg};

/// Why an ignore pattern, an identity rule or a severity override cannot be used. Its `Display` is one line naming
/// the pattern (`invalid ignore pattern "meta": a pattern starts with ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} {pattern:?}: {reason}")]
#[non_exhaustive]
pub struct PatternError {
    /// What was being parsed.
    pub kind: PatternKind,
    /// The text as given (for an identity rule, `PATTERN=KEY`).
    pub pattern: String,
    /// What is wrong and how to write it instead.
    pub reason: String,
}

/// What a [`PatternError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PatternKind {
    /// An `ignorePaths` entry / `--ignore`.
    Ignore,
    /// An `identityKeys` entry / `--identity-key`.
    Identity,
    /// A `severityOverrides` entry / `--severity`.
    SeverityOverride,
}

impl std::fmt::Display for PatternKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PatternKind::Ignore => "ignore pattern",
            PatternKind::Identity => "identity rule",
            PatternKind::SeverityOverride => "severity override",
        })
    }
}

/// One step of a parsed body pattern ([`IgnorePattern::body_segments`]).
///
/// ```
/// use apidrift_diff::{IgnorePattern, PatternSeg};
/// let pattern = IgnorePattern::parse("$.items[].updatedAt")?;
/// assert_eq!(
///     pattern.body_segments(),
///     Some(&[
///         PatternSeg::Key("items".into()),
///         PatternSeg::AnyElement,
///         PatternSeg::Key("updatedAt".into()),
///     ][..])
/// );
/// # Ok::<(), apidrift_diff::PatternError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PatternSeg {
    /// An object member: `.name` or `["name"]`.
    Key(String),
    /// An object member at any depth below: `..name`.
    Descendant(String),
    /// Any element: `[]`.
    AnyElement,
    /// The element at this position: `[3]`.
    Index(usize),
    /// The identity-keyed element: `[id=42]`.
    Ident {
        /// The identity key (`id`).
        key: String,
        /// Its value as the path writes it (`42`).
        value: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Status,
    Header(String),
    Body(Vec<PatternSeg>),
}

/// A parsed ignore pattern: the changes at the path it matches and below it are dropped.
///
/// The forms: `$.meta.requestId` (a member), `$.items[].updatedAt` (`[]` matches any item,
/// whether paired by identity, by position or merged), `$..traceId` (a member at any depth),
/// `$.items[id=42]` (one item), `$.rows[0]`, `$["a b"]`, `status`, `headers.etag`. It also
/// parses from a string (`"$.a".parse()`) and (de)serialises as its text.
///
/// ```
/// use apidrift_diff::{DiffMode, IgnorePattern, Options, diff_bodies};
/// let before = serde_json::json!({"meta": {"requestId": "a1"}, "n": 1});
/// let after = serde_json::json!({"meta": {"requestId": "b2"}, "n": 1});
/// let options = Options::with_mode(DiffMode::Full).with_ignore(IgnorePattern::parse("$.meta")?);
/// assert!(diff_bodies(&before, &after, &options).unwrap().changes.is_empty());
/// assert!(IgnorePattern::parse("meta").is_err()); // starts with `$`, `status` or `headers.`
/// # Ok::<(), apidrift_diff::PatternError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnorePattern {
    text: String,
    target: Target,
}

impl std::fmt::Display for IgnorePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for IgnorePattern {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IgnorePattern::parse(s)
    }
}

impl serde::Serialize for IgnorePattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for IgnorePattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        IgnorePattern::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl IgnorePattern {
    /// Parses a pattern; the error is a one-line message naming the pattern and the problem.
    pub fn parse(text: &str) -> Result<IgnorePattern, PatternError> {
        let fail = |reason: &str| PatternError {
            kind: PatternKind::Ignore,
            pattern: text.to_owned(),
            reason: reason.into(),
        };
        let target = if text == "status" {
            Target::Status
        } else if let Some(name) = text.strip_prefix("headers.") {
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(fail("a header name must follow `headers.`"));
            }
            Target::Header(name.to_ascii_lowercase())
        } else if let Some(rest) = text.strip_prefix('$') {
            Target::Body(parse_segments(rest).map_err(|r| fail(&r))?)
        } else {
            return Err(fail("a pattern starts with `$`, `status` or `headers.`"));
        };
        Ok(IgnorePattern {
            text: text.to_owned(),
            target,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the pattern drops changes at `status`.
    pub(crate) fn matches_status(&self) -> bool {
        self.target == Target::Status
    }

    /// True when the pattern drops changes at `headers.<name>` (name in lower case).
    pub(crate) fn matches_header(&self, name: &str) -> bool {
        matches!(&self.target, Target::Header(h) if h == name)
    }

    /// True when the pattern matches the body path or one of its ancestors.
    pub(crate) fn matches_body(&self, path: &[Seg<'_>], last: Option<Seg<'_>>) -> bool {
        match &self.target {
            Target::Body(pattern) => {
                let mut segs: Vec<Seg<'_>> = Vec::with_capacity(path.len() + 1);
                segs.extend_from_slice(path);
                segs.extend(last);
                prefix_match(pattern, &segs)
            }
            _ => false,
        }
    }

    /// The parsed segments of a body pattern (`None` for `status` and header patterns).
    pub fn body_segments(&self) -> Option<&[PatternSeg]> {
        match &self.target {
            Target::Body(segs) => Some(segs),
            _ => None,
        }
    }
}

/// The identity key that pairs array items by their own value (`$.tags=.`).
pub(crate) const BY_VALUE: &str = ".";

/// An identity rule: at an array whose path matches `pattern` (ignore-pattern syntax, matched
/// against the array's own path, not its descendants), items are paired by `key` instead of the
/// default key list. The key's values must still be strings or numbers unique within each array,
/// else the array is paired by position.
///
/// The key `.` pairs the items of an array of scalars (strings, numbers, booleans, `null`) by
/// their own value, as a multiset, in both modes: a reordered list is no change, and each value
/// whose count went down or up is one `keyed-item-removed` or `keyed-item-added` change at
/// `[.=value]` (`$.tags[.=beta]`). In full mode an array with an object or array item is paired
/// by position; schema mode pairs only arrays that are not inside another array (whose items it
/// merges).
///
/// ```
/// use apidrift_diff::{DiffMode, IdentityRule, Options, diff_bodies};
/// let rule = IdentityRule::parse("$..lines.data", "id").unwrap();
/// assert_eq!(rule.to_string(), "$..lines.data=id");
/// assert_eq!("$.commits=sha".parse::<IdentityRule>().unwrap().key(), "sha");
/// assert!(IdentityRule::parse("status", "id").is_err());
///
/// let before = serde_json::json!({"tags": ["a", "b", "c"]});
/// let after = serde_json::json!({"tags": ["c", "a", "d"]});
/// let options = Options::with_mode(DiffMode::Full)
///     .with_identity_rule(IdentityRule::parse("$.tags", ".").unwrap());
/// let report = diff_bodies(&before, &after, &options).unwrap();
/// let paths: Vec<&str> = report.changes.iter().map(|c| c.path.as_str()).collect();
/// assert_eq!(paths, ["$.tags[.=b]", "$.tags[.=d]"]); // removed, added
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityRule {
    pattern: IgnorePattern,
    segments: Vec<PatternSeg>,
    key: String,
}

impl IdentityRule {
    /// Validates a pattern and a key (as `identityKeys` holds them: pattern → key). The error is
    /// one line naming the rule and what to fix.
    pub fn parse(pattern: &str, key: &str) -> Result<IdentityRule, PatternError> {
        let fail = |reason: String| PatternError {
            kind: PatternKind::Identity,
            pattern: format!("{pattern}={key}"),
            reason,
        };
        if !pattern.starts_with('$') {
            return Err(fail(
                "the pattern names an array in the body and starts with `$` (e.g. `$.commits=sha`)"
                    .into(),
            ));
        }
        let parsed = IgnorePattern::parse(pattern).map_err(|e| fail(e.reason))?;
        let segments = parsed
            .body_segments()
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        if key.is_empty() {
            return Err(fail(
                "the key after `=` is missing (e.g. `$.commits=sha`)".into(),
            ));
        }
        if key != BY_VALUE && !crate::path::is_plain_key(key) {
            return Err(fail(format!(
                "the key {key:?} must be a member name of letters, digits, `_` and `-`, \
                 starting with a letter or `_`, or `.` to pair the items by their own value"
            )));
        }
        Ok(IdentityRule {
            pattern: parsed,
            segments,
            key: key.to_owned(),
        })
    }

    /// Parses the CLI form `PATTERN=KEY` (split at the last `=`, so identity segments such as
    /// `$.orgs[id=1].repos=name` keep theirs).
    pub fn parse_spec(spec: &str) -> Result<IdentityRule, PatternError> {
        match spec.rsplit_once('=') {
            Some((pattern, key)) if !pattern.is_empty() && !key.contains(']') => {
                IdentityRule::parse(pattern, key)
            }
            _ => Err(PatternError {
                kind: PatternKind::Identity,
                pattern: spec.to_owned(),
                reason: "write PATTERN=KEY, e.g. `$.commits=sha` or `$..lines.data=id`".into(),
            }),
        }
    }

    /// The array path pattern as written.
    pub fn pattern(&self) -> &str {
        self.pattern.as_str()
    }

    /// The identity key.
    pub fn key(&self) -> &str {
        &self.key
    }

    pub(crate) fn key_string(&self) -> &String {
        &self.key
    }

    /// True when the rule applies to the array at `path` (the whole path, not a prefix).
    pub(crate) fn matches(&self, path: &[Seg<'_>]) -> bool {
        full_match(&self.segments, path)
    }
}

impl std::fmt::Display for IdentityRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.pattern, self.key)
    }
}

impl std::str::FromStr for IdentityRule {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IdentityRule::parse_spec(s)
    }
}

/// True when the pattern matches the whole path (no descendants).
fn full_match(pattern: &[PatternSeg], path: &[Seg<'_>]) -> bool {
    let Some((first, rest)) = pattern.split_first() else {
        return path.is_empty();
    };
    match first {
        PatternSeg::Descendant(name) => (0..path.len()).any(|i| {
            matches!(path[i], Seg::Key(k) if k == name) && full_match(rest, &path[i + 1..])
        }),
        _ => match path.split_first() {
            Some((seg, tail)) => seg_matches(first, seg) && full_match(rest, tail),
            None => false,
        },
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn prefix_match(pattern: &[PatternSeg], path: &[Seg<'_>]) -> bool {
    let Some((first, rest)) = pattern.split_first() else {
        return true;
    };
    match first {
        PatternSeg::Descendant(name) => (0..path.len()).any(|i| {
            matches!(path[i], Seg::Key(k) if k == name) && prefix_match(rest, &path[i + 1..])
        }),
        _ => match path.split_first() {
            Some((seg, tail)) => seg_matches(first, seg) && prefix_match(rest, tail),
            None => false,
        },
    }
}

fn seg_matches(pattern: &PatternSeg, seg: &Seg<'_>) -> bool {
    match (pattern, seg) {
        (PatternSeg::Key(name), Seg::Key(k)) => name == k,
        (PatternSeg::AnyElement, Seg::Index(_) | Seg::Ident { .. } | Seg::Merged) => true,
        (PatternSeg::Index(i), Seg::Index(j)) => i == j,
        (PatternSeg::Ident { key, value }, Seg::Ident { key: k, value: v }) => {
            key == k && *value == ident_text(v)
        }
        _ => false,
    }
}

fn ident_text<'a>(v: &'a IdentValue<'_>) -> std::borrow::Cow<'a, str> {
    v.text()
}

/// Parses the body segments after `$` (shared with path parsing).
pub(crate) fn parse_segments(mut rest: &str) -> Result<Vec<PatternSeg>, String> {
    let mut segs = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("..") {
            if after.starts_with('[') {
                let (seg, tail) = bracket(after)?;
                match seg {
                    PatternSeg::Key(k) => segs.push(PatternSeg::Descendant(k)),
                    _ => return Err("`..` must be followed by a member name".into()),
                }
                rest = tail;
            } else {
                let (name, tail) = plain_key(after)?;
                segs.push(PatternSeg::Descendant(name.to_owned()));
                rest = tail;
            }
        } else if let Some(after) = rest.strip_prefix('.') {
            let (name, tail) = plain_key(after)?;
            segs.push(PatternSeg::Key(name.to_owned()));
            rest = tail;
        } else if rest.starts_with('[') {
            let (seg, tail) = bracket(rest)?;
            segs.push(seg);
            rest = tail;
        } else {
            return Err(format!(
                "unexpected {:?}; expected `.`, `..` or `[`",
                first_char(rest)
            ));
        }
    }
    Ok(segs)
}

fn first_char(s: &str) -> char {
    s.chars().next().unwrap_or(' ')
}

fn plain_key(s: &str) -> Result<(&str, &str), String> {
    let end = s.find(['.', '[', ']', '=', '"']).unwrap_or(s.len());
    let name = &s[..end];
    if name.is_empty() {
        return Err("a member name must follow `.` (use [\"…\"] for other keys)".into());
    }
    if name.chars().any(char::is_whitespace) {
        return Err(format!(
            "member name {name:?} has spaces; write it as [\"{name}\"]"
        ));
    }
    Ok((name, &s[end..]))
}

/// Parses a JSON string literal at the start of `s`; returns the string and the rest.
fn string_literal(s: &str) -> Result<(String, &str), String> {
    let bytes = s.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => {
                let literal = &s[..=i];
                let value: String = serde_json::from_str(literal)
                    .map_err(|_| format!("invalid string literal {literal}"))?;
                return Ok((value, &s[i + 1..]));
            }
            _ => i += 1,
        }
    }
    Err("unterminated string literal".into())
}

fn bracket(s: &str) -> Result<(PatternSeg, &str), String> {
    let inner = &s[1..];
    if let Some(tail) = inner.strip_prefix(']') {
        return Ok((PatternSeg::AnyElement, tail));
    }
    if inner.starts_with('"') {
        let (key, tail) = string_literal(inner)?;
        let tail = tail
            .strip_prefix(']')
            .ok_or("expected `]` after the quoted key")?;
        return Ok((PatternSeg::Key(key), tail));
    }
    let close = inner.find([']', '=']).ok_or("unclosed `[`")?;
    let head = &inner[..close];
    if inner.as_bytes()[close] == b']' {
        let index = head.parse::<usize>().map_err(|_| {
            format!("`[{head}]` is not an element selector (use [], [N], [key=value] or [\"key\"])")
        })?;
        return Ok((PatternSeg::Index(index), &inner[close + 1..]));
    }
    // `[.=value]`: an item paired by its own value (identity key `.`).
    if head != "." && (head.is_empty() || !crate::path::is_plain_key(head)) {
        return Err(format!("invalid identity key {head:?} in `[key=value]`"));
    }
    let after = &inner[close + 1..];
    let (value, tail) = if after.starts_with('"') {
        string_literal(after)?
    } else {
        let end = after.find(']').ok_or("unclosed `[`")?;
        let value = &after[..end];
        if !crate::path::is_plain_value(value) {
            return Err(format!(
                "identity value {value:?} must be quoted as a JSON string"
            ));
        }
        (value.to_owned(), &after[end..])
    };
    let tail = tail
        .strip_prefix(']')
        .ok_or("expected `]` after the identity value")?;
    Ok((
        PatternSeg::Ident {
            key: head.to_owned(),
            value,
        },
        tail,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Num;

    fn matches(pattern: &str, path: &[Seg<'_>]) -> bool {
        IgnorePattern::parse(pattern).is_ok_and(|p| p.matches_body(path, None))
    }

    #[test]
    fn patterns_match_paths_and_their_descendants() {
        let id42 = Seg::Ident {
            key: "id",
            value: IdentValue::Num(Num::Token("42")),
        };
        let id43 = Seg::Ident {
            key: "id",
            value: IdentValue::Str("43"),
        };
        let path = [Seg::Key("items"), id42, Seg::Key("updatedAt")];
        assert!(matches("$.items[].updatedAt", &path));
        assert!(matches("$.items[id=42].updatedAt", &path));
        assert!(matches("$.items[id=42]", &path));
        assert!(!matches("$.items[id=43]", &path));
        assert!(matches("$.items[id=43]", &[Seg::Key("items"), id43]));
        assert!(matches("$.items", &path));
        assert!(matches("$", &path));
        assert!(matches("$..updatedAt", &path));
        assert!(matches("$..items[].updatedAt", &path));
        assert!(!matches("$..id", &path));
        assert!(!matches("$.items[].updated", &path));
        assert!(!matches("$.items.updatedAt", &path));
        assert!(matches("$.items[]", &[Seg::Key("items"), Seg::Index(3)]));
        assert!(matches("$.items[3]", &[Seg::Key("items"), Seg::Index(3)]));
        assert!(!matches("$.items[2]", &[Seg::Key("items"), Seg::Index(3)]));
        assert!(matches(
            "$.items[].x",
            &[Seg::Key("items"), Seg::Merged, Seg::Key("x")]
        ));
        assert!(matches("$[\"a b\"].c", &[Seg::Key("a b"), Seg::Key("c")]));
        assert!(matches("$..[\"a b\"]", &[Seg::Key("x"), Seg::Key("a b")]));
        assert!(matches("$[]", &[Seg::Index(0)]));
        assert!(matches(
            "$[slug=\"a b\"]",
            &[Seg::Ident {
                key: "slug",
                value: IdentValue::Str("a b")
            }]
        ));
    }

    #[test]
    fn status_and_headers() -> Result<(), PatternError> {
        assert!(IgnorePattern::parse("status")?.matches_status());
        assert!(IgnorePattern::parse("headers.ETag")?.matches_header("etag"));
        assert!(!IgnorePattern::parse("headers.etag")?.matches_header("sunset"));
        assert!(!IgnorePattern::parse("$.status")?.matches_status());
        Ok(())
    }

    #[test]
    fn bad_patterns_give_one_line_errors() {
        for bad in [
            "",
            "meta",
            "$.",
            "$.a..",
            "$[",
            "$[abc]",
            "$[\"x]",
            "$a",
            "headers.",
            "$..[0]",
            "$.a b",
            "$[id=a b]",
            "$[1x=2]",
            "statuses",
        ] {
            let err = IgnorePattern::parse(bad).err();
            assert!(err.is_some(), "{bad:?} must be rejected");
            let text = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(
                !text.contains('\n') && text.contains("invalid ignore pattern"),
                "{text}"
            );
        }
    }

    #[test]
    fn identity_rules_match_the_array_path_itself() -> Result<(), PatternError> {
        let rule = IdentityRule::parse("$.commits", "sha")?;
        assert!(rule.matches(&[Seg::Key("commits")]));
        assert!(!rule.matches(&[]));
        assert!(!rule.matches(&[Seg::Key("commits"), Seg::Index(0), Seg::Key("parents")]));
        let rule = IdentityRule::parse_spec("$..lines.data=id")?;
        assert_eq!((rule.pattern(), rule.key()), ("$..lines.data", "id"));
        assert!(rule.matches(&[Seg::Key("lines"), Seg::Key("data")]));
        assert!(rule.matches(&[
            Seg::Key("invoices"),
            Seg::Index(2),
            Seg::Key("lines"),
            Seg::Key("data")
        ]));
        assert!(!rule.matches(&[Seg::Key("lines"), Seg::Key("data"), Seg::Key("x")]));
        let rule = IdentityRule::parse_spec("$.orgs[id=1].repos=name")?;
        assert_eq!(rule.pattern(), "$.orgs[id=1].repos");
        let id1 = Seg::Ident {
            key: "id",
            value: IdentValue::Str("1"),
        };
        assert!(rule.matches(&[Seg::Key("orgs"), id1, Seg::Key("repos")]));
        let rule = IdentityRule::parse("$.orgs[].repos", "name")?;
        assert!(rule.matches(&[Seg::Key("orgs"), Seg::Index(4), Seg::Key("repos")]));
        assert_eq!(rule.to_string(), "$.orgs[].repos=name");
        Ok(())
    }

    #[test]
    fn items_paired_by_value_are_named_by_dot() -> Result<(), PatternError> {
        let rule = IdentityRule::parse_spec("$.tags=.")?;
        assert_eq!((rule.pattern(), rule.key()), ("$.tags", "."));
        let beta = Seg::Ident {
            key: ".",
            value: IdentValue::Str("beta"),
        };
        let yes = Seg::Ident {
            key: ".",
            value: IdentValue::Bool(true),
        };
        assert!(matches("$.tags[.=beta]", &[Seg::Key("tags"), beta]));
        assert!(matches("$.tags[]", &[Seg::Key("tags"), beta]));
        assert!(!matches("$.tags[.=gamma]", &[Seg::Key("tags"), beta]));
        assert!(!matches("$.tags[id=beta]", &[Seg::Key("tags"), beta]));
        assert!(matches("$.tags[.=true]", &[Seg::Key("tags"), yes]));
        assert!(matches(
            "$.t[.=\"a b\"]",
            &[
                Seg::Key("t"),
                Seg::Ident {
                    key: ".",
                    value: IdentValue::Str("a b")
                }
            ]
        ));
        for bad in ["$.t[..=a]", "$.t[.a=b]", "$.t[.=a b]"] {
            assert!(IgnorePattern::parse(bad).is_err(), "{bad}");
        }
        Ok(())
    }

    #[test]
    fn bad_identity_rules_give_one_line_errors() {
        for (pattern, key) in [
            ("commits", "sha"),
            ("status", "id"),
            ("headers.etag", "id"),
            ("$.a b", "id"),
            ("$.commits", ""),
            ("$.commits", "a b"),
            ("$.commits", "1x"),
            ("$.commits", "a]"),
            ("$.commits", ".."),
            ("$.commits", ".sha"),
        ] {
            let err = IdentityRule::parse(pattern, key).err();
            let text = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(
                text.starts_with("invalid identity rule") && !text.contains('\n'),
                "{pattern}={key}: {text:?}"
            );
        }
        for spec in ["$.commits", "sha", "=sha", "$.a[id=1]", ""] {
            let text = IdentityRule::parse_spec(spec)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(text.starts_with("invalid identity rule"), "{spec}: {text}");
        }
    }
}
