//! The drift-incident cases of the conformance suite (feature `testkit`, D26): a check with the
//! fingerprint of its endpoint's open diff is linked to that diff and counted on it instead of
//! writing a diff; a different drift, an accept or a clean check closes the open diff.
//!
//! Each case is a `pub async fn(Arc<dyn Store>) -> TestResult` on a fresh, migrated store, like
//! the cases of [`crate::testkit`]; [`crate::conformance_suite!`] expands them through
//! [`crate::incident_conformance_cases!`].

use crate::testkit::{TestResult, at, change, check, diff_of_drift, plain_endpoint, workspace};
use crate::*;
use apidrift_model::{DiffSummary, Health, Severity};
use std::sync::Arc;

fn fail(msg: impl Into<String>) -> Box<dyn std::error::Error + Send + Sync> {
    msg.into().into()
}

async fn endpoint(store: &dyn Store, ws: Uuid, name: &str) -> Result<Uuid, StoreError> {
    let mut created = store
        .create_endpoints(ws, vec![plain_endpoint(name, at(0))])
        .await?
        .created;
    created.pop().map(|e| e.id).ok_or(StoreError::NotFound)
}

/// The diff input of the drift `fp` (one warning change at `$.<fp>`), `None` for a clean check.
fn drift(fp: Option<&str>, ms: i64) -> Option<NewDiff> {
    fp.map(|fp| {
        diff_of_drift(
            None,
            vec![change(&format!("$.{fp}"), Severity::Warning)],
            at(ms),
            fp,
        )
    })
}

/// Records a check of `endpoint` at `at(ms)` with the drift `fp` (or clean).
async fn record(
    store: &dyn Store,
    ws: Uuid,
    endpoint: Uuid,
    fp: Option<&str>,
    ms: i64,
) -> Result<RecordedCheck, StoreError> {
    store
        .record_check(ws, check(endpoint, at(ms)), drift(fp, ms))
        .await
}

/// The endpoint's diffs, newest first.
async fn diffs_of(
    store: &dyn Store,
    ws: Uuid,
    endpoint: Uuid,
) -> Result<Vec<DiffSummary>, StoreError> {
    let filter = DiffFilter {
        endpoint_id: Some(endpoint),
        ..Default::default()
    };
    Ok(store
        .list_diffs(ws, &filter, PageRequest::default())
        .await?
        .items)
}

fn seen(id: Uuid, first: i64, last: i64, count: u32) -> Option<DiffSeen> {
    Some(DiffSeen {
        id,
        first_seen_at: at(first),
        last_seen_at: at(last),
        seen_count: count,
    })
}

fn id_of(r: &RecordedCheck) -> Result<Uuid, Box<dyn std::error::Error + Send + Sync>> {
    r.diff
        .map(|d| d.id)
        .ok_or_else(|| fail(format!("no diff recorded: {r:?}")))
}

/// The same fingerprint twice: one diff seen twice, both checks linked to it; the first/last
/// seen and the count read back through the list, the detail and the check.
pub async fn incident_same_fingerprint_joins(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "incidents", None, None).await?.id;
    let e = endpoint(&*store, ws, "e").await?;
    let other = endpoint(&*store, ws, "other").await?;
    let first = record(&*store, ws, e, Some("a"), 10).await?;
    let d = id_of(&first)?;
    assert_eq!(first.diff, seen(d, 10, 10, 1));
    assert_eq!(first.check.diff_id, Some(d));
    let second = record(&*store, ws, e, Some("a"), 20).await?;
    assert_eq!(second.diff, seen(d, 10, 20, 2));
    assert_eq!(second.check.diff_id, Some(d));
    assert_eq!((second.health, second.counts.warning), (Health::Warning, 1));
    assert_eq!(
        store
            .get_check(ws, second.check.id)
            .await?
            .map(|c| c.diff_id),
        Some(Some(d)),
        "the check row links the open diff"
    );
    let listed = diffs_of(&*store, ws, e).await?;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let s = &listed[0];
    assert_eq!(s.id, d);
    assert_eq!(
        (s.created_at, s.first_seen_at, s.last_seen_at, s.seen_count),
        (Some(at(10)), Some(at(10)), Some(at(20)), 2)
    );
    let detail = store
        .get_diff(ws, d)
        .await?
        .ok_or_else(|| fail("the diff"))?;
    assert_eq!(detail.base, *s);
    assert_eq!(
        detail.check_id,
        Some(first.check.id),
        "the check that opened it"
    );
    let endpoint_now = store
        .get_endpoint(ws, e)
        .await?
        .ok_or_else(|| fail("the endpoint"))?;
    assert_eq!(endpoint_now.last_checked_at, Some(at(20)));
    // The same fingerprint on another endpoint is another drift.
    let elsewhere = record(&*store, ws, other, Some("a"), 30).await?;
    assert_ne!(id_of(&elsewhere)?, d);
    assert_eq!(elsewhere.diff.map(|x| x.seen_count), Some(1));
    let third = record(&*store, ws, e, Some("a"), 40).await?;
    assert_eq!(third.diff, seen(d, 10, 40, 3));
    assert_eq!(diffs_of(&*store, ws, e).await?.len(), 1);
    Ok(())
}

