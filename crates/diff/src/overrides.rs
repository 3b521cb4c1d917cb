//! Severity overrides: `field-added=breaking`, `value-changed=$.debug=ignore`. Each classified
//! change is looked up in the list: the first override of its rule whose path matches (or that
//! has no path) gives its severity, or drops it (`ignore`).

use crate::path::Seg;
use crate::pattern::{IgnorePattern, PatternError, PatternKind};
use crate::rules::{Place, Rule};
use apidrift_model::{OverrideSeverity, Severity, SeverityOverride};

/// A parsed severity override: the changes of `rule` at `path` and below it (every path when it
/// has none) get `severity`, or are dropped when it is [`OverrideSeverity::Ignore`]. In
/// [`Options::severity_overrides`](crate::Options::severity_overrides) the first matching
/// override wins. The wire form is the model's [`SeverityOverride`] ([`OverrideRule::from_wire`],
/// [`OverrideRule::to_wire`]); the command-line form is `RULE[=PATH]=LEVEL`
/// ([`OverrideRule::parse_spec`], `Display`, `FromStr`).
///
/// ```
/// use apidrift_diff::{DiffMode, Options, OverrideRule, Severity, diff_bodies};
/// let before = serde_json::json!({"id": 1});
/// let after = serde_json::json!({"id": 1, "debug": {"t": 3}, "plan": "pro"});
/// let options = Options::with_mode(DiffMode::Full)
///     .with_severity_override("field-added=$.debug=ignore".parse::<OverrideRule>()?)
///     .with_severity_override(OverrideRule::parse_spec("field-added=breaking")?);
/// let report = diff_bodies(&before, &after, &options).unwrap();
/// assert_eq!(report.changes.len(), 1); // `$.debug` is dropped
/// assert_eq!(report.changes[0].path, "$.plan");
/// assert_eq!(report.changes[0].severity, Severity::Breaking);
/// assert_eq!(report.counts.breaking_count, 1);
/// assert!(OverrideRule::parse_spec("added=breaking").is_err()); // not a rule id
/// # Ok::<(), apidrift_diff::PatternError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverrideRule {
    rule: Rule,
    path: Option<IgnorePattern>,
    severity: OverrideSeverity,
}

impl OverrideRule {
    /// An override of `rule` at `path` (every path when `None`). A path where the rule never
    /// reports (a body path for `status-changed`, `status` for `field-added`) is an error.
    pub fn new(
        rule: Rule,
        path: Option<IgnorePattern>,
        severity: OverrideSeverity,
    ) -> Result<OverrideRule, PatternError> {
        let o = OverrideRule {
            rule,
            path,
            severity,
        };
        if let Some(path) = &o.path {
            let place = if path.matches_status() {
                Place::Status
            } else if path.body_segments().is_some() {
                Place::Body
            } else {
                Place::Header
            };
            if place != rule.place() {
                let at = match rule.place() {
                    Place::Status => "at `status`",
                    Place::Header => "at `headers.<name>`",
                    Place::Body => "in the body (paths starting with `$`)",
                };
                return Err(o.error(format!(
                    "rule {} reports changes {at}, so the path {} never matches",
                    rule.id(),
                    path.as_str()
                )));
            }
        }
        Ok(o)
    }

    /// Parses the model's wire form, `{"rule", "path"?, "severity"}`: the rule id must be one of
    /// [`Rule::ALL`], the path an [`IgnorePattern`].
    pub fn from_wire(wire: &SeverityOverride) -> Result<OverrideRule, PatternError> {
        let spec = match &wire.path {
            Some(path) => format!("{}={path}={}", wire.rule, wire.severity),
            None => format!("{}={}", wire.rule, wire.severity),
        };
        let fail = |reason: String| PatternError {
            kind: PatternKind::SeverityOverride,
            pattern: spec.clone(),
            reason,
        };
        let rule = Rule::from_id(&wire.rule)
            .ok_or_else(|| fail(SeverityOverride::unknown_rule(&wire.rule)))?;
        let path = match &wire.path {
            Some(p) => Some(IgnorePattern::parse(p).map_err(|e| fail(e.reason))?),
            None => None,
        };
        OverrideRule::new(rule, path, wire.severity)
    }

    /// Parses the command-line form `RULE=LEVEL` or `RULE=PATH=LEVEL` (`field-added=breaking`,
    /// `field-added=$.items[id=7]=ignore`): the rule id ends at the first `=`, the level starts
    /// after the last one. The error names the valid rule ids or levels.
    pub fn parse_spec(spec: &str) -> Result<OverrideRule, PatternError> {
        let fail = |reason: String| PatternError {
            kind: PatternKind::SeverityOverride,
            pattern: spec.to_owned(),
            reason,
        };
        let Some((rule_id, rest)) = spec.split_once('=') else {
            return Err(fail(
                "write RULE=LEVEL or RULE=PATH=LEVEL, e.g. `field-added=breaking` or \
                 `field-added=$.debug=ignore`"
                    .into(),
            ));
        };
        let rule =
            Rule::from_id(rule_id).ok_or_else(|| fail(SeverityOverride::unknown_rule(rule_id)))?;
        let (path, level) = match rest.rsplit_once('=') {
            Some((path, level)) => (Some(path), level),
            None => (None, rest),
        };
        let severity = level.parse::<OverrideSeverity>().map_err(|_| {
            let quoted = serde_json::to_string(level).unwrap_or_else(|_| format!("{level:?}"));
            fail(format!(
                "unknown level {quoted}; the levels are {}",
                OverrideSeverity::expected()
            ))
        })?;
        let path = match path {
            Some(p) => Some(IgnorePattern::parse(p).map_err(|e| fail(e.reason))?),
            None => None,
        };
        OverrideRule::new(rule, path, severity).map_err(|e| fail(e.reason))
    }

