//! The REST API end to end (issue 5; D2, D4, D5, D6, D13, D17): the real `apidrift serve` on
//! port 0, tokens from the admin CLI, the same scenarios on SQLite (a temp file) and PostgreSQL
//! (a fresh database; `APIDRIFT_TEST_DATABASE_URL`, skipped only with
//! `APIDRIFT_SKIP_POSTGRES=1`). One server per scenario, many assertions per server.

use apidrift_e2e::binary;
use apidrift_e2e::server::{CLEARED, Request, Response, Server};
use apidrift_model::{ChangeType, DiffChange, OffsetDateTime, Severity, Uuid};
use apidrift_seal::SecretKey;
use apidrift_store::{NewCheck, NewDiff, Store, new_id};
use apidrift_store_postgres::PgStore;
use apidrift_store_postgres::testdb::TestDb;
use apidrift_store_sqlite::SqliteStore;
use serde_json::{Value, json};
use std::error::Error;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type TestResult = Result<(), Box<dyn Error>>;

const ALL_SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
/// A credential that must never come back in a response or a log line.
const CANARY_CREDENTIAL: &str = "canary-credential-5b2f9e71";
/// The secret parts of native alert channels: a Slack and a Discord webhook URL's token, a
/// PagerDuty routing key (32 letters and digits). Never in a response or a log line either.
const CANARY_SLACK: &str = "canarySlackToken7c41";
const CANARY_DISCORD: &str = "canaryDiscordToken9e03";
const CANARY_ROUTING_KEY: &str = "canaryRoutingKey0123456789abcdef";
/// Limits high enough that scenarios not about rate limits never meet them.
const HIGH_LIMITS: &[(&str, &str)] = &[
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__UNAUTHENTICATED_PER_MINUTE", "100000"),
];

#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

/// Runs a scenario on both backends.
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
    routes_statuses_and_isolation,
    create_rules_and_plan_limits,
    order_of_checks,
    rate_limits_exactly_n_of_m,
    no_key_and_bootstrap,
);

fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, Box<dyn Error>> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f))
}

/// A scratch directory and a fresh database.
struct Env {
    dir: tempfile::TempDir,
    url: String,
    pg: Option<TestDb>,
}

impl Env {
    /// `None` when PostgreSQL tests are skipped.
    fn new(backend: Backend) -> Result<Option<Env>, Box<dyn Error>> {
        let dir = tempfile::tempdir()?;
        match backend {
            Backend::Sqlite => {
                let url = format!("sqlite://{}", dir.path().join("apidrift.db").display());
                Ok(Some(Env { dir, url, pg: None }))
            }
            Backend::Postgres => {
                let Some(pg) = block_on(TestDb::create())?.map_err(|e| e.to_string())? else {
                    return Ok(None);
                };
                Ok(Some(Env {
                    dir,
                    url: pg.url.clone(),
                    pg: Some(pg),
                }))
            }
        }
    }

    /// An admin command that must succeed and print one JSON document.
    fn cli(&self, args: &[&str]) -> Result<Value, Box<dyn Error>> {
        let mut cmd = Command::new(binary());
        cmd.args(args)
            .args(apidrift_e2e::database_args(args, &self.url))
            .current_dir(self.dir.path());
        for name in CLEARED {
            cmd.env_remove(name);
        }
        let out = cmd.output()?;
        if !out.status.success() {
            return Err(
                format!("{args:?} failed: {}", String::from_utf8_lossy(&out.stderr)).into(),
            );
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    fn workspace(&self, name: &str, extra: &[&str]) -> Result<String, Box<dyn Error>> {
        let mut args = vec!["workspace", "create", "--name", name];
        args.extend_from_slice(extra);
        Ok(self.cli(&args)?["id"]
            .as_str()
            .ok_or("no workspace id")?
            .to_owned())
    }

    /// A token's text and id.
    fn token_with_id(
        &self,
        ws: &str,
        scopes: &str,
        role: &str,
    ) -> Result<(String, String), Box<dyn Error>> {
        let t = self.cli(&[
            "token",
            "create",
            "--workspace",
            ws,
            "--scopes",
            scopes,
            "--role",
            role,
        ])?;
        Ok((
            t["token"].as_str().ok_or("no token")?.to_owned(),
            t["id"].as_str().ok_or("no token id")?.to_owned(),
        ))
    }

    fn token(&self, ws: &str, scopes: &str, role: &str) -> Result<String, Box<dyn Error>> {
        Ok(self.token_with_id(ws, scopes, role)?.0)
    }

    fn serve(&self, extra: &[&str], env: &[(&str, &str)]) -> Result<Server, Box<dyn Error>> {
        Ok(Server::start(self.dir.path(), &self.url, extra, env)?)
    }

    async fn store(&self) -> Result<Arc<dyn Store>, Box<dyn Error>> {
        Ok(if self.pg.is_none() {
            Arc::new(SqliteStore::connect(&self.url).await?)
        } else {
            Arc::new(PgStore::connect(&self.url).await?)
        })
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(pg) = self.pg.take() {
            let _ = block_on(pg.drop_db());
        }
    }
}

/// Sends requests and remembers every response body, for the canary check at the end.
struct Client<'a> {
    server: &'a Server,
    seen: Mutex<String>,
}

impl<'a> Client<'a> {
    fn new(server: &'a Server) -> Self {
        Client {
            server,
            seen: Mutex::new(String::new()),
        }
    }

    fn send(&self, req: Request) -> Result<Response, Box<dyn Error>> {
        let res = req.send()?;
        if let Ok(mut seen) = self.seen.lock() {
            for (k, v) in &res.headers {
                seen.push_str(&format!("{k}: {v}\n"));
            }
            seen.push_str(&res.text());
            seen.push('\n');
        }
        Ok(res)
    }

    fn get(&self, path: &str, token: &str) -> Result<Response, Box<dyn Error>> {
        self.send(self.server.request("GET", path).bearer(token))
    }

    fn post(&self, path: &str, token: &str, body: &Value) -> Result<Response, Box<dyn Error>> {
        self.send(self.server.request("POST", path).bearer(token).json(body))
    }

