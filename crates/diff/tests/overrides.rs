//! Severity overrides, rule by rule: for every rule of the severity table, a pair of inputs that
//! gives changes of that rule only; each level (`info`, `warning`, `breaking`) re-grades them and
//! the counts follow, `ignore` drops them, a path restricts the override to that path and below
//! it, an override of another rule leaves them alone, and the first matching override wins.

use apidrift_diff::contract::Contract;
use apidrift_diff::{
    Body, DiffMode, IgnorePattern, Input, Options, OverrideRule, OverrideSeverity, Report, Rule,
    Severity, TextBody, diff,
};
use serde_json::{Value, json};

type R = Result<(), Box<dyn std::error::Error>>;
type Case = Box<dyn Fn(&Options) -> Result<Report, Box<dyn std::error::Error>>>;

const CONTRACT_SPEC: &str = r#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /u:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  id: {type: integer}
"#;

fn bodies(mode: DiffMode, before: Value, after: Value) -> Case {
    Box::new(move |options: &Options| {
        let mut options = options.clone();
        options.mode = mode;
        Ok(diff(
            &Input::bare(before.clone()),
            &Input::bare(after.clone()),
            &options,
        )?)
    })
}

fn headers(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Two responses with empty JSON bodies: status and headers only.
fn responses(before: (u16, &[(&str, &str)]), after: Option<(u16, &[(&str, &str)])>) -> Case {
    let old = Input::response(before.0, headers(before.1), Body::Json(json!({})));
    let new = match after {
        Some((status, list)) => Input::response(status, headers(list), Body::Json(json!({}))),
        None => Input::no_response("connection refused"),
    };
    Box::new(move |options: &Options| Ok(diff(&old, &new, options)?))
}

/// Every rule, with inputs that give changes of that rule only, and the path of the first.
fn cases() -> Vec<(Rule, &'static str, Case)> {
    use DiffMode::{Full, Schema};
    let text = |body: &[u8]| {
        Input::response(
            200,
            headers(&[("content-type", "text/html")]),
            Body::<Value>::Text(TextBody::of(body)),
        )
    };
    let (old_text, new_text) = (text(b"<p>a"), text(b"<p>b"));
    vec![
        (
            Rule::FieldRemoved,
            "$.b",
            bodies(Schema, json!({"a": 1, "b": 2}), json!({"a": 1})),
        ),
        (
            Rule::FieldRemovedFromSome,
            "$[].e",
            bodies(Schema, json!([{"e": 1}, {"e": 2}]), json!([{"e": 1}, {}])),
        ),
        (
            Rule::FieldGoneFromSome,
            "$[].o",
            bodies(Schema, json!([{"o": 1}, {}]), json!([{}, {}])),
        ),
        (
            Rule::FieldAdded,
            "$.b",
            bodies(Schema, json!({}), json!({"b": 1})),
        ),
        (
            Rule::FieldAddedInSome,
            "$[].o",
            bodies(Schema, json!([{}, {}]), json!([{"o": 1}, {}])),
        ),
        (
            Rule::TypeChanged,
            "$.id",
            bodies(Schema, json!({"id": 1}), json!({"id": "1"})),
        ),
        (
            Rule::IntegerToNumber,
            "$.p",
            bodies(Schema, json!({"p": 1}), json!({"p": 1.5})),
        ),
        (
            Rule::NumberToInteger,
            "$.p",
            bodies(Schema, json!({"p": 1.5}), json!({"p": 2})),
        ),
        (
            Rule::BecameNull,
            "$.e",
            bodies(Schema, json!({"e": "a"}), json!({"e": null})),
        ),
        (
            Rule::BecameNonNull,
            "$.e",
            bodies(Schema, json!({"e": null}), json!({"e": "a"})),
        ),
        (
            Rule::ValueChanged,
            "$.n",
            bodies(Full, json!({"n": "a"}), json!({"n": "b"})),
        ),
        (
            Rule::ItemRemoved,
            "$[id=2]",
            bodies(Full, json!([{"id": 1}, {"id": 2}]), json!([{"id": 1}])),
        ),
        (
            Rule::ItemAdded,
            "$[id=3]",
            bodies(Full, json!([{"id": 1}]), json!([{"id": 1}, {"id": 3}])),
        ),
        (
            Rule::ElementRemoved,
            "$[1]",
            bodies(Full, json!([1, 2, 3]), json!([1])),
        ),
        (
            Rule::ElementAdded,
            "$[1]",
            bodies(Full, json!([1]), json!([1, 2])),
        ),
        (
            Rule::TextBodyChanged,
            "$",
            Box::new(move |options: &Options| {
                let mut options = options.clone();
                options.mode = Full;
                Ok(diff(&old_text, &new_text, &options)?)
            }),
        ),
        (
            Rule::StatusLeft2xx,
            "status",
            responses((200, &[]), Some((503, &[]))),
        ),
        (Rule::NoResponse, "status", responses((200, &[]), None)),
        (
            Rule::StatusChanged,
            "status",
            responses((200, &[]), Some((201, &[]))),
        ),
        (
            Rule::ContentTypeNotJson,
            "headers.content-type",
            responses(
                (200, &[("content-type", "application/json")]),
                Some((200, &[("content-type", "text/html")])),
            ),
        ),
        (
            Rule::ContentTypeChanged,
            "headers.content-type",
            responses(
                (200, &[("content-type", "application/json")]),
                Some((200, &[("content-type", "application/problem+json")])),
            ),
        ),
        (
            Rule::DeprecationAppeared,
            "headers.sunset",
            responses((200, &[]), Some((200, &[("sunset", "Sat, 1 Jan 2028")]))),
        ),
        (
            Rule::DeprecationDisappeared,
            "headers.deprecation",
            responses((200, &[("deprecation", "true")]), Some((200, &[]))),
        ),
        (
            Rule::HeaderPresence,
            "headers.etag",
            responses((200, &[]), Some((200, &[("etag", "\"x\"")]))),
        ),
        (
            Rule::ContractViolation,
            "$.id",
            Box::new(|options: &Options| {
                let contract = Contract::from_openapi(CONTRACT_SPEC, "GET /u", None)?;
                Ok(contract.validator()?.check(&json!({"id": "1"}), options))
            }),
        ),
    ]
}

fn with(overrides: &[&str]) -> Result<Options, apidrift_diff::PatternError> {
    let mut options = Options::default();
    for spec in overrides {
        options = options.with_severity_override(OverrideRule::parse_spec(spec)?);
    }
    Ok(options)
}

/// A path of the same place as `path` that it does not match (none for `status`).
fn elsewhere(path: &str) -> Option<&'static str> {
    if path == "status" {
        None
    } else if path.starts_with("headers.") {
        Some("headers.x-other")
    } else {
        Some("$.elsewhere")
    }
}

