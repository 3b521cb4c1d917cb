//! Read routes never write (issue 16), on PostgreSQL: after a setup that writes (a workspace, a
//! token, an endpoint, its baseline, a check with a diff), a burst of authenticated reads of
//! `GET /api/v1/endpoints`, `/api/v1/endpoints/{id}`, `/api/v1/diffs` and
//! `/api/v1/endpoints/{id}/checks` inserts, updates and deletes no row in any table but
//! `rate_limits`, whose leased budgets (D17, docs/api.md) write once per batch of requests, not
//! per request. The token's `lastUsedAt` was written by the setup's first request and is not
//! written again within the minute (once a minute per token and process, and the statement
//! itself is conditional). Counters come from `pg_stat_user_tables`/`pg_stat_database`, which
//! backends report lazily: the test waits for the server to be idle long enough for them to land.

use crate::env::{Backend, Env};
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn Error>>;

const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    ("APIDRIFT_LOG", "warn"),
];

/// Requests per route in the burst.
const PER_ROUTE: usize = 50;

/// A loopback upstream answering `body` (changeable) to every request.
fn upstream(body: Arc<Mutex<String>>) -> Result<String, Box<dyn Error>> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/items", listener.local_addr()?);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let text = body.lock().map(|b| b.clone()).unwrap_or_default();
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                )
                .as_bytes(),
            );
        }
    });
    Ok(url)
}

/// Waits until the database's counters have stopped moving: backends report at the end of a
/// transaction at most once a second, and an idle one within about 10 s (PostgreSQL 15+).
fn settled(
    pg: &apidrift_store_postgres::testdb::TestDb,
) -> Result<apidrift_store_postgres::testdb::WriteStats, Box<dyn Error>> {
    std::thread::sleep(Duration::from_secs(11));
    let mut last = crate::env::block_on(pg.write_stats())?.map_err(|e| e.to_string())?;
    for _ in 0..10 {
        std::thread::sleep(Duration::from_secs(1));
        let now = crate::env::block_on(pg.write_stats())?.map_err(|e| e.to_string())?;
        // Row counters only: every read (these included) is a committed transaction.
        if now.table_writes == last.table_writes {
            return Ok(now);
        }
        last = now;
    }
    Err("the statistics never settled".into())
}

#[test]
fn read_routes_commit_no_write_on_postgres() -> TestResult {
    let Some(env) = Env::new(Backend::Postgres, ENV)? else {
        return Ok(());
    };
    let pg = env.pg().ok_or("no PostgreSQL database")?;
    let ws = env.cli(&["workspace", "create", "--name", "reads"])?["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let token = env.cli(&[
        "token",
        "create",
        "--workspace",
        &ws,
        "--scopes",
        "endpoints:read,endpoints:write,baselines:write,checks:run",
        "--role",
        "admin",
    ])?["token"]
        .as_str()
        .ok_or("no token")?
        .to_owned();
    // The api role only: no worker polling in the background.
    let server = env.serve(&[("APIDRIFT_ROLE", "api")])?;
    let body = Arc::new(Mutex::new(r#"{"items":[{"id":1,"name":"a"}]}"#.to_owned()));
    let url = upstream(body.clone())?;
    let send = |method: &str, path: &str, json: Option<&Value>| {
        let mut req = server.request(method, path).bearer(&token);
        if let Some(j) = json {
            req = req.json(j);
        }
        req.send()
    };
    let created = send(
        "POST",
        "/api/v1/endpoints",
        Some(&json!({"name": "items", "url": url})),
    )?;
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["endpoints"][0]["id"]
        .as_str()
        .ok_or("no endpoint id")?
        .to_owned();
    let captured = send("POST", &format!("/v1/endpoints/{id}/baseline"), None)?;
    assert_eq!(captured.status, 201, "{}", captured.text());
    if let Ok(mut b) = body.lock() {
        *b = r#"{"items":[{"id":1,"name":7}]}"#.to_owned();
    }
    let checked = send("POST", &format!("/api/v1/endpoints/{id}/check"), None)?;
    assert_eq!(checked.status, 200, "{}", checked.text());
    assert!(checked.json()["diffId"].is_string(), "{}", checked.text());

    let before = settled(pg)?;
    // The setup's writes are visible: the method sees writes when there are some.
    for table in ["endpoints", "baselines", "checks", "diffs", "tokens"] {
        assert!(
            before.table_writes.get(table).copied().unwrap_or(0) > 0,
            "no write counted on {table}: {before:?}"
        );
    }

    let routes = [
        "/api/v1/endpoints".to_owned(),
        format!("/api/v1/endpoints/{id}"),
        "/api/v1/diffs".to_owned(),
        format!("/api/v1/endpoints/{id}/checks"),
    ];
    let started = Instant::now();
    for _ in 0..PER_ROUTE {
        for route in &routes {
            let res = send("GET", route, None)?;
            assert_eq!(res.status, 200, "{route}: {}", res.text());
        }
    }
    let burst = started.elapsed();
    let requests = i64::try_from(PER_ROUTE * routes.len())?;
    let after = settled(pg)?;

    let mut written = Vec::new();
    for (table, n) in &after.table_writes {
        let delta = n - before.table_writes.get(table).copied().unwrap_or(0);
        if delta != 0 && table != "rate_limits" {
            written.push(format!("{table}: {delta}"));
        }
    }
    assert!(
        written.is_empty(),
        "read routes wrote rows: {written:?} (before {before:?}, after {after:?})"
    );
    let leases = after.table_writes.get("rate_limits").copied().unwrap_or(0)
        - before.table_writes.get("rate_limits").copied().unwrap_or(0);
    assert!(
        leases * 8 <= requests,
        "{leases} rate-limit writes for {requests} reads: the budget is leased in batches"
    );
    // Database-wide row counters (catalogs included, so autovacuum may move them): reported.
    let rows = |s: &apidrift_store_postgres::testdb::WriteStats| {
        s.tup_inserted + s.tup_updated + s.tup_deleted
    };
    // Transactions include the statistics reads of `settled` (a few per sample).
    let commits = after.xact_commit - before.xact_commit;
    eprintln!(
        "reads: {requests} requests in {:.2}s, {commits} transactions (statements, the \
         statistics reads included) = {:.2} per request, {leases} rate-limit lease writes, {} \
         rows written database-wide",
        burst.as_secs_f64(),
        commits as f64 / requests as f64,
        rows(&after) - rows(&before)
    );
    Ok(())
}
