//! The check pipeline ([`Monitor`]) end to end against both store adapters (SQLite in a temp
//! file, PostgreSQL in a fresh database per test) and a loopback upstream whose answer the test
//! changes: capture, clean check (no diff), drift in each change type, health transitions,
//! credentials in each auth style, quota, concurrent checks, the contract flow, fetch failures.

mod support;

use apidrift_app::{Service, ServiceError};
use apidrift_model::validate::{Credential, ExtraHeader};
use apidrift_model::{
    AuthType, ChangeType, DiffMode, EndpointSettings, Health, HttpMethod, Plan, SecretString,
    sealed,
};
use apidrift_monitor::{Monitor, MonitorError};
use apidrift_seal::{Binding, Field, KeyRing, SecretKey};
use apidrift_store::{NewEndpointRow, NewWorkspace, SealedSecrets, Store, new_id};
use apidrift_store_postgres::testdb::TestDb;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;
use time::OffsetDateTime;
use tokio::io::AsyncWriteExt;
use uuid::Uuid;

/// A loopback upstream whose response (and delay) the test can change between checks.
struct Upstream {
    server: Server,
    answer: Arc<Mutex<(Vec<u8>, Duration)>>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    async fn start(first: Vec<u8>) -> std::io::Result<Upstream> {
        let answer = Arc::new(Mutex::new((first, Duration::ZERO)));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (a, log) = (answer.clone(), seen.clone());
        let server = Server::start(move |mut s| {
            let (a, log) = (a.clone(), log.clone());
            async move {
                let Ok(head) = read_request(&mut s).await else {
                    return;
                };
                if let Ok(mut l) = log.lock() {
                    l.push(head);
                }
                let (bytes, delay) = a.lock().map(|g| g.clone()).unwrap_or_default();
                tokio::time::sleep(delay).await;
                let _ = s.write_all(&bytes).await;
                let _ = s.shutdown().await;
            }
        })
        .await?;
        Ok(Upstream {
            server,
            answer,
            seen,
        })
    }

    fn set(&self, bytes: Vec<u8>) {
        if let Ok(mut g) = self.answer.lock() {
            g.0 = bytes;
        }
    }

    fn delay(&self, d: Duration) {
        if let Ok(mut g) = self.answer.lock() {
            g.1 = d;
        }
    }

    fn last_request(&self) -> String {
        self.seen
            .lock()
            .map(|s| s.last().cloned().unwrap_or_default())
            .unwrap_or_default()
    }
}

/// One test's world: a store, keys, a workspace and a monitor with a loopback client.
struct World {
    store: Arc<dyn Store>,
    keys: Arc<KeyRing>,
    monitor: Monitor,
    ws: Uuid,
    _guard: Option<tempfile::TempDir>,
    pg: Option<TestDb>,
}

