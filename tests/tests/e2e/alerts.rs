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
//!   quota skips runs without retrying in a loop;
//! * a key in an endpoint URL's query (issue 23, item 8): no message of any channel kind carries
//!   it (the URL shows `api_key=…`), while the check itself sends it.

use apidrift_e2e::server::Server;
use ring::hmac;
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::env::{Backend, Env};

pub(crate) type TestResult = Result<(), Box<dyn Error>>;

pub(crate) const ALL_SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
pub(crate) const ENV: &[(&str, &str)] = &[
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
pub(crate) type Delivery = (String, String, Value);

/// A loopback HTTP server: answers from a script (then the default), records (head, body).
pub(crate) struct Loopback {
    addr: SocketAddr,
    body: Arc<Mutex<String>>,
    script: Arc<Mutex<Vec<Answer>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Loopback {
    pub(crate) fn start(body: &str) -> Result<Loopback, Box<dyn Error>> {
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

    pub(crate) fn set(&self, body: &str) {
        if let Ok(mut g) = self.body.lock() {
            *g = body.to_owned();
        }
    }

    fn script(&self, answers: Vec<Answer>) {
        if let Ok(mut g) = self.script.lock() {
            *g = answers;
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
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

pub(crate) fn call(
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
pub(crate) fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("timed out waiting for {what}").into())
}

pub(crate) const BODY: &str = r#"{"users":[{"id":1,"name":"ann","email":"a@x"}],"total":1}"#;
pub(crate) const DRIFTED: &str = r#"{"users":[{"id":1,"name":"ann"}],"total":"1"}"#;

/// The signed deliveries the receiver saw: (type, event id, body), each signature checked.
pub(crate) fn deliveries(rx: &Loopback, secret: &str) -> Result<Vec<Delivery>, Box<dyn Error>> {
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
    let (ws, token) = env.workspace_and_token(&[], ALL_SCOPES, "admin")?;
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
    // The refusal says how a self-hosted install allows the address.
    assert!(
        b["error"]
            .as_str()
            .unwrap_or_default()
            .contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.1/32"),
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
    // The same drift again: counted on the same open diff (D26), and no new alert.
    let (s, b) = call(&server, "POST", &check, &token, None)?;
    assert_eq!((s, b["alertsSent"].as_u64()), (200, Some(0)), "{b}");
    let latest_diff = b["diffId"].as_str().ok_or("no diff")?.to_owned();
    assert_eq!(latest_diff, diff_id, "{b}");
    assert_eq!(b["seenCount"].as_u64(), Some(2), "{b}");

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
    // One drift, one diff: seen by the two drifting checks, accepted.
    assert_eq!(b["diffs"].as_array().map(Vec::len), Some(1), "{b}");
    assert_eq!(b["diffs"][0]["id"], diff_id.as_str());
    assert_eq!(
        (
            b["diffs"][0]["seenCount"].as_u64(),
            b["diffs"][0]["accepted"].as_bool()
        ),
        (Some(2), Some(true)),
        "{b}"
    );
    Ok(())
}

fn schedules_and_quota(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    // Starter plan, a quota of 3: the first run captures (three samples, the default of
    // `[baseline] first_samples`), two runs check, then runs are skipped.
    let (_, token) = env.workspace_and_token(
        &["--plan", "starter", "--check-quota", "3"],
        ALL_SCOPES,
        "admin",
    )?;
    let (_, free_token) = env.workspace_and_token(&["--plan", "free"], ALL_SCOPES, "admin")?;
    let up = Loopback::start(BODY)?;
    let server = env.serve(&[
        ("APIDRIFT_WORKER__PERIOD_OVERRIDE_MS", "400"),
        ("APIDRIFT_WORKER__FIRST_RUN_JITTER", "false"),
        ("APIDRIFT_BASELINE__SAMPLE_INTERVAL_MS", "50"),
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
    // Nobody calls the API: the baseline is captured from three fetches, then checks run on
    // their own.
    wait_for(20, "three scheduled runs", || hits() >= 5)?;
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
    assert_eq!(hits(), 5, "a run with the quota exhausted must not fetch");
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
    let (ws, _) = env.workspace_and_token(&[], ALL_SCOPES, "admin")?;
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
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("url:"), "{stderr}");
    assert!(
        stderr.contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS") && stderr.contains("[outbound]"),
        "{stderr}"
    );
    // Native kinds: `create` is `add`; the Slack URL and the routing key come on stdin and are
    // never printed.
    for (kind, flag, input) in [
        (
            "slack",
            "--url-stdin",
            "http://127.0.0.1:9/services/T/B/cliSlackToken",
        ),
        (
            "pagerduty",
            "--secret-stdin",
            "cliRoutingKey0123456789abcdefABC",
        ),
    ] {
        let mut cmd = env.command(&[
            "webhook",
            "create",
            "--workspace",
            &ws,
            "--kind",
            kind,
            flag,
        ]);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn()?;
        child
            .stdin
            .take()
            .ok_or("no stdin")?
            .write_all(format!("{input}\n").as_bytes())?;
        let out = child.wait_with_output()?;
        assert!(out.status.success(), "{kind}: {out:?}");
        let printed: Value = serde_json::from_slice(&out.stdout)?;
        assert_eq!(printed["kind"], kind, "{printed}");
        assert!(printed.get("secret").is_none(), "{printed}");
        assert!(
            !printed.to_string().contains("cliSlackToken")
                && !printed.to_string().contains("cliRoutingKey")
        );
    }
    let out = env.run(&[
        "webhook",
        "create",
        "--workspace",
        &ws,
        "--kind",
        "pagerduty",
    ])?;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("secret: required"));
    let removed = env.cli(&["webhook", "remove", &id, "--workspace", &ws])?;
    assert_eq!(removed["removed"], id.as_str());
    let out = env.run(&["webhook", "remove", &id, "--workspace", &ws])?;
    assert!(!out.status.success());
    Ok(())
}

// ================================================================ native channels (Slack, Discord, PagerDuty)

both_backends!(native_channels);

/// A Slack incoming-webhook URL token, a Discord webhook token and a PagerDuty routing key:
/// secrets that no response, page or log line may show.
const SLACK_TOKEN: &str = "slackSecretToken3f9a";
const DISCORD_TOKEN: &str = "discordSecretToken81bc";
const ROUTING_KEY: &str = "R0utingKey0123456789abcdefABCDEF";
const PUBLIC_URL: &str = "https://drift.example.test";

fn chars(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

fn non_empty_str(v: &Value, max: usize, what: &str) -> Result<(), String> {
    match v.as_str() {
        Some(s) if !s.trim().is_empty() && s.chars().count() <= max => Ok(()),
        _ => Err(format!(
            "{what}: a non-empty string of at most {max} characters, got {v}"
        )),
    }
}

/// Slack's incoming-webhook message: `text` (the notification fallback) and Block Kit
/// `blocks` (at most 50): a `header` takes `plain_text` of at most 150 characters, a `section`
/// `mrkdwn`/`plain_text` of at most 3000.
fn validate_slack(v: &Value) -> Result<(), String> {
    let obj = v.as_object().ok_or("not a JSON object")?;
    for key in obj.keys() {
        if ![
            "text",
            "blocks",
            "username",
            "icon_emoji",
            "icon_url",
            "mrkdwn",
        ]
        .contains(&key.as_str())
        {
            return Err(format!("unknown top-level field {key}"));
        }
    }
    non_empty_str(&v["text"], 40_000, "text")?;
    let blocks = v["blocks"].as_array().ok_or("blocks: an array")?;
    if blocks.is_empty() || blocks.len() > 50 {
        return Err(format!("blocks: 1 to 50, got {}", blocks.len()));
    }
    for b in blocks {
        match b["type"].as_str() {
            Some("header") => {
                if b["text"]["type"] != "plain_text" {
                    return Err(format!("header text must be plain_text: {b}"));
                }
                non_empty_str(&b["text"]["text"], 150, "header text")?;
            }
            Some("section") => {
                if !matches!(b["text"]["type"].as_str(), Some("mrkdwn" | "plain_text")) {
                    return Err(format!("section text type: {b}"));
                }
                non_empty_str(&b["text"]["text"], 3000, "section text")?;
            }
            Some("divider") => {}
            Some("context") => {
                let els = b["elements"].as_array().ok_or("context elements")?;
                if els.is_empty() || els.len() > 10 {
                    return Err("context: 1 to 10 elements".into());
                }
            }
            other => return Err(format!("unexpected block type {other:?}")),
        }
    }
    Ok(())
}

/// Discord's execute-webhook body: `content` (at most 2000) and/or `embeds` (at most 10), each
/// embed within its limits (title 256, description 4096, at most 25 fields of 256/1024, footer
/// 2048, 6000 characters in all), a colour that is a 24-bit integer, an ISO 8601 timestamp.
fn validate_discord(v: &Value) -> Result<(), String> {
    let obj = v.as_object().ok_or("not a JSON object")?;
    if let Some(c) = obj.get("content") {
        non_empty_str(c, 2000, "content")?;
    }
    let embeds = v["embeds"].as_array().cloned().unwrap_or_default();
    if obj.get("content").is_none() && embeds.is_empty() {
        return Err("content or embeds required".into());
    }
    if embeds.len() > 10 {
        return Err("at most 10 embeds".into());
    }
    let mut total = 0;
    for e in &embeds {
        if let Some(t) = e.get("title") {
            non_empty_str(t, 256, "embed title")?;
        }
        if let Some(d) = e.get("description") {
            non_empty_str(d, 4096, "embed description")?;
        }
        if let Some(c) = e.get("color")
            && c.as_u64().is_none_or(|n| n > 0xff_ffff)
        {
            return Err(format!("color: a 24-bit integer, got {c}"));
        }
        if let Some(t) = e.get("timestamp")
            && !t
                .as_str()
                .is_some_and(|s| s.contains('T') && s.ends_with('Z'))
        {
            return Err(format!("timestamp: ISO 8601, got {t}"));
        }
        if let Some(u) = e.get("url")
            && !u
                .as_str()
                .is_some_and(|s| s.starts_with("https://") || s.starts_with("http://"))
        {
            return Err(format!("url: {u}"));
        }
        let fields = e["fields"].as_array().cloned().unwrap_or_default();
        if fields.len() > 25 {
            return Err("at most 25 fields".into());
        }
        for f in &fields {
            non_empty_str(&f["name"], 256, "field name")?;
            non_empty_str(&f["value"], 1024, "field value")?;
            total += chars(&f["name"]) + chars(&f["value"]);
        }
        total += chars(&e["title"]) + chars(&e["description"]) + chars(&e["footer"]["text"]);
        if chars(&e["footer"]["text"]) > 2048 {
            return Err("footer text: at most 2048".into());
        }
    }
    if total > 6000 {
        return Err(format!("embeds: {total} characters, at most 6000"));
    }
    Ok(())
}

/// PagerDuty Events API v2: `routing_key` (32 characters), `event_action`
/// (`trigger`|`acknowledge`|`resolve`), `dedup_key` (at most 255); a trigger needs `payload`
/// with `summary` (at most 1024), `source` and `severity` (`critical`|`error`|`warning`|`info`).
fn validate_pagerduty(v: &Value) -> Result<(), String> {
    if chars(&v["routing_key"]) != 32 {
        return Err(format!(
            "routing_key: 32 characters, got {}",
            v["routing_key"]
        ));
    }
    non_empty_str(&v["dedup_key"], 255, "dedup_key")?;
    match v["event_action"].as_str() {
        Some("trigger") => {
            let p = &v["payload"];
            non_empty_str(&p["summary"], 1024, "payload.summary")?;
            non_empty_str(&p["source"], 1024, "payload.source")?;
            if !matches!(
                p["severity"].as_str(),
                Some("critical" | "error" | "warning" | "info")
            ) {
                return Err(format!("payload.severity: {}", p["severity"]));
            }
            if let Some(t) = p.get("timestamp")
                && !t.as_str().is_some_and(|s| s.contains('T'))
            {
                return Err(format!("payload.timestamp: {t}"));
            }
            if let Some(links) = v.get("links") {
                for l in links.as_array().ok_or("links: an array")? {
                    non_empty_str(&l["href"], 2048, "links.href")?;
                }
            }
            Ok(())
        }
        Some("resolve" | "acknowledge") => Ok(()),
        other => Err(format!("event_action: {other:?}")),
    }
}

/// The JSON bodies a receiver got, each one a POST of `application/json` with no signature.
fn native_bodies(rx: &Loopback) -> Result<Vec<Value>, Box<dyn Error>> {
    let mut out = Vec::new();
    for (head, body) in rx.seen() {
        assert!(head.starts_with("POST "), "{head}");
        assert!(
            header(&head, "content-type").is_some_and(|c| c.starts_with("application/json")),
            "{head}"
        );
        assert!(
            header(&head, "apidrift-signature").is_none(),
            "only generic webhooks are signed"
        );
        out.push(serde_json::from_slice(&body)?);
    }
    Ok(out)
}

fn native_channels(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let (_, token) = env.workspace_and_token(&[], ALL_SCOPES, "admin")?;
    let up = Loopback::start(BODY)?;
    let slack = Loopback::start("ok")?;
    let discord = Loopback::start("")?;
    let pd =
        Loopback::start(r#"{"status":"success","message":"Event processed","dedup_key":"x"}"#)?;
    pd.script(vec![Answer::Status(202), Answer::Status(202)]);
    let server = env.serve(&[("APIDRIFT_SERVER__PUBLIC_URL", PUBLIC_URL)])?;
    let mut answers = String::new();
    let mut post = |body: Value| -> Result<(u16, Value), Box<dyn Error>> {
        let (s, b) = call(&server, "POST", "/v1/webhooks", &token, Some(&body))?;
        answers.push_str(&b.to_string());
        Ok((s, b))
    };

    // Refusals that say what to do.
    let slack_url = slack.url(&format!("/services/T0AAA/B0BBB/{SLACK_TOKEN}"));
    let discord_url = discord.url(&format!("/api/webhooks/1234/{DISCORD_TOKEN}"));
    let refused: Vec<(Value, &str)> = vec![
        (
            json!({"kind": "teams", "url": slack_url}),
            "kind: one of generic, slack, discord, pagerduty",
        ),
        (json!({"kind": "slack"}), "url: required"),
        (
            json!({"kind": "slack", "url": slack_url, "secret": "x"}),
            "secret: a slack webhook is authenticated by its URL",
        ),
        (
            json!({"kind": "discord", "url": "http://10.0.0.1/api/webhooks/1/t"}),
            "url: ",
        ),
        (json!({"kind": "pagerduty"}), "secret: required"),
        (
            json!({"kind": "pagerduty", "secret": "short"}),
            "secret: a PagerDuty routing key is 32",
        ),
        (
            json!({"kind": "pagerduty", "secret": ROUTING_KEY, "url": "http://192.168.1.1/v2/enqueue"}),
            "url: ",
        ),
    ];
    for (body, reason) in refused {
        let (s, b) = post(body.clone())?;
        assert_eq!(s, 400, "{body} → {b}");
        assert!(
            b["error"].as_str().is_some_and(|e| e.starts_with(reason)),
            "{body} → {b}"
        );
    }

    // Created: the Slack and Discord URLs redacted, no secret returned.
    let (s, b) = post(json!({"kind": "slack", "url": slack_url, "minSeverity": "info"}))?;
    assert_eq!(s, 201, "{b}");
    assert_eq!(b["webhook"]["kind"], "slack");
    assert_eq!(
        b["webhook"]["url"],
        slack.url("/services/T0AAA/B0BBB/…").as_str()
    );
    assert!(b["webhook"].get("secret").is_none(), "{b}");
    let (s, b) = post(json!({"kind": "discord", "url": discord_url}))?;
    assert_eq!(
        (s, b["webhook"]["kind"].as_str()),
        (201, Some("discord")),
        "{b}"
    );
    let (s, b) = post(
        json!({"kind": "pagerduty", "secret": ROUTING_KEY, "url": pd.url("/v2/enqueue"), "minSeverity": "breaking"}),
    )?;
    assert_eq!(
        (s, b["webhook"]["kind"].as_str()),
        (201, Some("pagerduty")),
        "{b}"
    );
    assert!(b["webhook"].get("secret").is_none(), "{b}");
    let (s, list) = call(&server, "GET", "/v1/webhooks", &token, None)?;
    assert_eq!(s, 200);
    let kinds: Vec<&str> = list["webhooks"]
        .as_array()
        .map(|l| l.iter().filter_map(|w| w["kind"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(kinds, ["slack", "discord", "pagerduty"], "{list}");
    answers.push_str(&list.to_string());

    // An endpoint drifts: each channel gets its own message.
    let (s, created) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({"name": "users <@everyone>", "url": up.url("/users"), "diffMode": "full"})),
    )?;
    assert_eq!(s, 201, "{created}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let (s, _) = call(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        None,
    )?;
    assert_eq!(s, 201);
    up.set(DRIFTED);
    let check = format!("/api/v1/endpoints/{id}/check");
    let (s, b) = call(&server, "POST", &check, &token, None)?;
    assert_eq!((s, b["alertsSent"].as_u64()), (200, Some(3)), "{b}");
    let diff_id = b["diffId"].as_str().ok_or("no diff")?.to_owned();
    // The same drift again alerts nobody.
    let (_, b) = call(&server, "POST", &check, &token, None)?;
    assert_eq!(b["alertsSent"].as_u64(), Some(0), "{b}");
    let latest = b["diffId"].as_str().ok_or("no diff")?.to_owned();
    wait_for(20, "three deliveries", || {
        !slack.seen().is_empty() && !discord.seen().is_empty() && !pd.seen().is_empty()
    })?;
    let link = format!("{PUBLIC_URL}/console/diffs/{diff_id}");

    let s1 = native_bodies(&slack)?;
    assert_eq!(s1.len(), 1);
    validate_slack(&s1[0]).map_err(|e| format!("slack: {e}: {}", s1[0]))?;
    let text = s1[0].to_string();
    assert!(
        text.contains("users &lt;@everyone&gt;"),
        "mentions are escaped: {text}"
    );
    assert!(text.contains(&link), "{text}");
    assert!(text.contains("breaking"), "{text}");

    let d1 = native_bodies(&discord)?;
    assert_eq!(d1.len(), 1);
    validate_discord(&d1[0]).map_err(|e| format!("discord: {e}: {}", d1[0]))?;
    assert_eq!(d1[0]["embeds"][0]["url"], link.as_str());
    assert_eq!(d1[0]["allowed_mentions"]["parse"], json!([]));
    assert!(
        d1[0]["embeds"][0]["fields"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    );

    let p1 = native_bodies(&pd)?;
    assert_eq!(p1.len(), 1);
    validate_pagerduty(&p1[0]).map_err(|e| format!("pagerduty: {e}: {}", p1[0]))?;
    assert_eq!(
        (
            &p1[0]["event_action"],
            &p1[0]["routing_key"],
            &p1[0]["dedup_key"]
        ),
        (&json!("trigger"), &json!(ROUTING_KEY), &json!(id))
    );
    assert_eq!(p1[0]["payload"]["severity"], "critical");
    assert!(pd.seen()[0].0.starts_with("POST /v2/enqueue "));

    // Accept the drift; the next clean check resolves it on every channel, PagerDuty with the
    // same dedup_key.
    let (s, _) = call(
        &server,
        "POST",
        &format!("/api/v1/diffs/{latest}/accept"),
        &token,
        None,
    )?;
    assert_eq!(s, 200);
    let (s, b) = call(&server, "POST", &check, &token, None)?;
    assert_eq!((s, b["alertsSent"].as_u64()), (200, Some(3)), "{b}");
    wait_for(20, "three resolutions", || {
        slack.seen().len() >= 2 && discord.seen().len() >= 2 && pd.seen().len() >= 2
    })?;
    std::thread::sleep(Duration::from_millis(300));
    let s2 = native_bodies(&slack)?;
    assert_eq!(s2.len(), 2);
    validate_slack(&s2[1]).map_err(|e| format!("slack: {e}: {}", s2[1]))?;
    assert!(
        s2[1]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Drift resolved")),
        "{}",
        s2[1]
    );
    let d2 = native_bodies(&discord)?;
    assert_eq!(d2.len(), 2);
    validate_discord(&d2[1]).map_err(|e| format!("discord: {e}: {}", d2[1]))?;
    let p2 = native_bodies(&pd)?;
    assert_eq!(p2.len(), 2);
    validate_pagerduty(&p2[1]).map_err(|e| format!("pagerduty: {e}: {}", p2[1]))?;
    assert_eq!(
        (
            &p2[1]["event_action"],
            &p2[1]["dedup_key"],
            &p2[1]["routing_key"]
        ),
        (&json!("resolve"), &p1[0]["dedup_key"], &json!(ROUTING_KEY))
    );

    // The deliveries are recorded like any webhook's; no secret in an answer or a log line.
    for w in list["webhooks"].as_array().cloned().unwrap_or_default() {
        let wid = w["id"].as_str().ok_or("no id")?;
        let (s, d) = call(
            &server,
            "GET",
            &format!("/v1/webhooks/{wid}/deliveries"),
            &token,
            None,
        )?;
        assert_eq!(s, 200, "{d}");
        answers.push_str(&d.to_string());
    }
    let logs = server.output();
    for secret in [SLACK_TOKEN, DISCORD_TOKEN, ROUTING_KEY] {
        assert!(!answers.contains(secret), "{secret} in a response");
        assert!(!logs.contains(secret), "{secret} in the log");
    }
    Ok(())
}

both_backends!(endpoint_query_values_reach_no_channel);

const ENDPOINT_KEY: &str = "endpointQueryApiKey6b1e";

fn endpoint_query_values_reach_no_channel(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let (_, token) = env.workspace_and_token(&[], ALL_SCOPES, "admin")?;
    let up = Loopback::start(BODY)?;
    let generic = Loopback::start("ok")?;
    let slack = Loopback::start("ok")?;
    let discord = Loopback::start("")?;
    let pd = Loopback::start(r#"{"status":"success"}"#)?;
    pd.script(vec![Answer::Status(202)]);
    let server = env.serve(&[])?;
    let mut secret = String::new();
    for body in [
        json!({"url": generic.url("/in"), "minSeverity": "info"}),
        json!({"kind": "slack", "url": slack.url("/services/T0/B0/x"), "minSeverity": "info"}),
        json!({"kind": "discord", "url": discord.url("/api/webhooks/1/t"), "minSeverity": "info"}),
        json!({"kind": "pagerduty", "url": pd.url("/v2/enqueue"), "secret": ROUTING_KEY, "minSeverity": "info"}),
    ] {
        let (s, b) = call(&server, "POST", "/v1/webhooks", &token, Some(&body))?;
        assert_eq!(s, 201, "{body} → {b}");
        if let Some(generated) = b["webhook"]["secret"].as_str() {
            secret = generated.to_owned();
        }
    }
    let url = up.url(&format!("/users?api_key={ENDPOINT_KEY}&v=2"));
    let (s, created) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({"name": "users", "url": url})),
    )?;
    assert_eq!(s, 201, "{created}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let (s, _) = call(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        None,
    )?;
    assert_eq!(s, 201);
    up.set(DRIFTED);
    let (s, b) = call(
        &server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        &token,
        None,
    )?;
    assert_eq!((s, b["alertsSent"].as_u64()), (200, Some(4)), "{b}");
    wait_for(20, "four deliveries", || {
        [&generic, &slack, &discord, &pd]
            .iter()
            .all(|rx| !rx.seen().is_empty())
    })?;

    // The check sent the key; no channel got it, each got the URL with the value hidden.
    assert!(
        up.seen()
            .iter()
            .any(|(head, _)| head.contains(&format!("api_key={ENDPOINT_KEY}"))),
        "the check sends the URL as registered"
    );
    let signed = deliveries(&generic, &secret)?;
    assert_eq!(
        signed[0].2["endpoint"]["url"],
        up.url("/users?api_key=…&v=…").as_str()
    );
    for (kind, rx) in [
        ("generic", &generic),
        ("slack", &slack),
        ("discord", &discord),
        ("pagerduty", &pd),
    ] {
        for (head, body) in rx.seen() {
            let text = String::from_utf8_lossy(&body);
            assert!(!head.contains(ENDPOINT_KEY), "{kind}: {head}");
            assert!(!text.contains(ENDPOINT_KEY), "{kind}: {text}");
            assert!(text.contains("api_key=…"), "{kind}: {text}");
        }
    }
    let p = native_bodies(&pd)?;
    assert_eq!(
        p[0]["payload"]["source"],
        up.url("/users?api_key=…&v=…").as_str()
    );
    // The API answers the endpoint as registered (the spec's `url`), to a token holder.
    let (s, list) = call(&server, "GET", "/api/v1/endpoints", &token, None)?;
    assert_eq!(s, 200);
    assert_eq!(list["endpoints"][0]["url"], url.as_str(), "{list}");
    Ok(())
}