    fn seen(&self) -> String {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// Asserts a status and the `{"error": …}` JSON body; returns the error text.
fn error(res: &Response, status: u16) -> Result<String, Box<dyn Error>> {
    assert_eq!(res.status, status, "body: {}", res.text());
    assert_eq!(res.header("content-type"), Some("application/json"));
    let body = res.json();
    let text = body["error"].as_str().ok_or("no error text")?.to_owned();
    assert_eq!(body.as_object().map(|o| o.len()), Some(1), "{body}");
    Ok(text)
}

fn ok(res: &Response, status: u16) -> Result<Value, Box<dyn Error>> {
    assert_eq!(res.status, status, "body: {}", res.text());
    assert!(
        res.header("content-type")
            .is_some_and(|c| c.starts_with("application/json"))
    );
    Ok(res.json())
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn change(path: &str, severity: Severity) -> DiffChange {
    DiffChange {
        id: format!("{:016x}", path.len()),
        path: path.into(),
        change_type: ChangeType::Removed,
        severity,
        message: format!("{path} was removed"),
        old_value: Some(json!(1)),
        new_value: None,
        old_type: Some("integer".into()),
        new_type: None,
    }
}

/// Records a check with a diff of `changes` for an endpoint, directly in the store; the diff id.
async fn seed_diff(
    store: &dyn Store,
    ws: Uuid,
    endpoint: Uuid,
    changes: Vec<DiffChange>,
    at: OffsetDateTime,
) -> Result<Uuid, Box<dyn Error>> {
    let diff_id = new_id();
    store
        .record_check(
            ws,
            NewCheck {
                scheduled: false,
                id: new_id(),
                endpoint_id: endpoint,
                started_at: at,
                finished_at: at,
                http_status: Some(200),
                response_time: Some(12),
                error_kind: None,
                error_message: None,
                content_type: None,
                headers: None,
                sealed_body: None,
            },
            Some(NewDiff {
                id: diff_id,
                baseline_id: None,
                changes,
                summary: None,
                created_at: at,
                // A drift of its own: every seeded diff is written.
                fingerprint: Some(diff_id.to_string()),
            }),
        )
        .await?;
    Ok(diff_id)
}

fn entry(name: &str) -> Value {
    json!({"name": name, "url": format!("https://api.example.com/{name}")})
}

// ------------------------------------------------------------------------------------ scenarios

/// The log line format a scenario runs the server with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LogFormat {
    Text,
    Json,
}

fn routes_statuses_and_isolation(backend: Backend) -> TestResult {
    routes_statuses_and_isolation_logged(backend, LogFormat::Text)
}

/// The canary scenario again with `APIDRIFT_LOG_FORMAT=json`: every log line is one JSON
/// object, and no secret reaches them either.
#[test]
fn routes_statuses_and_isolation_with_json_logs() -> TestResult {
    routes_statuses_and_isolation_logged(Backend::Sqlite, LogFormat::Json)
}

/// Every route × every status of the spec, tenant isolation, pagination, filters, ordering, the
/// error format of D5, and the canary credential and token.
fn routes_statuses_and_isolation_logged(backend: Backend, format: LogFormat) -> TestResult {
    let Some(env) = Env::new(backend)? else {
        return Ok(());
    };
    let a = env.workspace("Acme", &[])?;
    let b = env.workspace("Bravo", &[])?;
    let a_all = env.token(&a, ALL_SCOPES, "owner")?;
    let a_read = env.token(&a, "endpoints:read", "viewer")?;
    let a_viewer_write = env.token(&a, "endpoints:read,endpoints:write", "viewer")?;
    let a_write_only = env.token(&a, "endpoints:write", "member")?;
    let b_all = env.token(&b, ALL_SCOPES, "owner")?;
    let (revoked, revoked_id) = env.token_with_id(&a, ALL_SCOPES, "owner")?;
    env.cli(&["token", "revoke", &revoked_id])?;
    let key_text = SecretKey::generate()?.to_base64().to_string();
    let mut vars: Vec<(&str, &str)> = HIGH_LIMITS.to_vec();
    vars.push(("ENDPOINT_SECRET_KEY", &key_text));
    if format == LogFormat::Json {
        vars.push(("APIDRIFT_LOG_FORMAT", "json"));
    }
    let server = env.serve(&["--no-bootstrap"], &vars)?;
    let c = Client::new(&server);

    // Health, readiness and the OpenAPI document need no token.
    assert_eq!(
        ok(&c.send(server.request("GET", "/healthz"))?, 200)?["status"],
        "ok"
    );
    assert_eq!(
        ok(&c.send(server.request("GET", "/readyz"))?, 200)?["status"],
        "ready"
    );
    let doc = ok(&c.send(server.request("GET", "/openapi.json"))?, 200)?;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.0.0");
    assert!(doc["paths"]["/api/v1/endpoints"]["post"].is_object());

    // 401: missing, malformed, bad checksum, unknown, revoked, duplicated header, other scheme.
    let mut mutated = a_all.clone();
    let last = mutated.pop().ok_or("empty token")?;
    mutated.push(if last == 'A' { 'B' } else { 'A' });
    let unknown = {
        // A well-formed token (valid checksum) that was never issued.
        apidrift_seal::Token::mint()?.expose().to_owned()
    };
    for req in [
        server.request("GET", "/api/v1/endpoints"),
        server
            .request("GET", "/api/v1/endpoints")
            .bearer("svc_live_short"),
        server.request("GET", "/api/v1/endpoints").bearer(&mutated),
        server.request("GET", "/api/v1/endpoints").bearer(&unknown),
        server.request("GET", "/api/v1/endpoints").bearer(&revoked),
        server
            .request("GET", "/api/v1/endpoints")
            .bearer(&a_all)
            .bearer(&a_all),
        server
            .request("GET", "/api/v1/endpoints")
            .header("Authorization", &format!("Basic {a_all}")),
        server.request("GET", "/api/v1/diffs"),
        server.request("GET", "/api/v1/diffs/00000000-0000-0000-0000-000000000000"),
        server.request(
            "GET",
            "/api/v1/endpoints/00000000-0000-0000-0000-000000000000",
        ),
        server
            .request("POST", "/api/v1/endpoints")
            .json(&entry("x")),
        server.request("POST", "/v1/endpoints").json(&entry("x")),
        server.request(
            "GET",
            "/v1/endpoints/00000000-0000-0000-0000-000000000000/diffs",
        ),
    ] {
        let res = c.send(req)?;
        assert_eq!(error(&res, 401)?, "missing or invalid token");
        assert_eq!(res.header("www-authenticate"), Some("Bearer"));
    }

    // 403: scope named; role named.
    let res = c.post("/api/v1/endpoints", &a_read, &entry("x"))?;
    assert_eq!(error(&res, 403)?, "token lacks scope endpoints:write");
    let res = c.post("/v1/endpoints", &a_read, &entry("x"))?;
    assert_eq!(error(&res, 403)?, "token lacks scope endpoints:write");
    let res = c.post("/api/v1/endpoints", &a_viewer_write, &entry("x"))?;
    assert_eq!(error(&res, 403)?, "role viewer cannot create endpoints");
    for path in [
        "/api/v1/endpoints",
        "/api/v1/diffs",
        "/api/v1/endpoints/00000000-0000-0000-0000-000000000000",
        "/api/v1/diffs/00000000-0000-0000-0000-000000000000",
        "/v1/endpoints/00000000-0000-0000-0000-000000000000/diffs",
    ] {
        let res = c.get(path, &a_write_only)?;
        assert_eq!(
            error(&res, 403)?,
            "token lacks scope endpoints:read",
            "{path}"
        );
    }

    // Create: the three body forms, per-entry skips, 201, credentials never echoed.
    let single = json!({
        "name": "Users", "url": "https://api.example.com/users", "method": "post",
        "environment": "staging", "tags": ["core", "core", "v2"], "description": "all users",
        "auth": {"type": "bearer", "token": CANARY_CREDENTIAL},
        "headers": {"X-Canary": CANARY_CREDENTIAL},
        "requestBody": "{\"q\":1}", "diffMode": "exact", "timeoutMs": 2500,
        "ignorePaths": ["$.meta.requestId", "$..traceId"],
        "schedule": {"frequency": "daily"}
    });
    let res = c.post("/api/v1/endpoints", &a_all, &single)?;
    let body = ok(&res, 201)?;
    assert_eq!(body["created"], 1);
    assert_eq!(body["scheduled"], 1);
    assert_eq!(body["skipped"], json!([]));
    let users = &body["endpoints"][0];
    assert_eq!(users["method"], "POST");
    assert_eq!(users["environment"], "staging");
    assert_eq!(users["tags"], json!(["core", "v2"]));
    assert_eq!(users["authType"], "bearer");
    assert_eq!(users["diffMode"], "full");
    assert_eq!(users["timeoutMs"], 2500);
    assert_eq!(users["health"], "unknown");
    assert_eq!(users["hasResponseContract"], false);
    assert_eq!(users["baselineVersion"], Value::Null);
    assert!(users.get("auth").is_none() && users.get("headers").is_none());
    assert!(
        users["createdAt"]
            .as_str()
            .is_some_and(|t| t.len() == 24 && t.ends_with('Z'))
    );
    let users_id = users["id"].as_str().ok_or("no id")?.to_owned();

    let bare = json!([
        entry("orders"),
        {"name": "private", "url": "http://10.0.0.1/"},
        {"url": "https://api.example.com/nameless"},
        {"name": "no token", "url": "https://api.example.com/t", "auth": {"type": "bearer"}},
        {"name": "bad ignore", "url": "https://api.example.com/i", "ignorePaths": ["$.a[="]},
        {"name": "get body", "url": "https://api.example.com/g", "requestBody": "x"},
        entry("invoices"),
    ]);
    let body = ok(&c.post("/api/v1/endpoints", &a_all, &bare)?, 201)?;
    assert_eq!(body["created"], 2);
    assert_eq!(body["scheduled"], 0);
    let skipped = body["skipped"].as_array().ok_or("no skipped")?;
    let reasons: Vec<(&str, &str, u64)> = skipped
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or("?"),
                s["reason"].as_str().unwrap_or("?"),
                s["index"].as_u64().unwrap_or(99),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 5, "{reasons:?}");
    assert_eq!((reasons[0].0, reasons[0].2), ("private", 1));
    // The refusal says how a self-hosted install allows the address.
    assert!(
        reasons[0]
            .1
            .starts_with("url: private, loopback and link-local hosts are rejected; ")
            && reasons[0]
                .1
                .contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.1/32")
            && reasons[0]
                .1
                .contains("allow_cidrs in the [outbound] section"),
        "{reasons:?}"
    );
    assert_eq!(reasons[1], ("", "name: required", 2));
    assert_eq!(
        reasons[2],
        ("no token", "auth.token: required for bearer", 3)
    );
    assert_eq!(reasons[3].0, "bad ignore");
    assert!(reasons[3].1.starts_with("ignorePaths[0]: "), "{reasons:?}");
    assert_eq!(
        reasons[4],
        ("get body", "requestBody: not allowed for GET", 5)
    );
    let orders_id = body["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();

    let wrapped = json!({"endpoints": [entry("payments")]});
    let body = ok(&c.post("/v1/endpoints", &a_all, &wrapped)?, 201)?;
    assert_eq!(body["created"], 1);
    let payments_id = body["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();

    // 200 when nothing was created, same shape.
    let body = ok(
        &c.post(
            "/api/v1/endpoints",
            &a_all,
            &json!([{"name": "bad", "url": "ftp://x"}]),
        )?,
        200,
    )?;
    assert_eq!(body["created"], 0);
    assert_eq!(body["scheduled"], 0);
    assert_eq!(body["endpoints"], json!([]));
    assert_eq!(body["skipped"][0]["index"], 0);

    // 400 for the whole request; 415; 413.
    for (bad, what) in [
        (b"{not json".to_vec(), "not JSON"),
        (b"42".to_vec(), "scalar"),
        (b"\"x\"".to_vec(), "string"),
        (b"[]".to_vec(), "empty array"),
        (b"{\"endpoints\": []}".to_vec(), "empty wrapped"),
        (b"{\"endpoints\": 3}".to_vec(), "wrapped non-array"),
    ] {
        let req = server
            .request("POST", "/api/v1/endpoints")
            .bearer(&a_all)
            .header("Content-Type", "application/json")
            .body(bad);
        error(&c.send(req)?, 400).map_err(|e| format!("{what}: {e}"))?;
    }
    let too_many: Vec<Value> = (0..201).map(|i| entry(&format!("e{i}"))).collect();
    let msg = error(&c.post("/api/v1/endpoints", &a_all, &json!(too_many))?, 400)?;
    assert_eq!(msg, "at most 200 endpoints per request, got 201");
    let req = server
        .request("POST", "/api/v1/endpoints")
        .bearer(&a_all)
        .header("Content-Type", "text/plain")
        .body(entry("x").to_string().into_bytes());
    error(&c.send(req)?, 415)?;
    let huge = vec![b' '; 2 * 1024 * 1024 + 10];
    let req = server
        .request("POST", "/api/v1/endpoints")
        .bearer(&a_all)
        .header("Content-Type", "application/json")
        .body(huge);
    error(&c.send(req)?, 413)?;

    // B's endpoint and A's diffs, seeded in the store.
    let body = ok(
        &c.post("/api/v1/endpoints", &b_all, &entry("bravo-only"))?,
        201,
    )?;
    let b_endpoint = body["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let (a_id, b_id) = (Uuid::parse_str(&a)?, Uuid::parse_str(&b)?);
    let t0 = OffsetDateTime::now_utc() - Duration::from_secs(7200);
    let (d_old, d_new, d_b) = block_on(async {
        let store = env.store().await?;
        let users = Uuid::parse_str(&users_id)?;
        let d_old = seed_diff(
            store.as_ref(),
            a_id,
            users,
            vec![change("$.a", Severity::Info)],
            t0,
        )
        .await?;
        let d_new = seed_diff(
            store.as_ref(),
            a_id,
            users,
            vec![
                change("$.b", Severity::Breaking),
                change("$.c", Severity::Warning),
            ],
            t0 + Duration::from_secs(3600),
        )
        .await?;
        let d_b = seed_diff(
            store.as_ref(),
            b_id,
            Uuid::parse_str(&b_endpoint)?,
            vec![change("$.z", Severity::Breaking)],
            t0,
        )
        .await?;
        Ok::<_, Box<dyn Error>>((d_old, d_new, d_b))
    })??;

    // List endpoints: newest first, pagination, filters, total, RateLimit headers.
    let res = c.get("/api/v1/endpoints", &a_read)?;
    let list = ok(&res, 200)?;
    assert_eq!(
        ids(&list, "endpoints"),
        vec![
            payments_id.clone(),
            ids(&list, "endpoints")[1].clone(),
            orders_id.clone(),
            users_id.clone()
        ]
    );
    assert_eq!(
        list["pagination"],
        json!({"limit": 25, "offset": 0, "total": 4})
    );
    assert!(!ids(&list, "endpoints").contains(&b_endpoint));
    assert_eq!(
        res.header("ratelimit-policy"),
        Some("\"reads\";q=100000;w=60")
    );
    assert!(
        res.header("ratelimit")
            .is_some_and(|v| v.starts_with("\"reads\";r="))
    );
    let page = ok(&c.get("/api/v1/endpoints?limit=2&offset=1", &a_read)?, 200)?;
    assert_eq!(
        page["pagination"],
        json!({"limit": 2, "offset": 1, "total": 4})
    );
    assert_eq!(ids(&page, "endpoints")[1], orders_id);
    let page = ok(&c.get("/api/v1/endpoints?limit=101", &a_read)?, 200)?;
    assert_eq!(page["pagination"]["limit"], 100);
    let page = ok(&c.get("/api/v1/endpoints?offset=10", &a_read)?, 200)?;
    assert_eq!(page["endpoints"], json!([]));
    assert_eq!(page["pagination"]["total"], 4);
    for (query, name) in [
        ("limit=0", "limit"),
        ("limit=-1", "limit"),
        ("limit=abc", "limit"),
        ("limit=1.5", "limit"),
        ("offset=-1", "offset"),
        ("offset=x", "offset"),
        ("health=HEALTHY", "health"),
        ("health=sick", "health"),
        ("limit=1&limit=2", "limit"),
    ] {
        let msg = error(&c.get(&format!("/api/v1/endpoints?{query}"), &a_read)?, 400)?;
        assert!(msg.starts_with(&format!("{name}: ")), "{query}: {msg}");
    }
    let staging = ok(
        &c.get("/api/v1/endpoints?environment=staging", &a_read)?,
        200,
    )?;
    assert_eq!(ids(&staging, "endpoints"), vec![users_id.clone()]);
    let breaking = ok(&c.get("/api/v1/endpoints?health=breaking", &a_read)?, 200)?;
    assert_eq!(ids(&breaking, "endpoints"), vec![users_id.clone()]);
    let unknown_health = ok(&c.get("/api/v1/endpoints?health=unknown", &a_read)?, 200)?;
    assert_eq!(unknown_health["pagination"]["total"], 3);

    // One endpoint with its latest diff; 404 for unknown, malformed and B's ids (same body).
    let one = ok(
        &c.get(&format!("/api/v1/endpoints/{users_id}"), &a_read)?,
        200,
    )?;
    assert_eq!(one["endpoint"]["id"], users_id.as_str());
    assert_eq!(one["endpoint"]["health"], "breaking");
    assert_eq!(one["endpoint"]["breakingCount"], 1);
    assert_eq!(one["endpoint"]["responseTime"], 12);
    assert_eq!(
        one["latestDiff"],
        json!({
            "id": d_new.to_string(),
            "createdAt": apidrift_model::timestamp::format(t0 + Duration::from_secs(3600))?,
            "breakingCount": 1, "warningCount": 1, "infoCount": 0
        })
    );
    let fresh = ok(
        &c.get(&format!("/api/v1/endpoints/{orders_id}"), &a_read)?,
        200,
    )?;
    assert_eq!(fresh["latestDiff"], Value::Null);
    let not_found = c.get(
        "/api/v1/endpoints/00000000-0000-0000-0000-000000000000",
        &a_read,
    )?;
    let expected = not_found.text();
    assert_eq!(error(&not_found, 404)?, "not found");
    for path in [
        format!("/api/v1/endpoints/{b_endpoint}"),
        "/api/v1/endpoints/not-a-uuid".to_owned(),
        format!("/api/v1/diffs/{d_b}"),
        "/api/v1/diffs/12345".to_owned(),
        format!("/v1/endpoints/{b_endpoint}/diffs"),
        "/v1/endpoints/xyz/diffs".to_owned(),
    ] {
        let res = c.get(&path, &a_read)?;
        assert_eq!(res.status, 404, "{path}");
        assert_eq!(res.text(), expected, "{path}");
    }

    // Diffs: newest first, filters, B's ids never listed.
    let list = ok(&c.get("/api/v1/diffs", &a_read)?, 200)?;
    assert_eq!(
        ids(&list, "diffs"),
        vec![d_new.to_string(), d_old.to_string()]
    );
    assert_eq!(list["diffs"][0]["endpointName"], "Users");
    assert_eq!(list["diffs"][0]["changeCount"], 2);
    assert_eq!(list["diffs"][0]["accepted"], false);
    assert_eq!(list["pagination"]["total"], 2);
    let only = ok(&c.get("/api/v1/diffs?breakingOnly=true", &a_read)?, 200)?;
    assert_eq!(ids(&only, "diffs"), vec![d_new.to_string()]);
    let since = apidrift_model::timestamp::format(t0 + Duration::from_secs(1800))?;
    let recent = ok(
        &c.get(&format!("/api/v1/diffs?since={since}"), &a_read)?,
        200,
    )?;
    assert_eq!(ids(&recent, "diffs"), vec![d_new.to_string()]);
    let offset_form = "2000-01-01T01:00:00%2B01:00";
    let all = ok(
        &c.get(&format!("/api/v1/diffs?since={offset_form}"), &a_read)?,
        200,
    )?;
    assert_eq!(all["pagination"]["total"], 2);
    let by_endpoint = ok(
        &c.get(&format!("/api/v1/diffs?endpointId={users_id}"), &a_read)?,
        200,
    )?;
    assert_eq!(by_endpoint["pagination"]["total"], 2);
    // Another workspace's endpoint id as a filter behaves like an unknown one: nothing listed.
    for filter in [b_endpoint.clone(), Uuid::nil().to_string()] {
        let res = ok(
            &c.get(&format!("/api/v1/diffs?endpointId={filter}"), &a_read)?,
            200,
        )?;
        assert_eq!(res["diffs"], json!([]));
        assert_eq!(res["pagination"]["total"], 0);
    }
    for (query, name) in [
        ("endpointId=42", "endpointId"),
        ("since=yesterday", "since"),
        ("breakingOnly=false", "breakingOnly"),
        ("breakingOnly=TRUE", "breakingOnly"),
        ("limit=0", "limit"),
        ("offset=-1", "offset"),
    ] {
        let msg = error(&c.get(&format!("/api/v1/diffs?{query}"), &a_read)?, 400)?;
        assert!(msg.starts_with(&format!("{name}: ")), "{query}: {msg}");
    }
    let detail = ok(&c.get(&format!("/api/v1/diffs/{d_new}"), &a_read)?, 200)?;
    let diff = &detail["diff"];
    assert_eq!(diff["id"], d_new.to_string());
    assert_eq!(diff["endpointId"], users_id.as_str());
    assert_eq!(diff["breakingCount"], 1);
    assert_eq!(diff["changes"][0]["path"], "$.b");
    assert_eq!(diff["changes"][0]["type"], "removed");
    assert!(diff["changes"][0].get("newValue").is_none());
    let v1 = ok(
        &c.get(&format!("/v1/endpoints/{users_id}/diffs"), &a_read)?,
        200,
    )?;
    assert_eq!(
        ids(&v1, "diffs"),
        vec![d_new.to_string(), d_old.to_string()]
    );
    let v1 = ok(
        &c.get(
            &format!("/v1/endpoints/{users_id}/diffs?breakingOnly=true&limit=1"),
            &a_read,
        )?,
        200,
    )?;
    assert_eq!(
        v1["pagination"],
        json!({"limit": 1, "offset": 0, "total": 1})
    );
    // B sees its own rows and none of A's.
    let b_list = ok(&c.get("/api/v1/diffs", &b_all)?, 200)?;
    assert_eq!(ids(&b_list, "diffs"), vec![d_b.to_string()]);
    let res = c.get(&format!("/api/v1/endpoints/{users_id}"), &b_all)?;
    assert_eq!(res.status, 404);
    assert_eq!(res.text(), expected);

    // Native alert channels: their secrets (the Slack and Discord URLs' tokens, the PagerDuty
    // routing key) are sealed; the create answers and the list show none of them.
    for body in [
        json!({"kind": "slack", "url": format!("https://hooks.slack.com/services/T0/B0/{CANARY_SLACK}")}),
        json!({"kind": "discord", "url": format!("https://discord.com/api/webhooks/1/{CANARY_DISCORD}")}),
        json!({"kind": "pagerduty", "secret": CANARY_ROUTING_KEY}),
    ] {
        let made = ok(&c.post("/v1/webhooks", &b_all, &body)?, 201)?;
        assert_eq!(made["webhook"]["kind"], body["kind"], "{made}");
        assert!(made["webhook"].get("secret").is_none(), "{made}");
    }
    let hooks = ok(&c.get("/v1/webhooks", &b_all)?, 200)?;
    assert_eq!(
        hooks["webhooks"][0]["url"],
        "https://hooks.slack.com/services/T0/B0/…"
    );
    assert_eq!(
        hooks["webhooks"][2]["url"],
        "https://events.pagerduty.com/v2/enqueue"
    );

    // D5 errors: unknown route, wrong method, both JSON.
    assert_eq!(
        error(&c.get("/api/v1/nothing", &a_read)?, 404)?,
        "not found"
    );
    assert_eq!(
        error(&c.send(server.request("GET", "/"))?, 404)?,
        "not found"
    );
    let res = c.send(server.request("DELETE", "/api/v1/endpoints").bearer(&a_all))?;
    error(&res, 405)?;
    assert_eq!(res.header("allow"), Some("GET, POST"));
    let res = c.send(server.request("PUT", &format!("/api/v1/diffs/{d_new}")))?;
    error(&res, 405)?;
    let res = c.send(server.request("GET", "/v1/endpoints"))?;
    error(&res, 405)?;

    // The canary credential and the tokens never appear in a response or a log line.
    std::thread::sleep(Duration::from_millis(200));
    let seen = c.seen();
    let logs = server.output();
    for secret in [
        CANARY_CREDENTIAL,
        &a_all,
        &a_read,
        &b_all,
        &revoked,
        &key_text,
        CANARY_SLACK,
        CANARY_DISCORD,
        CANARY_ROUTING_KEY,
    ] {
        assert!(!seen.contains(secret), "a secret was in a response");
        assert!(!logs.contains(secret), "a secret was in the log");
    }
    // lastUsedAt was recorded for tokens that authenticated, not for the revoked one.
    let listed = env.cli(&["token", "list", "--workspace", &a])?;
    let listed = listed.as_array().ok_or("token list is not an array")?;
    let used = |id: &str| {
        listed
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| t["lastUsedAt"].is_string())
    };
    assert_eq!(used(&revoked_id), Some(false));
    assert!(
        listed
            .iter()
            .filter(|t| t["lastUsedAt"].is_string())
            .count()
            >= 3
    );
    // One request line per request, with the path template and the workspace.
    assert!(!logs.contains(&b_endpoint), "raw paths are not logged");
    if format == LogFormat::Text {
        assert!(
            logs.contains("route=/api/v1/endpoints/{id} status=200"),
            "{logs}"
        );
        assert!(logs.contains(&format!("workspace={a}")));
        return Ok(());
    }
    // JSON: every line on stderr is one JSON object with a time, a level and a target.
    let lines: Vec<Value> = server
        .stderr_output()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).map_err(|e| format!("{e}: {l:?}")))
        .collect::<Result<_, _>>()?;
    assert!(lines.len() > 10, "{} log lines", lines.len());
    for line in &lines {
        assert!(
            line["timestamp"].is_string()
                && line["level"].is_string()
                && line["target"].is_string(),
            "{line}"
        );
    }
    assert!(
        lines.iter().any(|l| l["target"] == "apidrift::request"
            && l["route"] == "/api/v1/endpoints/{id}"
            && l["status"] == 200
            && l["method"] == "GET"
            && l["workspace"] == a.as_str()),
        "no request line for GET /api/v1/endpoints/{{id}}"
    );
    Ok(())
}

/// Plan rules (D6/D17): schedules below Starter, entries past the limit, 402 at the limit.
fn create_rules_and_plan_limits(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend)? else {
        return Ok(());
    };
    let free = env.workspace("Free", &["--plan", "free"])?;
    let token = env.token(&free, ALL_SCOPES, "member")?;
    let key = SecretKey::generate()?.to_base64().to_string();
    let mut vars = HIGH_LIMITS.to_vec();
    vars.push(("ENDPOINT_SECRET_KEY", &key));
    let server = env.serve(&["--no-bootstrap"], &vars)?;
    let c = Client::new(&server);