/// Another rule whose changes are at the same place.
fn another(rule: Rule) -> Rule {
    match rule {
        Rule::StatusChanged => Rule::StatusLeft2xx,
        Rule::StatusLeft2xx | Rule::NoResponse => Rule::StatusChanged,
        Rule::HeaderPresence => Rule::ContentTypeChanged,
        Rule::ContentTypeNotJson
        | Rule::ContentTypeChanged
        | Rule::DeprecationAppeared
        | Rule::DeprecationDisappeared => Rule::HeaderPresence,
        Rule::FieldAdded => Rule::FieldRemoved,
        _ => Rule::FieldAdded,
    }
}

#[test]
fn every_rule_has_a_case() {
    let covered: Vec<Rule> = cases().iter().map(|(rule, _, _)| *rule).collect();
    assert_eq!(covered, Rule::ALL);
}

#[test]
fn each_rule_is_regraded_and_counted_at_every_level() -> R {
    for (rule, _, case) in cases() {
        let plain = case(&Options::default())?;
        assert!(!plain.changes.is_empty(), "{}", rule.id());
        for change in &plain.changes {
            assert_eq!(
                (change.change_type, change.severity),
                (rule.change_type(), rule.severity()),
                "{}: {change:?}",
                rule.id()
            );
        }
        let n = u32::try_from(plain.changes.len())?;
        for level in [
            OverrideSeverity::Info,
            OverrideSeverity::Warning,
            OverrideSeverity::Breaking,
        ] {
            let report = case(&with(&[&format!("{}={level}", rule.id())])?)?;
            let severity = level.severity().ok_or("a level")?;
            assert_eq!(report.changes.len(), plain.changes.len(), "{}", rule.id());
            for (got, was) in report.changes.iter().zip(&plain.changes) {
                assert_eq!(got.severity, severity, "{} {level}", rule.id());
                // Only the severity changes: same path, type, id and message.
                let regraded = apidrift_diff::DiffChange {
                    severity: was.severity,
                    ..got.clone()
                };
                assert_eq!(&regraded, was, "{} {level}", rule.id());
            }
            let counts = report.counts;
            let expected = match severity {
                Severity::Breaking => (n, 0, 0),
                Severity::Warning => (0, n, 0),
                _ => (0, 0, n),
            };
            assert_eq!(
                (
                    counts.breaking_count,
                    counts.warning_count,
                    counts.info_count
                ),
                expected,
                "{} {level}",
                rule.id()
            );
            assert_eq!(counts.change_count, n);
            assert_eq!(report.max_severity(), Some(severity));
            assert!(report.reaches(Some(severity)));
        }
        let ignored = case(&with(&[&format!("{}=ignore", rule.id())])?)?;
        assert_eq!(ignored.changes, vec![], "{}", rule.id());
        assert_eq!(ignored.counts.change_count, 0);
        assert_eq!(ignored.max_severity(), None);
    }
    Ok(())
}

