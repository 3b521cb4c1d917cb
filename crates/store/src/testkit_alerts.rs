//! The [`AlertStore`] cases of the conformance suite (feature `testkit`): webhooks, D11 alerting
//! inside the check's transaction, the delivery outbox with its claims, leases, retries and
//! give-up, and the schedules workers claim (D17, D18).
//!
//! Each case is a `pub async fn(Arc<dyn Store>) -> TestResult` on a fresh, migrated store, like
//! the cases of [`crate::testkit`]; [`crate::conformance_suite!`] expands them through
//! [`crate::alert_conformance_cases!`]. Concurrency cases run two claimers on ONE store, the way
//! two worker tasks (or, on PostgreSQL, two instances) share a database.

use crate::testkit::{
    TestResult, at, change, check, diff, diff_of_drift, endpoint_row, plain_endpoint, workspace,
};
use crate::*;
use apidrift_model::{Cadence, Frequency, Health, Severity};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration as StdDuration;
use time::Duration;

fn fail(msg: impl Into<String>) -> Box<dyn std::error::Error + Send + Sync> {
    msg.into().into()
}

/// Most claim rounds a claimer makes before the case fails (the cases need at most a few dozen).
const MAX_ROUNDS: usize = 200;

/// The lease every claim of these cases takes.
const LEASE: StdDuration = StdDuration::from_secs(60);

/// `at(ms)` plus the lease and one millisecond: every lease taken at `at(ms)` has expired.
fn after_lease(ms: i64) -> OffsetDateTime {
    at(ms) + Duration::seconds(60) + Duration::milliseconds(1)
}

fn new_hook(ws: Uuid, n: i64, min: Severity) -> NewWebhook {
    NewWebhook {
        kind: crate::WebhookKind::Generic,
        id: new_id(),
        workspace_id: ws,
        url: format!("https://hooks.example.com/{n}"),
        min_severity: min,
        sealed_secret: format!("sealed-secret-{n}").into_bytes(),
        created_at: at(n),
    }
}

/// A draft whose payloads name the event and its kind, so a claimed delivery shows which body
/// the store kept.
fn draft(
    fingerprint: Option<&str>,
    max: Option<Severity>,
    created_at: OffsetDateTime,
) -> AlertDraft {
    let event_id = new_id();
    AlertDraft {
        event_id,
        created_at,
        fingerprint: fingerprint.map(str::to_owned),
        max_severity: max,
        detected_payload: format!("{{\"type\":\"{EVENT_DETECTED}\",\"id\":\"{event_id}\"}}"),
        resolved_payload: format!("{{\"type\":\"{EVENT_RESOLVED}\",\"id\":\"{event_id}\"}}"),
        latency: None,
    }
}

/// Records a check of `endpoint` through [`AlertStore::record_check_alerting`]: with a diff of
/// one change of `severity` (fingerprint `fp`) when `fp` is given, a clean check otherwise.
/// Returns the draft and the number of deliveries queued.
async fn alert_check(
    store: &dyn Store,
    ws: Uuid,
    endpoint: Uuid,
    fp: Option<&str>,
    severity: Severity,
    when: OffsetDateTime,
) -> Result<(AlertDraft, RecordedCheck, u32), StoreError> {
    let d = draft(fp, fp.map(|_| severity), when);
    let diff =
        fp.map(|fp| diff_of_drift(None, vec![change(&format!("$.{fp}"), severity)], when, fp));
    let (recorded, queued) = store
        .record_check_alerting(ws, check(endpoint, when), diff, d.clone())
        .await?;
    Ok((d, recorded, queued))
}

async fn scheduled_endpoint(
    store: &dyn Store,
    ws: Uuid,
    name: &str,
) -> Result<StoredEndpoint, StoreError> {
    let mut created = store
        .create_endpoints(ws, vec![endpoint_row(name, at(0))])
        .await?
        .created;
    created.pop().ok_or(StoreError::NotFound)
}

/// Claims every delivery due at `now` in batches of `batch` for `owner`.
async fn claim_all_deliveries(
    store: &dyn Store,
    owner: &str,
    now: OffsetDateTime,
    batch: u32,
) -> Result<Vec<ClaimedDelivery>, StoreError> {
    let mut all = Vec::new();
    // Bounded: a store that hands out leased rows again would never run dry.
    for _ in 0..MAX_ROUNDS {
        let got = store.claim_deliveries(owner, now, LEASE, batch).await?;
        if got.is_empty() {
            return Ok(all);
        }
        assert!(
            got.len() <= batch as usize,
            "a claim returned more than its limit"
        );
        all.extend(got);
    }
    Err(StoreError::Database(format!(
        "claims never ran dry after {MAX_ROUNDS} rounds: leased deliveries are claimed again"
    )))
}

fn attempt(when: OffsetDateTime, status: Option<u16>, error: Option<&str>) -> DeliveryAttempt {
    DeliveryAttempt {
        id: new_id(),
        attempted_at: when,
        http_status: status,
        error: error.map(str::to_owned),
        duration_ms: 12,
    }
}

fn counts(pending: u64, delivered: u64, failed: u64, attempts: u64) -> DeliveryCounts {
    DeliveryCounts {
        pending,
        delivered,
        failed,
        attempts,
    }
}

// ============================================================================ webhooks

/// Each webhook kind round-trips through create and list, and a claimed delivery carries its
/// webhook's kind, stored URL and sealed secret byte for byte.
pub async fn alert_webhook_kinds(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let mut hooks = Vec::new();
    for (n, kind) in (1i64..).zip(WebhookKind::ALL) {
        let mut h = new_hook(a.id, n, Severity::Info);
        h.kind = kind;
        h.url = format!("https://{kind}.example.com/…");
        h.sealed_secret = vec![u8::try_from(n).unwrap_or(0); 40];
        assert_eq!(store.create_webhook(h.clone()).await?, h);
        hooks.push(h);
    }
    assert_eq!(store.list_webhooks(a.id).await?, hooks);
    let e = scheduled_endpoint(&*store, a.id, "e").await?;
    let (_, _, queued) =
        alert_check(&*store, a.id, e.id, Some("x"), Severity::Breaking, at(10)).await?;
    assert_eq!(queued, 4);
    let claimed = claim_all_deliveries(&*store, "w", at(20), 10).await?;
    assert_eq!(claimed.len(), 4);
    for d in &claimed {
        let h = hooks
            .iter()
            .find(|h| h.id == d.webhook_id)
            .ok_or_else(|| fail("a delivery for an unknown webhook"))?;
        assert_eq!(
            (d.kind, &d.url, &d.sealed_secret),
            (h.kind, &h.url, &h.sealed_secret)
        );
    }
    Ok(())
}

