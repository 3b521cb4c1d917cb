//! The [`LifecycleStore`] cases of the conformance suite (feature `testkit`): changing and
//! deleting an endpoint (D19), the check history, a webhook's deliveries, the in-flight marker of
//! a run and the retention of check rows. Expanded by [`crate::conformance_suite!`] through
//! [`crate::lifecycle_conformance_cases!`]; each case checks workspace isolation too.

use crate::testkit::{TestResult, at, baseline, change, check, diff, endpoint_row, workspace};
use crate::*;
use apidrift_model::{AuthType, Cadence, Frequency, Health, Severity};
use std::sync::Arc;
use std::time::Duration as StdDuration;
use time::Duration;

fn fail(msg: impl Into<String>) -> Box<dyn std::error::Error + Send + Sync> {
    msg.into().into()
}

async fn one_endpoint(
    store: &dyn Store,
    ws: Uuid,
    name: &str,
) -> Result<StoredEndpoint, StoreError> {
    store
        .create_endpoints(ws, vec![endpoint_row(name, at(0))])
        .await?
        .created
        .pop()
        .ok_or(StoreError::NotFound)
}

fn draft(fp: &str, when: OffsetDateTime) -> AlertDraft {
    let event_id = new_id();
    AlertDraft {
        event_id,
        created_at: when,
        fingerprint: Some(fp.to_owned()),
        max_severity: Some(Severity::Breaking),
        detected_payload: format!("{{\"type\":\"{EVENT_DETECTED}\",\"id\":\"{event_id}\"}}"),
        resolved_payload: format!("{{\"type\":\"{EVENT_RESOLVED}\",\"id\":\"{event_id}\"}}"),
        latency: None,
    }
}

fn hook(ws: Uuid, n: i64) -> NewWebhook {
    NewWebhook {
        kind: crate::WebhookKind::Generic,
        id: new_id(),
        workspace_id: ws,
        url: format!("https://hooks.example.com/{n}"),
        min_severity: Severity::Info,
        sealed_secret: b"sealed-secret".to_vec(),
        created_at: at(n),
    }
}

/// PATCH's store half: every changeable field is written, figures, baseline and contract stay,
/// a changed schedule drops its schedule row, a NUL or another workspace changes nothing.
pub async fn lifecycle_update_endpoint(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "users").await?;
    store
        .record_baseline(a.id, baseline(e.id, at(1)), Some(Health::Healthy))
        .await?;
    store
        .insert_schedules(vec![NewSchedule {
            workspace_id: a.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Daily),
            next_run_at: at(5),
        }])
        .await?;
    assert!(!e.paused);
    assert_eq!(e.settings.retries, 1);

    let mut ch = EndpointChanges::of(&e);
    ch.settings.name = "renamed".into();
    ch.settings.url = "https://api.example.com/v2/users".into();
    ch.settings.description = None;
    ch.settings.tags = vec!["x".into()];
    ch.secrets.auth_type = AuthType::None;
    ch.secrets.sealed_auth = None;
    ch.settings.timeout_ms = 700;
    ch.settings.schedule = Some(Cadence::Interval(300));
    ch.settings.ignore_paths = Vec::new();
    ch.settings.identity_keys = [("$..pulls".to_owned(), "number".to_owned())].into();
    ch.settings.follow_redirects = false;
    ch.paused = true;
    ch.settings.retries = 3;
    let got = store
        .update_endpoint(a.id, e.id, ch.clone(), None, at(50))
        .await?;
    assert_eq!(EndpointChanges::of(&got), ch);
    assert_eq!(got.updated_at, at(50));
    assert_eq!(got.created_at, e.created_at);
    assert_eq!(got.baseline_version, Some(1));
    assert_eq!(got.health, Health::Healthy);
    assert_eq!(got.secrets.sealed_headers, e.secrets.sealed_headers);
    assert_eq!(store.get_endpoint(a.id, e.id).await?, Some(got.clone()));
    if store.schedule_of(a.id, e.id).await?.is_some() {
        return Err(fail("a changed schedule must drop the schedule row"));
    }
    // An interval schedule is stored and listed with its interval.
    if !store
        .unscheduled_endpoints(1000)
        .await?
        .contains(&(a.id, e.id, Cadence::Interval(300)))
    {
        return Err(fail(
            "an interval schedule must be listed with its interval",
        ));
    }

    // Same schedule: the schedule row stays.
    store
        .insert_schedules(vec![NewSchedule {
            workspace_id: a.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Hourly),
            next_run_at: at(5),
        }])
        .await?;
    let mut same = EndpointChanges::of(&got);
    same.paused = false;
    let got2 = store
        .update_endpoint(a.id, e.id, same, None, at(60))
        .await?;
    assert!(!got2.paused);
    assert!(store.schedule_of(a.id, e.id).await?.is_some());

    // A NUL in user text: refused, nothing changes.
    let mut bad = EndpointChanges::of(&got2);
    bad.settings.name = "a\0b".into();
    bad.paused = true;
    match store.update_endpoint(a.id, e.id, bad, None, at(70)).await {
        Err(StoreError::InvalidInput(_)) => {}
        other => return Err(fail(format!("NUL name: {other:?}"))),
    }
    assert_eq!(store.get_endpoint(a.id, e.id).await?, Some(got2.clone()));

    // Another workspace: not found, nothing changes.
    let mut other = EndpointChanges::of(&got2);
    other.settings.name = "stolen".into();
    match store
        .update_endpoint(b.id, e.id, other.clone(), None, at(80))
        .await
    {
        Err(StoreError::NotFound) => {}
        x => return Err(fail(format!("cross-workspace update: {x:?}"))),
    }
    match store
        .update_endpoint(a.id, new_id(), other, None, at(80))
        .await
    {
        Err(StoreError::NotFound) => {}
        x => return Err(fail(format!("missing endpoint update: {x:?}"))),
    }
    assert_eq!(store.get_endpoint(a.id, e.id).await?, Some(got2));
    Ok(())
}

