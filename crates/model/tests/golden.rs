//! Golden JSON for every model type: a fixed value serialises to exactly the expected text (field
//! names, absent vs null, lowercase enums, uppercase methods, `Z` timestamps with milliseconds), and
//! the spec's shapes deserialise.

use apidrift_model::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::marker::PhantomData;
use time::macros::datetime;

fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// Serialises `value` and compares the exact compact text, then reads it back.
fn golden<T>(value: &T, expected: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text =
        serde_json::to_string(value).unwrap_or_else(|e| format!("serialisation failed: {e}"));
    assert_eq!(text, expected);
    let back: Result<T, _> = serde_json::from_str(&text);
    assert_eq!(back.as_ref().ok(), Some(value), "round trip of {text}");
}

fn endpoint() -> Endpoint {
    Endpoint {
        id: id(1),
        key: Some("users".into()),
        name: "Users API".into(),
        url: "https://api.example.com/users".into(),
        method: HttpMethod::Get,
        environment: "production".into(),
        tags: vec!["core".into()],
        description: None,
        health: Health::Warning,
        auth_type: AuthType::ApiKey,
        diff_mode: DiffMode::Full,
        timeout_ms: Some(10_000),
        baseline_version: Some(3),
        has_response_contract: true,
        last_checked_at: Some(datetime!(2026-11-21 07:57:09.123456 UTC)),
        response_time: Some(87),
        breaking_count: 0,
        warning_count: 2,
        created_at: Some(datetime!(2026-11-01 00:00:00 +02:00)),
        updated_at: None,
        paused: false,
        retries: 1,
        identity_keys: [("$.users".to_owned(), "login".to_owned())].into(),
        severity_overrides: vec![
            SeverityOverride::new("field-added", OverrideSeverity::Breaking).at("$.users[]"),
        ],
        max_response_time_ms: Some(800),
        slow_after: 3,
        uptime: Some(apidrift_model::Uptime {
            day: Some(0.75),
            week: Some(0.5),
            month: None,
        }),
        schedule: Some(Schedule {
            frequency: Some(Frequency::Hourly),
            interval_seconds: None,
        }),
        next_run_at: Some(datetime!(2026-11-21 08:57:09.123456 UTC)),
    }
}

const ENDPOINT_JSON: &str = concat!(
    r#"{"id":"00000000-0000-0000-0000-000000000001","key":"users","name":"Users API","#,
    r#""url":"https://api.example.com/users","method":"GET","environment":"production","#,
    r#""tags":["core"],"description":null,"health":"warning","authType":"api_key","#,
    r#""diffMode":"full","timeoutMs":10000,"baselineVersion":3,"hasResponseContract":true,"#,
    r#""lastCheckedAt":"2026-11-21T07:57:09.123Z","responseTime":87,"breakingCount":0,"#,
    r#""warningCount":2,"createdAt":"2026-10-31T22:00:00.000Z","updatedAt":null,"#,
    r#""paused":false,"retries":1,"identityKeys":{"$.users":"login"},"#,
    r#""severityOverrides":[{"rule":"field-added","path":"$.users[]","severity":"breaking"}],"#,
    r#""maxResponseTimeMs":800,"slowAfter":3,"uptime":{"day":0.75,"week":0.5,"month":null},"#,
    r#""schedule":{"frequency":"HOURLY"},"nextRunAt":"2026-11-21T08:57:09.123Z"}"#
);

#[test]
fn endpoint_golden() {
    let text = serde_json::to_string(&endpoint()).unwrap_or_default();
    assert_eq!(text, ENDPOINT_JSON);
    // Reading back gives the same value at millisecond precision.
    let back: Option<Endpoint> = serde_json::from_str(&text).ok();
    let mut expected = endpoint();
    expected.last_checked_at = Some(datetime!(2026-11-21 07:57:09.123 UTC));
    expected.next_run_at = Some(datetime!(2026-11-21 08:57:09.123 UTC));
    assert_eq!(back, Some(expected));
    // An interval schedule, and no next run: `intervalSeconds` alone, `nextRunAt` null.
    let mut e = endpoint();
    e.schedule = Some(Schedule {
        frequency: None,
        interval_seconds: Some(300),
    });
    e.next_run_at = None;
    let v = serde_json::to_value(&e).unwrap_or_default();
    assert_eq!(v["schedule"], json!({"intervalSeconds": 300}));
    assert_eq!(v["nextRunAt"], Value::Null);
    e.schedule = None;
    let v = serde_json::to_value(&e).unwrap_or_default();
    assert_eq!(v["schedule"], Value::Null);
}

