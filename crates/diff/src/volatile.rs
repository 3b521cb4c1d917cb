//! Learned volatile fields: several samples of one response, taken moments apart, tell which
//! leaves change on every call (timestamps, request ids, counters). Their paths are ignored like
//! `ignorePaths` in full mode afterwards. A sample that differs in shape, not only in values, is
//! an error: a baseline needs a response that is stable apart from its volatile values.

use crate::node::JsonNode;
use crate::{ChangeType, DiffError, DiffMode, Options, diff_bodies};
use std::collections::HashSet;

/// Why volatile fields cannot be learned from a set of samples. One line; it names the path and
/// the kind of difference, never a value of the body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VolatileError {
    /// A sample differs from the first one in shape (a member, an item or an element appears or
    /// disappears, or a type changes), not only in its leaf values.
    #[error(
        "sample {sample} differs from sample 1 in shape, not only in values, at {path} ({change}); \
         take the samples again when the response is stable, or ignore that path"
    )]
    ShapeDiffers {
        /// 1-based number of the differing sample.
        sample: usize,
        /// The path of the first shape difference.
        path: String,
        /// What differs there (`removed`, `type_changed`, …).
        change: ChangeType,
    },
    /// A sample could not be compared (it nests too deep).
    #[error(transparent)]
    Diff(#[from] DiffError),
}

