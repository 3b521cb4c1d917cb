//! The conformance suite every adapter runs (feature `testkit`).
//!
//! Each case is a `pub async fn(Arc<dyn Store>) -> TestResult` that gets a freshly migrated, empty
//! store. An adapter's test file expands [`crate::conformance_suite!`] with a setup function
//! (returning the store and a guard, or `None` to skip) and a teardown function; the macro writes
//! one `#[tokio::test]` per case, so every case gets its own database.
//!
//! Every case also checks workspace isolation for the methods it covers: the same call with a
//! second workspace's id behaves exactly as for a missing row.

use crate::*;
use apidrift_model::{
    AuthType, Cadence, ChangeType, DiffChange, DiffMode, EndpointSettings, Frequency, HttpMethod,
    Plan, Role, Scope, Severity,
};
use serde_json::json;
use std::sync::Arc;
use time::Duration;
use time::macros::datetime;

/// The result of a case.
pub type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Fails the case with a message.
fn fail(msg: impl Into<String>) -> Box<dyn std::error::Error + Send + Sync> {
    msg.into().into()
}

/// The base instant of every case (millisecond precision, as the API writes).
pub fn t0() -> OffsetDateTime {
    datetime!(2026-11-21 10:00:00.123 UTC)
}

/// `t0()` plus `ms` milliseconds.
pub fn at(ms: i64) -> OffsetDateTime {
    t0() + Duration::milliseconds(ms)
}

/// Creates a workspace with the given limits.
pub async fn workspace(
    store: &dyn Store,
    name: &str,
    endpoint_limit: Option<u32>,
    check_quota: Option<u32>,
) -> Result<Workspace, StoreError> {
    store
        .create_workspace(NewWorkspace {
            id: new_id(),
            name: name.into(),
            plan: Plan::Enterprise,
            endpoint_limit,
            check_quota,
            created_at: t0(),
        })
        .await
}

/// A complete endpoint input: every optional field set, sealed blobs distinct per row.
pub fn endpoint_row(name: &str, created_at: OffsetDateTime) -> NewEndpointRow {
    let id = new_id();
    NewEndpointRow {
        id,
        settings: EndpointSettings {
            retries: 1,
            key: Some(format!("k-{id}")),
            name: name.into(),
            url: format!("https://api.example.com/{name}"),
            method: HttpMethod::Post,
            environment: "production".into(),
            description: Some(format!("{name} description")),
            tags: vec!["a".into(), "b c".into()],
            content_type: "application/json".into(),
            diff_mode: DiffMode::Full,
            timeout_ms: 2_500,
            schedule: Some(Cadence::Every(Frequency::Daily)),
            ignore_paths: vec!["$.meta.requestId".into(), "$..traceId".into()],
            identity_keys: [
                ("$.commits", "sha"),
                ("$..lines.data", "id"),
                ("$.orgs[id=1][\"repo list\"]", "full_name"),
            ]
            .into_iter()
            .map(|(p, k)| (p.to_owned(), k.to_owned()))
            .collect(),
            follow_redirects: true,
            severity_overrides: vec![
                apidrift_model::SeverityOverride::new(
                    "field-added",
                    apidrift_model::OverrideSeverity::Breaking,
                ),
                apidrift_model::SeverityOverride::new(
                    "value-changed",
                    apidrift_model::OverrideSeverity::Ignore,
                )
                .at("$.items[id=7][\"x\u{0}y\"]"),
            ],
            max_response_time_ms: Some(1_500),
            slow_after: 4,
        },
        secrets: SealedSecrets {
            auth_type: AuthType::Bearer,
            sealed_auth: Some([b"sealed-auth:".as_slice(), id.as_bytes()].concat()),
            sealed_headers: Some([b"sealed-headers:".as_slice(), id.as_bytes()].concat()),
            sealed_request_body: Some([b"sealed-request:".as_slice(), id.as_bytes()].concat()),
        },
        response_contract: None,
        created_at,
    }
}

/// A bare endpoint input (no secrets, no schedule).
pub fn plain_endpoint(name: &str, created_at: OffsetDateTime) -> NewEndpointRow {
    let full = endpoint_row(name, created_at);
    NewEndpointRow {
        settings: EndpointSettings {
            retries: 1,
            key: None,
            schedule: None,
            description: None,
            tags: vec![],
            ignore_paths: vec![],
            identity_keys: Default::default(),
            severity_overrides: Vec::new(),
            method: HttpMethod::Get,
            diff_mode: DiffMode::Schema,
            follow_redirects: false,
            ..full.settings
        },
        secrets: SealedSecrets::none(),
        ..full
    }
}

/// One change with the given severity at `path`.
pub fn change(path: &str, severity: Severity) -> DiffChange {
    DiffChange {
        id: format!("{:016x}", path.len()),
        path: path.into(),
        change_type: ChangeType::TypeChanged,
        severity,
        message: format!("{path} changed"),
        old_value: Some(json!(1)),
        new_value: Some(json!("1")),
        old_type: Some("integer".into()),
        new_type: Some("string".into()),
    }
}

/// A baseline input for `endpoint`.
pub fn baseline(endpoint: Uuid, captured_at: OffsetDateTime) -> NewBaseline {
    let id = new_id();
    NewBaseline {
        id,
        endpoint_id: endpoint,
        status: 200,
        content_type: Some("application/json".into()),
        headers: json!({"content-type": "application/json", "etag": "\"x\""}),
        sealed_body: [b"sealed-body:".as_slice(), id.as_bytes()].concat(),
        shape: json!({"type": "object", "fields": {"id": "integer"}}),
        captured_at,
        volatile_paths: vec![],
    }
}

/// A check input for `endpoint`.
pub fn check(endpoint: Uuid, finished_at: OffsetDateTime) -> NewCheck {
    NewCheck {
        scheduled: false,
        id: new_id(),
        endpoint_id: endpoint,
        started_at: finished_at - Duration::milliseconds(40),
        finished_at,
        http_status: Some(200),
        response_time: Some(40),
        error_kind: None,
        error_message: None,
        content_type: None,
        headers: None,
        sealed_body: None,
    }
}

/// A diff input with `changes`, a drift of its own: its fingerprint is unique, so it never joins
/// an open diff (see [`diff_of_drift`] for one that does).
pub fn diff(baseline_id: Option<Uuid>, changes: Vec<DiffChange>, at: OffsetDateTime) -> NewDiff {
    let id = new_id();
    NewDiff {
        id,
        baseline_id,
        changes,
        summary: None,
        created_at: at,
        fingerprint: Some(format!("unique-{id}")),
    }
}

/// A diff input of the drift `fingerprint` (D26: a check with the fingerprint of the endpoint's
/// open diff is linked to it).
pub fn diff_of_drift(
    baseline_id: Option<Uuid>,
    changes: Vec<DiffChange>,
    at: OffsetDateTime,
    fingerprint: &str,
) -> NewDiff {
    NewDiff {
        fingerprint: Some(fingerprint.to_owned()),
        ..diff(baseline_id, changes, at)
    }
}

async fn one_endpoint(
    store: &dyn Store,
    ws: Uuid,
    name: &str,
) -> Result<StoredEndpoint, StoreError> {
    let mut created = store
        .create_endpoints(ws, vec![endpoint_row(name, t0())])
        .await?
        .created;
    created.pop().ok_or(StoreError::NotFound)
}

fn is_not_found<T: std::fmt::Debug>(r: &Result<T, StoreError>) -> bool {
    matches!(r, Err(StoreError::NotFound))
}

// ============================================================================ database

/// `migrate` on a migrated database applies nothing; `ping` answers; `backend` is stable.
pub async fn migrate_is_idempotent(store: Arc<dyn Store>) -> TestResult {
    let report = store.migrate().await?;
    assert_eq!(report.applied, Vec::<String>::new());
    store.ping().await?;
    let b = store.backend();
    assert!(matches!(b, Backend::Sqlite | Backend::Postgres));
    Ok(())
}

// ============================================================================ workspaces