/// Webhooks: every field round-trips, lists are oldest first and per workspace, deletes are
/// isolated and take the webhook's pending deliveries with them.
pub async fn alert_webhooks_round_trip(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    // Created out of order: the list is by created_at, then id.
    let second = new_hook(a.id, 5, Severity::Breaking);
    let first = new_hook(a.id, 1, Severity::Warning);
    let mut tie = new_hook(a.id, 5, Severity::Info);
    tie.url = "https://hooks.example.com/tie".into();
    for h in [&second, &first, &tie] {
        assert_eq!(store.create_webhook(h.clone()).await?, *h);
    }
    let other = new_hook(b.id, 2, Severity::Info);
    store.create_webhook(other.clone()).await?;
    let mut same_time = vec![second.clone(), tie.clone()];
    same_time.sort_by_key(|h| h.id);
    let expected: Vec<StoredWebhook> = std::iter::once(first.clone()).chain(same_time).collect();
    assert_eq!(store.list_webhooks(a.id).await?, expected);
    assert_eq!(store.list_webhooks(b.id).await?, vec![other.clone()]);
    assert!(store.list_webhooks(new_id()).await?.is_empty());

    // A missing workspace is NotFound; a duplicate id is a conflict.
    let orphan = store
        .create_webhook(new_hook(new_id(), 9, Severity::Info))
        .await;
    assert!(matches!(orphan, Err(StoreError::NotFound)), "{orphan:?}");
    let dup = store.create_webhook(first.clone()).await;
    assert!(matches!(dup, Err(StoreError::Conflict(_))), "{dup:?}");

    // Isolation: b cannot delete a's webhook, and an unknown id is NotFound.
    let cross = store.delete_webhook(b.id, first.id).await;
    assert!(matches!(cross, Err(StoreError::NotFound)), "{cross:?}");
    let unknown = store.delete_webhook(a.id, new_id()).await;
    assert!(matches!(unknown, Err(StoreError::NotFound)), "{unknown:?}");
    assert_eq!(store.list_webhooks(a.id).await?.len(), 3);

    // Deleting a webhook drops its pending deliveries; the other channels keep theirs.
    let e = scheduled_endpoint(&*store, a.id, "e").await?;
    let (_, _, queued) =
        alert_check(&*store, a.id, e.id, Some("x"), Severity::Breaking, at(10)).await?;
    assert_eq!(queued, 3);
    assert_eq!(store.delivery_counts(a.id).await?, counts(3, 0, 0, 0));
    store.delete_webhook(a.id, second.id).await?;
    assert_eq!(store.delivery_counts(a.id).await?, counts(2, 0, 0, 0));
    let claimed = claim_all_deliveries(&*store, "w", at(20), 10).await?;
    assert_eq!(
        claimed
            .iter()
            .map(|d| d.webhook_id)
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([first.id, tie.id])
    );
    let again = store.delete_webhook(a.id, second.id).await;
    assert!(matches!(again, Err(StoreError::NotFound)), "{again:?}");
    assert_eq!(store.list_webhooks(a.id).await?, {
        let mut rest = vec![first.clone(), tie.clone()];
        rest.sort_by_key(|h| (h.created_at, h.id));
        rest
    });
    assert_eq!(store.list_webhooks(b.id).await?, vec![other]);
    Ok(())
}

// ============================================================================ alerting

/// D11 in the check's transaction: one delivery per channel whose minSeverity the diff meets,
/// once per fingerprint; `drift.resolved` to every channel that got the drift; a drift after a
/// resolution is new. The check itself is recorded exactly as `record_check` records it.
pub async fn alert_record_check_alerting(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let info = new_hook(a.id, 1, Severity::Info);
    let warning = new_hook(a.id, 2, Severity::Warning);
    let breaking = new_hook(a.id, 3, Severity::Breaking);
    for h in [&info, &warning, &breaking] {
        store.create_webhook(h.clone()).await?;
    }
    // b's channel must never hear about a's endpoints.
    let b_hook = new_hook(b.id, 4, Severity::Info);
    store.create_webhook(b_hook.clone()).await?;
    let e = scheduled_endpoint(&*store, a.id, "e").await?;

    // A warning drift reaches the info and warning channels.
    let (d1, rec, queued) =
        alert_check(&*store, a.id, e.id, Some("f1"), Severity::Warning, at(100)).await?;
    assert_eq!(queued, 2);
    assert_eq!((rec.health, rec.counts.warning), (Health::Warning, 1));
    let stored = store
        .get_check(a.id, rec.check.id)
        .await?
        .ok_or_else(|| fail("the alerting check was not recorded"))?;
    assert!(stored.diff_id.is_some());
    let ep = store
        .get_endpoint(a.id, e.id)
        .await?
        .ok_or_else(|| fail("endpoint missing"))?;
    assert_eq!(
        (ep.health, ep.warning_count, ep.last_checked_at),
        (Health::Warning, 1, Some(at(100)))
    );
    let claimed = claim_all_deliveries(&*store, "w", at(100), 10).await?;
    assert_eq!(
        claimed
            .iter()
            .map(|d| d.webhook_id)
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([info.id, warning.id])
    );
    for d in &claimed {
        let hook = if d.webhook_id == info.id {
            &info
        } else {
            &warning
        };
        assert_eq!(
            (
                d.workspace_id,
                d.event_id,
                d.url.as_str(),
                d.sealed_secret.as_slice()
            ),
            (
                a.id,
                d1.event_id,
                hook.url.as_str(),
                hook.sealed_secret.as_slice()
            )
        );
        assert_eq!(
            d.payload, d1.detected_payload,
            "the detected body, byte for byte"
        );
        assert_eq!((d.attempts, d.created_at), (0, at(100)));
    }

    // The same drift again: alerted once, nothing queued, the check still recorded.
    let (_, rec, queued) =
        alert_check(&*store, a.id, e.id, Some("f1"), Severity::Warning, at(200)).await?;
    assert_eq!(queued, 0);
    assert!(store.get_check(a.id, rec.check.id).await?.is_some());

    // A different drift, now breaking: every channel.
    let (d3, _, queued) =
        alert_check(&*store, a.id, e.id, Some("f2"), Severity::Breaking, at(300)).await?;
    assert_eq!(queued, 3);
    let claimed = claim_all_deliveries(&*store, "w", at(300), 10).await?;
    assert_eq!(claimed.len(), 3);
    assert!(
        claimed
            .iter()
            .all(|d| d.event_id == d3.event_id && d.payload == d3.detected_payload)
    );

    // Back to baseline: drift.resolved to the three channels that were told, whatever their
    // minSeverity.
    let (d4, rec, queued) = alert_check(&*store, a.id, e.id, None, Severity::Info, at(400)).await?;
    assert_eq!(queued, 3);
    assert_eq!(rec.health, Health::Healthy);
    let claimed = claim_all_deliveries(&*store, "w", at(400), 10).await?;
    assert_eq!(
        claimed
            .iter()
            .map(|d| d.webhook_id)
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([info.id, warning.id, breaking.id])
    );
    assert!(
        claimed
            .iter()
            .all(|d| d.payload == d4.resolved_payload && d.event_id == d4.event_id)
    );

    // Clean again: nothing. The first drift is new again after the resolution.
    let (_, _, queued) = alert_check(&*store, a.id, e.id, None, Severity::Info, at(500)).await?;
    assert_eq!(queued, 0);
    let (_, _, queued) =
        alert_check(&*store, a.id, e.id, Some("f1"), Severity::Warning, at(600)).await?;
    assert_eq!(queued, 2);

    // A drift below every minSeverity but info's is told to info only; after info's channel is
    // deleted, its resolution tells nobody.
    let e2 = scheduled_endpoint(&*store, a.id, "e2").await?;
    let (_, _, queued) =
        alert_check(&*store, a.id, e2.id, Some("g"), Severity::Info, at(700)).await?;
    assert_eq!(queued, 1);
    store.delete_webhook(a.id, info.id).await?;
    let (_, _, queued) = alert_check(&*store, a.id, e2.id, None, Severity::Info, at(800)).await?;
    assert_eq!(queued, 0);

    // 2 + 3 + 3 + 2 + 1 queued and none finished; the info channel's five went with it; b saw
    // nothing.
    assert_eq!(store.delivery_counts(a.id).await?, counts(11 - 5, 0, 0, 0));
    assert_eq!(
        store.delivery_counts(b.id).await?,
        DeliveryCounts::default()
    );
    assert!(
        claim_all_deliveries(&*store, "w2", after_lease(900), 50)
            .await?
            .iter()
            .all(|d| d.workspace_id == a.id && d.webhook_id != b_hook.id)
    );

    // Isolation: b cannot record an alerting check on a's endpoint; nothing is written.
    let before = store.delivery_counts(a.id).await?;
    let cross = alert_check(&*store, b.id, e.id, Some("h"), Severity::Breaking, at(900)).await;
    assert!(matches!(cross, Err(StoreError::NotFound)), "{cross:?}");
    assert_eq!(store.delivery_counts(a.id).await?, before);
    assert_eq!(
        store.delivery_counts(b.id).await?,
        DeliveryCounts::default()
    );
    Ok(())
}

