//! Properties of the engine (issue 3): `diff(x, x)` is empty in both modes; arbitrary pairs never
//! panic; permuting a keyed array changes nothing in full mode; every change's path resolves in
//! the baseline (removed) or the current document (added); counts equal the tallies; ids are
//! stable and independent of object key order; full mode covers every breaking and warning change
//! of schema mode (D20).

use apidrift_diff::{
    ChangeType, DiffMode, IgnorePattern, Json, Options, PatternSeg, Report, Severity, diff_bodies,
    normalise_path, parse,
};
use proptest::prelude::*;
use std::borrow::Cow;

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "42",
    "1.0",
    "1.5",
    "1e3",
    "1000.0",
    "123456789012345678901234567890",
    "-0.25",
];
const STRINGS: &[&str] = &["", "a", "b", "42", "a b", "é", "x.y"];
const KEYS: &[&str] = &["id", "name", "a", "b", "c", "x y", "é", "slug"];

fn leaf() -> impl Strategy<Value = Json<'static>> {
    prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        prop::sample::select(NUMBERS).prop_map(Json::Number),
        prop::sample::select(STRINGS).prop_map(|s| Json::String(Cow::Borrowed(s))),
    ]
}

fn dedup(members: Vec<(&'static str, Json<'static>)>) -> Json<'static> {
    let mut out: Vec<(Cow<'static, str>, Json<'static>)> = Vec::new();
    for (k, v) in members {
        if !out.iter().any(|(e, _)| e == k) {
            out.push((Cow::Borrowed(k), v));
        }
    }
    Json::Object(out.into_boxed_slice())
}

fn json() -> impl Strategy<Value = Json<'static>> {
    leaf().prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5)
                .prop_map(|v| Json::Array(v.into_boxed_slice())),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(dedup),
        ]
    })
}

fn modes() -> [Options; 2] {
    [
        Options::with_mode(DiffMode::Full),
        Options::with_mode(DiffMode::Schema),
    ]
}

/// True when a full-mode change path resolves in a document; a merged segment `[]` (full mode's
/// merged-shape pass, D20) resolves when some element resolves the rest.
fn resolves(doc: &Json<'_>, path: &str) -> bool {
    // A change path parses as an ignore pattern that matches exactly it.
    let Ok(pattern) = IgnorePattern::parse(path) else {
        return false;
    };
    pattern
        .body_segments()
        .is_some_and(|segs| resolves_at(doc, segs))
}

fn resolves_at(at: &Json<'_>, segs: &[PatternSeg]) -> bool {
    let Some((seg, rest)) = segs.split_first() else {
        return true;
    };
    match (seg, at) {
        (PatternSeg::Key(k), Json::Object(m)) => m
            .iter()
            .find(|(name, _)| name == k)
            .is_some_and(|(_, v)| resolves_at(v, rest)),
        (PatternSeg::Index(i), Json::Array(items)) => {
            items.get(*i).is_some_and(|v| resolves_at(v, rest))
        }
        (PatternSeg::AnyElement, Json::Array(items)) => items.iter().any(|v| resolves_at(v, rest)),
        (PatternSeg::Ident { key, value }, Json::Array(items)) => items
            .iter()
            .find(|item| {
                let Json::Object(m) = item else { return false };
                m.iter().any(|(k, v)| {
                    k == key
                        && match v {
                            Json::String(s) => s == value,
                            Json::Number(n) => n == value,
                            _ => false,
                        }
                })
            })
            .is_some_and(|v| resolves_at(v, rest)),
        _ => false,
    }
}