/// DELETE's store half: the endpoint and everything of it go, the count drops, queued deliveries
/// are dropped, other endpoints and other workspaces are untouched.
pub async fn lifecycle_delete_endpoint(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", Some(5), None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "doomed").await?;
    let keep = one_endpoint(&*store, a.id, "kept").await?;
    store.create_webhook(hook(a.id, 1)).await?;
    let base = store
        .record_baseline(a.id, baseline(e.id, at(1)), None)
        .await?;
    store
        .record_baseline(a.id, baseline(keep.id, at(1)), None)
        .await?;
    let d = diff(
        Some(base.id),
        vec![change("$.id", Severity::Breaking)],
        at(10),
    );
    let diff_id = d.id;
    let (_, queued) = store
        .record_check_alerting(a.id, check(e.id, at(10)), Some(d), draft("fp", at(10)))
        .await?;
    assert_eq!(queued, 1);
    let kd = diff(None, vec![change("$.id", Severity::Breaking)], at(11));
    let kept_diff = kd.id;
    store
        .record_check_alerting(a.id, check(keep.id, at(11)), Some(kd), draft("fp", at(11)))
        .await?;
    store.record_check(a.id, check(e.id, at(12)), None).await?;
    store
        .insert_schedules(vec![NewSchedule {
            workspace_id: a.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Daily),
            next_run_at: at(5),
        }])
        .await?;
    assert_eq!(store.count_endpoints(a.id).await?, 2);
    assert_eq!(store.delivery_counts(a.id).await?.pending, 2);

    match store.delete_endpoint(b.id, e.id, None).await {
        Err(StoreError::NotFound) => {}
        x => return Err(fail(format!("cross-workspace delete: {x:?}"))),
    }
    assert_eq!(store.count_endpoints(a.id).await?, 2);

    store.delete_endpoint(a.id, e.id, None).await?;
    assert_eq!(store.get_endpoint(a.id, e.id).await?, None);
    assert_eq!(store.get_diff(a.id, diff_id).await?, None);
    assert_eq!(store.active_baseline(a.id, e.id).await?, None);
    assert_eq!(store.schedule_of(a.id, e.id).await?, None);
    assert_eq!(store.count_endpoints(a.id).await?, 1);
    assert_eq!(
        store
            .list_checks(a.id, e.id, PageRequest::default())
            .await?
            .total,
        0
    );
    let counts = store.delivery_counts(a.id).await?;
    assert_eq!(
        counts.pending, 1,
        "the deleted endpoint's delivery is dropped"
    );
    let page = store
        .list_diffs(a.id, &DiffFilter::default(), PageRequest::default())
        .await?;
    assert_eq!(page.total, 1);
    assert_eq!(page.items.first().map(|d| d.id), Some(kept_diff));
    assert!(store.get_endpoint(a.id, keep.id).await?.is_some());

    match store.delete_endpoint(a.id, e.id, None).await {
        Err(StoreError::NotFound) => {}
        x => return Err(fail(format!("second delete: {x:?}"))),
    }
    // The freed place can be used again.
    store
        .create_endpoints(a.id, vec![endpoint_row("again", at(20))])
        .await?;
    assert_eq!(store.count_endpoints(a.id).await?, 2);
    Ok(())
}