    let mut batch: Vec<Value> = (0..7).map(|i| entry(&format!("e{i}"))).collect();
    batch[1] = json!({"name": "hourly", "url": "https://api.example.com/h",
                      "schedule": {"frequency": "HOURLY"}});
    let body = ok(&c.post("/api/v1/endpoints", &token, &json!(batch))?, 201)?;
    assert_eq!(body["created"], 5);
    assert_eq!(body["scheduled"], 0);
    assert_eq!(
        body["skipped"],
        json!([
            {"name": "hourly", "reason": "schedule: requires the Starter plan or above", "index": 1},
            {"name": "e6", "reason": "plan endpoint limit reached", "index": 6},
        ])
    );
    let msg = error(
        &c.post("/api/v1/endpoints", &token, &entry("one more"))?,
        402,
    )?;
    assert!(msg.contains("limit"), "{msg}");
    // 402 refuses the whole request, even when every entry is invalid.
    error(
        &c.post("/api/v1/endpoints", &token, &json!([{"name": ""}]))?,
        402,
    )?;
    // But a malformed body is a 400 first (D4 order).
    error(&c.post("/api/v1/endpoints", &token, &json!([]))?, 400)?;

    // Starter: schedules are created and counted.
    let starter = env.workspace("Starter", &["--plan", "starter"])?;
    let token = env.token(&starter, ALL_SCOPES, "member")?;
    let body = ok(
        &c.post(
            "/api/v1/endpoints",
            &token,
            &json!([{"name": "w", "url": "https://api.example.com/w",
                     "schedule": {"frequency": "weekly"}}, entry("plain")]),
        )?,
        201,
    )?;
    assert_eq!(body["created"], 2);
    assert_eq!(body["scheduled"], 1);
    Ok(())
}

/// D4: 401 → 403 → 429 → 400 → 404 → 503 → 402.
fn order_of_checks(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend)? else {
        return Ok(());
    };
    let ws = env.workspace("Order", &["--plan", "free", "--endpoint-limit", "0"])?;
    let all = env.token(&ws, ALL_SCOPES, "owner")?;
    let read = env.token(&ws, "endpoints:read", "viewer")?;
    // No key: POST answers 503, which must come after 400 and before 402.
    let vars = [
        ("APIDRIFT_LIMITS__READS_PER_MINUTE", "3"),
        ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100"),
        ("APIDRIFT_LIMITS__UNAUTHENTICATED_PER_MINUTE", "100000"),
        ("APIDRIFT_LIMITS__WINDOW_SECS", "3600"),
    ];
    let server = env.serve(&["--no-bootstrap"], &vars)?;
    let c = Client::new(&server);