/// Every breaking or warning change of schema mode has a full-mode change at the same normalised
/// path or at an ancestor of it, with at least the same severity (D20). Returns the first
/// schema change that is not covered.
fn uncovered(x: &Json<'_>, y: &Json<'_>) -> Option<String> {
    let schema = diff_bodies(x, y, &Options::with_mode(DiffMode::Schema)).ok()?;
    let full = diff_bodies(x, y, &Options::with_mode(DiffMode::Full)).ok()?;
    let found: Vec<(String, Severity)> = full
        .changes
        .iter()
        .map(|c| (normalise_path(&c.path).path, c.severity))
        .collect();
    let covers = |at: &str, path: &str| {
        path == at
            || (path.starts_with(at) && matches!(path.as_bytes().get(at.len()), Some(b'.' | b'[')))
    };
    schema
        .changes
        .iter()
        .filter(|c| c.severity >= Severity::Warning)
        .find(|c| {
            !found
                .iter()
                .any(|(at, severity)| *severity >= c.severity && covers(at, &c.path))
        })
        .map(|c| format!("{} {} {}", c.path, c.change_type, c.severity))
}

/// The full-mode changes at merged paths (`[]`) that schema mode does not report exactly so
/// (same path, type and severity): the merged-shape pass must find what schema mode finds.
fn merged_not_in_schema(x: &Json<'_>, y: &Json<'_>) -> Vec<String> {
    let key =
        |c: &apidrift_diff::DiffChange| format!("{} {} {}", c.path, c.change_type, c.severity);
    let (Ok(schema), Ok(full)) = (
        diff_bodies(x, y, &Options::with_mode(DiffMode::Schema)),
        diff_bodies(x, y, &Options::with_mode(DiffMode::Full)),
    ) else {
        return vec!["diff failed".into()];
    };
    let schema: Vec<String> = schema.changes.iter().map(key).collect();
    full.changes
        .iter()
        .filter(|c| c.path.contains("[]"))
        .map(key)
        .filter(|k| !schema.contains(k))
        .collect()
}

/// Documents whose arrays hold objects keyed by `id` (ids drawn from a small set, so that items
/// are kept, removed, added and re-keyed between two draws).
fn keyed_doc() -> impl Strategy<Value = Json<'static>> {
    const IDS: &[&str] = &["1", "2", "3", "4", "\"a\""];
    let item = (
        prop::sample::select(IDS),
        prop::collection::vec((prop::sample::select(&KEYS[2..]), json()), 0..4),
    )
        .prop_map(|(id, fields)| {
            let id = match id.strip_prefix('"') {
                Some(s) => Json::String(Cow::Borrowed(s.trim_end_matches('"'))),
                None => Json::Number(id),
            };
            let mut m = vec![("id", id)];
            m.extend(fields);
            dedup(m)
        });
    prop::collection::vec(item, 0..6).prop_map(|items| {
        Json::Object(Box::new([(
            Cow::Borrowed("data"),
            Json::Array(items.into_boxed_slice()),
        )]))
    })
}

