//! Identity key `.`: the items of an array of scalars paired by their own value, as multisets, in
//! both modes. A permutation is no change; the changes are exactly the multiset difference, one
//! per value with its count in the message.

use apidrift_diff::{
    ChangeType, DiffChange, DiffMode, IdentityRule, IgnorePattern, Json, Options, OverrideRule,
    Report, Severity, diff_bodies, parse,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::BTreeMap;

type R = Result<(), Box<dyn std::error::Error>>;

fn by_value(mode: DiffMode, pattern: &str) -> Result<Options, apidrift_diff::PatternError> {
    Ok(Options::with_mode(mode).with_identity_rule(IdentityRule::parse(pattern, ".")?))
}

fn modes() -> [DiffMode; 2] {
    [DiffMode::Full, DiffMode::Schema]
}

fn paths(report: &Report) -> Vec<(String, ChangeType, Severity, String)> {
    report
        .changes
        .iter()
        .map(|c| (c.path.clone(), c.change_type, c.severity, c.message.clone()))
        .collect()
}

fn change(
    path: &str,
    t: ChangeType,
    s: Severity,
    m: &str,
) -> (String, ChangeType, Severity, String) {
    (path.to_owned(), t, s, m.to_owned())
}

#[test]
fn a_reordered_list_of_strings_is_no_change_and_a_new_value_is_one() -> R {
    let before = json!({"tags": ["alpha", "beta", "gamma"]});
    let reordered = json!({"tags": ["gamma", "alpha", "beta"]});
    // Without the rule, full mode pairs by position: every moved value is a change.
    let plain = diff_bodies(&before, &reordered, &Options::with_mode(DiffMode::Full))?;
    assert_eq!(plain.changes.len(), 3);
    for mode in modes() {
        let options = by_value(mode, "$.tags")?;
        assert_eq!(diff_bodies(&before, &reordered, &options)?.changes, vec![]);
        let after = json!({"tags": ["delta", "gamma", "alpha"]});
        let report = diff_bodies(&before, &after, &options)?;
        assert_eq!(
            paths(&report),
            [
                change(
                    "$.tags[.=beta]",
                    ChangeType::Removed,
                    Severity::Warning,
                    "item removed"
                ),
                change(
                    "$.tags[.=delta]",
                    ChangeType::Added,
                    Severity::Info,
                    "item added"
                ),
            ],
            "{mode:?}"
        );
        assert_eq!(report.changes[0].old_value, Some(json!("beta")));
        assert_eq!(report.changes[0].old_type.as_deref(), Some("string"));
        assert_eq!(report.changes[1].new_value, Some(json!("delta")));
    }
    Ok(())
}

#[test]
fn duplicates_count_as_a_multiset() -> R {
    let before = json!({"t": ["a", "a", "b", "c", "c", "c"]});
    let after = json!({"t": ["c", "a", "b", "b", "b", "d", "d"]});
    for mode in modes() {
        let report = diff_bodies(&before, &after, &by_value(mode, "$.t")?)?;
        assert_eq!(
            paths(&report),
            [
                change(
                    "$.t[.=a]",
                    ChangeType::Removed,
                    Severity::Warning,
                    "1 of 2 items removed"
                ),
                change(
                    "$.t[.=c]",
                    ChangeType::Removed,
                    Severity::Warning,
                    "2 of 3 items removed"
                ),
                change(
                    "$.t[.=b]",
                    ChangeType::Added,
                    Severity::Info,
                    "2 items added (3 now)"
                ),
                change(
                    "$.t[.=d]",
                    ChangeType::Added,
                    Severity::Info,
                    "2 items added"
                ),
            ],
            "{mode:?}"
        );
        let gone = diff_bodies(
            &json!({"t": ["x", "x"]}),
            &json!({"t": []}),
            &by_value(mode, "$.t")?,
        )?;
        assert_eq!(gone.changes.len(), 1);
        assert_eq!(gone.changes[0].message, "2 items removed");
        let more = diff_bodies(
            &json!({"t": ["x"]}),
            &json!({"t": ["x", "x"]}),
            &by_value(mode, "$.t")?,
        )?;
        assert_eq!(more.changes[0].message, "item added (2 now)");
    }
    Ok(())
}

#[test]
fn numbers_booleans_and_null_pair_by_value_within_their_type() -> R {
    let before = parse(r#"{"v": [1.0, 2, true, null, "2", 1e3]}"#)?;
    let after = parse(r#"{"v": [1000, "2", null, 2, 1.00, true]}"#)?;
    let options = by_value(DiffMode::Full, "$.v")?;
    let report = diff_bodies(&before, &after, &options)?;
    // `1e3` (a number) and `1000` (an integer) differ in type; `1.0` and `1.00` are equal.
    let got: Vec<(String, ChangeType)> = report
        .changes
        .iter()
        .map(|c| (c.path.clone(), c.change_type))
        .collect();
    assert_eq!(
        got,
        [
            ("$.v[.=1e3]".to_owned(), ChangeType::Removed),
            ("$.v[.=1000]".to_owned(), ChangeType::Added),
        ]
    );
    let report = diff_bodies(
        &json!({"v": [true, false, null]}),
        &json!({"v": [false]}),
        &options,
    )?;
    let removed: Vec<&str> = report.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(removed, ["$.v[.=true]", "$.v[.=null]"]);
    Ok(())
}

#[test]
fn full_mode_still_reports_what_schema_mode_finds_in_the_merged_elements() -> R {
    // A null joins the element types: schema mode says `became-null` at `$.t[]`; so does full mode,
    // beside the added value.
    let before = json!({"t": ["a"]});
    let after = json!({"t": ["a", null]});
    for mode in modes() {
        let report = diff_bodies(&before, &after, &by_value(mode, "$.t")?)?;
        let got: Vec<(&str, ChangeType, Severity)> = report
            .changes
            .iter()
            .map(|c| (c.path.as_str(), c.change_type, c.severity))
            .collect();
        assert_eq!(
            got,
            [
                ("$.t[.=null]", ChangeType::Added, Severity::Info),
                ("$.t[]", ChangeType::NullabilityChanged, Severity::Breaking),
            ],
            "{mode:?}"
        );
    }
    Ok(())
}

#[test]
fn arrays_of_objects_under_dot_are_paired_by_position_in_full_mode() -> R {
    let before = json!({"u": [{"id": 1}, {"id": 2}]});
    let after = json!({"u": [{"id": 2}, {"id": 1}]});
    // With the default keys the swap is no change; `.` names no member, so items that are not
    // scalars fall back to position, as any identity rule that does not fit.
    assert_eq!(
        diff_bodies(&before, &after, &Options::with_mode(DiffMode::Full))?.changes,
        vec![]
    );
    let report = diff_bodies(&before, &after, &by_value(DiffMode::Full, "$.u")?)?;
    let got: Vec<&str> = report.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(got, ["$.u[0].id", "$.u[1].id"]);
    // A member literally named "." is not an identity key either.
    let before = json!({"u": [{".": "a"}, {".": "b"}]});
    let after = json!({"u": [{".": "b"}, {".": "a"}]});
    let report = diff_bodies(&before, &after, &by_value(DiffMode::Full, "$.u")?)?;
    assert_eq!(report.changes.len(), 2);
    Ok(())
}

#[test]
fn nested_arrays_pair_by_value_in_full_mode_and_not_in_schema_mode() -> R {
    let before = json!({"items": [{"id": 1, "tags": ["a", "b"]}]});
    let after = json!({"items": [{"id": 1, "tags": ["b", "c"]}]});
    let report = diff_bodies(
        &before,
        &after,
        &by_value(DiffMode::Full, "$.items[].tags")?,
    )?;
    let got: Vec<&str> = report.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(got, ["$.items[id=1].tags[.=a]", "$.items[id=1].tags[.=c]"]);
    // Schema mode merges the items of `items`: their `tags` are never walked one by one.
    let report = diff_bodies(
        &before,
        &after,
        &by_value(DiffMode::Schema, "$.items[].tags")?,
    )?;
    assert_eq!(report.changes, vec![]);
    Ok(())
}

#[test]
fn value_paths_work_with_ignore_patterns_overrides_and_grouping() -> R {
    let before = json!({"tags": ["stable", "beta"]});
    let after = json!({"tags": ["stable", "gamma"]});
    let options = by_value(DiffMode::Full, "$.tags")?
        .with_ignore(IgnorePattern::parse("$.tags[.=beta]")?)
        .with_severity_override(OverrideRule::parse_spec(
            "keyed-item-added=$.tags[]=breaking",
        )?);
    let report = diff_bodies(&before, &after, &options)?;
    assert_eq!(
        paths(&report),
        [change(
            "$.tags[.=gamma]",
            ChangeType::Added,
            Severity::Breaking,
            "item added"
        )]
    );
    let groups = apidrift_diff::group_changes(&report.changes);
    assert_eq!(groups[0].path, "$.tags[]");
    assert_eq!(groups[0].items, ["[.=gamma]"]);
    // A value that is not plain is quoted, as identity values are.
    let report = diff_bodies(
        &json!({"tags": []}),
        &json!({"tags": ["a b"]}),
        &by_value(DiffMode::Full, "$.tags")?,
    )?;
    assert_eq!(report.changes[0].path, "$.tags[.=\"a b\"]");
    assert!(IgnorePattern::parse("$.tags[.=\"a b\"]").is_ok());
    Ok(())
}

#[test]
fn volatile_learning_reads_lists_paired_by_value() -> R {
    let options = by_value(DiffMode::Full, "$.tags")?;
    let samples = [
        json!({"tags": ["a", "b"], "requestId": "1"}),
        json!({"tags": ["b", "a"], "requestId": "2"}),
    ];
    // A reordered list is not volatile: only the request id is.
    assert_eq!(
        apidrift_diff::volatile_paths(&samples, &options)?,
        ["$.requestId"]
    );
    // By position, the reordered list's items are volatile too.
    assert_eq!(
        apidrift_diff::volatile_paths(&samples, &Options::default())?,
        ["$.requestId", "$.tags[0]", "$.tags[1]"]
    );
    // A value that appears between samples is a shape difference, as a keyed item is; an
    // `ignore` override drops it as an ignore pattern would.
    let samples = [json!({"tags": ["a"]}), json!({"tags": ["a", "c"]})];
    let err = apidrift_diff::volatile_paths(&samples, &options)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("at $.tags[.=c] (added)"), "{err}");
    let options =
        options.with_severity_override(OverrideRule::parse_spec("keyed-item-added=$.tags=ignore")?);
    assert_eq!(
        apidrift_diff::volatile_paths(&samples, &options)?,
        Vec::<String>::new()
    );
    Ok(())
}

/// Stripe's `country_spec.supported_transfer_countries` grew from 61 to 118 countries between
/// the 2022 and 2026 fixtures (`tests/data/realworld`), every old one kept, in alphabetical
/// order: paired by position, the insertions shift the list and most items read as changed; by
/// value, it is exactly the 57 countries added.
#[test]
fn stripe_transfer_countries_are_the_countries_added() -> R {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/realworld");
    let read = |name: &str| -> Result<Value, Box<dyn std::error::Error>> {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(name))?)?;
        Ok(doc["resources"]["country_spec"].clone())
    };
    let (old, new) = (
        read("stripe-fixtures3-2022-04.json")?,
        read("stripe-fixtures3-2026.json")?,
    );
    let countries = |v: &Value| -> Vec<String> {
        v["supported_transfer_countries"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (was, now) = (countries(&old), countries(&new));
    assert_eq!((was.len(), now.len()), (61, 118));
    let added: Vec<String> = now.iter().filter(|c| !was.contains(c)).cloned().collect();
    assert_eq!(added.len(), 57);
    let at = |c: &DiffChange| c.path.starts_with("$.supported_transfer_countries");

    let plain = diff_bodies(&old, &new, &Options::with_mode(DiffMode::Full))?;
    let by_position: Vec<&DiffChange> = plain.changes.iter().filter(|c| at(c)).collect();
    assert!(by_position.len() > 100, "{}", by_position.len());

    for mode in modes() {
        let options = by_value(mode, "$..supported_transfer_countries")?;
        let report = diff_bodies(&old, &new, &options)?;
        let found: Vec<&DiffChange> = report.changes.iter().filter(|c| at(c)).collect();
        let expected: Vec<String> = added
            .iter()
            .map(|c| format!("$.supported_transfer_countries[.={c}]"))
            .collect();
        let got: Vec<String> = found.iter().map(|c| c.path.clone()).collect();
        assert_eq!(got, expected, "{mode:?}");
        assert!(
            found
                .iter()
                .all(|c| c.change_type == ChangeType::Added && c.severity == Severity::Info)
        );
        // Everything else in the resource is reported as without the rule.
        let rest = |r: &Report| -> Vec<DiffChange> {
            r.changes.iter().filter(|c| !at(c)).cloned().collect()
        };
        let without = diff_bodies(&old, &new, &Options::with_mode(mode))?;
        assert_eq!(rest(&report), rest(&without), "{mode:?}");
    }
    Ok(())
}

// --- properties -----------------------------------------------------------------------------

/// Scalars whose JSON text is their identity (no two spellings of one number).
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop::sample::select(&[0i64, 1, -1, 42][..]).prop_map(|n| json!(n)),
        prop::sample::select(&[1.5f64, -0.25][..]).prop_map(|n| json!(n)),
        prop::sample::select(&["", "a", "b", "42", "true", "a b", "é"][..]).prop_map(|s| json!(s)),
    ]
}