    // 401 before 400 and 404.
    let res = c.send(server.request("GET", "/api/v1/endpoints?limit=0"))?;
    error(&res, 401)?;
    let res = c.send(server.request("GET", "/api/v1/endpoints/not-a-uuid"))?;
    error(&res, 401)?;
    // 403 before 400 (bad body) and before 503.
    let req = server
        .request("POST", "/api/v1/endpoints")
        .bearer(&read)
        .header("Content-Type", "application/json")
        .body(b"{broken".to_vec());
    assert_eq!(
        error(&c.send(req)?, 403)?,
        "token lacks scope endpoints:write"
    );
    // 400 before 404 on a list... and 400 before 503/402 on create.
    error(&c.get("/api/v1/endpoints?limit=0", &read)?, 400)?;
    error(&c.post("/api/v1/endpoints", &all, &json!(42))?, 400)?;
    // 503 (no key) before 402 (limit 0 already reached).
    let msg = error(&c.post("/api/v1/endpoints", &all, &entry("x"))?, 503)?;
    assert!(msg.contains("ENDPOINT_SECRET_KEY"), "{msg}");
    // Reads: 3 allowed in the hour (one spent above); then 429 before 400 and 404.
    ok(&c.get("/api/v1/endpoints", &read)?, 200)?;
    error(&c.get("/api/v1/endpoints/not-a-uuid", &read)?, 404)?;
    let res = c.get("/api/v1/endpoints?limit=0", &read)?;
    error(&res, 429)?;
    let res = c.get("/api/v1/endpoints/not-a-uuid", &read)?;
    error(&res, 429)?;
    // Still 401 and 403 before 429.
    error(&c.send(server.request("GET", "/api/v1/endpoints"))?, 401)?;
    error(
        &c.get(
            "/api/v1/endpoints",
            &env.token(&ws, "endpoints:write", "owner")?,
        )?,
        403,
    )?;
    drop(server);

