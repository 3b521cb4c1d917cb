//! The result of a diff: the changes (model [`DiffChange`]) in a deterministic order, their counts,
//! and the JSON rendering (which writes numbers exactly as the documents spelled them).

use crate::Options;
use crate::overrides::{At, apply};
use crate::path::Seg;
use crate::rules::Rule;
use apidrift_model::{ChangeType, DiffChange, Severity};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// How many changes of each severity a report holds. Serialises with the wire names
/// (`breakingCount`, `warningCount`, `infoCount`, `changeCount`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Counts {
    /// Breaking changes.
    pub breaking_count: u32,
    /// Warnings.
    pub warning_count: u32,
    /// Informational changes.
    pub info_count: u32,
    /// All changes (a severity this version does not know counts here only).
    pub change_count: u32,
}

impl Counts {
    fn add(&mut self, severity: Severity) {
        match severity {
            Severity::Breaking => self.breaking_count += 1,
            Severity::Warning => self.warning_count += 1,
            Severity::Info => self.info_count += 1,
            // A severity added to the model after this version is counted as a change only.
            _ => {}
        }
        self.change_count += 1;
    }

    /// Tallies a list of changes.
    pub fn of(changes: &[DiffChange]) -> Counts {
        let mut counts = Counts::default();
        for c in changes {
            counts.add(c.severity);
        }
        counts
    }
}

/// A value as the documents spelled it, for the numbers `serde_json::Value` cannot hold exactly
/// (integers beyond 64 bits, numbers beyond `f64`).
#[derive(Debug, Clone, PartialEq, Default)]
struct Exact {
    old: Option<Box<str>>,
    new: Option<Box<str>>,
}

/// The changes of one diff and their counts.
///
/// ```
/// use apidrift_diff::{Options, Severity, diff_bodies};
/// let report = diff_bodies(
///     &serde_json::json!({"a": 1, "b": "x"}),
///     &serde_json::json!({"a": 1, "c": true}),
///     &Options::default(),
/// )?;
/// assert_eq!((report.counts.breaking_count, report.counts.info_count), (1, 1));
/// assert!(report.reaches(Some(Severity::Warning)));
/// assert!(report.to_json().starts_with(r#"{"changes":[{"id":"#));
/// # Ok::<(), apidrift_diff::DiffError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    /// In document order: status, tracked headers (in option order), then the body.
    pub changes: Vec<DiffChange>,
    /// How many changes of each severity `changes` holds.
    pub counts: Counts,
    /// Parallel to `changes` when any change carries a number `serde_json` cannot hold.
    exact: Vec<Exact>,
}

/// The id of a change: the first 16 hex digits of the SHA-256 of `path + " " + type`, so the same
/// drift keeps the same id from one diff to the next.
///
/// ```
/// use apidrift_diff::{ChangeType, change_id};
/// let id = change_id("$.email", ChangeType::Removed);
/// assert_eq!(id.len(), 16);
/// assert_eq!(id, change_id("$.email", ChangeType::Removed));
/// ```
pub fn change_id(path: &str, change_type: ChangeType) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(path.as_bytes());
    ctx.update(b" ");
    ctx.update(change_type.as_str().as_bytes());
    let digest = ctx.finish();
    let mut out = String::with_capacity(16);
    for b in &digest.as_ref()[..8] {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

impl Report {
    /// A report from a list of changes (e.g. contract violations), counted.
    pub fn from_changes(changes: Vec<DiffChange>) -> Report {
        let counts = Counts::of(&changes);
        Report {
            changes,
            counts,
            exact: Vec::new(),
        }
    }

    /// Appends the changes of another report (e.g. contract violations after a diff).
    pub fn extend(&mut self, other: Report) {
        if !other.exact.is_empty() || !self.exact.is_empty() {
            self.exact.resize(self.changes.len(), Exact::default());
            let mut more = other.exact;
            more.resize(other.changes.len(), Exact::default());
            self.exact.extend(more);
        }
        self.changes.extend(other.changes);
        self.counts = Counts::of(&self.changes);
    }

    /// The most severe change, if any.
    pub fn max_severity(&self) -> Option<Severity> {
        self.changes.iter().map(|c| c.severity).max()
    }

    /// True when a change reaches `threshold` (`None`: never).
    pub fn reaches(&self, threshold: Option<Severity>) -> bool {
        threshold.is_some_and(|t| self.changes.iter().any(|c| c.severity >= t))
    }

    /// The exact JSON text of the old (`old = true`) or new value of `changes[index]`, when it
    /// has one: numbers as the documents spelled them, even those `serde_json::Value` cannot hold.
    pub fn value_text(&self, index: usize, old: bool) -> Option<String> {
        let change = self.changes.get(index)?;
        if let Some(exact) = self.exact.get(index) {
            let raw = if old { &exact.old } else { &exact.new };
            if let Some(raw) = raw {
                return Some(raw.to_string());
            }
        }
        let value = if old {
            &change.old_value
        } else {
            &change.new_value
        };
        value.as_ref().map(Value::to_string)
    }

    /// The report as one JSON document: `{"changes": [...], "breakingCount", "warningCount", "infoCount",
    /// "changeCount"}`, numbers written exactly as the documents spelled them.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(64 + self.changes.len() * 160);
        out.push_str("{\"changes\":[");
        for (i, c) in self.changes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"id\":");
            push_json_str(&mut out, &c.id);
            out.push_str(",\"path\":");
            push_json_str(&mut out, &c.path);
            out.push_str(",\"type\":\"");
            out.push_str(c.change_type.as_str());
            out.push_str("\",\"severity\":\"");
            out.push_str(c.severity.as_str());
            out.push_str("\",\"message\":");
            push_json_str(&mut out, &c.message);
            if let Some(v) = self.value_text(i, true) {
                out.push_str(",\"oldValue\":");
                out.push_str(&v);
            }
            if let Some(v) = self.value_text(i, false) {
                out.push_str(",\"newValue\":");
                out.push_str(&v);
            }
            if let Some(t) = &c.old_type {
                out.push_str(",\"oldType\":");
                push_json_str(&mut out, t);
            }
            if let Some(t) = &c.new_type {
                out.push_str(",\"newType\":");
                push_json_str(&mut out, t);
            }
            out.push('}');
        }
        out.push_str(&format!(
            "],\"breakingCount\":{},\"warningCount\":{},\"infoCount\":{},\"changeCount\":{}}}",
            self.counts.breaking_count,
            self.counts.warning_count,
            self.counts.info_count,
            self.counts.change_count
        ));
        out
    }
}

