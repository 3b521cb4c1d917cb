//! Concurrent writes of one workspace on PostgreSQL (issue 23, item 4): endpoint deletes and
//! creates racing check recordings must never fail with a database error. Before the lock order
//! of the delete and create paths was made consistent with the check path (and deadlocks were
//! retried), a check that had updated `workspace_counts` (its diff's trigger) waited for the
//! workspace row (its outbox event's foreign key) that a delete held `FOR UPDATE` while waiting
//! for `workspace_counts`: PostgreSQL broke the cycle by failing one side with `40P01`.
//!
//! The run lasts `APIDRIFT_PG_RACE_SECS` seconds (default 8; the acceptance run is 60).

use apidrift_model::Severity;
use apidrift_store::testkit::{TestResult, at, change, check, diff, endpoint_row, workspace};
use apidrift_store::{
    AlertDraft, CheckRecording, ConnectOptions, NewWebhook, Store, StoreError, WebhookKind, new_id,
};
use apidrift_store_postgres::PgStore;
use apidrift_store_postgres::testdb::TestDb;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

fn race_time() -> Duration {
    let secs = std::env::var("APIDRIFT_PG_RACE_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(8);
    Duration::from_secs(secs.max(1))
}

/// A draft whose fingerprint changes on every call, so every check with a diff queues an event
/// (and its deliveries) in its transaction.
fn draft(n: u64) -> AlertDraft {
    let event_id = new_id();
    AlertDraft {
        event_id,
        created_at: at(0),
        fingerprint: Some(format!("fp-{n}")),
        max_severity: Some(Severity::Breaking),
        detected_payload: format!("{{\"id\":\"{event_id}\"}}"),
        resolved_payload: format!("{{\"id\":\"{event_id}\"}}"),
        latency: None,
    }
}

/// Endpoints alive in the workspace (the deleters take from it, the creators add to it).
type Live = Arc<Mutex<Vec<Uuid>>>;

fn pick(live: &Live, n: u64) -> Option<Uuid> {
    let live = live.lock().unwrap_or_else(|p| p.into_inner());
    if live.is_empty() {
        return None;
    }
    let i = usize::try_from(n % live.len() as u64).unwrap_or(0);
    Some(live[i])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deletes_creates_and_checks_race_without_errors() -> TestResult {
    let Some(db) = TestDb::create().await? else {
        return Ok(());
    };
    let result = race(&db).await;
    db.drop_db().await?;
    result
}

async fn race(db: &TestDb) -> TestResult {
    let store: Arc<dyn Store> = Arc::new(
        PgStore::connect_with(
            &db.url,
            ConnectOptions {
                migrate: true,
                max_connections: Some(24),
            },
        )
        .await?,
    );
    let ws = workspace(&*store, "race", None, None).await?.id;
    for n in 0..2 {
        store
            .create_webhook(NewWebhook {
                id: new_id(),
                workspace_id: ws,
                kind: WebhookKind::Generic,
                url: format!("https://hooks.example.com/{n}"),
                min_severity: Severity::Info,
                sealed_secret: vec![1, 2, 3],
                created_at: at(0),
            })
            .await?;
    }
    let live: Live = Arc::default();
    let rows = (0..60)
        .map(|i| endpoint_row(&format!("e{i}"), at(0)))
        .collect();
    let created = store.create_endpoints(ws, rows).await?.created;
    live.lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(created.iter().map(|e| e.id));

    let deadline = Instant::now() + race_time();
    let (checks, deletes, creates) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    // Eight checkers: a check with a new drift (a diff and an event) on a live endpoint; a check
    // of an endpoint deleted meanwhile is `NotFound` (the API's 404), anything else a failure.
    for worker in 0..8u64 {
        let (store, live, checks, failures) = (
            store.clone(),
            live.clone(),
            checks.clone(),
            failures.clone(),
        );
        tasks.spawn(async move {
            let mut n = worker;
            while Instant::now() < deadline {
                n += 8;
                let Some(ep) = pick(&live, n * 7919) else {
                    tokio::task::yield_now().await;
                    continue;
                };
                let when = at(i64::try_from(n).unwrap_or(0));
                let d = diff(None, vec![change("$.a", Severity::Breaking)], when);
                match store
                    .record_check_run(ws, check(ep, when), Some(d), draft(n), None)
                    .await
                {
                    Ok(CheckRecording::Recorded { .. }) => {
                        checks.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(StoreError::NotFound) => {}
                    other => failures
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(format!("check: {other:?}")),
                }
            }
        });
    }
    // Two deleters and one creator keep the set of endpoints turning over.
    for worker in 0..2u64 {
        let (store, live, deletes, failures) = (
            store.clone(),
            live.clone(),
            deletes.clone(),
            failures.clone(),
        );
        tasks.spawn(async move {
            let mut n = worker;
            while Instant::now() < deadline {
                n += 2;
                let ep = {
                    let mut live = live.lock().unwrap_or_else(|p| p.into_inner());
                    if live.len() < 10 {
                        None
                    } else {
                        let i = usize::try_from(n * 31 % live.len() as u64).unwrap_or(0);
                        Some(live.swap_remove(i))
                    }
                };
                let Some(ep) = ep else {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                };
                match store.delete_endpoint(ws, ep, None).await {
                    Ok(()) => {
                        deletes.fetch_add(1, Ordering::Relaxed);
                    }
                    other => failures
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(format!("delete: {other:?}")),
                }
            }
        });
    }
    {
        let (store, live, creates, failures) = (
            store.clone(),
            live.clone(),
            creates.clone(),
            failures.clone(),
        );
        tasks.spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                n += 1;
                if live.lock().unwrap_or_else(|p| p.into_inner()).len() >= 60 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
                let rows = (0..3)
                    .map(|i| endpoint_row(&format!("c{n}-{i}"), at(0)))
                    .collect();
                match store.create_endpoints(ws, rows).await {
                    Ok(made) => {
                        creates.fetch_add(1, Ordering::Relaxed);
                        live.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .extend(made.created.iter().map(|e| e.id));
                    }
                    Err(e) => failures
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(format!("create: {e:?}")),
                }
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined?;
    }
    let failures = std::mem::take(&mut *failures.lock().unwrap_or_else(|p| p.into_inner()));
    let (checks, deletes, creates) = (
        checks.load(Ordering::Relaxed),
        deletes.load(Ordering::Relaxed),
        creates.load(Ordering::Relaxed),
    );
    eprintln!(
        "{checks} checks, {deletes} deletes, {creates} creates, {} failures",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures in {checks} checks, {deletes} deletes, {creates} creates; first: {:?}",
        failures.len(),
        failures.iter().take(3).collect::<Vec<_>>()
    );
    assert!(
        checks > 0 && deletes > 0,
        "the race ran: {checks} checks, {deletes} deletes"
    );
    // The counters the triggers keep still match the rows.
    let alive = live.lock().unwrap_or_else(|p| p.into_inner()).len() as u64;
    assert_eq!(store.count_endpoints(ws).await?, alive);
    Ok(())
}

/// A deadlock the lock order cannot prevent (here forced by a raw connection taking
/// `workspace_counts`, then the endpoint row) is retried: the adapter's delete is the victim
/// PostgreSQL aborts, runs again once the other transaction ends, and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deadlocked_transaction_is_run_again() -> TestResult {
    let Some(db) = TestDb::create().await? else {
        return Ok(());
    };
    let result = forced_deadlock(&db).await;
    db.drop_db().await?;
    result
}

async fn forced_deadlock(db: &TestDb) -> TestResult {
    use diesel::sql_types::Uuid as SqlUuid;
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
    let store: Arc<dyn Store> = Arc::new(PgStore::connect(&db.url).await?);
    let ws = workspace(&*store, "deadlock", None, None).await?.id;
    let ep = store
        .create_endpoints(ws, vec![endpoint_row("victim", at(0))])
        .await?
        .created
        .pop()
        .ok_or("no endpoint")?
        .id;
    let mut other = AsyncPgConnection::establish(&db.url).await?;
    // The other transaction waits long before checking for deadlocks, so the adapter's
    // transaction (1 s by default) is the one PostgreSQL aborts.
    other
        .batch_execute("BEGIN; SET LOCAL deadlock_timeout = '60s'")
        .await?;
    diesel::sql_query("UPDATE workspace_counts SET endpoints = endpoints WHERE workspace_id = $1")
        .bind::<SqlUuid, _>(ws)
        .execute(&mut other)
        .await?;
    // The delete locks the endpoint row, then waits for workspace_counts (its trigger).
    let deleting = {
        let store = store.clone();
        tokio::spawn(async move { store.delete_endpoint(ws, ep, None).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !deleting.is_finished(),
        "the delete waits for workspace_counts"
    );
    // Now the other transaction waits for the endpoint row: a cycle. It gets the row once the
    // delete's first run has been aborted and rolled back, so the endpoint is still there.
    let started = Instant::now();
    let locked = diesel::sql_query("SELECT id FROM endpoints WHERE id = $1 FOR UPDATE")
        .bind::<SqlUuid, _>(ep)
        .execute(&mut other)
        .await?;
    assert_eq!(locked, 1, "the first run of the delete was rolled back");
    eprintln!("the deadlock was broken after {:?}", started.elapsed());
    other.batch_execute("COMMIT").await?;
    // The retry deletes it.
    deleting.await??;
    assert!(store.get_endpoint(ws, ep).await?.is_none());
    assert_eq!(store.count_endpoints(ws).await?, 0);
    Ok(())
}