/// Create, read, update and count workspaces; duplicate ids conflict; missing ids are reported.
pub async fn workspaces_round_trip(store: Arc<dyn Store>) -> TestResult {
    assert_eq!(store.count_workspaces().await?, 0);
    let new = NewWorkspace {
        id: new_id(),
        name: "acme".into(),
        plan: Plan::Free,
        endpoint_limit: Some(5),
        check_quota: Some(1_000),
        created_at: t0(),
    };
    let created = store.create_workspace(new.clone()).await?;
    assert_eq!(created.id, new.id);
    assert_eq!(created.plan, Plan::Free);
    assert_eq!(created.created_at, t0());
    assert_eq!(store.get_workspace(new.id).await?, Some(created.clone()));
    assert!(matches!(
        store.create_workspace(new.clone()).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(store.count_workspaces().await?, 1);

    let updated = store
        .update_workspace(
            new.id,
            WorkspaceUpdate {
                plan: Some(Plan::Pro),
                endpoint_limit: Some(None),
                ..WorkspaceUpdate::default()
            },
        )
        .await?;
    assert_eq!(updated.plan, Plan::Pro);
    assert_eq!(updated.endpoint_limit, None);
    assert_eq!(updated.check_quota, Some(1_000));
    assert_eq!(updated.name, "acme");
    let renamed = store
        .update_workspace(
            new.id,
            WorkspaceUpdate {
                name: Some("acme2".into()),
                check_quota: Some(Some(7)),
                ..WorkspaceUpdate::default()
            },
        )
        .await?;
    assert_eq!(
        (renamed.name.as_str(), renamed.check_quota),
        ("acme2", Some(7))
    );
    assert_eq!(store.get_workspace(new.id).await?, Some(renamed.clone()));

    // Severity overrides: replaced whole, each update one version more; with an expected
    // version, only while the workspace still has it.
    assert_eq!(renamed.version, created.version + 2);
    assert!(created.severity_overrides.is_empty());
    let overrides = vec![
        apidrift_model::SeverityOverride::new(
            "field-added",
            apidrift_model::OverrideSeverity::Breaking,
        )
        .at("$.a[\"b\u{0}c\"]"),
        apidrift_model::SeverityOverride::new(
            "status-changed",
            apidrift_model::OverrideSeverity::Ignore,
        ),
    ];
    let with = store
        .update_workspace(
            new.id,
            WorkspaceUpdate {
                severity_overrides: Some(overrides.clone()),
                expected_version: Some(renamed.version),
                ..WorkspaceUpdate::default()
            },
        )
        .await?;
    assert_eq!(with.severity_overrides, overrides);
    assert_eq!(with.version, renamed.version + 1);
    assert_eq!(with.name, "acme2");
    assert_eq!(store.get_workspace(new.id).await?, Some(with.clone()));
    assert!(matches!(
        store
            .update_workspace(
                new.id,
                WorkspaceUpdate {
                    severity_overrides: Some(Vec::new()),
                    expected_version: Some(renamed.version),
                    ..WorkspaceUpdate::default()
                },
            )
            .await,
        Err(StoreError::Changed)
    ));
    assert_eq!(store.get_workspace(new.id).await?, Some(with.clone()));
    let cleared = store
        .update_workspace(
            new.id,
            WorkspaceUpdate {
                severity_overrides: Some(Vec::new()),
                ..WorkspaceUpdate::default()
            },
        )
        .await?;
    assert!(cleared.severity_overrides.is_empty());
    assert_eq!(cleared.version, with.version + 1);

    let missing = new_id();
    assert_eq!(store.get_workspace(missing).await?, None);
    assert!(is_not_found(
        &store
            .update_workspace(missing, WorkspaceUpdate::default())
            .await
    ));
    Ok(())
}

/// The monthly quota: consumes below the quota only, per calendar month (UTC), per workspace.
pub async fn check_quota(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, Some(2)).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let zero = workspace(&*store, "zero", None, Some(0)).await?;
    let nov = datetime!(2026-11-30 23:59:59 UTC);
    let dec = datetime!(2026-12-01 00:00:01 UTC);

    assert_eq!(
        store.consume_check_unit(a.id, nov).await?,
        QuotaOutcome::Consumed {
            used: 1,
            quota: Some(2)
        }
    );
    assert_eq!(
        store.consume_check_unit(a.id, nov).await?,
        QuotaOutcome::Consumed {
            used: 2,
            quota: Some(2)
        }
    );
    assert_eq!(
        store.consume_check_unit(a.id, nov).await?,
        QuotaOutcome::Exhausted { used: 2, quota: 2 }
    );
    assert_eq!(store.check_usage(a.id, nov).await?, 2);
    // A new month starts from zero.
    assert_eq!(
        store.consume_check_unit(a.id, dec).await?,
        QuotaOutcome::Consumed {
            used: 1,
            quota: Some(2)
        }
    );
    assert_eq!(store.check_usage(a.id, dec).await?, 1);
    assert_eq!(store.check_usage(a.id, nov).await?, 2);
    // Another workspace has its own count; unlimited always consumes.
    assert_eq!(store.check_usage(b.id, nov).await?, 0);
    for n in 1..=3 {
        assert_eq!(
            store.consume_check_unit(b.id, nov).await?,
            QuotaOutcome::Consumed {
                used: n,
                quota: None
            }
        );
    }
    assert_eq!(store.check_usage(a.id, nov).await?, 2);
    assert_eq!(
        store.consume_check_unit(zero.id, nov).await?,
        QuotaOutcome::Exhausted { used: 0, quota: 0 }
    );
    // Raising the quota lets checks run again.
    store
        .update_workspace(
            a.id,
            WorkspaceUpdate {
                check_quota: Some(Some(3)),
                ..Default::default()
            },
        )
        .await?;
    assert_eq!(
        store.consume_check_unit(a.id, nov).await?,
        QuotaOutcome::Consumed {
            used: 3,
            quota: Some(3)
        }
    );
    assert!(is_not_found(&store.consume_check_unit(new_id(), nov).await));
    assert_eq!(store.check_usage(new_id(), nov).await?, 0);
    Ok(())
}

/// A quota changed after units were taken binds from the next take on: lowered below the usage
/// it refuses (the usage stays what it was), raised it gives exactly the difference, and a
/// workspace that was unlimited is held to its first quota. Concurrent takes under a quota larger
/// than the concurrency stay exact (an adapter may count the usage in several rows).
pub async fn check_quota_changes(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "changing", None, Some(40)).await?;
    let t = datetime!(2026-11-15 12:00 UTC);
    let set = |quota: Option<u32>| WorkspaceUpdate {
        check_quota: Some(quota),
        ..Default::default()
    };
    let taken = |store: Arc<dyn Store>, n: u32| async move {
        let mut taken = 0u32;
        for _ in 0..n {
            if let QuotaOutcome::Consumed { .. } = store.consume_check_unit(ws.id, t).await? {
                taken += 1;
            }
        }
        Ok::<u32, StoreError>(taken)
    };
    // `tasks` concurrent tasks of `each` takes: the units they took.
    let concurrently = |tasks: u32, each: u32| {
        let store = store.clone();
        async move {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..tasks {
                set.spawn(taken(store.clone(), each));
            }
            let mut consumed = 0;
            while let Some(joined) = set.join_next().await {
                consumed += joined??;
            }
            Ok::<u32, Box<dyn std::error::Error + Send + Sync>>(consumed)
        }
    };
    // 8 tasks of 8 takes against 40 units: exactly 40.
    assert_eq!(
        concurrently(8, 8).await?,
        40,
        "exactly the quota under concurrency"
    );
    assert_eq!(store.check_usage(ws.id, t).await?, 40);

    // Lowered below the usage: refused, and the usage is kept.
    store.update_workspace(ws.id, set(Some(25))).await?;
    assert_eq!(
        store.consume_check_unit(ws.id, t).await?,
        QuotaOutcome::Exhausted {
            used: 40,
            quota: 25
        }
    );
    assert_eq!(store.check_usage(ws.id, t).await?, 40);
    // Raised: exactly the difference.
    store.update_workspace(ws.id, set(Some(43))).await?;
    assert_eq!(taken(store.clone(), 5).await?, 3);
    assert_eq!(store.check_usage(ws.id, t).await?, 43);

    // Unlimited, then limited above the usage: exactly the rest, under concurrency.
    store.update_workspace(ws.id, set(None)).await?;
    assert_eq!(taken(store.clone(), 20).await?, 20);
    assert_eq!(store.check_usage(ws.id, t).await?, 63);
    store.update_workspace(ws.id, set(Some(70))).await?;
    assert_eq!(
        concurrently(4, 4).await?,
        7,
        "exactly the rest of the new quota"
    );
    assert_eq!(store.check_usage(ws.id, t).await?, 70);
    // Another month is its own.
    let next = datetime!(2026-12-01 00:00 UTC);
    assert_eq!(store.check_usage(ws.id, next).await?, 0);
    assert!(matches!(
        store.consume_check_unit(ws.id, next).await?,
        QuotaOutcome::Consumed { used: 1, .. }
    ));
    Ok(())
}

// ============================================================================ tokens

fn new_token(ws: Uuid, hash_seed: char, created_at: OffsetDateTime) -> NewToken {
    NewToken {
        id: new_id(),
        workspace_id: ws,
        name: format!("token {hash_seed}"),
        token_hash: std::iter::repeat_n(hash_seed, 64).collect(),
        hint: "Ab12".into(),
        scopes: vec![Scope::EndpointsRead, Scope::ChecksRun],
        role: Role::Member,
        created_at,
        expires_at: Some(created_at + Duration::days(30)),
    }
}