// ============================================================================ deliveries

/// Two claimers racing on one store get disjoint sets that together hold every due delivery;
/// a lease keeps a claimed delivery from being claimed again until it expires, then anyone may
/// take it, and the first owner can no longer finish it.
pub async fn alert_delivery_claims_are_exclusive(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "busy", None, None).await?;
    for n in 0..4 {
        store
            .create_webhook(new_hook(ws.id, n, Severity::Info))
            .await?;
    }
    let mut expected = BTreeSet::new();
    for i in 0..10 {
        let e = scheduled_endpoint(&*store, ws.id, &format!("e{i}")).await?;
        let (_, _, queued) =
            alert_check(&*store, ws.id, e.id, Some("d"), Severity::Warning, at(i)).await?;
        assert_eq!(queued, 4);
    }
    assert_eq!(store.delivery_counts(ws.id).await?.pending, 40);
    // Nothing is due before the deliveries were queued.
    assert!(
        store
            .claim_deliveries("early", at(-1), LEASE, 100)
            .await?
            .is_empty()
    );

    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let mut tasks = tokio::task::JoinSet::new();
    for owner in ["worker-a", "worker-b"] {
        let (store, barrier) = (store.clone(), barrier.clone());
        tasks.spawn(async move {
            barrier.wait().await;
            let got = claim_all_deliveries(&*store, owner, at(1_000), 3).await?;
            Ok::<_, StoreError>((owner, got))
        });
    }
    let mut by_owner = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        by_owner.push(joined??);
    }
    let mut seen = BTreeSet::new();
    for (_, got) in &by_owner {
        for d in got {
            assert!(seen.insert(d.id), "delivery {} was claimed twice", d.id);
            expected.insert(d.id);
        }
    }
    assert_eq!(seen.len(), 40, "every due delivery is claimed exactly once");

    // Leased: not claimable again before the lease ends, even though still pending and due.
    assert!(
        store
            .claim_deliveries("late", at(1_000) + Duration::seconds(30), LEASE, 100)
            .await?
            .is_empty()
    );
    assert_eq!(store.delivery_counts(ws.id).await?.pending, 40);

    // Expired: claimable again, by anyone; the first owner then lost the lease.
    let retaken = claim_all_deliveries(&*store, "rescuer", after_lease(1_000), 7).await?;
    assert_eq!(
        retaken.iter().map(|d| d.id).collect::<BTreeSet<_>>(),
        expected
    );
    let (first_owner, first_batch) = &by_owner[0];
    let lost = first_batch
        .first()
        .ok_or_else(|| fail("a claimer got nothing"))?;
    assert!(
        !store
            .finish_delivery(
                lost.id,
                first_owner,
                attempt(after_lease(1_000), Some(200), None),
                DeliveryOutcome::Delivered
            )
            .await?,
        "a finish by an owner whose lease expired and was retaken must write nothing"
    );
    assert_eq!(store.delivery_counts(ws.id).await?, counts(40, 0, 0, 0));
    assert!(
        store
            .finish_delivery(
                lost.id,
                "rescuer",
                attempt(after_lease(1_000), Some(204), None),
                DeliveryOutcome::Delivered
            )
            .await?
    );
    assert_eq!(store.delivery_counts(ws.id).await?, counts(39, 1, 0, 1));
    Ok(())
}

/// `finish_delivery`: success; a retry is pending but not claimable before its next attempt;
/// the give-up after the last retry; each attempt recorded once; a wrong owner writes nothing;
/// claims come oldest due first and honour their limit.
pub async fn alert_delivery_finish_retry_give_up(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let hook = new_hook(a.id, 1, Severity::Info);
    store.create_webhook(hook.clone()).await?;
    store
        .create_webhook(new_hook(b.id, 2, Severity::Info))
        .await?;
    let e1 = scheduled_endpoint(&*store, a.id, "e1").await?;
    let e2 = scheduled_endpoint(&*store, a.id, "e2").await?;
    let eb = scheduled_endpoint(&*store, b.id, "eb").await?;
    let (d1, _, _) = alert_check(&*store, a.id, e1.id, Some("x"), Severity::Warning, at(0)).await?;
    let (d2, _, _) =
        alert_check(&*store, a.id, e2.id, Some("y"), Severity::Warning, at(10)).await?;
    alert_check(&*store, b.id, eb.id, Some("z"), Severity::Warning, at(20)).await?;
    assert_eq!(store.delivery_counts(a.id).await?, counts(2, 0, 0, 0));
    assert_eq!(store.delivery_counts(b.id).await?, counts(1, 0, 0, 0));

    // Oldest due first, limit honoured.
    let first = store.claim_deliveries("w", at(100), LEASE, 1).await?;
    assert_eq!(
        first.iter().map(|d| d.event_id).collect::<Vec<_>>(),
        vec![d1.event_id]
    );
    let second = store.claim_deliveries("w", at(100), LEASE, 1).await?;
    assert_eq!(
        second.iter().map(|d| d.event_id).collect::<Vec<_>>(),
        vec![d2.event_id]
    );
    let (ok, retried) = (&first[0], &second[0]);

    // A finish by someone else than the owner writes nothing.
    assert!(
        !store
            .finish_delivery(
                ok.id,
                "intruder",
                attempt(at(150), Some(200), None),
                DeliveryOutcome::Delivered
            )
            .await?
    );
    assert_eq!(store.delivery_counts(a.id).await?, counts(2, 0, 0, 0));

    // Success: delivered, one attempt, never claimable again.
    assert!(
        store
            .finish_delivery(
                ok.id,
                "w",
                attempt(at(150), Some(200), None),
                DeliveryOutcome::Delivered
            )
            .await?
    );
    assert_eq!(store.delivery_counts(a.id).await?, counts(1, 1, 0, 1));
    // The lease was released with the finish: a second finish is refused.
    assert!(
        !store
            .finish_delivery(
                ok.id,
                "w",
                attempt(at(151), Some(200), None),
                DeliveryOutcome::Delivered
            )
            .await?
    );
    assert_eq!(store.delivery_counts(a.id).await?, counts(1, 1, 0, 1));

    // Retry with backoff: pending, the lease released, not claimable before the next attempt.
    let next = at(100) + Duration::seconds(30);
    assert!(
        store
            .finish_delivery(
                retried.id,
                "w",
                attempt(at(160), Some(503), Some("upstream answered 503")),
                DeliveryOutcome::Retry(next)
            )
            .await?
    );
    assert_eq!(store.delivery_counts(a.id).await?, counts(1, 1, 0, 2));
    let a_due = |got: Vec<ClaimedDelivery>| {
        got.into_iter()
            .filter(|d| d.workspace_id == a.id)
            .collect::<Vec<_>>()
    };
    assert!(
        a_due(
            store
                .claim_deliveries("w", next - Duration::milliseconds(1), LEASE, 10)
                .await?
        )
        .is_empty()
    );
    let mut backoff = Duration::seconds(30);
    let mut when = next;
    for n in 1..=3u32 {
        let got = a_due(store.claim_deliveries("w", when, LEASE, 10).await?);
        assert_eq!(got.len(), 1, "the retry is due at its next attempt");
        assert_eq!(
            (got[0].id, got[0].attempts),
            (retried.id, n),
            "attempts made before this one"
        );
        assert_eq!(got[0].payload, d2.detected_payload);
        backoff *= 2;
        let next = when + backoff;
        let outcome = if n < 3 {
            DeliveryOutcome::Retry(next)
        } else {
            DeliveryOutcome::Failed
        };
        assert!(
            store
                .finish_delivery(
                    retried.id,
                    "w",
                    attempt(when, None, Some("connection refused")),
                    outcome
                )
                .await?
        );
        if n < 3 {
            assert!(
                a_due(
                    store
                        .claim_deliveries("w", next - Duration::milliseconds(1), LEASE, 10)
                        .await?
                )
                .is_empty()
            );
        }
        when = next;
    }
    // Given up: failed, every attempt recorded, nothing left to claim, however late.
    assert_eq!(store.delivery_counts(a.id).await?, counts(0, 1, 1, 5));
    assert!(
        a_due(
            store
                .claim_deliveries("w", when + Duration::days(2), LEASE, 10)
                .await?
        )
        .is_empty()
    );
    // b's delivery was never touched by a's work.
    assert_eq!(store.delivery_counts(b.id).await?, counts(1, 0, 0, 0));
    assert_eq!(
        store.delivery_counts(new_id()).await?,
        DeliveryCounts::default()
    );
    Ok(())
}

