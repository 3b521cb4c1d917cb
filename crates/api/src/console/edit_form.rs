//! The endpoint form's fields (add and edit share one form) as the body the service validates:
//! the `POST /api/v1/endpoints` entry of an add, the `PATCH /api/v1/endpoints/{id}` body of an
//! edit. The console translates, the service decides. A number field that does not parse goes through as
//! the text typed, so the service's message names the field.

use super::views::edit::EditValues;
use apidrift_model::{Cadence, EndpointSettings};
use serde_json::{Map, Value, json};

/// The form's values of stored settings (an edit), or of the create defaults (an add).
pub fn values_of(e: &EndpointSettings) -> EditValues {
    EditValues {
        name: e.name.clone(),
        url: e.url.clone(),
        method: e.method.as_str().to_owned(),
        environment: e.environment.clone(),
        description: e.description.clone().unwrap_or_default(),
        tags: e.tags.join(", "),
        content_type: e.content_type.clone(),
        diff_mode: e.diff_mode.as_str().to_owned(),
        timeout_ms: e.timeout_ms.to_string(),
        schedule: match e.schedule {
            Some(Cadence::Every(f)) => f.as_str().to_owned(),
            _ => String::new(),
        },
        interval: match e.schedule {
            Some(Cadence::Interval(n)) => n.to_string(),
            _ => String::new(),
        },
        ignore_paths: e.ignore_paths.join("\n"),
        identity_keys: e
            .identity_keys
            .iter()
            .map(|(p, k)| format!("{p}={k}"))
            .collect::<Vec<_>>()
            .join("\n"),
        severity_overrides: e
            .severity_overrides
            .iter()
            .map(|o| match &o.path {
                Some(path) => format!("{}={path}={}", o.rule, o.severity),
                None => format!("{}={}", o.rule, o.severity),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        follow_redirects: e.follow_redirects,
        retries: e.retries.to_string(),
        max_response_time_ms: e
            .max_response_time_ms
            .map(|ms| ms.to_string())
            .unwrap_or_default(),
        slow_after: e.slow_after.to_string(),
    }
}

/// A form field, trimmed, or empty.
fn text<'a>(pairs: &'a [(String, String)], name: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.trim())
}

fn number_or_text(v: &str) -> Value {
    v.parse::<u64>()
        .map_or_else(|_| Value::String(v.to_owned()), Value::from)
}

/// The submitted values (to show the form again) and the body (a create entry or a patch: the
/// same members), or why the form itself is contradictory (naming the field). Secrets are in
/// the body only, never in the values.
pub fn body_of(pairs: &[(String, String)]) -> (EditValues, Result<Value, String>) {
    let values = EditValues {
        name: text(pairs, "name").to_owned(),
        url: text(pairs, "url").to_owned(),
        method: text(pairs, "method").to_owned(),
        environment: text(pairs, "environment").to_owned(),
        description: text(pairs, "description").to_owned(),
        tags: text(pairs, "tags").to_owned(),
        content_type: text(pairs, "content_type").to_owned(),
        diff_mode: text(pairs, "diff_mode").to_owned(),
        timeout_ms: text(pairs, "timeout_ms").to_owned(),
        schedule: text(pairs, "schedule").to_owned(),
        interval: text(pairs, "interval").trim().to_owned(),
        ignore_paths: text(pairs, "ignore_paths").to_owned(),
        identity_keys: text(pairs, "identity_keys").to_owned(),
        severity_overrides: text(pairs, "severity_overrides").to_owned(),
        follow_redirects: text(pairs, "follow_redirects") == "yes",
        retries: text(pairs, "retries").to_owned(),
        max_response_time_ms: text(pairs, "max_response_time_ms").to_owned(),
        slow_after: text(pairs, "slow_after").to_owned(),
    };
    let mut patch = Map::new();
    patch.insert("name".into(), json!(values.name));
    patch.insert("url".into(), json!(values.url));
    patch.insert("method".into(), json!(values.method));
    patch.insert("environment".into(), json!(values.environment));
    patch.insert(
        "description".into(),
        if values.description.is_empty() {
            Value::Null
        } else {
            json!(values.description)
        },
    );
    let tags: Vec<&str> = values
        .tags
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    patch.insert("tags".into(), json!(tags));
    patch.insert("contentType".into(), json!(values.content_type));
    patch.insert("diffMode".into(), json!(values.diff_mode));
    patch.insert("timeoutMs".into(), number_or_text(&values.timeout_ms));
    if !values.retries.is_empty() {
        patch.insert("retries".into(), number_or_text(&values.retries));
    }
    latency_fields(pairs, &values, &mut patch);
    let mut schedule = Map::new();
    if !values.schedule.is_empty() {
        schedule.insert("frequency".into(), json!(values.schedule));
    }
    if !values.interval.is_empty() {
        schedule.insert("intervalSeconds".into(), number_or_text(&values.interval));
    }
    patch.insert(
        "schedule".into(),
        if schedule.is_empty() {
            Value::Null
        } else {
            Value::Object(schedule)
        },
    );
    let ignore: Vec<&str> = values
        .ignore_paths
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    patch.insert("ignorePaths".into(), json!(ignore));
    patch.insert(
        "identityKeys".into(),
        Value::Object(identity_keys_of(&values.identity_keys)),
    );
    patch.insert(
        "severityOverrides".into(),
        Value::Array(overrides_of(&values.severity_overrides)),
    );
    patch.insert("followRedirects".into(), json!(values.follow_redirects));
    match auth_of(pairs) {
        Ok(Some(auth)) => {
            patch.insert("auth".into(), auth);
        }
        Ok(None) => {}
        Err(e) => return (values, Err(e)),
    }
    // Write-only fields: blank keeps what is stored.
    let headers = text(pairs, "headers");
    if !headers.is_empty() {
        let mut map = Map::new();
        for line in headers.lines().map(str::trim).filter(|l| !l.is_empty()) {
            // A line without a colon becomes a header the service refuses by name.
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            map.insert(name.trim().to_owned(), json!(value.trim()));
        }
        patch.insert("headers".into(), Value::Object(map));
    }
    let body = pairs
        .iter()
        .find(|(k, _)| k == "request_body")
        .map_or("", |(_, v)| v.as_str());
    if !body.trim().is_empty() {
        patch.insert("requestBody".into(), json!(body));
    }
    (values, Ok(Value::Object(patch)))
}

