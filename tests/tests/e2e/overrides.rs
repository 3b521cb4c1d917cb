//! Severity overrides and the per-endpoint `/metrics` series end to end (issue 27, D26): the
//! real `apidrift serve` with loopback upstreams that drift, a loopback webhook receiver, on
//! SQLite and PostgreSQL.
//!
//! * an endpoint rule `field-added` → breaking turns an added field (info by default) into a
//!   breaking diff: health breaking, one alert delivered;
//! * `PATCH /api/v1/workspace`: admin only, unknown rule ids refused naming the valid ones,
//!   ETag / If-Match (412 on a stale version);
//! * the workspace default applies to an endpoint without rules, and an endpoint's `ignore` on a
//!   path wins over it: no diff, health healthy, no alert;
//! * `/metrics` with `[metrics] per_endpoint = true` and `max_series = 2` over three endpoints:
//!   the exposition parses strictly, two series per family, `apidrift_metrics_series_dropped` 1.

use crate::console::Upstream;
use crate::env::{Backend, Env};
use crate::metrics::parse_exposition;
use apidrift_e2e::server::Server;
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn Error>>;

const ALL_SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
const VARS: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__UNAUTHENTICATED_PER_MINUTE", "100000"),
    ("APIDRIFT_WORKER__POLL_MS", "50"),
    ("APIDRIFT_METRICS__PER_ENDPOINT", "true"),
    ("APIDRIFT_METRICS__MAX_SERIES", "2"),
];

const BODY: &str = r#"{"id":1,"name":"ann"}"#;
const PLAN_ADDED: &str = r#"{"id":1,"name":"ann","plan":"pro"}"#;
const DEBUG_ADDED: &str = r#"{"id":1,"name":"ann","debug":{"trace":"x"}}"#;

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

both_backends!(overrides_drive_health_alerts_and_metrics);

