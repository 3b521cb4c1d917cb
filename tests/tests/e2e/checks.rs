//! The check pipeline end to end (issue 6): the real `apidrift serve` with the outbound
//! allow-list opened to loopback, a loopback upstream whose answer the test changes, on SQLite and
//! PostgreSQL. Capture, clean check (diffId null), drift, health, the credential reaching the
//! upstream, quota, concurrent checks, a hanging upstream (never a 5xx), and the CLI commands
//! `baseline capture`, `contract attach|detach`, `snapshot` and `diff` with a URL.

use apidrift_e2e::server::Server;
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::env::{Backend, Env};

type TestResult = Result<(), Box<dyn Error>>;

const ALL_SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
const CANARY: &str = "canary-upstream-token-7f3a";
const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
];

/// A loopback upstream on a std thread: answers every request with the current (body, delay)
/// and records each request head.
struct Upstream {
    addr: SocketAddr,
    answer: Arc<Mutex<(String, Duration)>>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    fn start(body: &str) -> Result<Upstream, Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let answer = Arc::new(Mutex::new((body.to_owned(), Duration::ZERO)));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (a, s) = (answer.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (a, s) = (a.clone(), s.clone());
                std::thread::spawn(move || serve_one(stream, &a, &s));
            }
        });
        Ok(Upstream { addr, answer, seen })
    }

    fn set(&self, body: &str) {
        if let Ok(mut g) = self.answer.lock() {
            g.0 = body.to_owned();
        }
    }

    fn delay(&self, d: Duration) {
        if let Ok(mut g) = self.answer.lock() {
            g.1 = d;
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn serve_one(mut stream: TcpStream, answer: &Mutex<(String, Duration)>, seen: &Mutex<Vec<String>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    if let Ok(mut s) = seen.lock() {
        s.push(String::from_utf8_lossy(&buf).into_owned());
    }
    let (body, delay) = answer.lock().map(|g| g.clone()).unwrap_or_default();
    std::thread::sleep(delay);
    let _ = stream.write_all(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
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

both_backends!(check_flow_through_the_api, cli_commands);

fn post(
    server: &Server,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> Result<(u16, Value), Box<dyn Error>> {
    let mut req = server.request("POST", path).bearer(token);
    if let Some(b) = body {
        req = req.json(b);
    }
    let res = req.send()?;
    Ok((res.status, res.json()))
}

fn get(server: &Server, path: &str, token: &str) -> Result<Value, Box<dyn Error>> {
    let res = server.request("GET", path).bearer(token).send()?;
    assert_eq!(res.status, 200, "{}", res.text());
    Ok(res.json())
}

const BODY: &str = r#"{"users":[{"id":1,"name":"ann","email":"a@x"}],"total":1}"#;

fn check_flow_through_the_api(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let ws = env.cli(&["workspace", "create", "--name", "w", "--check-quota", "4"])?["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let token = env.cli(&[
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
    let server = env.serve(&[])?;
    let up = Upstream::start(BODY)?;
    let (status, created) = post(
        &server,
        "/api/v1/endpoints",
        &token,
        Some(
            &json!({"name": "users", "url": up.url("/users"), "diffMode": "full",
            "timeoutMs": 2000, "auth": {"type": "bearer", "token": CANARY}}),
        ),
    )?;
    assert_eq!(status, 201, "{created}");
    let id = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no endpoint id")?
        .to_owned();
    let hang_id = {
        let (status, body) = post(
            &server,
            "/api/v1/endpoints",
            &token,
            Some(&json!({"name": "slow", "url": up.url("/slow"), "timeoutMs": 300})),
        )?;
        assert_eq!(status, 201, "{body}");
        body["endpoints"][0]["id"]
            .as_str()
            .ok_or("no id")?
            .to_owned()
    };

    // No baseline yet: 400, and no quota used.
    let (status, body) = post(
        &server,
        &format!("/api/v1/endpoints/{id}/check"),
        &token,
        None,
    )?;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("baseline"),
        "{body}"
    );

    // Capture: 201 {baselineVersion, capturedAt, status}.
    let (status, body) = post(
        &server,
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        None,
    )?;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        (body["baselineVersion"].as_u64(), body["status"].as_u64()),
        (Some(1), Some(200))
    );
    assert!(
        body["capturedAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let ep = get(&server, &format!("/api/v1/endpoints/{id}"), &token)?;
    assert_eq!(ep["endpoint"]["health"], "healthy");
    assert_eq!(ep["endpoint"]["baselineVersion"], 1);
    assert!(
        up.requests()
            .iter()
            .all(|r| r.contains(&format!("authorization: Bearer {CANARY}")))
    );

    // Clean check: the exact 200 body.
    let (status, body) = post(
        &server,
        &format!("/api/v1/endpoints/{id}/check"),
        &token,
        None,
    )?;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"success": true, "diffId": null, "seenCount": null, "breakingCount": 0,
            "warningCount": 0, "changeCount": 0, "alertsSent": 0})
    );

    // Drift through the /v1 alias: a removed field (breaking) and a changed value (info).
    up.set(r#"{"users":[{"id":1,"name":"bob"}],"total":1}"#);
    let (status, body) = post(&server, &format!("/v1/endpoints/{id}/check"), &token, None)?;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["breakingCount"].as_u64(), body["changeCount"].as_u64()),
        (Some(1), Some(2))
    );
    let diff_id = body["diffId"].as_str().ok_or("no diffId")?.to_owned();
    let diff = get(&server, &format!("/api/v1/diffs/{diff_id}"), &token)?;
    let changes = diff["diff"]["changes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        changes
            .iter()
            .any(|c| c["path"] == "$.users[id=1].email" && c["type"] == "removed")
    );
    assert!(
        changes
            .iter()
            .any(|c| c["path"] == "$.users[id=1].name" && c["type"] == "changed")
    );
    let ep = get(&server, &format!("/api/v1/endpoints/{id}"), &token)?;
    assert_eq!(ep["endpoint"]["health"], "breaking");
    assert_eq!(ep["latestDiff"]["id"], diff_id.as_str());
    assert!(ep["endpoint"]["lastCheckedAt"].is_string() && ep["endpoint"]["responseTime"].is_u64());

    // Two concurrent checks of one endpoint.
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let req = server
                .request("POST", &format!("/api/v1/endpoints/{id}/check"))
                .bearer(&token);
            std::thread::spawn(move || req.send().map(|r| r.status))
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().map_err(|_| "thread panicked")??, 200);
    }
    let ep = get(&server, &format!("/api/v1/endpoints/{id}"), &token)?;
    assert_eq!(ep["endpoint"]["health"], "breaking");

    // Quota 4 is used up: 400.
    let (status, body) = post(
        &server,
        &format!("/api/v1/endpoints/{id}/check"),
        &token,
        None,
    )?;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap_or_default().contains("quota"),
        "{body}"
    );

    // A hanging upstream during capture: 400 naming the cause, never a 5xx.
    up.delay(Duration::from_millis(800));
    let (status, body) = post(
        &server,
        &format!("/v1/endpoints/{hang_id}/baseline"),
        &token,
        None,
    )?;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("timeout"),
        "{body}"
    );
    // The server still answers, and the log never shows the credential.
    get(&server, "/api/v1/endpoints", &token)?;
    assert!(!server.output().contains(CANARY));
    Ok(())
}