/// Tokens: create, look up by hash, list, revoke (idempotent), touch at most once a minute.
pub async fn tokens_lifecycle(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let t1 = store.create_token(new_token(a.id, 'a', at(0))).await?;
    let t2 = store.create_token(new_token(a.id, 'b', at(0))).await?;
    let tb = store.create_token(new_token(b.id, 'c', at(0))).await?;
    assert_eq!(t1.scopes, vec![Scope::EndpointsRead, Scope::ChecksRun]);
    assert_eq!(t1.role, Role::Member);
    assert_eq!((t1.revoked_at, t1.last_used_at), (None, None));
    assert_eq!(t1.expires_at, Some(at(0) + Duration::days(30)));
    assert!(t1.is_active(at(1)));
    assert!(!t1.is_active(at(0) + Duration::days(31)));

    // Duplicate hash, missing workspace.
    let mut dup = new_token(a.id, 'a', at(0));
    dup.id = new_id();
    assert!(matches!(
        store.create_token(dup).await,
        Err(StoreError::Conflict(_))
    ));
    assert!(is_not_found(
        &store.create_token(new_token(new_id(), 'd', at(0))).await
    ));

    let found = store.find_token_by_hash(&"a".repeat(64)).await?;
    assert_eq!(
        found.as_ref().map(|t| (t.id, t.workspace_id)),
        Some((t1.id, a.id))
    );
    assert_eq!(store.find_token_by_hash(&"e".repeat(64)).await?, None);

    // List: oldest first, ties by id; only the workspace's own.
    let mut expected = vec![t1.id, t2.id];
    expected.sort();
    let listed: Vec<Uuid> = store
        .list_tokens(a.id)
        .await?
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(listed, expected);
    assert_eq!(store.list_tokens(b.id).await?.len(), 1);
    assert_eq!(
        store.get_token(a.id, t1.id).await?.map(|t| t.id),
        Some(t1.id)
    );

    // Isolation: b cannot see, revoke or touch a's token.
    assert_eq!(store.get_token(b.id, t1.id).await?, None);
    assert!(is_not_found(&store.revoke_token(b.id, t1.id, at(5)).await));
    assert!(!store.touch_token(b.id, t1.id, at(5)).await?);
    assert_eq!(store.get_token(a.id, t1.id).await?, Some(t1.clone()));

    // Touch: first time, not again within 60 s, again after.
    assert!(store.touch_token(a.id, t1.id, at(1_000)).await?);
    assert!(!store.touch_token(a.id, t1.id, at(30_000)).await?);
    assert!(!store.touch_token(a.id, t1.id, at(60_999)).await?);
    assert!(store.touch_token(a.id, t1.id, at(61_000)).await?);
    let touched = store.get_token(a.id, t1.id).await?;
    assert_eq!(touched.and_then(|t| t.last_used_at), Some(at(61_000)));
    assert!(!store.touch_token(a.id, new_id(), at(1)).await?);

    // Revoke: idempotent, keeps the first time.
    let r1 = store.revoke_token(a.id, t1.id, at(100)).await?;
    assert_eq!(r1.revoked_at, Some(at(100)));
    assert!(!r1.is_active(at(101)));
    let r2 = store.revoke_token(a.id, t1.id, at(200)).await?;
    assert_eq!(r2.revoked_at, Some(at(100)));
    assert!(is_not_found(
        &store.revoke_token(a.id, new_id(), at(1)).await
    ));

    // Operator revoke without a workspace.
    let rb = store.revoke_token_by_id(tb.id, at(300)).await?;
    assert_eq!((rb.workspace_id, rb.revoked_at), (b.id, Some(at(300))));
    assert!(is_not_found(
        &store.revoke_token_by_id(new_id(), at(1)).await
    ));
    assert_eq!(
        store
            .get_token(a.id, t2.id)
            .await?
            .and_then(|t| t.revoked_at),
        None
    );
    Ok(())
}

// ============================================================================ endpoints

/// Every field of an endpoint survives a round trip; other workspaces cannot read it.
pub async fn endpoint_round_trip(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let mut input = endpoint_row("orders", at(7));
    input.response_contract = Some(ResponseContract {
        operation: "GET /orders/{id}".into(),
        status: 200,
        schema: json!({"type": "object", "required": ["id"]}),
        set: None,
    });
    let created = store.create_endpoints(a.id, vec![input.clone()]).await?;
    assert_eq!(
        (created.created.len(), created.not_created, created.existing),
        (1, 0, 0)
    );
    let got = store
        .get_endpoint(a.id, input.id)
        .await?
        .ok_or_else(|| fail("endpoint missing"))?;
    assert_eq!(Some(&got), created.created.first());
    assert_eq!(got.workspace_id, a.id);
    // The operator lookup finds the owning workspace, and nothing for an unknown id.
    assert_eq!(store.endpoint_workspace(input.id).await?, Some(a.id));
    assert_eq!(store.endpoint_workspace(Uuid::now_v7()).await?, None);
    assert_eq!(got.settings.name, input.settings.name);
    assert_eq!(got.settings.url, input.settings.url);
    assert_eq!(got.settings.method, HttpMethod::Post);
    assert_eq!(got.settings.environment, "production");
    assert_eq!(got.settings.description, input.settings.description);
    assert_eq!(got.settings.tags, input.settings.tags);
    assert_eq!(got.health, Health::Unknown);
    assert_eq!(got.secrets.auth_type, AuthType::Bearer);
    assert_eq!(got.secrets.sealed_auth, input.secrets.sealed_auth);
    assert_eq!(got.secrets.sealed_headers, input.secrets.sealed_headers);
    assert_eq!(
        got.secrets.sealed_request_body,
        input.secrets.sealed_request_body
    );
    assert_eq!(got.settings.content_type, "application/json");
    assert_eq!(got.settings.diff_mode, DiffMode::Full);
    assert_eq!(got.settings.timeout_ms, 2_500);
    assert_eq!(
        got.settings.schedule,
        Some(Cadence::Every(Frequency::Daily))
    );
    assert_eq!(got.settings.ignore_paths, input.settings.ignore_paths);
    assert_eq!(got.settings.identity_keys, input.settings.identity_keys);
    assert_eq!(got.settings.identity_keys.len(), 3);
    assert!(got.settings.follow_redirects);
    assert_eq!(got.response_contract, input.response_contract);
    assert_eq!(got.baseline_version, None);
    assert_eq!((got.last_checked_at, got.response_time), (None, None));
    assert_eq!((got.breaking_count, got.warning_count), (0, 0));
    assert_eq!((got.created_at, got.updated_at), (at(7), at(7)));
    let wire = got.to_model();
    assert_eq!(wire.identity_keys, input.settings.identity_keys);
    assert!(wire.has_response_contract);
    assert_eq!(wire.timeout_ms, Some(2_500));

    let plain = plain_endpoint("plain", at(8));
    store.create_endpoints(a.id, vec![plain.clone()]).await?;
    let got = store
        .get_endpoint(a.id, plain.id)
        .await?
        .ok_or_else(|| fail("plain missing"))?;
    assert!(!got.to_model().has_response_contract);
    assert!(got.settings.identity_keys.is_empty());
    assert_eq!(
        (
            got.secrets.sealed_auth,
            got.secrets.sealed_headers,
            got.settings.schedule
        ),
        (None, None, None)
    );
    assert_eq!(
        (got.settings.description, got.secrets.sealed_request_body),
        (None, None)
    );

    assert_eq!(store.get_endpoint(b.id, input.id).await?, None);
    assert_eq!(store.get_endpoint(a.id, new_id()).await?, None);
    assert_eq!(store.count_endpoints(a.id).await?, 2);
    assert_eq!(store.count_endpoints(b.id).await?, 0);
    assert!(is_not_found(
        &store
            .create_endpoints(new_id(), vec![plain_endpoint("x", t0())])
            .await
    ));
    Ok(())
}