/// A loopback webhook receiver: answers 200 and keeps each request body.
struct Receiver {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    fn start() -> Result<Receiver, Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().map_while(Result::ok) {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let head_end = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break Some(i + 4);
                    }
                    match conn.read(&mut chunk) {
                        Ok(0) | Err(_) => break None,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                let Some(head_end) = head_end else { continue };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + length {
                    match conn.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                if let (Ok(v), Ok(mut b)) = (
                    serde_json::from_slice::<Value>(&buf[head_end..]),
                    kept.lock(),
                ) {
                    b.push(v);
                }
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
        Ok(Receiver { url, bodies })
    }

    /// The endpoint ids of the `drift.detected` events received.
    fn detected(&self) -> Vec<String> {
        self.bodies
            .lock()
            .map(|b| {
                b.iter()
                    .filter(|v| v["type"] == "drift.detected")
                    .map(|v| v["endpoint"]["id"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

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

/// Creates an endpoint (full mode) and captures its baseline: its id.
fn endpoint_with_baseline(
    server: &Server,
    token: &str,
    entry: Value,
) -> Result<String, Box<dyn Error>> {
    let (s, created) = call(server, "POST", "/api/v1/endpoints", token, Some(&entry))?;
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

fn check(server: &Server, token: &str, id: &str) -> Result<Value, Box<dyn Error>> {
    let (s, b) = call(
        server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        token,
        None,
    )?;
    assert_eq!(s, 200, "{b}");
    Ok(b)
}

fn health(server: &Server, token: &str, id: &str) -> Result<String, Box<dyn Error>> {
    let (s, b) = call(
        server,
        "GET",
        &format!("/api/v1/endpoints/{id}"),
        token,
        None,
    )?;
    assert_eq!(s, 200, "{b}");
    Ok(b["endpoint"]["health"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

fn overrides_drive_health_alerts_and_metrics(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, VARS)? else {
        return Ok(());
    };
    let (ws, admin) = env.workspace_and_token(&[], ALL_SCOPES, "admin")?;
    let member = env.cli(&[
        "token",
        "create",
        "--workspace",
        &ws,
        "--scopes",
        ALL_SCOPES,
        "--role",
        "member",
    ])?["token"]
        .as_str()
        .ok_or("no token")?
        .to_owned();
    let plan_up = Upstream::start(BODY)?;
    let debug_up = Upstream::start(BODY)?;
    let rx = Receiver::start()?;
    let server = env.serve(&[])?;
    let (s, b) = call(
        &server,
        "POST",
        "/v1/webhooks",
        &admin,
        Some(&json!({"url": rx.url, "minSeverity": "warning"})),
    )?;
    assert_eq!(s, 201, "{b}");

    // An unknown rule id is a 400 naming the valid ones; the endpoint shows its overrides.
    let (s, b) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &admin,
        Some(&json!({"name": "x", "url": plan_up.url,
            "severityOverrides": [{"rule": "added", "severity": "breaking"}]})),
    )?;
    assert_eq!(s, 200, "{b}");
    let reason = b["skipped"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("severityOverrides[0].rule: unknown rule \"added\"; the rules are ")
            && reason.contains("field-added"),
        "{b}"
    );
    let strict = endpoint_with_baseline(
        &server,
        &admin,
        json!({"name": "a \"strict\" \\ one", "url": plan_up.url, "diffMode": "full",
            "severityOverrides": [{"rule": "field-added", "severity": "breaking"}]}),
    )?;
    let (s, b) = call(
        &server,
        "GET",
        &format!("/api/v1/endpoints/{strict}"),
        &admin,
        None,
    )?;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b["endpoint"]["severityOverrides"],
        json!([{"rule": "field-added", "severity": "breaking"}])
    );
    let (s, b) = call(
        &server,
        "PATCH",
        &format!("/api/v1/endpoints/{strict}"),
        &admin,
        Some(
            &json!({"severityOverrides": [{"rule": "status-changed", "path": "$.a", "severity": "info"}]}),
        ),
    )?;
    assert_eq!(s, 400, "{b}");
    assert!(
        b["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("severityOverrides[0]: invalid severity override")),
        "{b}"
    );
    let quiet = endpoint_with_baseline(
        &server,
        &admin,
        json!({"name": "b-quiet", "url": debug_up.url, "diffMode": "full",
            "severityOverrides": [{"rule": "field-added", "path": "$.debug", "severity": "ignore"}]}),
    )?;
    let plain = endpoint_with_baseline(
        &server,
        &admin,
        json!({"name": "c-default", "url": plan_up.url, "diffMode": "full"}),
    )?;

    // The endpoint rule alone: an added field (info by default) is breaking and alerts.
    plan_up.set(PLAN_ADDED);
    let b = check(&server, &admin, &strict)?;
    assert_eq!(b["breakingCount"], 1, "{b}");
    assert_eq!(b["alertsSent"], 1, "{b}");
    assert_eq!(health(&server, &admin, &strict)?, "breaking");
    wait_for(20, "the strict endpoint's alert", || {
        rx.detected() == [strict.clone()]
    })?;

    // The workspace's settings: read with an ETag, changed by an admin only, If-Match honoured.
    let res = server
        .request("GET", "/api/v1/workspace")
        .bearer(&admin)
        .send()?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.json()["workspace"]["severityOverrides"], json!([]));
    assert_eq!(res.json()["workspace"]["id"], ws.as_str());
    let etag = res.header("etag").ok_or("no ETag")?.to_owned();
    let default = json!({"severityOverrides": [{"rule": "field-added", "severity": "breaking"}]});
    let (s, b) = call(
        &server,
        "PATCH",
        "/api/v1/workspace",
        &member,
        Some(&default),
    )?;
    assert_eq!(s, 403, "{b}");
    let (s, b) = call(
        &server,
        "PATCH",
        "/api/v1/workspace",
        &admin,
        Some(&json!({"severityOverrides": [{"rule": "added", "severity": "info"}]})),
    )?;
    assert_eq!(s, 400, "{b}");
    assert!(
        b["error"]
            .as_str()
            .is_some_and(|e| e.contains("the rules are field-removed")),
        "{b}"
    );
    let res = server
        .request("PATCH", "/api/v1/workspace")
        .bearer(&admin)
        .header("If-Match", &etag)
        .json(&default)
        .send()?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(
        res.json()["workspace"]["severityOverrides"],
        default["severityOverrides"]
    );
    assert_ne!(res.header("etag"), Some(etag.as_str()));
    let stale = server
        .request("PATCH", "/api/v1/workspace")
        .bearer(&admin)
        .header("If-Match", &etag)
        .json(&json!({"severityOverrides": []}))
        .send()?;
    assert_eq!(stale.status, 412, "{}", stale.text());
    assert_eq!(
        stale.json()["error"],
        "the workspace changed since you read it"
    );

    // The workspace default applies where the endpoint has no rule of its own.
    let b = check(&server, &admin, &plain)?;
    assert_eq!(b["breakingCount"], 1, "{b}");
    assert_eq!(b["alertsSent"], 1, "{b}");
    assert_eq!(health(&server, &admin, &plain)?, "breaking");

    // The endpoint's `ignore` on a path wins over the workspace default: no diff, no alert.
    debug_up.set(DEBUG_ADDED);
    let b = check(&server, &admin, &quiet)?;
    assert_eq!(b["diffId"], Value::Null, "{b}");
    assert_eq!(b["alertsSent"], 0, "{b}");
    assert_eq!(health(&server, &admin, &quiet)?, "healthy");
    let (s, diffs) = call(
        &server,
        "GET",
        &format!("/v1/endpoints/{quiet}/diffs"),
        &admin,
        None,
    )?;
    assert_eq!(s, 200, "{diffs}");
    assert_eq!(diffs["diffs"], json!([]), "{diffs}");
    wait_for(20, "the default endpoint's alert", || {
        rx.detected().len() == 2
    })?;
    std::thread::sleep(Duration::from_millis(500));
    let mut detected = rx.detected();
    detected.sort();
    let mut expected = vec![strict.clone(), plain.clone()];
    expected.sort();
    assert_eq!(detected, expected, "no alert for the ignored change");

    // Per-endpoint series: three endpoints, two series (by name), one dropped.
    let res = server.request("GET", "/metrics").send()?;
    assert_eq!(res.status, 200);
    let families = parse_exposition(&res.text())?;
    let samples = |name: &str| {
        families
            .get(name)
            .map(|f| {
                assert_eq!(f.kind, "gauge", "{name}");
                f.samples.clone()
            })
            .unwrap_or_default()
    };
    let drift = samples("apidrift_endpoint_drift_open");
    let by_name: Vec<(String, f64)> = drift
        .iter()
        .map(|s| {
            assert_eq!(s.labels["workspace"], "w");
            (s.labels["endpoint"].clone(), s.value)
        })
        .collect();
    assert_eq!(
        by_name,
        [
            ("a \"strict\" \\ one".to_owned(), 1.0),
            ("b-quiet".to_owned(), 0.0)
        ]
    );
    assert_eq!(drift[0].labels["endpoint_id"], strict);
    let up = samples("apidrift_endpoint_up");
    assert_eq!(up.len(), 2);
    assert!(up.iter().all(|s| s.value == 1.0), "{up:?}");
    let took = samples("apidrift_endpoint_response_seconds");
    assert_eq!(took.len(), 2);
    assert!(
        took.iter().all(|s| s.value >= 0.0 && s.value < 10.0),
        "{took:?}"
    );
    let dropped = samples("apidrift_metrics_series_dropped");
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].value, 1.0);
    Ok(())
}
