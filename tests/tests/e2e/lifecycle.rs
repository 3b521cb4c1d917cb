//! Endpoint lifecycle and history end to end (issue 15): the real `apidrift serve` on SQLite and
//! PostgreSQL with a loopback upstream whose status, body and delay the test sets. PATCH of every
//! field (valid and invalid: nothing changes on a 400), credentials replaced and dropped and never
//! echoed, retries, the check history with paging, pause skipping schedules, delete cascades with
//! the role rules, webhook test and deliveries, the cross-workspace 404 matrix of every new route,
//! and a `kill -9` during a capture and during a check: after a restart no endpoint stays
//! `checking`.

use apidrift_e2e::server::Server;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::env::{Backend, Env};

type TestResult = Result<(), Box<dyn Error>>;

const ALL_SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
const CANARY: &str = "canary-lifecycle-token-51c9";
const CANARY2: &str = "canary-lifecycle-token-replaced-8e2d";
const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    ("APIDRIFT_WORKER__POLL_MS", "100"),
    ("APIDRIFT_WORKER__PERIOD_OVERRIDE_MS", "300"),
    ("APIDRIFT_WORKER__FIRST_RUN_JITTER", "false"),
    ("APIDRIFT_WORKER__RETRY_BASE_MS", "200"),
];

#[derive(Default)]
struct State {
    body: String,
    delay: Duration,
    /// Statuses to answer next, one per request (200 when empty).
    statuses: VecDeque<u16>,
    seen: Vec<String>,
}

/// A loopback upstream (and webhook receiver) on std threads.
struct Upstream {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Upstream {
    fn start(body: &str) -> Result<Upstream, Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            body: body.to_owned(),
            ..State::default()
        }));
        let s = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let s = s.clone();
                std::thread::spawn(move || serve_one(stream, &s));
            }
        });
        Ok(Upstream { addr, state })
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn seen(&self) -> Vec<String> {
        self.with(|s| s.seen.clone())
    }
}