// ============================================================================ schedules

/// `unscheduled_endpoints` finds endpoints with a schedule and no row; `insert_schedules`
/// creates rows and keeps existing ones; `schedule_of` reads them per workspace.
pub async fn alert_schedules_insert_and_read(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let mut scheduled = Vec::new();
    for i in 0..3 {
        scheduled.push(scheduled_endpoint(&*store, a.id, &format!("s{i}")).await?);
    }
    store
        .create_endpoints(a.id, vec![plain_endpoint("unscheduled", at(0))])
        .await?;
    let mut weekly = endpoint_row("weekly", at(0));
    weekly.settings.schedule = Some(Cadence::Every(Frequency::Weekly));
    let weekly = store.create_endpoints(b.id, vec![weekly]).await?.created;
    let wb = weekly.first().ok_or_else(|| fail("not created"))?;

    let found: BTreeSet<(Uuid, Uuid, Cadence)> = store
        .unscheduled_endpoints(100)
        .await?
        .into_iter()
        .collect();
    let mut expected: BTreeSet<(Uuid, Uuid, Cadence)> = scheduled
        .iter()
        .map(|e| (a.id, e.id, Cadence::Every(Frequency::Daily)))
        .collect();
    expected.insert((b.id, wb.id, Cadence::Every(Frequency::Weekly)));
    assert_eq!(found, expected);
    let two = store.unscheduled_endpoints(2).await?;
    assert_eq!(two.len(), 2);
    assert!(two.iter().all(|t| expected.contains(t)));

    let rows: Vec<NewSchedule> = expected
        .iter()
        .enumerate()
        .map(|(i, (ws, ep, f))| NewSchedule {
            workspace_id: *ws,
            endpoint_id: *ep,
            cadence: *f,
            next_run_at: at(1_000 * i64::try_from(i).unwrap_or(0)),
        })
        .collect();
    assert_eq!(store.insert_schedules(rows.clone()).await?, 4);
    assert!(store.unscheduled_endpoints(100).await?.is_empty());
    assert_eq!(store.insert_schedules(Vec::new()).await?, 0);
    // An existing row is kept as it is.
    let moved: Vec<NewSchedule> = rows
        .iter()
        .map(|r| NewSchedule {
            next_run_at: at(99_000),
            ..r.clone()
        })
        .collect();
    assert_eq!(store.insert_schedules(moved).await?, 0);
    for r in &rows {
        let info = store
            .schedule_of(r.workspace_id, r.endpoint_id)
            .await?
            .ok_or_else(|| fail("schedule missing"))?;
        assert_eq!(
            info,
            ScheduleInfo {
                cadence: r.cadence,
                next_run_at: r.next_run_at,
                last_run_at: None,
                last_outcome: None,
                runs: 0,
                skipped: 0,
            }
        );
    }
    // Isolation and unknown ids.
    assert_eq!(store.schedule_of(b.id, scheduled[0].id).await?, None);
    assert_eq!(store.schedule_of(a.id, wb.id).await?, None);
    assert_eq!(store.schedule_of(a.id, new_id()).await?, None);
    Ok(())
}

/// D25: the endpoint reads (`get_endpoint`, `list_endpoints`, the result of `update_endpoint`)
/// carry the schedule row's next run; `None` without a schedule row, without a schedule, when
/// paused, and for another workspace's row.
pub async fn alert_schedules_next_run_on_reads(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let s = scheduled_endpoint(&*store, a.id, "scheduled").await?;
    let waiting = scheduled_endpoint(&*store, a.id, "waiting").await?;
    let p = scheduled_endpoint(&*store, a.id, "paused").await?;
    let u = store
        .create_endpoints(a.id, vec![plain_endpoint("unscheduled", at(0))])
        .await?
        .created
        .pop()
        .ok_or_else(|| fail("not created"))?;
    let other = scheduled_endpoint(&*store, b.id, "other").await?;
    assert!(s.settings.schedule.is_some() && u.settings.schedule.is_none());
    assert_eq!(s.next_run_at, None, "a create returns no next run");
    let row = |ws: Uuid, ep: Uuid, ms: i64| NewSchedule {
        workspace_id: ws,
        endpoint_id: ep,
        cadence: Cadence::Every(Frequency::Daily),
        next_run_at: at(ms),
    };
    store
        .insert_schedules(vec![
            row(a.id, s.id, 7_000),
            row(a.id, p.id, 8_000),
            row(b.id, other.id, 9_000),
        ])
        .await?;
    let mut ch = EndpointChanges::of(&p);
    ch.paused = true;
    let paused = store.update_endpoint(a.id, p.id, ch, None, at(10)).await?;
    assert_eq!(
        paused.next_run_at, None,
        "a paused endpoint shows no next run"
    );

    let next = |e: Option<StoredEndpoint>| e.map(|e| e.next_run_at);
    assert_eq!(
        next(store.get_endpoint(a.id, s.id).await?),
        Some(Some(at(7_000)))
    );
    assert_eq!(
        next(store.get_endpoint(a.id, waiting.id).await?),
        Some(None)
    );
    assert_eq!(next(store.get_endpoint(a.id, p.id).await?), Some(None));
    assert_eq!(next(store.get_endpoint(a.id, u.id).await?), Some(None));
    assert_eq!(
        next(store.get_endpoint(b.id, other.id).await?),
        Some(Some(at(9_000)))
    );
    assert_eq!(store.get_endpoint(b.id, s.id).await?, None);

    let page = store
        .list_endpoints(a.id, &EndpointFilter::default(), PageRequest::default())
        .await?;
    let listed: BTreeSet<(Uuid, Option<OffsetDateTime>)> =
        page.items.iter().map(|e| (e.id, e.next_run_at)).collect();
    let expected: BTreeSet<(Uuid, Option<OffsetDateTime>)> = [
        (s.id, Some(at(7_000))),
        (waiting.id, None),
        (p.id, None),
        (u.id, None),
    ]
    .into();
    assert_eq!(listed, expected);
    // The answer shows the settings' schedule and the next run.
    let model = store
        .get_endpoint(a.id, s.id)
        .await?
        .ok_or_else(|| fail("missing"))?
        .to_model();
    assert_eq!(model.next_run_at, Some(at(7_000)));
    assert_eq!(
        model.schedule,
        s.settings.schedule.map(apidrift_model::Schedule::from)
    );
    assert!(model.schedule.is_some());

    // An update that keeps the schedule returns the next run; resuming shows it again.
    let mut ch = EndpointChanges::of(&paused);
    ch.paused = false;
    let resumed = store.update_endpoint(a.id, p.id, ch, None, at(20)).await?;
    assert_eq!(resumed.next_run_at, Some(at(8_000)));
    // Dropping the schedule hides the row at once.
    let mut ch = EndpointChanges::of(&resumed);
    ch.settings.schedule = None;
    let dropped = store.update_endpoint(a.id, p.id, ch, None, at(30)).await?;
    assert_eq!(dropped.next_run_at, None);
    assert_eq!(next(store.get_endpoint(a.id, p.id).await?), Some(None));
    Ok(())
}

