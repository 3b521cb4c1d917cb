//! Conformance cases of the operator reads ([`crate::OpsStore`]), run by both adapters' test
//! files next to [`crate::conformance_suite!`] (feature `testkit`). Each case gets a freshly
//! migrated, empty store.

use crate::testkit::{TestResult, at, check, diff, endpoint_row, t0, workspace};
use crate::*;
use apidrift_model::{Health, Severity};
use std::sync::Arc;

fn fail(msg: impl Into<String>) -> Box<dyn std::error::Error + Send + Sync> {
    msg.into().into()
}

/// `list_workspaces`: empty, then every workspace oldest first, whatever their plan or limits.
pub async fn list_workspaces(store: Arc<dyn Store>) -> TestResult {
    assert_eq!(store.list_workspaces().await?, Vec::<Workspace>::new());
    let mut created = Vec::new();
    for (i, name) in ["zulu", "alpha", "mike"].iter().enumerate() {
        let ws = store
            .create_workspace(NewWorkspace {
                id: new_id(),
                name: (*name).into(),
                plan: apidrift_model::Plan::Starter,
                endpoint_limit: (i == 1).then_some(7),
                check_quota: None,
                created_at: at(1000 - i64::try_from(i)? * 100),
            })
            .await?;
        created.push(ws);
    }
    let listed = store.list_workspaces().await?;
    // Oldest first: created_at 800 (mike), 900 (alpha), 1000 (zulu).
    let names: Vec<&str> = listed.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["mike", "alpha", "zulu"]);
    for ws in &created {
        let found = listed
            .iter()
            .find(|w| w.id == ws.id)
            .ok_or_else(|| fail("a created workspace is missing"))?;
        assert_eq!(found, ws);
    }
    Ok(())
}

/// `operator_gauges`: endpoint counts per health across workspaces and the pending outbox.
pub async fn operator_gauges(store: Arc<dyn Store>) -> TestResult {
    let empty = store.operator_gauges().await?;
    assert_eq!(empty.outbox_pending, 0);
    for h in [
        Health::Healthy,
        Health::Warning,
        Health::Breaking,
        Health::Unknown,
        Health::Checking,
    ] {
        assert_eq!(empty.endpoints(h), 0, "{h:?}");
    }

    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let in_a = store
        .create_endpoints(
            a.id,
            vec![
                endpoint_row("a1", t0()),
                endpoint_row("a2", t0()),
                endpoint_row("a3", t0()),
            ],
        )
        .await?
        .created;
    let in_b = store
        .create_endpoints(b.id, vec![endpoint_row("b1", t0())])
        .await?
        .created;
    let initial = in_a.first().map(|e| e.health).ok_or_else(|| fail("none"))?;
    let g = store.operator_gauges().await?;
    assert_eq!(g.endpoints(initial), 4, "{g:?}");

    let (a1, a2) = (&in_a[0], &in_a[1]);
    store
        .set_health(a.id, a1.id, Health::Breaking, at(10))
        .await?;
    store
        .set_health(a.id, a2.id, Health::Healthy, at(10))
        .await?;
    store
        .set_health(b.id, in_b[0].id, Health::Breaking, at(10))
        .await?;
    let g = store.operator_gauges().await?;
    assert_eq!(g.endpoints(Health::Breaking), 2, "{g:?}");
    assert_eq!(g.endpoints(Health::Healthy), 1, "{g:?}");
    assert_eq!(g.endpoints(initial), 1, "{g:?}");
    let total: u64 = g.endpoints_by_health.iter().map(|(_, n)| n).sum();
    assert_eq!(total, 4);

    // A drift alerted to two webhooks queues two pending deliveries.
    for url in ["https://hooks.example.com/1", "https://hooks.example.com/2"] {
        store
            .create_webhook(NewWebhook {
                kind: crate::WebhookKind::Generic,
                id: new_id(),
                workspace_id: a.id,
                url: url.into(),
                min_severity: Severity::Info,
                sealed_secret: vec![1, 2, 3],
                created_at: t0(),
            })
            .await?;
    }
    let event_id = new_id();
    let draft = AlertDraft {
        event_id,
        created_at: at(20),
        fingerprint: Some("fp".into()),
        max_severity: Some(Severity::Breaking),
        detected_payload: format!("{{\"id\":\"{event_id}\"}}"),
        resolved_payload: format!("{{\"id\":\"{event_id}\"}}"),
        latency: None,
    };
    let changes = vec![crate::testkit::change("$.id", Severity::Breaking)];
    let (_, queued) = store
        .record_check_alerting(
            a.id,
            check(a1.id, at(20)),
            Some(diff(None, changes, at(20))),
            draft,
        )
        .await?;
    assert_eq!(queued, 2);
    assert_eq!(store.operator_gauges().await?.outbox_pending, 2);

    // Delivered and given-up deliveries are no longer pending; a retry still is.
    let claimed = store
        .claim_deliveries("ops-test", at(30), std::time::Duration::from_secs(60), 10)
        .await?;
    assert_eq!(claimed.len(), 2);
    let attempt = |status| DeliveryAttempt {
        id: new_id(),
        attempted_at: at(31),
        http_status: Some(status),
        error: None,
        duration_ms: 5,
    };
    assert!(
        store
            .finish_delivery(
                claimed[0].id,
                "ops-test",
                attempt(200),
                DeliveryOutcome::Delivered
            )
            .await?
    );
    assert_eq!(store.operator_gauges().await?.outbox_pending, 1);
    assert!(
        store
            .finish_delivery(
                claimed[1].id,
                "ops-test",
                attempt(500),
                DeliveryOutcome::Retry(at(5000))
            )
            .await?
    );
    assert_eq!(store.operator_gauges().await?.outbox_pending, 1);
    Ok(())
}