    // With a key: 402 comes last.
    let key = SecretKey::generate()?.to_base64().to_string();
    // The same limits: with PostgreSQL the budgets spent above live on in the database.
    let mut vars = vars.to_vec();
    vars.push(("ENDPOINT_SECRET_KEY", &key));
    let server = env.serve(&["--no-bootstrap"], &vars)?;
    let c = Client::new(&server);
    error(&c.post("/api/v1/endpoints", &all, &json!([]))?, 400)?;
    error(&c.post("/api/v1/endpoints", &all, &entry("x"))?, 402)?;
    Ok(())
}

/// D17: exactly N of M concurrent requests pass; 429 with Retry-After and the draft-11 headers;
/// classes and workspaces are independent; unauthenticated requests are limited per address.
fn rate_limits_exactly_n_of_m(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend)? else {
        return Ok(());
    };
    let a = env.workspace("A", &[])?;
    let b = env.workspace("B", &[])?;
    let a_tok = env.token(&a, ALL_SCOPES, "owner")?;
    let b_tok = env.token(&b, ALL_SCOPES, "owner")?;
    let key = SecretKey::generate()?.to_base64().to_string();
    // A long window so the burst is not topped up while it is measured.
    let vars = [
        ("ENDPOINT_SECRET_KEY", key.as_str()),
        ("APIDRIFT_LIMITS__READS_PER_MINUTE", "12"),
        ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "2"),
        ("APIDRIFT_LIMITS__UNAUTHENTICATED_PER_MINUTE", "5"),
        ("APIDRIFT_LIMITS__WINDOW_SECS", "3600"),
    ];
    let server = env.serve(&["--no-bootstrap"], &vars)?;

    let results = concurrent(&server, &a_tok, "/api/v1/endpoints", 50)?;
    let passed = results.iter().filter(|r| r.status == 200).count();
    let limited: Vec<&Response> = results.iter().filter(|r| r.status == 429).collect();
    assert_eq!(passed, 12, "exactly the burst passes");
    assert_eq!(limited.len(), 38);
    for res in &limited {
        let retry: u64 = res.header("retry-after").ok_or("no Retry-After")?.parse()?;
        assert!(retry >= 1);
        assert_eq!(
            res.header("ratelimit-policy"),
            Some("\"reads\";q=12;w=3600")
        );
        assert!(
            res.header("ratelimit")
                .is_some_and(|v| v.starts_with("\"reads\";r=0;t="))
        );
        assert!(error(res, 429)?.starts_with("rate limit exceeded"));
    }
    // Independent classes and workspaces.
    let create = server
        .request("POST", "/api/v1/endpoints")
        .bearer(&a_tok)
        .json(&json!([entry("a"), entry("b"), entry("c")]));
    let res = create.send()?;
    assert_eq!(res.status, 201, "a bulk create counts once");
    assert_eq!(res.header("ratelimit"), Some("\"creates\";r=1;t=1800"));
    assert_eq!(create.send()?.status, 201);
    assert_eq!(create.send()?.status, 429);
    assert_eq!(
        server
            .request("GET", "/api/v1/diffs")
            .bearer(&b_tok)
            .send()?
            .status,
        200
    );

    // Unauthenticated: 5 per address, then 429 even for a well-formed token (before any lookup).
    for _ in 0..5 {
        assert_eq!(
            server.request("GET", "/api/v1/endpoints").send()?.status,
            401
        );
    }
    let res = server.request("GET", "/api/v1/endpoints").send()?;
    error(&res, 429)?;
    assert_eq!(
        res.header("ratelimit-policy"),
        Some("\"unauthenticated\";q=5;w=3600")
    );
    let unknown = apidrift_seal::Token::mint()?.expose().to_owned();
    let res = server
        .request("GET", "/api/v1/endpoints")
        .bearer(&unknown)
        .send()?;
    error(&res, 429)?;
    // An address over its budget is refused before any lookup, so even a valid token from it
    // waits (documented in docs/api.md).
    let res = server
        .request("GET", "/api/v1/diffs")
        .bearer(&b_tok)
        .send()?;
    error(&res, 429)?;
    drop(server);

    // The real figure: exactly 120 of 500 concurrent reads.
    let vars = [
        ("APIDRIFT_LIMITS__WINDOW_SECS", "3600"),
        ("APIDRIFT_LIMITS__READS_PER_MINUTE", "120"),
    ];
    let server = env.serve(&["--no-bootstrap"], &vars)?;
    // A fresh workspace: with PostgreSQL, B's spent budget lives on in the database.
    let c = env.workspace("C", &[])?;
    let c_tok = env.token(&c, "endpoints:read", "viewer")?;
    let results = concurrent(&server, &c_tok, "/api/v1/diffs", 500)?;
    let passed = results.iter().filter(|r| r.status == 200).count();
    let limited = results.iter().filter(|r| r.status == 429).count();
    assert_eq!((passed, limited), (120, 380));
    Ok(())
}

