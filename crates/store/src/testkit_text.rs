//! The text cases of the conformance suite (feature `testkit`): the rule of [`crate::text`] on
//! every text and JSON column. Monitored content and JSON columns keep NUL and control
//! characters exactly, in keys as in values; user input with a NUL is refused with the same
//! [`StoreError::InvalidInput`] on every adapter, and its other control characters round-trip.
//!
//! [`crate::conformance_suite!`] expands these cases through [`crate::text_conformance_cases!`].

use crate::testkit::{
    TestResult, at, baseline, check, diff, endpoint_row, plain_endpoint, workspace,
};
use crate::text::{LEASE_OWNER, nul_refused};
use crate::*;
use apidrift_model::{Cadence, ChangeType, DiffChange, Frequency, Plan, Role, Scope, Severity};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration as StdDuration;
use time::Duration;

fn fail(msg: impl Into<String>) -> Box<dyn std::error::Error + Send + Sync> {
    msg.into().into()
}

/// Strings that exercise every way of storing text: NUL alone, inside, repeated and next to
/// other controls; the control characters JSON escapes and DEL, which it does not; characters
/// an escaping adapter might reserve (private use, noncharacters), alone, doubled and followed
/// by `0`; a literal backslash escape; non-ASCII; the empty string.
pub fn hostile_strings() -> Vec<String> {
    [
        "\0",
        "a\0b",
        "\0\0",
        "\0\u{1}\u{b}\u{7f}",
        "\u{1}",
        "\u{b}",
        "\u{7f}",
        "\t\r\n\u{1f}",
        "\\u0000",
        "\\\0",
        "\u{e000}",
        "\u{e000}0",
        "\u{fffe}",
        "\u{ffff}",
        "\u{ffff}0",
        "\u{10ffff}",
        "\u{10ffff}0",
        "\u{10ffff}\u{10ffff}",
        "\u{10ffff}\0",
        "\0\u{10ffff}0",
        "é 😀",
        "",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

/// A JSON document with every [`hostile_strings`] as a key, as a value, nested in objects and
/// arrays.
pub fn hostile_json() -> Value {
    let strings = hostile_strings();
    let mut object = Map::new();
    for (i, s) in strings.iter().enumerate() {
        let mut inner = Map::new();
        inner.insert(s.clone(), json!([s, null, 1.5, true]));
        object.insert(
            s.clone(),
            json!({ "i": i, "value": s, "inner": Value::Object(inner) }),
        );
    }
    json!({ "object": object, "array": strings, "nested": [[{ "deep": strings }]] })
}

/// A JSON object of hostile header names and values.
fn hostile_headers() -> Value {
    Value::Object(
        hostile_strings()
            .into_iter()
            .map(|s| (format!("x-{s}"), Value::String(s)))
            .collect(),
    )
}

fn hostile_changes() -> Vec<DiffChange> {
    hostile_strings()
        .into_iter()
        .enumerate()
        .map(|(i, s)| DiffChange {
            id: format!("{i:016x}"),
            path: format!("$.{s}"),
            change_type: ChangeType::TypeChanged,
            severity: Severity::Warning,
            message: format!("{s} changed"),
            old_value: Some(Value::String(s.clone())),
            new_value: Some(hostile_json()),
            old_type: Some(s.clone()),
            new_type: Some(s),
        })
        .collect()
}

/// Every control character but NUL, in the middle of the text (some callers trim the ends).
const CONTROLS: &str = "a\u{1}b\u{b}c\u{7f}d";

// ============================================================================ faithful text

/// Monitored content and JSON columns: NUL and control characters in values and keys come back
/// exactly as written, from every read that returns them.
pub async fn text_json_and_monitored_text_round_trip(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "hostile", None, None).await?;
    let strings = hostile_strings();
    let hostile = hostile_json();

    // endpoints.tags, endpoints.ignore_paths, endpoints.response_contract.
    let mut row = endpoint_row("hostile", at(0));
    row.settings.tags = strings.clone();
    row.settings.ignore_paths = strings.iter().map(|s| format!("$.{s}")).collect();
    row.response_contract = Some(ResponseContract {
        operation: "GET /x/\0/\u{10ffff}0".into(),
        status: 200,
        schema: hostile.clone(),
        set: None,
    });
    let created = store
        .create_endpoints(ws.id, vec![row.clone()])
        .await?
        .created;
    let e = created.first().ok_or_else(|| fail("not created"))?;
    assert_eq!(
        (
            &e.settings.tags,
            &e.settings.ignore_paths,
            &e.response_contract
        ),
        (
            &row.settings.tags,
            &row.settings.ignore_paths,
            &row.response_contract
        )
    );
    assert_eq!(store.get_endpoint(ws.id, e.id).await?.as_ref(), Some(e));
    let listed = store
        .list_endpoints(ws.id, &EndpointFilter::default(), PageRequest::default())
        .await?;
    assert_eq!(listed.items.first(), Some(e));
    let contract = ResponseContract {
        operation: "\u{1}\0".into(),
        status: 201,
        schema: hostile_headers(),
        set: None,
    };
    store
        .set_contract(ws.id, e.id, Some(contract.clone()), at(1))
        .await?;
    assert_eq!(
        store
            .get_endpoint(ws.id, e.id)
            .await?
            .and_then(|e| e.response_contract),
        Some(contract)
    );

    // baselines.content_type, baselines.headers, baselines.shape.
    let mut b = baseline(e.id, at(2));
    b.content_type = Some("application/json; x=\0\u{1}\u{10ffff}0".into());
    b.headers = hostile_headers();
    b.shape = hostile.clone();
    let stored = store.record_baseline(ws.id, b.clone(), None).await?;
    assert_eq!(
        (&stored.content_type, &stored.headers, &stored.shape),
        (&b.content_type, &b.headers, &b.shape)
    );
    assert_eq!(
        store.active_baseline(ws.id, e.id).await?.as_ref(),
        Some(&stored)
    );

    // checks.error_kind, error_message, content_type, headers; diffs.changes, diffs.summary.
    let mut c = check(e.id, at(3));
    c.error_kind = Some("kind\0\u{7f}".into());
    c.error_message = Some(strings.concat());
    c.content_type = Some("text/\0plain\u{b}".into());
    c.headers = Some(hostile_headers());
    let mut d = diff(Some(stored.id), hostile_changes(), at(3));
    let Value::Object(summary) = hostile.clone() else {
        return Err(fail("the hostile document is an object"));
    };
    d.summary = Some(summary);
    let recorded = store
        .record_check(ws.id, c.clone(), Some(d.clone()))
        .await?;
    let expected = StoredCheck {
        scheduled: false,
        id: c.id,
        workspace_id: ws.id,
        endpoint_id: e.id,
        started_at: c.started_at,
        finished_at: c.finished_at,
        http_status: c.http_status,
        response_time: c.response_time,
        error_kind: c.error_kind.clone(),
        error_message: c.error_message.clone(),
        content_type: c.content_type.clone(),
        headers: c.headers.clone(),
        sealed_body: c.sealed_body.clone(),
        diff_id: Some(d.id),
    };
    assert_eq!(recorded.check, expected);
    assert_eq!(store.get_check(ws.id, c.id).await?, Some(expected));
    for got in [
        store.get_diff(ws.id, d.id).await?,
        store.latest_diff(ws.id, e.id).await?,
    ] {
        let got = got.ok_or_else(|| fail("diff missing"))?;
        assert_eq!(got.changes, d.changes);
        assert_eq!(got.summary, d.summary);
    }
    // Accepting promotes a hostile baseline as faithfully.
    let mut promoted = baseline(e.id, at(4));
    promoted.headers = hostile.clone();
    promoted.shape = hostile_headers();
    let outcome = store
        .accept_diff(ws.id, d.id, Some(promoted.clone()), at(4))
        .await?;
    let nb = outcome
        .baseline
        .ok_or_else(|| fail("no baseline promoted"))?;
    assert_eq!(
        (&nb.headers, &nb.shape),
        (&promoted.headers, &promoted.shape)
    );

    // alert_state.fingerprint, outbox_events.payload, delivery errors, schedules.last_outcome.
    store
        .create_webhook(NewWebhook {
            kind: crate::WebhookKind::Generic,
            id: new_id(),
            workspace_id: ws.id,
            url: "https://hooks.example.com/h".into(),
            min_severity: Severity::Info,
            sealed_secret: b"s".to_vec(),
            created_at: at(0),
        })
        .await?;
    let alert = |fp: &str, when: i64| {
        let event_id = new_id();
        let draft = AlertDraft {
            event_id,
            created_at: at(when),
            fingerprint: Some(fp.to_owned()),
            max_severity: Some(Severity::Warning),
            detected_payload: format!("{hostile}\0\u{1}\u{10ffff}0{event_id}"),
            resolved_payload: format!("resolved\0{event_id}"),
            latency: None,
        };
        let d = diff(None, hostile_changes(), at(when));
        (draft, check(e.id, at(when)), d)
    };
    let fp = "fp\0\u{10ffff}0";
    let (draft, c, d) = alert(fp, 10);
    let (_, queued) = store
        .record_check_alerting(ws.id, c, Some(d), draft.clone())
        .await?;
    assert_eq!(queued, 1);
    // The stored fingerprint reads back equal: the same drift is not alerted twice ...
    let (again, c, d) = alert(fp, 11);
    assert_eq!(
        store
            .record_check_alerting(ws.id, c, Some(d), again)
            .await?
            .1,
        0
    );
    // ... and a fingerprint that only looks like its stored form is another drift.
    let (lookalike, c, d) = alert("fp\u{10ffff}0\u{10ffff}0", 12);
    assert_eq!(
        store
            .record_check_alerting(ws.id, c, Some(d), lookalike.clone())
            .await?
            .1,
        1
    );
    let lease = StdDuration::from_secs(60);
    let mut claimed = store.claim_deliveries("w", at(20), lease, 10).await?;
    claimed.sort_by_key(|d| d.created_at);
    assert_eq!(
        claimed
            .iter()
            .map(|d| d.payload.as_str())
            .collect::<Vec<_>>(),
        vec![
            draft.detected_payload.as_str(),
            lookalike.detected_payload.as_str()
        ]
    );
    let error = strings.concat();
    for (delivery, outcome) in claimed
        .iter()
        .zip([DeliveryOutcome::Retry(at(30_000)), DeliveryOutcome::Failed])
    {
        let attempt = DeliveryAttempt {
            id: new_id(),
            attempted_at: at(21),
            http_status: None,
            error: Some(error.clone()),
            duration_ms: 1,
        };
        assert!(
            store
                .finish_delivery(delivery.id, "w", attempt, outcome)
                .await?
        );
    }
    assert_eq!(
        store.delivery_counts(ws.id).await?,
        DeliveryCounts {
            pending: 1,
            delivered: 0,
            failed: 1,
            attempts: 2
        }
    );

    store
        .insert_schedules(vec![NewSchedule {
            workspace_id: ws.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Daily),
            next_run_at: at(0),
        }])
        .await?;
    let claimed = store.claim_schedules("w", at(40), lease, 10).await?;
    assert_eq!(claimed.len(), 1);
    let outcome = format!("failed: {error}");
    assert!(
        store
            .finish_schedule(e.id, "w", at(50_000), &outcome, false, at(41))
            .await?
    );
    assert_eq!(
        store
            .schedule_of(ws.id, e.id)
            .await?
            .and_then(|s| s.last_outcome),
        Some(outcome)
    );
    Ok(())
}