/// The version of an endpoint (optimistic concurrency): 1 at creation, +1 per update; checks,
/// baselines and the in-flight marker leave it; an update or delete expecting another version
/// answers `Changed` and writes nothing; another workspace is still `NotFound`.
pub async fn lifecycle_endpoint_version(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "versioned").await?;
    assert_eq!(e.version, 1, "a new endpoint starts at version 1");

    // What a check does to the row leaves the version.
    store
        .record_baseline(a.id, baseline(e.id, at(1)), Some(Health::Healthy))
        .await?;
    store
        .begin_checking(a.id, e.id, at(2), at(2) + Duration::seconds(60))
        .await?;
    store.record_check(a.id, check(e.id, at(3)), None).await?;
    store.reset_stale_checking(at(3600)).await?;
    let checked = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("the endpoint is gone"))?;
    assert_eq!(checked.version, 1, "checks must not change the version");

    // The current version: written, version + 1.
    let mut ch = EndpointChanges::of(&checked);
    ch.settings.name = "first".into();
    let v2 = store
        .update_endpoint(a.id, e.id, ch, Some(1), at(10))
        .await?;
    assert_eq!(v2.settings.name, "first");
    assert_eq!(v2.version, 2);
    assert_eq!(store.get_endpoint(a.id, e.id).await?, Some(v2.clone()));

    // A stale version: Changed, nothing written.
    let mut stale = EndpointChanges::of(&checked);
    stale.settings.timeout_ms = 1234;
    stale.paused = true;
    match store
        .update_endpoint(a.id, e.id, stale, Some(1), at(20))
        .await
    {
        Err(StoreError::Changed) => {}
        x => return Err(fail(format!("stale update: {x:?}"))),
    }
    assert_eq!(store.get_endpoint(a.id, e.id).await?, Some(v2.clone()));

    // No expected version: written, version + 1.
    let mut ch = EndpointChanges::of(&v2);
    ch.settings.timeout_ms = 4321;
    let v3 = store.update_endpoint(a.id, e.id, ch, None, at(30)).await?;
    assert_eq!(
        (
            v3.settings.name.as_str(),
            v3.settings.timeout_ms,
            v3.version
        ),
        ("first", 4321, 3)
    );

    // Another workspace (even with the right version) and a missing id stay NotFound.
    let other = EndpointChanges::of(&v3);
    match store
        .update_endpoint(b.id, e.id, other.clone(), Some(3), at(40))
        .await
    {
        Err(StoreError::NotFound) => {}
        x => return Err(fail(format!("cross-workspace versioned update: {x:?}"))),
    }
    match store.delete_endpoint(b.id, e.id, Some(3)).await {
        Err(StoreError::NotFound) => {}
        x => return Err(fail(format!("cross-workspace versioned delete: {x:?}"))),
    }
    match store
        .update_endpoint(a.id, new_id(), other, Some(1), at(40))
        .await
    {
        Err(StoreError::NotFound) => {}
        x => return Err(fail(format!("missing versioned update: {x:?}"))),
    }

    // Delete with a stale version: Changed, the row and its schedule stay.
    store
        .insert_schedules(vec![NewSchedule {
            workspace_id: a.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Daily),
            next_run_at: at(50),
        }])
        .await?;
    match store.delete_endpoint(a.id, e.id, Some(2)).await {
        Err(StoreError::Changed) => {}
        x => return Err(fail(format!("stale delete: {x:?}"))),
    }
    // Unchanged, now read with the next run of the schedule inserted above.
    let v3 = StoredEndpoint {
        next_run_at: Some(at(50)),
        ..v3
    };
    assert_eq!(store.get_endpoint(a.id, e.id).await?, Some(v3));
    assert_eq!(store.count_endpoints(a.id).await?, 1);
    assert!(
        store.schedule_of(a.id, e.id).await?.is_some(),
        "a refused delete keeps the schedule row"
    );

    // Delete with the current version: gone.
    store.delete_endpoint(a.id, e.id, Some(3)).await?;
    assert_eq!(store.get_endpoint(a.id, e.id).await?, None);
    assert_eq!(store.count_endpoints(a.id).await?, 0);
    Ok(())
}

/// The check history: newest first, paging with totals, diff counts, the scheduled flag.
pub async fn lifecycle_check_history(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "users").await?;
    let base = store
        .record_baseline(a.id, baseline(e.id, at(1)), None)
        .await?;
    let first = store.record_check(a.id, check(e.id, at(10)), None).await?;
    let d = diff(
        Some(base.id),
        vec![
            change("$.a", Severity::Breaking),
            change("$.b", Severity::Warning),
            change("$.c", Severity::Info),
        ],
        at(20),
    );
    let diff_id = d.id;
    let second = store
        .record_check(a.id, check(e.id, at(20)), Some(d))
        .await?;
    let failing = NewCheck {
        http_status: None,
        response_time: None,
        error_kind: Some("timeout".into()),
        error_message: Some("timed out".into()),
        scheduled: true,
        ..check(e.id, at(30))
    };
    let third = store.record_check(a.id, failing, None).await?;

    let page = store
        .list_checks(
            a.id,
            e.id,
            PageRequest {
                limit: 10,
                offset: 0,
            },
        )
        .await?;
    assert_eq!(page.total, 3);
    let ids: Vec<Uuid> = page.items.iter().map(|c| c.id).collect();
    assert_eq!(ids, vec![third.check.id, second.check.id, first.check.id]);
    let [t, s, f] = page.items.as_slice() else {
        return Err(fail("three rows"));
    };
    assert!(t.scheduled && !s.scheduled && !f.scheduled);
    assert_eq!(
        (t.http_status, t.response_time, t.error_kind.as_deref()),
        (None, None, Some("timeout"))
    );
    assert_eq!(t.diff_id, None);
    assert_eq!(s.diff_id, Some(diff_id));
    assert_eq!(
        (s.breaking_count, s.warning_count, s.change_count),
        (1, 1, 3)
    );
    assert_eq!(
        (f.breaking_count, f.warning_count, f.change_count),
        (0, 0, 0)
    );
    assert_eq!((f.http_status, f.response_time), (Some(200), Some(40)));
    assert_eq!(f.started_at, first.check.started_at);
    assert_eq!(f.finished_at, at(10));

    let p2 = store
        .list_checks(
            a.id,
            e.id,
            PageRequest {
                limit: 1,
                offset: 1,
            },
        )
        .await?;
    assert_eq!(p2.total, 3);
    assert_eq!(
        p2.items.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![second.check.id]
    );
    let past = store
        .list_checks(
            a.id,
            e.id,
            PageRequest {
                limit: 5,
                offset: 3,
            },
        )
        .await?;
    assert!(past.items.is_empty());
    assert_eq!(past.total, 3);

    let other = store
        .list_checks(b.id, e.id, PageRequest::default())
        .await?;
    assert_eq!((other.total, other.items.len()), (0, 0));
    Ok(())
}