#[test]
fn a_path_restricts_an_override_to_that_path_and_below() -> R {
    for (rule, path, case) in cases() {
        let plain = case(&Options::default())?;
        let id = rule.id();
        // At the change's own path (a body path parses as a pattern matching exactly it).
        let at = case(&with(&[&format!("{id}={path}=ignore")])?)?;
        assert!(
            at.changes.iter().all(|c| c.path != path),
            "{id} at {path}: {:?}",
            at.changes
        );
        if let Some(other) = elsewhere(path) {
            let report = case(&with(&[&format!("{id}={other}=ignore")])?)?;
            assert_eq!(report, plain, "{id} at {other}");
        }
        // An ancestor of a body path matches the changes below it.
        if path.starts_with('$') {
            let everything = case(&with(&[&format!("{id}=$=ignore")])?)?;
            assert_eq!(everything.changes, vec![], "{id} at $");
        }
        // An override of another rule leaves these changes alone.
        let report = case(&with(&[&format!("{}=ignore", another(rule).id())])?)?;
        assert_eq!(report, plain, "{id} against {}", another(rule).id());
    }
    Ok(())
}

#[test]
fn the_first_matching_override_wins() -> R {
    for (rule, path, case) in cases() {
        let id = rule.id();
        let report = case(&with(&[
            &format!("{id}={path}=ignore"),
            &format!("{id}=breaking"),
        ])?)?;
        assert!(report.changes.iter().all(|c| c.path != path), "{id}");
        let report = case(&with(&[
            &format!("{id}=info"),
            &format!("{id}={path}=ignore"),
        ])?)?;
        assert!(!report.changes.is_empty(), "{id}");
        assert!(
            report.changes.iter().all(|c| c.severity == Severity::Info),
            "{id}"
        );
        // A non-matching override first does not stop a matching one after it.
        if let Some(other) = elsewhere(path) {
            let report = case(&with(&[
                &format!("{id}={other}=info"),
                &format!("{id}=breaking"),
            ])?)?;
            assert!(
                report
                    .changes
                    .iter()
                    .all(|c| c.severity == Severity::Breaking),
                "{id}"
            );
        }
    }
    Ok(())
}

#[test]
fn overrides_apply_after_ignore_patterns_and_to_keyed_paths() -> R {
    let before = json!({"users": [{"id": 1, "e": "a"}, {"id": 2, "e": "b"}, {"id": 3, "e": "c"}]});
    let after = json!({"users": [{"id": 1}, {"id": 2}, {"id": 3, "e": "c"}]});
    let options = Options::with_mode(DiffMode::Full)
        .with_severity_override(OverrideRule::parse_spec(
            "field-removed=$.users[id=1]=warning",
        )?)
        .with_severity_override(OverrideRule::parse_spec("field-removed=$.users[].e=info")?);
    let report = apidrift_diff::diff_bodies(&before, &after, &options)?;
    let got: Vec<(&str, Severity)> = report
        .changes
        .iter()
        .map(|c| (c.path.as_str(), c.severity))
        .collect();
    // The first override matches user 1 only; the second (`[]` matches any item) matches both.
    // Full mode's merged-shape change (`$.users[].e` missing from 2 of 3 items) stays covered
    // by the item-level changes, which coverage grades by the engine's own severities.
    assert_eq!(
        got,
        [
            ("$.users[id=1].e", Severity::Warning),
            ("$.users[id=2].e", Severity::Info),
        ]
    );
    assert_eq!(
        (
            report.counts.breaking_count,
            report.counts.warning_count,
            report.counts.info_count
        ),
        (0, 1, 1)
    );
    // An ignore pattern drops a change before any override sees it.
    let options = options.with_ignore(IgnorePattern::parse("$.users[id=2]")?);
    let report = apidrift_diff::diff_bodies(&before, &after, &options)?;
    assert!(report.changes.iter().all(|c| !c.path.contains("id=2")));
    Ok(())
}