const OPENAPI: &str = r##"{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/users":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/List"}}}}}}}},"components":{"schemas":{"List":{"type":"object","required":["users"],"properties":{"users":{"type":"array"},"total":{"type":"string"}}}}}}"##;

fn cli_commands(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let ws = env.cli(&["workspace", "create", "--name", "w"])?["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let token = env.cli(&[
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
    let up = Upstream::start(BODY)?;
    let id = {
        let server = env.serve(&[])?;
        let (status, created) = post(
            &server,
            "/api/v1/endpoints",
            &token,
            Some(&json!({"name": "users", "url": up.url("/users")})),
        )?;
        assert_eq!(status, 201, "{created}");
        created["endpoints"][0]["id"]
            .as_str()
            .ok_or("no id")?
            .to_owned()
    };
    // baseline capture, twice.
    let out = env.cli(&["baseline", "capture", &id, "--workspace", &ws])?;
    assert_eq!(
        (out["baselineVersion"].as_u64(), out["status"].as_u64()),
        (Some(1), Some(200))
    );
    let out = env.cli(&["baseline", "capture", &id, "--workspace", &ws])?;
    assert_eq!(out["baselineVersion"].as_u64(), Some(2));
    // As D8 writes it: the endpoint id alone; the workspace is looked up.
    let out = env.cli(&["baseline", "capture", &id])?;
    assert_eq!(out["baselineVersion"].as_u64(), Some(3));
    let out = env.run(&[
        "baseline",
        "capture",
        "0190a5c4-0000-7000-8000-000000000000",
    ])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no endpoint with id"));
    // An unknown endpoint: exit 2 with one line.
    let out = env.run(&[
        "baseline",
        "capture",
        "0190a5c4-0000-7000-8000-000000000000",
        "--workspace",
        &ws,
    ])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));

    // contract attach / detach.
    let spec = env.dir.path().join("openapi.json");
    std::fs::write(&spec, OPENAPI)?;
    let spec = spec.to_string_lossy().into_owned();
    let out = env.cli(&[
        "contract",
        "attach",
        &id,
        "--spec",
        &spec,
        "--operation",
        "GET /users",
    ])?;
    // D10's form: no --workspace; it is looked up from the endpoint.
    assert_eq!(out["hasResponseContract"], true);
    assert_eq!(out["operation"], "GET /users");
    let bad = env.run(&[
        "contract",
        "attach",
        &id,
        "--spec",
        &spec,
        "--operation",
        "GET /nope",
        "--workspace",
        &ws,
    ])?;
    assert_eq!(bad.status.code(), Some(2));
    {
        let server = env.serve(&[])?;
        let ep = get(&server, &format!("/api/v1/endpoints/{id}"), &token)?;
        assert_eq!(ep["endpoint"]["hasResponseContract"], true);
        // `total` is an integer where the contract says string: a violation.
        let (status, body) = post(
            &server,
            &format!("/api/v1/endpoints/{id}/check"),
            &token,
            None,
        )?;
        assert_eq!(status, 200, "{body}");
        let diff = get(
            &server,
            &format!(
                "/api/v1/diffs/{}",
                body["diffId"].as_str().ok_or("no diff")?
            ),
            &token,
        )?;
        assert!(
            diff["diff"]["changes"].as_array().is_some_and(|c| c
                .iter()
                .any(|c| c["type"] == "contract_violation" && c["path"] == "$.total")),
            "{diff}"
        );
    }
    let out = env.cli(&["contract", "detach", &id, "--workspace", &ws])?;
    assert_eq!(out["hasResponseContract"], false);

    // snapshot: a D16 file that diff reads; the allow-list applies.
    let file = env.dir.path().join("snap.json");
    let file = file.to_string_lossy().into_owned();
    let out = env.run(&[
        "snapshot",
        &up.url("/users"),
        "-H",
        "X-Trace: 1",
        "-o",
        &file,
    ])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(&file)?)?;
    assert_eq!(
        (snap["apidriftSnapshot"].as_u64(), snap["status"].as_u64()),
        (Some(1), Some(200))
    );
    assert_eq!(snap["headers"]["content-type"], "application/json");
    assert_eq!(snap["body"]["total"], 1);
    assert!(
        up.requests()
            .last()
            .is_some_and(|r| r.contains("x-trace: 1"))
    );
    // diff FILE URL: unchanged → exit 0; drift → exit 1.
    let out = env.run(&["diff", &file, &up.url("/users")])?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    up.set(r#"{"users":[]}"#);
    let out = env.run(&["diff", &file, &up.url("/users"), "--format", "json"])?;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without the allow-list, loopback is refused by the CLI too.
    let out = env
        .command(&["snapshot", &up.url("/users")])
        .env_remove("APIDRIFT_OUTBOUND__ALLOW_CIDRS")
        .output()?;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ssrf_blocked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = env.run(&["snapshot", "http://169.254.169.254/latest/meta-data/"])?;
    assert_eq!(out.status.code(), Some(2));
    Ok(())
}
