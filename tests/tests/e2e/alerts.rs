//! Alerts, accepting diffs and schedules end to end (issue 7): the real `apidrift serve`
//! (`--role all`) with fast worker settings, a loopback upstream and a loopback webhook receiver
//! that verifies every `Apidrift-Signature`, on SQLite and PostgreSQL.
//!
//! * webhooks: create (generated secret shown once), list (never a secret), SSRF refusal (400),
//!   role below admin (403), delete;
//! * deliveries: one `drift.detected` per new drift (a persisting drift alerts once), retried
//!   after a 500 and after a timeout, nothing lost across a kill and restart of the server
//!   mid-retry, every attempt recorded; accepting the diff moves the baseline (version 2, health
//!   healthy, idempotent) and the next clean check sends exactly one `drift.resolved`;
//! * schedules: the first run captures the baseline, each run consumes quota, an exhausted
//!   quota skips runs without retrying in a loop.

use apidrift_e2e::server::Server;
use ring::hmac;
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::env::{Backend, Env};

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
    ("APIDRIFT_WORKER__DELIVERY_TIMEOUT_MS", "700"),
    ("APIDRIFT_WORKER__LEASE_MS", "3000"),
    ("APIDRIFT_WORKER__GRACE_MS", "500"),
];

/// What a loopback server answers next.
#[derive(Debug, Clone)]
enum Answer {
    Status(u16),
    /// Hold the connection this long before answering 200 (a timeout for the sender).
    Hang(Duration),
}

/// One request the loopback server saw: (head, body).
type Seen = (String, Vec<u8>);

/// One verified delivery: (event type, event id, body).
type Delivery = (String, String, Value);