/// `endpoint_series`: the first `limit` endpoints across workspaces by workspace name, endpoint
/// name and id, with their last check's up, response time and open drift, and the total.
pub async fn endpoint_series(store: Arc<dyn Store>) -> TestResult {
    assert_eq!(store.endpoint_series(10).await?, EndpointSeries::default());
    let b = workspace(&*store, "b \"ws\"", None, None).await?;
    let a = workspace(&*store, "a", None, None).await?;
    let in_a = store
        .create_endpoints(
            a.id,
            vec![endpoint_row("zeta", t0()), endpoint_row("alpha", t0())],
        )
        .await?
        .created;
    let in_b = store
        .create_endpoints(b.id, vec![endpoint_row("mid", t0())])
        .await?
        .created;
    let (zeta, alpha, mid) = (&in_a[0], &in_a[1], &in_b[0]);
    // alpha: up (200 in 40 ms) with breaking drift; zeta: a 503 in 40 ms, then a check without
    // a response; mid: never checked.
    let changes = vec![crate::testkit::change("$.id", Severity::Breaking)];
    store
        .record_check(
            a.id,
            check(alpha.id, at(20)),
            Some(diff(None, changes, at(20))),
        )
        .await?;
    store
        .set_health(a.id, alpha.id, Health::Breaking, at(20))
        .await?;
    let mut failed = check(zeta.id, at(20));
    failed.http_status = Some(503);
    store.record_check(a.id, failed, None).await?;
    let series = store.endpoint_series(10).await?;
    let names: Vec<(&str, &str)> = series
        .samples
        .iter()
        .map(|s| (s.workspace.as_str(), s.endpoint.as_str()))
        .collect();
    assert_eq!(names, [("a", "alpha"), ("a", "zeta"), ("b \"ws\"", "mid")]);
    assert_eq!(series.total, 3);
    let s = &series.samples;
    assert_eq!((s[0].endpoint_id, s[2].endpoint_id), (alpha.id, mid.id));
    assert_eq!(
        (s[0].up, s[0].response_time_ms, s[0].drift_open),
        (Some(true), Some(40), true)
    );
    assert_eq!((s[1].up, s[1].drift_open), (Some(false), false));
    assert_eq!(
        (s[2].up, s[2].response_time_ms, s[2].drift_open),
        (None, None, false)
    );
    let mut none = check(zeta.id, at(30));
    none.http_status = None;
    none.response_time = None;
    store.record_check(a.id, none, None).await?;
    let series = store.endpoint_series(10).await?;
    assert_eq!(
        (series.samples[1].up, series.samples[1].response_time_ms),
        (Some(false), None)
    );
    // Capped: the first ones in order, and the total.
    let capped = store.endpoint_series(2).await?;
    assert_eq!(capped.samples.len(), 2);
    assert_eq!(capped.samples[1].endpoint, "zeta");
    assert_eq!(capped.total, 3);
    let zero = store.endpoint_series(0).await?;
    assert_eq!((zero.samples.len(), zero.total), (0, 3));
    Ok(())
}

/// Expands one `#[tokio::test]` per operator case, with the same `setup`/`teardown` contract as
/// [`crate::conformance_suite!`].
#[macro_export]
macro_rules! ops_conformance_suite {
    (setup = $setup:path, teardown = $teardown:path $(,)?) => {
        $crate::ops_conformance_suite!(@cases $setup, $teardown; list_workspaces, operator_gauges, endpoint_series);
    };
    (@cases $setup:path, $teardown:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() -> $crate::testkit::TestResult {
                let Some((store, guard)) = $setup().await? else {
                    return Ok(());
                };
                let result = $crate::testkit_ops::$case(store).await;
                $teardown(guard).await?;
                result
            }
        )*
    };
}
