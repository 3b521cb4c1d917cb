//! The statements one recorded check makes on PostgreSQL (issue 29, item 1): counted by
//! `pg_stat_statements` in a test database of its own, on a store of one pooled connection (its
//! statements prepared by a first check, so the count is the steady state's).
//!
//! A recorded check is `BEGIN`, one pipelined round trip of three statements (the locks in
//! their order, then the reads: open diff, alert state, quota, baseline; the webhooks), one
//! pipelined round trip of its writes with the quota unit last, and `COMMIT`. The server must
//! load `pg_stat_statements` (`shared_preload_libraries`); without it this test fails saying so
//! (it does not skip).

use apidrift_model::Severity;
use apidrift_store::testkit::{
    TestResult, at, change, check, diff_of_drift, endpoint_row, workspace,
};
use apidrift_store::{
    AlertDraft, AlertStore, CheckRecording, ConnectOptions, NewWebhook, Store, WebhookKind, new_id,
};
use apidrift_store_postgres::PgStore;
use apidrift_store_postgres::testdb::TestDb;
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use uuid::Uuid;

#[derive(QueryableByName, Debug)]
struct Counted {
    #[diesel(sql_type = Text)]
    query: String,
    #[diesel(sql_type = BigInt)]
    calls: i64,
}

#[derive(QueryableByName)]
struct Setting {
    #[diesel(sql_type = Text)]
    value: String,
}

fn draft(fingerprint: Option<&str>) -> AlertDraft {
    let event_id = new_id();
    AlertDraft {
        event_id,
        created_at: at(0),
        fingerprint: fingerprint.map(str::to_owned),
        max_severity: fingerprint.map(|_| Severity::Breaking),
        detected_payload: format!("{{\"id\":\"{event_id}\"}}"),
        resolved_payload: format!("{{\"id\":\"{event_id}\"}}"),
        latency: None,
    }
}

/// Forgets the database's statement figures.
async fn reset(stats: &mut AsyncPgConnection) -> TestResult {
    diesel::sql_query(
        "SELECT pg_stat_statements_reset(0, \
         (SELECT oid FROM pg_database WHERE datname = current_database()), 0)::text AS value",
    )
    .load::<Setting>(stats)
    .await?;
    Ok(())
}

/// The statements run in the database since [`reset`], the figures' own reads left out:
/// `(BEGIN and COMMIT, every other statement, the list)`.
async fn counted(
    stats: &mut AsyncPgConnection,
) -> Result<(i64, i64, Vec<Counted>), Box<dyn std::error::Error + Send + Sync>> {
    let rows: Vec<Counted> = diesel::sql_query(
        "SELECT query, calls FROM pg_stat_statements \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC, query",
    )
    .load(stats)
    .await?;
    let utility = rows
        .iter()
        .filter(|r| matches!(r.query.as_str(), "BEGIN" | "COMMIT" | "ROLLBACK"))
        .map(|r| r.calls)
        .sum();
    let other = rows.iter().map(|r| r.calls).sum::<i64>() - utility;
    Ok((utility, other, rows))
}

/// Records `n` checks of `endpoint` through `record_check_run`, each with a drift of its own
/// fingerprint (`drift`) or clean, all recorded.
async fn record(store: &PgStore, ws: Uuid, endpoint: Uuid, n: i64, drift: bool) -> TestResult {
    for i in 0..n {
        let when = at(1_000 + i);
        let fp = format!("fp-{}", new_id());
        let d =
            drift.then(|| diff_of_drift(None, vec![change("$.a", Severity::Breaking)], when, &fp));
        let r = store
            .record_check_run(
                ws,
                check(endpoint, when),
                d,
                draft(drift.then_some(fp.as_str())),
                None,
            )
            .await?;
        assert!(matches!(r, CheckRecording::Recorded { .. }), "{r:?}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_check_makes_few_statements() -> TestResult {
    let Some(db) = TestDb::create().await? else {
        return Ok(());
    };
    let result = async {
        let mut stats = AsyncPgConnection::establish(&db.url).await?;
        let loaded: Vec<Setting> =
            diesel::sql_query("SELECT current_setting('shared_preload_libraries') AS value")
                .load(&mut stats)
                .await?;
        let preloaded = <[Setting]>::first(&loaded)
            .map(|s| s.value.as_str())
            .unwrap_or("");
        assert!(
            preloaded.contains("pg_stat_statements"),
            "this test counts statements with pg_stat_statements: add it to the server's \
             shared_preload_libraries (now {preloaded:?}) and restart it"
        );
        diesel_async::SimpleAsyncConnection::batch_execute(
            &mut stats,
            "CREATE EXTENSION IF NOT EXISTS pg_stat_statements",
        )
        .await?;
        let store = PgStore::connect_with(
            &db.url,
            ConnectOptions {
                migrate: true,
                max_connections: Some(1),
            },
        )
        .await?;
        let ws = workspace(&store, "counted", None, Some(1_000)).await?.id;
        let endpoint = store
            .create_endpoints(ws, vec![endpoint_row("e", at(0))])
            .await?
            .created
            .pop()
            .ok_or("no endpoint")?
            .id;
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
        // Statements prepared on the one connection; an open drift resolved.
        record(&store, ws, endpoint, 1, true).await?;
        record(&store, ws, endpoint, 1, false).await?;

        const N: i64 = 10;
        // Clean checks: the locks, two reads and the webhooks; the check with the endpoint's
        // figures; the unit.
        reset(&mut stats).await?;
        record(&store, ws, endpoint, N, false).await?;
        let (utility, other, rows) = counted(&mut stats).await?;
        eprintln!("clean checks, {N}: BEGIN/COMMIT {utility}, others {other}: {rows:#?}");
        assert_eq!(
            utility,
            2 * N,
            "one BEGIN and one COMMIT a check: {rows:#?}"
        );
        assert_eq!(other, 5 * N, "five statements a clean check: {rows:#?}");

        // New drifts, each replacing the last: the same, plus closing the open diff, the diff,
        // the event with its delivery, the alert state.
        record(&store, ws, endpoint, 1, true).await?;
        reset(&mut stats).await?;
        record(&store, ws, endpoint, N, true).await?;
        let (utility, other, rows) = counted(&mut stats).await?;
        eprintln!("drifting checks, {N}: BEGIN/COMMIT {utility}, others {other}: {rows:#?}");
        assert_eq!(
            utility,
            2 * N,
            "one BEGIN and one COMMIT a check: {rows:#?}"
        );
        assert_eq!(other, 9 * N, "nine statements a new drift: {rows:#?}");
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    }
    .await;
    db.drop_db().await?;
    result
}