/// A webhook's deliveries with their last attempt, newest first, isolated by workspace.
pub async fn lifecycle_deliveries(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "users").await?;
    let h = store.create_webhook(hook(a.id, 1)).await?;
    let d1 = draft("one", at(10));
    store
        .record_check_alerting(
            a.id,
            check(e.id, at(10)),
            Some(diff(None, vec![change("$.a", Severity::Breaking)], at(10))),
            d1.clone(),
        )
        .await?;
    let empty = store
        .list_deliveries(a.id, h.id, PageRequest::default())
        .await?;
    assert_eq!(empty.total, 1);
    let Some(first) = empty.items.first() else {
        return Err(fail("one delivery"));
    };
    assert_eq!(
        (first.state.as_str(), first.attempts, first.last_status),
        ("pending", 0, None)
    );
    assert_eq!(
        (first.event.as_str(), first.endpoint_id, first.webhook_id),
        (EVENT_DETECTED, e.id, h.id)
    );
    assert_eq!(first.payload, d1.detected_payload);
    assert_eq!(first.last_attempt_at, None);

    let claimed = store
        .claim_deliveries("w", at(20), StdDuration::from_secs(60), 10)
        .await?;
    let Some(c) = claimed.first() else {
        return Err(fail("claimed one"));
    };
    store
        .finish_delivery(
            c.id,
            "w",
            DeliveryAttempt {
                id: new_id(),
                attempted_at: at(21),
                http_status: Some(500),
                error: Some("HTTP 500".into()),
                duration_ms: 5,
            },
            DeliveryOutcome::Retry(at(21) + Duration::seconds(30)),
        )
        .await?;
    // A second event (resolved) on the same channel: newest first.
    store
        .record_check_alerting(
            a.id,
            check(e.id, at(40)),
            None,
            AlertDraft {
                fingerprint: None,
                max_severity: None,
                ..draft("x", at(40))
            },
        )
        .await?;
    let page = store
        .list_deliveries(a.id, h.id, PageRequest::default())
        .await?;
    assert_eq!(page.total, 2);
    let [newest, older] = page.items.as_slice() else {
        return Err(fail("two deliveries"));
    };
    assert_eq!(newest.event, EVENT_RESOLVED);
    assert_eq!(older.id, first.id);
    assert_eq!(
        (older.state.as_str(), older.attempts, older.last_status),
        ("pending", 1, Some(500))
    );
    assert_eq!(older.last_error.as_deref(), Some("HTTP 500"));
    assert_eq!(older.last_attempt_at, Some(at(21)));
    let paged = store
        .list_deliveries(
            a.id,
            h.id,
            PageRequest {
                limit: 1,
                offset: 1,
            },
        )
        .await?;
    assert_eq!(
        paged.items.iter().map(|d| d.id).collect::<Vec<_>>(),
        vec![first.id]
    );

    let other = store
        .list_deliveries(b.id, h.id, PageRequest::default())
        .await?;
    assert_eq!((other.total, other.items.len()), (0, 0));
    Ok(())
}

/// The in-flight marker: `checking` until its deadline, then the health before it comes back.
pub async fn lifecycle_checking_marker(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "users").await?;
    let never = one_endpoint(&*store, a.id, "never").await?;
    store.set_health(a.id, e.id, Health::Warning, at(1)).await?;
    store.begin_checking(a.id, e.id, at(10), at(1_000)).await?;
    // A second mark (a capture right after) keeps the first health.
    store.begin_checking(a.id, e.id, at(20), at(2_000)).await?;
    assert_eq!(
        store.get_endpoint(a.id, e.id).await?.map(|x| x.health),
        Some(Health::Checking)
    );
    match store.begin_checking(b.id, e.id, at(10), at(1_000)).await {
        Err(StoreError::NotFound) => {}
        x => return Err(fail(format!("cross-workspace mark: {x:?}"))),
    }
    // Not yet past the deadline: stays.
    assert_eq!(store.reset_stale_checking(at(1_500)).await?, 0);
    assert_eq!(
        store.get_endpoint(a.id, e.id).await?.map(|x| x.health),
        Some(Health::Checking)
    );
    assert_eq!(store.reset_stale_checking(at(2_001)).await?, 1);
    assert_eq!(
        store.get_endpoint(a.id, e.id).await?.map(|x| x.health),
        Some(Health::Warning)
    );
    assert_eq!(
        store.get_endpoint(a.id, never.id).await?.map(|x| x.health),
        Some(Health::Unknown)
    );
    assert_eq!(store.reset_stale_checking(at(3_000)).await?, 0);

    // A run that finishes normally is not touched by a later reset.
    store
        .begin_checking(a.id, e.id, at(3_000), at(4_000))
        .await?;
    store
        .record_check(a.id, check(e.id, at(3_100)), None)
        .await?;
    assert_eq!(store.reset_stale_checking(at(9_000)).await?, 0);
    assert_eq!(
        store.get_endpoint(a.id, e.id).await?.map(|x| x.health),
        Some(Health::Healthy)
    );
    Ok(())
}