/// A different fingerprint opens a new diff and closes the open one: the old drift seen again
/// later is a third diff, not the first one reopened.
pub async fn incident_different_fingerprint_opens(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "incidents", None, None).await?.id;
    let e = endpoint(&*store, ws, "e").await?;
    let a = id_of(&record(&*store, ws, e, Some("a"), 10).await?)?;
    let b1 = record(&*store, ws, e, Some("b"), 20).await?;
    let b = id_of(&b1)?;
    assert_ne!(a, b);
    assert_eq!(b1.diff, seen(b, 20, 20, 1));
    assert_eq!(
        record(&*store, ws, e, Some("b"), 30).await?.diff,
        seen(b, 20, 30, 2)
    );
    let again = record(&*store, ws, e, Some("a"), 40).await?;
    let a2 = id_of(&again)?;
    assert!(a2 != a && a2 != b, "the closed drift is not reopened");
    assert_eq!(again.diff, seen(a2, 40, 40, 1));
    let listed = diffs_of(&*store, ws, e).await?;
    let counts: Vec<(Uuid, u32)> = listed.iter().map(|s| (s.id, s.seen_count)).collect();
    assert_eq!(counts, vec![(a2, 1), (b, 2), (a, 1)]);
    Ok(())
}

/// Accepting closes the open diff (the same drift after it is a new diff); a clean check resolves
/// it (likewise).
pub async fn incident_accept_and_clean_close(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "incidents", None, None).await?.id;
    let e = endpoint(&*store, ws, "e").await?;
    let d1 = id_of(&record(&*store, ws, e, Some("a"), 10).await?)?;
    let accepted = store.accept_diff(ws, d1, None, at(15)).await?;
    assert!(accepted.newly_accepted);
    let after_accept = record(&*store, ws, e, Some("a"), 20).await?;
    let d2 = id_of(&after_accept)?;
    assert_ne!(d2, d1, "an accepted diff is closed");
    assert_eq!(after_accept.diff, seen(d2, 20, 20, 1));
    assert_eq!(
        record(&*store, ws, e, Some("a"), 30).await?.diff,
        seen(d2, 20, 30, 2)
    );
    let clean = record(&*store, ws, e, None, 40).await?;
    assert_eq!((clean.diff, clean.check.diff_id), (None, None));
    assert_eq!(clean.health, Health::Healthy);
    let after_clean = record(&*store, ws, e, Some("a"), 50).await?;
    let d3 = id_of(&after_clean)?;
    assert!(d3 != d2 && d3 != d1, "a resolved diff is closed");
    assert_eq!(after_clean.diff, seen(d3, 50, 50, 1));
    let listed = diffs_of(&*store, ws, e).await?;
    let counts: Vec<(Uuid, u32, bool)> = listed
        .iter()
        .map(|s| (s.id, s.seen_count, s.accepted))
        .collect();
    assert_eq!(counts, vec![(d3, 1, false), (d2, 2, false), (d1, 1, true)]);
    Ok(())
}

/// A check refused for want of a quota unit writes nothing: neither its check nor the touch of
/// the open diff. The alerting path counts the drift once.
pub async fn incident_quota_refusal_rolls_back_the_touch(store: Arc<dyn Store>) -> TestResult {
    let ws = workspace(&*store, "incidents", None, Some(2)).await?.id;
    let e = endpoint(&*store, ws, "e").await?;
    store
        .create_webhook(NewWebhook {
            kind: WebhookKind::Generic,
            id: new_id(),
            workspace_id: ws,
            url: "https://hooks.example.com/1".into(),
            min_severity: Severity::Info,
            sealed_secret: b"sealed".to_vec(),
            created_at: at(0),
        })
        .await?;
    let run = |ms: i64| {
        let store = store.clone();
        async move {
            let event_id = new_id();
            let draft = AlertDraft {
                event_id,
                created_at: at(ms),
                fingerprint: Some("a".into()),
                max_severity: Some(Severity::Warning),
                detected_payload: format!("{{\"id\":\"{event_id}\"}}"),
                resolved_payload: format!("{{\"id\":\"{event_id}\"}}"),
                latency: None,
            };
            store
                .record_check_run(ws, check(e, at(ms)), drift(Some("a"), ms), draft, None)
                .await
        }
    };
    let mut opened = None;
    for (ms, count, alerts) in [(10, 1, 1), (20, 2, 0)] {
        match run(ms).await? {
            CheckRecording::Recorded {
                recorded,
                alerts_sent,
                ..
            } => {
                let d = id_of(&recorded)?;
                let first = *opened.get_or_insert(d);
                assert_eq!(recorded.diff, seen(first, 10, ms, count));
                assert_eq!(alerts_sent, alerts, "alerted once per fingerprint");
            }
            x => return Err(fail(format!("run at {ms}: {x:?}"))),
        }
    }
    let before = diffs_of(&*store, ws, e).await?;
    let deliveries = store.delivery_counts(ws).await?;
    assert_eq!(
        run(30).await?,
        CheckRecording::QuotaExhausted { used: 2, quota: 2 }
    );
    assert_eq!(
        diffs_of(&*store, ws, e).await?,
        before,
        "the touch rolled back"
    );
    assert_eq!(before.len(), 1);
    assert_eq!(
        (before[0].seen_count, before[0].last_seen_at),
        (2, Some(at(20)))
    );
    assert_eq!(store.delivery_counts(ws).await?, deliveries);
    assert_eq!(
        store
            .list_checks(ws, e, PageRequest::default())
            .await?
            .total,
        2
    );
    Ok(())
}

/// Expands one `#[tokio::test]` per incident case (see [`crate::conformance_suite!`]).
#[macro_export]
macro_rules! incident_conformance_cases {
    ($setup:path, $teardown:path) => {
        $crate::incident_conformance_cases!(@cases $setup, $teardown;
            incident_same_fingerprint_joins,
            incident_different_fingerprint_opens,
            incident_accept_and_clean_close,
            incident_quota_refusal_rolls_back_the_touch,
        );
    };
    (@cases $setup:path, $teardown:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() -> $crate::testkit::TestResult {
                let Some((store, guard)) = $setup().await? else {
                    return Ok(());
                };
                let result = $crate::testkit_incidents::$case(store).await;
                $teardown(guard).await?;
                result
            }
        )*
    };
}