/// `n` requests at once, each on its own connection.
fn concurrent(
    server: &Server,
    token: &str,
    path: &str,
    n: usize,
) -> Result<Vec<Response>, Box<dyn Error>> {
    let barrier = Arc::new(std::sync::Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let req = server.request("GET", path).bearer(token);
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                req.send()
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for h in handles {
        out.push(h.join().map_err(|_| "request thread panicked")??);
    }
    Ok(out)
}

/// D2: the first start creates a key file (SQLite), the `default` workspace and an owner token
/// printed once; `--no-bootstrap` and no key → POST 503 and a warning; SIGTERM stops cleanly.
fn no_key_and_bootstrap(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend)? else {
        return Ok(());
    };
    // Without bootstrap and without a key: reads work, creates answer 503, a warning is logged.
    let mut server = env.serve(&["--no-bootstrap"], &[])?;
    assert!(server.bootstrap_token.is_none());
    assert!(
        server.output().contains("no sealing key"),
        "{}",
        server.output()
    );
    let status = server.terminate(Duration::from_secs(20))?;
    assert!(status.success(), "{status:?}");
    assert!(!env.dir.path().join("apidrift.key").exists());

    let mut server = env.serve(&[], HIGH_LIMITS)?;
    let token = server
        .bootstrap_token
        .clone()
        .ok_or("no bootstrap token printed")?;
    assert!(server.output().contains("created workspace \"default\""));
    let c = Client::new(&server);
    let create = json!({"name": "n", "url": "https://api.example.com/",
        "auth": {"type": "basic", "username": "u", "password": CANARY_CREDENTIAL}});
    let res = c.post("/api/v1/endpoints", &token, &create)?;
    if let Backend::Sqlite = backend {
        // SQLite: the key file was created beside the database.
        assert_eq!(ok(&res, 201)?["created"], 1);
        let key_file = env.dir.path().join("apidrift.key");
        assert!(key_file.exists());
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&key_file)?.permissions().mode() & 0o777,
            0o600
        );
    } else {
        // PostgreSQL: no key file location, so no key.
        error(&res, 503)?;
    }
    ok(&c.get("/api/v1/endpoints", &token)?, 200)?;
    let logs_before = server.output();
    assert_eq!(
        logs_before.matches(&token).count(),
        1,
        "printed once, never logged"
    );
    assert!(!logs_before.contains(CANARY_CREDENTIAL));
    // Graceful shutdown: a request in flight when SIGTERM arrives still gets its answer.
    let in_flight = if let Backend::Sqlite = backend {
        let body = json!({"name": "late", "url": "https://api.example.com/late"}).to_string();
        let mut stream = std::net::TcpStream::connect(server.addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(20)))?;
        use std::io::Write as _;
        write!(
            stream,
            "POST /api/v1/endpoints HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            body.len(),
            &body[..5]
        )?;
        std::thread::sleep(Duration::from_millis(300));
        Some((stream, body))
    } else {
        None
    };
    let pid = server_pid(&server);
    Command::new("kill").args(["-TERM", &pid]).status()?;
    if let Some((mut stream, body)) = in_flight {
        use std::io::{Read as _, Write as _};
        std::thread::sleep(Duration::from_millis(300));
        stream.write_all(&body.as_bytes()[5..])?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    }
    let status = server.wait_exit(Duration::from_secs(20))?;
    assert!(status.success(), "{status:?}");

    // A second start finds the workspace and prints no token.
    let server = env.serve(&[], &[])?;
    assert!(server.bootstrap_token.is_none());
    assert!(!server.output().contains("svc_live_"));
    assert_eq!(
        server
            .request("GET", "/api/v1/endpoints")
            .bearer(&token)
            .send()?
            .status,
        200
    );
    Ok(())
}