/// The latency threshold fields, when the form has them: a blank threshold switches the alert
/// off (`null`), a blank `slowAfter` restores its default (`null`).
fn latency_fields(pairs: &[(String, String)], values: &EditValues, patch: &mut Map<String, Value>) {
    let sent = |name: &str| pairs.iter().any(|(k, _)| k == name);
    let value = |v: &str| {
        if v.is_empty() {
            Value::Null
        } else {
            number_or_text(v)
        }
    };
    if sent("max_response_time_ms") {
        patch.insert(
            "maxResponseTimeMs".into(),
            value(&values.max_response_time_ms),
        );
    }
    if sent("slow_after") {
        patch.insert("slowAfter".into(), value(&values.slow_after));
    }
}

/// `PATTERN=KEY` lines as the `identityKeys` object, split at the last `=` (so identity segments
/// such as `$.orgs[id=1].repos=name` keep theirs). A line without `=` becomes a rule with an
/// empty key, which the service refuses by name.
fn identity_keys_of(text: &str) -> Map<String, Value> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let (pattern, key) = match line.rsplit_once('=') {
                Some((p, k)) if !k.contains(']') => (p.trim(), k.trim()),
                _ => (line, ""),
            };
            (pattern.to_owned(), json!(key))
        })
        .collect()
}

/// `RULE[=PATH]=LEVEL` lines as the `severityOverrides` list, in order: the rule ends at the first
/// `=`, the level starts after the last one, the path is what lies between (as
/// `apidrift diff --severity` reads them). A line without `=` becomes an override without a
/// severity, which the service refuses by its position.
fn overrides_of(text: &str) -> Vec<Value> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let mut o = Map::new();
            match (line.split_once('='), line.rsplit_once('=')) {
                (Some((rule, rest)), Some((head, level))) => {
                    o.insert("rule".into(), json!(rule.trim()));
                    if head.len() > rule.len() {
                        let path = &rest[..rest.len() - level.len() - 1];
                        o.insert("path".into(), json!(path.trim()));
                    }
                    o.insert("severity".into(), json!(level.trim()));
                }
                _ => {
                    o.insert("rule".into(), json!(line));
                }
            }
            Value::Object(o)
        })
        .collect()
}

