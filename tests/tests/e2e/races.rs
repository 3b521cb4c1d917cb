//! Concurrent endpoint deletes and checks through the API on PostgreSQL (issue 23, item 4): the
//! real `apidrift serve`, one workspace with an alerting webhook, checkers posting
//! `/endpoints/{id}/check` while deleters remove endpoints and a creator adds and baselines new
//! ones. No request may answer a 5xx: a check of an endpoint deleted meanwhile is a 404. Before
//! the lock-order change and the deadlock retries, PostgreSQL broke lock cycles between a check
//! and a delete with `40P01`, answered `500 {"error":"internal server error"}`.
//!
//! The run lasts `APIDRIFT_E2E_RACE_SECS` seconds (default 10; the issue's acceptance run is 60).

use apidrift_e2e::server::Server;
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::env::{Backend, Env};

type TestResult = Result<(), Box<dyn Error>>;

const SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "1000000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "1000000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "1000000"),
];

fn race_time() -> Duration {
    let secs = std::env::var("APIDRIFT_E2E_RACE_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(10);
    Duration::from_secs(secs.max(1))
}

/// A loopback upstream whose JSON alternates between two shapes on every request, so checks
/// alternate between a drift (a diff and a `drift.detected` event) and a return to the baseline
/// (a `drift.resolved` event). It also serves as the webhook receiver (any path, 200).
struct Flip {
    addr: SocketAddr,
}

impl Flip {
    fn start() -> Result<Flip, Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let n = Arc::new(AtomicU64::new(0));
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let n = n.clone();
                std::thread::spawn(move || answer(stream, &n));
            }
        });
        Ok(Flip { addr })
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

fn answer(mut stream: TcpStream, n: &AtomicU64) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
        }
    }
    let body = if n.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
        r#"{"a":1,"b":"x"}"#
    } else {
        r#"{"a":"1"}"#
    };
    let _ = stream.write_all(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
}

fn call(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> Result<(u16, String), Box<dyn Error>> {
    let mut req = server.request(method, path).bearer(token);
    if let Some(b) = body {
        req = req.json(b);
    }
    let res = req.send()?;
    Ok((res.status, res.text()))
}

/// Creates `n` endpoints on the upstream and captures their baselines; answers their ids.
fn create(
    server: &Server,
    token: &str,
    up: &Flip,
    n: usize,
    tag: &str,
) -> Result<Vec<String>, Box<dyn Error>> {
    let entries: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("{tag}-{i}"), "url": up.url(&format!("/{tag}/{i}")), "timeoutMs": 2000}))
        .collect();
    let (status, text) = call(
        server,
        "POST",
        "/api/v1/endpoints",
        token,
        Some(&json!(entries)),
    )?;
    if status != 201 {
        return Err(format!("create: {status} {text}").into());
    }
    let body: Value = serde_json::from_str(&text)?;
    let ids: Vec<String> = body["endpoints"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    for id in &ids {
        let (status, text) = call(
            server,
            "POST",
            &format!("/v1/endpoints/{id}/baseline"),
            token,
            None,
        )?;
        // 404: deleted meanwhile by a deleter.
        if status != 201 && status != 404 {
            return Err(format!("baseline: {status} {text}").into());
        }
    }
    Ok(ids)
}

#[test]
fn deletes_and_checks_race_without_5xx_on_postgres() -> TestResult {
    let Some(env) = Env::new(Backend::Postgres, ENV)? else {
        return Ok(());
    };
    let (_ws, token) = env.workspace_and_token(&[], SCOPES, "admin")?;
    let server = env.serve(&[])?;
    let up = Flip::start()?;
    let (status, text) = call(
        &server,
        "POST",
        "/v1/webhooks",
        &token,
        Some(&json!({"url": up.url("/hook"), "minSeverity": "info"})),
    )?;
    assert_eq!(status, 201, "{text}");
    let live: Mutex<Vec<String>> = Mutex::new(create(&server, &token, &up, 40, "seed")?);

    let deadline = Instant::now() + race_time();
    let statuses: Mutex<Vec<(String, u16, String)>> = Mutex::new(Vec::new());
    let (checks, deletes) = (AtomicU64::new(0), AtomicU64::new(0));
    let pick = |n: u64| -> Option<String> {
        let live = live.lock().unwrap_or_else(|p| p.into_inner());
        if live.is_empty() {
            return None;
        }
        let i = usize::try_from(n % live.len() as u64).unwrap_or(0);
        Some(live[i].clone())
    };
    let record = |what: &str, status: u16, text: String| {
        statuses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((what.to_owned(), status, text));
    };
    std::thread::scope(|scope| {
        for worker in 0..6u64 {
            let (server, token, checks) = (&server, &token, &checks);
            let (pick, record) = (&pick, &record);
            scope.spawn(move || {
                let mut n = worker;
                while Instant::now() < deadline {
                    n += 6;
                    let Some(id) = pick(n.wrapping_mul(7919)) else {
                        std::thread::sleep(Duration::from_millis(2));
                        continue;
                    };
                    match call(
                        server,
                        "POST",
                        &format!("/api/v1/endpoints/{id}/check"),
                        token,
                        None,
                    ) {
                        Ok((200, _)) => {
                            checks.fetch_add(1, Ordering::Relaxed);
                        }
                        // Deleted meanwhile (404), or deleted before its baseline (400).
                        Ok((404 | 400, _)) => {}
                        Ok((s, text)) => record("check", s, text),
                        Err(e) => record("check", 0, e.to_string()),
                    }
                }
            });
        }
        for worker in 0..2u64 {
            let (server, token, live, deletes, record) =
                (&server, &token, &live, &deletes, &record);
            scope.spawn(move || {
                let mut n = worker;
                while Instant::now() < deadline {
                    n += 2;
                    let id = {
                        let mut live = live.lock().unwrap_or_else(|p| p.into_inner());
                        if live.len() < 10 {
                            None
                        } else {
                            let i = usize::try_from(n.wrapping_mul(31) % live.len() as u64)
                                .unwrap_or(0);
                            Some(live.swap_remove(i))
                        }
                    };
                    let Some(id) = id else {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    match call(
                        server,
                        "DELETE",
                        &format!("/api/v1/endpoints/{id}"),
                        token,
                        None,
                    ) {
                        Ok((204, _)) => {
                            deletes.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok((s, text)) => record("delete", s, text),
                        Err(e) => record("delete", 0, e.to_string()),
                    }
                }
            });
        }
        {
            let (server, token, live, up, record) = (&server, &token, &live, &up, &record);
            scope.spawn(move || {
                let mut round = 0u64;
                while Instant::now() < deadline {
                    round += 1;
                    if live.lock().unwrap_or_else(|p| p.into_inner()).len() >= 40 {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    match create(server, token, up, 4, &format!("c{round}")) {
                        Ok(ids) => live.lock().unwrap_or_else(|p| p.into_inner()).extend(ids),
                        Err(e) => record("create", 0, e.to_string()),
                    }
                }
            });
        }
    });
    let statuses = statuses.into_inner().unwrap_or_else(|p| p.into_inner());
    let (checks, deletes) = (checks.into_inner(), deletes.into_inner());
    eprintln!(
        "{checks} checks, {deletes} deletes, {} unexpected answers",
        statuses.len()
    );
    assert!(
        statuses.is_empty(),
        "{} unexpected answers in {checks} checks and {deletes} deletes; first: {:?}",
        statuses.len(),
        statuses.iter().take(3).collect::<Vec<_>>()
    );
    assert!(
        checks > 0 && deletes > 0,
        "the race ran: {checks} checks, {deletes} deletes"
    );
    Ok(())
}