/// The bulk create: one transaction, plan limit counted inside it, a failure writes nothing.
pub async fn bulk_create(store: Arc<dyn Store>) -> TestResult {
    let limited = workspace(&*store, "limited", Some(3), None).await?;
    let open = workspace(&*store, "open", None, None).await?;

    let first = store
        .create_endpoints(
            limited.id,
            vec![plain_endpoint("a", at(1)), plain_endpoint("b", at(2))],
        )
        .await?;
    assert_eq!(
        (first.created.len(), first.not_created, first.existing),
        (2, 0, 0)
    );
    assert!(!first.limit_already_reached());
    let batch = vec![
        plain_endpoint("c", at(3)),
        plain_endpoint("d", at(4)),
        plain_endpoint("e", at(5)),
    ];
    let second = store.create_endpoints(limited.id, batch.clone()).await?;
    assert_eq!(
        (second.created.len(), second.not_created, second.existing),
        (1, 2, 2)
    );
    assert_eq!(
        second.created.first().map(|e| e.id),
        batch.first().map(|e| e.id)
    );
    assert_eq!(second.endpoint_limit, Some(3));
    assert_eq!(store.get_endpoint(limited.id, batch[1].id).await?, None);
    let third = store
        .create_endpoints(limited.id, vec![plain_endpoint("f", at(6))])
        .await?;
    assert_eq!((third.created.len(), third.not_created), (0, 1));
    assert!(third.limit_already_reached());
    assert_eq!(store.count_endpoints(limited.id).await?, 3);

    // 200 at once is fine, 201 is refused before any write.
    let many: Vec<_> = (0..200)
        .map(|i| plain_endpoint(&format!("m{i}"), at(i)))
        .collect();
    let created = store.create_endpoints(open.id, many).await?;
    assert_eq!(created.created.len(), 200);
    let too_many: Vec<_> = (0..201)
        .map(|i| plain_endpoint(&format!("n{i}"), at(i)))
        .collect();
    assert!(matches!(
        store.create_endpoints(open.id, too_many).await,
        Err(StoreError::InvalidInput(_))
    ));
    assert_eq!(store.count_endpoints(open.id).await?, 200);

    // A failing row (duplicate id within the batch, or an id that exists) writes nothing.
    let good = plain_endpoint("good", at(1));
    let mut twin = plain_endpoint("twin", at(1));
    twin.id = good.id;
    let r = store
        .create_endpoints(
            open.id,
            vec![plain_endpoint("x", at(1)), good.clone(), twin],
        )
        .await;
    assert!(r.is_err(), "duplicate ids must fail: {r:?}");
    assert_eq!(store.count_endpoints(open.id).await?, 200);
    assert_eq!(store.get_endpoint(open.id, good.id).await?, None);
    let mut existing = plain_endpoint("exists", at(1));
    existing.id = batch[0].id; // already stored in another workspace
    let r = store
        .create_endpoints(open.id, vec![plain_endpoint("y", at(1)), existing])
        .await;
    assert!(r.is_err(), "an id of another workspace must fail: {r:?}");
    assert_eq!(store.count_endpoints(open.id).await?, 200);
    assert_eq!(store.count_endpoints(limited.id).await?, 3);
    assert!(store.get_endpoint(limited.id, batch[0].id).await?.is_some());
    let empty = store.create_endpoints(open.id, vec![]).await?;
    assert_eq!((empty.created.len(), empty.existing), (0, 200));
    Ok(())
}

fn ids(page: &Page<StoredEndpoint>) -> Vec<Uuid> {
    page.items.iter().map(|e| e.id).collect()
}

/// Lists: newest first with id-descending ties, filters, totals and pagination edges.
pub async fn list_endpoints(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    // 9 endpoints; three share one created_at to test the id tie-break.
    let mut rows = Vec::new();
    for i in 0..9i64 {
        let created = if (3..6).contains(&i) { at(3) } else { at(i) };
        let mut row = plain_endpoint(&format!("e{i}"), created);
        row.settings.environment = if i % 3 == 0 {
            "staging".into()
        } else {
            "production".into()
        };
        rows.push(row);
    }
    store.create_endpoints(a.id, rows.clone()).await?;
    store
        .create_endpoints(b.id, vec![plain_endpoint("noise", at(100))])
        .await?;
    let mut expected = rows.clone();
    expected.sort_by(|x, y| y.created_at.cmp(&x.created_at).then(y.id.cmp(&x.id)));
    let expected: Vec<Uuid> = expected.iter().map(|r| r.id).collect();

    let all = store
        .list_endpoints(
            a.id,
            &EndpointFilter::default(),
            PageRequest {
                limit: 100,
                offset: 0,
            },
        )
        .await?;
    assert_eq!(all.total, 9);
    assert_eq!(ids(&all), expected);

    // Pagination edges: every page size walks the same order; past the end is empty but total.
    for limit in [1u32, 2, 4, 9, 10] {
        let mut walked = Vec::new();
        let mut offset = 0u64;
        loop {
            let page = store
                .list_endpoints(
                    a.id,
                    &EndpointFilter::default(),
                    PageRequest { limit, offset },
                )
                .await?;
            assert_eq!(page.total, 9, "limit {limit} offset {offset}");
            if page.items.is_empty() {
                break;
            }
            assert!(page.items.len() <= limit as usize);
            walked.extend(ids(&page));
            offset += u64::from(limit);
        }
        assert_eq!(walked, expected, "limit {limit}");
    }
    let past = store
        .list_endpoints(
            a.id,
            &EndpointFilter::default(),
            PageRequest {
                limit: 5,
                offset: 50,
            },
        )
        .await?;
    assert_eq!((past.items.len(), past.total), (0, 9));
    let last = store
        .list_endpoints(
            a.id,
            &EndpointFilter::default(),
            PageRequest {
                limit: 5,
                offset: 8,
            },
        )
        .await?;
    assert_eq!((ids(&last), last.total), (vec![expected[8]], 9));

    // Filters: environment, health, both; totals follow the filters.
    let staging = EndpointFilter {
        environment: Some("staging".into()),
        ..Default::default()
    };
    let page = store
        .list_endpoints(
            a.id,
            &staging,
            PageRequest {
                limit: 2,
                offset: 0,
            },
        )
        .await?;
    assert_eq!(page.total, 3);
    assert!(
        page.items
            .iter()
            .all(|e| e.settings.environment == "staging")
    );
    store
        .set_health(a.id, rows[0].id, Health::Breaking, at(50))
        .await?;
    store
        .set_health(a.id, rows[1].id, Health::Breaking, at(50))
        .await?;
    let breaking = EndpointFilter {
        health: Some(Health::Breaking),
        ..Default::default()
    };
    let page = store
        .list_endpoints(a.id, &breaking, PageRequest::default())
        .await?;
    assert_eq!((page.total, ids(&page)), (2, vec![rows[1].id, rows[0].id]));
    let both = EndpointFilter {
        health: Some(Health::Breaking),
        environment: Some("staging".into()),
    };
    let page = store
        .list_endpoints(a.id, &both, PageRequest::default())
        .await?;
    assert_eq!((page.total, ids(&page)), (1, vec![rows[0].id]));
    let none = EndpointFilter {
        environment: Some("nowhere".into()),
        ..Default::default()
    };
    let page = store
        .list_endpoints(a.id, &none, PageRequest::default())
        .await?;
    assert_eq!((page.total, page.items.len()), (0, 0));

    // Isolation: b sees only its own; an unknown workspace sees nothing.
    let page = store
        .list_endpoints(b.id, &EndpointFilter::default(), PageRequest::default())
        .await?;
    assert_eq!(page.total, 1);
    let page = store
        .list_endpoints(b.id, &breaking, PageRequest::default())
        .await?;
    assert_eq!(page.total, 0);
    let page = store
        .list_endpoints(new_id(), &EndpointFilter::default(), PageRequest::default())
        .await?;
    assert_eq!((page.total, page.items.len()), (0, 0));

    // The method and URL of each endpoint, the workspace's only.
    let mut keys = store.endpoint_keys(a.id).await?;
    keys.sort();
    let all = store
        .list_endpoints(
            a.id,
            &EndpointFilter::default(),
            PageRequest {
                limit: 100,
                offset: 0,
            },
        )
        .await?;
    let mut wanted: Vec<_> = all
        .items
        .iter()
        .map(|e| (e.settings.method, e.settings.url.clone()))
        .collect();
    wanted.sort();
    assert_eq!(keys.len(), 9);
    assert_eq!(keys, wanted);
    assert_eq!(store.endpoint_keys(b.id).await?.len(), 1);
    assert!(store.endpoint_keys(new_id()).await?.is_empty());
    Ok(())
}

/// Health and contract setters; both refuse another workspace's endpoint.
pub async fn endpoint_setters(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "e").await?;
    store
        .set_health(a.id, e.id, Health::Checking, at(10))
        .await?;
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!((got.health, got.updated_at), (Health::Checking, at(10)));

    let contract = ResponseContract {
        operation: "GET /e".into(),
        status: 201,
        schema: json!({"type": "array", "items": {"nullable": true}}),
        set: None,
    };
    store
        .set_contract(a.id, e.id, Some(contract.clone()), at(20))
        .await?;
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(got.response_contract, Some(contract.clone()));
    assert!(got.to_model().has_response_contract);
    store.set_contract(a.id, e.id, None, at(30)).await?;
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!((got.response_contract, got.updated_at), (None, at(30)));

    assert!(is_not_found(
        &store.set_health(b.id, e.id, Health::Healthy, at(40)).await
    ));
    assert!(is_not_found(
        &store.set_contract(b.id, e.id, Some(contract), at(40)).await
    ));
    assert!(is_not_found(
        &store
            .set_health(a.id, new_id(), Health::Healthy, at(40))
            .await
    ));
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        (got.health, got.response_contract, got.updated_at),
        (Health::Checking, None, at(30))
    );
    Ok(())
}

// ============================================================================ baselines