/// Retention: old checks without a diff go; checks with a diff and recent ones stay.
pub async fn lifecycle_prune_checks(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let e = one_endpoint(&*store, a.id, "users").await?;
    let base = store
        .record_baseline(a.id, baseline(e.id, at(1)), None)
        .await?;
    let old_plain = NewCheck {
        sealed_body: Some(b"sealed".to_vec()),
        ..check(e.id, at(10))
    };
    let old_plain = store.record_check(a.id, old_plain, None).await?;
    let old_plain2 = store.record_check(a.id, check(e.id, at(11)), None).await?;
    let d = diff(
        Some(base.id),
        vec![change("$.a", Severity::Warning)],
        at(12),
    );
    let old_diff = store
        .record_check(a.id, check(e.id, at(12)), Some(d))
        .await?;
    let recent = store
        .record_check(a.id, check(e.id, at(5_000)), None)
        .await?;

    assert_eq!(
        store.prune_checks(at(1_000), 1).await?,
        1,
        "the limit bounds a batch"
    );
    assert_eq!(store.prune_checks(at(1_000), 100).await?, 1);
    assert_eq!(store.prune_checks(at(1_000), 100).await?, 0);
    assert_eq!(store.get_check(a.id, old_plain.check.id).await?, None);
    assert_eq!(store.get_check(a.id, old_plain2.check.id).await?, None);
    assert!(store.get_check(a.id, old_diff.check.id).await?.is_some());
    assert!(store.get_check(a.id, recent.check.id).await?.is_some());
    let page = store
        .list_checks(a.id, e.id, PageRequest::default())
        .await?;
    assert_eq!(page.total, 2);
    Ok(())
}

/// A check of `e` started at `when` with `status` (`None`: no response) and `ms`.
fn timed_check(e: Uuid, when: OffsetDateTime, status: Option<u16>, ms: Option<u32>) -> NewCheck {
    NewCheck {
        started_at: when,
        finished_at: when + Duration::milliseconds(i64::from(ms.unwrap_or(5))),
        http_status: status,
        response_time: ms,
        error_kind: status.is_none().then(|| "connect".to_owned()),
        ..check(e, when)
    }
}

/// D26: the uptime counts of a page of endpoints, per window (24 h, 7 d, 30 d before `now`):
/// a check without a response or with a 5xx is down, a 4xx is up; checks older than 30 days,
/// endpoints not asked for and other workspaces are left out.
pub async fn lifecycle_uptime_counts(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "users").await?;
    let f = one_endpoint(&*store, a.id, "orders").await?;
    let quiet = one_endpoint(&*store, a.id, "quiet").await?;
    let other = one_endpoint(&*store, b.id, "theirs").await?;
    let now = at(0) + Duration::days(40);
    let hours = |h: i64| now - Duration::hours(h);
    // e: in the last day 3 up (200, 404, 302) and 1 down (503); in the week 1 more up and 1
    // down (no response); in the month 2 more up; 2 older than 30 days (ignored).
    let rows = [
        (1, Some(200)),
        (2, Some(404)),
        (3, Some(302)),
        (4, Some(503)),
        (30, Some(200)),
        (50, None),
        (24 * 10, Some(200)),
        (24 * 29, Some(201)),
        (24 * 31, None),
        (24 * 35, Some(200)),
    ];
    for (h, status) in rows {
        store
            .record_check(a.id, timed_check(e.id, hours(h), status, Some(30)), None)
            .await?;
    }
    // f: only a week-old failure.
    store
        .record_check(a.id, timed_check(f.id, hours(24 * 3), None, None), None)
        .await?;
    store
        .record_check(
            b.id,
            timed_check(other.id, hours(1), Some(200), Some(9)),
            None,
        )
        .await?;
    let mut got = store
        .uptime_counts(a.id, &[e.id, f.id, quiet.id, other.id], now)
        .await?;
    got.sort_by_key(|(id, _)| *id != e.id);
    let w = |checks, up| WindowCounts { checks, up };
    assert_eq!(
        got,
        vec![
            (
                e.id,
                UptimeCounts {
                    day: w(4, 3),
                    week: w(6, 4),
                    month: w(8, 6),
                }
            ),
            (
                f.id,
                UptimeCounts {
                    day: w(0, 0),
                    week: w(1, 0),
                    month: w(1, 0),
                }
            ),
        ]
    );
    let shares = rules::uptime(&got[0].1);
    assert_eq!(
        (shares.day, shares.week, shares.month),
        (Some(0.75), Some(4.0 / 6.0), Some(0.75))
    );
    assert_eq!(rules::uptime(&got[1].1).day, None);
    // Another workspace sees nothing of a's; an empty page asks nothing.
    assert!(store.uptime_counts(b.id, &[e.id], now).await?.is_empty());
    assert!(store.uptime_counts(a.id, &[], now).await?.is_empty());
    Ok(())
}