/// Due schedules are claimed exactly once across two racing claimers; a lease keeps them until
/// it expires; `finish_schedule` moves the next run, counts runs and skips and releases the
/// lease; a lost lease cannot finish; `release_leases` frees an owner's schedules and
/// deliveries at once.
pub async fn alert_schedule_claims_and_leases(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "sched", None, None).await?;
    let mut rows = Vec::new();
    for i in 0..20i64 {
        let e = scheduled_endpoint(&*store, ws.id, &format!("e{i}")).await?;
        rows.push(NewSchedule {
            workspace_id: ws.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Hourly),
            // 16 due at at(1_000); 4 due 50 minutes later.
            next_run_at: at(if i < 16 { i * 10 } else { 3_000_000 + i }),
        });
    }
    assert_eq!(store.insert_schedules(rows.clone()).await?, 20);
    let due: BTreeSet<Uuid> = rows[..16].iter().map(|r| r.endpoint_id).collect();

    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let mut tasks = tokio::task::JoinSet::new();
    for owner in ["worker-a", "worker-b"] {
        let (store, barrier) = (store.clone(), barrier.clone());
        tasks.spawn(async move {
            barrier.wait().await;
            let mut got = Vec::new();
            for round in 0.. {
                if round == MAX_ROUNDS {
                    return Err(StoreError::Database(
                        "claims never ran dry: leased schedules are claimed again".into(),
                    ));
                }
                let batch = store.claim_schedules(owner, at(1_000), LEASE, 3).await?;
                if batch.is_empty() {
                    break;
                }
                assert!(batch.len() <= 3);
                got.extend(batch.into_iter().map(|c| (owner, c)));
            }
            Ok::<_, StoreError>(got)
        });
    }
    let mut claims = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        claims.extend(joined??);
    }
    let mut seen = BTreeSet::new();
    for (_, c) in &claims {
        assert!(
            seen.insert(c.endpoint_id),
            "schedule {} was claimed twice",
            c.endpoint_id
        );
        let row = rows
            .iter()
            .find(|r| r.endpoint_id == c.endpoint_id)
            .ok_or_else(|| fail("claimed an unknown schedule"))?;
        assert_eq!(
            (c.workspace_id, c.cadence, c.next_run_at),
            (ws.id, Cadence::Every(Frequency::Hourly), row.next_run_at)
        );
    }
    assert_eq!(seen, due, "exactly the due schedules, each once");

    // Leased: nothing to claim until the lease ends.
    assert!(
        store
            .claim_schedules("late", at(31_000), LEASE, 100)
            .await?
            .is_empty()
    );

    // The holder finishes one run and one skip; the next run moves and the lease is released.
    let (owner0, run) = &claims[0];
    let (owner1, skip) = &claims[1];
    let next = at(1_000) + Duration::hours(1);
    assert!(
        !store
            .finish_schedule(
                run.endpoint_id,
                "intruder",
                next,
                "checked",
                false,
                at(1_500)
            )
            .await?
    );
    assert!(
        store
            .finish_schedule(
                run.endpoint_id,
                owner0,
                next,
                "checked: 0 changes",
                false,
                at(1_500)
            )
            .await?
    );
    assert!(
        store
            .finish_schedule(
                skip.endpoint_id,
                owner1,
                next,
                "skipped: quota",
                true,
                at(1_600)
            )
            .await?
    );
    assert!(
        !store
            .finish_schedule(run.endpoint_id, owner0, next, "again", false, at(1_700))
            .await?,
        "the lease went with the first finish"
    );
    assert_eq!(
        store.schedule_of(ws.id, run.endpoint_id).await?,
        Some(ScheduleInfo {
            cadence: Cadence::Every(Frequency::Hourly),
            next_run_at: next,
            last_run_at: Some(at(1_500)),
            last_outcome: Some("checked: 0 changes".into()),
            runs: 1,
            skipped: 0,
        })
    );
    assert_eq!(
        store.schedule_of(ws.id, skip.endpoint_id).await?.map(|s| (
            s.runs,
            s.skipped,
            s.last_outcome
        )),
        Some((0, 1, Some("skipped: quota".into())))
    );

    // Expired leases are claimable again; finished ones wait for their next run.
    let retaken: BTreeSet<Uuid> = store
        .claim_schedules("rescuer", after_lease(1_000), LEASE, 100)
        .await?
        .into_iter()
        .map(|c| c.endpoint_id)
        .collect();
    let mut unfinished = due.clone();
    unfinished.remove(&run.endpoint_id);
    unfinished.remove(&skip.endpoint_id);
    assert_eq!(retaken, unfinished);
    let (owner2, lost) = &claims[2];
    assert!(
        !store
            .finish_schedule(
                lost.endpoint_id,
                owner2,
                next,
                "late",
                false,
                after_lease(1_000)
            )
            .await?,
        "a lease that expired and was retaken cannot finish"
    );
    let at_next = store.claim_schedules("next", next, LEASE, 100).await?;
    let at_next: BTreeSet<Uuid> = at_next.into_iter().map(|c| c.endpoint_id).collect();
    // The two finished ones, the later four and the rescuer's (whose lease has expired too).
    let all: BTreeSet<Uuid> = rows.iter().map(|r| r.endpoint_id).collect();
    assert_eq!(at_next, all);

    // release_leases: every lease of one owner, schedules and deliveries, claimable at once.
    let hook = new_hook(ws.id, 1, Severity::Info);
    store.create_webhook(hook).await?;
    let (_, _, queued) = alert_check(
        &*store,
        ws.id,
        run.endpoint_id,
        Some("r"),
        Severity::Info,
        at(2_000),
    )
    .await?;
    assert_eq!(queued, 1);
    let far = next + Duration::hours(5);
    let held_s = store
        .claim_schedules("stopping", far, LEASE, 100)
        .await?
        .len() as u64;
    let held_d = store
        .claim_deliveries("stopping", far, LEASE, 100)
        .await?
        .len() as u64;
    assert_eq!((held_s, held_d), (20, 1));
    assert_eq!(store.release_leases("nobody").await?, 0);
    assert_eq!(store.release_leases("stopping").await?, held_s + held_d);
    assert_eq!(
        store
            .claim_schedules("successor", far, LEASE, 100)
            .await?
            .len() as u64,
        held_s
    );
    assert_eq!(
        store
            .claim_deliveries("successor", far, LEASE, 100)
            .await?
            .len() as u64,
        held_d
    );
    assert!(
        !store
            .finish_schedule(run.endpoint_id, "stopping", far, "x", false, far)
            .await?
    );
    Ok(())
}

/// A lease longer than any clock can show never expires, on every adapter: claims with
/// `Duration::MAX` or a lease past the year 9999 hold their rows however late another claimer
/// comes (they used to expire after an hour on PostgreSQL, or fail).
pub async fn alert_long_leases_hold(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "long", None, None).await?;
    store
        .create_webhook(new_hook(ws.id, 1, Severity::Info))
        .await?;
    let mut rows = Vec::new();
    for i in 0..2 {
        let e = scheduled_endpoint(&*store, ws.id, &format!("e{i}")).await?;
        alert_check(&*store, ws.id, e.id, Some("l"), Severity::Info, at(i)).await?;
        rows.push(NewSchedule {
            workspace_id: ws.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Daily),
            next_run_at: at(i),
        });
    }
    store.insert_schedules(rows).await?;
    let forever = StdDuration::MAX;
    let ten_thousand_years = StdDuration::from_secs(10_000 * 366 * 86_400);
    for lease in [forever, ten_thousand_years] {
        assert_eq!(
            store
                .claim_deliveries("holder", at(10), lease, 1)
                .await?
                .len(),
            1
        );
        assert_eq!(
            store
                .claim_schedules("holder", at(10), lease, 1)
                .await?
                .len(),
            1
        );
    }
    let much_later = at(10) + Duration::days(365 * 100);
    assert!(
        store
            .claim_deliveries("other", much_later, LEASE, 10)
            .await?
            .is_empty()
    );
    assert!(
        store
            .claim_schedules("other", much_later, LEASE, 10)
            .await?
            .is_empty()
    );
    assert_eq!(store.release_leases("holder").await?, 4);
    assert_eq!(
        store
            .claim_deliveries("other", much_later, LEASE, 10)
            .await?
            .len(),
        2
    );
    Ok(())
}