impl World {
    async fn finish(self) -> TestResult {
        if let Some(db) = self.pg {
            drop(self.monitor);
            drop(self.store);
            db.drop_db().await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

async fn world(
    backend: Backend,
    quota: Option<u32>,
) -> Result<Option<World>, Box<dyn std::error::Error>> {
    let (store, guard, pg): (Arc<dyn Store>, _, _) = match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("t.db");
            let store =
                apidrift_store_sqlite::SqliteStore::connect(path.to_str().unwrap_or("t.db"))
                    .await?;
            (Arc::new(store), Some(dir), None)
        }
        Backend::Postgres => {
            let Some(db) = TestDb::create().await.map_err(|e| e.to_string())? else {
                return Ok(None);
            };
            let store = apidrift_store_postgres::PgStore::connect(&db.url).await?;
            (Arc::new(store), None, Some(db))
        }
    };
    let keys = Arc::new(KeyRing::new(SecretKey::generate()?, Vec::new())?);
    let ws = new_id();
    store
        .create_workspace(NewWorkspace {
            id: ws,
            name: "w".into(),
            plan: Plan::Enterprise,
            endpoint_limit: None,
            check_quota: quota,
            created_at: OffsetDateTime::now_utc(),
        })
        .await?;
    let client = builder(loopback(), StubResolver::new(&[])).build()?;
    let monitor = Monitor::new(store.clone(), keys.clone(), client);
    Ok(Some(World {
        store,
        keys,
        monitor,
        ws,
        _guard: guard,
        pg,
    }))
}

struct Ep {
    url: String,
    mode: DiffMode,
    credential: Credential,
    headers: Vec<ExtraHeader>,
    method: HttpMethod,
    body: Option<&'static str>,
    ignore: Vec<String>,
    timeout_ms: u32,
}

impl Ep {
    fn new(url: String) -> Ep {
        Ep {
            url,
            mode: DiffMode::Full,
            credential: Credential::None,
            headers: Vec::new(),
            method: HttpMethod::Get,
            body: None,
            ignore: Vec::new(),
            timeout_ms: 2000,
        }
    }
}

async fn endpoint(w: &World, ep: Ep) -> Result<Uuid, Box<dyn std::error::Error>> {
    let id = new_id();
    let seal = |plain: &[u8], field| {
        w.keys.seal(
            plain,
            &Binding::new(*w.ws.as_bytes(), *id.as_bytes(), field),
        )
    };
    let sealed_auth = match sealed::credential_to_json(&ep.credential) {
        Some(doc) => Some(seal(&doc, Field::EndpointAuth)?),
        None => None,
    };
    let sealed_headers = match sealed::headers_to_json(&ep.headers) {
        Some(doc) => Some(seal(&doc, Field::EndpointHeaders)?),
        None => None,
    };
    let sealed_request_body = match ep.body {
        Some(b) => Some(seal(b.as_bytes(), Field::EndpointRequestBody)?),
        None => None,
    };
    let row = NewEndpointRow {
        id,
        settings: EndpointSettings {
            method: ep.method,
            diff_mode: ep.mode,
            timeout_ms: ep.timeout_ms,
            ignore_paths: ep.ignore,
            ..EndpointSettings::new("ep", ep.url)
        },
        secrets: SealedSecrets {
            auth_type: ep.credential.auth_type(),
            sealed_auth,
            sealed_headers,
            sealed_request_body,
        },
        response_contract: None,
        created_at: OffsetDateTime::now_utc(),
    };
    let created = w.store.create_endpoints(w.ws, vec![row]).await?;
    assert_eq!(created.created.len(), 1);
    Ok(id)
}

async fn health(w: &World, id: Uuid) -> Result<Health, Box<dyn std::error::Error>> {
    Ok(w.store
        .get_endpoint(w.ws, id)
        .await?
        .map(|e| e.health)
        .ok_or("endpoint missing")?)
}

macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> super::TestResult {
                    super::$name(super::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> super::TestResult {
                    super::$name(super::Backend::Postgres).await
                }
            )*
        }
    };
}

both_backends!(
    slow_runs_keep_their_lease,
    capture_and_clean_check,
    drift_in_each_change_type,
    health_transitions_and_checking,
    fetch_failure_is_status_changed,
    credentials_reach_the_upstream,
    quota_and_missing_baseline,
    concurrent_checks_of_one_endpoint,
    contract_flow,
    contract_sets_shared_by_checks,
    schema_mode_and_ignore_paths,
    hostile_bodies_are_compared_not_fatal,
);

const USERS: &str = r#"{"users":[{"id":1,"name":"ann","age":30,"email":"a@x"},{"id":2,"name":"bob","age":41,"email":"b@x"}],"total":2}"#;