/// The last N response times of a page of endpoints, oldest first, `None` for a check without a
/// response; endpoints without checks and other workspaces are left out.
pub async fn lifecycle_recent_response_times(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let e = one_endpoint(&*store, a.id, "users").await?;
    let f = one_endpoint(&*store, a.id, "orders").await?;
    let quiet = one_endpoint(&*store, a.id, "quiet").await?;
    for n in 0..35_i64 {
        let ms = (n % 7 != 3).then(|| u32::try_from(100 + n).unwrap_or(0));
        let status = ms.map(|_| 200);
        store
            .record_check(a.id, timed_check(e.id, at(n * 1_000), status, ms), None)
            .await?;
    }
    store
        .record_check(a.id, timed_check(f.id, at(500), Some(200), Some(7)), None)
        .await?;
    let got = store
        .recent_response_times(a.id, &[quiet.id, f.id, e.id], 30)
        .await?;
    let of = |id: Uuid| got.iter().find(|(k, _)| *k == id).map(|(_, p)| p.clone());
    assert_eq!(got.len(), 2, "an endpoint without checks is left out");
    let points = of(e.id).ok_or_else(|| fail("e's points"))?;
    assert_eq!(points.len(), 30);
    // The 30 newest (n = 5..35), oldest first.
    let expected: Vec<ResponsePoint> = (5..35_i64)
        .map(|n| ResponsePoint {
            started_at: at(n * 1_000),
            response_time: (n % 7 != 3).then(|| u32::try_from(100 + n).unwrap_or(0)),
        })
        .collect();
    assert_eq!(points, expected);
    assert_eq!(
        of(f.id),
        Some(vec![ResponsePoint {
            started_at: at(500),
            response_time: Some(7)
        }])
    );
    assert!(
        store
            .recent_response_times(b.id, &[e.id, f.id], 30)
            .await?
            .is_empty()
    );
    Ok(())
}

/// Issue 29: a list page as the lists show it, in one store call. Its endpoints, order, total
/// and next runs are those of `list_endpoints` (every filter; a short page, a full one, an empty
/// one past the end that still knows the total), without the sealed values and the contract body
/// (only whether there is one), with the uptime counts and the last `points` response times of
/// `uptime_counts` and `recent_response_times`; another workspace's rows never show.
pub async fn lifecycle_endpoint_page(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let mut rows: Vec<NewEndpointRow> = (0..7_i64)
        .map(|n| {
            let mut r = endpoint_row(&format!("e{n}"), at(n * 10));
            if n % 2 == 1 {
                r.settings.environment = "staging".into();
            }
            r
        })
        .collect();
    rows[3].response_contract = Some(ResponseContract {
        operation: "GET /e3".into(),
        status: 200,
        schema: serde_json::json!({"type": "object", "required": ["id"]}),
        set: None,
    });
    let created = store.create_endpoints(a.id, rows).await?.created;
    let theirs = one_endpoint(&*store, b.id, "theirs").await?;
    let ids: Vec<Uuid> = created.iter().map(|e| e.id).collect();
    let now = at(0) + Duration::days(2);
    for (i, id) in ids.iter().enumerate().take(4) {
        for n in 0..(i as i64 + 1) {
            let status = (n % 2 == 0).then_some(200);
            store
                .record_check(
                    a.id,
                    timed_check(
                        *id,
                        now - Duration::hours(n * 30),
                        status,
                        Some(10 + n as u32),
                    ),
                    None,
                )
                .await?;
        }
    }
    store
        .record_check(b.id, timed_check(theirs.id, now, Some(200), Some(1)), None)
        .await?;
    store
        .set_health(a.id, ids[0], Health::Healthy, at(1))
        .await?;
    store
        .set_health(a.id, ids[2], Health::Healthy, at(1))
        .await?;
    store
        .insert_schedules(vec![NewSchedule {
            workspace_id: a.id,
            endpoint_id: ids[1],
            cadence: Cadence::Every(Frequency::Daily),
            next_run_at: at(9_000),
        }])
        .await?;
    let filters = [
        EndpointFilter::default(),
        EndpointFilter {
            health: Some(Health::Healthy),
            environment: None,
        },
        EndpointFilter {
            health: None,
            environment: Some("staging".into()),
        },
        EndpointFilter {
            health: Some(Health::Unknown),
            environment: Some("staging".into()),
        },
    ];
    let pages = [(3, 0), (3, 3), (3, 6), (10, 0), (2, 20), (3, 1)];
    for filter in &filters {
        for (limit, offset) in pages {
            let page = PageRequest { limit, offset };
            for points in [0, 2] {
                let got = store.endpoint_page(a.id, filter, page, now, points).await?;
                let want = store.list_endpoints(a.id, filter, page).await?;
                let context = format!("{filter:?} {page:?} points {points}");
                assert_eq!(got.total, want.total, "{context}");
                let got_ids: Vec<Uuid> = got.items.iter().map(|l| l.endpoint.id).collect();
                let want_ids: Vec<Uuid> = want.items.iter().map(|e| e.id).collect();
                assert_eq!(got_ids, want_ids, "{context}");
                let page_ids = want_ids.clone();
                let counts = store.uptime_counts(a.id, &page_ids, now).await?;
                let recent = store.recent_response_times(a.id, &page_ids, points).await?;
                for (listed, full) in got.items.iter().zip(&want.items) {
                    let mut expected = full.clone();
                    expected.secrets.sealed_auth = None;
                    expected.secrets.sealed_headers = None;
                    expected.secrets.sealed_request_body = None;
                    expected.response_contract = None;
                    assert_eq!(listed.endpoint, expected, "{context}");
                    assert_eq!(
                        listed.has_response_contract,
                        full.response_contract.is_some(),
                        "{context}"
                    );
                    let count = counts
                        .iter()
                        .find(|(id, _)| *id == full.id)
                        .map(|(_, c)| *c)
                        .unwrap_or_default();
                    assert_eq!(listed.uptime_counts, count, "{context}");
                    let points = recent
                        .iter()
                        .find(|(id, _)| *id == full.id)
                        .map(|(_, p)| p.clone())
                        .unwrap_or_default();
                    assert_eq!(listed.recent, points, "{context}");
                }
            }
        }
    }
    // The figures themselves, on the newest-first page: e3 has 4 checks (2 up) in the month, 1
    // in the day; the schedule row of e1 shows; e3 has a contract.
    let page = store
        .endpoint_page(
            a.id,
            &EndpointFilter::default(),
            PageRequest {
                limit: 7,
                offset: 0,
            },
            now,
            100,
        )
        .await?;
    assert_eq!(page.total, 7);
    let e3 = &page.items[3];
    assert_eq!(e3.endpoint.id, ids[3]);
    assert!(e3.has_response_contract);
    assert_eq!(e3.uptime_counts.month, WindowCounts { checks: 4, up: 2 });
    assert_eq!(e3.uptime_counts.day, WindowCounts { checks: 1, up: 1 });
    assert_eq!(e3.recent.len(), 4);
    assert!(
        e3.recent
            .windows(2)
            .all(|w| w[0].started_at <= w[1].started_at)
    );
    assert_eq!(page.items[5].endpoint.next_run_at, Some(at(9_000)));
    assert!(page.items[0].recent.is_empty() && page.items[2].recent.is_empty());
    assert_eq!(page.items[0].uptime_counts, UptimeCounts::default());
    assert_eq!(page.items[6].recent.len(), 1);
    // One page of `ws` at `now`.
    let page_of = |ws: Uuid, filter: EndpointFilter, (limit, offset): (u32, u64), points: u32| {
        let store = store.clone();
        async move {
            let page = PageRequest { limit, offset };
            store.endpoint_page(ws, &filter, page, now, points).await
        }
    };
    // Another workspace: its own row only.
    let theirs_page = page_of(b.id, EndpointFilter::default(), (10, 0), 5).await?;
    assert_eq!(theirs_page.total, 1);
    assert_eq!(theirs_page.items[0].endpoint.id, theirs.id);
    assert_eq!(theirs_page.items[0].recent.len(), 1);
    // An empty workspace, and an empty page past the end that still knows the total.
    let c = workspace(&*store, "c", None, None).await?;
    let empty = page_of(c.id, EndpointFilter::default(), (10, 0), 5).await?;
    assert_eq!((empty.items.len(), empty.total), (0, 0));
    let past = page_of(a.id, filters[2].clone(), (2, 50), 5).await?;
    assert_eq!((past.items.len(), past.total), (0, 3));
    // A page is at most ENDPOINT_PAGE_ROWS rows, whatever the limit asked.
    let many: Vec<NewEndpointRow> = (0..105_i64)
        .map(|n| endpoint_row(&format!("m{n}"), at(1_000 + n)))
        .collect();
    store.create_endpoints(b.id, many).await?;
    for (offset, rows) in [(0, crate::ENDPOINT_PAGE_ROWS as usize), (100, 6)] {
        let got = page_of(b.id, EndpointFilter::default(), (500, offset), 0).await?;
        assert_eq!((got.items.len(), got.total), (rows, 106), "offset {offset}");
    }
    Ok(())
}