/// A loopback HTTP server: answers from a script (then the default), records (head, body).
struct Loopback {
    addr: SocketAddr,
    body: Arc<Mutex<String>>,
    script: Arc<Mutex<Vec<Answer>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Loopback {
    fn start(body: &str) -> Result<Loopback, Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let lb = Loopback {
            addr,
            body: Arc::new(Mutex::new(body.to_owned())),
            script: Arc::new(Mutex::new(Vec::new())),
            seen: Arc::new(Mutex::new(Vec::new())),
        };
        let (b, sc, se) = (lb.body.clone(), lb.script.clone(), lb.seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (b, sc, se) = (b.clone(), sc.clone(), se.clone());
                std::thread::spawn(move || answer(stream, &b, &sc, &se));
            }
        });
        Ok(lb)
    }

    fn set(&self, body: &str) {
        if let Ok(mut g) = self.body.lock() {
            *g = body.to_owned();
        }
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

fn answer(
    mut stream: TcpStream,
    body: &Mutex<String>,
    script: &Mutex<Vec<Answer>>,
    seen: &Mutex<Vec<Seen>>,
) {
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
    let request_body = buf[head_end..].to_vec();
    // Header names lower-cased, values as sent.
    let raw_head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    if let Ok(mut s) = seen.lock() {
        s.push((raw_head, request_body));
    }
    let next = script.lock().ok().and_then(|mut s| {
        if s.is_empty() {
            None
        } else {
            Some(s.remove(0))
        }
    });
    let status = match next {
        Some(Answer::Status(s)) => s,
        Some(Answer::Hang(d)) => {
            std::thread::sleep(d);
            200
        }
        None => 200,
    };
    let text = body.lock().map(|g| g.clone()).unwrap_or_default();
    let _ = stream.write_all(
        format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        )
        .as_bytes(),
    );
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
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

impl Env {
    fn workspace_and_token(
        &self,
        create: &[&str],
        role: &str,
    ) -> Result<(String, String), Box<dyn Error>> {
        let mut args = vec!["workspace", "create", "--name", "w"];
        args.extend_from_slice(create);
        let ws = self.cli(&args)?["id"].as_str().ok_or("no id")?.to_owned();
        let token = self.cli(&[
            "token",
            "create",
            "--workspace",
            &ws,
            "--scopes",
            ALL_SCOPES,
            "--role",
            role,
        ])?["token"]
            .as_str()
            .ok_or("no token")?
            .to_owned();
        Ok((ws, token))
    }
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

both_backends!(alerts_accept_and_restart, schedules_and_quota);

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

/// Waits until `f` holds (polling), or fails after `secs`.
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

const BODY: &str = r#"{"users":[{"id":1,"name":"ann","email":"a@x"}],"total":1}"#;
const DRIFTED: &str = r#"{"users":[{"id":1,"name":"ann"}],"total":"1"}"#;

/// The signed deliveries the receiver saw: (type, event id, body), each signature checked.
fn deliveries(rx: &Loopback, secret: &str) -> Result<Vec<Delivery>, Box<dyn Error>> {
    let mut out = Vec::new();
    for (head, body) in rx.seen() {
        let sig = header(&head, "apidrift-signature").ok_or("no Apidrift-Signature header")?;
        assert!(verify(secret, sig, &body), "bad signature {sig}");
        assert!(head.starts_with("POST "), "deliveries are POSTs: {head}");
        let v: Value = serde_json::from_slice(&body)?;
        out.push((
            v["type"].as_str().unwrap_or_default().to_owned(),
            v["id"].as_str().unwrap_or_default().to_owned(),
            v,
        ));
    }
    Ok(out)
}

fn alerts_accept_and_restart(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let (ws, token) = env.workspace_and_token(&[], "admin")?;
    let (_, member) = {
        let m = env.cli(&[
            "token",
            "create",
            "--workspace",
            &ws,
            "--scopes",
            ALL_SCOPES,
            "--role",
            "member",
        ])?;
        (
            ws.clone(),
            m["token"].as_str().ok_or("no token")?.to_owned(),
        )
    };
    let up = Loopback::start(BODY)?;
    let rx = Loopback::start("{}")?;
    let mut server = env.serve(&[])?;

    // Webhooks: validation, SSRF, role, creation with a generated secret shown once.
    let hooks = "/v1/webhooks";
    let (s, b) = call(
        &server,
        "POST",
        hooks,
        &token,
        Some(&json!({"url": "http://10.1.2.3/h"})),
    )?;
    assert_eq!(s, 400, "{b}");
    assert!(
        b["error"].as_str().unwrap_or_default().starts_with("url:"),
        "{b}"
    );
    let (s, b) = call(
        &server,
        "POST",
        hooks,
        &token,
        Some(&json!({"url": rx.url("/h"), "minSeverity": "loud"})),
    )?;
    assert_eq!(s, 400, "{b}");
    let (s, b) = call(
        &server,
        "POST",
        hooks,
        &member,
        Some(&json!({"url": rx.url("/h")})),
    )?;
    assert_eq!(s, 403, "{b}");
    let (s, b) = call(
        &server,
        "POST",
        hooks,
        &token,
        Some(&json!({"url": rx.url("/h")})),
    )?;
    assert_eq!(s, 201, "{b}");
    let secret = b["webhook"]["secret"]
        .as_str()
        .ok_or("generated secret not returned")?
        .to_owned();
    assert_eq!(b["webhook"]["minSeverity"], "warning");
    // A supplied secret is never echoed; a channel that only wants breaking changes.
    let (s, b2) = call(
        &server,
        "POST",
        hooks,
        &token,
        Some(&json!({"url": rx.url("/b"), "secret": "s3cret-supplied", "minSeverity": "breaking"})),
    )?;
    assert_eq!(s, 201, "{b2}");
    assert!(b2["webhook"].get("secret").is_none(), "{b2}");
    let b2_id = b2["webhook"]["id"].as_str().ok_or("no id")?.to_owned();
    let (s, list) = call(&server, "GET", hooks, &token, None)?;
    assert_eq!(s, 200);
    assert_eq!(list["webhooks"].as_array().map(Vec::len), Some(2));
    assert!(!list.to_string().contains(&secret) && !list.to_string().contains("s3cret"));
    let (s, _) = call(&server, "DELETE", &format!("{hooks}/{b2_id}"), &token, None)?;
    assert_eq!(s, 204);
    let (s, _) = call(&server, "DELETE", &format!("{hooks}/{b2_id}"), &token, None)?;
    assert_eq!(s, 404);

    // An endpoint with a baseline.
    let (s, created) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(
            &json!({"name": "users", "url": up.url("/users"), "diffMode": "full", "timeoutMs": 2000}),
        ),
    )?;
    assert_eq!(s, 201, "{created}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let (s, b) = call(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        None,
    )?;
    assert_eq!(s, 201, "{b}");
    let check = format!("/api/v1/endpoints/{id}/check");
    let (s, b) = call(&server, "POST", &check, &token, None)?;
    assert_eq!((s, b["alertsSent"].as_u64()), (200, Some(0)), "{b}");

    // Drift: the receiver fails the first attempt with a 500.
    rx.script(vec![
        Answer::Status(500),
        Answer::Hang(Duration::from_millis(1500)),
    ]);
    up.set(DRIFTED);
    let (s, b) = call(&server, "POST", &check, &token, None)?;
    assert_eq!((s, b["alertsSent"].as_u64()), (200, Some(1)), "{b}");
    let diff_id = b["diffId"].as_str().ok_or("no diff")?.to_owned();
    // The same drift again: a new diff row, but no new alert.
    let (s, b) = call(&server, "POST", &check, &token, None)?;
    assert_eq!((s, b["alertsSent"].as_u64()), (200, Some(0)), "{b}");
    let latest_diff = b["diffId"].as_str().ok_or("no diff")?.to_owned();

    // Kill the server after the first (failed) attempt; the delivery survives the restart.
    wait_for(20, "the first attempt", || !rx.seen().is_empty())?;
    drop(server);
    server = env.serve(&[])?;
    // Second attempt times out (hang 1.5 s > 0.7 s timeout), the third succeeds.
    wait_for(30, "three attempts", || rx.seen().len() >= 3)?;
    std::thread::sleep(Duration::from_millis(800));
    let got = deliveries(&rx, &secret)?;
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got.iter()
            .all(|(t, id, _)| t == "drift.detected" && *id == got[0].1)
    );
    let event = &got[0].2;
    assert_eq!(event["endpoint"]["id"], id.as_str());
    assert_eq!(event["endpoint"]["method"], "GET");
    assert_eq!(event["workspaceId"], ws.as_str());
    assert_eq!(event["diff"]["id"], diff_id.as_str());
    assert!(
        event["diff"]["changes"]
            .as_array()
            .is_some_and(|c| !c.is_empty() && c.len() <= 20)
    );
    assert!(
        event["diff"]["breakingCount"]
            .as_u64()
            .is_some_and(|n| n >= 1)
    );
    assert!(
        event["createdAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );

    // Accept (D12): admin only, baseline version 2, health healthy, idempotent.
    let accept = format!("/api/v1/diffs/{latest_diff}/accept");
    let (s, _) = call(&server, "POST", &accept, &member, None)?;
    assert_eq!(s, 403);
    let (s, b) = call(&server, "POST", &accept, &token, None)?;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        (
            b["baselineVersion"].as_u64(),
            b["diff"]["accepted"].as_bool(),
            b["newlyAccepted"].as_bool()
        ),
        (Some(2), Some(true), Some(true)),
        "{b}"
    );
    let (s, b) = call(&server, "POST", &accept, &token, None)?;
    assert_eq!(
        (
            s,
            b["baselineVersion"].as_u64(),
            b["newlyAccepted"].as_bool()
        ),
        (200, Some(2), Some(false)),
        "{b}"
    );
    let (_, e) = call(
        &server,
        "GET",
        &format!("/api/v1/endpoints/{id}"),
        &token,
        None,
    )?;
    let e = if e.get("endpoint").is_some() {
        e["endpoint"].clone()
    } else {
        e
    };
    assert_eq!(
        (e["health"].as_str(), e["baselineVersion"].as_u64()),
        (Some("healthy"), Some(2)),
        "{e}"
    );
    let (s, _) = call(
        &server,
        "POST",
        &format!("/api/v1/diffs/{}/accept", apidrift_store::new_id()),
        &token,
        None,
    )?;
    assert_eq!(s, 404);

    // The accepted response is the baseline now: a clean check resolves the alerted drift once.
    let (s, b) = call(&server, "POST", &check, &token, None)?;
    assert_eq!(
        (s, b["diffId"].is_null(), b["alertsSent"].as_u64()),
        (200, true, Some(1)),
        "{b}"
    );
    let (s, b) = call(&server, "POST", &check, &token, None)?;
    assert_eq!((s, b["alertsSent"].as_u64()), (200, Some(0)), "{b}");
    wait_for(20, "the resolution", || rx.seen().len() >= 4)?;
    std::thread::sleep(Duration::from_millis(500));
    let got = deliveries(&rx, &secret)?;
    let detected: std::collections::BTreeSet<_> = got
        .iter()
        .filter(|d| d.0 == "drift.detected")
        .map(|d| d.1.clone())
        .collect();
    let resolved: Vec<_> = got.iter().filter(|d| d.0 == "drift.resolved").collect();
    assert_eq!((detected.len(), resolved.len()), (1, 1), "{got:?}");
    assert_eq!(got.len(), 4, "{got:?}");

    // The endpoint's diffs through the second surface (D13).
    let (s, b) = call(
        &server,
        "GET",
        &format!("/v1/endpoints/{id}/diffs"),
        &token,
        None,
    )?;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["diffs"][0]["id"], latest_diff.as_str());
    assert_eq!(b["diffs"][1]["id"], diff_id.as_str());
    Ok(())
}

