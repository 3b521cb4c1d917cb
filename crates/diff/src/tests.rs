//! Unit tests per D9 row and per detail bullet, in both modes where they apply.

use super::*;
use apidrift_model::{ChangeType as T, DiffChange, Severity as S};
use serde_json::{Value, json};

type R = Result<(), Box<dyn std::error::Error>>;
type Triples = Result<Vec<(String, T, S)>, Box<dyn std::error::Error>>;

fn run(a: &str, b: &str, options: &Options) -> Result<Report, Box<dyn std::error::Error>> {
    let (x, y) = (parse(a)?, parse(b)?);
    let ours = diff_bodies(&x, &y, options)?;
    // The serde_json::Value implementation agrees wherever serde_json is exact.
    let exact_in_serde =
        |t: &str| !t.contains("1.0") && !t.contains("e3") && !t.contains("1234567890123456789");
    if exact_in_serde(a) && exact_in_serde(b) {
        let (vx, vy): (Value, Value) = (serde_json::from_str(a)?, serde_json::from_str(b)?);
        let theirs = diff_bodies(&vx, &vy, options)?;
        let key = |c: &DiffChange| (c.path.clone(), c.change_type, c.severity);
        let mut o: Vec<_> = ours.changes.iter().map(key).collect();
        let mut t: Vec<_> = theirs.changes.iter().map(key).collect();
        o.sort();
        t.sort();
        assert_eq!(o, t, "serde_json::Value and Json disagree on {a} -> {b}");
    }
    Ok(ours)
}

fn full(a: &str, b: &str) -> Triples {
    Ok(triples(&run(a, b, &Options::with_mode(DiffMode::Full))?))
}

fn schema(a: &str, b: &str) -> Triples {
    let report = run(a, b, &Options::with_mode(DiffMode::Schema))?;
    // Diffing against the stored baseline shape gives the same changes.
    let (x, y) = (parse(a)?, parse(b)?);
    let stored = Input::bare(x).to_shape()?;
    let text = serde_json::to_string(&stored.body_shape())?;
    let shape: Shape = serde_json::from_str(&text)?;
    let via_shape = diff_shape(&Input::bare(shape), &Input::bare(y), &Options::default())?;
    assert_eq!(
        triples(&via_shape),
        triples(&report),
        "shape diff disagrees on {a} -> {b}"
    );
    Ok(triples(&report))
}

fn triples(r: &Report) -> Vec<(String, T, S)> {
    r.changes
        .iter()
        .map(|c| (c.path.clone(), c.change_type, c.severity))
        .collect()
}

fn one(path: &str, t: T, s: S) -> Vec<(String, T, S)> {
    vec![(path.to_owned(), t, s)]
}

impl Input<Shape> {
    fn body_shape(&self) -> Option<&Shape> {
        match &self.body {
            Body::Json(s) => Some(s),
            _ => None,
        }
    }
}

fn changes(
    a: &str,
    b: &str,
    mode: DiffMode,
) -> Result<Vec<DiffChange>, Box<dyn std::error::Error>> {
    Ok(run(a, b, &Options::with_mode(mode))?.changes)
}

// ---- Table rows -------------------------------------------------------------------------------