/// D26 through the check's transaction: the latency episode is kept in the alert state between
/// checks (the streak, who was told), `latency.slow` is queued once at the `slowAfter`-th slow
/// check and `latency.resolved` at the first fast one, beside the drift bookkeeping.
pub async fn lifecycle_slow_episode(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let e = one_endpoint(&*store, a.id, "users").await?;
    let h = store.create_webhook(hook(a.id, 1)).await?;
    let run = |n: i64, ms: Option<u32>| {
        let store = store.clone();
        async move {
            let when = at(100 + n * 100);
            let mut d = draft("", when);
            d.fingerprint = None;
            d.max_severity = None;
            d.latency = Some(LatencyDraft {
                event_id: new_id(),
                response_time: ms,
                max_response_time_ms: Some(500),
                slow_after: 3,
                slow_payload: format!("{{\"type\":\"{EVENT_SLOW}\",\"n\":{n}}}"),
                fast_payload: format!("{{\"type\":\"{EVENT_FAST}\",\"n\":{n}}}"),
            });
            let status = ms.map(|_| 200);
            store
                .record_check_alerting(a.id, timed_check(e.id, when, status, ms), None, d)
                .await
                .map(|(_, queued)| queued)
        }
    };
    let mut queued = Vec::new();
    for (n, ms) in [
        (1, Some(900)),
        (2, Some(900)),
        (3, None),
        (4, Some(900)),
        (5, Some(950)),
        (6, Some(100)),
        (7, Some(100)),
    ] {
        queued.push(run(n, ms).await?);
    }
    // The third slow check (n = 4; the failure in between neither counts nor resolves) alerts,
    // the fourth does not, the first fast one resolves.
    assert_eq!(queued, vec![0, 0, 0, 1, 0, 1, 0]);
    let page = store
        .list_deliveries(a.id, h.id, PageRequest::default())
        .await?;
    let events: Vec<(&str, &str)> = page
        .items
        .iter()
        .map(|d| (d.event.as_str(), d.payload.as_str()))
        .collect();
    assert_eq!(
        events,
        vec![
            (EVENT_FAST, "{\"type\":\"latency.resolved\",\"n\":6}"),
            (EVENT_SLOW, "{\"type\":\"latency.slow\",\"n\":4}"),
        ]
    );
    Ok(())
}