fn schedules_and_quota(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    // Starter plan, a quota of 3: the first run captures, two runs check, then runs are skipped.
    let (_, token) =
        env.workspace_and_token(&["--plan", "starter", "--check-quota", "3"], "admin")?;
    let (_, free_token) = env.workspace_and_token(&["--plan", "free"], "admin")?;
    let up = Loopback::start(BODY)?;
    let server = env.serve(&[
        ("APIDRIFT_WORKER__PERIOD_OVERRIDE_MS", "400"),
        ("APIDRIFT_WORKER__FIRST_RUN_JITTER", "false"),
    ])?;
    // A free workspace cannot schedule (D6).
    let (s, b) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &free_token,
        Some(&json!({"name": "f", "url": up.url("/free"), "schedule": {"frequency": "hourly"}})),
    )?;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b["skipped"][0]["reason"],
        "schedule: requires the Starter plan or above"
    );

    let (s, b) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(
            &json!({"name": "s", "url": up.url("/scheduled"), "schedule": {"frequency": "hourly"}}),
        ),
    )?;
    assert_eq!(s, 201, "{b}");
    let id = b["endpoints"][0]["id"].as_str().ok_or("no id")?.to_owned();
    let hits = || {
        up.seen()
            .iter()
            .filter(|(h, _)| h.contains("/scheduled"))
            .count()
    };
    // Nobody calls the API: the baseline is captured, then checks run on their own.
    wait_for(20, "three scheduled runs", || hits() >= 3)?;
    let (_, e) = call(
        &server,
        "GET",
        &format!("/api/v1/endpoints/{id}"),
        &token,
        None,
    )?;
    let e = if e.get("endpoint").is_some() {
        e["endpoint"].clone()
    } else {
        e
    };
    assert_eq!(e["baselineVersion"].as_u64(), Some(1), "{e}");
    assert!(!e["lastCheckedAt"].is_null(), "{e}");
    // The quota (3) is used up: several more periods pass without another upstream request.
    std::thread::sleep(Duration::from_millis(2000));
    assert_eq!(hits(), 3, "a run with the quota exhausted must not fetch");
    // A manual check is refused the same way (400).
    let (s, b) = call(
        &server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        &token,
        None,
    )?;
    assert_eq!(s, 400, "{b}");
    drop(server);
    Ok(())
}

