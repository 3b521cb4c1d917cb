//! Learned volatile fields and identity rules end to end (issue 13, D20): the real `apidrift
//! serve` against a loopback upstream whose body carries a timestamp and a request id that change
//! on every call, on SQLite and PostgreSQL.
//!
//! * A 3-sample capture (`{"samples": 3}`) lists both paths in `volatilePaths`; the following
//!   full-mode checks report no change; a real field change is reported alone; accepting it keeps
//!   the learned paths.
//! * `identityKeys` `{"$.commits": "sha"}`: a new commit at the top of the list is one `added`
//!   change, where the same endpoint without the rule sees a cascade.
//! * Samples that differ in shape, `samples` out of range and bad identity rules are 400s that
//!   name the cause.
//! * A schedule that finds no baseline captures it from three samples (`[baseline]
//!   first_samples`): its full-mode checks record no diff although two fields change on every
//!   call; when the samples differ in shape, the run keeps one sample instead of failing.
//! * `apidrift snapshot --samples 3` writes the learned paths into the snapshot file, and
//!   `apidrift diff --mode full` against that baseline ignores them.

use apidrift_e2e::server::Server;
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::env::{Backend, Env};

type TestResult = Result<(), Box<dyn Error>>;

const SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    // Keep the samples of a capture close together: the test must stay fast.
    ("APIDRIFT_BASELINE__SAMPLE_INTERVAL_MS", "20"),
];

/// What the upstream answers, besides its volatile members.
#[derive(Debug, Clone)]
struct State {
    plan: String,
    /// Newest first.
    commits: Vec<(String, String)>,
    /// Odd calls carry an extra member (a response that changes shape between calls).
    flapping: bool,
}

/// A loopback upstream: every answer has a new `generatedAt` and `requestId`.
struct Upstream {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    calls: Arc<AtomicU64>,
}

impl Upstream {
    fn start() -> Result<Upstream, Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            plan: "free".into(),
            commits: vec![("c2".into(), "two".into()), ("c1".into(), "one".into())],
            flapping: false,
        }));
        let calls = Arc::new(AtomicU64::new(0));
        let (s, c) = (state.clone(), calls.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (s, c) = (s.clone(), c.clone());
                std::thread::spawn(move || serve_one(stream, &s, &c));
            }
        });
        Ok(Upstream { addr, state, calls })
    }

    fn change(&self, f: impl FnOnce(&mut State)) {
        if let Ok(mut g) = self.state.lock() {
            f(&mut g);
        }
    }

    fn url(&self) -> String {
        format!("http://{}/repo", self.addr)
    }

    fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

fn body(state: &State, n: u64) -> String {
    let commits: Vec<Value> = state
        .commits
        .iter()
        .map(|(sha, msg)| json!({"sha": sha, "message": msg}))
        .collect();
    let mut body = json!({
        "generatedAt": format!("2026-11-26T10:00:{:02}.{:03}Z", n % 60, n % 1000),
        "requestId": format!("req-{n:08x}"),
        "user": {"id": 7, "plan": state.plan},
        "commits": commits,
    });
    if state.flapping && n % 2 == 1 {
        body["extra"] = json!(true);
    }
    body.to_string()
}

fn serve_one(mut stream: TcpStream, state: &Mutex<State>, calls: &AtomicU64) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let n = calls.fetch_add(1, Ordering::SeqCst);
    let text = match state.lock() {
        Ok(g) => body(&g, n),
        Err(_) => return,
    };
    let _ = stream.write_all(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
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
    learned_volatile_paths_and_identity_keys,
    scheduled_first_baseline_learns_volatile_paths
);

fn send(
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
    Ok((res.status, res.json()))
}

/// Runs a check that must succeed; returns its 200 body and, when it found changes, the diff's
/// changes.
fn check(server: &Server, id: &str, token: &str) -> Result<(Value, Vec<Value>), Box<dyn Error>> {
    let (status, body) = send(
        server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        token,
        None,
    )?;
    assert_eq!(status, 200, "{body}");
    let changes = match body["diffId"].as_str() {
        None => Vec::new(),
        Some(diff) => {
            let (status, d) = send(server, "GET", &format!("/api/v1/diffs/{diff}"), token, None)?;
            assert_eq!(status, 200, "{d}");
            d["diff"]["changes"].as_array().cloned().unwrap_or_default()
        }
    };
    Ok((body, changes))
}

fn error_of(body: &Value) -> &str {
    body["error"].as_str().unwrap_or_default()
}

fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn learned_volatile_paths_and_identity_keys(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let (_, token) = env.workspace_and_token(&["--check-quota", "100"], SCOPES, "admin")?;
    let server = env.serve(&[])?;
    let up = Upstream::start()?;

    // Create with identityKeys: stored and returned as given.
    let (status, created) = send(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!([
            {"name": "repo", "url": up.url(), "diffMode": "full",
             "identityKeys": {"$.commits": "sha"}},
            {"name": "repo, no rule", "url": up.url(), "diffMode": "full"},
            {"name": "bad rule", "url": up.url(), "identityKeys": {"$.commits": ""}},
            {"name": "bad pattern", "url": up.url(), "identityKeys": {"$.a[": "id"}},
        ])),
    )?;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["created"], 2, "{created}");
    let endpoint = &created["endpoints"][0];
    assert_eq!(endpoint["identityKeys"], json!({"$.commits": "sha"}));
    assert_eq!(created["endpoints"][1]["identityKeys"], json!({}));
    let skipped = created["skipped"].as_array().cloned().unwrap_or_default();
    assert_eq!(skipped.len(), 2, "{created}");
    assert_eq!(
        skipped[0]["reason"],
        "identityKeys[\"$.commits\"]: the member name must not be empty"
    );
    let reason = skipped[1]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("identityKeys[\"$.a[\"]: "), "{reason}");
    let id = endpoint["id"].as_str().ok_or("no id")?.to_owned();
    let plain = created["endpoints"][1]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let (status, got) = send(
        &server,
        "GET",
        &format!("/api/v1/endpoints/{id}"),
        &token,
        None,
    )?;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["endpoint"]["identityKeys"], json!({"$.commits": "sha"}));

    // A one-sample capture (no body, as before) learns nothing: every check sees the timestamp
    // and the request id change.
    let (status, one) = send(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        None,
    )?;
    assert_eq!(status, 201, "{one}");
    assert_eq!(
        (one["samples"].as_u64(), one["volatilePaths"].clone()),
        (Some(1), json!([]))
    );
    let (_, changes) = check(&server, &id, &token)?;
    let paths: Vec<&str> = changes.iter().filter_map(|c| c["path"].as_str()).collect();
    assert_eq!(paths.len(), 2, "{changes:?}");

    // Three samples: both volatile paths are learned, and the capture says so.
    let before = up.calls();
    let (status, captured) = send(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        Some(&json!({"samples": 3})),
    )?;
    assert_eq!(status, 201, "{captured}");
    assert_eq!(up.calls() - before, 3, "three fetches");
    assert_eq!(captured["samples"], 3);
    assert_eq!(captured["baselineVersion"], 2);
    assert_eq!(
        sorted(&captured["volatilePaths"]),
        vec!["$.generatedAt", "$.requestId"]
    );

    // The following full-mode checks report no change.
    for _ in 0..2 {
        let (body, changes) = check(&server, &id, &token)?;
        assert_eq!(body["changeCount"], 0, "{body} {changes:?}");
        assert_eq!(body["diffId"], Value::Null);
    }

    // A real field changes: exactly that change is reported.
    up.change(|s| s.plan = "pro".into());
    let (body, changes) = check(&server, &id, &token)?;
    assert_eq!(body["changeCount"], 1, "{changes:?}");
    assert_eq!(changes[0]["path"], "$.user.plan");
    assert_eq!(changes[0]["type"], "changed");
    assert_eq!(
        (
            changes[0]["oldValue"].clone(),
            changes[0]["newValue"].clone()
        ),
        (json!("free"), json!("pro"))
    );

    // Accepting it promotes that response and keeps the learned paths.
    let diff = body["diffId"].as_str().ok_or("no diff")?.to_owned();
    let (status, accepted) = send(
        &server,
        "POST",
        &format!("/api/v1/diffs/{diff}/accept"),
        &token,
        None,
    )?;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["baselineVersion"], 3);
    let (body, changes) = check(&server, &id, &token)?;
    assert_eq!(body["changeCount"], 0, "{changes:?}");

    // identityKeys: a new commit at the top is one added item, not a cascade.
    up.change(|s| s.commits.insert(0, ("c3".into(), "three".into())));
    let (body, changes) = check(&server, &id, &token)?;
    assert_eq!(body["changeCount"], 1, "{changes:?}");
    assert_eq!(changes[0]["path"], "$.commits[sha=c3]");
    assert_eq!(changes[0]["type"], "added");
    // The same endpoint without the rule pairs the commits by position.
    up.change(|s| {
        s.commits.remove(0);
        s.plan = "free".into();
    });
    let (status, b) = send(
        &server,
        "POST",
        &format!("/v1/endpoints/{plain}/baseline"),
        &token,
        Some(&json!({"samples": 2})),
    )?;
    assert_eq!(status, 201, "{b}");
    assert_eq!(
        sorted(&b["volatilePaths"]),
        vec!["$.generatedAt", "$.requestId"]
    );
    up.change(|s| s.commits.insert(0, ("c3".into(), "three".into())));
    let (body, changes) = check(&server, &plain, &token)?;
    assert!(body["changeCount"].as_u64().unwrap_or(0) > 1, "{changes:?}");
    // Giving it the rule by PATCH fixes that.
    let (status, patched) = send(
        &server,
        "PATCH",
        &format!("/api/v1/endpoints/{plain}"),
        &token,
        Some(&json!({"identityKeys": {"$.commits": "sha"}})),
    )?;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(
        patched["endpoint"]["identityKeys"],
        json!({"$.commits": "sha"})
    );
    let (body, changes) = check(&server, &plain, &token)?;
    assert_eq!(body["changeCount"], 1, "{changes:?}");
    assert_eq!(changes[0]["path"], "$.commits[sha=c3]");

    // PATCH refuses a bad rule naming it, and changes nothing.
    for (rule, wanted) in [
        (
            json!({"$.commits": "a b"}),
            "identityKeys[\"$.commits\"]: the member name must be",
        ),
        (
            json!({"status": "id"}),
            "identityKeys[\"status\"]: the pattern names an array",
        ),
        (json!(["$.commits=sha"]), "identityKeys: must be an object"),
    ] {
        let (status, body) = send(
            &server,
            "PATCH",
            &format!("/api/v1/endpoints/{plain}"),
            &token,
            Some(&json!({"identityKeys": rule})),
        )?;
        assert_eq!(status, 400, "{body}");
        assert!(error_of(&body).starts_with(wanted), "{body}");
    }
    let (_, got) = send(
        &server,
        "GET",
        &format!("/api/v1/endpoints/{plain}"),
        &token,
        None,
    )?;
    assert_eq!(got["endpoint"]["identityKeys"], json!({"$.commits": "sha"}));

    // `samples` out of range, or not a number: 400 naming the field, nothing fetched.
    let before = up.calls();
    for bad in [
        json!({"samples": 0}),
        json!({"samples": 6}),
        json!({"samples": "3"}),
        json!([3]),
    ] {
        let (status, body) = send(
            &server,
            "POST",
            &format!("/v1/endpoints/{id}/baseline"),
            &token,
            Some(&bad),
        )?;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (_, body) = send(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        Some(&json!({"samples": 9})),
    )?;
    assert_eq!(error_of(&body), "samples: must be an integer from 1 to 5");
    assert_eq!(up.calls(), before);

    // Samples that differ in shape fail the capture with a clear 400, and keep the baseline.
    up.change(|s| s.flapping = true);
    let (status, body) = send(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        Some(&json!({"samples": 3})),
    )?;
    assert_eq!(status, 400, "{body}");
    let message = error_of(&body);
    assert!(
        message.contains("differs from sample 1 in shape"),
        "{message}"
    );
    assert!(message.contains("$.extra"), "{message}");
    let (_, got) = send(
        &server,
        "GET",
        &format!("/api/v1/endpoints/{id}"),
        &token,
        None,
    )?;
    assert_eq!(got["endpoint"]["baselineVersion"], 3);
    assert_ne!(got["endpoint"]["health"], "checking");
    Ok(())
}