/// The overview: counts by health, the endpoints whose LATEST check failed to fetch (newest
/// first), the next runs of unpaused endpoints (soonest first), each capped at `limit`, and
/// nothing of another workspace.
pub async fn lifecycle_workspace_overview(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let empty = store.workspace_overview(a.id, 10).await?;
    assert_eq!(empty, WorkspaceOverview::default());
    let ok = one_endpoint(&*store, a.id, "ok").await?;
    let down = one_endpoint(&*store, a.id, "down").await?;
    let later = one_endpoint(&*store, a.id, "down later").await?;
    let recovered = one_endpoint(&*store, a.id, "recovered").await?;
    let paused = one_endpoint(&*store, a.id, "paused").await?;
    let other = one_endpoint(&*store, b.id, "other").await?;
    store
        .record_baseline(a.id, baseline(ok.id, at(1)), Some(Health::Healthy))
        .await?;
    let failed = |e: Uuid, ms: i64, kind: &str| NewCheck {
        http_status: None,
        response_time: None,
        error_kind: Some(kind.into()),
        error_message: Some("no answer".into()),
        ..check(e, at(ms))
    };
    store.record_check(a.id, check(ok.id, at(10)), None).await?;
    store
        .record_check(a.id, failed(down.id, 20, "timeout"), None)
        .await?;
    store
        .record_check(a.id, failed(later.id, 30, "connect_refused"), None)
        .await?;
    store
        .record_check(a.id, failed(recovered.id, 5, "timeout"), None)
        .await?;
    store
        .record_check(a.id, check(recovered.id, at(40)), None)
        .await?;
    store
        .record_check(b.id, failed(other.id, 50, "timeout"), None)
        .await?;
    let schedule = |ws: Uuid, e: Uuid, ms: i64| NewSchedule {
        workspace_id: ws,
        endpoint_id: e,
        cadence: Cadence::Every(Frequency::Hourly),
        next_run_at: at(ms),
    };
    store
        .insert_schedules(vec![
            schedule(a.id, ok.id, 9_000),
            schedule(a.id, down.id, 7_000),
            schedule(a.id, later.id, 8_000),
            schedule(a.id, paused.id, 1_000),
            schedule(b.id, other.id, 500),
        ])
        .await?;
    let mut ch = EndpointChanges::of(&paused);
    ch.paused = true;
    store
        .update_endpoint(a.id, paused.id, ch, None, at(2))
        .await?;

    let o = store.workspace_overview(a.id, 2).await?;
    let mut by_health = o.by_health.clone();
    by_health.sort_by_key(|(h, _)| h.as_str());
    assert_eq!(
        by_health,
        // A check without a diff counts as healthy (the store's rule), a failed fetch too.
        vec![(Health::Healthy, 4), (Health::Unknown, 1)],
        "{:?}",
        o.by_health
    );
    let failing: Vec<(Uuid, &str, &str)> = o
        .failing
        .iter()
        .map(|f| (f.endpoint_id, f.name.as_str(), f.error_kind.as_str()))
        .collect();
    assert_eq!(
        failing,
        vec![
            (later.id, "down later", "connect_refused"),
            (down.id, "down", "timeout")
        ]
    );
    assert_eq!(o.failing[0].at, at(30) - Duration::milliseconds(40));
    let next: Vec<(Uuid, OffsetDateTime)> =
        o.next_runs.iter().map(|r| (r.endpoint_id, r.at)).collect();
    assert_eq!(next, vec![(down.id, at(7_000)), (later.id, at(8_000))]);
    assert_eq!(o.next_runs[0].name, "down");
    // Past the limit: all of them, never the paused one nor another workspace's.
    let o = store.workspace_overview(a.id, 10).await?;
    assert_eq!(o.failing.len(), 2);
    let next: Vec<Uuid> = o.next_runs.iter().map(|r| r.endpoint_id).collect();
    assert_eq!(next, vec![down.id, later.id, ok.id]);
    let o = store.workspace_overview(b.id, 10).await?;
    assert_eq!(o.by_health, vec![(Health::Healthy, 1)]);
    assert_eq!(o.failing.len(), 1);
    assert_eq!(o.next_runs.len(), 1);
    Ok(())
}

/// Expands the lifecycle cases (used by [`crate::conformance_suite!`]).
#[macro_export]
macro_rules! lifecycle_conformance_cases {
    ($setup:path, $teardown:path) => {
        $crate::lifecycle_conformance_cases!(@cases $setup, $teardown;
            lifecycle_update_endpoint,
            lifecycle_delete_endpoint,
            lifecycle_endpoint_version,
            lifecycle_check_history,
            lifecycle_deliveries,
            lifecycle_checking_marker,
            lifecycle_prune_checks,
            lifecycle_uptime_counts,
            lifecycle_recent_response_times,
            lifecycle_endpoint_page,
            lifecycle_slow_episode,
            lifecycle_workspace_overview,
        );
    };
    (@cases $setup:path, $teardown:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() -> $crate::testkit::TestResult {
                let Some((store, guard)) = $setup().await? else {
                    return Ok(());
                };
                let result = $crate::testkit_lifecycle::$case(store).await;
                $teardown(guard).await?;
                result
            }
        )*
    };
}