/// Baseline versions count up per endpoint; the active one is the highest.
pub async fn baselines(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "e").await?;
    let other = one_endpoint(&*store, a.id, "other").await?;
    let eb = one_endpoint(&*store, b.id, "eb").await?;
    assert_eq!(store.active_baseline(a.id, e.id).await?, None);

    let mut input = baseline(e.id, at(10));
    input.volatile_paths = vec![
        "$.meta.requestId".into(),
        "$.items[id=7].updatedAt".into(),
        "$[\"a b\"][0].ts".into(),
    ];
    let b1 = store
        .record_baseline(a.id, input.clone(), Some(Health::Healthy))
        .await?;
    assert_eq!(
        (b1.version, b1.workspace_id, b1.endpoint_id),
        (1, a.id, e.id)
    );
    assert_eq!(
        (b1.status, b1.content_type.as_deref()),
        (200, Some("application/json"))
    );
    assert_eq!(
        (&b1.headers, &b1.shape, &b1.sealed_body),
        (&input.headers, &input.shape, &input.sealed_body)
    );
    assert_eq!(b1.captured_at, at(10));
    assert_eq!(b1.volatile_paths, input.volatile_paths);
    assert_eq!(
        store
            .active_baseline(a.id, e.id)
            .await?
            .map(|b| b.volatile_paths),
        Some(input.volatile_paths.clone())
    );
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        (got.baseline_version, got.health),
        (Some(1), Health::Healthy)
    );

    store
        .set_health(a.id, e.id, Health::Breaking, at(15))
        .await?;
    let b2 = store
        .record_baseline(a.id, baseline(e.id, at(20)), None)
        .await?;
    assert_eq!(b2.version, 2);
    // A later baseline carries its own learned paths (none here), not the previous ones.
    assert!(b2.volatile_paths.is_empty());
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        (got.baseline_version, got.health),
        (Some(2), Health::Breaking)
    );
    assert_eq!(store.active_baseline(a.id, e.id).await?, Some(b2.clone()));
    // Versions are per endpoint.
    let o1 = store
        .record_baseline(a.id, baseline(other.id, at(30)), None)
        .await?;
    assert_eq!(o1.version, 1);
    assert_eq!(
        store.active_baseline(a.id, e.id).await?.map(|b| b.version),
        Some(2)
    );

    // Isolation.
    assert_eq!(store.active_baseline(b.id, e.id).await?, None);
    assert!(is_not_found(
        &store
            .record_baseline(b.id, baseline(e.id, at(40)), None)
            .await
    ));
    assert!(is_not_found(
        &store
            .record_baseline(a.id, baseline(eb.id, at(40)), None)
            .await
    ));
    assert!(is_not_found(
        &store
            .record_baseline(a.id, baseline(new_id(), at(40)), None)
            .await
    ));
    assert_eq!(
        store.active_baseline(a.id, e.id).await?.map(|b| b.version),
        Some(2)
    );
    assert_eq!(store.active_baseline(b.id, eb.id).await?, None);
    Ok(())
}

// ============================================================================ checks and diffs

/// A check with and without a diff: rows, figures, health, latest diff, change round trip.
/// [`Store::check_context`] answers what the single reads answer, and `None` across workspaces.
pub async fn check_context(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, Some(3)).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "e").await?;
    let nov = at(100);

    // No baseline, no diff, nothing used yet.
    let ctx = store
        .check_context(a.id, e.id, nov)
        .await?
        .ok_or_else(|| fail("context missing"))?;
    assert_eq!(ctx.endpoint, e);
    assert_eq!((ctx.baseline, ctx.latest_diff), (None, None));
    assert!(ctx.workspace_overrides.is_empty());
    assert_eq!(
        ctx.usage,
        QuotaUsage {
            used: 0,
            quota: Some(3)
        }
    );
    assert_eq!(ctx.plan, a.plan, "the workspace's plan");

    // After a baseline, a unit and a diff: each part matches its own read.
    let base = store
        .record_baseline(a.id, baseline(e.id, at(1)), Some(Health::Healthy))
        .await?;
    store.consume_check_unit(a.id, nov).await?;
    let d = diff(
        Some(base.id),
        vec![change("$.a", Severity::Breaking)],
        at(50),
    );
    store
        .record_check(a.id, check(e.id, at(50)), Some(d))
        .await?;
    let ctx = store
        .check_context(a.id, e.id, nov)
        .await?
        .ok_or_else(|| fail("context missing"))?;
    assert_eq!(ctx.baseline, store.active_baseline(a.id, e.id).await?);
    assert_eq!(ctx.baseline.map(|b| b.id), Some(base.id));
    assert_eq!(ctx.latest_diff, store.latest_diff(a.id, e.id).await?);
    assert!(ctx.latest_diff.is_some());
    assert_eq!(ctx.usage, store.check_quota_usage(a.id, nov).await?);
    assert_eq!(ctx.usage.used, 1);
    assert_eq!(
        Some(ctx.endpoint),
        store.get_endpoint(a.id, e.id).await?,
        "the endpoint as get_endpoint reads it"
    );

    // The workspace's default severity overrides come with the context.
    let overrides = vec![apidrift_model::SeverityOverride::new(
        "field-added",
        apidrift_model::OverrideSeverity::Warning,
    )];
    store
        .update_workspace(
            a.id,
            WorkspaceUpdate {
                severity_overrides: Some(overrides.clone()),
                plan: Some(Plan::Starter),
                ..WorkspaceUpdate::default()
            },
        )
        .await?;
    let ctx = store
        .check_context(a.id, e.id, nov)
        .await?
        .ok_or_else(|| fail("context missing"))?;
    assert_eq!(ctx.workspace_overrides, overrides);
    assert_eq!(ctx.plan, Plan::Starter, "the plan as updated");

    // Another workspace's endpoint, or an unknown one, is no context.
    assert_eq!(store.check_context(b.id, e.id, nov).await?, None);
    assert_eq!(store.check_context(a.id, new_id(), nov).await?, None);
    Ok(())
}