#[test]
fn webhook_cli() -> TestResult {
    let Some(env) = Env::new(Backend::Sqlite, ENV)? else {
        return Ok(());
    };
    let (ws, _) = env.workspace_and_token(&[], "admin")?;
    let added = env.cli(&[
        "webhook",
        "add",
        "--workspace",
        &ws,
        "--url",
        "http://127.0.0.1:9/h",
    ])?;
    let secret = added["secret"]
        .as_str()
        .ok_or("generated secret not printed")?;
    assert!(secret.starts_with("whsec_"));
    assert_eq!(added["minSeverity"], "warning");
    let id = added["id"].as_str().ok_or("no id")?.to_owned();
    let list = env.cli(&["webhook", "list", "--workspace", &ws])?;
    assert_eq!(list["webhooks"].as_array().map(Vec::len), Some(1));
    assert!(!list.to_string().contains(secret), "{list}");
    // A supplied secret (stdin) is never printed.
    let mut cmd = env.command(&[
        "webhook",
        "add",
        "--workspace",
        &ws,
        "--url",
        "http://127.0.0.1:9/b",
        "--min-severity",
        "breaking",
        "--secret-stdin",
    ]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn()?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(b"my-secret\n")?;
    let out = child.wait_with_output()?;
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("my-secret"));
    // The outbound policy refuses private addresses outside the allow-list.
    let out = env.run(&[
        "webhook",
        "add",
        "--workspace",
        &ws,
        "--url",
        "http://10.0.0.1/h",
    ])?;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("url:"));
    let removed = env.cli(&["webhook", "remove", &id, "--workspace", &ws])?;
    assert_eq!(removed["removed"], id.as_str());
    let out = env.run(&["webhook", "remove", &id, "--workspace", &ws])?;
    assert!(!out.status.success());
    Ok(())
}