async fn capture_and_clean_check(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok(USERS)).await?;
    let id = endpoint(&w, Ep::new(up.server.url("/users"))).await?;
    assert_eq!(health(&w, id).await?, Health::Unknown);
    let base = w.monitor.capture_baseline(w.ws, id).await?;
    assert_eq!((base.version, base.status), (1, 200));
    assert_eq!(base.content_type.as_deref(), Some("application/json"));
    assert_eq!(base.headers["content-type"], "application/json");
    assert!(
        !base.sealed_body.windows(5).any(|w| w == b"users"),
        "body sealed at rest"
    );
    assert!(base.shape.is_object());
    let ep = w.store.get_endpoint(w.ws, id).await?.ok_or("missing")?;
    assert_eq!((ep.baseline_version, ep.health), (Some(1), Health::Healthy));

    let out = w.monitor.run_check(w.ws, id).await?;
    assert_eq!(out.diff_id, None);
    assert_eq!(out.counts.changes, 0);
    let body = serde_json::to_value(out.to_response())?;
    assert_eq!(
        body,
        serde_json::json!({"success": true, "diffId": null, "seenCount": null, "breakingCount": 0,
            "warningCount": 0, "changeCount": 0, "alertsSent": 0})
    );
    let ep = w.store.get_endpoint(w.ws, id).await?.ok_or("missing")?;
    assert_eq!(ep.health, Health::Healthy);
    assert!(ep.last_checked_at.is_some() && ep.response_time.is_some());
    assert!(w.store.latest_diff(w.ws, id).await?.is_none());
    let check = w
        .store
        .get_check(w.ws, out.check_id)
        .await?
        .ok_or("no check")?;
    assert_eq!(check.http_status, Some(200));
    assert!(check.sealed_body.is_none(), "no body kept without a diff");

    // A second capture is version 2.
    assert_eq!(w.monitor.capture_baseline(w.ws, id).await?.version, 2);
    w.finish().await
}

async fn drift_in_each_change_type(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok(USERS)).await?;
    let id = endpoint(&w, Ep::new(up.server.url("/users"))).await?;
    w.monitor.capture_baseline(w.ws, id).await?;
    let cases: Vec<(Vec<u8>, ChangeType, &str)> = vec![
        (
            json_ok(
                r#"{"users":[{"id":1,"name":"ann","age":30},{"id":2,"name":"bob","age":41,"email":"b@x"}],"total":2}"#,
            ),
            ChangeType::Removed,
            "$.users[id=1].email",
        ),
        (
            json_ok(
                r#"{"users":[{"id":1,"name":"ann","age":30,"email":"a@x"},{"id":2,"name":"bob","age":41,"email":"b@x"}],"total":2,"page":1}"#,
            ),
            ChangeType::Added,
            "$.page",
        ),
        (
            json_ok(
                r#"{"users":[{"id":1,"name":"ann","age":"30","email":"a@x"},{"id":2,"name":"bob","age":41,"email":"b@x"}],"total":2}"#,
            ),
            ChangeType::TypeChanged,
            "$.users[id=1].age",
        ),
        (
            json_ok(
                r#"{"users":[{"id":1,"name":"ann","age":30,"email":null},{"id":2,"name":"bob","age":41,"email":"b@x"}],"total":2}"#,
            ),
            ChangeType::NullabilityChanged,
            "$.users[id=1].email",
        ),
        (
            json_ok(
                r#"{"users":[{"id":1,"name":"ann","age":31,"email":"a@x"},{"id":2,"name":"bob","age":41,"email":"b@x"}],"total":2}"#,
            ),
            ChangeType::Changed,
            "$.users[id=1].age",
        ),
        (
            response(
                "503 Service Unavailable",
                &[("content-type", "application/json")],
                USERS.as_bytes(),
            ),
            ChangeType::StatusChanged,
            "status",
        ),
        (
            response(
                "200 OK",
                &[
                    ("content-type", "application/json"),
                    ("deprecation", "true"),
                ],
                USERS.as_bytes(),
            ),
            ChangeType::HeaderChanged,
            "headers.deprecation",
        ),
    ];
    for (answer, kind, path) in cases {
        up.set(answer);
        let out = w.monitor.run_check(w.ws, id).await?;
        let diff_id = out.diff_id.ok_or("a drift records a diff")?;
        let stored = w
            .store
            .get_diff(w.ws, diff_id)
            .await?
            .ok_or("diff missing")?;
        assert!(
            stored
                .changes
                .iter()
                .any(|c| c.change_type == kind && c.path == path),
            "{kind:?} at {path}: {:?}",
            stored.changes
        );
        assert_eq!(stored.base.change_count, out.counts.changes);
        let check = w
            .store
            .get_check(w.ws, out.check_id)
            .await?
            .ok_or("check")?;
        assert_eq!(check.diff_id, Some(diff_id));
        assert!(
            check.sealed_body.is_some(),
            "the response is kept for accepting the diff"
        );
    }
    w.finish().await
}