/// Changes that share a normalised path (identity and position segments written `[]`) and a
/// type, for people: one drift seen in many items is one group with a count. The wire form
/// ([`Report::to_json`], the API) stays one change per path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChangeGroup {
    /// The normalised path (`$.users[].email`; `status`, `headers.etag` as they are).
    pub path: String,
    /// The type the group's changes share.
    pub change_type: ChangeType,
    /// The most severe of the group's changes.
    pub severity: Severity,
    /// The message of the first most severe change.
    pub message: String,
    /// The positions of the group's changes in the list given to [`group_changes`], in order.
    pub indices: Vec<usize>,
    /// The affected items, one per change with element segments: the selectors its path had
    /// where the normalised path has `[]` (`[id=42]`, `[3]`, `[id=1][2]` for nested arrays).
    pub items: Vec<String>,
}

impl ChangeGroup {
    /// How many changes the group holds.
    pub fn count(&self) -> usize {
        self.indices.len()
    }
}

/// Groups changes that share a normalised path and a type (for people), in the
/// order of each group's first change. Linear in the number of changes.
///
/// ```
/// use apidrift_diff::{DiffMode, Options, diff_bodies, group_changes};
/// let a: serde_json::Value = serde_json::json!([{"id": 1, "e": "a"}, {"id": 2, "e": "b"}]);
/// let b: serde_json::Value = serde_json::json!([{"id": 1}, {"id": 2}]);
/// let report = diff_bodies(&a, &b, &Options::with_mode(DiffMode::Full)).unwrap();
/// let groups = group_changes(&report.changes);
/// assert_eq!(groups.len(), 1);
/// assert_eq!(groups[0].path, "$[].e");
/// assert_eq!(groups[0].items, vec!["[id=1]", "[id=2]"]);
/// ```
pub fn group_changes(changes: &[DiffChange]) -> Vec<ChangeGroup> {
    let mut groups: Vec<ChangeGroup> = Vec::new();
    let mut at: HashMap<(String, ChangeType), usize, foldhash::fast::RandomState> =
        HashMap::default();
    for (i, change) in changes.iter().enumerate() {
        let normalised = crate::normalise::normalise_path(&change.path);
        let key = (normalised.path, change.change_type);
        let item = normalised.selectors.concat();
        match at.get(&key) {
            Some(&g) => {
                let group = &mut groups[g];
                if change.severity > group.severity {
                    group.severity = change.severity;
                    group.message.clone_from(&change.message);
                }
                group.indices.push(i);
                if !item.is_empty() {
                    group.items.push(item);
                }
            }
            None => {
                at.insert(key.clone(), groups.len());
                groups.push(ChangeGroup {
                    path: key.0,
                    change_type: key.1,
                    severity: change.severity,
                    message: change.message.clone(),
                    indices: vec![i],
                    items: if item.is_empty() { vec![] } else { vec![item] },
                });
            }
        }
    }
    groups
}

fn push_json_str(out: &mut String, s: &str) {
    match serde_json::to_string(s) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str("\"\""),
    }
}

/// A leaf value with, when needed, its exact number token.
pub(crate) type Leaf = (Value, Option<Box<str>>);

/// A change before it has a path.
#[derive(Debug)]
pub(crate) struct Pending {
    pub rule: Rule,
    pub message: String,
    pub old: Option<Leaf>,
    pub new: Option<Leaf>,
    pub old_type: Option<String>,
    pub new_type: Option<String>,
}

impl Pending {
    pub(crate) fn new(rule: Rule, message: impl Into<String>) -> Pending {
        Pending {
            rule,
            message: message.into(),
            old: None,
            new: None,
            old_type: None,
            new_type: None,
        }
    }