/// The leaf paths whose values differ between samples of one response, in the order they
/// are first found, each a concrete change path (`$.meta.requestId`, `$.items[id=7].updatedAt`,
/// `$.rows[0].ts`) that [`IgnorePattern::parse`](crate::IgnorePattern::parse) accepts.
///
/// Each sample is compared with the first in full mode with `options`' identity keys, identity
/// rules, ignore patterns and severity overrides (a shape difference under an ignored path, or
/// dropped by an `ignore` override, is no error); `mode` is ignored. Under an identity rule with
/// the key `.`, a value that appears in or disappears from such a list between samples is a
/// shape difference, as an identity-keyed item is. Fewer than two samples give no paths.
///
/// ```
/// use apidrift_diff::{Options, volatile_paths};
/// use serde_json::json;
/// let samples = [
///     json!({"id": 7, "requestId": "a1", "items": [{"id": 1, "seen": 10}]}),
///     json!({"id": 7, "requestId": "b2", "items": [{"id": 1, "seen": 11}]}),
///     json!({"id": 7, "requestId": "c3", "items": [{"id": 1, "seen": 11}]}),
/// ];
/// let paths = volatile_paths(&samples, &Options::default()).unwrap();
/// // Document order (a `serde_json::Value` keeps its members sorted).
/// assert_eq!(paths, vec!["$.items[id=1].seen", "$.requestId"]);
/// let other = [json!({"a": 1}), json!({"a": 1, "b": 2})];
/// assert!(volatile_paths(&other, &Options::default()).is_err());
/// ```
pub fn volatile_paths<J: JsonNode>(
    samples: &[J],
    options: &Options,
) -> Result<Vec<String>, VolatileError> {
    let Some((first, rest)) = samples.split_first() else {
        return Ok(Vec::new());
    };
    let options = Options {
        mode: DiffMode::Full,
        ..options.clone()
    };
    let mut seen = HashSet::new();
    let mut paths = Vec::new();
    for (i, sample) in rest.iter().enumerate() {
        let report = diff_bodies(first, sample, &options)?;
        if let Some(c) = report
            .changes
            .iter()
            .find(|c| c.change_type != ChangeType::Changed)
        {
            return Err(VolatileError::ShapeDiffers {
                sample: i + 2,
                path: c.path.clone(),
                change: c.change_type,
            });
        }
        for c in report.changes {
            if seen.insert(c.path.clone()) {
                paths.push(c.path);
            }
        }
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IdentityRule, IgnorePattern, parse};

    type R = Result<(), Box<dyn std::error::Error>>;

    fn learn(samples: &[&str], options: &Options) -> Result<Vec<String>, VolatileError> {
        let docs: Vec<_> = samples
            .iter()
            .map(|s| parse(s))
            .collect::<Result<_, _>>()
            .map_err(|_| VolatileError::Diff(DiffError::TooDeep { limit: 0 }))?;
        volatile_paths(&docs, options)
    }

    #[test]
    fn leaves_that_differ_between_any_two_samples_are_volatile() -> R {
        let samples = [
            r#"{"at":"10:00:00","rid":"a","n":1,"data":{"name":"x","items":[{"id":1,"ts":1},{"id":2,"ts":1}]},"rows":[{"v":1}]}"#,
            r#"{"at":"10:00:01","rid":"b","n":1,"data":{"name":"x","items":[{"id":2,"ts":1},{"id":1,"ts":1}]},"rows":[{"v":1}]}"#,
            r#"{"at":"10:00:02","rid":"c","n":1,"data":{"name":"x","items":[{"id":1,"ts":2},{"id":2,"ts":1}]},"rows":[{"v":2}]}"#,
        ];
        let paths = learn(&samples, &Options::default())?;
        assert_eq!(
            paths,
            vec!["$.at", "$.rid", "$.data.items[id=1].ts", "$.rows[0].v"]
        );
        // Each is a valid ignore pattern, and ignoring them all leaves no change between samples.
        let mut options = Options::with_mode(DiffMode::Full);
        for p in &paths {
            options.ignore.push(IgnorePattern::parse(p)?);
        }
        for s in &samples[1..] {
            let r = diff_bodies(&parse(samples[0])?, &parse(s)?, &options)?;
            assert!(r.changes.is_empty(), "{:?}", r.changes);
        }
        // Numbers compare numerically: 1.0 and 1.00 are the same value.
        assert!(learn(&[r#"{"p":1.0}"#, r#"{"p":1.00}"#], &Options::default())?.is_empty());
        Ok(())
    }

    #[test]
    fn fewer_than_two_samples_learn_nothing() -> R {
        assert!(learn(&[], &Options::default())?.is_empty());
        assert!(learn(&[r#"{"a":1}"#], &Options::default())?.is_empty());
        assert!(learn(&[r#"{"a":1}"#, r#"{"a":1}"#], &Options::default())?.is_empty());
        Ok(())
    }

    #[test]
    fn a_shape_difference_is_an_error_naming_the_path() {
        for (a, b, path, change) in [
            (r#"{"a":1}"#, r#"{"a":1,"b":2}"#, "$.b", ChangeType::Added),
            (r#"{"a":1,"b":2}"#, r#"{"a":1}"#, "$.b", ChangeType::Removed),
            (r#"{"a":1}"#, r#"{"a":"1"}"#, "$.a", ChangeType::TypeChanged),
            (
                r#"{"a":"x"}"#,
                r#"{"a":null}"#,
                "$.a",
                ChangeType::NullabilityChanged,
            ),
            (r#"[1,2]"#, r#"[1,2,3]"#, "$[2]", ChangeType::Added),
            (
                r#"[{"id":1}]"#,
                r#"[{"id":2}]"#,
                "$[id=1]",
                ChangeType::Removed,
            ),
        ] {
            let secret = r#""s3cr3t""#;
            let b = b.replace("\"x\"", secret);
            let err = learn(&[a, a, &b], &Options::default());
            let Err(VolatileError::ShapeDiffers {
                sample,
                path: p,
                change: c,
            }) = &err
            else {
                panic!("{a} -> {b}: {err:?}");
            };
            assert_eq!((*sample, p.as_str(), *c), (3, path, change), "{a} -> {b}");
            let text = err
                .map(|_| ())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                text.contains("sample 3 differs from sample 1 in shape"),
                "{text}"
            );
            assert!(!text.contains("s3cr3t") && !text.contains('\n'), "{text}");
        }
    }

    #[test]
    fn options_identity_rules_and_ignore_apply() -> R {
        let a = r#"{"commits":[{"sha":"a1","n":1},{"sha":"b2","n":1}],"debug":{"x":1}}"#;
        let b = r#"{"commits":[{"sha":"b2","n":2},{"sha":"a1","n":1}],"debug":{"y":[1]}}"#;
        let mut options = Options::default();
        options.ignore.push(IgnorePattern::parse("$.debug")?);
        // Without a rule the commits pair by position: two values differ.
        assert_eq!(
            learn(&[a, b], &options)?,
            vec!["$.commits[0].sha", "$.commits[0].n", "$.commits[1].sha"]
        );
        options
            .identity_rules
            .push(IdentityRule::parse("$.commits", "sha")?);
        assert_eq!(learn(&[a, b], &options)?, vec!["$.commits[sha=b2].n"]);
        Ok(())
    }
}