async fn health_transitions_and_checking(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok(r#"{"a":1,"n":1}"#)).await?;
    let id = endpoint(&w, Ep::new(up.server.url("/"))).await?;
    assert_eq!(health(&w, id).await?, Health::Unknown);
    w.monitor.capture_baseline(w.ws, id).await?;
    assert_eq!(health(&w, id).await?, Health::Healthy);
    // Breaking: a field disappears.
    up.set(json_ok(r#"{"n":1}"#));
    assert_eq!(
        w.monitor.run_check(w.ws, id).await?.health,
        Health::Breaking
    );
    assert_eq!(health(&w, id).await?, Health::Breaking);
    // Warning only: integer → number.
    up.set(json_ok(r#"{"a":1,"n":1.5}"#));
    let out = w.monitor.run_check(w.ws, id).await?;
    assert_eq!(
        (out.health, out.counts.breaking, out.counts.warning),
        (Health::Warning, 0, 1)
    );
    let ep = w.store.get_endpoint(w.ws, id).await?.ok_or("missing")?;
    assert_eq!(
        (ep.health, ep.breaking_count, ep.warning_count),
        (Health::Warning, 0, 1)
    );
    // Back to baseline.
    up.set(json_ok(r#"{"a":1,"n":1}"#));
    assert_eq!(w.monitor.run_check(w.ws, id).await?.health, Health::Healthy);
    // `checking` while a check runs (a manual check marks itself; scheduled runs are marked
    // by their claim, which the store's conformance suite covers).
    up.delay(Duration::from_millis(400));
    let m = w.monitor.clone();
    let ws = w.ws;
    let running = tokio::spawn(async move { m.run_check(ws, id).await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(health(&w, id).await?, Health::Checking);
    let out = running.await??;
    assert_eq!(out.health, Health::Healthy);
    assert_eq!(health(&w, id).await?, Health::Healthy);
    // A failed capture restores the previous health.
    up.set(b"HTTP/1.1 200 OK\r\ncontent-length: 5000000000\r\n\r\n".to_vec());
    up.delay(Duration::ZERO);
    let err = w.monitor.capture_baseline(w.ws, id).await.err();
    assert!(
        matches!(err, Some(MonitorError::CaptureFailed(ref e)) if e.kind.as_str() == "body_too_large"),
        "{err:?}"
    );
    assert_eq!(health(&w, id).await?, Health::Healthy);
    w.finish().await
}

async fn fetch_failure_is_status_changed(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok("{}")).await?;
    let mut ep = Ep::new(up.server.url("/"));
    ep.timeout_ms = 300;
    let id = endpoint(&w, ep).await?;
    w.monitor.capture_baseline(w.ws, id).await?;
    up.delay(Duration::from_secs(2));
    let out = w.monitor.run_check(w.ws, id).await?;
    assert_eq!(out.error_kind.as_deref(), Some("timeout"));
    assert_eq!((out.counts.breaking, out.counts.changes), (1, 1));
    assert_eq!(out.health, Health::Breaking);
    let change = &out.changes[0];
    assert_eq!(
        (change.change_type, change.path.as_str()),
        (ChangeType::StatusChanged, "status")
    );
    assert_eq!(change.new_value, None);
    assert!(change.message.contains("timeout"), "{}", change.message);
    let check = w
        .store
        .get_check(w.ws, out.check_id)
        .await?
        .ok_or("check")?;
    assert_eq!(
        (check.http_status, check.error_kind.as_deref()),
        (None, Some("timeout"))
    );
    w.finish().await
}

async fn credentials_reach_the_upstream(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok("{}")).await?;
    let cases: Vec<(Credential, &str)> = vec![
        (
            Credential::Bearer {
                token: SecretString::new("b-tok"),
            },
            "authorization: Bearer b-tok",
        ),
        (
            Credential::Oauth {
                token: SecretString::new("o-tok"),
            },
            "authorization: Bearer o-tok",
        ),
        (
            Credential::ApiKey {
                header: "X-API-Key".into(),
                key: SecretString::new("k-1"),
            },
            "x-api-key: k-1",
        ),
        (
            Credential::Basic {
                username: SecretString::new("u"),
                password: SecretString::new("p"),
            },
            "authorization: Basic dTpw",
        ),
        (
            Credential::Custom {
                header: "X-Sig".into(),
                value: SecretString::new("s-1"),
            },
            "x-sig: s-1",
        ),
    ];
    for (credential, line) in cases {
        let auth = credential.auth_type();
        let mut ep = Ep::new(up.server.url("/p"));
        ep.credential = credential;
        ep.method = HttpMethod::Put;
        ep.body = Some(r#"{"x":1}"#);
        ep.headers = vec![ExtraHeader {
            name: "X-Tenant".into(),
            value: SecretString::new("t9"),
        }];
        let id = endpoint(&w, ep).await?;
        let stored = w.store.get_endpoint(w.ws, id).await?.ok_or("missing")?;
        assert_eq!(stored.secrets.auth_type, auth);
        assert_ne!(auth, AuthType::None);
        w.monitor.capture_baseline(w.ws, id).await?;
        w.monitor.run_check(w.ws, id).await?;
        let last = up.last_request();
        assert!(last.starts_with("PUT /p HTTP/1.1"), "{last}");
        assert!(last.contains(line), "{line} missing in {last}");
        assert!(last.contains("x-tenant: t9"), "{last}");
        assert!(last.ends_with(r#"{"x":1}"#), "{last}");
    }
    w.finish().await
}

async fn quota_and_missing_baseline(b: Backend) -> TestResult {
    let Some(w) = world(b, Some(2)).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok("{}")).await?;
    let id = endpoint(&w, Ep::new(up.server.url("/"))).await?;
    let err = w.monitor.run_check(w.ws, id).await.err();
    assert!(matches!(err, Some(MonitorError::NoBaseline)), "{err:?}");
    let now = OffsetDateTime::now_utc();
    assert_eq!(
        w.store.check_usage(w.ws, now).await?,
        0,
        "no unit used without a baseline"
    );
    assert_eq!(up.server.hits(), 0);
    w.monitor.capture_baseline(w.ws, id).await?;
    w.monitor.run_check(w.ws, id).await?;
    w.monitor.run_check(w.ws, id).await?;
    let err = w.monitor.run_check(w.ws, id).await.err();
    assert!(
        matches!(
            err,
            Some(MonitorError::QuotaExhausted { used: 2, quota: 2 })
        ),
        "{err:?}"
    );
    assert_eq!(
        err.map(|e| e.to_string()).as_deref(),
        Some("monthly check quota exhausted (2 of 2 checks used this month)")
    );
    assert_eq!(
        up.server.hits(),
        3,
        "capture and two checks; the refused check fetched nothing"
    );
    assert_eq!(w.store.check_usage(w.ws, now).await?, 2);
    // Captures use no quota.
    w.monitor.capture_baseline(w.ws, id).await?;
    let missing = w.monitor.run_check(w.ws, new_id()).await.err();
    assert!(matches!(missing, Some(MonitorError::NotFound)));

    // The quota used up while a check fetches: the recording refuses and writes nothing.
    w.store
        .update_workspace(
            w.ws,
            apidrift_store::WorkspaceUpdate {
                check_quota: Some(Some(3)),
                ..Default::default()
            },
        )
        .await?;
    let before = w.store.get_endpoint(w.ws, id).await?;
    let history = w
        .store
        .list_checks(w.ws, id, apidrift_store::PageRequest::default())
        .await?
        .total;
    up.set(json_ok(r#"{"changed":true}"#));
    up.delay(Duration::from_millis(400));
    let m = w.monitor.clone();
    let ws = w.ws;
    let running = tokio::spawn(async move { m.run_check(ws, id).await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(matches!(
        w.store.consume_check_unit(w.ws, now).await?,
        apidrift_store::QuotaOutcome::Consumed { used: 3, .. }
    ));
    let err = running.await?.err();
    assert!(
        matches!(
            err,
            Some(MonitorError::QuotaExhausted { used: 3, quota: 3 })
        ),
        "{err:?}"
    );
    assert_eq!(up.server.hits(), 5, "it fetched, then recorded nothing");
    // Nothing but `updatedAt` moved: the `checking` mark came and went, the health and the
    // figures are those of before.
    let mut after = w.store.get_endpoint(w.ws, id).await?;
    if let (Some(a), Some(b)) = (after.as_mut(), before.as_ref()) {
        a.updated_at = b.updated_at;
    }
    assert_eq!(after, before);
    assert_eq!(
        w.store
            .list_checks(w.ws, id, apidrift_store::PageRequest::default())
            .await?
            .total,
        history
    );
    assert_eq!(w.store.check_usage(w.ws, now).await?, 3);
    w.finish().await
}

async fn concurrent_checks_of_one_endpoint(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok(r#"{"a":1}"#)).await?;
    let id = endpoint(&w, Ep::new(up.server.url("/"))).await?;
    w.monitor.capture_baseline(w.ws, id).await?;
    up.set(json_ok(r#"{"b":1}"#));
    up.delay(Duration::from_millis(50));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let m = w.monitor.clone();
        let ws = w.ws;
        tasks.push(tokio::spawn(async move { m.run_check(ws, id).await }));
    }
    let mut diffs = Vec::new();
    let mut seen = Vec::new();
    for t in tasks {
        let out = t.await??;
        assert_eq!((out.counts.breaking, out.counts.changes), (1, 2));
        diffs.push(out.diff_id.ok_or("diff")?);
        seen.push(out.seen_count.ok_or("seen count")?);
    }
    diffs.sort();
    diffs.dedup();
    // One drift (D26): the first check opened the diff, the three others were counted on it,
    // one after the other.
    assert_eq!(diffs.len(), 1);
    seen.sort_unstable();
    assert_eq!(seen, vec![1, 2, 3, 4]);
    let ep = w.store.get_endpoint(w.ws, id).await?.ok_or("missing")?;
    assert_eq!((ep.health, ep.breaking_count), (Health::Breaking, 1));
    assert_eq!(
        w.store.check_usage(w.ws, OffsetDateTime::now_utc()).await?,
        4
    );
    let page = w
        .store
        .list_diffs(
            w.ws,
            &apidrift_store::DiffFilter {
                endpoint_id: Some(id),
                ..Default::default()
            },
            apidrift_store::PageRequest::default(),
        )
        .await?;
    assert_eq!(page.total, 1);
    assert_eq!(page.items[0].seen_count, 4);
    w.finish().await
}

const OPENAPI: &str = r##"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /users/{id}:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                $ref: "#/components/schemas/User"
components:
  schemas:
    User:
      type: object
      required: [id, name]
      properties:
        id: {type: integer}
        name: {type: string}
        nick: {type: string, nullable: true}
"##;

async fn contract_flow(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok(r#"{"id":1,"name":"ann","nick":null}"#)).await?;
    let id = endpoint(&w, Ep::new(up.server.url("/users/1"))).await?;
    w.monitor.capture_baseline(w.ws, id).await?;
    // Contracts are attached and detached through the service (they need no key).
    let service = Service::with_client(
        w.store.clone(),
        None,
        loopback(),
        w.monitor.client().clone(),
    );
    let contract = service
        .attach_contract(w.ws, id, OPENAPI, "GET /users/{id}", None)
        .await?;
    assert_eq!(
        (contract.operation.as_str(), contract.status),
        ("GET /users/{id}", 200)
    );
    let ep = w.store.get_endpoint(w.ws, id).await?.ok_or("missing")?;
    assert!(ep.to_model().has_response_contract);
    // Conforming: no change.
    assert_eq!(w.monitor.run_check(w.ws, id).await?.diff_id, None);
    // `name` becomes a number: a type change and a contract violation.
    up.set(json_ok(r#"{"id":1,"name":7,"nick":null}"#));
    let out = w.monitor.run_check(w.ws, id).await?;
    assert!(
        out.changes
            .iter()
            .any(|c| c.change_type == ChangeType::ContractViolation && c.path == "$.name"),
        "{:?}",
        out.changes
    );
    // Bad operation → a clear error, nothing attached.
    let err = service
        .attach_contract(w.ws, id, OPENAPI, "GET /nope", None)
        .await
        .err();
    assert!(
        matches!(&err, Some(ServiceError::Invalid(m)) if m.starts_with("contract: ")),
        "{err:?}"
    );
    service.detach_contract(w.ws, id).await?;
    let ep = w.store.get_endpoint(w.ws, id).await?.ok_or("missing")?;
    assert!(!ep.to_model().has_response_contract);
    let out = w.monitor.run_check(w.ws, id).await?;
    assert!(
        !out.changes
            .iter()
            .any(|c| c.change_type == ChangeType::ContractViolation)
    );
    w.finish().await
}

/// Two endpoints attached to the same operation of one document share one stored schema set;
/// deleting one keeps the other's contract, whose check still validates; deleting both frees
/// the set; a reference to a set the workspace does not store is a clear error, not a panic.
async fn contract_sets_shared_by_checks(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok(r#"{"id":1,"name":"ann","nick":null}"#)).await?;
    let first = endpoint(&w, Ep::new(up.server.url("/users/1"))).await?;
    let second = endpoint(&w, Ep::new(up.server.url("/users/2"))).await?;
    let service = Service::with_client(
        w.store.clone(),
        None,
        loopback(),
        w.monitor.client().clone(),
    );
    let mut sets = Vec::new();
    for id in [first, second] {
        w.monitor.capture_baseline(w.ws, id).await?;
        let c = service
            .attach_contract(w.ws, id, OPENAPI, "GET /users/{id}", None)
            .await?;
        sets.push(c.set.ok_or("a reference")?);
    }
    assert_eq!(sets[0], sets[1]);
    assert_eq!(w.store.contract_set_usage(w.ws).await?.0, 1);
    assert_eq!(w.monitor.run_check(w.ws, second).await?.diff_id, None);
    w.store.delete_endpoint(w.ws, first, None).await?;
    assert!(w.store.contract_set(w.ws, &sets[0]).await?.is_some());
    up.set(json_ok(r#"{"id":1,"name":7,"nick":null}"#));
    let out = w.monitor.run_check(w.ws, second).await?;
    assert!(
        out.changes
            .iter()
            .any(|c| c.change_type == ChangeType::ContractViolation && c.path == "$.name"),
        "{:?}",
        out.changes
    );
    // A reference whose set is not stored: resolved through a fresh cache, a clear error.
    let mut dangling = w
        .store
        .get_endpoint(w.ws, second)
        .await?
        .and_then(|e| e.response_contract)
        .ok_or("a contract")?;
    dangling.set = Some("0".repeat(64));
    let cache = apidrift_monitor::contracts::ValidatorCache::new(4, 1 << 20);
    let err = apidrift_monitor::contracts::validator_for(
        &*w.store,
        &cache,
        w.ws,
        &dangling,
        Some("application/json"),
    )
    .await
    .err();
    assert!(
        matches!(&err, Some(MonitorError::Contract(m)) if m.contains("no longer stores")),
        "{err:?}"
    );
    // Resolved, the reference is cached: the second resolution is a hit.
    let live = w
        .store
        .get_endpoint(w.ws, second)
        .await?
        .and_then(|e| e.response_contract)
        .ok_or("a contract")?;
    for _ in 0..2 {
        apidrift_monitor::contracts::validator_for(&*w.store, &cache, w.ws, &live, None).await?;
    }
    assert_eq!(cache.usage().0, 1);
    w.store.delete_endpoint(w.ws, second, None).await?;
    assert_eq!(w.store.contract_set_usage(w.ws).await?, (0, 0));
    w.finish().await
}

async fn schema_mode_and_ignore_paths(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok(
        r#"{"meta":{"requestId":"a"},"items":[{"v":1,"t":"x"}]}"#,
    ))
    .await?;
    let mut ep = Ep::new(up.server.url("/"));
    ep.mode = DiffMode::Schema;
    ep.ignore = vec!["$.meta.requestId".into(), "$.items[].t".into()];
    let id = endpoint(&w, ep).await?;
    w.monitor.capture_baseline(w.ws, id).await?;
    // Values change (schema mode ignores them); ignored paths change type.
    up.set(json_ok(
        r#"{"meta":{"requestId":5},"items":[{"v":2,"t":1},{"v":3,"t":2}]}"#,
    ));
    let out = w.monitor.run_check(w.ws, id).await?;
    assert_eq!(out.diff_id, None, "{:?}", out.changes);
    up.set(json_ok(
        r#"{"meta":{"requestId":"a"},"items":[{"v":"2","t":"x"}]}"#,
    ));
    let out = w.monitor.run_check(w.ws, id).await?;
    assert_eq!(out.changes.len(), 1, "{:?}", out.changes);
    assert_eq!(out.changes[0].path, "$.items[].v");
    w.finish().await
}

/// Bad-upstream rows 12-15: invalid JSON, JSON nested 100 000 deep and an HTML page where JSON
/// was expected are compared (by digest and content type), never a crash or a failed run.
async fn hostile_bodies_are_compared_not_fatal(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok(r#"{"a":1}"#)).await?;
    let id = endpoint(&w, Ep::new(up.server.url("/"))).await?;
    w.monitor.capture_baseline(w.ws, id).await?;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(Vec<u8>, ChangeType, &str)> = vec![
        (json_ok("{\"a\": tru"), ChangeType::TypeChanged, "$"),
        (json_ok(&deep), ChangeType::TypeChanged, "$"),
        (
            response(
                "200 OK",
                &[("content-type", "text/html")],
                b"<html>oops</html>",
            ),
            ChangeType::HeaderChanged,
            "headers.content-type",
        ),
    ];
    for (answer, kind, path) in cases {
        up.set(answer);
        let out = w.monitor.run_check(w.ws, id).await?;
        assert!(
            out.changes
                .iter()
                .any(|c| c.change_type == kind && c.path == path),
            "{kind:?} at {path}: {:?}",
            out.changes
        );
        assert_eq!(out.error_kind, None);
    }
    // A deep baseline is captured as text and compared by digest too.
    up.set(json_ok(&deep));
    w.monitor.capture_baseline(w.ws, id).await?;
    assert_eq!(w.monitor.run_check(w.ws, id).await?.diff_id, None);
    w.finish().await
}

/// A scheduled run slower than its lease keeps it (the worker's heartbeat renews the leases of
/// its runs in flight): a second worker on the same database never runs it again meanwhile, and
/// the endpoint shows `checking` until the run records.
async fn slow_runs_keep_their_lease(b: Backend) -> TestResult {
    let Some(w) = world(b, None).await? else {
        return Ok(());
    };
    let up = Upstream::start(json_ok(r#"{"a":1}"#)).await?;
    let id = endpoint(&w, Ep::new(up.server.url("/"))).await?;
    w.monitor.capture_baseline(w.ws, id).await?;
    let stored = w.store.get_endpoint(w.ws, id).await?.ok_or("missing")?;
    let mut changes = apidrift_store::EndpointChanges::of(&stored);
    changes.settings.schedule = Some(apidrift_model::Cadence::Every(
        apidrift_model::Frequency::Hourly,
    ));
    w.store
        .update_endpoint(w.ws, id, changes, None, OffsetDateTime::now_utc())
        .await?;
    up.delay(Duration::from_millis(1200));
    let config = apidrift_monitor::WorkerConfig {
        deliveries: false,
        poll: Duration::from_millis(20),
        lease: Duration::from_millis(300),
        first_run_jitter: false,
        ..Default::default()
    };
    let workers = [
        apidrift_monitor::Worker::start(w.monitor.clone(), w.keys.clone(), config.clone()),
        apidrift_monitor::Worker::start(w.monitor.clone(), w.keys.clone(), config),
    ];
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while up.server.hits() < 2 {
        if std::time::Instant::now() > deadline {
            return Err("the scheduled run never fetched".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        health(&w, id).await?,
        Health::Checking,
        "marked by its claim"
    );
    // Four leases after the claim, then some.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(up.server.hits(), 2, "the capture and one scheduled run");
    let history = w
        .store
        .list_checks(w.ws, id, apidrift_store::PageRequest::default())
        .await?;
    assert_eq!(history.total, 1);
    assert_eq!(health(&w, id).await?, Health::Healthy);
    for worker in workers {
        worker.shutdown().await;
    }
    w.finish().await
}
