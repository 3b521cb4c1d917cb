//! Storage benchmark on SQLite (`cargo bench -p apidrift-store-sqlite`; never run in CI).
//!
//! Fills a database file with the layout of `apidrift_store::bench` (100,000 endpoints and
//! 1,000,000 diffs in the measured workspace plus ten noise workspaces; `APIDRIFT_BENCH_SCALE`
//! shrinks it) using SQL-side generation, then measures the list routes, the bulk insert and the
//! check write path through the `Store` trait, and prints `EXPLAIN QUERY PLAN` of the list queries.
//! The file is `APIDRIFT_BENCH_SQLITE` (default `target/apidrift-bench.db`), deleted at the end
//! unless `APIDRIFT_BENCH_KEEP=1`.

use apidrift_store::Store;
use apidrift_store::bench::{
    self, EXPLAINED, Layout, TAG_CHECK, TAG_DIFF, TAG_ENDPOINT, TAG_WORKSPACE, bench_id, bench_t0,
    twenty_changes,
};
use apidrift_store_sqlite::SqliteStore;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use std::sync::Arc;
use std::time::Instant;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn micros(t: time::OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000).unwrap_or(0)
}

fn prefix(ws: u32, tag: u16) -> String {
    format!("{ws:08x}-{tag:04x}-7000-8000-")
}

fn fill(conn: &mut SqliteConnection, layout: &Layout) -> Result<(), BoxError> {
    let t0 = micros(bench_t0());
    let changes = serde_json::to_string(&twenty_changes()[..2])?.replace('\'', "''");
    for ws in 0..=layout.bulk_workspace() {
        let id = bench_id(ws, TAG_WORKSPACE, 0);
        let (n, m) = if ws == layout.bulk_workspace() {
            (0, 0)
        } else {
            layout.rows(ws)
        };
        let started = Instant::now();
        let (e, c, d) = (
            prefix(ws, TAG_ENDPOINT),
            prefix(ws, TAG_CHECK),
            prefix(ws, TAG_DIFF),
        );
        let mut sql = format!(
            "BEGIN IMMEDIATE;
             INSERT INTO workspaces VALUES ('{id}', 'bench {ws}', 'enterprise', NULL, NULL, {t0});"
        );
        if n > 0 {
            sql.push_str(&format!(
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n})
                 INSERT INTO endpoints (id, workspace_id, name, url, method, environment, tags,
                     health, auth_type, content_type, diff_mode, timeout_ms, ignore_paths,
                     follow_redirects, breaking_count, warning_count, created_at, updated_at)
                 SELECT '{e}' || printf('%012x', i), '{id}', 'endpoint ' || i,
                     'https://api.example.com/e/' || i, 'GET',
                     CASE i % 3 WHEN 0 THEN 'production' WHEN 1 THEN 'staging' ELSE 'development' END,
                     '[\"bench\"]',
                     CASE i % 10 WHEN 1 THEN 'warning' WHEN 2 THEN 'breaking' WHEN 3 THEN 'unknown'
                         ELSE 'healthy' END,
                     'none', 'application/json', 'schema', 10000, '[]', 0, 0, 0,
                     {t0} + i * 1000000, {t0} + i * 1000000
                 FROM s;
                 WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {m})
                 INSERT INTO checks (id, workspace_id, endpoint_id, started_at, finished_at,
                     http_status, response_time, diff_id)
                 SELECT '{c}' || printf('%012x', i), '{id}', '{e}' || printf('%012x', 1 + i % {n}),
                     {t0} + i * 100000, {t0} + i * 100000, 200, 50, '{d}' || printf('%012x', i)
                 FROM s;
                 WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {m})
                 INSERT INTO diffs (id, workspace_id, endpoint_id, check_id, created_at, accepted,
                     breaking_count, warning_count, info_count, change_count, changes)
                 SELECT '{d}' || printf('%012x', i), '{id}', '{e}' || printf('%012x', 1 + i % {n}),
                     '{c}' || printf('%012x', i), {t0} + i * 100000, 0,
                     CASE WHEN i % 5 = 0 THEN 1 ELSE 0 END, 1, 0,
                     CASE WHEN i % 5 = 0 THEN 2 ELSE 1 END, '{changes}'
                 FROM s;"
            ));
        }
        sql.push_str("COMMIT;");
        conn.batch_execute(&sql)?;
        if n > 0 {
            println!(
                "workspace {ws}: {n} endpoints, {m} checks + diffs in {:.1?}",
                started.elapsed()
            );
        }
    }
    conn.batch_execute("ANALYZE; PRAGMA wal_checkpoint(TRUNCATE);")?;
    Ok(())
}

#[derive(QueryableByName)]
struct PlanRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    detail: String,
}

fn explain(conn: &mut SqliteConnection) -> Result<(), BoxError> {
    let ws = bench_id(0, TAG_WORKSPACE, 0);
    let ep = bench_id(0, TAG_ENDPOINT, 1);
    let since = micros(bench_t0()) + 1_000;
    println!("\n### EXPLAIN QUERY PLAN (SQLite)\n");
    for (name, sql) in EXPLAINED {
        let sql = sql
            .replace("$WS", &format!("'{ws}'"))
            .replace("$EP", &format!("'{ep}'"))
            .replace("$SINCE", &since.to_string());
        let rows: Vec<PlanRow> =
            diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}")).load(conn)?;
        let plan: Vec<String> = rows.into_iter().map(|r| r.detail).collect();
        println!("- {name}: {}", plan.join("; "));
    }
    Ok(())
}

fn main() -> Result<(), BoxError> {
    if !std::env::args().any(|a| a == "--bench") {
        println!("storage benchmark: run it with `cargo bench -p apidrift-store-sqlite`");
        return Ok(());
    }
    let layout = Layout::from_env();
    let path = std::env::var("APIDRIFT_BENCH_SQLITE").unwrap_or_else(|_| {
        format!(
            "{}/../../target/apidrift-bench.db",
            env!("CARGO_MANIFEST_DIR")
        )
    });
    if let Some(dir) = std::path::Path::new(&path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let store = runtime.block_on(SqliteStore::connect(&path))?;
    let started = Instant::now();
    let mut conn = SqliteConnection::establish(&path)?;
    conn.batch_execute(
        "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;",
    )?;
    fill(&mut conn, &layout)?;
    println!(
        "filled in {:.1?}; file {} MiB",
        started.elapsed(),
        std::fs::metadata(&path)?.len() >> 20
    );
    let store: Arc<dyn Store> = Arc::new(store);
    let rows = runtime.block_on(bench::measure(store, &layout, 50))?;
    bench::print("SQLite", &layout, &rows);
    explain(&mut conn)?;
    let keep = std::env::var("APIDRIFT_BENCH_KEEP").is_ok_and(|v| v == "1");
    if !keep {
        drop(conn);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{path}{suffix}"));
        }
    }
    Ok(())
}