fn serve_one(mut stream: TcpStream, state: &Mutex<State>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let (status, body, delay) = {
        let mut g = state.lock().unwrap_or_else(|p| p.into_inner());
        g.seen.push(String::from_utf8_lossy(&buf).into_owned());
        let status = g.statuses.pop_front().unwrap_or(200);
        (status, g.body.clone(), g.delay)
    };
    std::thread::sleep(delay);
    let _ = stream.write_all(
        format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
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

both_backends!(
    lifecycle_through_the_api,
    kill_during_runs_leaves_no_checking
);

fn call(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> Result<(u16, Value, String), Box<dyn Error>> {
    let mut req = server.request(method, path).bearer(token);
    if let Some(b) = body {
        req = req.json(b);
    }
    let res = req.send()?;
    Ok((res.status, res.json(), res.text()))
}

fn token(env: &Env, ws: &str, role: &str) -> Result<String, Box<dyn Error>> {
    Ok(env.cli(&[
        "token",
        "create",
        "--workspace",
        ws,
        "--scopes",
        ALL_SCOPES,
        "--role",
        role,
    ])?["token"]
        .as_str()
        .ok_or("no token")?
        .to_owned())
}

fn workspace(env: &Env, name: &str) -> Result<String, Box<dyn Error>> {
    Ok(env.cli(&["workspace", "create", "--name", name])?["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned())
}

fn endpoint(server: &Server, token: &str, id: &str) -> Result<Value, Box<dyn Error>> {
    let (status, body, text) = call(
        server,
        "GET",
        &format!("/api/v1/endpoints/{id}"),
        token,
        None,
    )?;
    assert_eq!(status, 200, "{text}");
    Ok(body["endpoint"].clone())
}

const BODY: &str = r#"{"users":[{"id":1,"name":"ann"}],"total":1}"#;

fn lifecycle_through_the_api(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let ws = workspace(&env, "w")?;
    let other_ws = workspace(&env, "other")?;
    let member = token(&env, &ws, "member")?;
    let admin = token(&env, &ws, "admin")?;
    let viewer = token(&env, &ws, "viewer")?;
    let stranger = token(&env, &other_ws, "owner")?;
    let server = env.serve(&[])?;
    let up = Upstream::start(BODY)?;

    let (status, created, text) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &member,
        Some(
            &json!({"name": "users", "url": up.url("/users"), "timeoutMs": 2000,
            "auth": {"type": "bearer", "token": CANARY}}),
        ),
    )?;
    assert_eq!(status, 201, "{text}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    assert_eq!(created["endpoints"][0]["paused"], false);
    assert_eq!(created["endpoints"][0]["retries"], 1);
    let path = format!("/api/v1/endpoints/{id}");

    // Invalid fields: 400 naming the field, nothing changes.
    let before = endpoint(&server, &member, &id)?;
    for (patch, field) in [
        (json!({"name": ""}), "name"),
        (json!({"timeoutMs": 0}), "timeoutMs"),
        (json!({"retries": 4}), "retries"),
        (json!({"diffMode": "loose"}), "diffMode"),
        (json!({"url": "http://10.1.2.3/x"}), "url"),
        (json!({"paused": "yes"}), "paused"),
        (json!({"tags": "x"}), "tags"),
        (json!({"method": "GET", "requestBody": "{}"}), "requestBody"),
        (json!({"name": "fine", "timeoutMs": 99999999}), "timeoutMs"),
        (json!({"bogus": 1}), "bogus"),
        (json!({"ignorePaths": ["$.[["]}), "ignorePaths"),
        (json!({"auth": {"type": "bearer"}}), "auth"),
        (
            json!({"schedule": {"intervalSeconds": 59}}),
            "schedule.intervalSeconds",
        ),
        (
            json!({"schedule": {"frequency": "DAILY", "intervalSeconds": 600}}),
            "schedule",
        ),
    ] {
        let (status, body, text) = call(&server, "PATCH", &path, &member, Some(&patch))?;
        assert_eq!(status, 400, "{patch}: {text}");
        let msg = body["error"].as_str().unwrap_or_default();
        assert!(msg.contains(field), "{patch}: {msg}");
        assert_eq!(
            endpoint(&server, &member, &id)?,
            before,
            "{patch} changed something"
        );
    }
    let (status, _, _) = call(&server, "PATCH", &path, &member, Some(&json!([1])))?;
    assert_eq!(status, 400);

    // Every field, valid.
    let patch = json!({"name": "users v2", "environment": "staging", "description": "d",
        "tags": ["a", "b"], "diffMode": "full", "timeoutMs": 1500, "ignorePaths": ["$.total"],
        "followRedirects": true, "retries": 2, "method": "GET", "contentType": "application/json",
        "schedule": {"frequency": "DAILY"}, "headers": {"X-Extra": "1"}, "paused": true});
    let (status, body, text) = call(&server, "PATCH", &path, &member, Some(&patch))?;
    assert_eq!(status, 200, "{text}");
    let e = &body["endpoint"];
    assert_eq!(
        (
            &e["name"],
            &e["environment"],
            &e["description"],
            &e["diffMode"],
            &e["timeoutMs"],
            &e["retries"]
        ),
        (
            &json!("users v2"),
            &json!("staging"),
            &json!("d"),
            &json!("full"),
            &json!(1500),
            &json!(2)
        )
    );
    assert_eq!(e["tags"], json!(["a", "b"]));
    assert_eq!(e["authType"], "bearer", "absent auth keeps the credential");
    assert_eq!(e["paused"], true);
    assert_eq!(endpoint(&server, &member, &id)?, *e);
    // An interval in place of the frequency.
    let (status, _, text) = call(
        &server,
        "PATCH",
        &path,
        &member,
        Some(&json!({"schedule": {"intervalSeconds": 600}})),
    )?;
    assert_eq!(status, 200, "{text}");
    // schedule: null removes it (accepted), a viewer cannot patch.
    let (status, _, text) = call(
        &server,
        "PATCH",
        &path,
        &member,
        Some(&json!({"schedule": null, "paused": false})),
    )?;
    assert_eq!(status, 200, "{text}");
    let (status, _, _) = call(
        &server,
        "PATCH",
        &path,
        &viewer,
        Some(&json!({"name": "x"})),
    )?;
    assert_eq!(status, 403);

    // Credentials: kept, replaced, dropped; never echoed.
    let (status, _, text) = call(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &member,
        None,
    )?;
    assert_eq!(status, 201, "{text}");
    assert!(
        up.seen().last().is_some_and(|r| r.contains(CANARY)),
        "kept credential sent"
    );
    let (status, _, text) = call(
        &server,
        "PATCH",
        &path,
        &member,
        Some(&json!({"auth": {"type": "bearer", "token": CANARY2}})),
    )?;
    assert_eq!(status, 200);
    assert!(!text.contains(CANARY2));
    call(
        &server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        &member,
        None,
    )?;
    let last = up.seen().last().cloned().unwrap_or_default();
    assert!(
        last.contains(CANARY2) && !last.contains(CANARY),
        "replaced credential sent"
    );
    let (status, body, _) = call(
        &server,
        "PATCH",
        &path,
        &member,
        Some(&json!({"auth": {"type": "none"}})),
    )?;
    assert_eq!(
        (status, body["endpoint"]["authType"].as_str()),
        (200, Some("none"))
    );
    call(
        &server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        &member,
        None,
    )?;
    let last = up.seen().last().cloned().unwrap_or_default();
    assert!(
        !last.to_ascii_lowercase().contains("authorization"),
        "dropped credential: {last}"
    );
    assert_eq!(
        endpoint(&server, &member, &id)?["baselineVersion"],
        1,
        "baseline kept"
    );

    // Retries: a 503 then a 200 is one clean check, and one quota unit. Two manual checks ran
    // above; a quota of three leaves room for exactly one more.
    env.cli(&["workspace", "update", &ws, "--check-quota", "3"])?;
    let n = up.seen().len();
    up.with(|s| s.statuses.push_back(503));
    let (status, body, text) = call(
        &server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        &member,
        None,
    )?;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        (body["diffId"].clone(), body["changeCount"].clone()),
        (Value::Null, json!(0)),
        "{body}"
    );
    assert_eq!(up.seen().len(), n + 2, "one retry");
    let (status, _, text) = call(
        &server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        &member,
        None,
    )?;
    assert!(
        status == 400 && text.contains("quota"),
        "the retried check used one unit, so the quota of 3 is spent: {status} {text}"
    );
    assert_eq!(up.seen().len(), n + 2, "no fetch without quota");
    env.cli(&["workspace", "update", &ws, "--check-quota", "unlimited"])?;

    // History: newest first, paging.
    let (status, page, text) = call(
        &server,
        "GET",
        &format!("{path}/checks?limit=2"),
        &member,
        None,
    )?;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        page["pagination"],
        json!({"limit": 2, "offset": 0, "total": 3})
    );
    let checks = page["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(checks.len(), 2);
    assert!(checks[0]["startedAt"].as_str() >= checks[1]["startedAt"].as_str());
    assert_eq!(checks[0]["httpStatus"], 200);
    assert_eq!(checks[0]["scheduled"], false);
    for key in [
        "id",
        "startedAt",
        "finishedAt",
        "httpStatus",
        "responseTime",
        "error",
        "diffId",
        "breakingCount",
        "warningCount",
        "changeCount",
        "scheduled",
    ] {
        assert!(checks[0].get(key).is_some(), "CheckRecord lacks {key}");
    }
    let (_, rest, _) = call(
        &server,
        "GET",
        &format!("{path}/checks?limit=2&offset=2"),
        &member,
        None,
    )?;
    assert_eq!(rest["checks"].as_array().map(Vec::len), Some(1));
    assert!(!text.contains("ann"), "no monitored body in the history");

    // A webhook: test with a receiver that answers 200, then 500.
    let receiver = Upstream::start("{}")?;
    let (status, hook, text) = call(
        &server,
        "POST",
        "/v1/webhooks",
        &admin,
        Some(&json!({"url": receiver.url("/hook"), "minSeverity": "info"})),
    )?;
    assert_eq!(status, 201, "{text}");
    let hook_id = hook["webhook"]["id"]
        .as_str()
        .or(hook["id"].as_str())
        .ok_or("no hook id")?
        .to_owned();
    let (status, body, text) = call(
        &server,
        "POST",
        &format!("/v1/webhooks/{hook_id}/test"),
        &admin,
        None,
    )?;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        body,
        json!({"delivered": true, "status": 200, "error": null})
    );
    let ping = receiver.seen().last().cloned().unwrap_or_default();
    assert!(
        ping.to_ascii_lowercase().contains("apidrift-signature: t="),
        "signed: {ping}"
    );
    receiver.with(|s| s.statuses.extend([500; 50]));
    let (_, body, _) = call(
        &server,
        "POST",
        &format!("/v1/webhooks/{hook_id}/test"),
        &admin,
        None,
    )?;
    assert_eq!(
        (body["delivered"].clone(), body["status"].clone()),
        (json!(false), json!(500))
    );
    let (status, _, _) = call(
        &server,
        "POST",
        &format!("/v1/webhooks/{hook_id}/test"),
        &member,
        None,
    )?;
    assert_eq!(status, 403);

    // A drift queues a delivery to the failing receiver; the log shows its attempts.
    up.with(|s| s.body = r#"{"users":[{"id":1}],"total":"1"}"#.into());
    let (_, body, _) = call(
        &server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        &member,
        None,
    )?;
    let diff_id = body["diffId"].as_str().ok_or("drift expected")?.to_owned();
    let deadline = Instant::now() + Duration::from_secs(15);
    let delivery = loop {
        let (status, page, text) = call(
            &server,
            "GET",
            &format!("/v1/webhooks/{hook_id}/deliveries"),
            &admin,
            None,
        )?;
        assert_eq!(status, 200, "{text}");
        let d = page["deliveries"][0].clone();
        if d["attempts"].as_u64().unwrap_or(0) >= 1 || Instant::now() > deadline {
            break d;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(delivery["event"], "drift.detected");
    assert_eq!(delivery["endpointId"], json!(id));
    assert_eq!(delivery["diffId"], json!(diff_id));
    assert_eq!(delivery["state"], "pending");
    assert_eq!(delivery["lastStatus"], 500);
    assert!(delivery["attempts"].as_u64() >= Some(1));

    // Pause: a scheduled endpoint that is paused is not run; an unpaused one is.
    let (_, created, _) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &member,
        Some(&json!([
        {"name": "paused", "url": up.url("/paused")},
        {"name": "running", "url": up.url("/running"), "schedule": {"frequency": "HOURLY"}}])),
    )?;
    let paused_id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("id")?
        .to_owned();
    let running_id = created["endpoints"][1]["id"]
        .as_str()
        .ok_or("id")?
        .to_owned();
    let (status, body, _) = call(
        &server,
        "PATCH",
        &format!("/api/v1/endpoints/{paused_id}"),
        &member,
        // Paused in the same request that gives it a schedule, so no run can be claimed before
        // the pause (an endpoint created with a schedule may run at once).
        Some(&json!({"paused": true, "schedule": {"frequency": "HOURLY"}})),
    )?;
    assert_eq!(
        (status, body["endpoint"]["paused"].as_bool()),
        (200, Some(true))
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !up.seen().iter().any(|r| r.contains("/paused")),
        "a paused endpoint was fetched"
    );
    assert!(
        up.seen().iter().any(|r| r.contains("/running")),
        "the scheduler did not run"
    );
    let (_, page, _) = call(
        &server,
        "GET",
        &format!("/api/v1/endpoints/{running_id}/checks"),
        &member,
        None,
    )?;
    assert!(
        page["checks"]
            .as_array()
            .is_some_and(|c| c.iter().all(|c| c["scheduled"] == true))
    );

    // Cross-workspace: every new route answers 404 to another workspace.
    for (method, p) in [
        ("PATCH", path.clone()),
        ("DELETE", path.clone()),
        ("GET", format!("{path}/checks")),
        ("GET", format!("/v1/webhooks/{hook_id}/deliveries")),
        ("POST", format!("/v1/webhooks/{hook_id}/test")),
    ] {
        let body = (method == "PATCH").then(|| json!({"name": "stolen"}));
        let (status, _, text) = call(&server, method, &p, &stranger, body.as_ref())?;
        assert_eq!(status, 404, "{method} {p}: {text}");
    }
    assert_eq!(endpoint(&server, &member, &id)?["name"], "users v2");

    // Delete: member 403, admin 204; then 404 everywhere, deliveries dropped, count drops.
    let (_, list, _) = call(&server, "GET", "/api/v1/endpoints", &member, None)?;
    let count = list["pagination"]["total"].as_u64().ok_or("total")?;
    let (status, _, _) = call(&server, "DELETE", &path, &member, None)?;
    assert_eq!(status, 403);
    let (status, _, text) = call(&server, "DELETE", &path, &admin, None)?;
    assert_eq!(status, 204, "{text}");
    for (method, p) in [
        ("GET", path.clone()),
        ("GET", format!("{path}/checks")),
        ("GET", format!("/api/v1/diffs/{diff_id}")),
        ("POST", format!("{path}/check")),
        ("DELETE", path.clone()),
    ] {
        let (status, _, text) = call(&server, method, &p, &admin, None)?;
        assert_eq!(status, 404, "{method} {p}: {text}");
    }
    let (_, list, _) = call(&server, "GET", "/api/v1/endpoints", &member, None)?;
    assert_eq!(list["pagination"]["total"].as_u64(), Some(count - 1));
    let (_, page, _) = call(
        &server,
        "GET",
        &format!("/v1/webhooks/{hook_id}/deliveries"),
        &admin,
        None,
    )?;
    assert_eq!(
        page["pagination"]["total"], 0,
        "queued deliveries dropped: {page}"
    );
    let out = server.output();
    for secret in [CANARY, CANARY2] {
        assert!(!out.contains(secret), "a credential reached the log");
    }
    Ok(())
}

fn wait_health(server: &Server, token: &str, id: &str, want: &str) -> Result<(), Box<dyn Error>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let health = endpoint(server, token, id)?["health"].clone();
        if health == want {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("health stayed {health}, wanted {want}").into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill9(server: &Server) -> TestResult {
    let status = std::process::Command::new("kill")
        .args(["-9", &server.pid().to_string()])
        .status()?;
    assert!(status.success());
    std::thread::sleep(Duration::from_millis(300));
    Ok(())
}

/// A run (capture or check) killed with its process leaves `checking`; once its deadline
/// (timeout + slack) has passed, a restarted process gives back the health before the run.
fn kill_during_runs_leaves_no_checking(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let ws = workspace(&env, "w")?;
    let member = token(&env, &ws, "member")?;
    let up = Upstream::start(BODY)?;
    let server = env.serve(&[])?;
    let (status, created, text) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &member,
        Some(&json!({"name": "slow", "url": up.url("/slow"), "timeoutMs": 1000, "retries": 0})),
    )?;
    assert_eq!(status, 201, "{text}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("id")?
        .to_owned();

    // During a capture (health before: unknown).
    up.with(|s| s.delay = Duration::from_secs(5));
    let (base, tok, eid) = (
        server.request("POST", &format!("/v1/endpoints/{id}/baseline")),
        member.clone(),
        id.clone(),
    );
    let _capture = std::thread::spawn(move || base.bearer(&tok).send());
    wait_health(&server, &member, &eid, "checking")?;
    kill9(&server)?;
    drop(server);
    std::thread::sleep(Duration::from_secs(7));
    let server = env.serve(&[])?;
    wait_health(&server, &member, &id, "unknown")?;

    // During a check (health before: healthy).
    up.with(|s| s.delay = Duration::ZERO);
    let (status, _, text) = call(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &member,
        None,
    )?;
    assert_eq!(status, 201, "{text}");
    wait_health(&server, &member, &id, "healthy")?;
    up.with(|s| s.delay = Duration::from_secs(5));
    let (check, tok) = (
        server.request("POST", &format!("/api/v1/endpoints/{id}/check")),
        member.clone(),
    );
    let _check = std::thread::spawn(move || check.bearer(&tok).send());
    wait_health(&server, &member, &id, "checking")?;
    kill9(&server)?;
    drop(server);
    std::thread::sleep(Duration::from_secs(7));
    let server = env.serve(&[])?;
    wait_health(&server, &member, &id, "healthy")?;
    Ok(())
}

both_backends!(endpoint_cli_commands);

/// `apidrift endpoint list|show|update|pause|resume|delete`: the operator's twin of the routes.
fn endpoint_cli_commands(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let ws = workspace(&env, "w")?;
    let member = token(&env, &ws, "member")?;
    let up = Upstream::start(BODY)?;
    let id = {
        let server = env.serve(&[])?;
        let (status, created, text) = call(
            &server,
            "POST",
            "/api/v1/endpoints",
            &member,
            Some(
                &json!({"name": "cli", "url": up.url("/cli"), "auth": {"type": "bearer", "token": CANARY}}),
            ),
        )?;
        assert_eq!(status, 201, "{text}");
        created["endpoints"][0]["id"]
            .as_str()
            .ok_or("id")?
            .to_owned()
    };
    let list = env.cli(&["endpoint", "list", "--workspace", &ws])?;
    assert_eq!(list["pagination"]["total"], 1);
    assert_eq!(list["endpoints"][0]["id"], json!(id));
    let shown = env.cli(&["endpoint", "show", &id])?;
    assert_eq!(shown["endpoint"]["name"], "cli");
    let paused = env.cli(&["endpoint", "pause", &id])?;
    assert_eq!(paused["endpoint"]["paused"], true);
    let resumed = env.cli(&["endpoint", "resume", &id, "--workspace", &ws])?;
    assert_eq!(resumed["endpoint"]["paused"], false);
    let updated = env.cli(&[
        "endpoint",
        "update",
        &id,
        "--patch",
        r#"{"timeoutMs": 4321, "retries": 0}"#,
    ])?;
    assert_eq!(
        (
            updated["endpoint"]["timeoutMs"].as_u64(),
            updated["endpoint"]["retries"].as_u64()
        ),
        (Some(4321), Some(0))
    );
    assert_eq!(updated["endpoint"]["authType"], "bearer");
    let bad = env.run(&["endpoint", "update", &id, "--patch", r#"{"timeoutMs": 0}"#])?;
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("timeoutMs"));
    assert_eq!(
        env.cli(&["endpoint", "show", &id])?["endpoint"]["timeoutMs"],
        4321
    );
    let out = env.run(&["endpoint", "show", &id])?;
    assert!(!String::from_utf8_lossy(&out.stdout).contains(CANARY));
    let deleted = env.cli(&["endpoint", "delete", &id])?;
    assert_eq!(deleted["deleted"], json!(id));
    let gone = env.run(&["endpoint", "show", &id])?;
    assert_eq!(gone.status.code(), Some(2));
    assert_eq!(
        env.cli(&["endpoint", "list", "--workspace", &ws])?["pagination"]["total"],
        0
    );
    Ok(())
}

both_backends!(endpoint_add_cli);

const CANARY_ADD: &str = "canary-endpoint-add-token-7f3a";

/// `apidrift endpoint add` with a schedule, a header and a bearer credential from an environment
/// variable: the served API shows the schedule and, once the scheduler took it up, `nextRunAt`;
/// the check sends the credential and the header; the secret never appears in the CLI's output;
/// an invalid value exits 2 with the API's reason; pausing hides the next run.
fn endpoint_add_cli(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let ws = workspace(&env, "w")?;
    let member = token(&env, &ws, "member")?;
    let up = Upstream::start(BODY)?;
    let url = up.url("/added");
    let add =
        |args: &[&str], secret: Option<&str>| -> Result<std::process::Output, Box<dyn Error>> {
            let mut all = vec!["endpoint", "add"];
            all.extend_from_slice(args);
            let mut cmd = env.command(&all);
            if let Some(s) = secret {
                cmd.env("USERS_API_TOKEN", s);
            }
            Ok(cmd.output()?)
        };
    let out = add(
        &[
            "--name",
            "added",
            "--url",
            &url,
            "--schedule",
            "hourly",
            "--header",
            "X-Trace: cli-added",
            "--auth",
            "bearer",
            "--auth-secret-env",
            "USERS_API_TOKEN",
            "--tag",
            "core",
            "--tag",
            "cli",
            "--timeout-ms",
            "4000",
            "--json",
        ],
        Some(CANARY_ADD),
    )?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(!stdout.contains(CANARY_ADD) && !stderr.contains(CANARY_ADD));
    let created: Value = serde_json::from_str(&stdout)?;
    let e = &created["endpoint"];
    let id = e["id"].as_str().ok_or("no id")?.to_owned();
    assert_eq!(
        (
            &e["name"],
            &e["authType"],
            &e["schedule"],
            &e["tags"],
            &e["timeoutMs"]
        ),
        (
            &json!("added"),
            &json!("bearer"),
            &json!({"frequency": "HOURLY"}),
            &json!(["core", "cli"]),
            &json!(4000)
        )
    );
    assert_eq!(e["nextRunAt"], Value::Null, "not scheduled yet: {e}");

    // The default output: the id and the name.
    let out = add(&["--name", "plain", "--url", &up.url("/plain")], None)?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let (plain_id, name) = line.trim_end().split_once('\t').ok_or("not ID<TAB>NAME")?;
    assert_eq!(name, "plain");

    let server = env.serve(&[])?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let shown = loop {
        let shown = endpoint(&server, &member, &id)?;
        if shown["nextRunAt"].is_string() {
            break shown;
        }
        if Instant::now() > deadline {
            return Err(format!("nextRunAt never set: {shown}").into());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(shown["schedule"], json!({"frequency": "HOURLY"}));
    assert!(
        apidrift_model::timestamp::parse(shown["nextRunAt"].as_str().unwrap_or_default()).is_ok(),
        "{shown}"
    );
    let plain = endpoint(&server, &member, plain_id)?;
    assert_eq!(
        (&plain["schedule"], &plain["nextRunAt"]),
        (&Value::Null, &Value::Null)
    );
    let (status, list, text) = call(&server, "GET", "/api/v1/endpoints", &member, None)?;
    assert_eq!(status, 200, "{text}");
    let listed = list["endpoints"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["id"] == json!(id)))
        .ok_or("not listed")?;
    assert!(listed["nextRunAt"].is_string(), "{listed}");
    // The scheduled run (its first captures the baseline) sent the credential and the header.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !up.seen().iter().any(|r| r.contains("/added")) {
        if Instant::now() > deadline {
            return Err("the scheduled run never fetched the endpoint".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let request = up
        .seen()
        .into_iter()
        .find(|r| r.contains("/added"))
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(
        request.contains(&format!("authorization: bearer {CANARY_ADD}")),
        "{request}"
    );
    assert!(request.contains("x-trace: cli-added"), "{request}");

    // Paused: no next run.
    env.cli(&["endpoint", "pause", &id])?;
    let paused = endpoint(&server, &member, &id)?;
    assert_eq!(
        (&paused["paused"], &paused["nextRunAt"]),
        (&json!(true), &Value::Null)
    );

    // An invalid value: exit 2 with the reason the API gives for the same entry; nothing created.
    let bad =
        json!({"name": "bad", "url": "ftp://example.com/x", "schedule": {"frequency": "hourly"}});
    let (status, api, text) = call(&server, "POST", "/api/v1/endpoints", &member, Some(&bad))?;
    assert_eq!(status, 200, "{text}");
    let reason = api["skipped"][0]["reason"]
        .as_str()
        .ok_or("no reason")?
        .to_owned();
    let out = add(
        &[
            "--name",
            "bad",
            "--url",
            "ftp://example.com/x",
            "--schedule",
            "hourly",
        ],
        None,
    )?;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!("apidrift: {reason}")),
        "{stderr} / {reason}"
    );
    let out = add(
        &["--name", "bad", "--url", &url, "--interval-seconds", "10"],
        None,
    )?;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("schedule.intervalSeconds"));
    // A missing variable is named, and nothing is created.
    let out = add(
        &[
            "--name",
            "nokey",
            "--url",
            &url,
            "--auth",
            "bearer",
            "--auth-secret-env",
            "USERS_API_TOKEN",
        ],
        None,
    )?;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("USERS_API_TOKEN is not set"));
    assert_eq!(
        env.cli(&["endpoint", "list", "--workspace", &ws])?["pagination"]["total"],
        2
    );
    // The credential is never printed by the reads either.
    let out = env.run(&["endpoint", "show", &id])?;
    assert!(!String::from_utf8_lossy(&out.stdout).contains(CANARY_ADD));
    assert!(!server.output().contains(CANARY_ADD));
    Ok(())
}

both_backends!(concurrent_patches_keep_both_fields, if_match_and_etag);

/// One PATCH (or DELETE) with an optional `If-Match`: the status, the body, the `ETag`.
fn send_if_match(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    if_match: Option<&str>,
    body: Option<&Value>,
) -> Result<(u16, Value, Option<String>), Box<dyn Error>> {
    let mut req = server.request(method, path).bearer(token);
    if let Some(m) = if_match {
        req = req.header("If-Match", m);
    }
    if let Some(b) = body {
        req = req.json(b);
    }
    let res = req.send()?;
    let value = if res.body.is_empty() {
        Value::Null
    } else {
        res.json()
    };
    Ok((res.status, value, res.header("etag").map(str::to_owned)))
}

/// Issue 25: two concurrent PATCHes of different fields (one the name, the other the timeout),
/// 100 pairs: every pair answers 200 twice and both changes are there afterwards (none lost).
fn concurrent_patches_keep_both_fields(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let ws = workspace(&env, "w")?;
    let member = token(&env, &ws, "member")?;
    let server = env.serve(&[])?;
    let (status, created, text) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &member,
        Some(&json!({"name": "racy", "url": "http://127.0.0.1:9/racy", "timeoutMs": 1000})),
    )?;
    assert_eq!(status, 201, "{text}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let path = format!("/api/v1/endpoints/{id}");
    let mut lost = Vec::new();
    for i in 0..100u32 {
        let name = format!("racy {i}");
        let timeout = 2000 + i;
        let barrier = std::sync::Barrier::new(2);
        let (a, b) = std::thread::scope(|s| {
            let first = s.spawn(|| {
                barrier.wait();
                send_if_match(
                    &server,
                    "PATCH",
                    &path,
                    &member,
                    None,
                    Some(&json!({ "name": name })),
                )
                .map_err(|e| e.to_string())
            });
            let second = s.spawn(|| {
                barrier.wait();
                send_if_match(
                    &server,
                    "PATCH",
                    &path,
                    &member,
                    None,
                    Some(&json!({ "timeoutMs": timeout })),
                )
                .map_err(|e| e.to_string())
            });
            (first.join(), second.join())
        });
        let (a, b) = (
            a.map_err(|_| "a PATCH thread panicked")??,
            b.map_err(|_| "a PATCH thread panicked")??,
        );
        assert_eq!(a.0, 200, "pair {i}, name: {}", a.1);
        assert_eq!(b.0, 200, "pair {i}, timeoutMs: {}", b.1);
        let e = endpoint(&server, &member, &id)?;
        if e["name"] != json!(name) || e["timeoutMs"] != json!(timeout) {
            lost.push(format!(
                "pair {i}: name {} timeoutMs {}",
                e["name"], e["timeoutMs"]
            ));
        }
    }
    assert!(
        lost.is_empty(),
        "{} of 100 pairs lost a change: {lost:?}",
        lost.len()
    );
    Ok(())
}

/// Issue 25: GET and PATCH send the version as a strong ETag; a check leaves it; If-Match with a
/// stale, weak or foreign tag is 412 with the exact text and changes nothing; the current tag,
/// a list holding it, and `*` are honoured; a malformed If-Match is a 400; DELETE with a stale
/// If-Match is 412 and the endpoint stays.
fn if_match_and_etag(backend: Backend) -> TestResult {
    const CHANGED: &str = "the endpoint changed since you read it";
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let ws = workspace(&env, "w")?;
    let member = token(&env, &ws, "member")?;
    let admin = token(&env, &ws, "admin")?;
    let server = env.serve(&[])?;
    let up = Upstream::start(BODY)?;
    let (status, created, text) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &member,
        Some(&json!({"name": "tagged", "url": up.url("/users"), "timeoutMs": 1000})),
    )?;
    assert_eq!(status, 201, "{text}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let path = format!("/api/v1/endpoints/{id}");
    let get_etag = || -> Result<(Value, String), Box<dyn Error>> {
        let (status, body, etag) = send_if_match(&server, "GET", &path, &member, None, None)?;
        assert_eq!(status, 200, "{body}");
        Ok((body["endpoint"].clone(), etag.ok_or("GET sent no ETag")?))
    };
    let (_, v1) = get_etag()?;
    assert_eq!(
        v1, "\"1\"",
        "a new endpoint is version 1, a strong quoted tag"
    );

    // A baseline capture and a check leave the version: the client's If-Match still holds.
    for route in [
        "/v1/endpoints/{id}/baseline",
        "/api/v1/endpoints/{id}/check",
    ] {
        let (status, _, text) = call(&server, "POST", &route.replace("{id}", &id), &member, None)?;
        assert!(status < 300, "{route}: {text}");
    }
    let (before, tag) = get_etag()?;
    assert_eq!(tag, v1, "a capture or a check must not change the ETag");

    // The current tag: 200, the change, a new ETag.
    let (status, body, v2) = send_if_match(
        &server,
        "PATCH",
        &path,
        &member,
        Some(&v1),
        Some(&json!({"name": "tagged 2"})),
    )?;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["endpoint"]["name"], "tagged 2");
    let v2 = v2.ok_or("PATCH sent no ETag")?;
    assert_eq!(v2, "\"2\"");
    assert_ne!(before["name"], "tagged 2");
    let (after, tag) = get_etag()?;
    assert_eq!(tag, v2);

    // Stale, weak and foreign tags: 412 with exactly that body, nothing written.
    for stale in [v1.as_str(), "W/\"2\"", "\"abc\"", "\"1\", \"7\""] {
        let (status, body, etag) = send_if_match(
            &server,
            "PATCH",
            &path,
            &member,
            Some(stale),
            Some(&json!({"name": "lost", "timeoutMs": 4321})),
        )?;
        assert_eq!(status, 412, "If-Match {stale}: {body}");
        assert_eq!(body, json!({ "error": CHANGED }), "If-Match {stale}");
        assert_eq!(etag, None, "a 412 sends no ETag");
        assert_eq!(get_etag()?, (after.clone(), v2.clone()), "{stale} wrote");
    }

    // A malformed If-Match: 400 saying how to write it, nothing written.
    let (status, body, _) = send_if_match(
        &server,
        "PATCH",
        &path,
        &member,
        Some("2"),
        Some(&json!({"name": "lost"})),
    )?;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|m| m.starts_with("If-Match:")),
        "{body}"
    );
    assert_eq!(get_etag()?, (after.clone(), v2.clone()));

    // A list holding the current tag, and `*`: honoured.
    let (status, body, v3) = send_if_match(
        &server,
        "PATCH",
        &path,
        &member,
        Some("\"1\", W/\"9\", \"2\""),
        Some(&json!({"timeoutMs": 3000})),
    )?;
    assert_eq!((status, v3.as_deref()), (200, Some("\"3\"")), "{body}");
    assert_eq!(body["endpoint"]["name"], "tagged 2", "only the named field");
    let (status, body, v4) = send_if_match(
        &server,
        "PATCH",
        &path,
        &member,
        Some("*"),
        Some(&json!({"paused": true})),
    )?;
    assert_eq!((status, v4.as_deref()), (200, Some("\"4\"")), "{body}");
    // The CLI's pause, resume and update are edits too: each adds 1 to the version.
    env.cli(&["endpoint", "pause", &id])?;
    env.cli(&["endpoint", "resume", &id])?;
    env.cli(&["endpoint", "update", &id, "--patch", r#"{"paused": true}"#])?;
    let (_, tag) = get_etag()?;
    assert_eq!(tag, "\"7\"", "pause, resume and update through the CLI");
    // An unknown endpoint with If-Match is still a 404.
    let (status, _, _) = send_if_match(
        &server,
        "PATCH",
        "/api/v1/endpoints/00000000-0000-4000-8000-000000000000",
        &member,
        Some("\"1\", \"2\""),
        Some(&json!({"name": "x"})),
    )?;
    assert_eq!(status, 404);

    // DELETE with a stale If-Match: 412, the endpoint stays; with the current one: gone.
    let (status, body, _) = send_if_match(&server, "DELETE", &path, &admin, Some(&v2), None)?;
    assert_eq!(status, 412, "{body}");
    assert_eq!(body, json!({ "error": CHANGED }));
    let (kept, tag) = get_etag()?;
    assert_eq!(
        (kept["timeoutMs"].clone(), tag.as_str()),
        (json!(3000), "\"7\"")
    );
    let (status, body, _) = send_if_match(&server, "DELETE", &path, &admin, Some("\"7\""), None)?;
    assert_eq!(status, 204, "{body}");
    let (status, _, _) = send_if_match(&server, "GET", &path, &member, None, None)?;
    assert_eq!(status, 404);
    Ok(())
}