    pub(crate) fn values(mut self, old: Option<Leaf>, new: Option<Leaf>) -> Pending {
        self.old = old;
        self.new = new;
        self
    }

    pub(crate) fn types(mut self, old: Option<String>, new: Option<String>) -> Pending {
        self.old_type = old;
        self.new_type = new;
        self
    }
}

/// Where body changes go: the [`Emitter`], or a filter in front of it.
pub(crate) trait Sink {
    fn body(&mut self, path: &[Seg<'_>], last: Option<Seg<'_>>, pending: Pending);
}

/// The most severe change found at each normalised path (identity and position segments written
/// `[]`), ignored changes included: what full mode's merged-shape pass checks coverage against.
pub(crate) type Coverage = HashMap<String, Severity, foldhash::fast::RandomState>;

/// Collects changes: applies the ignore patterns and the severity overrides, renders paths and
/// ids, counts.
pub(crate) struct Emitter<'o> {
    options: &'o Options,
    changes: Vec<DiffChange>,
    exact: Vec<Exact>,
    any_exact: bool,
    /// Set while full mode walks the items of an outermost array.
    coverage: Option<Coverage>,
    /// How many body changes were recorded into `coverage`.
    recorded: usize,
}

impl Sink for Emitter<'_> {
    fn body(&mut self, path: &[Seg<'_>], last: Option<Seg<'_>>, pending: Pending) {
        Emitter::body(self, path, last, pending);
    }
}

impl<'o> Emitter<'o> {
    pub(crate) fn new(options: &'o Options) -> Emitter<'o> {
        Emitter {
            options,
            changes: Vec::new(),
            exact: Vec::new(),
            any_exact: false,
            coverage: None,
            recorded: 0,
        }
    }

    /// How many body changes have been recorded for coverage so far.
    pub(crate) fn recorded(&self) -> usize {
        self.recorded
    }

    /// Starts recording the normalised paths of body changes.
    pub(crate) fn start_coverage(&mut self) {
        self.coverage = Some(Coverage::default());
    }

    /// Stops recording and returns what was recorded.
    pub(crate) fn take_coverage(&mut self) -> Coverage {
        self.coverage.take().unwrap_or_default()
    }

    pub(crate) fn status(&mut self, pending: Pending) {
        if self.options.ignore.iter().any(|p| p.matches_status()) {
            return;
        }
        let Some(severity) = apply(&self.options.severity_overrides, pending.rule, At::Status)
        else {
            return;
        };
        self.push("status".to_owned(), pending, severity);
    }

    pub(crate) fn header(&mut self, name: &str, pending: Pending) {
        if self.options.ignore.iter().any(|p| p.matches_header(name)) {
            return;
        }
        let at = At::Header(name);
        let Some(severity) = apply(&self.options.severity_overrides, pending.rule, at) else {
            return;
        };
        self.push(format!("headers.{name}"), pending, severity);
    }

    pub(crate) fn body(&mut self, path: &[Seg<'_>], last: Option<Seg<'_>>, pending: Pending) {
        if let Some(coverage) = &mut self.coverage {
            self.recorded += 1;
            let severity = pending.rule.severity();
            let at = coverage
                .entry(crate::path::render_normalised(path, last))
                .or_insert(severity);
            *at = (*at).max(severity);
        }
        if self
            .options
            .ignore
            .iter()
            .any(|p| p.matches_body(path, last))
        {
            return;
        }
        let at = At::Body(path, last);
        let Some(severity) = apply(&self.options.severity_overrides, pending.rule, at) else {
            return;
        };
        self.push(crate::path::render(path, last), pending, severity);
    }

    fn push(&mut self, path: String, p: Pending, severity: Severity) {
        let change_type = p.rule.change_type();
        let (old_value, old_exact) = split(p.old);
        let (new_value, new_exact) = split(p.new);
        if old_exact.is_some() || new_exact.is_some() {
            self.any_exact = true;
        }
        self.exact.push(Exact {
            old: old_exact,
            new: new_exact,
        });
        self.changes.push(DiffChange {
            id: change_id(&path, change_type),
            path,
            change_type,
            severity,
            message: p.message,
            old_value,
            new_value,
            old_type: p.old_type,
            new_type: p.new_type,
        });
    }

    pub(crate) fn finish(self) -> Report {
        let counts = Counts::of(&self.changes);
        let exact = if self.any_exact {
            self.exact
        } else {
            Vec::new()
        };
        Report {
            changes: self.changes,
            counts,
            exact,
        }
    }
}

fn split(leaf: Option<Leaf>) -> (Option<Value>, Option<Box<str>>) {
    match leaf {
        Some((v, e)) => (Some(v), e),
        None => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_first_16_hex_of_sha256_of_path_and_type() {
        // printf "%s" "status status_changed" | sha256sum
        let id = change_id("$.a", ChangeType::Removed);
        assert_eq!(id.len(), 16);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(id, change_id("$.a", ChangeType::Removed));
        assert_ne!(id, change_id("$.a", ChangeType::Added));
        assert_eq!(
            change_id("status", ChangeType::StatusChanged),
            "f2032cd937bd4b20"
        );
    }
}