#[test]
fn row_field_removed_is_breaking() -> R {
    for f in [full, schema] {
        assert_eq!(
            f(r#"{"a":1,"b":"x"}"#, r#"{"a":1}"#)?,
            one("$.b", T::Removed, S::Breaking)
        );
    }
    let c = changes(r#"{"a":1,"b":"x"}"#, r#"{"a":1}"#, DiffMode::Full)?;
    assert_eq!(c[0].old_value, Some(json!("x")));
    assert_eq!(c[0].new_value, None);
    assert_eq!(c[0].old_type.as_deref(), Some("string"));
    Ok(())
}

#[test]
fn row_field_present_in_every_element_now_missing_from_some_is_a_warning() -> R {
    let a = r#"{"u":[{"id":1,"e":"a"},{"id":2,"e":"b"}]}"#;
    let b = r#"{"u":[{"id":1,"e":"a"},{"id":2}]}"#;
    assert_eq!(schema(a, b)?, one("$.u[].e", T::Removed, S::Warning));
    let c = changes(a, b, DiffMode::Schema)?;
    assert!(c[0].message.contains("1 of 2"), "{}", c[0].message);
    // Full mode: the keyed item lost its field.
    assert_eq!(full(a, b)?, one("$.u[id=2].e", T::Removed, S::Breaking));
    Ok(())
}

#[test]
fn row_field_added_is_info() -> R {
    for f in [full, schema] {
        assert_eq!(
            f(r#"{"a":1}"#, r#"{"a":1,"b":{"c":1}}"#)?,
            one("$.b", T::Added, S::Info)
        );
    }
    let c = changes(r#"{}"#, r#"{"b":2}"#, DiffMode::Full)?;
    assert_eq!(
        (c[0].new_value.clone(), c[0].new_type.as_deref()),
        (Some(json!(2)), Some("integer"))
    );
    Ok(())
}

#[test]
fn row_type_changed_is_breaking() -> R {
    for (x, y) in [
        ("\"1\"", "1"),
        ("1", "\"1\""),
        ("true", "1"),
        ("{}", "[]"),
        ("[]", "{}"),
        ("1.5", "\"x\""),
        ("{\"a\":1}", "\"s\""),
    ] {
        let (a, b) = (format!("{{\"v\":{x}}}"), format!("{{\"v\":{y}}}"));
        for f in [full, schema] {
            assert_eq!(
                f(&a, &b)?,
                one("$.v", T::TypeChanged, S::Breaking),
                "{x} -> {y}"
            );
        }
    }
    let c = changes(r#"{"v":"1"}"#, r#"{"v":1}"#, DiffMode::Full)?;
    assert_eq!(c[0].old_type.as_deref(), Some("string"));
    assert_eq!(c[0].new_type.as_deref(), Some("integer"));
    assert_eq!(
        (c[0].old_value.clone(), c[0].new_value.clone()),
        (Some(json!("1")), Some(json!(1)))
    );
    Ok(())
}

#[test]
fn row_integer_to_number_is_a_warning_and_back_is_info() -> R {
    for f in [full, schema] {
        assert_eq!(
            f(r#"{"v":1}"#, r#"{"v":1.5}"#)?,
            one("$.v", T::TypeChanged, S::Warning)
        );
        assert_eq!(
            f(r#"{"v":1}"#, r#"{"v":1.0}"#)?,
            one("$.v", T::TypeChanged, S::Warning)
        );
        assert_eq!(
            f(r#"{"v":1.5}"#, r#"{"v":2}"#)?,
            one("$.v", T::TypeChanged, S::Info)
        );
    }
    Ok(())
}

#[test]
fn row_non_null_to_null_is_breaking_and_back_is_info() -> R {
    for f in [full, schema] {
        assert_eq!(
            f(r#"{"v":"a"}"#, r#"{"v":null}"#)?,
            one("$.v", T::NullabilityChanged, S::Breaking)
        );
        assert_eq!(
            f(r#"{"v":{"x":1}}"#, r#"{"v":null}"#)?,
            one("$.v", T::NullabilityChanged, S::Breaking)
        );
        assert_eq!(
            f(r#"{"v":null}"#, r#"{"v":3}"#)?,
            one("$.v", T::NullabilityChanged, S::Info)
        );
    }
    for mode in [DiffMode::Full, DiffMode::Schema] {
        let c = changes(r#"{"v":"a"}"#, r#"{"v":null}"#, mode)?;
        assert_eq!(c[0].new_value, Some(Value::Null));
        assert_eq!(c[0].new_type.as_deref(), Some("null"));
    }
    Ok(())
}

#[test]
fn row_leaf_value_changed_only_in_full_mode() -> R {
    assert_eq!(
        full(r#"{"v":"a"}"#, r#"{"v":"b"}"#)?,
        one("$.v", T::Changed, S::Info)
    );
    assert_eq!(
        full(r#"{"v":true}"#, r#"{"v":false}"#)?,
        one("$.v", T::Changed, S::Info)
    );
    assert_eq!(
        full(r#"[1,2]"#, r#"[1,3]"#)?,
        one("$[1]", T::Changed, S::Info)
    );
    assert!(schema(r#"{"v":"a"}"#, r#"{"v":"b"}"#)?.is_empty());
    assert!(schema(r#"[1,2]"#, r#"[5,6,7]"#)?.is_empty());
    let c = changes(r#"{"v":"a"}"#, r#"{"v":"b"}"#, DiffMode::Full)?;
    assert_eq!(
        (c[0].old_value.clone(), c[0].new_value.clone()),
        (Some(json!("a")), Some(json!("b")))
    );
    Ok(())
}

#[test]
fn row_keyed_items_removed_and_added() -> R {
    let a = r#"{"u":[{"id":1,"n":"a"},{"id":2,"n":"b"}]}"#;
    let b = r#"{"u":[{"id":3,"n":"c"},{"id":1,"n":"a"}]}"#;
    assert_eq!(
        full(a, b)?,
        vec![
            ("$.u[id=2]".into(), T::Removed, S::Warning),
            ("$.u[id=3]".into(), T::Added, S::Info),
        ]
    );
    assert!(schema(a, b)?.is_empty());
    Ok(())
}

#[test]
fn row_status_changes() -> R {
    let check = |a: u16, b: u16| -> Triples {
        let x = Input::response(a, vec![], Body::Json(parse("{}")?));
        let y = Input::response(b, vec![], Body::Json(parse("{}")?));
        Ok(triples(&diff(&x, &y, &Options::default())?))
    };
    assert_eq!(
        check(200, 500)?,
        one("status", T::StatusChanged, S::Breaking)
    );
    assert_eq!(
        check(200, 302)?,
        one("status", T::StatusChanged, S::Breaking)
    );
    assert_eq!(
        check(200, 201)?,
        one("status", T::StatusChanged, S::Warning)
    );
    assert_eq!(
        check(404, 500)?,
        one("status", T::StatusChanged, S::Warning)
    );
    assert_eq!(
        check(500, 200)?,
        one("status", T::StatusChanged, S::Warning)
    );
    assert!(check(200, 200)?.is_empty());
    let x = Input::response(200, vec![], Body::Json(parse("{}")?));
    let r = diff(
        &x,
        &Input::no_response("connection refused"),
        &Options::default(),
    )?;
    assert_eq!(triples(&r), one("status", T::StatusChanged, S::Breaking));
    assert_eq!(r.changes[0].old_value, Some(json!(200)));
    assert_eq!(r.changes[0].new_value, None);
    assert!(r.changes[0].message.contains("connection refused"));
    let y = Input::response(201, vec![], Body::Json(parse("{}")?));
    let r = diff(&x, &y, &Options::default())?;
    assert_eq!(
        (
            r.changes[0].old_value.clone(),
            r.changes[0].new_value.clone()
        ),
        (Some(json!(200)), Some(json!(201)))
    );
    Ok(())
}

fn headers(pairs: &[(&str, &str)]) -> Input<Json<'static>> {
    Input::response(
        200,
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        Body::Absent,
    )
}

fn header_diff(a: &[(&str, &str)], b: &[(&str, &str)]) -> Result<Report, DiffError> {
    diff(&headers(a), &headers(b), &Options::default())
}

#[test]
fn row_content_type_changes() -> R {
    let r = header_diff(
        &[("content-type", "application/json")],
        &[("Content-Type", "text/html; charset=utf-8")],
    )?;
    assert_eq!(
        triples(&r),
        one("headers.content-type", T::HeaderChanged, S::Breaking)
    );
    assert_eq!(r.changes[0].old_value, Some(json!("application/json")));
    assert_eq!(r.changes[0].new_value, Some(json!("text/html")));
    let r = header_diff(
        &[("content-type", "application/json")],
        &[("content-type", "application/problem+json")],
    )?;
    assert_eq!(
        triples(&r),
        one("headers.content-type", T::HeaderChanged, S::Warning)
    );
    let r = header_diff(
        &[("content-type", "application/vnd.x+json")],
        &[("content-type", "text/plain")],
    )?;
    assert_eq!(
        triples(&r),
        one("headers.content-type", T::HeaderChanged, S::Breaking)
    );
    let r = header_diff(
        &[("content-type", "text/html")],
        &[("content-type", "application/json")],
    )?;
    assert_eq!(
        triples(&r),
        one("headers.content-type", T::HeaderChanged, S::Warning)
    );
    let r = header_diff(
        &[("content-type", "text/html")],
        &[("content-type", "text/plain")],
    )?;
    assert_eq!(
        triples(&r),
        one("headers.content-type", T::HeaderChanged, S::Warning)
    );
    // Parameters and case are ignored.
    let r = header_diff(
        &[("content-type", "application/json; charset=utf-8")],
        &[("content-type", "Application/JSON")],
    )?;
    assert!(r.changes.is_empty());
    Ok(())
}

#[test]
fn row_deprecation_and_sunset() -> R {
    for name in ["deprecation", "sunset"] {
        let r = header_diff(&[], &[(name, "true")])?;
        assert_eq!(
            triples(&r),
            one(&format!("headers.{name}"), T::HeaderChanged, S::Warning)
        );
        let r = header_diff(&[(name, "true")], &[])?;
        assert_eq!(
            triples(&r),
            one(&format!("headers.{name}"), T::HeaderChanged, S::Info)
        );
    }
    Ok(())
}

#[test]
fn row_other_tracked_headers_by_presence_only() -> R {
    for name in [
        "cache-control",
        "content-encoding",
        "etag",
        "x-ratelimit-limit",
    ] {
        let r = header_diff(&[], &[(name, "v")])?;
        assert_eq!(
            triples(&r),
            one(&format!("headers.{name}"), T::HeaderChanged, S::Info)
        );
        assert_eq!(r.changes[0].new_value, Some(json!("v")));
        let r = header_diff(&[(name, "v")], &[])?;
        assert_eq!(
            triples(&r),
            one(&format!("headers.{name}"), T::HeaderChanged, S::Info)
        );
        assert!(
            header_diff(&[(name, "1")], &[(name, "2")])?
                .changes
                .is_empty()
        );
    }
    assert!(
        header_diff(&[], &[("x-untracked", "1")])?
            .changes
            .is_empty()
    );
    Ok(())
}

// ---- Details --------------------------------------------------------------------------------

#[test]
fn one_change_per_path_for_retyped_and_removed_containers() -> R {
    for f in [full, schema] {
        assert_eq!(
            f(r#"{"o":{"a":1,"b":2}}"#, r#"{"o":[1]}"#)?,
            one("$.o", T::TypeChanged, S::Breaking)
        );
        assert_eq!(
            f(r#"{"o":{"a":1,"b":2}}"#, r#"{}"#)?,
            one("$.o", T::Removed, S::Breaking)
        );
        assert_eq!(f(r#"{}"#, r#"{"o":[1,2]}"#)?, one("$.o", T::Added, S::Info));
        assert_eq!(
            f(r#"{"o":"a"}"#, r#"{"o":null}"#)?,
            one("$.o", T::NullabilityChanged, S::Breaking)
        );
    }
    Ok(())
}

#[test]
fn key_segments_and_root_segments() -> R {
    assert_eq!(
        full(r#"{"a":{"b c":1}}"#, r#"{"a":{"b c":2}}"#)?,
        one("$.a[\"b c\"]", T::Changed, S::Info)
    );
    assert_eq!(
        full(r#"{"é":1}"#, r#"{"é":2}"#)?,
        one("$[\"é\"]", T::Changed, S::Info)
    );
    assert_eq!(
        full(r#"[{"id":1,"v":1}]"#, r#"[{"id":1,"v":2}]"#)?,
        one("$[id=1].v", T::Changed, S::Info)
    );
    assert_eq!(
        schema(r#"[{"v":1}]"#, r#"[{"v":"x"}]"#)?,
        one("$[].v", T::TypeChanged, S::Breaking)
    );
    assert_eq!(
        full(r#"[{"v":1}]"#, r#"[{"v":2}]"#)?,
        one("$[0].v", T::Changed, S::Info)
    );
    assert_eq!(
        full(r#"{"a.b":1}"#, r#"{}"#)?,
        one("$[\"a.b\"]", T::Removed, S::Breaking)
    );
    Ok(())
}

#[test]
fn identity_values_strings_and_numbers_only() -> R {
    // Strings and numbers render alike.
    assert_eq!(
        full(r#"[{"id":"42","v":1}]"#, r#"[{"id":"42","v":2}]"#)?,
        one("$[id=42].v", T::Changed, S::Info)
    );
    assert_eq!(
        full(r#"[{"id":"a b","v":1}]"#, r#"[{"id":"a b","v":2}]"#)?,
        one("$[id=\"a b\"].v", T::Changed, S::Info)
    );
    assert_eq!(
        full(r#"[{"id":"ü","v":1}]"#, r#"[{"id":"ü","v":2}]"#)?,
        one("$[id=\"ü\"].v", T::Changed, S::Info)
    );
    // Null and boolean identities never qualify: positional.
    assert_eq!(
        full(r#"[{"id":null,"v":1}]"#, r#"[{"id":null,"v":2}]"#)?,
        one("$[0].v", T::Changed, S::Info)
    );
    assert_eq!(
        full(r#"[{"id":true,"v":1}]"#, r#"[{"id":true,"v":2}]"#)?,
        one("$[0].v", T::Changed, S::Info)
    );
    // 42 and "42" are different identity values. The merged element shape shows what the item
    // removed/added (warning, info) does not: `id` changed type in every item (D20).
    assert_eq!(
        full(r#"[{"id":42}]"#, r#"[{"id":"42"}]"#)?,
        vec![
            ("$[id=42]".into(), T::Removed, S::Warning),
            ("$[id=42]".into(), T::Added, S::Info),
            ("$[].id".into(), T::TypeChanged, S::Breaking)
        ]
    );
    Ok(())
}

#[test]
fn identity_key_must_fit_every_element_of_both_arrays_uniquely() -> R {
    // Not unique: falls to the next candidate (`name`), else position.
    let a = r#"[{"id":1,"name":"a","v":1},{"id":1,"name":"b","v":2}]"#;
    let b = r#"[{"id":1,"name":"b","v":2},{"id":1,"name":"a","v":1}]"#;
    assert!(full(a, b)?.is_empty());
    // Missing in one element of the current array: position.
    let a = r#"[{"id":1,"v":1},{"id":2,"v":2}]"#;
    let b = r#"[{"id":1,"v":1},{"v":2}]"#;
    assert_eq!(full(a, b)?, one("$[1].id", T::Removed, S::Breaking));
    // First candidate in order wins: `id` before `uuid`.
    let a = r#"[{"uuid":"u1","id":1,"v":1}]"#;
    let b = r#"[{"uuid":"u1","id":1,"v":2}]"#;
    assert_eq!(full(a, b)?, one("$[id=1].v", T::Changed, S::Info));
    for key in ["uuid", "key", "slug", "name", "code", "_id"] {
        let a = format!(r#"[{{"{key}":"x","v":1}},{{"{key}":"y","v":1}}]"#);
        let b = format!(r#"[{{"{key}":"y","v":1}},{{"{key}":"x","v":2}}]"#);
        assert_eq!(
            full(&a, &b)?,
            one(&format!("$[{key}=x].v"), T::Changed, S::Info)
        );
    }
    Ok(())
}

#[test]
fn one_side_empty_reports_by_key_when_the_other_qualifies() -> R {
    assert_eq!(
        full(r#"{"u":[]}"#, r#"{"u":[{"id":1},{"id":2}]}"#)?,
        vec![
            ("$.u[id=1]".into(), T::Added, S::Info),
            ("$.u[id=2]".into(), T::Added, S::Info)
        ]
    );
    assert_eq!(
        full(r#"{"u":[{"id":1}]}"#, r#"{"u":[]}"#)?,
        one("$.u[id=1]", T::Removed, S::Warning)
    );
    assert_eq!(
        full(r#"{"u":[]}"#, r#"{"u":[{"x":1},2]}"#)?,
        vec![
            ("$.u[0]".into(), T::Added, S::Info),
            ("$.u[1]".into(), T::Added, S::Info)
        ]
    );
    Ok(())
}

#[test]
fn positional_pairing_reports_extra_and_missing_elements() -> R {
    assert_eq!(full("[1,2]", "[1,2,3]")?, one("$[2]", T::Added, S::Info));
    assert_eq!(
        full("[1,2,3]", "[1]")?,
        vec![
            ("$[1]".into(), T::Removed, S::Warning),
            ("$[2]".into(), T::Removed, S::Warning)
        ]
    );
    assert_eq!(
        full("[1,\"a\"]", "[1,2]")?,
        one("$[1]", T::TypeChanged, S::Breaking)
    );
    assert_eq!(
        full(r#"{"m":[[1],[2]]}"#, r#"{"m":[[1],[3]]}"#)?,
        one("$.m[1][0]", T::Changed, S::Info)
    );
    let c = changes("[1,2]", "[1,2,3]", DiffMode::Full)?;
    assert_eq!(c[0].new_value, Some(json!(3)));
    Ok(())
}

#[test]
fn reordering_keyed_items_is_not_a_change() -> R {
    let a = r#"{"d":[{"id":1,"a":[1,2]},{"id":2,"a":[3]},{"id":3,"a":[]}]}"#;
    let b = r#"{"d":[{"id":3,"a":[]},{"id":1,"a":[1,2]},{"id":2,"a":[3]}]}"#;
    assert!(full(a, b)?.is_empty());
    assert!(schema(a, b)?.is_empty());
    Ok(())
}

#[test]
fn schema_empty_arrays_have_no_element_shape() -> R {
    assert!(schema(r#"{"a":[]}"#, r#"{"a":[{"x":1}]}"#)?.is_empty());
    assert!(schema(r#"{"a":[{"x":1}]}"#, r#"{"a":[]}"#)?.is_empty());
    Ok(())
}

#[test]
fn schema_optional_fields() -> R {
    // Present in some baseline elements, gone from all current elements: removed/warning.
    let a = r#"[{"x":1,"o":1},{"x":2}]"#;
    assert_eq!(
        schema(a, r#"[{"x":1},{"x":2}]"#)?,
        one("$[].o", T::Removed, S::Warning)
    );
    // Appears in some current elements: added/info.
    assert_eq!(
        schema(r#"[{"x":1},{"x":2}]"#, a)?,
        one("$[].o", T::Added, S::Info)
    );
    // Stays optional, or becomes present everywhere: no change.
    assert!(schema(a, r#"[{"x":1},{"x":2,"o":3},{"x":3}]"#)?.is_empty());
    assert!(schema(a, r#"[{"x":1,"o":1},{"x":2,"o":2}]"#)?.is_empty());
    // Present in every baseline element, gone from all current: breaking.
    assert_eq!(
        schema(r#"[{"x":1,"o":1}]"#, r#"[{"x":1},{"x":2}]"#)?,
        one("$[].o", T::Removed, S::Breaking)
    );
    Ok(())
}

#[test]
fn schema_type_sets() -> R {
    // A new non-null type: breaking; the message counts the items.
    let a = r#"[{"v":1},{"v":2}]"#;
    assert_eq!(
        schema(a, r#"[{"v":1},{"v":"x"},{"v":"y"}]"#)?,
        one("$[].v", T::TypeChanged, S::Breaking)
    );
    let c = changes(a, r#"[{"v":1},{"v":"x"},{"v":"y"}]"#, DiffMode::Schema)?;
    assert_eq!(c[0].old_type.as_deref(), Some("integer"));
    assert_eq!(c[0].new_type.as_deref(), Some("integer|string"));
    assert!(c[0].message.contains("2 of 3"), "{}", c[0].message);
    // A new null: nullability breaking.
    assert_eq!(
        schema(a, r#"[{"v":1},{"v":null}]"#)?,
        one("$[].v", T::NullabilityChanged, S::Breaking)
    );
    // A type that disappears: nothing.
    assert!(schema(r#"[{"v":1},{"v":"x"}]"#, r#"[{"v":"y"}]"#)?.is_empty());
    assert!(schema(r#"[{"v":1},{"v":null}]"#, r#"[{"v":2}]"#)?.is_empty());
    // Rows win: {integer} gaining number is a warning; {null} gaining a type is info.
    assert_eq!(
        schema(a, r#"[{"v":1},{"v":2.5}]"#)?,
        one("$[].v", T::TypeChanged, S::Warning)
    );
    assert_eq!(
        schema(r#"[{"v":null}]"#, r#"[{"v":null},{"v":"s"}]"#)?,
        one("$[].v", T::NullabilityChanged, S::Info)
    );
    // Scalar arrays: merged element types.
    assert_eq!(
        schema("[1,2]", "[1,\"a\"]")?,
        one("$[]", T::TypeChanged, S::Breaking)
    );
    Ok(())
}

#[test]
fn schema_two_differences_report_the_more_severe() -> R {
    // Missing from some (warning) and a new type (breaking) at one path: the type change.
    let a = r#"[{"v":1},{"v":2}]"#;
    assert_eq!(
        schema(a, r#"[{"v":"s"},{}]"#)?,
        one("$[].v", T::TypeChanged, S::Breaking)
    );
    // Missing from some (warning) and integer -> number (warning): type before presence.
    assert_eq!(
        schema(a, r#"[{"v":1.5},{}]"#)?,
        one("$[].v", T::TypeChanged, S::Warning)
    );
    // New null (breaking) beats integer -> number (warning).
    assert_eq!(
        schema(a, r#"[{"v":1.5},{"v":null}]"#)?,
        one("$[].v", T::NullabilityChanged, S::Breaking)
    );
    Ok(())
}

#[test]
fn schema_object_members_stay_compared_when_other_types_join() -> R {
    let a = r#"[{"o":{"x":1}}]"#;
    let b = r#"[{"o":{"x":"s"}},{"o":"str"}]"#;
    assert_eq!(
        schema(a, b)?,
        vec![
            ("$[].o".into(), T::TypeChanged, S::Breaking),
            ("$[].o.x".into(), T::TypeChanged, S::Breaking),
        ]
    );
    let c = changes(a, b, DiffMode::Schema)?;
    assert_eq!(c[0].new_type.as_deref(), Some("object|string"));
    Ok(())
}

#[test]
fn schema_nested_arrays_merge() -> R {
    let a = r#"{"m":[[{"a":1}],[{"a":2}]]}"#;
    let b = r#"{"m":[[{"a":1}],[{"a":"x"}]]}"#;
    assert_eq!(schema(a, b)?, one("$.m[][].a", T::TypeChanged, S::Breaking));
    Ok(())
}

#[test]
fn numbers_integer_any_size_and_numeric_equality() -> R {
    assert!(full(r#"{"v":1.0}"#, r#"{"v":1.00}"#)?.is_empty());
    assert!(full(r#"{"v":1e3}"#, r#"{"v":1000.0}"#)?.is_empty());
    assert_eq!(
        full(r#"{"v":1}"#, r#"{"v":1.0}"#)?,
        one("$.v", T::TypeChanged, S::Warning)
    );
    assert_eq!(
        full(r#"{"v":1e3}"#, r#"{"v":1000}"#)?,
        one("$.v", T::TypeChanged, S::Info)
    );
    let big = r#"{"v":123456789012345678901234567890}"#;
    let bigger = r#"{"v":123456789012345678901234567891}"#;
    assert!(full(big, big)?.is_empty());
    let r = run(big, bigger, &Options::with_mode(DiffMode::Full))?;
    assert_eq!(triples(&r), one("$.v", T::Changed, S::Info));
    assert_eq!(r.changes[0].old_type.as_deref(), Some("integer"));
    // The D16 JSON keeps the exact tokens.
    let out: Value = serde_json::from_str(&r.to_json())?;
    assert_eq!(out["changes"][0]["oldType"], json!("integer"));
    assert!(
        r.to_json()
            .contains("\"oldValue\":123456789012345678901234567890")
    );
    assert!(
        r.to_json()
            .contains("\"newValue\":123456789012345678901234567891")
    );
    Ok(())
}

#[test]
fn values_null_and_absent() -> R {
    let c = changes(r#"{"v":null}"#, r#"{}"#, DiffMode::Full)?;
    assert_eq!(c[0].old_value, Some(Value::Null));
    let c = changes(r#"{"v":{"a":1}}"#, r#"{}"#, DiffMode::Full)?;
    assert_eq!(c[0].old_value, None);
    assert_eq!(c[0].old_type.as_deref(), Some("object"));
    Ok(())
}

#[test]
fn non_json_bodies() -> R {
    let text = |t: &str| {
        Input::<Json<'static>>::response(200, vec![], Body::Text(TextBody::of(t.as_bytes())))
    };
    let r = diff(&text("a"), &text("b"), &Options::with_mode(DiffMode::Full))?;
    assert_eq!(triples(&r), one("$", T::Changed, S::Info));
    assert!(
        diff(&text("a"), &text("a"), &Options::with_mode(DiffMode::Full))?
            .changes
            .is_empty()
    );
    assert!(
        diff(
            &text("a"),
            &text("b"),
            &Options::with_mode(DiffMode::Schema)
        )?
        .changes
        .is_empty()
    );
    // JSON <-> non-JSON: the content type alone.
    let json = Input::response(
        200,
        vec![("content-type".into(), "application/json".into())],
        Body::Json(parse("{}")?),
    );
    let html = Input::response(
        200,
        vec![("content-type".into(), "text/html".into())],
        Body::Text(TextBody::of(b"<p>")),
    );
    for mode in [DiffMode::Full, DiffMode::Schema] {
        let r = diff(&json, &html, &Options::with_mode(mode))?;
        assert_eq!(
            triples(&r),
            one("headers.content-type", T::HeaderChanged, S::Breaking)
        );
    }
    Ok(())
}

#[test]
fn ignore_patterns_drop_matching_changes_and_below() -> R {
    let a = r#"{"meta":{"requestId":"1","t":{"traceId":"a"}},"items":[{"id":1,"updatedAt":"x","v":1}],"traceId":"q"}"#;
    let b = r#"{"meta":{"requestId":"2","t":{"traceId":"b"}},"items":[{"id":1,"updatedAt":"y","v":2}],"traceId":"r"}"#;
    let mut options = Options::with_mode(DiffMode::Full);
    assert_eq!(run(a, b, &options)?.changes.len(), 5);
    options.ignore = ["$.meta.requestId", "$.items[].updatedAt", "$..traceId"]
        .iter()
        .map(|p| IgnorePattern::parse(p))
        .collect::<Result<_, _>>()?;
    assert_eq!(
        triples(&run(a, b, &options)?),
        one("$.items[id=1].v", T::Changed, S::Info)
    );
    options.ignore = vec![
        IgnorePattern::parse("$.items[id=1]")?,
        IgnorePattern::parse("$.meta")?,
    ];
    assert_eq!(
        triples(&run(a, b, &options)?),
        one("$.traceId", T::Changed, S::Info)
    );
    options.ignore = vec![IgnorePattern::parse("$.items[id=2]")?];
    assert_eq!(run(a, b, &options)?.changes.len(), 5);
    // Schema mode, merged segments.
    let mut options = Options::with_mode(DiffMode::Schema);
    options.ignore = vec![IgnorePattern::parse("$.items[].v")?];
    assert!(
        run(
            r#"{"items":[{"v":1}]}"#,
            r#"{"items":[{"v":"s"}]}"#,
            &options
        )?
        .changes
        .is_empty()
    );
    // status and headers.
    let options = Options {
        ignore: vec![
            IgnorePattern::parse("status")?,
            IgnorePattern::parse("headers.etag")?,
        ],
        ..Options::default()
    };
    let x = Input::response(
        200,
        vec![("etag".into(), "1".into())],
        Body::Json(parse("{}")?),
    );
    let y = Input::response(
        500,
        vec![("sunset".into(), "x".into())],
        Body::Json(parse("{}")?),
    );
    assert_eq!(
        triples(&diff(&x, &y, &options)?),
        one("headers.sunset", T::HeaderChanged, S::Warning)
    );
    Ok(())
}

#[test]
fn ids_depend_on_path_and_type_only() -> R {
    let r = run(
        r#"{"a":1}"#,
        r#"{"a":2}"#,
        &Options::with_mode(DiffMode::Full),
    )?;
    assert_eq!(r.changes[0].id, change_id("$.a", T::Changed));
    let out: Value = serde_json::from_str(&r.to_json())?;
    assert_eq!(out["changes"][0]["id"], json!(change_id("$.a", T::Changed)));
    assert_eq!(out["changeCount"], json!(1));
    assert_eq!(out["infoCount"], json!(1));
    Ok(())
}

#[test]
fn order_is_document_order() -> R {
    let r = full(r#"{"z":1,"a":1,"m":1}"#, r#"{"m":2,"q":1,"z":2}"#)?;
    assert_eq!(
        r,
        vec![
            ("$.z".into(), T::Changed, S::Info),
            ("$.a".into(), T::Removed, S::Breaking),
            ("$.m".into(), T::Changed, S::Info),
            ("$.q".into(), T::Added, S::Info),
        ]
    );
    Ok(())
}

#[test]
fn large_objects_with_reordered_keys() -> R {
    let keys: Vec<String> = (0..200).map(|i| format!("\"k{i}\":{i}")).collect();
    let mut rev = keys.clone();
    rev.reverse();
    rev[0] = "\"k199\":-1".into();
    let a = format!("{{{}}}", keys.join(","));
    let b = format!("{{{}}}", rev.join(","));
    assert_eq!(full(&a, &b)?, one("$.k199", T::Changed, S::Info));
    assert!(schema(&a, &b)?.is_empty());
    Ok(())
}

#[test]
fn deep_values_are_an_error_not_a_crash() -> R {
    // serde_json::Value built without a recursion limit.
    let mut deep = json!(1);
    for _ in 0..(MAX_DEPTH + 10) {
        deep = json!([deep]);
    }
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let full = diff_bodies(&deep, &deep, &Options::with_mode(DiffMode::Full)).err();
            let schema = diff_bodies(&deep, &deep, &Options::default()).err();
            let shape = Shape::infer(&deep).err();
            // Dropping a deep serde_json::Value recurses; keep it shallow enough for this thread.
            (full, schema, shape)
        })?;
    let (a, b, c) = handle.join().map_err(|_| "thread panicked")?;
    assert_eq!(a, Some(DiffError::TooDeep { limit: MAX_DEPTH }));
    assert_eq!(b, Some(DiffError::TooDeep { limit: MAX_DEPTH }));
    assert_eq!(c, Some(DiffError::TooDeep { limit: MAX_DEPTH }));
    // At the limit, a correct answer in a 2 MiB thread (debug build).
    let handle =
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| -> Result<usize, String> {
                let text = "[".repeat(MAX_DEPTH) + "1" + &"]".repeat(MAX_DEPTH);
                let other = "[".repeat(MAX_DEPTH) + "2" + &"]".repeat(MAX_DEPTH);
                let (a, b) = (
                    parse(&text).map_err(|e| e.to_string())?,
                    parse(&other).map_err(|e| e.to_string())?,
                );
                let full = diff_bodies(&a, &b, &Options::with_mode(DiffMode::Full))
                    .map_err(|e| e.to_string())?;
                let schema = diff_bodies(&a, &b, &Options::default()).map_err(|e| e.to_string())?;
                Ok(full.changes.len() * 10 + schema.changes.len())
            })?;
    assert_eq!(handle.join().map_err(|_| "thread panicked")?, Ok(10));
    Ok(())
}

#[test]
fn huge_arrays() -> R {
    let n = 200_000;
    let a = format!(
        "[{}]",
        (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
    );
    let b = a.replacen("[0,", "[-1,", 1);
    assert_eq!(full(&a, &b)?, one("$[0]", T::Changed, S::Info));
    let keyed: Vec<String> = (0..50_000)
        .map(|i| format!("{{\"id\":{i},\"v\":{i}}}"))
        .collect();
    let mut rev = keyed.clone();
    rev.reverse();
    let (a, b) = (
        format!("[{}]", keyed.join(",")),
        format!("[{}]", rev.join(",")),
    );
    assert!(full(&a, &b)?.is_empty());
    Ok(())
}

#[test]
fn rule_table_is_consistent() {
    use std::collections::HashSet;
    let ids: HashSet<_> = Rule::ALL.iter().map(|r| r.id()).collect();
    assert_eq!(ids.len(), Rule::ALL.len());
}

// ---- D20: full-mode coverage ------------------------------------------------------------------

#[test]
fn full_mode_reports_fields_lost_by_every_item_when_every_identity_changed() -> R {
    // Stripe `invoice.lines.data[]`, reduced: every item lost `price` and `plan` while every id
    // changed. Items removed (warning) and added (info) do not say that the fields are gone.
    let a = r#"{"lines":{"data":[{"id":"il_1","amount":1,"price":{"id":"p"},"plan":null},{"id":"il_2","amount":2,"price":{"id":"q"},"plan":null}]}}"#;
    let b = r#"{"lines":{"data":[{"id":"il_3","amount":1},{"id":"il_4","amount":"2"}]}}"#;
    assert_eq!(
        full(a, b)?,
        vec![
            ("$.lines.data[id=il_1]".into(), T::Removed, S::Warning),
            ("$.lines.data[id=il_2]".into(), T::Removed, S::Warning),
            ("$.lines.data[id=il_3]".into(), T::Added, S::Info),
            ("$.lines.data[id=il_4]".into(), T::Added, S::Info),
            ("$.lines.data[].amount".into(), T::TypeChanged, S::Breaking),
            ("$.lines.data[].price".into(), T::Removed, S::Breaking),
            ("$.lines.data[].plan".into(), T::Removed, S::Breaking),
        ]
    );
    let r = run(a, b, &Options::with_mode(DiffMode::Full))?;
    assert_eq!(r.counts.breaking_count, 3);
    assert!(r.reaches(Some(S::Breaking)));
    Ok(())
}

#[test]
fn merged_shape_changes_already_reported_by_items_are_not_repeated() -> R {
    // The item-level change is at the same normalised path with a higher severity.
    let a = r#"{"u":[{"id":1,"e":"a"},{"id":2,"e":"b"}]}"#;
    let b = r#"{"u":[{"id":1,"e":"a"},{"id":2}]}"#;
    assert_eq!(full(a, b)?, one("$.u[id=2].e", T::Removed, S::Breaking));
    // Same severity at the same normalised path.
    let a = r#"[{"id":1,"v":1},{"id":2,"v":2}]"#;
    let b = r#"[{"id":1,"v":1},{"id":2,"v":"x"}]"#;
    assert_eq!(full(a, b)?, one("$[id=2].v", T::TypeChanged, S::Breaking));
    // An ancestor: a retyped item covers what changed below it.
    let a = r#"[{"o":{"x":1}},{"o":{"x":2}}]"#;
    let b = r#"[{"o":{"x":1}},{"o":"s"}]"#;
    assert_eq!(full(a, b)?, one("$[1].o", T::TypeChanged, S::Breaking));
    // Nested arrays are covered by the outermost array's pass, once.
    let a = r#"{"a":[{"id":1,"b":[{"id":1,"c":1}]}]}"#;
    let b = r#"{"a":[{"id":1,"b":[{"id":2,"c":"s"}]}]}"#;
    assert_eq!(
        full(a, b)?,
        vec![
            ("$.a[id=1].b[id=1]".into(), T::Removed, S::Warning),
            ("$.a[id=1].b[id=2]".into(), T::Added, S::Info),
            ("$.a[].b[].c".into(), T::TypeChanged, S::Breaking),
        ]
    );
    Ok(())
}

#[test]
fn full_mode_reports_a_new_type_in_a_field_that_was_absent_from_its_item() -> R {
    // Positional pairing: item 1 gains `v` (added, info), but the merged shape gains a type.
    let a = r#"[{"v":1},{}]"#;
    let b = r#"[{"v":1},{"v":"s"}]"#;
    assert_eq!(
        full(a, b)?,
        vec![
            ("$[1].v".into(), T::Added, S::Info),
            ("$[].v".into(), T::TypeChanged, S::Breaking),
        ]
    );
    assert_eq!(schema(a, b)?, one("$[].v", T::TypeChanged, S::Breaking));
    Ok(())
}

#[test]
fn ignore_patterns_apply_to_merged_shape_changes() -> R {
    let a = r#"{"d":[{"id":1,"p":1}]}"#;
    let b = r#"{"d":[{"id":2}]}"#;
    let mut options = Options::with_mode(DiffMode::Full);
    options.ignore = vec![IgnorePattern::parse("$.d[].p")?];
    assert_eq!(
        triples(&run(a, b, &options)?),
        vec![
            ("$.d[id=1]".into(), T::Removed, S::Warning),
            ("$.d[id=2]".into(), T::Added, S::Info),
        ]
    );
    Ok(())
}

// ---- D20: identity rules ------------------------------------------------------------------------

fn with_rules(rules: &[(&str, &str)]) -> Result<Options, PatternError> {
    let mut options = Options::with_mode(DiffMode::Full);
    for (pattern, key) in rules {
        options
            .identity_rules
            .push(IdentityRule::parse(pattern, key)?);
    }
    Ok(options)
}

#[test]
fn identity_rules_pair_items_by_their_key() -> R {
    // GitHub commits keyed by `sha`: one new commit at the top is one change, not a cascade.
    let a = r#"{"commits":[{"sha":"b2","m":"two"},{"sha":"a1","m":"one"}]}"#;
    let b =
        r#"{"commits":[{"sha":"c3","m":"three"},{"sha":"b2","m":"two"},{"sha":"a1","m":"one"}]}"#;
    assert_eq!(full(a, b)?.len(), 5, "position pairing cascades");
    let options = with_rules(&[("$.commits", "sha")])?;
    assert_eq!(
        triples(&run(a, b, &options)?),
        one("$.commits[sha=c3]", T::Added, S::Info)
    );
    // The rule replaces the default list: `id` is there but `number` pairs.
    let a = r#"[{"id":1,"number":7,"t":"a"},{"id":2,"number":8,"t":"b"}]"#;
    let b = r#"[{"id":3,"number":8,"t":"b"},{"id":4,"number":7,"t":"a"}]"#;
    let options = with_rules(&[("$", "number")])?;
    assert_eq!(
        triples(&run(a, b, &options)?),
        vec![
            ("$[number=7].id".into(), T::Changed, S::Info),
            ("$[number=8].id".into(), T::Changed, S::Info),
        ]
    );
    Ok(())
}

#[test]
fn identity_rules_with_nested_and_descendant_patterns() -> R {
    let a =
        r#"{"invoices":[{"id":"in_1","lines":{"data":[{"line":"x","q":1},{"line":"y","q":1}]}}]}"#;
    let b =
        r#"{"invoices":[{"id":"in_1","lines":{"data":[{"line":"y","q":1},{"line":"x","q":2}]}}]}"#;
    for rules in [
        vec![("$..lines.data", "line")],
        vec![("$.invoices[].lines.data", "line")],
        vec![("$.invoices[id=in_1].lines.data", "line")],
    ] {
        let options = with_rules(&rules)?;
        assert_eq!(
            triples(&run(a, b, &options)?),
            one(
                "$.invoices[id=in_1].lines.data[line=x].q",
                T::Changed,
                S::Info
            ),
            "{rules:?}"
        );
    }
    // A rule for another array, or for an ancestor, does not apply here: position pairing.
    for rules in [
        vec![("$.invoices[id=in_2].lines.data", "line")],
        vec![("$.invoices", "line")],
        vec![("$..lines", "line")],
    ] {
        let options = with_rules(&rules)?;
        assert_eq!(
            run(a, b, &options)?.changes.len(),
            3,
            "{rules:?}: [0].line, [0].q... by position"
        );
    }
    // The first matching rule wins.
    let options = with_rules(&[("$..data", "line"), ("$..lines.data", "q")])?;
    assert_eq!(
        triples(&run(a, b, &options)?),
        one(
            "$.invoices[id=in_1].lines.data[line=x].q",
            T::Changed,
            S::Info
        )
    );
    Ok(())
}

#[test]
fn identity_rule_keys_that_do_not_fit_fall_back_to_position() -> R {
    let options = with_rules(&[("$.c", "sha")])?;
    // Not unique within an array: position, not the default keys (`id` would have fitted).
    let a = r#"{"c":[{"id":1,"sha":"s","v":1},{"id":2,"sha":"s","v":2}]}"#;
    let b = r#"{"c":[{"id":2,"sha":"s","v":2},{"id":1,"sha":"s","v":1}]}"#;
    assert_eq!(
        triples(&run(a, b, &options)?),
        vec![
            ("$.c[0].id".into(), T::Changed, S::Info),
            ("$.c[0].v".into(), T::Changed, S::Info),
            ("$.c[1].id".into(), T::Changed, S::Info),
            ("$.c[1].v".into(), T::Changed, S::Info),
        ]
    );
    // Absent from one item: position.
    let a = r#"{"c":[{"sha":"a","v":1},{"sha":"b","v":2}]}"#;
    let b = r#"{"c":[{"sha":"b","v":2},{"v":1}]}"#;
    let r = run(a, b, &options)?;
    assert!(
        r.changes.iter().all(|c| c.path.starts_with("$.c[0]")
            || c.path.starts_with("$.c[1]")
            || c.path.starts_with("$.c[]")),
        "{:?}",
        triples(&r)
    );
    assert!(r.changes.iter().any(|c| c.path == "$.c[1].sha"));
    // Not a scalar (an object, null, a boolean): position.
    let a = r#"{"c":[{"sha":{"x":1},"v":1}]}"#;
    let b = r#"{"c":[{"sha":{"x":1},"v":2}]}"#;
    assert_eq!(
        triples(&run(a, b, &options)?),
        one("$.c[0].v", T::Changed, S::Info)
    );
    // Keyed when it fits: numbers and strings.
    let a = r#"{"c":[{"sha":1,"v":1},{"sha":"a","v":1}]}"#;
    let b = r#"{"c":[{"sha":"a","v":1},{"sha":1,"v":2}]}"#;
    assert_eq!(
        triples(&run(a, b, &options)?),
        one("$.c[sha=1].v", T::Changed, S::Info)
    );
    Ok(())
}

// ---- Messages ---------------------------------------------------------------------------------

/// Why a message does not read as a person would write it, if it does not.
fn unreadable(message: &str) -> Option<String> {
    if message.trim().is_empty() || message.trim() != message || message.contains('\n') {
        return Some("empty, padded or several lines".into());
    }
    if message.chars().count() > 160 {
        return Some("longer than 160 characters".into());
    }
    for debug in [
        "Some(", "None", "Str(", "Num(", "Token(", "Json(", "String(", "Number(", "::", "\\\"",
        "{ ", "Rule", "DiffMode", "JsonType",
    ] {
        if message.contains(debug) {
            return Some(format!("Rust Debug rendering {debug:?}"));
        }
    }
    if message.contains('|') {
        return Some("a type set written with `|` (write `integer or string`)".into());
    }
    let mut parts = Vec::new();
    let mut rest = message;
    while let Some(open) = rest.find('(') {
        let Some(close) = rest[open..].find(')') else {
            return Some("unbalanced parenthesis".into());
        };
        let part = &rest[open..open + close + 1];
        if parts.contains(&part) {
            return Some(format!("{part} repeated"));
        }
        parts.push(part);
        rest = &rest[open + close + 1..];
    }
    if parts.len() > 1 {
        return Some(format!("{} parenthesised parts", parts.len()));
    }
    let words: Vec<&str> = message.split_whitespace().collect();
    if let Some(w) = words.windows(2).find(|w| w[0].eq_ignore_ascii_case(w[1])) {
        return Some(format!("word {:?} twice in a row", w[0]));
    }
    for twice in ["was", "now", "removed", "added", "changed", "items"] {
        if words
            .iter()
            .filter(|w| w.trim_matches(|c: char| !c.is_alphanumeric()) == twice)
            .count()
            > 1
        {
            return Some(format!("{twice:?} said twice"));
        }
    }
    None
}

fn body_case(a: &str, b: &str, mode: DiffMode) -> Result<Report, Box<dyn std::error::Error>> {
    run(a, b, &Options::with_mode(mode))
}

fn response_case(
    a: (u16, &[(&str, &str)]),
    b: Option<(u16, &[(&str, &str)])>,
    text: Option<(&str, &str)>,
) -> Result<Report, Box<dyn std::error::Error>> {
    let hs = |h: &[(&str, &str)]| -> Vec<(String, String)> {
        h.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let body = |t: Option<&str>| match t {
        Some(t) => Body::Text(TextBody::of(t.as_bytes())),
        None => Body::Json(Json::Null),
    };
    let x = Input::response(a.0, hs(a.1), body(text.map(|t| t.0)));
    let y = match b {
        Some(b) => Input::response(b.0, hs(b.1), body(text.map(|t| t.1))),
        None => Input::no_response("connection refused"),
    };
    Ok(diff(&x, &y, &Options::with_mode(DiffMode::Full))?)
}

const CONTRACT_SPEC: &str = r#"{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/u":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","properties":{"id":{"type":"integer"}}}}}}}}}}}"#;

#[test]
fn every_rule_of_the_table_says_its_change_once_in_plain_words() -> R {
    use DiffMode::{Full as F, Schema as Sc};
    let mut cases: Vec<(Rule, Report)> = vec![
        (
            Rule::FieldRemoved,
            body_case(r#"{"email":"ada@example.com"}"#, "{}", F)?,
        ),
        (Rule::FieldRemoved, body_case(r#"{"e":null}"#, "{}", F)?),
        (Rule::FieldRemoved, body_case(r#"{"e":{"x":1}}"#, "{}", F)?),
        (
            Rule::FieldRemoved,
            body_case(r#"[{"o":1}]"#, "[{},{}]", Sc)?,
        ),
        (Rule::FieldRemoved, body_case(r#"[{"o":1}]"#, "[{}]", Sc)?),
        (
            Rule::FieldRemovedFromSome,
            body_case(r#"[{"e":1},{"e":2}]"#, r#"[{"e":1},{}]"#, Sc)?,
        ),
        (
            Rule::FieldGoneFromSome,
            body_case(r#"[{"o":1},{}]"#, "[{},{}]", Sc)?,
        ),
        (Rule::FieldAdded, body_case("{}", r#"{"b":"x"}"#, F)?),
        (Rule::FieldAdded, body_case("{}", r#"{"b":[1]}"#, F)?),
        (
            Rule::FieldAdded,
            body_case("[{}]", r#"[{"b":1},{"b":"s"}]"#, Sc)?,
        ),
        (
            Rule::FieldAddedInSome,
            body_case("[{},{}]", r#"[{"o":1},{}]"#, Sc)?,
        ),
        (
            Rule::TypeChanged,
            body_case(r#"{"v":1}"#, r#"{"v":"1"}"#, F)?,
        ),
        (
            Rule::TypeChanged,
            body_case(
                r#"[{"v":1},{"v":2}]"#,
                r#"[{"v":1},{"v":"x"},{"v":"y"}]"#,
                Sc,
            )?,
        ),
        (
            Rule::TypeChanged,
            body_case(r#"[{"v":1},{"v":"a"}]"#, r#"[{"v":true}]"#, Sc)?,
        ),
        (
            Rule::IntegerToNumber,
            body_case(r#"{"v":1}"#, r#"{"v":1.5}"#, F)?,
        ),
        (
            Rule::IntegerToNumber,
            body_case(r#"[{"v":1}]"#, r#"[{"v":1},{"v":2.5}]"#, Sc)?,
        ),
        (
            Rule::NumberToInteger,
            body_case(r#"{"v":1.5}"#, r#"{"v":2}"#, F)?,
        ),
        (
            Rule::BecameNull,
            body_case(r#"{"v":"alpha"}"#, r#"{"v":null}"#, F)?,
        ),
        (
            Rule::BecameNull,
            body_case(r#"[{"v":"a"}]"#, r#"[{"v":null}]"#, Sc)?,
        ),
        (
            Rule::BecameNull,
            body_case(r#"[{"v":"a"}]"#, r#"[{"v":"a"},{"v":null}]"#, Sc)?,
        ),
        (
            Rule::BecameNonNull,
            body_case(r#"{"v":null}"#, r#"{"v":3}"#, F)?,
        ),
        (
            Rule::BecameNonNull,
            body_case(r#"[{"v":null}]"#, r#"[{"v":null},{"v":"s"}]"#, Sc)?,
        ),
        (
            Rule::ValueChanged,
            body_case(r#"{"v":"alpha"}"#, r#"{"v":"omega"}"#, F)?,
        ),
        (
            Rule::ItemRemoved,
            body_case(r#"[{"id":1},{"id":2}]"#, r#"[{"id":1}]"#, F)?,
        ),
        (
            Rule::ItemAdded,
            body_case(r#"[{"id":1}]"#, r#"[{"id":1},{"id":"a b"}]"#, F)?,
        ),
        (Rule::ElementRemoved, body_case("[1,2]", "[1]", F)?),
        (Rule::ElementAdded, body_case("[1]", r#"[1,{"a":1}]"#, F)?),
        (
            Rule::TextBodyChanged,
            response_case((200, &[]), Some((200, &[])), Some(("a", "b")))?,
        ),
        (
            Rule::StatusLeft2xx,
            response_case((200, &[]), Some((503, &[])), None)?,
        ),
        (Rule::NoResponse, response_case((200, &[]), None, None)?),
        (
            Rule::StatusChanged,
            response_case((200, &[]), Some((201, &[])), None)?,
        ),
        (
            Rule::ContentTypeNotJson,
            response_case(
                (200, &[("content-type", "application/json")]),
                Some((200, &[("content-type", "text/html")])),
                None,
            )?,
        ),
        (
            Rule::ContentTypeChanged,
            response_case(
                (200, &[("content-type", "application/json")]),
                Some((200, &[("content-type", "application/problem+json")])),
                None,
            )?,
        ),
        (
            Rule::DeprecationAppeared,
            response_case(
                (200, &[]),
                Some((200, &[("sunset", "Sat, 1 Jan 2028")])),
                None,
            )?,
        ),
        (
            Rule::DeprecationDisappeared,
            response_case((200, &[("deprecation", "true")]), Some((200, &[])), None)?,
        ),
        (
            Rule::HeaderPresence,
            response_case((200, &[]), Some((200, &[("etag", "\"x\"")])), None)?,
        ),
    ];
    let contract = contract::Contract::from_openapi(CONTRACT_SPEC, "GET /u", None)?;
    cases.push((
        Rule::ContractViolation,
        contract
            .validator()?
            .check(&json!({"id": "1"}), &Options::default()),
    ));
    let mut seen = std::collections::HashSet::new();
    let mut problems = Vec::new();
    for (rule, report) in &cases {
        let found: Vec<&DiffChange> = report
            .changes
            .iter()
            .filter(|c| c.change_type == rule.change_type() && c.severity == rule.severity())
            .collect();
        assert_eq!(found.len(), 1, "{}: {:?}", rule.id(), report.changes);
        let change = found[0];
        seen.insert(rule.id());
        if let Some(why) = unreadable(&change.message) {
            problems.push(format!("{}: {:?}: {why}", rule.id(), change.message));
        }
        // Body values stay in oldValue/newValue: the message never repeats them.
        if change.path.starts_with('$') && *rule != Rule::ContractViolation {
            for v in [&change.old_value, &change.new_value].into_iter().flatten() {
                if let Value::String(s) = v
                    && s.len() >= 3
                    && change.message.contains(s.as_str())
                {
                    problems.push(format!(
                        "{}: {:?} repeats the value",
                        rule.id(),
                        change.message
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let missing: Vec<&str> = Rule::ALL
        .iter()
        .map(|r| r.id())
        .filter(|id| !seen.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a message case: {missing:?}"
    );
    // The check itself catches what the issue found.
    for bad in [
        "field removed (was null) (was null)",
        "field removed (was string) (was \"ada@…\")",
        "type changed from Some(Integer) to string",
        "type changed from integer to integer|string",
        "element 1 removed removed",
    ] {
        assert!(unreadable(bad).is_some(), "{bad}");
    }
    Ok(())
}

#[test]
fn messages_read_naturally() -> R {
    let msg = |a: &str, b: &str, mode| -> Result<Vec<String>, Box<dyn std::error::Error>> {
        Ok(body_case(a, b, mode)?
            .changes
            .into_iter()
            .map(|c| c.message)
            .collect())
    };
    use DiffMode::{Full as F, Schema as Sc};
    assert_eq!(msg(r#"{"e":null}"#, "{}", F)?, ["field removed (was null)"]);
    assert_eq!(
        msg(r#"{"e":"ada@example.com"}"#, "{}", F)?,
        ["field removed (was a string)"]
    );
    assert_eq!(msg("{}", r#"{"e":1}"#, F)?, ["field added (an integer)"]);
    assert_eq!(
        msg(r#"{"v":1}"#, r#"{"v":"1"}"#, F)?,
        ["type changed from integer to string"]
    );
    assert_eq!(
        msg(r#"{"v":null}"#, r#"{"v":"x"}"#, F)?,
        ["no longer null, now a string"]
    );
    assert_eq!(
        msg(
            r#"[{"v":1},{"v":2}]"#,
            r#"[{"v":1},{"v":"x"},{"v":"y"}]"#,
            Sc
        )?,
        ["type changed from integer to string in 2 of 3 items"]
    );
    assert_eq!(
        msg(r#"[{"e":1},{"e":2}]"#, r#"[{"e":1},{}]"#, Sc)?,
        ["field missing from 1 of 2 items"]
    );
    assert_eq!(
        msg(r#"[{"o":1}]"#, "[{},{}]", Sc)?,
        ["field removed from every item (was an integer)"]
    );
    assert_eq!(
        msg("[{},{}]", r#"[{"o":1},{"o":"s"}]"#, Sc)?,
        ["field added in all 2 items (an integer or a string)"]
    );
    assert_eq!(
        msg(r#"[{"id":1},{"id":2}]"#, r#"[{"id":1}]"#, F)?,
        ["item removed"]
    );
    assert_eq!(
        msg("[1,2]", "[1]", F)?,
        ["element removed (was an integer)"]
    );
    Ok(())
}

// ---- Grouping -----------------------------------------------------------------------------------

#[test]
fn changes_sharing_a_normalised_path_and_type_group_together() -> R {
    let a = r#"{"u":[{"id":1,"e":"a","n":1},{"id":2,"e":"b","n":1},{"id":3,"e":"c","n":1}],"s":[[1],[2]]}"#;
    let b = r#"{"u":[{"id":1,"n":2},{"id":2,"n":1},{"id":3,"n":"x"}],"s":[[1,5],[2,6]]}"#;
    let r = run(a, b, &Options::with_mode(DiffMode::Full))?;
    let groups = group_changes(&r.changes);
    let summary: Vec<(String, T, S, usize, Vec<String>)> = groups
        .iter()
        .map(|g| {
            (
                g.path.clone(),
                g.change_type,
                g.severity,
                g.count(),
                g.items.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "$.u[].e".into(),
                T::Removed,
                S::Breaking,
                3,
                vec!["[id=1]".into(), "[id=2]".into(), "[id=3]".into()]
            ),
            (
                "$.u[].n".into(),
                T::Changed,
                S::Info,
                1,
                vec!["[id=1]".into()]
            ),
            (
                "$.u[].n".into(),
                T::TypeChanged,
                S::Breaking,
                1,
                vec!["[id=3]".into()]
            ),
            (
                "$.s[][]".into(),
                T::Added,
                S::Info,
                2,
                vec!["[0][1]".into(), "[1][1]".into()]
            ),
        ]
    );
    // Every change is in exactly one group, in order.
    let mut all: Vec<usize> = groups.iter().flat_map(|g| g.indices.clone()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..r.changes.len()).collect::<Vec<_>>());
    assert_eq!(groups[0].message, r.changes[groups[0].indices[0]].message);
    // Status, headers and plain paths are groups of one.
    assert!(group_changes(&[]).is_empty());
    Ok(())
}

#[test]
fn full_mode_merged_changes_count_every_item_as_schema_mode_does() -> R {
    // Items 0 and 1 are unchanged; item 2 gains `v` as a string. The merged-shape change counts
    // all three items, as schema mode does.
    let a = r#"{"d":[{"v":1},{"v":2},{}],"k":[{"id":1,"x":1},{"id":2,"x":2},{"id":3}]}"#;
    let b =
        r#"{"d":[{"v":1},{"v":2},{"v":"s"}],"k":[{"id":1,"x":1},{"id":2,"x":2},{"id":4,"x":"s"}]}"#;
    let full_changes = changes(a, b, DiffMode::Full)?;
    let schema_changes = changes(a, b, DiffMode::Schema)?;
    let merged: Vec<(&str, &str)> = full_changes
        .iter()
        .filter(|c| c.path.contains("[]"))
        .map(|c| (c.path.as_str(), c.message.as_str()))
        .collect();
    assert_eq!(
        merged,
        vec![
            (
                "$.d[].v",
                "type changed from integer to string in 1 of 3 items"
            ),
            (
                "$.k[].x",
                "type changed from integer to string in 1 of 3 items"
            ),
        ]
    );
    let schema: Vec<(&str, &str)> = schema_changes
        .iter()
        .map(|c| (c.path.as_str(), c.message.as_str()))
        .collect();
    assert_eq!(schema, merged);
    Ok(())
}