/// D17: with PostgreSQL the budget is shared by every instance on the database: 40 concurrent
/// reads spread over two servers pass exactly 12 times in total.
#[test]
fn postgres_instances_share_the_budget() -> TestResult {
    let Some(env) = Env::new(Backend::Postgres)? else {
        return Ok(());
    };
    let ws = env.workspace("Shared", &[])?;
    let token = env.token(&ws, "endpoints:read", "viewer")?;
    let vars = [
        ("APIDRIFT_LIMITS__READS_PER_MINUTE", "12"),
        ("APIDRIFT_LIMITS__WINDOW_SECS", "3600"),
    ];
    let one = env.serve(&["--no-bootstrap"], &vars)?;
    let two = env.serve(&["--no-bootstrap"], &vars)?;
    let (a, b) = std::thread::scope(|s| {
        let a = s
            .spawn(|| concurrent(&one, &token, "/api/v1/endpoints", 20).map_err(|e| e.to_string()));
        let b =
            s.spawn(|| concurrent(&two, &token, "/api/v1/diffs", 20).map_err(|e| e.to_string()));
        (a.join(), b.join())
    });
    let a = a.map_err(|_| "thread panicked")??;
    let b = b.map_err(|_| "thread panicked")??;
    let passed = a.iter().chain(&b).filter(|r| r.status == 200).count();
    let limited = a.iter().chain(&b).filter(|r| r.status == 429).count();
    assert_eq!((passed, limited), (12, 28));
    // A restart keeps the spent budget (it lives in the database).
    drop(one);
    let three = env.serve(&["--no-bootstrap"], &vars)?;
    let res = three
        .request("GET", "/api/v1/endpoints")
        .bearer(&token)
        .send()?;
    error(&res, 429)?;
    Ok(())
}