    /// The rule whose changes this override grades.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The path pattern it is restricted to, if any.
    pub fn path(&self) -> Option<&IgnorePattern> {
        self.path.as_ref()
    }

    /// The severity it gives, or `ignore`.
    pub fn severity(&self) -> OverrideSeverity {
        self.severity
    }

    /// The model's wire form.
    pub fn to_wire(&self) -> SeverityOverride {
        SeverityOverride {
            rule: self.rule.id().to_owned(),
            path: self.path.as_ref().map(|p| p.as_str().to_owned()),
            severity: self.severity,
        }
    }

    fn error(&self, reason: String) -> PatternError {
        PatternError {
            kind: PatternKind::SeverityOverride,
            pattern: self.to_string(),
            reason,
        }
    }

    fn matches(&self, at: &At<'_, '_>) -> bool {
        let Some(path) = &self.path else {
            return true;
        };
        match at {
            At::Status => path.matches_status(),
            At::Header(name) => path.matches_header(name),
            At::Body(segs, last) => path.matches_body(segs, *last),
        }
    }
}

impl std::fmt::Display for OverrideRule {
    /// The command-line form: `RULE=LEVEL` or `RULE=PATH=LEVEL`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}={}={}", self.rule.id(), path, self.severity),
            None => write!(f, "{}={}", self.rule.id(), self.severity),
        }
    }
}

impl std::str::FromStr for OverrideRule {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OverrideRule::parse_spec(s)
    }
}

/// Where a change is, for matching override paths.
pub(crate) enum At<'x, 'a> {
    Status,
    /// A tracked header, by its lower-case name.
    Header(&'x str),
    /// A body path: the segments and the last one.
    Body(&'x [Seg<'a>], Option<Seg<'a>>),
}

/// The severity of a change of `rule` at `at` after the overrides: the first override of the
/// rule that matches decides; `None` drops the change.
pub(crate) fn apply(overrides: &[OverrideRule], rule: Rule, at: At<'_, '_>) -> Option<Severity> {
    overrides
        .iter()
        .find(|o| o.rule == rule && o.matches(&at))
        .map_or(Some(rule.severity()), |o| o.severity.severity())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_read_and_print_back() -> Result<(), PatternError> {
        for spec in [
            "field-added=breaking",
            "field-added=$.debug=ignore",
            "keyed-item-removed=$.items[id=42]=info",
            "keyed-item-added=$.tags[.=beta]=ignore",
            "status-changed=status=info",
            "header-presence=headers.etag=ignore",
            "contract-violation=$..meta=warning",
        ] {
            let o = OverrideRule::parse_spec(spec)?;
            assert_eq!(o.to_string(), spec);
            assert_eq!(OverrideRule::from_wire(&o.to_wire())?, o);
        }
        let o = OverrideRule::parse_spec("keyed-item-removed=$.items[id=42]=info")?;
        assert_eq!(o.rule(), Rule::ItemRemoved);
        assert_eq!(o.path().map(IgnorePattern::as_str), Some("$.items[id=42]"));
        assert_eq!(o.severity(), OverrideSeverity::Info);
        Ok(())
    }

    #[test]
    fn bad_specs_name_what_is_valid() {
        let reason = |spec: &str| {
            OverrideRule::parse_spec(spec)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let unknown_rule = reason("added=breaking");
        assert!(
            unknown_rule.starts_with(
                "invalid severity override \"added=breaking\": unknown rule \"added\"; the rules are field-removed, "
            ),
            "{unknown_rule}"
        );
        for rule in Rule::ALL {
            assert!(unknown_rule.contains(rule.id()), "{unknown_rule}");
        }
        assert_eq!(
            reason("field-added=fatal"),
            "invalid severity override \"field-added=fatal\": unknown level \"fatal\"; the levels \
             are info, warning, breaking, ignore"
        );
        assert_eq!(
            reason("field-added"),
            "invalid severity override \"field-added\": write RULE=LEVEL or RULE=PATH=LEVEL, e.g. \
             `field-added=breaking` or `field-added=$.debug=ignore`"
        );
        assert!(reason("field-added=meta=info").contains("a pattern starts with `$`"));
        assert!(reason("field-added==info").contains("a pattern starts with `$`"));
        assert_eq!(
            reason("status-changed=$.status=info"),
            "invalid severity override \"status-changed=$.status=info\": rule status-changed \
             reports changes at `status`, so the path $.status never matches"
        );
        assert!(reason("field-added=status=info").contains("in the body"));
        assert!(reason("header-presence=$.etag=info").contains("at `headers.<name>`"));
        for spec in ["", "=", "=info", "field-added="] {
            assert!(
                reason(spec).starts_with("invalid severity override"),
                "{spec:?}"
            );
        }
    }

    #[test]
    fn wire_errors_name_the_rules() {
        let wire = SeverityOverride::new("nope", OverrideSeverity::Info);
        let text = OverrideRule::from_wire(&wire)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            text.starts_with("invalid severity override \"nope=info\": unknown rule \"nope\""),
            "{text}"
        );
        let wire = SeverityOverride::new("field-added", OverrideSeverity::Info).at("$[");
        assert!(OverrideRule::from_wire(&wire).is_err());
    }

    #[test]
    fn the_model_lists_exactly_the_rule_ids() {
        let ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        assert_eq!(ids, SeverityOverride::RULE_IDS);
    }
}