pub async fn record_checks(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "e").await?;
    let eb = one_endpoint(&*store, b.id, "eb").await?;
    let base = store
        .record_baseline(a.id, baseline(e.id, at(1)), Some(Health::Healthy))
        .await?;
    let base_b = store
        .record_baseline(b.id, baseline(eb.id, at(1)), None)
        .await?;

    // No change: no diff, healthy, figures written.
    let quiet = check(e.id, at(100));
    let rec = store.record_check(a.id, quiet.clone(), None).await?;
    assert_eq!(
        (rec.health, rec.counts),
        (Health::Healthy, DiffCounts::default())
    );
    assert_eq!(rec.check.diff_id, None);
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        (got.last_checked_at, got.response_time),
        (Some(at(100)), Some(40))
    );
    assert_eq!(
        (got.breaking_count, got.warning_count, got.health),
        (0, 0, Health::Healthy)
    );
    assert_eq!(store.latest_diff(a.id, e.id).await?, None);
    let stored = store
        .get_check(a.id, quiet.id)
        .await?
        .ok_or_else(|| fail("check missing"))?;
    assert_eq!(
        (stored.http_status, stored.started_at, stored.finished_at),
        (Some(200), at(60), at(100))
    );

    // A diff: absent vs null values, summary map, counts and health.
    let mut changes = vec![
        change("$.a", Severity::Breaking),
        change("$.b", Severity::Warning),
        change("$.c", Severity::Warning),
        change("$.d", Severity::Info),
    ];
    changes[0].old_value = None;
    changes[0].new_value = Some(serde_json::Value::Null);
    changes[1].old_type = None;
    let mut d = diff(Some(base.id), changes.clone(), at(200));
    d.summary = json!({"mode": "full", "n": 4}).as_object().cloned();
    let failing = NewCheck {
        scheduled: false,
        http_status: None,
        response_time: None,
        error_kind: Some("timeout".into()),
        error_message: Some("timed out after 2500 ms".into()),
        ..check(e.id, at(200))
    };
    let rec = store
        .record_check(a.id, failing.clone(), Some(d.clone()))
        .await?;
    assert_eq!(
        rec.counts,
        DiffCounts {
            breaking: 1,
            warning: 2,
            info: 1,
            changes: 4
        }
    );
    assert_eq!(rec.health, Health::Breaking);
    assert_eq!(rec.check.diff_id, Some(d.id));
    assert_eq!(rec.check.error_kind.as_deref(), Some("timeout"));
    assert_eq!(
        store.get_check(a.id, failing.id).await?,
        Some(rec.check.clone())
    );
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        (got.breaking_count, got.warning_count, got.health),
        (1, 2, Health::Breaking)
    );
    assert_eq!(
        (got.last_checked_at, got.response_time),
        (Some(at(200)), None)
    );

    // A check that keeps its response for D12 promotion.
    let kept = NewCheck {
        scheduled: false,
        content_type: Some("application/json".into()),
        headers: Some(json!({"etag": "\"y\""})),
        sealed_body: Some(b"sealed-check-body".to_vec()),
        ..check(e.id, at(250))
    };
    let d2 = diff(
        Some(base.id),
        vec![change("$.k", Severity::Breaking)],
        at(250),
    );
    let d2_id = d2.id;
    let rec2 = store.record_check(a.id, kept.clone(), Some(d2)).await?;
    assert_eq!(rec2.check.sealed_body, kept.sealed_body);
    assert_eq!(rec2.check.headers, kept.headers);
    assert_eq!(rec2.check.content_type, kept.content_type);
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        (got.breaking_count, got.warning_count, got.health),
        (1, 0, Health::Breaking)
    );
    assert_eq!(
        (got.last_checked_at, got.response_time),
        (Some(at(250)), Some(40))
    );

    let detail = store
        .get_diff(a.id, d.id)
        .await?
        .ok_or_else(|| fail("diff missing"))?;
    assert_eq!(detail.changes, changes);
    assert_eq!(detail.base.endpoint_id, Some(e.id));
    assert_eq!(detail.base.endpoint_name.as_deref(), Some("e"));
    assert_eq!(detail.base.created_at, Some(at(200)));
    assert!(!detail.base.accepted);
    assert_eq!(
        (detail.base.breaking_count, detail.base.warning_count),
        (1, 2)
    );
    assert_eq!((detail.base.info_count, detail.base.change_count), (1, 4));
    assert_eq!(
        (detail.baseline_id, detail.check_id),
        (Some(base.id), Some(failing.id))
    );
    assert_eq!(detail.summary, d.summary);
    let wire = serde_json::to_value(&detail.changes)?;
    assert_eq!(wire[0].get("oldValue"), None);
    assert_eq!(wire[0].get("newValue"), Some(&serde_json::Value::Null));
    assert_eq!(
        store.latest_diff(a.id, e.id).await?.map(|d| d.base.id),
        Some(d2_id)
    );
    assert_eq!(store.get_diff(a.id, d.id).await?, Some(detail));

    // Warnings only → warning.
    let w = diff(None, vec![change("$.x", Severity::Warning)], at(300));
    let rec = store
        .record_check(a.id, check(e.id, at(300)), Some(w.clone()))
        .await?;
    assert_eq!(rec.health, Health::Warning);
    assert_eq!(
        store.latest_diff(a.id, e.id).await?.map(|d| d.base.id),
        Some(w.id)
    );

    // Isolation: no reads across, no writes on another workspace's endpoint or baseline.
    assert_eq!(store.get_diff(b.id, d.id).await?, None);
    assert_eq!(store.latest_diff(b.id, e.id).await?, None);
    assert_eq!(store.get_check(b.id, failing.id).await?, None);
    assert!(is_not_found(
        &store.record_check(b.id, check(e.id, at(400)), None).await
    ));
    let foreign = diff(
        Some(base_b.id),
        vec![change("$.y", Severity::Info)],
        at(400),
    );
    assert!(is_not_found(
        &store
            .record_check(a.id, check(e.id, at(400)), Some(foreign))
            .await
    ));
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        (got.health, got.last_checked_at),
        (Health::Warning, Some(at(300)))
    );
    assert_eq!(
        store
            .get_endpoint(b.id, eb.id)
            .await?
            .map(|e| e.last_checked_at),
        Some(None)
    );
    Ok(())
}

/// (diff id, endpoint id, created at, has a breaking change) of a diff made by `list_diffs`.
type Made = (Uuid, Uuid, OffsetDateTime, bool);

/// Diff lists: filters (endpoint, since inclusive, breaking only), ties, totals, isolation.
pub async fn list_diffs(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e1 = one_endpoint(&*store, a.id, "one").await?;
    let e2 = one_endpoint(&*store, a.id, "two").await?;
    let eb = one_endpoint(&*store, b.id, "noise").await?;
    let mut made = Vec::new(); // (id, endpoint, created_at, breaking)
    for i in 0..10i64 {
        let endpoint = if i % 2 == 0 { e1.id } else { e2.id };
        let created = if (4..7).contains(&i) { at(4) } else { at(i) };
        let breaking = i % 3 == 0;
        let sev = if breaking {
            Severity::Breaking
        } else {
            Severity::Info
        };
        let d = diff(None, vec![change("$.v", sev)], created);
        store
            .record_check(a.id, check(endpoint, created), Some(d.clone()))
            .await?;
        made.push((d.id, endpoint, created, breaking));
    }
    store
        .record_check(
            b.id,
            check(eb.id, at(5)),
            Some(diff(None, vec![change("$.z", Severity::Breaking)], at(5))),
        )
        .await?;
    let order = |pred: &dyn Fn(&Made) -> bool| {
        let mut v: Vec<_> = made.iter().filter(|m| pred(m)).cloned().collect();
        v.sort_by(|x, y| y.2.cmp(&x.2).then(y.0.cmp(&x.0)));
        v.into_iter().map(|m| m.0).collect::<Vec<_>>()
    };
    let list = |page: &Page<DiffSummary>| page.items.iter().map(|d| d.id).collect::<Vec<_>>();
    let all = PageRequest {
        limit: 100,
        offset: 0,
    };

    let page = store.list_diffs(a.id, &DiffFilter::default(), all).await?;
    assert_eq!((page.total, list(&page)), (10, order(&|_| true)));
    let first = page.items.first().ok_or_else(|| fail("empty"))?;
    assert!(first.endpoint_name.is_some() && first.created_at.is_some());
    assert_eq!(first.change_count, 1);

    let f = DiffFilter {
        endpoint_id: Some(e1.id),
        ..Default::default()
    };
    let page = store.list_diffs(a.id, &f, all).await?;
    assert_eq!((page.total, list(&page)), (5, order(&|m| m.1 == e1.id)));
    assert!(
        page.items
            .iter()
            .all(|d| d.endpoint_name.as_deref() == Some("one"))
    );

    let f = DiffFilter {
        since: Some(at(4)),
        ..Default::default()
    };
    let page = store.list_diffs(a.id, &f, all).await?;
    assert_eq!((page.total, list(&page)), (6, order(&|m| m.2 >= at(4))));

    let f = DiffFilter {
        breaking_only: true,
        ..Default::default()
    };
    let page = store.list_diffs(a.id, &f, all).await?;
    assert_eq!((page.total, list(&page)), (4, order(&|m| m.3)));
    assert!(page.items.iter().all(|d| d.breaking_count > 0));
    // A full page takes its total from the workspace counters: they must agree with the rows.
    let page = store
        .list_diffs(
            a.id,
            &f,
            PageRequest {
                limit: 2,
                offset: 0,
            },
        )
        .await?;
    assert_eq!((page.total, page.items.len()), (4, 2));
    let page = store
        .list_diffs(
            a.id,
            &f,
            PageRequest {
                limit: 2,
                offset: 2,
            },
        )
        .await?;
    assert_eq!(
        (page.total, list(&page)),
        (4, order(&|m| m.3)[2..].to_vec())
    );

    let f = DiffFilter {
        endpoint_id: Some(e2.id),
        since: Some(at(4)),
        breaking_only: true,
    };
    let page = store.list_diffs(a.id, &f, all).await?;
    assert_eq!(list(&page), order(&|m| m.1 == e2.id && m.2 >= at(4) && m.3));

    // Pagination: a walk of pages of 3 equals the full order; totals ignore pagination.
    let mut walked = Vec::new();
    for offset in (0..12).step_by(3) {
        let page = store
            .list_diffs(
                a.id,
                &DiffFilter::default(),
                PageRequest { limit: 3, offset },
            )
            .await?;
        assert_eq!(page.total, 10);
        walked.extend(list(&page));
    }
    assert_eq!(walked, order(&|_| true));

    // Isolation: b's diffs and a's endpoint id from b.
    let page = store.list_diffs(b.id, &DiffFilter::default(), all).await?;
    assert_eq!(page.total, 1);
    let f = DiffFilter {
        endpoint_id: Some(e1.id),
        ..Default::default()
    };
    let page = store.list_diffs(b.id, &f, all).await?;
    assert_eq!((page.total, page.items.len()), (0, 0));
    Ok(())
}