fn reversed(doc: &Json<'static>) -> Json<'static> {
    match doc {
        Json::Array(items) => Json::Array(items.iter().map(reversed).collect()),
        Json::Object(m) => Json::Object(
            m.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn tally(report: &Report) -> (u32, u32, u32, u32) {
    let n = |s| report.changes.iter().filter(|c| c.severity == s).count() as u32;
    (
        n(Severity::Breaking),
        n(Severity::Warning),
        n(Severity::Info),
        report.changes.len() as u32,
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x00a9_1d21_f7d1),
        ..ProptestConfig::default()
    })]

    #[test]
    fn diff_with_itself_is_empty(x in json()) {
        for options in modes() {
            let report = diff_bodies(&x, &x, &options);
            prop_assert_eq!(report.map(|r| r.changes.len()), Ok(0));
            let value = x.to_value();
            let report = diff_bodies(&value, &value, &options);
            prop_assert_eq!(report.map(|r| r.changes.len()), Ok(0));
        }
    }

    #[test]
    fn arbitrary_pairs_give_consistent_reports(x in json(), y in json()) {
        for options in modes() {
            let report = diff_bodies(&x, &y, &options);
            prop_assert!(report.is_ok());
            let report = report.unwrap_or_default();
            // Counts equal the tallies.
            let c = report.counts;
            prop_assert_eq!((c.breaking_count, c.warning_count, c.info_count, c.change_count), tally(&report));
            // The D16 JSON parses and carries the same counts.
            let out: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap_or_default();
            prop_assert_eq!(out["changeCount"].as_u64(), Some(u64::from(c.change_count)));
            for change in &report.changes {
                prop_assert_eq!(&change.id, &apidrift_diff::change_id(&change.path, change.change_type));
                if options.mode == DiffMode::Full {
                    let in_old = resolves(&x, &change.path);
                    let in_new = resolves(&y, &change.path);
                    match change.change_type {
                        ChangeType::Removed => prop_assert!(in_old, "{} not in baseline", change.path),
                        ChangeType::Added => prop_assert!(in_new, "{} not in current", change.path),
                        _ => prop_assert!(in_old && in_new, "{} not in both", change.path),
                    }
                }
            }
            // The serde_json::Value implementation never panics either.
            prop_assert!(diff_bodies(&x.to_value(), &y.to_value(), &options).is_ok());
        }
    }

    #[test]
    fn ids_are_independent_of_object_key_order(x in json(), y in json()) {
        for options in modes() {
            let a = diff_bodies(&x, &y, &options).unwrap_or_default();
            let b = diff_bodies(&reversed(&x), &reversed(&y), &options).unwrap_or_default();
            let mut ids_a: Vec<(String, ChangeType, Severity)> = a.changes.iter().map(|c| (c.id.clone(), c.change_type, c.severity)).collect();
            let mut ids_b: Vec<(String, ChangeType, Severity)> = b.changes.iter().map(|c| (c.id.clone(), c.change_type, c.severity)).collect();
            ids_a.sort();
            ids_b.sort();
            prop_assert_eq!(ids_a, ids_b);
            // Stable across runs.
            let again = diff_bodies(&x, &y, &options).unwrap_or_default();
            prop_assert_eq!(again, a);
        }
    }

    #[test]
    fn permuting_a_keyed_array_changes_nothing_in_full_mode(
        items in prop::collection::vec(prop::collection::vec((prop::sample::select(&KEYS[2..]), json()), 0..4), 0..12)
            .prop_flat_map(|fields| {
                let objects: Vec<Json<'static>> = fields.into_iter().enumerate().map(|(i, f)| {
                    let mut m = vec![("id", Json::Number(Box::leak(i.to_string().into_boxed_str())))];
                    m.extend(f);
                    dedup(m)
                }).collect();
                (Just(objects.clone()), Just(objects).prop_shuffle())
            })
    ) {
        let (a, b) = items;
        let doc = |v: Vec<Json<'static>>| Json::Object(Box::new([(Cow::Borrowed("data"), Json::Array(v.into_boxed_slice()))]));
        for options in modes() {
            let report = diff_bodies(&doc(a.clone()), &doc(b.clone()), &options);
            prop_assert_eq!(report.map(|r| r.changes), Ok(vec![]));
        }
    }

    #[test]
    fn full_mode_covers_schema_mode(x in json(), y in json()) {
        prop_assert_eq!(uncovered(&x, &y), None);
    }

    #[test]
    fn full_mode_covers_schema_mode_on_keyed_arrays(x in keyed_doc(), y in keyed_doc()) {
        prop_assert_eq!(uncovered(&x, &y), None);
        prop_assert_eq!(merged_not_in_schema(&x, &y), Vec::<String>::new());
    }

    #[test]
    fn full_mode_merged_changes_are_schema_changes(x in json(), y in json()) {
        prop_assert_eq!(merged_not_in_schema(&x, &y), Vec::<String>::new());
    }

    #[test]
    fn parser_never_panics_and_agrees_with_serde_json(text in "[\\[\\]{}\",:0-9a-z.eE+\\- \\\\]{0,40}") {
        let ours = parse(&text);
        let theirs: Result<serde_json::Value, _> = serde_json::from_str(&text);
        // serde_json also rejects numbers beyond f64 (`1e400`), which are valid JSON.
        let out_of_range = theirs.as_ref().is_err_and(|e| e.to_string().contains("out of range"));
        if !out_of_range {
            prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?}", text);
        }
    }
}