/// [`AlertStore::record_check_run`]: the quota unit, the check, its diff, the figures and the
/// alerts in one transaction; with no unit left nothing at all is written; concurrent checks
/// take exactly the quota. [`crate::Store::check_quota_usage`] reads the quota without a write.
pub async fn alert_record_check_run(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "runs", None, Some(3)).await?;
    let other = workspace(&*store, "other", None, None).await?;
    let e = scheduled_endpoint(&*store, ws.id, "e").await?;
    store
        .create_webhook(new_hook(ws.id, 1, Severity::Info))
        .await?;
    assert_eq!(
        store.check_quota_usage(ws.id, at(0)).await?,
        QuotaUsage {
            used: 0,
            quota: Some(3)
        }
    );
    assert_eq!(
        store.check_quota_usage(other.id, at(0)).await?,
        QuotaUsage {
            used: 0,
            quota: None
        }
    );
    match store.check_quota_usage(new_id(), at(0)).await {
        Err(StoreError::NotFound) => {}
        x => return Err(fail(format!("missing workspace: {x:?}"))),
    }

    // A drift: the unit, the check, the diff, the figures and one delivery.
    let d = draft(Some("fp1"), Some(Severity::Breaking), at(10));
    let first = diff(None, vec![change("$.a", Severity::Breaking)], at(10));
    let first_id = first.id;
    match store
        .record_check_run(ws.id, check(e.id, at(10)), Some(first), d, None)
        .await?
    {
        CheckRecording::Recorded {
            recorded,
            alerts_sent,
            ..
        } => {
            assert_eq!((recorded.health, alerts_sent), (Health::Breaking, 1));
            assert_eq!(recorded.check.diff_id, Some(first_id));
        }
        x => return Err(fail(format!("first run: {x:?}"))),
    }
    assert_eq!(store.check_usage(ws.id, at(10)).await?, 1);
    let usage = store.check_quota_usage(ws.id, at(10)).await?;
    assert_eq!((usage.used, usage.exhausted()), (1, None));
    // Two clean checks: the second resolves nothing more, both take a unit.
    for ms in [20, 30] {
        let r = store
            .record_check_run(
                ws.id,
                check(e.id, at(ms)),
                None,
                draft(None, None, at(ms)),
                None,
            )
            .await?;
        assert!(
            matches!(r, CheckRecording::Recorded { .. }),
            "run at {ms}: {r:?}"
        );
    }
    let usage = store.check_quota_usage(ws.id, at(30)).await?;
    assert_eq!((usage.used, usage.exhausted()), (3, Some(3)));
    let before = store.get_endpoint(ws.id, e.id).await?;
    let history = store
        .list_checks(ws.id, e.id, PageRequest::default())
        .await?;
    let deliveries = store.delivery_counts(ws.id).await?;
    // Quota used up: refused, and nothing of the check is written.
    let refused = diff(None, vec![change("$.b", Severity::Breaking)], at(40));
    let r = store
        .record_check_run(
            ws.id,
            check(e.id, at(40)),
            Some(refused),
            draft(Some("fp2"), Some(Severity::Breaking), at(40)),
            None,
        )
        .await?;
    assert_eq!(r, CheckRecording::QuotaExhausted { used: 3, quota: 3 });
    assert_eq!(store.get_endpoint(ws.id, e.id).await?, before);
    assert_eq!(
        store
            .list_checks(ws.id, e.id, PageRequest::default())
            .await?
            .total,
        history.total
    );
    assert_eq!(store.delivery_counts(ws.id).await?, deliveries);
    assert_eq!(
        store
            .list_diffs(ws.id, &DiffFilter::default(), PageRequest::default())
            .await?
            .total,
        1
    );
    assert_eq!(store.check_usage(ws.id, at(40)).await?, 3);
    // Another month has its own units.
    let next_month = at(0) + Duration::days(40);
    assert!(matches!(
        store
            .record_check_run(
                ws.id,
                check(e.id, next_month),
                None,
                draft(None, None, next_month),
                None,
            )
            .await?,
        CheckRecording::Recorded { .. }
    ));
    assert_eq!(store.check_usage(ws.id, next_month).await?, 1);
    // Another workspace's endpoint: not found, nothing consumed.
    let r = store
        .record_check_run(
            other.id,
            check(e.id, at(50)),
            None,
            draft(None, None, at(50)),
            None,
        )
        .await;
    assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");
    assert_eq!(store.check_usage(other.id, at(50)).await?, 0);

    // Exact under concurrency: 12 runs on 4 endpoints against a quota of 5.
    let busy = workspace(&*store, "busy", None, Some(5)).await?;
    let mut eps = Vec::new();
    for i in 0..4 {
        eps.push(
            scheduled_endpoint(&*store, busy.id, &format!("b{i}"))
                .await?
                .id,
        );
    }
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..12i64 {
        let (store, ep) = (store.clone(), eps[usize::try_from(i % 4).unwrap_or(0)]);
        tasks.spawn(async move {
            let d = diff(None, vec![change("$.c", Severity::Warning)], at(100 + i));
            store
                .record_check_run(
                    busy.id,
                    check(ep, at(100 + i)),
                    Some(d),
                    draft(Some("c"), Some(Severity::Warning), at(100 + i)),
                    None,
                )
                .await
        });
    }
    let mut recorded = 0;
    while let Some(joined) = tasks.join_next().await {
        match joined?? {
            CheckRecording::Recorded { .. } => recorded += 1,
            CheckRecording::QuotaExhausted { quota, .. } => assert_eq!(quota, 5),
        }
    }
    assert_eq!(recorded, 5, "exactly the quota is recorded");
    assert_eq!(store.check_usage(busy.id, at(100)).await?, 5);
    let mut rows = 0;
    for ep in &eps {
        rows += store
            .list_checks(busy.id, *ep, PageRequest::default())
            .await?
            .total;
    }
    assert_eq!(rows, 5, "a refused run leaves no check row");
    assert_eq!(
        store
            .list_diffs(busy.id, &DiffFilter::default(), PageRequest::default())
            .await?
            .total,
        5
    );
    Ok(())
}