/// Any scalars, numbers spelled in several ways (`1.0`, `1.00`, `1e3`, `1000.0`).
fn spelled() -> impl Strategy<Value = Json<'static>> {
    const NUMBERS: &[&str] = &[
        "0", "1", "-1", "1.0", "1.00", "1e3", "1000.0", "1000", "-0.25",
    ];
    prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        prop::sample::select(NUMBERS).prop_map(Json::Number),
        prop::sample::select(&["", "a", "b", "1"][..]).prop_map(|s| Json::String(Cow::Borrowed(s))),
    ]
}

fn doc(items: Vec<Value>) -> Value {
    json!({ "tags": items })
}

/// value text → how many times each side holds it.
fn multiset(a: &[Value], b: &[Value]) -> BTreeMap<String, (usize, usize)> {
    let mut out: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for v in a {
        out.entry(v.to_string()).or_default().0 += 1;
    }
    for v in b {
        out.entry(v.to_string()).or_default().1 += 1;
    }
    out
}

/// How many items a change's message counts: `item …` is one, `N items …`/`N of M …` is N.
fn count(message: &str) -> usize {
    message
        .split(' ')
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x2e_2e_2e),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_permutation_of_scalars_is_no_change(
        pair in prop::collection::vec(scalar(), 0..16)
            .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle()))
    ) {
        let (a, b) = pair;
        for mode in modes() {
            let options = by_value(mode, "$.tags").map_err(|e| TestCaseError::fail(e.to_string()))?;
            let report = diff_bodies(&doc(a.clone()), &doc(b.clone()), &options);
            prop_assert_eq!(report.map(|r| r.changes), Ok(vec![]));
        }
    }

    #[test]
    fn a_permutation_of_any_spelling_is_no_change(
        pair in prop::collection::vec(spelled(), 0..16)
            .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle()))
    ) {
        let (a, b) = pair;
        let wrap = |v: Vec<Json<'static>>| Json::Object(Box::new([(Cow::Borrowed("tags"), Json::Array(v.into_boxed_slice()))]));
        for mode in modes() {
            let options = by_value(mode, "$.tags").map_err(|e| TestCaseError::fail(e.to_string()))?;
            let report = diff_bodies(&wrap(a.clone()), &wrap(b.clone()), &options);
            prop_assert_eq!(report.map(|r| r.changes), Ok(vec![]));
        }
    }

    #[test]
    fn the_changes_are_the_multiset_difference(
        a in prop::collection::vec(scalar(), 0..16),
        b in prop::collection::vec(scalar(), 0..16),
    ) {
        let expected: BTreeMap<String, (ChangeType, usize)> = multiset(&a, &b)
            .into_iter()
            .filter(|(_, (x, y))| x != y)
            .map(|(k, (x, y))| if x > y { (k, (ChangeType::Removed, x - y)) } else { (k, (ChangeType::Added, y - x)) })
            .collect();
        for mode in modes() {
            let options = by_value(mode, "$.tags").map_err(|e| TestCaseError::fail(e.to_string()))?;
            let report = diff_bodies(&doc(a.clone()), &doc(b.clone()), &options)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut got: BTreeMap<String, (ChangeType, usize)> = BTreeMap::new();
            for c in &report.changes {
                match c.change_type {
                    ChangeType::Removed | ChangeType::Added => {
                        prop_assert!(c.path.starts_with("$.tags[.="), "{}", c.path);
                        let value = if c.change_type == ChangeType::Removed { &c.old_value } else { &c.new_value };
                        let key = value.as_ref().map(Value::to_string).unwrap_or_default();
                        prop_assert!(got.insert(key, (c.change_type, count(&c.message))).is_none(), "one change per value");
                    }
                    // The merged element types (a type joining the set): at `$.tags[]`.
                    _ => prop_assert_eq!(c.path.as_str(), "$.tags[]"),
                }
            }
            prop_assert_eq!(&got, &expected, "{:?}", mode);
            // The counts are those of the changes.
            let c = report.counts;
            prop_assert_eq!(c.change_count as usize, report.changes.len());
            let info = report.changes.iter().filter(|c| c.severity == Severity::Info).count();
            prop_assert_eq!(c.info_count as usize, info);
            // Both trees agree.
            let text = |v: &Value| v.to_string();
            let (ja, jb) = (text(&doc(a.clone())), text(&doc(b.clone())));
            let (pa, pb) = (parse(&ja).map_err(|e| TestCaseError::fail(e.to_string()))?, parse(&jb).map_err(|e| TestCaseError::fail(e.to_string()))?);
            let again = diff_bodies(&pa, &pb, &options).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(again.changes, report.changes);
        }
    }
}