#[test]
fn endpoint_spec_shape_with_optional_fields_absent() {
    // Optional fields of the spec table may be missing on read.
    let minimal = json!({
        "id": "00000000-0000-0000-0000-000000000002", "name": "n", "url": "https://e.com/",
        "method": "POST", "environment": "staging", "tags": [], "health": "unknown",
        "authType": "none", "diffMode": "schema", "hasResponseContract": false
    });
    let e: Result<Endpoint, _> = serde_json::from_value(minimal);
    let e = e.ok();
    assert_eq!(e.as_ref().map(|e| e.method), Some(HttpMethod::Post));
    assert_eq!(e.as_ref().and_then(|e| e.created_at), None);
    assert_eq!(e.as_ref().and_then(|e| e.schedule), None);
    assert_eq!(e.as_ref().and_then(|e| e.next_run_at), None);
}

#[test]
fn envelopes_golden() {
    let latest = LatestDiff {
        id: id(9),
        created_at: datetime!(2026-11-21 07:57:09.5 UTC),
        breaking_count: 1,
        warning_count: 0,
        info_count: 4,
    };
    golden(
        &latest,
        r#"{"id":"00000000-0000-0000-0000-000000000009","createdAt":"2026-11-21T07:57:09.500Z","breakingCount":1,"warningCount":0,"infoCount":4}"#,
    );
    let pagination = Pagination {
        limit: 25,
        offset: 0,
        total: 1,
    };
    golden(&pagination, r#"{"limit":25,"offset":0,"total":1}"#);
    let mut ep = endpoint();
    ep.last_checked_at = None;
    let envelope = EndpointEnvelope {
        endpoint: ep.clone(),
        latest_diff: None,
    };
    let text = serde_json::to_string(&envelope).unwrap_or_default();
    assert!(text.starts_with(r#"{"endpoint":{"id":"#));
    assert!(text.ends_with(r#""latestDiff":null}"#), "{text}");
    let list = EndpointList {
        endpoints: vec![],
        pagination,
    };
    golden(
        &list,
        r#"{"endpoints":[],"pagination":{"limit":25,"offset":0,"total":1}}"#,
    );
    let created = CreateEndpointsResponse {
        endpoints: vec![],
        created: 0,
        scheduled: 0,
        skipped: vec![SkippedEntry {
            name: String::new(),
            reason: "name: required".into(),
            index: 0,
        }],
    };
    golden(
        &created,
        r#"{"endpoints":[],"created":0,"scheduled":0,"skipped":[{"name":"","reason":"name: required","index":0}]}"#,
    );
    golden(
        &ErrorBody::new("token lacks scope endpoints:write"),
        r#"{"error":"token lacks scope endpoints:write"}"#,
    );
    golden(
        &Schedule::from(Cadence::Every(Frequency::Daily)),
        r#"{"frequency":"DAILY"}"#,
    );
    golden(
        &Schedule::from(Cadence::Interval(300)),
        r#"{"intervalSeconds":300}"#,
    );
    let schedule: Option<Schedule> = serde_json::from_str(r#"{"frequency":"weekly"}"#).ok();
    assert_eq!(
        schedule.and_then(|s| s.cadence()),
        Some(Cadence::Every(Frequency::Weekly))
    );
    let schedule: Option<Schedule> = serde_json::from_str(r#"{"intervalSeconds":59}"#).ok();
    assert_eq!(
        schedule.map(|s| s.cadence()),
        Some(None),
        "below the minimum"
    );
}

fn change(old: Option<Value>, new: Option<Value>) -> DiffChange {
    DiffChange {
        id: "0123456789abcdef".into(),
        path: "$.data.users[id=42].email".into(),
        change_type: ChangeType::NullabilityChanged,
        severity: Severity::Breaking,
        message: "email became null".into(),
        old_value: old,
        new_value: new,
        old_type: Some("string".into()),
        new_type: Some("null".into()),
    }
}

#[test]
fn diff_change_keeps_absent_apart_from_null() {
    golden(
        &change(Some(json!("a@example.com")), Some(Value::Null)),
        r#"{"id":"0123456789abcdef","path":"$.data.users[id=42].email","type":"nullability_changed","severity":"breaking","message":"email became null","oldValue":"a@example.com","newValue":null,"oldType":"string","newType":"null"}"#,
    );
    let mut removed = change(Some(json!({"a": 1})), None);
    removed.change_type = ChangeType::Removed;
    removed.old_type = None;
    removed.new_type = None;
    golden(
        &removed,
        r#"{"id":"0123456789abcdef","path":"$.data.users[id=42].email","type":"removed","severity":"breaking","message":"email became null","oldValue":{"a":1}}"#,
    );
    let mut added = change(None, Some(Value::Null));
    added.change_type = ChangeType::Added;
    added.severity = Severity::Info;
    let text = serde_json::to_string(&added).unwrap_or_default();
    assert!(
        !text.contains("oldValue") && text.contains(r#""newValue":null"#),
        "{text}"
    );
    let back: Option<DiffChange> = serde_json::from_str(&text).ok();
    assert_eq!(
        back.map(|c| (c.old_value, c.new_value)),
        Some((None, Some(Value::Null)))
    );
}

#[test]
fn change_types_and_severities_spell_as_the_spec() {
    let types: Vec<String> = ChangeType::ALL
        .iter()
        .map(|t| serde_json::to_string(t).unwrap_or_default())
        .collect();
    assert_eq!(
        types.join(","),
        r#""added","removed","changed","type_changed","nullability_changed","status_changed","header_changed","contract_violation""#
    );
    for t in ChangeType::ALL {
        assert_eq!(
            serde_json::to_string(t).unwrap_or_default(),
            format!("\"{}\"", t.as_str())
        );
    }
    let sev: Vec<String> = Severity::ALL
        .iter()
        .map(|s| serde_json::to_string(s).unwrap_or_default())
        .collect();
    assert_eq!(sev.join(","), r#""info","warning","breaking""#);
    assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Breaking);
}

fn summary() -> DiffSummary {
    DiffSummary {
        id: id(7),
        endpoint_id: Some(id(1)),
        endpoint_name: Some("Users API".into()),
        created_at: Some(datetime!(2026-11-21 07:57:09.123 UTC)),
        accepted: false,
        breaking_count: 1,
        warning_count: 0,
        info_count: 0,
        change_count: 1,
        first_seen_at: Some(datetime!(2026-11-21 07:57:09.123 UTC)),
        last_seen_at: Some(datetime!(2026-11-24 07:57:09 UTC)),
        seen_count: 212,
    }
}

#[test]
fn diffs_golden() {
    golden(
        &summary(),
        r#"{"id":"00000000-0000-0000-0000-000000000007","endpointId":"00000000-0000-0000-0000-000000000001","endpointName":"Users API","createdAt":"2026-11-21T07:57:09.123Z","accepted":false,"breakingCount":1,"warningCount":0,"infoCount":0,"changeCount":1,"firstSeenAt":"2026-11-21T07:57:09.123Z","lastSeenAt":"2026-11-24T07:57:09.000Z","seenCount":212}"#,
    );
    let detail = DiffDetail {
        base: summary(),
        changes: vec![change(Some(json!("a")), Some(Value::Null))],
        baseline_id: Some(id(3)),
        check_id: None,
        summary: None,
    };
    let text = serde_json::to_string(&detail).unwrap_or_default();
    assert!(
        text.starts_with(r#"{"id":"00000000-0000-0000-0000-000000000007","endpointId":"#),
        "{text}"
    );
    assert!(
        text.contains(r#""seenCount":212,"changes":[{"id":"0123456789abcdef""#),
        "{text}"
    );
    assert!(
        text.ends_with(r#""baselineId":"00000000-0000-0000-0000-000000000003","checkId":null}"#),
        "{text}"
    );
    let back: Option<DiffDetail> = serde_json::from_str(&text).ok();
    assert_eq!(back.as_ref(), Some(&detail));
    let envelope = DiffEnvelope { diff: detail };
    let back: Option<DiffEnvelope> =
        serde_json::from_str(&serde_json::to_string(&envelope).unwrap_or_default()).ok();
    assert_eq!(back, Some(envelope));
    let list = DiffList {
        diffs: vec![summary()],
        pagination: Pagination {
            limit: 100,
            offset: 5,
            total: 6,
        },
    };
    let text = serde_json::to_string(&list).unwrap_or_default();
    assert!(
        text.starts_with(r#"{"diffs":[{"id":"#)
            && text.ends_with(r#""pagination":{"limit":100,"offset":5,"total":6}}"#)
    );
}

#[test]
fn check_response_golden() {
    golden(
        &CheckResponse {
            success: true,
            diff_id: None,
            seen_count: None,
            breaking_count: 0,
            warning_count: 0,
            change_count: 0,
            alerts_sent: 0,
        },
        r#"{"success":true,"diffId":null,"seenCount":null,"breakingCount":0,"warningCount":0,"changeCount":0,"alertsSent":0}"#,
    );
    golden(
        &CheckResponse {
            success: true,
            diff_id: Some(id(5)),
            seen_count: Some(3),
            breaking_count: 2,
            warning_count: 1,
            change_count: 4,
            alerts_sent: 1,
        },
        r#"{"success":true,"diffId":"00000000-0000-0000-0000-000000000005","seenCount":3,"breakingCount":2,"warningCount":1,"changeCount":4,"alertsSent":1}"#,
    );
}

#[test]
fn enums_golden() {
    let all = |v: Vec<String>| v.join(",");
    assert_eq!(
        all(Health::ALL.iter().map(|h| h.to_string()).collect()),
        "healthy,warning,breaking,unknown,checking"
    );
    assert_eq!(
        all(AuthType::ALL.iter().map(|h| h.to_string()).collect()),
        "none,bearer,api_key,basic,oauth,custom"
    );
    assert_eq!(
        all(DiffMode::ALL.iter().map(|h| h.to_string()).collect()),
        "schema,full"
    );
    assert_eq!(
        all(HttpMethod::ALL.iter().map(|h| h.to_string()).collect()),
        "GET,POST,PUT,PATCH,DELETE,HEAD,OPTIONS"
    );
    assert_eq!(
        all(Frequency::ALL.iter().map(|h| h.to_string()).collect()),
        "HOURLY,DAILY,WEEKLY,MONTHLY"
    );
    assert_eq!(
        all(Scope::ALL.iter().map(|h| h.to_string()).collect()),
        "endpoints:read,endpoints:write,checks:run,baselines:write"
    );
    assert_eq!(
        all(Role::ALL.iter().map(|h| h.to_string()).collect()),
        "viewer,member,admin,owner"
    );
    assert_eq!(
        all(Plan::ALL.iter().map(|h| h.to_string()).collect()),
        "free,starter,pro,enterprise"
    );
    // Requests: `exact` reads as `full`; methods and frequencies in any case.
    assert_eq!(
        serde_json::from_str::<DiffMode>(r#""exact""#).ok(),
        Some(DiffMode::Full)
    );
    assert_eq!(
        serde_json::to_string(&DiffMode::Full).unwrap_or_default(),
        r#""full""#
    );
    assert_eq!(
        serde_json::from_str::<HttpMethod>(r#""options""#).ok(),
        Some(HttpMethod::Options)
    );
    assert_eq!(
        serde_json::from_str::<Frequency>(r#""Monthly""#).ok(),
        Some(Frequency::Monthly)
    );
    assert!(serde_json::from_str::<Health>(r#""HEALTHY""#).is_err());
    assert_eq!(Scope::DEFAULT, &[Scope::EndpointsRead]);
    assert_eq!(Plan::Free.endpoint_limit(), Some(5));
    assert_eq!(Plan::Enterprise.check_quota(), None);
    assert!(!Plan::Free.allows_schedules() && Plan::Starter.allows_schedules());
}

/// `true` when `T: Serialize`, through inherent-over-trait resolution of associated constants.
struct Probe<T>(PhantomData<T>);
trait NotSerialize {
    const SERIALIZE: bool = false;
}
impl<T> NotSerialize for Probe<T> {}
impl<T: Serialize> Probe<T> {
    const SERIALIZE: bool = true;
}

#[test]
fn secrets_deserialise_but_cannot_serialise() {
    // Checked at compile time: a credential type gaining `Serialize` fails the build of this test.
    const { assert!(!<Probe<EndpointAuth>>::SERIALIZE) };
    const { assert!(!<Probe<SecretString>>::SERIALIZE) };
    const {
        assert!(
            <Probe<Endpoint>>::SERIALIZE,
            "the probe must detect Serialize"
        )
    };
    let auth: Result<EndpointAuth, _> = serde_json::from_value(json!({
        "type": "basic", "username": "canary-user", "password": "canary-password"
    }));
    let auth = auth.ok();
    assert_eq!(auth.as_ref().map(|a| a.auth_type), Some(AuthType::Basic));
    let printed = format!("{auth:?}");
    assert!(!printed.contains("canary"), "{printed}");
    assert!(printed.contains("***"));
    assert_eq!(
        auth.and_then(|a| a.password)
            .map(|p| p.expose().to_owned())
            .as_deref(),
        Some("canary-password")
    );
}
