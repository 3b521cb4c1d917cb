//! Uptime and latency end to end (issue 27, item 2): the real `apidrift serve` on SQLite and
//! PostgreSQL.
//!
//! * uptime: a loopback upstream that answers 500 to one request in four over 40 manual checks
//!   (no retries), plus older history written through the store (the week and month windows
//!   cannot be waited for) → `uptime` on the endpoint and in the list is exactly the fractions
//!   that history implies;
//! * latency: an endpoint with `maxResponseTimeMs` and `slowAfter: 3` whose upstream is slow for
//!   four checks, then fast: one `latency.slow` at the third slow check, nothing at the fourth,
//!   one `latency.resolved` at the fast one, delivered signed to a loopback webhook receiver; a
//!   failed fetch in the middle neither counts nor resolves.

use apidrift_e2e::server::Server;
use apidrift_model::{OffsetDateTime, Uuid};
use apidrift_store::{NewCheck, Store, new_id};
use apidrift_store_postgres::PgStore;
use apidrift_store_sqlite::SqliteStore;
use ring::hmac;
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::env::{Backend, Env, block_on};

type TestResult = Result<(), Box<dyn Error>>;

const ALL_SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    ("APIDRIFT_WORKER__POLL_MS", "50"),
    ("APIDRIFT_WORKER__RETRY_BASE_MS", "200"),
    ("APIDRIFT_WORKER__RETRY_MAX_MS", "400"),
];

const BODY: &str = r#"{"users":[{"id":1,"name":"ann"}],"total":1}"#;

/// What the loopback server answers to one request.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Status(u16),
    /// Wait this long, then answer 200.
    Slow(Duration),
}

/// One request the loopback server saw: (head, body).
type Seen = (String, Vec<u8>);

/// A loopback HTTP server (upstream or webhook receiver): answers from a script (then 200 with
/// `BODY`), records (head, body).
struct Loopback {
    addr: SocketAddr,
    script: Arc<Mutex<Vec<Answer>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Loopback {
    fn start() -> Result<Loopback, Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let lb = Loopback {
            addr,
            script: Arc::new(Mutex::new(Vec::new())),
            seen: Arc::new(Mutex::new(Vec::new())),
        };
        let (sc, se) = (lb.script.clone(), lb.seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (sc, se) = (sc.clone(), se.clone());
                std::thread::spawn(move || answer(stream, &sc, &se));
            }
        });
        Ok(lb)
    }

    fn script(&self, answers: Vec<Answer>) {
        if let Ok(mut g) = self.script.lock() {
            *g = answers;
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn answer(mut stream: TcpStream, script: &Mutex<Vec<Answer>>, seen: &Mutex<Vec<Seen>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    if let Ok(mut s) = seen.lock() {
        s.push((
            String::from_utf8_lossy(&buf[..head_end]).into_owned(),
            buf[head_end..].to_vec(),
        ));
    }
    let next = script
        .lock()
        .ok()
        .and_then(|mut s| (!s.is_empty()).then(|| s.remove(0)));
    let status = match next {
        Some(Answer::Status(s)) => s,
        Some(Answer::Slow(d)) => {
            std::thread::sleep(d);
            200
        }
        None => 200,
    };
    let _ = stream.write_all(
        format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
            BODY.len()
        )
        .as_bytes(),
    );
}

/// Verifies `t=<unix>,v1=<hex>` independently of the server's code.
fn verify(secret: &str, sig: &str, body: &[u8]) -> bool {
    let mut t = None;
    let mut v1 = None;
    for part in sig.split(',') {
        match part.split_once('=') {
            Some(("t", v)) => t = Some(v.to_owned()),
            Some(("v1", v)) => v1 = Some(v.to_owned()),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut msg = t.into_bytes();
    msg.push(b'.');
    msg.extend_from_slice(body);
    let tag = hmac::sign(&key, &msg);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    hex == v1
}

macro_rules! both_backends {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() -> super::TestResult {
                super::$name(super::Backend::Sqlite)
            }
            #[test]
            fn postgres() -> super::TestResult {
                super::$name(super::Backend::Postgres)
            }
        }
    )+};
}

both_backends!(uptime_from_the_history, slow_alert_and_resolve);