/// The guarantees of the recording under concurrency (the PostgreSQL adapter reads ahead and
/// sends a check's writes together with its quota unit): 12 concurrent drifts of 12 endpoints
/// against a monthly quota of 5 record exactly 5 (usage 5) and refuse 7 with nothing of theirs
/// written (no check row, no diff, no outbox event or delivery); and 8 concurrent checks of one
/// endpoint finding the same drift queue exactly one event, with one delivery per webhook, the
/// drift written once and seen 8 times.
pub async fn alert_recording_quota_and_outbox_under_concurrency(
    store: Arc<dyn Store>,
) -> TestResult {
    let ws = workspace(&*store, "quota", None, Some(5)).await?;
    store
        .create_webhook(new_hook(ws.id, 1, Severity::Info))
        .await?;
    let mut eps = Vec::new();
    for i in 0..12 {
        eps.push(
            scheduled_endpoint(&*store, ws.id, &format!("q{i}"))
                .await?
                .id,
        );
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (i, ep) in (0i64..).zip(eps.iter().copied()) {
        let store = store.clone();
        tasks.spawn(async move {
            let when = at(100 + i);
            let fp = format!("q{i}");
            let d = diff_of_drift(None, vec![change("$.q", Severity::Breaking)], when, &fp);
            let c = check(ep, when);
            let check_id = c.id;
            let r = store
                .record_check_run(
                    ws.id,
                    c,
                    Some(d),
                    draft(Some(&fp), Some(Severity::Breaking), when),
                    None,
                )
                .await;
            r.map(|r| (check_id, r))
        });
    }
    let (mut recorded, mut refused, mut sent) = (Vec::new(), Vec::new(), 0);
    while let Some(joined) = tasks.join_next().await {
        match joined?? {
            (id, CheckRecording::Recorded { alerts_sent, .. }) => {
                recorded.push(id);
                sent += alerts_sent;
            }
            (id, CheckRecording::QuotaExhausted { used, quota }) => {
                assert_eq!((used, quota), (5, 5), "a refusal reports the quota used up");
                refused.push(id);
            }
        }
    }
    assert_eq!(
        (recorded.len(), refused.len()),
        (5, 7),
        "exactly the quota is recorded"
    );
    assert_eq!(sent, 5, "one delivery per recorded drift");
    assert_eq!(store.check_usage(ws.id, at(100)).await?, 5);
    for id in &recorded {
        assert!(
            store.get_check(ws.id, *id).await?.is_some(),
            "a recorded check is stored"
        );
    }
    for id in &refused {
        assert_eq!(
            store.get_check(ws.id, *id).await?,
            None,
            "a refused check leaves no row"
        );
    }
    assert_eq!(
        store
            .list_diffs(ws.id, &DiffFilter::default(), PageRequest::default())
            .await?
            .total,
        5,
        "a refused check leaves no diff"
    );
    assert_eq!(store.delivery_counts(ws.id).await?, counts(5, 0, 0, 0));
    let claimed = claim_all_deliveries(&*store, "quota", at(1_000), 50).await?;
    let events: BTreeSet<Uuid> = claimed.iter().map(|d| d.event_id).collect();
    assert_eq!(events.len(), 5, "a refused check queues no outbox event");

    // One drift seen by 8 concurrent checks of one endpoint: one event, its two deliveries.
    let busy = workspace(&*store, "outbox", None, None).await?;
    for n in [2, 3] {
        store
            .create_webhook(new_hook(busy.id, n, Severity::Info))
            .await?;
    }
    let e = scheduled_endpoint(&*store, busy.id, "drifting").await?.id;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8i64 {
        let store = store.clone();
        tasks.spawn(async move {
            let when = at(200 + i);
            let d = diff_of_drift(None, vec![change("$.o", Severity::Breaking)], when, "same");
            store
                .record_check_run(
                    busy.id,
                    check(e, when),
                    Some(d),
                    draft(Some("same"), Some(Severity::Breaking), when),
                    None,
                )
                .await
        });
    }
    let mut sent = 0;
    while let Some(joined) = tasks.join_next().await {
        match joined?? {
            CheckRecording::Recorded { alerts_sent, .. } => sent += alerts_sent,
            x => return Err(fail(format!("an unlimited workspace refused: {x:?}"))),
        }
    }
    assert_eq!(sent, 2, "one event, one delivery per webhook");
    assert_eq!(store.delivery_counts(busy.id).await?, counts(2, 0, 0, 0));
    let claimed = claim_all_deliveries(&*store, "outbox", at(1_000), 50).await?;
    let events: BTreeSet<Uuid> = claimed.iter().map(|d| d.event_id).collect();
    assert_eq!((events.len(), claimed.len()), (1, 2));
    let diffs = store
        .list_diffs(busy.id, &DiffFilter::default(), PageRequest::default())
        .await?;
    assert_eq!(diffs.total, 1, "the drift is written once");
    let latest = store
        .latest_diff(busy.id, e)
        .await?
        .ok_or_else(|| fail("the drift's diff"))?;
    assert_eq!(latest.base.seen_count, 8, "and seen by every check");
    assert_eq!(
        store
            .list_checks(busy.id, e, PageRequest::default())
            .await?
            .total,
        8
    );
    Ok(())
}

/// A schedule claim marks its endpoints in flight (health `checking` until the lease ends, D7,
/// D19) — not the paused ones; a run that records replaces the mark with its health; a finish
/// without a recording gives back the health before the claim; a claim whose worker died is
/// undone by `reset_stale_checking` once its lease has passed.
pub async fn alert_schedule_claim_marks_checking(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "marks", None, None).await?;
    let mut ids = Vec::new();
    for name in ["ran", "skipped", "paused", "died"] {
        let e = scheduled_endpoint(&*store, ws.id, name).await?;
        store
            .set_health(ws.id, e.id, Health::Warning, at(1))
            .await?;
        ids.push(e);
    }
    let (ran, skipped, paused, died) = (&ids[0], &ids[1], &ids[2], &ids[3]);
    let mut changes = EndpointChanges::of(paused);
    changes.paused = true;
    store
        .update_endpoint(ws.id, paused.id, changes, None, at(2))
        .await?;
    let rows = ids
        .iter()
        .map(|e| NewSchedule {
            workspace_id: ws.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Hourly),
            next_run_at: at(5),
        })
        .collect();
    assert_eq!(store.insert_schedules(rows).await?, 4);
    let health = |id: Uuid| {
        let store = store.clone();
        async move { Ok::<_, StoreError>(store.get_endpoint(ws.id, id).await?.map(|e| e.health)) }
    };
    assert_eq!(
        store.claim_schedules("w", at(10), LEASE, 10).await?.len(),
        4
    );
    for e in [ran, skipped, died] {
        assert_eq!(
            health(e.id).await?,
            Some(Health::Checking),
            "{}",
            e.settings.name
        );
    }
    assert_eq!(health(paused.id).await?, Some(Health::Warning));

    // A recorded run: its own health, and the finish leaves it.
    let r = store
        .record_check_run(
            ws.id,
            check(ran.id, at(20)),
            None,
            draft(None, None, at(20)),
            None,
        )
        .await?;
    assert!(matches!(r, CheckRecording::Recorded { .. }), "{r:?}");
    assert_eq!(health(ran.id).await?, Some(Health::Healthy));
    let next = at(10) + Duration::hours(1);
    assert!(
        store
            .finish_schedule(ran.id, "w", next, "checked", false, at(21))
            .await?
    );
    assert_eq!(health(ran.id).await?, Some(Health::Healthy));
    // Skipped (or failed): the health before the claim comes back.
    assert!(
        store
            .finish_schedule(skipped.id, "w", next, "skipped: quota", true, at(22))
            .await?
    );
    assert_eq!(health(skipped.id).await?, Some(Health::Warning));
    assert!(
        store
            .finish_schedule(paused.id, "w", next, "skipped: paused", true, at(22))
            .await?
    );
    assert_eq!(health(paused.id).await?, Some(Health::Warning));
    // Another owner's finish writes nothing, the mark stays until the lease has passed.
    assert!(
        !store
            .finish_schedule(died.id, "x", next, "checked", false, at(23))
            .await?
    );
    assert_eq!(health(died.id).await?, Some(Health::Checking));
    assert_eq!(store.reset_stale_checking(at(30)).await?, 0);
    assert_eq!(store.reset_stale_checking(after_lease(10)).await?, 1);
    assert_eq!(health(died.id).await?, Some(Health::Warning));
    Ok(())
}