/// Accepting a diff: sets accepted, records the baseline, resets health only for the latest.
pub async fn accept_diffs(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "e").await?;
    store
        .record_baseline(a.id, baseline(e.id, at(1)), Some(Health::Healthy))
        .await?;
    let old = diff(None, vec![change("$.a", Severity::Breaking)], at(10));
    let new = diff(None, vec![change("$.b", Severity::Breaking)], at(20));
    store
        .record_check(a.id, check(e.id, at(10)), Some(old.clone()))
        .await?;
    store
        .record_check(a.id, check(e.id, at(20)), Some(new.clone()))
        .await?;

    // Isolation first: b cannot accept a's diff.
    assert!(is_not_found(
        &store.accept_diff(b.id, new.id, None, at(25)).await
    ));
    assert!(is_not_found(
        &store.accept_diff(a.id, new_id(), None, at(25)).await
    ));

    // The older diff: accepted, a baseline recorded, health untouched.
    let out = store
        .accept_diff(a.id, old.id, Some(baseline(e.id, at(30))), at(30))
        .await?;
    assert!(out.newly_accepted && !out.health_reset);
    assert_eq!(out.baseline.as_ref().map(|b| b.version), Some(2));
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        (got.health, got.baseline_version),
        (Health::Breaking, Some(2))
    );
    // The latest check's figures stay current: an older diff was accepted.
    assert_eq!((got.breaking_count, got.warning_count), (1, 0));

    // The latest diff: health healthy.
    let out = store
        .accept_diff(a.id, new.id, Some(baseline(e.id, at(40))), at(40))
        .await?;
    assert!(out.newly_accepted && out.health_reset);
    let got = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        (got.health, got.baseline_version),
        (Health::Healthy, Some(3))
    );
    // The accepted response is the baseline: nothing drifts from it any more.
    assert_eq!((got.breaking_count, got.warning_count), (0, 0));
    assert_eq!(
        store.get_diff(a.id, new.id).await?.map(|d| d.base.accepted),
        Some(true)
    );

    // Idempotent: nothing changes, no baseline is recorded.
    let again = store
        .accept_diff(a.id, new.id, Some(baseline(e.id, at(50))), at(50))
        .await?;
    assert_eq!(
        again,
        AcceptOutcome {
            newly_accepted: false,
            baseline: None,
            health_reset: false
        }
    );
    assert_eq!(
        store.active_baseline(a.id, e.id).await?.map(|b| b.version),
        Some(3)
    );
    let page = store
        .list_diffs(a.id, &DiffFilter::default(), PageRequest::default())
        .await?;
    assert!(page.items.iter().all(|d| d.accepted));
    Ok(())
}

// ============================================================================ key rotation

/// The rewrap iteration visits every sealed value once, in batches; the swap is compare-and-set.
pub async fn sealed_values_rewrap(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let mut rows = Vec::new();
    for i in 0..3 {
        rows.push(endpoint_row(&format!("s{i}"), at(i)));
    }
    rows.push(plain_endpoint("plain", at(9)));
    store.create_endpoints(a.id, rows.clone()).await?;
    let eb = one_endpoint(&*store, b.id, "eb").await?;
    let bl = store
        .record_baseline(b.id, baseline(eb.id, at(1)), None)
        .await?;
    let kept = NewCheck {
        scheduled: false,
        sealed_body: Some(b"sealed-check".to_vec()),
        ..check(eb.id, at(2))
    };
    store
        .record_check(
            b.id,
            kept.clone(),
            Some(diff(None, vec![change("$.q", Severity::Info)], at(2))),
        )
        .await?;
    store.record_check(b.id, check(eb.id, at(3)), None).await?;
    // Webhook secrets: three in a, one in b, like the endpoint credentials.
    for (i, ws) in [a.id, a.id, a.id, b.id].into_iter().enumerate() {
        store
            .create_webhook(NewWebhook {
                kind: crate::WebhookKind::Generic,
                id: Uuid::now_v7(),
                workspace_id: ws,
                url: format!("https://hooks.example.com/{i}"),
                min_severity: Severity::Warning,
                sealed_secret: format!("sealed-secret-{i}").into_bytes(),
                created_at: at(i64::try_from(i).unwrap_or_default()),
            })
            .await?;
    }

    for field in SealedField::ALL {
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let batch = store.sealed_values(*field, after, 2).await?;
            assert!(batch.len() <= 2);
            let Some(last) = batch.last() else { break };
            after = Some(last.row_id);
            seen.extend(batch);
        }
        let expected = match field {
            SealedField::BaselineBody | SealedField::CheckBody => 1,
            _ => 4, // three sealed rows in a, one in b; the plain endpoint has none
        };
        assert_eq!(seen.len(), expected, "{}", field.column());
        let mut sorted: Vec<Uuid> = seen.iter().map(|s| s.row_id).collect();
        sorted.sort();
        assert_eq!(sorted, seen.iter().map(|s| s.row_id).collect::<Vec<_>>());
        assert!(seen.iter().all(|s| s.field == *field && !s.blob.is_empty()));
    }
    assert_eq!(
        store
            .sealed_values(SealedField::BaselineBody, None, 10)
            .await?
            .first()
            .map(|s| (s.workspace_id, s.row_id)),
        Some((b.id, bl.id))
    );

    // Compare-and-swap.
    let target = &rows[0];
    let old = target.secrets.sealed_auth.clone().unwrap_or_default();
    assert!(
        !store
            .replace_sealed_value(SealedField::EndpointAuth, b.id, target.id, &old, b"x")
            .await?
    );
    assert!(
        store
            .replace_sealed_value(
                SealedField::EndpointAuth,
                a.id,
                target.id,
                &old,
                b"rewrapped"
            )
            .await?
    );
    assert!(
        !store
            .replace_sealed_value(SealedField::EndpointAuth, a.id, target.id, &old, b"again")
            .await?
    );
    let got = store
        .get_endpoint(a.id, target.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        got.secrets.sealed_auth.as_deref(),
        Some(b"rewrapped".as_slice())
    );
    assert_eq!(got.secrets.sealed_headers, target.secrets.sealed_headers);
    let hold = target.secrets.sealed_headers.clone().unwrap_or_default();
    assert!(
        store
            .replace_sealed_value(SealedField::EndpointHeaders, a.id, target.id, &hold, b"h2")
            .await?
    );
    assert!(
        store
            .replace_sealed_value(
                SealedField::BaselineBody,
                b.id,
                bl.id,
                &bl.sealed_body,
                b"b2"
            )
            .await?
    );
    assert_eq!(
        store
            .active_baseline(b.id, eb.id)
            .await?
            .map(|x| x.sealed_body),
        Some(b"b2".to_vec())
    );
    assert!(
        !store
            .replace_sealed_value(SealedField::BaselineBody, a.id, bl.id, b"b2", b"b3")
            .await?
    );
    assert!(
        store
            .replace_sealed_value(
                SealedField::CheckBody,
                b.id,
                kept.id,
                b"sealed-check",
                b"c2"
            )
            .await?
    );
    assert_eq!(
        store
            .get_check(b.id, kept.id)
            .await?
            .and_then(|c| c.sealed_body),
        Some(b"c2".to_vec())
    );
    let rb = target
        .secrets
        .sealed_request_body
        .clone()
        .unwrap_or_default();
    assert!(
        store
            .replace_sealed_value(
                SealedField::EndpointRequestBody,
                a.id,
                target.id,
                &rb,
                b"r2"
            )
            .await?
    );
    let got = store
        .get_endpoint(a.id, target.id)
        .await?
        .ok_or_else(|| fail("missing"))?;
    assert_eq!(
        got.secrets.sealed_request_body.as_deref(),
        Some(b"r2".as_slice())
    );
    Ok(())
}

// ============================================================================ concurrency

/// Concurrent writers all succeed (no "database is locked"), and the quota stays exact.
pub async fn concurrent_writers(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "busy", None, Some(30)).await?;
    let e = one_endpoint(&*store, ws.id, "e").await?;
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..4i64 {
        let store = store.clone();
        tasks.spawn(async move {
            let mut consumed = 0u32;
            for i in 0..12i64 {
                let t = at(w * 1_000 + i);
                store
                    .create_endpoints(ws.id, vec![plain_endpoint(&format!("w{w}-{i}"), t)])
                    .await?;
                let d = diff(None, vec![change("$.a", Severity::Warning)], t);
                store.record_check(ws.id, check(e.id, t), Some(d)).await?;
                if let QuotaOutcome::Consumed { .. } = store.consume_check_unit(ws.id, t).await? {
                    consumed += 1;
                }
            }
            Ok::<u32, StoreError>(consumed)
        });
    }
    let mut consumed = 0;
    while let Some(joined) = tasks.join_next().await {
        consumed += joined??;
    }
    assert_eq!(consumed, 30, "exactly the quota is consumed");
    assert_eq!(store.check_usage(ws.id, at(0)).await?, 30);
    assert_eq!(store.count_endpoints(ws.id).await?, 1 + 4 * 12);
    let page = store
        .list_diffs(ws.id, &DiffFilter::default(), PageRequest::default())
        .await?;
    assert_eq!(page.total, 48);
    // Baseline versions stay unique under concurrent captures.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..6 {
        let store = store.clone();
        tasks.spawn(async move {
            store
                .record_baseline(ws.id, baseline(e.id, at(i)), None)
                .await
        });
    }
    let mut versions = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        versions.push(joined??.version);
    }
    versions.sort();
    assert_eq!(versions, vec![1, 2, 3, 4, 5, 6]);
    Ok(())
}

// ============================================================================ raw-dump canary