fn call(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> Result<(u16, Value), Box<dyn Error>> {
    let mut req = server.request(method, path).bearer(token);
    if let Some(b) = body {
        req = req.json(b);
    }
    let res = req.send()?;
    let value = if res.body.is_empty() {
        Value::Null
    } else {
        res.json()
    };
    Ok((res.status, value))
}

/// Creates an endpoint from `entry` and captures its baseline: its id.
fn endpoint_with_baseline(
    server: &Server,
    token: &str,
    entry: &Value,
) -> Result<String, Box<dyn Error>> {
    let (s, created) = call(server, "POST", "/api/v1/endpoints", token, Some(entry))?;
    assert_eq!(s, 201, "{created}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let (s, b) = call(
        server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        token,
        None,
    )?;
    assert_eq!(s, 201, "{b}");
    Ok(id)
}

/// The store of `env`, opened directly (to write history the test cannot wait for).
async fn store(env: &Env) -> Result<Arc<dyn Store>, Box<dyn Error>> {
    Ok(if env.pg().is_some() {
        Arc::new(PgStore::connect(&env.url).await?)
    } else {
        Arc::new(SqliteStore::connect(&env.url).await?)
    })
}

/// A past check of `endpoint` that started `ago` before now: up (200) or down (no response).
fn past_check(endpoint: Uuid, ago: Duration, up: bool) -> NewCheck {
    let started_at = OffsetDateTime::now_utc() - ago;
    NewCheck {
        id: new_id(),
        endpoint_id: endpoint,
        started_at,
        finished_at: started_at + Duration::from_millis(30),
        http_status: up.then_some(200),
        response_time: up.then_some(30),
        error_kind: (!up).then(|| "connect".to_owned()),
        error_message: (!up).then(|| "connection refused".to_owned()),
        content_type: None,
        headers: None,
        sealed_body: None,
        scheduled: true,
    }
}

fn close(v: &Value, expected: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - expected).abs() < 1e-9)
}

const HOUR: Duration = Duration::from_secs(3600);

fn uptime_from_the_history(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let (ws, token) = env.workspace_and_token(&[], ALL_SCOPES, "admin")?;
    let up = Loopback::start()?;
    let server = env.serve(&[])?;
    let id = endpoint_with_baseline(
        &server,
        &token,
        &json!({"name": "flaky", "url": up.url("/users"), "retries": 0, "timeoutMs": 5000}),
    )?;
    let path = format!("/api/v1/endpoints/{id}");
    // Before any check: every window null.
    let (s, b) = call(&server, "GET", &path, &token, None)?;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b["endpoint"]["uptime"],
        json!({"day": null, "week": null, "month": null})
    );

    // History the windows need, written through the store: 3 days ago 10 checks (6 up),
    // 20 days ago 10 checks (4 up), 40 days ago 5 down (outside every window).
    let ep = Uuid::parse_str(&id)?;
    let ws_id = Uuid::parse_str(&ws)?;
    block_on(async {
        let store = store(&env).await?;
        let mut rows = Vec::new();
        for i in 0..10 {
            rows.push(past_check(ep, HOUR * 72 + HOUR / 10 * i, i < 6));
            rows.push(past_check(ep, HOUR * 24 * 20 + HOUR / 10 * i, i < 4));
        }
        for i in 0..5 {
            rows.push(past_check(ep, HOUR * 24 * 40 + HOUR / 10 * i, false));
        }
        // Oldest first, so the endpoint's latest figures are the newest check's.
        rows.sort_by_key(|c| c.started_at);
        for check in rows {
            store.record_check(ws_id, check, None).await?;
        }
        Ok::<_, Box<dyn Error>>(())
    })??;

    // 40 checks now; the upstream answers 500 to one request in four (no retries).
    up.script(
        (0..40)
            .map(|i| Answer::Status(if i % 4 == 2 { 500 } else { 200 }))
            .collect(),
    );
    let check = format!("{path}/check");
    for _ in 0..40 {
        let (s, b) = call(&server, "POST", &check, &token, None)?;
        assert_eq!(s, 200, "{b}");
    }
    // The baseline's request and one per check: no retry hid a 500.
    assert_eq!(up.seen().len(), 41);

    // day 30/40; week (30 + 6)/50; month (36 + 4)/60.
    let (s, b) = call(&server, "GET", &path, &token, None)?;
    assert_eq!(s, 200, "{b}");
    let u = &b["endpoint"]["uptime"];
    assert!(close(&u["day"], 0.75), "{u}");
    assert!(close(&u["week"], 0.72), "{u}");
    assert!(close(&u["month"], 40.0 / 60.0), "{u}");
    // The list answers the same figures.
    let (s, list) = call(&server, "GET", "/api/v1/endpoints", &token, None)?;
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["endpoints"][0]["uptime"], *u, "{list}");
    Ok(())
}

