//! Storage benchmark on PostgreSQL (`cargo bench -p apidrift-store-postgres`; never run in CI).
//!
//! Creates the database `apidrift_bench` on the server of `APIDRIFT_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`), fills it with the layout of
//! `apidrift_store::bench` (100,000 endpoints and 1,000,000 diffs in the measured workspace plus
//! ten noise workspaces; `APIDRIFT_BENCH_SCALE` shrinks it) with `generate_series`, runs
//! `VACUUM ANALYZE`, measures the list routes, the bulk insert and the check write path through
//! the `Store` trait, and prints `EXPLAIN ANALYZE` of the list queries. The database is dropped
//! at the end unless `APIDRIFT_BENCH_KEEP=1`.

use apidrift_store::Store;
use apidrift_store::bench::{
    self, EXPLAINED, Layout, TAG_CHECK, TAG_DIFF, TAG_ENDPOINT, TAG_WORKSPACE, bench_id, bench_t0,
    twenty_changes,
};
use apidrift_store_postgres::PgStore;
use apidrift_store_postgres::testdb::{server_url, with_database};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use std::sync::Arc;
use std::time::Instant;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const DB: &str = "apidrift_bench";

fn prefix(ws: u32, tag: u16) -> String {
    format!("{ws:08x}-{tag:04x}-7000-8000-")
}

fn uuid_expr(prefix: &str, n: &str) -> String {
    format!("('{prefix}' || lpad(to_hex({n}), 12, '0'))::uuid")
}

async fn fill(conn: &mut AsyncPgConnection, layout: &Layout) -> Result<(), BoxError> {
    let t0 = "'2026-01-01T00:00:00Z'::timestamptz";
    debug_assert_eq!(bench_t0().unix_timestamp(), 1_767_225_600);
    let changes = serde_json::to_string(&twenty_changes()[..2])?.replace('\'', "''");
    for ws in 0..=layout.bulk_workspace() {
        let id = bench_id(ws, TAG_WORKSPACE, 0);
        let (n, m) = if ws == layout.bulk_workspace() {
            (0, 0)
        } else {
            layout.rows(ws)
        };
        let started = Instant::now();
        conn.batch_execute(&format!(
            "INSERT INTO workspaces VALUES ('{id}', 'bench {ws}', 'enterprise', NULL, NULL, {t0})"
        ))
        .await?;
        if n == 0 {
            continue;
        }
        let (pe, pc, pd) = (
            prefix(ws, TAG_ENDPOINT),
            prefix(ws, TAG_CHECK),
            prefix(ws, TAG_DIFF),
        );
        let e_i = uuid_expr(&pe, "i");
        let e_mod = uuid_expr(&pe, &format!("1 + i % {n}"));
        let c_i = uuid_expr(&pc, "i");
        let d_i = uuid_expr(&pd, "i");
        for sql in [
            format!(
                "INSERT INTO endpoints (id, workspace_id, name, url, method, environment, tags,
                     health, auth_type, content_type, diff_mode, timeout_ms, ignore_paths,
                     follow_redirects, breaking_count, warning_count, created_at, updated_at)
                 SELECT {e_i}, '{id}', 'endpoint ' || i, 'https://api.example.com/e/' || i, 'GET',
                     (ARRAY['production', 'staging', 'development'])[1 + i % 3],
                     '[\"bench\"]'::jsonb,
                     CASE i % 10 WHEN 1 THEN 'warning' WHEN 2 THEN 'breaking' WHEN 3 THEN 'unknown'
                         ELSE 'healthy' END,
                     'none', 'application/json', 'schema', 10000, '[]'::jsonb, false, 0, 0,
                     {t0} + i * interval '1 second', {t0} + i * interval '1 second'
                 FROM generate_series(1, {n}::bigint) AS i"
            ),
            format!(
                "INSERT INTO checks (id, workspace_id, endpoint_id, started_at, finished_at,
                     http_status, response_time, diff_id)
                 SELECT {c_i}, '{id}', {e_mod}, {t0} + i * interval '100 milliseconds',
                     {t0} + i * interval '100 milliseconds', 200, 50, {d_i}
                 FROM generate_series(1, {m}::bigint) AS i"
            ),
            format!(
                "INSERT INTO diffs (id, workspace_id, endpoint_id, check_id, created_at, accepted,
                     breaking_count, warning_count, info_count, change_count, changes)
                 SELECT {d_i}, '{id}', {e_mod}, {c_i}, {t0} + i * interval '100 milliseconds',
                     false, CASE WHEN i % 5 = 0 THEN 1 ELSE 0 END, 1, 0,
                     CASE WHEN i % 5 = 0 THEN 2 ELSE 1 END, '{changes}'::jsonb
                 FROM generate_series(1, {m}::bigint) AS i"
            ),
        ] {
            conn.batch_execute(&sql).await?;
        }
        println!(
            "workspace {ws}: {n} endpoints, {m} checks + diffs in {:.1?}",
            started.elapsed()
        );
    }
    let started = Instant::now();
    conn.batch_execute("VACUUM ANALYZE").await?;
    println!("VACUUM ANALYZE in {:.1?}", started.elapsed());
    Ok(())
}

#[derive(diesel::QueryableByName)]
struct PlanRow {
    #[diesel(sql_type = diesel::sql_types::Text, column_name = "QUERY PLAN")]
    line: String,
}

async fn explain(conn: &mut AsyncPgConnection) -> Result<(), BoxError> {
    let ws = bench_id(0, TAG_WORKSPACE, 0);
    let ep = bench_id(0, TAG_ENDPOINT, 1);
    println!("\n### EXPLAIN (ANALYZE) on PostgreSQL\n");
    for (name, sql) in EXPLAINED {
        let sql = sql
            .replace("$WS", &format!("'{ws}'::uuid"))
            .replace("$EP", &format!("'{ep}'::uuid"))
            .replace("$SINCE", "'2026-01-01T00:00:00Z'::timestamptz");
        let rows: Vec<PlanRow> =
            diesel::sql_query(format!("EXPLAIN (ANALYZE, COSTS OFF, BUFFERS OFF) {sql}"))
                .load(conn)
                .await?;
        println!("- {name}:");
        for r in rows {
            println!("      {}", r.line);
        }
    }
    Ok(())
}

async fn run() -> Result<(), BoxError> {
    let layout = Layout::from_env();
    let server = server_url();
    let mut admin = AsyncPgConnection::establish(&server).await?;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)"))
        .await?;
    admin
        .batch_execute(&format!("CREATE DATABASE {DB}"))
        .await?;
    let url = with_database(&server, DB);
    let store = PgStore::connect(&url).await?;
    let started = Instant::now();
    let mut conn = AsyncPgConnection::establish(&url).await?;
    fill(&mut conn, &layout).await?;
    println!("filled in {:.1?}", started.elapsed());
    let store: Arc<dyn Store> = Arc::new(store);
    let rows = bench::measure(store, &layout, 50).await?;
    bench::print("PostgreSQL", &layout, &rows);
    explain(&mut conn).await?;
    drop(conn);
    if !std::env::var("APIDRIFT_BENCH_KEEP").is_ok_and(|v| v == "1") {
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)"))
            .await?;
    }
    Ok(())
}

fn main() -> Result<(), BoxError> {
    if !std::env::args().any(|a| a == "--bench") {
        println!("storage benchmark: run it with `cargo bench -p apidrift-store-postgres`");
        return Ok(());
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}