/// Real drift: every Stripe resource of the 2022 and 2026 fixtures (`tests/data/realworld`), in
/// both modes. `field-removed` is the only rule of type `removed` that is breaking, so ignoring
/// it must leave exactly the other changes, in order; grading it `info` must leave the same
/// changes with those graded info; and a path keeps the override to that part of the body.
#[test]
fn overrides_on_every_stripe_resource_2022_to_2026() -> R {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/realworld");
    let read = |name: &str| -> Result<Value, Box<dyn std::error::Error>> {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(name))?)?;
        Ok(doc["resources"].clone())
    };
    let (old, new) = (
        read("stripe-fixtures3-2022-04.json")?,
        read("stripe-fixtures3-2026.json")?,
    );
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return Err("no resources".into());
    };
    let is_field_removed = |c: &apidrift_diff::DiffChange| {
        c.change_type == apidrift_diff::ChangeType::Removed && c.severity == Severity::Breaking
    };
    let (mut pairs, mut dropped, mut under_lines) = (0usize, 0usize, 0usize);
    for mode in [DiffMode::Schema, DiffMode::Full] {
        let plain_options = Options::with_mode(mode);
        let ignore = Options::with_mode(mode)
            .with_severity_override(OverrideRule::parse_spec("field-removed=ignore")?);
        let info = Options::with_mode(mode)
            .with_severity_override(OverrideRule::parse_spec("field-removed=info")?);
        let lines = Options::with_mode(mode)
            .with_severity_override(OverrideRule::parse_spec("field-removed=$.lines=ignore")?);
        for (name, a) in &old {
            let Some(b) = new.get(name) else { continue };
            pairs += 1;
            let plain = apidrift_diff::diff_bodies(a, b, &plain_options)?;
            let kept: Vec<_> = plain
                .changes
                .iter()
                .filter(|c| !is_field_removed(c))
                .cloned()
                .collect();
            dropped += plain.changes.len() - kept.len();
            let report = apidrift_diff::diff_bodies(a, b, &ignore)?;
            assert_eq!(report.changes, kept, "{name} {mode:?}");
            assert_eq!(
                report.counts.breaking_count,
                plain.counts.breaking_count - u32::try_from(plain.changes.len() - kept.len())?,
                "{name}"
            );
            let regraded = apidrift_diff::diff_bodies(a, b, &info)?;
            assert_eq!(regraded.changes.len(), plain.changes.len(), "{name}");
            for (got, was) in regraded.changes.iter().zip(&plain.changes) {
                let expected = if is_field_removed(was) {
                    Severity::Info
                } else {
                    was.severity
                };
                assert_eq!((&got.path, got.severity), (&was.path, expected), "{name}");
            }
            let report = apidrift_diff::diff_bodies(a, b, &lines)?;
            let expected: Vec<_> = plain
                .changes
                .iter()
                .filter(|c| {
                    !(is_field_removed(c)
                        && (c.path.starts_with("$.lines.") || c.path.starts_with("$.lines[")))
                })
                .cloned()
                .collect();
            under_lines += plain.changes.len() - expected.len();
            assert_eq!(report.changes, expected, "{name} {mode:?}");
        }
    }
    assert!(pairs > 200, "{pairs} resource pairs");
    assert!(dropped > 100, "{dropped} field-removed changes");
    // The invoice's line items lost 7 fields (docs/severity.md).
    assert!(under_lines >= 7, "{under_lines} under $.lines");
    Ok(())
}