/// The signed deliveries the receiver saw: (type, body), each signature checked.
fn deliveries(rx: &Loopback, secret: &str) -> Result<Vec<(String, Value)>, Box<dyn Error>> {
    let mut out = Vec::new();
    for (head, body) in rx.seen() {
        let sig = head
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim()
                    .eq_ignore_ascii_case("apidrift-signature")
                    .then(|| v.trim().to_owned())
            })
            .ok_or("no Apidrift-Signature header")?;
        assert!(verify(secret, &sig, &body), "bad signature {sig}");
        let v: Value = serde_json::from_slice(&body)?;
        out.push((v["type"].as_str().unwrap_or_default().to_owned(), v));
    }
    Ok(out)
}

fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("timed out waiting for {what}").into())
}

fn slow_alert_and_resolve(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let (_, token) = env.workspace_and_token(&[], ALL_SCOPES, "admin")?;
    let up = Loopback::start()?;
    let rx = Loopback::start()?;
    let server = env.serve(&[])?;
    let (s, b) = call(
        &server,
        "POST",
        "/v1/webhooks",
        &token,
        Some(&json!({"url": rx.url("/h")})),
    )?;
    assert_eq!(s, 201, "{b}");
    let secret = b["webhook"]["secret"]
        .as_str()
        .ok_or("no secret")?
        .to_owned();

    // Out of range: 400 naming the field, nothing created.
    let (s, b) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({"name": "x", "url": up.url("/x"), "maxResponseTimeMs": 0})),
    )?;
    assert!(s == 400 || b["skipped"][0]["reason"].is_string(), "{s} {b}");
    assert!(
        b.to_string()
            .contains("maxResponseTimeMs: must be an integer from 1 to 600000"),
        "{b}"
    );

    let id = endpoint_with_baseline(
        &server,
        &token,
        &json!({"name": "slowpoke", "url": up.url("/users"), "retries": 0, "timeoutMs": 5000,
                "maxResponseTimeMs": 400, "slowAfter": 3}),
    )?;
    let path = format!("/api/v1/endpoints/{id}");
    let (_, b) = call(&server, "GET", &path, &token, None)?;
    assert_eq!(
        (
            &b["endpoint"]["maxResponseTimeMs"],
            &b["endpoint"]["slowAfter"]
        ),
        (&json!(400), &json!(3)),
        "{b}"
    );
    let slow = Answer::Slow(Duration::from_millis(900));
    // slow, slow, a 500 (neither counts nor resolves), slow → alert, slow → nothing, fast → resolved.
    up.script(vec![
        slow,
        slow,
        Answer::Status(500),
        slow,
        slow,
        Answer::Status(200),
    ]);
    let check = format!("{path}/check");
    let mut latency_alerts = Vec::new();
    for n in 0..6 {
        let (s, b) = call(&server, "POST", &check, &token, None)?;
        assert_eq!(s, 200, "{b}");
        let sent = b["alertsSent"].as_u64().unwrap_or(99);
        // The 500 is a drift (status) of its own, alerted once; the next response resolves it.
        if n != 2 && n != 3 {
            latency_alerts.push(sent);
        }
    }
    assert_eq!(latency_alerts, vec![0, 0, 0, 1], "checks 1, 2, 5, 6");
    wait_for(15, "the latency deliveries", || {
        deliveries(&rx, &secret)
            .map(|d| d.iter().filter(|(t, _)| t.starts_with("latency.")).count() >= 2)
            .unwrap_or(false)
    })?;
    let got = deliveries(&rx, &secret)?;
    let latency: Vec<&(String, Value)> = got
        .iter()
        .filter(|(t, _)| t.starts_with("latency."))
        .collect();
    let kinds: Vec<&str> = latency.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(kinds, vec!["latency.slow", "latency.resolved"], "{got:?}");
    let (_, slow_event) = latency[0];
    assert_eq!(slow_event["endpoint"]["id"], json!(id));
    assert_eq!(slow_event["latency"]["maxResponseTimeMs"], 400);
    assert_eq!(slow_event["latency"]["slowAfter"], 3);
    assert!(
        slow_event["latency"]["responseTimeMs"]
            .as_u64()
            .unwrap_or(0)
            > 400,
        "{slow_event}"
    );
    assert!(
        latency[1].1["latency"]["responseTimeMs"]
            .as_u64()
            .unwrap_or(u64::MAX)
            <= 400,
        "{}",
        latency[1].1
    );
    // PATCH switches it off; the answer says so.
    let (s, b) = call(
        &server,
        "PATCH",
        &path,
        &token,
        Some(&json!({"maxResponseTimeMs": null, "slowAfter": 5})),
    )?;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        (
            &b["endpoint"]["maxResponseTimeMs"],
            &b["endpoint"]["slowAfter"]
        ),
        (&Value::Null, &json!(5)),
        "{b}"
    );
    Ok(())
}