/// D17 across instances with batches larger than one unit (docs/api.md, "leased budgets and their
/// tolerance"): two servers sharing a budget of 120 (a batch of at most c = 15) under a burst of
/// 150 concurrent reads each pass between q − c + 1 = 106 and q = 120 together, never more; a
/// graceful stop hands the unspent units back, so the database then holds exactly what passed.
#[test]
fn postgres_instances_share_a_leased_budget_within_the_tolerance() -> TestResult {
    let Some(env) = Env::new(Backend::Postgres)? else {
        return Ok(());
    };
    let ws = env.workspace("Leased", &[])?;
    let token = env.token(&ws, "endpoints:read", "viewer")?;
    let vars = [
        ("APIDRIFT_LIMITS__READS_PER_MINUTE", "120"),
        ("APIDRIFT_LIMITS__WINDOW_SECS", "3600"),
    ];
    let mut one = env.serve(&["--no-bootstrap", "--role", "api"], &vars)?;
    let mut two = env.serve(&["--no-bootstrap", "--role", "api"], &vars)?;
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| {
            concurrent(&one, &token, "/api/v1/endpoints", 150).map_err(|e| e.to_string())
        });
        let b =
            s.spawn(|| concurrent(&two, &token, "/api/v1/diffs", 150).map_err(|e| e.to_string()));
        (a.join(), b.join())
    });
    let a = a.map_err(|_| "thread panicked")??;
    let b = b.map_err(|_| "thread panicked")??;
    let passed = a.iter().chain(&b).filter(|r| r.status == 200).count();
    let limited = a.iter().chain(&b).filter(|r| r.status == 429).count();
    assert_eq!(passed + limited, 300);
    assert!((106..=120).contains(&passed), "{passed} of 300 passed");
    // Graceful stops: every unit leased and not spent goes back.
    for server in [&mut one, &mut two] {
        let status = server.terminate(Duration::from_secs(20))?;
        assert!(status.success(), "{status:?}");
    }
    // The budget's TAT is now `passed` intervals (30 s each) ahead of when the burst started.
    let ahead = psql(
        &env.url,
        &format!(
            "SELECT (tat - (extract(epoch FROM clock_timestamp()) * 1000000000)::int8) \
             / 30000000000 FROM rate_limits WHERE key = '{ws}:reads'"
        ),
    )?;
    let ahead: usize = ahead.trim().parse()?;
    assert!(
        ahead + 1 == passed || ahead == passed,
        "{ahead} intervals held for {passed} passed"
    );
    // A burst smaller than the budget on a fresh workspace leaves leased units unspent (batches
    // of 1, 2, 4, 8 and 15 for 20 reads); stopped at once, the instance hands them back.
    let fresh = env.workspace("Fresh", &[])?;
    let fresh_token = env.token(&fresh, "endpoints:read", "viewer")?;
    let mut three = env.serve(&["--no-bootstrap", "--role", "api"], &vars)?;
    let started = epoch_nanos()?;
    let results = concurrent(&three, &fresh_token, "/api/v1/endpoints", 20)?;
    assert!(results.iter().all(|r| r.status == 200));
    let status = three.terminate(Duration::from_secs(20))?;
    assert!(status.success(), "{status:?}");
    assert!(
        !three.output().contains("could not hand back"),
        "{}",
        three.output()
    );
    let tat: i64 = psql(
        &env.url,
        &format!("SELECT tat FROM rate_limits WHERE key = '{fresh}:reads'"),
    )?
    .trim()
    .parse()?;
    let held = (tat - started) / 30_000_000_000;
    assert!((19..=20).contains(&held), "{held} reads held for 20 made");
    Ok(())
}

/// Reads perform no database write on PostgreSQL but the batched leases of the rate limits: after
/// a warm-up of 10, a burst of 45 concurrent reads (default limits: 120 a minute, batches of at
/// most c = 15) writes only `rate_limits`, at most ⌈45/15⌉ + 4 (the batch size ramping 1, 2, 4,
/// 8) + 1 (the unspent units handed back a second later) = 8 times. Every row write to every table
/// is counted by a trigger.
#[test]
fn postgres_reads_do_not_write() -> TestResult {
    let Some(env) = Env::new(Backend::Postgres)? else {
        return Ok(());
    };
    let ws = env.workspace("Quiet", &[])?;
    let token = env.token(&ws, "endpoints:read", "viewer")?;
    let server = env.serve(&["--no-bootstrap", "--role", "api"], &[])?;
    psql(
        &env.url,
        "CREATE TABLE write_audit (id bigserial PRIMARY KEY, tbl text NOT NULL, op text NOT NULL);
         CREATE FUNCTION audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN INSERT INTO write_audit (tbl, op) VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END
         $$;
         DO $$ DECLARE t text; BEGIN
           FOR t IN SELECT tablename FROM pg_tables
                    WHERE schemaname = 'public' AND tablename <> 'write_audit' LOOP
             EXECUTE format('CREATE TRIGGER audit_write AFTER INSERT OR UPDATE OR DELETE ON %I
                             FOR EACH ROW EXECUTE FUNCTION audit_write()', t);
           END LOOP;
         END $$;",
    )?;
    // The trigger sees writes: the warm-up leases budget and records the token's use.
    let started = epoch_nanos()?;
    for _ in 0..10 {
        let res = server
            .request("GET", "/api/v1/endpoints")
            .bearer(&token)
            .send()?;
        assert_eq!(res.status, 200);
    }
    let warm = psql(
        &env.url,
        "SELECT string_agg(DISTINCT tbl, ',' ORDER BY tbl) || ' ' || max(id) FROM write_audit",
    )?;
    let (tables, last) = warm.trim().split_once(' ').ok_or("no writes seen")?;
    assert_eq!(tables, "rate_limits,tokens");
    let results = concurrent(&server, &token, "/api/v1/endpoints", 45)?;
    assert!(results.iter().all(|r| r.status == 200));
    // Unspent units go back after a second.
    std::thread::sleep(Duration::from_millis(1600));
    let writes = psql(
        &env.url,
        &format!(
            "SELECT tbl || ':' || op, count(*) FROM write_audit WHERE id > {last} \
             GROUP BY 1 ORDER BY 1"
        ),
    )?;
    let mut total = 0;
    for line in writes.lines() {
        let (what, count) = line.split_once('|').ok_or("unexpected psql output")?;
        assert_eq!(what, "rate_limits:UPDATE", "{writes}");
        total += count.parse::<usize>()?;
    }
    assert!((1..=8).contains(&total), "{total} writes for 45 reads");
    // Leased units not spent went back: the budget holds the 55 reads made (0.5 s each at 120 a
    // minute, counted from the first lease), not the rest of the last batch (with the usual
    // batches 1, 2, 4, 8, 15, 15, 15 the reads end inside the last one).
    let tat: i64 = psql(
        &env.url,
        &format!("SELECT tat FROM rate_limits WHERE key = '{ws}:reads'"),
    )?
    .trim()
    .parse()?;
    let held = (tat - started) / 500_000_000;
    assert!((53..=55).contains(&held), "{held} reads held in the budget");
    assert!(!server.output().contains("could not hand back"));
    Ok(())
}

/// Nanoseconds since the Unix epoch (the clock the database's `rate_limits` uses).
fn epoch_nanos() -> Result<i64, Box<dyn Error>> {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    Ok(i64::try_from(since.as_nanos())?)
}

/// Runs SQL with psql and returns its unaligned output.
fn psql(url: &str, sql: &str) -> Result<String, Box<dyn Error>> {
    let out = Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql])
        .output()
        .map_err(|e| format!("cannot run psql ({e}); install the PostgreSQL client tools"))?;
    if !out.status.success() {
        return Err(format!("psql failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// The server's process id (for a signal sent while a request is in flight).
fn server_pid(server: &Server) -> String {
    server.pid().to_string()
}