// ============================================================================ user input

/// Asserts `result` is the [`nul_refused`] error of `column`, word for word.
fn refused<T: std::fmt::Debug>(result: Result<T, StoreError>, column: &str) -> TestResult {
    let expected = nul_refused(column).to_string();
    match result {
        Err(e @ StoreError::InvalidInput(_)) if e.to_string() == expected => Ok(()),
        other => Err(fail(format!(
            "a NUL in {column}: expected \"{expected}\", got {other:?}"
        ))),
    }
}

fn token(ws: Uuid, name: &str, hash: &str, hint: &str) -> NewToken {
    NewToken {
        id: new_id(),
        workspace_id: ws,
        name: name.into(),
        token_hash: hash.into(),
        hint: hint.into(),
        scopes: vec![Scope::EndpointsRead],
        role: Role::Member,
        created_at: at(0),
        expires_at: None,
    }
}

/// User input in text columns: a NUL is refused with `InvalidInput` naming the column, and
/// nothing is written; every other control character is stored and read back as given.
pub async fn text_user_input_refuses_nul(store: Arc<dyn Store>) -> TestResult {
    // workspaces.name
    let new_ws = |name: &str| NewWorkspace {
        id: new_id(),
        name: name.into(),
        plan: Plan::Pro,
        endpoint_limit: None,
        check_quota: None,
        created_at: at(0),
    };
    refused(
        store.create_workspace(new_ws("a\0b")).await,
        "workspaces.name",
    )?;
    assert_eq!(store.count_workspaces().await?, 0);
    let ws = store.create_workspace(new_ws(CONTROLS)).await?;
    assert_eq!(
        store.get_workspace(ws.id).await?.map(|w| w.name),
        Some(CONTROLS.to_owned())
    );
    let rename = |name: &str| WorkspaceUpdate {
        name: Some(name.into()),
        ..WorkspaceUpdate::default()
    };
    refused(
        store.update_workspace(ws.id, rename("\0")).await,
        "workspaces.name",
    )?;
    let renamed = format!("{CONTROLS}!");
    assert_eq!(
        store.update_workspace(ws.id, rename(&renamed)).await?.name,
        renamed
    );

    // tokens.name, tokens.token_hash, tokens.hint, and the lookup by hash.
    let hash = "f".repeat(64);
    refused(
        store.create_token(token(ws.id, "t\0", &hash, "Ab12")).await,
        "tokens.name",
    )?;
    refused(
        store
            .create_token(token(ws.id, "t", &format!("{hash}\0"), "Ab12"))
            .await,
        "tokens.token_hash",
    )?;
    refused(
        store.create_token(token(ws.id, "t", &hash, "\0b12")).await,
        "tokens.hint",
    )?;
    assert!(store.list_tokens(ws.id).await?.is_empty());
    refused(store.find_token_by_hash("\0").await, "tokens.token_hash")?;
    let t = store
        .create_token(token(ws.id, CONTROLS, &format!("{hash}\u{1}"), "\u{7f}b12"))
        .await?;
    assert_eq!(store.get_token(ws.id, t.id).await?.as_ref(), Some(&t));
    assert_eq!((t.name.as_str(), t.hint.as_str()), (CONTROLS, "\u{7f}b12"));

    // endpoints.name, url, environment, description, content_type: one bad row refuses the
    // whole batch.
    type Poison = fn(&mut NewEndpointRow);
    let poisons: [(&str, Poison); 5] = [
        ("endpoints.name", |r| r.settings.name.push('\0')),
        ("endpoints.url", |r| r.settings.url.push('\0')),
        ("endpoints.environment", |r| {
            r.settings.environment = "\0".into()
        }),
        ("endpoints.description", |r| {
            r.settings.description = Some("d\0".into())
        }),
        ("endpoints.content_type", |r| {
            r.settings.content_type.push('\0')
        }),
    ];
    for (column, poison) in poisons {
        let mut bad = plain_endpoint("bad", at(1));
        poison(&mut bad);
        let batch = vec![plain_endpoint("good", at(0)), bad];
        refused(store.create_endpoints(ws.id, batch).await, column)?;
    }
    assert_eq!(store.count_endpoints(ws.id).await?, 0);
    let mut row = endpoint_row("e", at(0));
    row.settings.name = CONTROLS.into();
    row.settings.url = format!("https://api.example.com/{CONTROLS}");
    row.settings.environment = CONTROLS.into();
    row.settings.description = Some(CONTROLS.into());
    row.settings.content_type = format!("application/json; {CONTROLS}");
    let created = store.create_endpoints(ws.id, vec![row.clone()]).await?;
    let e = created.created.first().ok_or_else(|| fail("not created"))?;
    assert_eq!(
        (
            &e.settings.name,
            &e.settings.url,
            &e.settings.environment,
            &e.settings.description,
            &e.settings.content_type
        ),
        (
            &row.settings.name,
            &row.settings.url,
            &row.settings.environment,
            &row.settings.description,
            &row.settings.content_type
        )
    );
    assert_eq!(store.get_endpoint(ws.id, e.id).await?.as_ref(), Some(e));
    let by_env = |env: &str| EndpointFilter {
        environment: Some(env.into()),
        ..EndpointFilter::default()
    };
    refused(
        store
            .list_endpoints(ws.id, &by_env("\0"), PageRequest::default())
            .await,
        "endpoints.environment",
    )?;
    let found = store
        .list_endpoints(ws.id, &by_env(CONTROLS), PageRequest::default())
        .await?;
    assert_eq!(
        found.items.iter().map(|e| e.id).collect::<Vec<_>>(),
        vec![e.id]
    );

    // users.email, users.password_hash, and the login lookup.
    let user = |email: &str, hash: &str| NewUser {
        id: new_id(),
        email: email.into(),
        password_hash: hash.into(),
        workspace_id: ws.id,
        role: Role::Admin,
        created_at: at(0),
    };
    refused(
        store
            .create_user(user("a\0@example.com", "$argon2id$x"))
            .await,
        "users.email",
    )?;
    refused(
        store
            .create_user(user("a@example.com", "$argon2id$\0"))
            .await,
        "users.password_hash",
    )?;
    assert!(store.list_memberships(None).await?.is_empty());
    refused(store.find_user_by_email("\0").await, "users.email")?;
    refused(
        store.find_user_by_email("admin@example.com\0").await,
        "users.email",
    )?;
    let email = format!("{}@example.com", CONTROLS.to_lowercase());
    let u = store
        .create_user(user(&email, &format!("$argon2id${CONTROLS}")))
        .await?;
    assert_eq!(store.find_user_by_email(&email).await?.as_ref(), Some(&u));
    assert_eq!(u.password_hash, format!("$argon2id${CONTROLS}"));

    // sessions.id_hash, sessions.csrf_token, and the lookups by hash.
    let session = |hash: &str, csrf: &str| NewSession {
        id_hash: hash.into(),
        user_id: u.id,
        workspace_id: ws.id,
        csrf_token: csrf.into(),
        created_at: at(0),
        expires_at: at(0) + Duration::hours(1),
    };
    refused(
        store.create_session(session("h\0", "c")).await,
        "sessions.id_hash",
    )?;
    refused(
        store.create_session(session("h", "c\0")).await,
        "sessions.csrf_token",
    )?;
    assert_eq!(store.find_session("h").await?, None);
    refused(store.find_session("\0").await, "sessions.id_hash")?;
    refused(store.touch_session("\0", at(1)).await, "sessions.id_hash")?;
    refused(store.revoke_session("\0", at(1)).await, "sessions.id_hash")?;
    store.create_session(session(CONTROLS, CONTROLS)).await?;
    let s = store
        .find_session(CONTROLS)
        .await?
        .ok_or_else(|| fail("session missing"))?;
    assert_eq!(
        (s.id_hash.as_str(), s.csrf_token.as_str()),
        (CONTROLS, CONTROLS)
    );

    // webhooks.url
    let hook = |url: &str| NewWebhook {
        kind: crate::WebhookKind::Generic,
        id: new_id(),
        workspace_id: ws.id,
        url: url.into(),
        min_severity: Severity::Info,
        sealed_secret: b"s".to_vec(),
        created_at: at(0),
    };
    refused(
        store.create_webhook(hook("https://h.example.com/\0")).await,
        "webhooks.url",
    )?;
    assert!(store.list_webhooks(ws.id).await?.is_empty());
    let h = hook(&format!("https://h.example.com/{CONTROLS}"));
    store.create_webhook(h.clone()).await?;
    assert_eq!(store.list_webhooks(ws.id).await?, vec![h]);

    // Lease owners: claims, finishes and releases.
    let lease = StdDuration::from_secs(60);
    let draft = AlertDraft {
        event_id: new_id(),
        created_at: at(5),
        fingerprint: Some("f".into()),
        max_severity: Some(Severity::Warning),
        detected_payload: "{}".into(),
        resolved_payload: "{}".into(),
        latency: None,
    };
    let changes = vec![crate::testkit::change("$.a", Severity::Warning)];
    store
        .record_check_alerting(
            ws.id,
            check(e.id, at(5)),
            Some(diff(None, changes, at(5))),
            draft,
        )
        .await?;
    store
        .insert_schedules(vec![NewSchedule {
            workspace_id: ws.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Daily),
            next_run_at: at(0),
        }])
        .await?;
    refused(
        store.claim_deliveries("w\0", at(10), lease, 10).await,
        LEASE_OWNER,
    )?;
    refused(
        store.claim_schedules("w\0", at(10), lease, 10).await,
        LEASE_OWNER,
    )?;
    refused(store.release_leases("\0").await, LEASE_OWNER)?;
    let owner = CONTROLS;
    let deliveries = store.claim_deliveries(owner, at(10), lease, 10).await?;
    let schedules = store.claim_schedules(owner, at(10), lease, 10).await?;
    assert_eq!((deliveries.len(), schedules.len()), (1, 1));
    let attempt = DeliveryAttempt {
        id: new_id(),
        attempted_at: at(11),
        http_status: Some(200),
        error: None,
        duration_ms: 1,
    };
    refused(
        store
            .finish_delivery(
                deliveries[0].id,
                "w\0",
                attempt.clone(),
                DeliveryOutcome::Delivered,
            )
            .await,
        LEASE_OWNER,
    )?;
    refused(
        store
            .finish_schedule(e.id, "w\0", at(99_000), "checked", false, at(11))
            .await,
        LEASE_OWNER,
    )?;
    assert!(
        store
            .finish_delivery(deliveries[0].id, owner, attempt, DeliveryOutcome::Delivered)
            .await?
    );
    assert_eq!(store.release_leases(owner).await?, 1);
    Ok(())
}

/// Expands one `#[tokio::test]` per text case (called by [`crate::conformance_suite!`]; not
/// meant to be used on its own).
#[doc(hidden)]
#[macro_export]
macro_rules! text_conformance_cases {
    ($setup:path, $teardown:path) => {
        $crate::text_conformance_cases!(@cases $setup, $teardown;
            text_json_and_monitored_text_round_trip,
            text_user_input_refuses_nul,
        );
    };
    (@cases $setup:path, $teardown:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() -> $crate::testkit::TestResult {
                let Some((store, guard)) = $setup().await? else {
                    return Ok(());
                };
                let result = $crate::testkit_text::$case(store).await;
                $teardown(guard).await?;
                result
            }
        )*
    };
}