/// Waits up to `secs` for `f` to hold.
fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) -> TestResult {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if f() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(format!("timed out waiting for {what}").into())
}

fn scheduled_first_baseline_learns_volatile_paths(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let (_, token) = env.workspace_and_token(
        &["--plan", "starter", "--check-quota", "1000"],
        SCOPES,
        "admin",
    )?;
    let server = env.serve(&[
        ("APIDRIFT_WORKER__PERIOD_OVERRIDE_MS", "300"),
        ("APIDRIFT_WORKER__FIRST_RUN_JITTER", "false"),
    ])?;
    let up = Upstream::start()?;
    let (status, created) = send(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({"name": "repo", "url": up.url(), "diffMode": "full",
                     "schedule": {"frequency": "hourly"}})),
    )?;
    assert_eq!(status, 201, "{created}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let checks = |server: &Server| -> Vec<Value> {
        send(
            server,
            "GET",
            &format!("/api/v1/endpoints/{id}/checks"),
            &token,
            None,
        )
        .map(|(_, b)| b["checks"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default()
    };
    // Nobody captures: the first run takes three samples, the next runs check.
    wait_for(30, "three scheduled checks", || checks(&server).len() >= 3)?;
    let history = checks(&server);
    assert!(
        history
            .iter()
            .all(|c| c["scheduled"] == true && c["changeCount"] == 0 && c["diffId"].is_null()),
        "a learned volatile field was reported: {history:?}"
    );
    let (_, diffs) = send(
        &server,
        "GET",
        &format!("/api/v1/diffs?endpointId={id}"),
        &token,
        None,
    )?;
    assert_eq!(diffs["diffs"].as_array().map(Vec::len), Some(0), "{diffs}");

    // A real change is still reported by the next scheduled check.
    up.change(|s| s.plan = "pro".into());
    wait_for(30, "a diff", || {
        checks(&server).iter().any(|c| !c["diffId"].is_null())
    })?;
    let (_, diffs) = send(
        &server,
        "GET",
        &format!("/api/v1/diffs?endpointId={id}"),
        &token,
        None,
    )?;
    let diff = diffs["diffs"][0]["id"]
        .as_str()
        .ok_or("no diff")?
        .to_owned();
    let (_, d) = send(
        &server,
        "GET",
        &format!("/api/v1/diffs/{diff}"),
        &token,
        None,
    )?;
    let paths: Vec<&str> = d["diff"]["changes"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["path"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(paths, vec!["$.user.plan"], "{d}");

    // An endpoint whose samples differ in shape still gets a (one-sample) baseline.
    up.change(|s| s.flapping = true);
    let (status, created) = send(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(
            &json!({"name": "flapping", "url": format!("{}?f", up.url()),
                     "schedule": {"frequency": "hourly"}}),
        ),
    )?;
    assert_eq!(status, 201, "{created}");
    let flapping = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    wait_for(30, "a baseline for the flapping endpoint", || {
        send(
            &server,
            "GET",
            &format!("/api/v1/endpoints/{flapping}"),
            &token,
            None,
        )
        .is_ok_and(|(_, b)| b["endpoint"]["baselineVersion"] == 1)
    })?;
    Ok(())
}

#[test]
fn snapshot_samples_learn_volatile_paths_for_the_offline_diff() -> TestResult {
    let Some(env) = Env::new(Backend::Sqlite, ENV)? else {
        return Ok(());
    };
    let up = Upstream::start()?;
    let url = up.url();
    let path = |name: &str| env.dir.path().join(name).to_string_lossy().into_owned();
    let (sampled, single) = (path("sampled.json"), path("single.json"));
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();

    let before = up.calls();
    let out = env.run(&[
        "snapshot",
        &url,
        "--samples",
        "3",
        "--sample-interval-ms",
        "10",
        "-o",
        &sampled,
    ])?;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(up.calls() - before, 3, "three fetches");
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(&sampled)?)?;
    assert_eq!(
        sorted(&snap["volatilePaths"]),
        vec!["$.generatedAt", "$.requestId"]
    );
    let out = env.run(&["snapshot", &url, "-o", &single])?;
    assert!(out.status.success(), "{}", stderr(&out));
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(&single)?)?;
    assert!(snap.get("volatilePaths").is_none(), "{snap}");

    // Full mode against the sampled baseline: nothing to report; against the one-sample
    // baseline: the two volatile fields are changes.
    let gate = |baseline: &str| {
        env.run(&[
            "diff",
            baseline,
            &url,
            "--mode",
            "full",
            "--fail-on",
            "info",
            "--format",
            "json",
        ])
    };
    let out = gate(&sampled)?;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = gate(&single)?;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let mut paths: Vec<&str> = report["changes"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["path"].as_str()).collect())
        .unwrap_or_default();
    paths.sort_unstable();
    assert_eq!(paths, vec!["$.generatedAt", "$.requestId"], "{report}");
    // A real change is still found through the sampled baseline.
    up.change(|s| s.plan = "pro".into());
    let out = gate(&sampled)?;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(report["changes"][0]["path"], "$.user.plan", "{report}");
    assert_eq!(
        report["changes"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );

    // Samples that differ in shape, and a count out of range, exit 2 with the cause.
    up.change(|s| s.flapping = true);
    let out = env.run(&[
        "snapshot",
        &url,
        "--samples",
        "3",
        "--sample-interval-ms",
        "0",
    ])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("differs from sample 1 in shape"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&["snapshot", &url, "--samples", "6"])?;
    assert_eq!(out.status.code(), Some(2));
    Ok(())
}