/// Seals a value for the canary test the way the service does: (plaintext, workspace, row,
/// field) → opaque blob. Adapter tests pass `apidrift-seal`'s key ring.
pub type Sealer<'a> = &'a (dyn Fn(&[u8], Uuid, Uuid, SealedField) -> Vec<u8> + Sync);

/// Clear secrets that must never appear in a raw dump of the database.
#[derive(Debug, Clone)]
pub struct Canary {
    /// A token's text; the store gets its hash and 4-character hint only.
    pub token_text: String,
    pub credential: String,
    pub header_value: String,
    pub request_body: String,
    pub response_body: String,
}

impl Default for Canary {
    fn default() -> Self {
        Self::new()
    }
}

impl Canary {
    /// Fresh canary values (unique per call).
    pub fn new() -> Self {
        let tag = new_id().simple().to_string();
        Canary {
            token_text: format!("svc_live_CanaryTokenRandomPart{tag}"),
            credential: format!("canary-bearer-credential-{tag}"),
            header_value: format!("canary-header-value-{tag}"),
            request_body: format!("{{\"canaryRequest\":\"{tag}\"}}"),
            response_body: format!("{{\"canaryResponse\":\"{tag}\"}}"),
        }
    }

    /// Writes a workspace, a token, an endpoint with every sealed field, a baseline and a
    /// check with a kept body, as the service would (sealing first, hashing the token). Returns
    /// the token hash, which a dump must contain (proof the dump reads the data).
    pub async fn write(
        &self,
        store: &dyn Store,
        seal: Sealer<'_>,
        hash: &(dyn Fn(&str) -> String + Sync),
    ) -> Result<String, StoreError> {
        let ws = workspace(store, "canary", None, None).await?;
        let token_hash = hash(&self.token_text);
        let hint: String = self
            .token_text
            .chars()
            .rev()
            .take(4)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        store
            .create_token(NewToken {
                token_hash: token_hash.clone(),
                hint,
                ..new_token(ws.id, 'x', t0())
            })
            .await?;
        let mut row = plain_endpoint("canary", t0());
        row.secrets.auth_type = AuthType::Bearer;
        let auth = json!({"type": "bearer", "token": self.credential}).to_string();
        row.secrets.sealed_auth = Some(seal(
            auth.as_bytes(),
            ws.id,
            row.id,
            SealedField::EndpointAuth,
        ));
        let headers = json!([{"name": "X-Canary", "value": self.header_value}]).to_string();
        row.secrets.sealed_headers = Some(seal(
            headers.as_bytes(),
            ws.id,
            row.id,
            SealedField::EndpointHeaders,
        ));
        row.secrets.sealed_request_body = Some(seal(
            self.request_body.as_bytes(),
            ws.id,
            row.id,
            SealedField::EndpointRequestBody,
        ));
        let endpoint = row.id;
        store.create_endpoints(ws.id, vec![row]).await?;
        let mut b = baseline(endpoint, t0());
        b.sealed_body = seal(
            self.response_body.as_bytes(),
            ws.id,
            b.id,
            SealedField::BaselineBody,
        );
        let b = store
            .record_baseline(ws.id, b, Some(Health::Healthy))
            .await?;
        let mut c = check(endpoint, at(10));
        c.sealed_body = Some(seal(
            self.response_body.as_bytes(),
            ws.id,
            c.id,
            SealedField::CheckBody,
        ));
        store
            .record_check(
                ws.id,
                c,
                Some(diff(
                    Some(b.id),
                    vec![change("$.v", Severity::Info)],
                    at(10),
                )),
            )
            .await?;
        Ok(token_hash)
    }

    /// Asserts what a raw dump may and may not contain; `contains` searches the dump.
    pub fn assert_dump(&self, token_hash: &str, contains: impl Fn(&[u8]) -> bool) -> TestResult {
        if !contains(token_hash.as_bytes()) {
            return Err(fail(
                "the dump does not contain the token hash: it did not read the data",
            ));
        }
        let random_part = self.token_text.trim_start_matches("svc_live_");
        for (what, secret) in [
            ("token text", self.token_text.as_str()),
            ("token random part", random_part),
            ("credential", self.credential.as_str()),
            ("extra header value", self.header_value.as_str()),
            ("request body", self.request_body.as_str()),
            ("response body", self.response_body.as_str()),
        ] {
            if contains(secret.as_bytes()) {
                return Err(fail(format!("the raw dump contains the clear {what}")));
            }
        }
        Ok(())
    }
}

/// Shared rate-limit state (D17): a read never writes, the swap is a compare-and-swap of which
/// exactly one of several concurrent writers from the same value wins, and a give-back moves the
/// TAT back. Adapters without shared state answer `None` and write nothing.
pub async fn rate_limit_state(store: Arc<dyn Store>) -> TestResult {
    let key = "00000000-0000-0000-0000-000000000001:reads";
    let Some(first) = store.rate_limit_read(key).await? else {
        // In-process limits (SQLite): nothing is stored.
        store.rate_limit_give_back(key, 5).await?;
        assert!(!store.rate_limit_swap(key, None, 1).await?);
        assert_eq!(store.rate_limit_read(key).await?, None);
        return Ok(());
    };
    assert_eq!(first.tat, None, "a fresh key has no row");
    let wall = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos(),
    )?;
    assert!(
        (first.now_nanos - wall).abs() < 60_000_000_000,
        "the database clock is in nanoseconds since the epoch"
    );
    // Giving back to a missing key leaves it missing.
    store.rate_limit_give_back(key, 5).await?;
    assert_eq!(store.rate_limit_read(key).await?.and_then(|r| r.tat), None);
    let x = first.now_nanos + 1_000;
    assert!(
        store.rate_limit_swap(key, None, x).await?,
        "insert when absent"
    );
    assert!(
        !store.rate_limit_swap(key, None, x + 1).await?,
        "absent no more"
    );
    assert!(
        !store.rate_limit_swap(key, Some(x - 1), x + 2).await?,
        "stale old value"
    );
    let again = store.rate_limit_read(key).await?.ok_or("row vanished")?;
    assert_eq!(again.tat, Some(x));
    assert!(again.now_nanos >= first.now_nanos);
    assert!(store.rate_limit_swap(key, Some(x), x + 500).await?);
    store.rate_limit_give_back(key, 200).await?;
    let tat = store.rate_limit_read(key).await?.and_then(|r| r.tat);
    assert_eq!(tat, Some(x + 300));
    // Keys are independent.
    let other = "00000000-0000-0000-0000-000000000002:reads";
    assert_eq!(
        store.rate_limit_read(other).await?.and_then(|r| r.tat),
        None
    );
    // Eight concurrent swaps from the same value: exactly one writes.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8i64 {
        let store = store.clone();
        tasks.spawn(async move {
            store
                .rate_limit_swap(key, Some(x + 300), x + 1_000 + i)
                .await
        });
    }
    let mut won = Vec::new();
    let mut i = 0i64;
    while let Some(joined) = tasks.join_next().await {
        if joined?? {
            won.push(i);
        }
        i += 1;
    }
    assert_eq!(won.len(), 1, "exactly one concurrent swap wins");
    let tat = store
        .rate_limit_read(key)
        .await?
        .and_then(|r| r.tat)
        .ok_or("row vanished")?;
    assert!((x + 1_000..x + 1_008).contains(&tat));
    Ok(())
}

/// Expands one `#[tokio::test]` per conformance case.
///
/// `setup` is an async fn returning
/// `Result<Option<(Arc<dyn Store>, G)>, Box<dyn Error + Send + Sync>>` (`None` skips the case);
/// `teardown` is an async fn taking `G` and returning the same error type. The test crate needs
/// `tokio` with the `macros` and `rt-multi-thread` features.
#[macro_export]
macro_rules! conformance_suite {
    (setup = $setup:path, teardown = $teardown:path $(,)?) => {
        $crate::alert_conformance_cases!($setup, $teardown);
        $crate::text_conformance_cases!($setup, $teardown);
        $crate::lifecycle_conformance_cases!($setup, $teardown);
        $crate::apply_conformance_cases!($setup, $teardown);
        $crate::contract_conformance_cases!($setup, $teardown);
        $crate::incident_conformance_cases!($setup, $teardown);
        $crate::conformance_suite!(@cases $setup, $teardown;
            migrate_is_idempotent,
            workspaces_round_trip,
            check_quota,
            check_quota_changes,
            tokens_lifecycle,
            endpoint_round_trip,
            bulk_create,
            list_endpoints,
            endpoint_setters,
            baselines,
            record_checks,
            check_context,
            list_diffs,
            accept_diffs,
            sealed_values_rewrap,
            concurrent_writers,
            rate_limit_state,
        );
    };
    (@cases $setup:path, $teardown:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() -> $crate::testkit::TestResult {
                let Some((store, guard)) = $setup().await? else {
                    return Ok(());
                };
                let result = $crate::testkit::$case(store).await;
                $teardown(guard).await?;
                result
            }
        )*
    };
}