/// The `auth` member: `{"type":"none"}` to remove, a new credential when a type is chosen,
/// nothing (keep) otherwise; removing and replacing at once is refused.
fn auth_of(pairs: &[(String, String)]) -> Result<Option<Value>, String> {
    let remove = text(pairs, "remove_auth") == "yes";
    let kind = text(pairs, "auth_type");
    if remove && !kind.is_empty() {
        return Err("auth: remove the credentials or replace them, not both".into());
    }
    if remove {
        return Ok(Some(json!({ "type": "none" })));
    }
    if kind.is_empty() {
        return Ok(None);
    }
    let mut auth = Map::new();
    auth.insert("type".into(), json!(kind));
    for (field, name) in [
        ("token", "auth_token"),
        ("key", "auth_key"),
        ("header", "auth_header"),
        ("value", "auth_value"),
        ("username", "auth_username"),
        ("password", "auth_password"),
    ] {
        let v = pairs
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str());
        if !v.is_empty() {
            auth.insert(field.into(), json!(v));
        }
    }
    Ok(Some(Value::Object(auth)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_field_becomes_a_patch_member() {
        let (values, patch) = body_of(&pairs(&[
            ("name", " items "),
            ("url", "https://a.example/items"),
            ("method", "POST"),
            ("environment", "staging"),
            ("description", ""),
            ("tags", "a, b,,c "),
            ("content_type", "application/json"),
            ("diff_mode", "full"),
            ("timeout_ms", "5000"),
            ("retries", "2"),
            ("schedule", "DAILY"),
            ("ignore_paths", "$.a\r\n\r\n$.b"),
            (
                "identity_keys",
                "$.commits = sha\r\n\r\n$.orgs[id=1].repos=name\n$.bad",
            ),
            (
                "severity_overrides",
                "field-added=breaking\r\n\r\nkeyed-item-removed=$.items[id=7]=ignore\nbad",
            ),
            ("follow_redirects", "yes"),
            ("headers", "X-A: 1\nX-B:two"),
            ("request_body", "{\"q\":1}"),
        ]));
        assert_eq!(values.name, "items");
        assert_eq!(
            patch.ok(),
            Some(json!({
                "name": "items", "url": "https://a.example/items", "method": "POST",
                "environment": "staging", "description": null, "tags": ["a", "b", "c"],
                "contentType": "application/json", "diffMode": "full", "timeoutMs": 5000,
                "retries": 2, "schedule": { "frequency": "DAILY" }, "ignorePaths": ["$.a", "$.b"],
                "identityKeys": { "$.commits": "sha", "$.orgs[id=1].repos": "name", "$.bad": "" },
                "severityOverrides": [
                    { "rule": "field-added", "severity": "breaking" },
                    { "rule": "keyed-item-removed", "path": "$.items[id=7]", "severity": "ignore" },
                    { "rule": "bad" }
                ],
                "followRedirects": true, "headers": { "X-A": "1", "X-B": "two" },
                "requestBody": "{\"q\":1}"
            }))
        );
    }

    #[test]
    fn latency_fields_blank_switch_off_and_absent_stay_out() {
        let (_, patch) = body_of(&pairs(&[
            ("max_response_time_ms", "800"),
            ("slow_after", "4"),
        ]));
        let patch = patch.unwrap_or_default();
        assert_eq!(
            (&patch["maxResponseTimeMs"], &patch["slowAfter"]),
            (&json!(800), &json!(4))
        );
        let (_, patch) = body_of(&pairs(&[("max_response_time_ms", ""), ("slow_after", " ")]));
        let patch = patch.unwrap_or_default();
        assert_eq!(
            (&patch["maxResponseTimeMs"], &patch["slowAfter"]),
            (&Value::Null, &Value::Null)
        );
        let (_, patch) = body_of(&pairs(&[("max_response_time_ms", "fast")]));
        assert_eq!(patch.unwrap_or_default()["maxResponseTimeMs"], "fast");
        let (_, patch) = body_of(&pairs(&[("name", "x")]));
        let patch = patch.unwrap_or_default();
        assert!(patch.get("maxResponseTimeMs").is_none() && patch.get("slowAfter").is_none());
    }

    #[test]
    fn an_interval_replaces_the_frequency() {
        let (values, patch) = body_of(&pairs(&[("schedule", ""), ("interval", " 300 ")]));
        assert_eq!(values.interval, "300");
        let patch = patch.unwrap_or_default();
        assert_eq!(patch["schedule"], json!({ "intervalSeconds": 300 }));
        // Both given: sent as is, so the service's rule explains which one to keep.
        let (_, patch) = body_of(&pairs(&[("schedule", "DAILY"), ("interval", "300")]));
        assert_eq!(
            patch.unwrap_or_default()["schedule"],
            json!({ "frequency": "DAILY", "intervalSeconds": 300 })
        );
    }

    #[test]
    fn blanks_keep_secrets_and_bad_numbers_go_through_as_text() {
        let (_, patch) = body_of(&pairs(&[
            ("timeout_ms", "soon"),
            ("schedule", ""),
            ("auth_token", "ignored without a type"),
        ]));
        let patch = patch.unwrap_or_default();
        assert_eq!(patch["timeoutMs"], "soon");
        assert_eq!(patch["schedule"], Value::Null);
        assert_eq!(patch["followRedirects"], false);
        for absent in ["auth", "headers", "requestBody", "retries"] {
            assert!(patch.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn credentials_replaced_removed_or_refused() {
        let (_, patch) = body_of(&pairs(&[
            ("auth_type", "api_key"),
            ("auth_key", " k "),
            ("auth_header", "X-Key"),
            ("auth_token", ""),
        ]));
        let patch = patch.unwrap_or_default();
        assert_eq!(
            patch["auth"],
            json!({ "type": "api_key", "key": " k ", "header": "X-Key" })
        );
        let (_, patch) = body_of(&pairs(&[("remove_auth", "yes")]));
        assert_eq!(patch.unwrap_or_default()["auth"], json!({ "type": "none" }));
        let (_, patch) = body_of(&pairs(&[("remove_auth", "yes"), ("auth_type", "bearer")]));
        assert_eq!(
            patch.err().as_deref(),
            Some("auth: remove the credentials or replace them, not both")
        );
    }
}