/// The heartbeat: `extend_schedule_leases` moves the owner's leases (and the `checking` marks)
/// forward, never back, and leaves another owner's lease alone; an extended run is not claimable
/// when its first lease would have expired.
pub async fn alert_schedule_leases_extend(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "beat", None, None).await?;
    let a = scheduled_endpoint(&*store, ws.id, "a").await?;
    let b = scheduled_endpoint(&*store, ws.id, "b").await?;
    let rows = [&a, &b]
        .iter()
        .map(|e| NewSchedule {
            workspace_id: ws.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Hourly),
            next_run_at: at(5),
        })
        .collect();
    store.insert_schedules(rows).await?;
    assert_eq!(store.claim_schedules("w", at(10), LEASE, 1).await?.len(), 1);
    assert_eq!(store.claim_schedules("x", at(10), LEASE, 1).await?.len(), 1);
    let ids = [a.id, b.id];
    assert_eq!(store.extend_schedule_leases("w", &[], at(0)).await?, 0);
    // Only w's lease moves; to an earlier time nothing moves.
    let later = after_lease(10) + Duration::seconds(30);
    assert_eq!(store.extend_schedule_leases("w", &ids, later).await?, 1);
    assert_eq!(store.extend_schedule_leases("w", &ids, at(20)).await?, 0);
    // Past the first lease: x's schedule is claimable again, w's is not.
    let claimed = store
        .claim_schedules("y", after_lease(10), LEASE, 10)
        .await?;
    assert_eq!(claimed.len(), 1);
    let w_held = if claimed[0].endpoint_id == a.id {
        b.id
    } else {
        a.id
    };
    // w's `checking` mark moved with its lease: a reset at that time leaves it.
    assert_eq!(store.reset_stale_checking(after_lease(10)).await?, 0);
    assert_eq!(
        store.get_endpoint(ws.id, w_held).await?.map(|e| e.health),
        Some(Health::Checking)
    );
    assert!(
        store
            .finish_schedule(w_held, "w", later, "checked", false, after_lease(10))
            .await?
    );
    Ok(())
}

/// Issue 23: a scheduled run's check and its schedule's finish are ONE transaction. Recorded
/// with a [`ScheduleFinish`], the slot is finished by the same commit: a process killed right
/// after it (no `finish_schedule`) leaves nothing to claim again once the lease has passed, and
/// the quota was spent once. A finish whose owner lost the lease writes no schedule change (the
/// check is kept); a recording that fails inside its transaction writes neither the check nor
/// the finish, and takes no unit.
pub async fn alert_scheduled_run_finishes_with_its_check(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "slots", None, Some(10)).await?;
    let e = scheduled_endpoint(&*store, ws.id, "e").await?;
    let due = at(5);
    let next = due + Duration::hours(1);
    store
        .insert_schedules(vec![NewSchedule {
            workspace_id: ws.id,
            endpoint_id: e.id,
            cadence: Cadence::Every(Frequency::Hourly),
            next_run_at: due,
        }])
        .await?;
    assert_eq!(
        store.claim_schedules("w", at(10), LEASE, 10).await?.len(),
        1
    );
    let finish = |owner: &str, next_run_at: OffsetDateTime, now: OffsetDateTime| ScheduleFinish {
        owner: owner.into(),
        next_run_at,
        now,
    };

    // The run records a drift and finishes its slot in the same transaction.
    let mut first = check(e.id, at(20));
    first.scheduled = true;
    let first_diff = diff(None, vec![change("$.a", Severity::Warning)], at(20));
    let first_diff_id = first_diff.id;
    match store
        .record_check_run(
            ws.id,
            first,
            Some(first_diff),
            draft(Some("a"), Some(Severity::Warning), at(20)),
            Some(finish("w", next, at(21))),
        )
        .await?
    {
        CheckRecording::Recorded {
            schedule_finished,
            alerts_sent,
            recorded,
        } => {
            assert!(schedule_finished, "the owner held the lease");
            assert_eq!((alerts_sent, recorded.counts.changes), (0, 1));
        }
        x => return Err(fail(format!("scheduled run: {x:?}"))),
    }
    // Killed here: no `finish_schedule`. Once the lease has passed, the slot is not claimable
    // again (it would run, and take a unit, a second time).
    let again = store
        .claim_schedules("rescuer", after_lease(10), LEASE, 10)
        .await?;
    assert!(
        again.is_empty(),
        "the recorded slot was claimed again: {again:?}"
    );
    let info = store
        .schedule_of(ws.id, e.id)
        .await?
        .ok_or_else(|| fail("schedule row gone"))?;
    assert_eq!(
        (info.next_run_at, info.last_run_at, info.runs, info.skipped),
        (next, Some(at(21)), 1, 0)
    );
    assert_eq!(
        info.last_outcome.as_deref(),
        Some(checked_outcome(1, 0).as_str())
    );
    assert_eq!(store.check_usage(ws.id, at(20)).await?, 1, "one unit spent");
    assert_eq!(
        store.get_endpoint(ws.id, e.id).await?.map(|e| e.health),
        Some(Health::Warning),
        "the check's health, not the claim's mark"
    );
    // The lease was released with the finish: "w" no longer holds it.
    assert!(
        !store
            .finish_schedule(e.id, "w", next, "late", false, at(22))
            .await?
    );

    // The next slot: claimed by "w2"; a recording whose finish names another owner keeps its
    // check but leaves the schedule to the lease holder.
    assert_eq!(store.claim_schedules("w2", next, LEASE, 10).await?.len(), 1);
    let lost = check(e.id, next + Duration::seconds(1));
    let lost_id = lost.id;
    match store
        .record_check_run(
            ws.id,
            lost,
            None,
            draft(None, None, next),
            Some(finish("w", next + Duration::hours(1), next)),
        )
        .await?
    {
        CheckRecording::Recorded {
            schedule_finished, ..
        } => assert!(!schedule_finished, "another owner holds the lease"),
        x => return Err(fail(format!("lost lease: {x:?}"))),
    }
    assert!(store.get_check(ws.id, lost_id).await?.is_some());
    let info = store
        .schedule_of(ws.id, e.id)
        .await?
        .ok_or_else(|| fail("schedule row gone"))?;
    assert_eq!((info.next_run_at, info.runs), (next, 1));
    assert_eq!(store.check_usage(ws.id, at(20)).await?, 2);

    // Failure inside the transaction: the check row is inserted, then its diff collides with an
    // existing diff id. Neither the check nor the finish is written, and no unit is taken.
    let failing = check(e.id, next + Duration::seconds(2));
    let failing_id = failing.id;
    let mut colliding = diff(None, vec![change("$.b", Severity::Breaking)], next);
    colliding.id = first_diff_id;
    let r = store
        .record_check_run(
            ws.id,
            failing,
            Some(colliding),
            draft(Some("b"), Some(Severity::Breaking), next),
            Some(finish("w2", next + Duration::hours(1), next)),
        )
        .await;
    assert!(r.is_err(), "a colliding diff id must fail: {r:?}");
    assert!(store.get_check(ws.id, failing_id).await?.is_none());
    let info = store
        .schedule_of(ws.id, e.id)
        .await?
        .ok_or_else(|| fail("schedule row gone"))?;
    assert_eq!(
        (info.next_run_at, info.runs),
        (next, 1),
        "no finish written"
    );
    assert_eq!(store.check_usage(ws.id, at(20)).await?, 2, "no unit taken");
    // The lease is still w2's: its run can still be finished (as a failed run).
    assert!(
        store
            .finish_schedule(e.id, "w2", next + Duration::hours(1), "failed", false, next)
            .await?
    );
    Ok(())
}

/// Expands one `#[tokio::test]` per [`AlertStore`] case (called by
/// [`crate::conformance_suite!`]; not meant to be used on its own).
#[doc(hidden)]
#[macro_export]
macro_rules! alert_conformance_cases {
    ($setup:path, $teardown:path) => {
        $crate::alert_conformance_cases!(@cases $setup, $teardown;
            alert_webhooks_round_trip,
            alert_webhook_kinds,
            alert_record_check_alerting,
            alert_delivery_claims_are_exclusive,
            alert_delivery_finish_retry_give_up,
            alert_schedules_insert_and_read,
            alert_schedules_next_run_on_reads,
            alert_schedule_claims_and_leases,
            alert_long_leases_hold,
            alert_record_check_run,
            alert_schedule_claim_marks_checking,
            alert_schedule_leases_extend,
            alert_scheduled_run_finishes_with_its_check,
            alert_recording_quota_and_outbox_under_concurrency,
        );
    };
    (@cases $setup:path, $teardown:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() -> $crate::testkit::TestResult {
                let Some((store, guard)) = $setup().await? else {
                    return Ok(());
                };
                let result = $crate::testkit_alerts::$case(store).await;
                $teardown(guard).await?;
                result
            }
        )*
    };
}
