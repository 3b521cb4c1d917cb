//! The admin CLI (D3, D4): `migrate`, `workspace create|update`, `token create|list|revoke`,
//! `keys rotate`, the global `--database-url` and `--config` flags, and bad input (one line on
//! stderr, exit 2). Each scenario runs against a temporary SQLite database (`sqlite::…`) and a
//! fresh PostgreSQL database (`postgres::…`, from `apidrift_store_postgres::testdb`; skipped only
//! with `APIDRIFT_SKIP_POSTGRES=1`).

use apidrift_e2e::binary;
use apidrift_model::{AuthType, EndpointSettings, OffsetDateTime, Uuid, timestamp};
use apidrift_seal::{Binding, Field, KeyRing, SecretKey, key_id_of};
use apidrift_store::{
    NewBaseline, NewEndpointRow, NewWorkspace, SealedField, SealedSecrets, Store, new_id,
};
use apidrift_store_postgres::PgStore;
use apidrift_store_postgres::testdb::TestDb;
use apidrift_store_sqlite::SqliteStore;
use serde_json::{Value, json};
use std::error::Error;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;

type TestResult = Result<(), Box<dyn Error>>;

/// Variables the binary reads; cleared so the developer's environment cannot leak into a test.
const CLEARED: &[&str] = &[
    "DATABASE_URL",
    "ENDPOINT_SECRET_KEY",
    "ENDPOINT_SECRET_KEY_PREVIOUS",
    "APIDRIFT_CONFIG",
    "APIDRIFT_DATABASE_URL",
    "APIDRIFT_SECRET_KEY_FILE",
];

/// A scratch directory (the commands' working directory) and a fresh database: a SQLite file in
/// the directory, or a PostgreSQL database of its own, dropped with the value.
struct Db {
    dir: tempfile::TempDir,
    url: String,
    pg: Option<TestDb>,
}

impl Db {
    fn sqlite() -> Result<Self, Box<dyn Error>> {
        let dir = tempfile::tempdir()?;
        let url = format!("sqlite://{}", dir.path().join("apidrift.db").display());
        Ok(Self { dir, url, pg: None })
    }

    /// `None` when PostgreSQL tests are skipped (`APIDRIFT_SKIP_POSTGRES=1`).
    fn postgres() -> Result<Option<Self>, Box<dyn Error>> {
        let Some(pg) = block_on(TestDb::create())?.map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        Ok(Some(Self {
            dir: tempfile::tempdir()?,
            url: pg.url.clone(),
            pg: Some(pg),
        }))
    }

    fn is_sqlite(&self) -> bool {
        self.pg.is_none()
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("apidrift.db")
    }

    fn url(&self) -> String {
        self.url.clone()
    }

    /// The store, opened directly (to seed or inspect the database).
    async fn store(&self) -> Result<Arc<dyn Store>, Box<dyn Error>> {
        Ok(if self.is_sqlite() {
            Arc::new(SqliteStore::connect(&self.url).await?)
        } else {
            Arc::new(PgStore::connect(&self.url).await?)
        })
    }

    /// `apidrift ARGS… --database-url URL` with extra environment variables.
    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let url = self.url();
        let mut cmd = Command::new(binary());
        cmd.args(args)
            .args(apidrift_e2e::database_args(args, &url))
            .current_dir(self.dir.path());
        for name in CLEARED {
            cmd.env_remove(name);
        }
        cmd.envs(env.iter().copied());
        match cmd.output() {
            Ok(out) => out,
            Err(e) => panic!("cannot run {}: {e}", binary().display()),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_env(args, &[])
    }

    /// Runs a command that must succeed and print one JSON document.
    fn json(&self, args: &[&str]) -> Result<Value, Box<dyn Error>> {
        let out = self.run(args);
        if !out.status.success() {
            return Err(format!("{args:?} failed: {}", text(&out.stderr)).into());
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    fn workspace(&self, extra: &[&str]) -> Result<String, Box<dyn Error>> {
        let mut args = vec!["workspace", "create", "--name", "Acme"];
        args.extend_from_slice(extra);
        let ws = self.json(&args)?;
        Ok(ws["id"].as_str().ok_or("no id")?.to_owned())
    }

    /// A raw dump of the database: every byte of the SQLite file and its WAL and shared-memory
    /// files, or `pg_dump` of the PostgreSQL database.
    fn raw_bytes(&self) -> Result<Vec<u8>, Box<dyn Error>> {
        if !self.is_sqlite() {
            let out = Command::new("pg_dump")
                .arg(&self.url)
                .output()
                .map_err(|e| {
                    format!("cannot run pg_dump ({e}); install the PostgreSQL client tools")
                })?;
            if !out.status.success() {
                return Err(format!("pg_dump failed: {}", text(&out.stderr)).into());
            }
            return Ok(out.stdout);
        }
        let mut bytes = Vec::new();
        for entry in std::fs::read_dir(self.dir.path())? {
            let path = entry?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if name.starts_with("apidrift.db") {
                bytes.extend(std::fs::read(&path)?);
            }
        }
        Ok(bytes)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Some(pg) = self.pg.take() {
            // Best effort: the next test run drops leftovers of dead processes anyway.
            let _ = block_on(pg.drop_db());
        }
    }
}

/// Runs each scenario once per backend: `sqlite::NAME` and `postgres::NAME`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() -> super::TestResult {
                    super::$name(&super::Db::sqlite()?)
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $name() -> super::TestResult {
                    match super::Db::postgres()? {
                        Some(db) => super::$name(&db),
                        None => Ok(()),
                    }
                }
            )*
        }
    };
}

on_both_backends!(
    migrate_applies_once,
    workspace_create_prints_exactly_the_d3_object,
    workspace_plans_and_overrides,
    workspace_update_changes_plan_and_limits,
    workspace_bad_input,
    token_create_list_revoke,
    token_bad_input,
    canary_the_token_text_is_not_in_a_raw_dump,
    keygen_prints_a_key_the_configuration_accepts,
    keys_rotate_reseals_everything_and_is_idempotent,
    keys_rotate_resumes_a_partial_rotation,
);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts a failed run: exit code 2 and exactly one line on stderr containing `needle`.
fn assert_bad_input(out: &Output, needle: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err:?}");
    assert!(err.contains(needle), "{needle:?} not in {err:?}");
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout: {}",
        text(&out.stdout)
    );
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn migrate_applies_once(db: &Db) -> TestResult {
    let first = db.json(&["migrate"])?;
    if db.is_sqlite() {
        assert_eq!(first["backend"], "sqlite");
        assert!(!first["applied"].as_array().ok_or("no applied")?.is_empty());
        assert!(db.path().exists());
    } else {
        // The test database is a copy of a migrated template: nothing is pending.
        assert_eq!(first["backend"], "postgres");
        assert!(first["applied"].is_array());
    }
    let second = db.json(&["migrate"])?;
    assert_eq!(second["applied"], json!([]));
    Ok(())
}

fn workspace_create_prints_exactly_the_d3_object(db: &Db) -> TestResult {
    let out = db.run(&["workspace", "create", "--name", "Acme"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = text(&out.stdout);
    assert_eq!(line.lines().count(), 1);
    let value: Value = serde_json::from_str(&line)?;
    let id = value["id"].as_str().ok_or("no id")?;
    Uuid::parse_str(id)?;
    assert_eq!(
        line.trim(),
        format!(
            r#"{{"id":"{id}","name":"Acme","plan":"enterprise","endpointLimit":null,"checkQuota":null}}"#
        )
    );
    Ok(())
}

fn workspace_plans_and_overrides(db: &Db) -> TestResult {
    let free = db.json(&["workspace", "create", "--name", "Free", "--plan", "free"])?;
    assert_eq!(
        (free["plan"].clone(), free["endpointLimit"].clone()),
        (json!("free"), json!(5))
    );
    assert_eq!(free["checkQuota"], 1000);
    let custom = db.json(&[
        "workspace",
        "create",
        "--name",
        "Custom",
        "--plan",
        "starter",
        "--endpoint-limit",
        "7",
        "--check-quota",
        "unlimited",
    ])?;
    assert_eq!(custom["endpointLimit"], 7);
    assert_eq!(custom["checkQuota"], Value::Null);
    assert_eq!(custom["plan"], "starter");
    Ok(())
}

fn workspace_update_changes_plan_and_limits(db: &Db) -> TestResult {
    let id = db.workspace(&["--plan", "free"])?;
    let pro = db.json(&["workspace", "update", &id, "--plan", "pro"])?;
    assert_eq!(
        pro,
        json!({"id": id, "name": "Acme", "plan": "pro", "endpointLimit": 500, "checkQuota": 200000})
    );
    let limited = db.json(&["workspace", "update", &id, "--endpoint-limit", "42"])?;
    assert_eq!(
        (limited["plan"].clone(), limited["endpointLimit"].clone()),
        (json!("pro"), json!(42))
    );
    assert_eq!(limited["checkQuota"], 200000);
    let open = db.json(&[
        "workspace",
        "update",
        &id,
        "--check-quota",
        "unlimited",
        "--name",
        "Beta",
    ])?;
    assert_eq!(open["checkQuota"], Value::Null);
    assert_eq!(open["name"], "Beta");
    assert_eq!(open["endpointLimit"], 42);
    Ok(())
}

fn workspace_bad_input(db: &Db) -> TestResult {
    let id = db.workspace(&[])?;
    assert_bad_input(
        &db.run(&["workspace", "create", "--name", "X", "--plan", "gold"]),
        "gold",
    );
    assert_bad_input(
        &db.run(&["workspace", "create", "--name", "X", "--plan", "PRO"]),
        "--plan",
    );
    assert_bad_input(&db.run(&["workspace", "create", "--name", "  "]), "--name");
    assert_bad_input(&db.run(&["workspace", "create"]), "--name");
    assert_bad_input(
        &db.run(&[
            "workspace",
            "create",
            "--name",
            "X",
            "--endpoint-limit",
            "-3",
        ]),
        "--endpoint-limit",
    );
    assert_bad_input(
        &db.run(&[
            "workspace",
            "create",
            "--name",
            "X",
            "--check-quota",
            "lots",
        ]),
        "--check-quota",
    );
    let missing = Uuid::nil().to_string();
    assert_bad_input(
        &db.run(&["workspace", "update", &missing, "--plan", "pro"]),
        "not found",
    );
    assert_bad_input(
        &db.run(&["workspace", "update", "not-a-uuid", "--plan", "pro"]),
        "UUID",
    );
    assert_bad_input(&db.run(&["workspace", "update", &id]), "nothing to change");
    Ok(())
}

fn token_create_list_revoke(db: &Db) -> TestResult {
    let ws = db.workspace(&[])?;
    let out = db.run(&["token", "create", "--workspace", &ws]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = text(&out.stdout);
    let created: Value = serde_json::from_str(&line)?;
    let token = created["token"].as_str().ok_or("no token")?.to_owned();
    let id = created["id"].as_str().ok_or("no id")?.to_owned();
    assert!(
        line.trim()
            .starts_with(&format!(r#"{{"id":"{id}","token":"{token}","scopes":"#))
    );
    assert_eq!(created["scopes"], json!(["endpoints:read"]));
    assert_eq!(created["role"], "member");
    assert_eq!(created.as_object().map(|o| o.len()), Some(4));
    apidrift_seal::token::check_format(&token)?;

    let ci = db.json(&[
        "token",
        "create",
        "--workspace",
        &ws,
        "--scopes",
        "endpoints:read,checks:run,endpoints:write",
        "--role",
        "admin",
        "--name",
        "ci",
        "--expires-in",
        "30",
    ])?;
    assert_eq!(
        ci["scopes"],
        json!(["endpoints:read", "checks:run", "endpoints:write"])
    );
    assert_eq!(ci["role"], "admin");
    assert_ne!(ci["token"], created["token"]);

    let out = db.run(&["token", "list", "--workspace", &ws]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    assert!(!listing.contains(&token), "list shows the token text");
    assert!(
        !listing.contains(&apidrift_seal::token::hash(&token)),
        "list shows the hash"
    );
    let list: Value = serde_json::from_str(&listing)?;
    let list = list.as_array().ok_or("not an array")?;
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["hint"], &token[token.len() - 4..]);
    assert_eq!(list[0]["name"], "");
    assert_eq!(list[0]["expiresAt"], Value::Null);
    assert_eq!(list[0]["revokedAt"], Value::Null);
    assert_eq!(list[0]["lastUsedAt"], Value::Null);
    assert_eq!(list[1]["name"], "ci");
    assert_eq!(list[1]["role"], "admin");
    let created_at = timestamp::parse(list[1]["createdAt"].as_str().ok_or("no createdAt")?)?;
    let expires_at = timestamp::parse(list[1]["expiresAt"].as_str().ok_or("no expiresAt")?)?;
    assert_eq!((expires_at - created_at).whole_days(), 30);
    assert!(
        list[1]["createdAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z') && t.len() == 24)
    );
    for key in ["token", "tokenHash", "hash"] {
        assert!(list[0].get(key).is_none(), "{key} listed");
    }

    let revoked = db.json(&["token", "revoke", &id])?;
    assert_eq!(revoked["id"], id.as_str());
    assert!(revoked["revokedAt"].is_string());
    let again = db.json(&["token", "revoke", &id])?;
    assert_eq!(
        again["revokedAt"], revoked["revokedAt"],
        "revoking twice keeps the first time"
    );
    let list = db.json(&["token", "list", "--workspace", &ws])?;
    assert_eq!(list[0]["revokedAt"], revoked["revokedAt"]);
    assert_eq!(list[1]["revokedAt"], Value::Null);
    Ok(())
}

fn token_bad_input(db: &Db) -> TestResult {
    let ws = db.workspace(&[])?;
    let missing = Uuid::nil().to_string();
    assert_bad_input(
        &db.run(&["token", "create", "--workspace", &missing]),
        "not found",
    );
    assert_bad_input(&db.run(&["token", "create", "--workspace", "acme"]), "UUID");
    // Without --workspace a command works in the only workspace; with two it must be told.
    db.workspace(&[])?;
    assert_bad_input(&db.run(&["token", "create"]), "--workspace");
    assert_bad_input(
        &db.run(&[
            "token",
            "create",
            "--workspace",
            &ws,
            "--scopes",
            "endpoints:admin",
        ]),
        "endpoints:admin",
    );
    assert_bad_input(
        &db.run(&["token", "create", "--workspace", &ws, "--scopes", ""]),
        "--scopes",
    );
    assert_bad_input(
        &db.run(&["token", "create", "--workspace", &ws, "--role", "root"]),
        "root",
    );
    assert_bad_input(
        &db.run(&["token", "create", "--workspace", &ws, "--expires-in", "0"]),
        "--expires-in",
    );
    assert_bad_input(
        &db.run(&[
            "token",
            "create",
            "--workspace",
            &ws,
            "--expires-in",
            "soon",
        ]),
        "--expires-in",
    );
    assert_bad_input(
        &db.run(&["token", "create", "--workspace", &ws, "--expires-in", "-1"]),
        "--expires-in",
    );
    assert_bad_input(
        &db.run(&["token", "list", "--workspace", &missing]),
        "not found",
    );
    assert_bad_input(&db.run(&["token", "revoke", &missing]), "not found");
    assert_bad_input(&db.run(&["token", "revoke", "123"]), "UUID");
    // Nothing was created by the failures.
    assert_eq!(db.json(&["token", "list", "--workspace", &ws])?, json!([]));
    Ok(())
}

fn canary_the_token_text_is_not_in_a_raw_dump(db: &Db) -> TestResult {
    let ws = db.workspace(&[])?;
    let created = db.json(&["token", "create", "--workspace", &ws, "--name", "canary"])?;
    let token = created["token"].as_str().ok_or("no token")?;
    let bytes = db.raw_bytes()?;
    assert!(!bytes.is_empty());
    // The scan sees the stored row: its hash is there …
    assert!(
        contains(&bytes, apidrift_seal::token::hash(token).as_bytes()),
        "hash not found"
    );
    // … but neither the token nor its random part is.
    assert!(
        !contains(&bytes, token.as_bytes()),
        "token text in the database"
    );
    assert!(
        !contains(&bytes, &token.as_bytes()[9..40]),
        "random part in the database"
    );
    Ok(())
}

#[test]
fn both_postgres_url_spellings_select_postgresql() -> TestResult {
    let Some(db) = Db::postgres()? else {
        return Ok(());
    };
    let alias = db.url.replacen("postgres://", "postgresql://", 1);
    assert_ne!(alias, db.url);
    for url in [db.url.as_str(), alias.as_str()] {
        let mut cmd = Command::new(binary());
        for name in CLEARED {
            cmd.env_remove(name);
        }
        let out = cmd
            .args(["migrate", "--database-url", url])
            .current_dir(db.dir.path())
            .output()?;
        assert!(out.status.success(), "{}", text(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout)?;
        assert_eq!(report["backend"], "postgres");
    }
    Ok(())
}

#[test]
fn global_flags_and_configuration_layers() -> TestResult {
    let db = Db::sqlite()?;
    let url = db.url();
    // --database-url before the subcommand.
    let mut cmd = Command::new(binary());
    for name in CLEARED {
        cmd.env_remove(name);
    }
    let out = cmd
        .args([
            "--database-url",
            &url,
            "workspace",
            "create",
            "--name",
            "Before",
            "--create",
        ])
        .current_dir(db.dir.path())
        .output()?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(db.path().exists());

    // DATABASE_URL, then --config with a file, each selecting another database.
    let other = db.dir.path().join("other.db");
    let mut cmd = Command::new(binary());
    for name in CLEARED {
        cmd.env_remove(name);
    }
    let out = cmd
        .args(["workspace", "create", "--name", "FromEnv", "--create"])
        .env("DATABASE_URL", format!("sqlite://{}", other.display()))
        .current_dir(db.dir.path())
        .output()?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(other.exists());

    let third = db.dir.path().join("third.db");
    let config = db.dir.path().join("apidrift.toml");
    std::fs::write(
        &config,
        format!("database_url = \"sqlite://{}\"\n", third.display()),
    )?;
    let mut cmd = Command::new(binary());
    for name in CLEARED {
        cmd.env_remove(name);
    }
    let out = cmd
        .args(["migrate", "--create", "--config"])
        .arg(&config)
        .current_dir(db.dir.path())
        .output()?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(third.exists());

    // Unsupported scheme and missing configuration file: one line, exit 2, no SQLite fallback.
    let out = Command::new(binary())
        .args(["migrate", "--database-url", "mysql://root:hunter2@db/x"])
        .current_dir(db.dir.path())
        .output()?;
    assert_bad_input(&out, "unsupported database URL scheme `mysql`");
    assert!(!text(&out.stderr).contains("hunter2"));
    // An unreachable PostgreSQL server: one line, without the password.
    let out = Command::new(binary())
        .args([
            "migrate",
            "--database-url",
            "postgres://u:hunter2@127.0.0.1:1/x",
        ])
        .current_dir(db.dir.path())
        .output()?;
    assert_bad_input(&out, "database unavailable");
    assert!(!text(&out.stderr).contains("hunter2"));
    let out = Command::new(binary())
        .args([
            "token",
            "list",
            "--workspace",
            &Uuid::nil().to_string(),
            "--config",
            "nope.toml",
        ])
        .current_dir(db.dir.path())
        .output()?;
    assert_bad_input(&out, "nope.toml");
    Ok(())
}

fn keygen_prints_a_key_the_configuration_accepts(db: &Db) -> TestResult {
    // keygen is offline: it takes no database flags.
    let out = apidrift_e2e::run(&["keygen"]);
    assert!(out.status.success());
    let key = text(&out.stdout);
    let parsed = SecretKey::parse(&key, "keygen output")?;
    let url = db.url();
    assert_bad_input(
        &apidrift_e2e::run(&["keygen", "--database-url", &url]),
        "--database-url",
    );
    // Accepted as ENDPOINT_SECRET_KEY by `keys rotate` (empty database: nothing to do).
    db.json(&["migrate"])?;
    let rotate = db.run_env(&["keys", "rotate"], &[("ENDPOINT_SECRET_KEY", key.trim())]);
    assert!(rotate.status.success(), "{}", text(&rotate.stderr));
    let report: Value = serde_json::from_slice(&rotate.stdout)?;
    assert_eq!(report["activeKey"], parsed.id().to_string());
    assert_eq!(report["rewrapped"], 0);
    Ok(())
}

/// A runtime for seeding the database through the store directly.
fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, Box<dyn Error>> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f))
}

fn endpoint_row(
    id: Uuid,
    auth: Option<Vec<u8>>,
    headers: Option<Vec<u8>>,
    body: Option<Vec<u8>>,
) -> NewEndpointRow {
    NewEndpointRow {
        id,
        settings: EndpointSettings::new(format!("endpoint {id}"), "https://api.example.com/users"),
        secrets: SealedSecrets {
            auth_type: if auth.is_some() {
                AuthType::Bearer
            } else {
                AuthType::None
            },
            sealed_auth: auth,
            sealed_headers: headers,
            sealed_request_body: body,
        },
        response_contract: None,
        created_at: OffsetDateTime::now_utc(),
    }
}

/// Seeds one workspace with `n` endpoints (sealed auth on all, sealed headers on even ones, a
/// sealed request body on the second) and a baseline on the first, all sealed under `ring`.
/// Returns the workspace id.
async fn seed(db: &Db, ring: &KeyRing, n: usize) -> Result<Uuid, Box<dyn Error>> {
    let store = db.store().await?;
    let ws = new_id();
    store
        .create_workspace(NewWorkspace {
            id: ws,
            name: "Sealed".into(),
            plan: apidrift_model::Plan::Enterprise,
            endpoint_limit: None,
            check_quota: None,
            created_at: OffsetDateTime::now_utc(),
        })
        .await?;
    let mut rows = Vec::new();
    for i in 0..n {
        let id = new_id();
        let auth = ring.seal(
            format!("{{\"token\":\"secret-{i}\"}}").as_bytes(),
            &Binding::new(ws.into_bytes(), id.into_bytes(), Field::EndpointAuth),
        )?;
        let headers = if i % 2 == 0 {
            Some(ring.seal(
                b"{\"X-Tenant\":\"t\"}",
                &Binding::new(ws.into_bytes(), id.into_bytes(), Field::EndpointHeaders),
            )?)
        } else {
            None
        };
        let body = if i == 1 {
            Some(ring.seal(
                b"{\"query\":\"x\"}",
                &Binding::new(ws.into_bytes(), id.into_bytes(), Field::EndpointRequestBody),
            )?)
        } else {
            None
        };
        rows.push(endpoint_row(id, Some(auth), headers, body));
    }
    let first = rows.first().map(|r| r.id).ok_or("no rows")?;
    rows.push(endpoint_row(new_id(), None, None, None));
    store.create_endpoints(ws, rows).await?;
    let baseline_id = new_id();
    store
        .record_baseline(
            ws,
            NewBaseline {
                id: baseline_id,
                endpoint_id: first,
                status: 200,
                content_type: Some("application/json".into()),
                headers: json!({}),
                sealed_body: ring.seal(
                    b"{\"users\":[]}",
                    &Binding::new(
                        ws.into_bytes(),
                        baseline_id.into_bytes(),
                        Field::BaselineBody,
                    ),
                )?,
                shape: json!({}),
                captured_at: OffsetDateTime::now_utc(),
                volatile_paths: Vec::new(),
            },
            None,
        )
        .await?;
    Ok(ws)
}

/// Every sealed value in the database, opened with `ring`; returns the key ids they use.
async fn open_all(db: &Db, ring: &KeyRing) -> Result<Vec<u32>, Box<dyn Error>> {
    let store = db.store().await?;
    let mut ids = Vec::new();
    for &column in SealedField::ALL {
        let field = match column {
            SealedField::EndpointAuth => Field::EndpointAuth,
            SealedField::EndpointHeaders => Field::EndpointHeaders,
            SealedField::EndpointRequestBody => Field::EndpointRequestBody,
            SealedField::BaselineBody => Field::BaselineBody,
            SealedField::CheckBody => Field::CheckBody,
            SealedField::WebhookSecret => Field::WebhookSecret,
            other => return Err(format!("unknown sealed column {}", other.column()).into()),
        };
        for value in store.sealed_values(column, None, 10_000).await? {
            let binding = Binding::new(
                value.workspace_id.into_bytes(),
                value.row_id.into_bytes(),
                field,
            );
            let plain = ring.open(&value.blob, &binding)?;
            assert!(!plain.is_empty());
            ids.push(key_id_of(&value.blob)?.0);
        }
    }
    Ok(ids)
}

fn keys_rotate_reseals_everything_and_is_idempotent(db: &Db) -> TestResult {
    let old = SecretKey::generate()?;
    let new = SecretKey::generate()?;
    let old_ring = KeyRing::new(old.clone(), Vec::new())?;
    block_on(seed(db, &old_ring, 3))??;
    let old_b64 = old.to_base64();
    let new_b64 = new.to_base64();

    // No key configured: bad input.
    assert_bad_input(&db.run(&["keys", "rotate"]), "no secret key configured");
    // A malformed key: one line naming the variable, never the value.
    let out = db.run_env(
        &["keys", "rotate"],
        &[("ENDPOINT_SECRET_KEY", "CANARY-short-key")],
    );
    assert_bad_input(&out, "ENDPOINT_SECRET_KEY");
    assert!(!text(&out.stderr).contains("CANARY"));

    // New key without the old one: nothing opens, exit 1, nothing changed.
    let out = db.run_env(
        &["keys", "rotate"],
        &[("ENDPOINT_SECRET_KEY", new_b64.as_str())],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        report["failed"], 7,
        "3 auth + 2 headers + 1 request body + 1 baseline body"
    );
    assert_eq!(report["rewrapped"], 0);
    assert!(text(&out.stderr).contains("ENDPOINT_SECRET_KEY_PREVIOUS"));
    assert!(
        block_on(open_all(db, &old_ring))??
            .iter()
            .all(|&id| id == old.id().0)
    );

    // With the old key as previous: everything moves to the new key.
    let env = [
        ("ENDPOINT_SECRET_KEY", new_b64.as_str()),
        ("ENDPOINT_SECRET_KEY_PREVIOUS", old_b64.as_str()),
    ];
    let out = db.run_env(&["keys", "rotate"], &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(report["activeKey"], new.id().to_string());
    assert_eq!(
        (
            report["rewrapped"].clone(),
            report["alreadyCurrent"].clone(),
            report["failed"].clone()
        ),
        (json!(7), json!(0), json!(0))
    );
    assert_eq!(report["fields"]["endpoints.sealed_auth"]["rewrapped"], 3);
    assert_eq!(report["fields"]["endpoints.sealed_headers"]["rewrapped"], 2);
    assert_eq!(
        report["fields"]["endpoints.sealed_request_body"]["rewrapped"],
        1
    );
    assert_eq!(report["fields"]["baselines.sealed_body"]["rewrapped"], 1);
    assert_eq!(report["fields"]["checks.sealed_body"]["rewrapped"], 0);

    // Every value opens with the new key alone, and none names the old key.
    let new_only = KeyRing::new(new.clone(), Vec::new())?;
    let ids = block_on(open_all(db, &new_only))??;
    assert_eq!(ids.len(), 7);
    assert!(ids.iter().all(|&id| id == new.id().0));

    // Re-running (as after an interrupted run) changes nothing.
    let out = db.run_env(&["keys", "rotate"], &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        (
            report["rewrapped"].clone(),
            report["alreadyCurrent"].clone()
        ),
        (json!(0), json!(7))
    );
    Ok(())
}

#[test]
fn keys_rotate_uses_the_key_file_beside_the_database() -> TestResult {
    let db = Db::sqlite()?;
    let old = SecretKey::generate()?;
    block_on(seed(&db, &KeyRing::new(old.clone(), Vec::new())?, 1))??;
    let key = apidrift_seal::create_key_file(&db.dir.path().join("apidrift.key"))?;
    let out = db.run_env(
        &["keys", "rotate"],
        &[("ENDPOINT_SECRET_KEY_PREVIOUS", old.to_base64().as_str())],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(report["activeKey"], key.id().to_string());
    assert_eq!(report["rewrapped"], 3);
    Ok(())
}

/// A rotation interrupted after some rows (simulated by rewrapping two values through the store
/// with the same compare-and-swap) is finished by the next run, which skips what was done.
fn keys_rotate_resumes_a_partial_rotation(db: &Db) -> TestResult {
    let old = SecretKey::generate()?;
    let new = SecretKey::generate()?;
    block_on(seed(db, &KeyRing::new(old.clone(), Vec::new())?, 4))??;
    let ring = KeyRing::new(new.clone(), vec![old.clone()])?;
    let done = block_on(async {
        let store = db.store().await?;
        let mut done = 0;
        for value in store
            .sealed_values(SealedField::EndpointAuth, None, 2)
            .await?
        {
            let binding = Binding::new(
                value.workspace_id.into_bytes(),
                value.row_id.into_bytes(),
                Field::EndpointAuth,
            );
            let fresh = ring
                .rewrap(&value.blob, &binding)?
                .ok_or("already rewrapped")?;
            let column = SealedField::EndpointAuth;
            let (ws, row) = (value.workspace_id, value.row_id);
            if store
                .replace_sealed_value(column, ws, row, &value.blob, &fresh)
                .await?
            {
                done += 1;
            }
            // A stale compare-and-swap (the old blob again) changes nothing.
            assert!(
                !store
                    .replace_sealed_value(column, ws, row, &value.blob, &fresh)
                    .await?
            );
        }
        Ok::<_, Box<dyn Error>>(done)
    })??;
    assert_eq!(done, 2);

    let env = [
        ("ENDPOINT_SECRET_KEY", new.to_base64().to_string()),
        ("ENDPOINT_SECRET_KEY_PREVIOUS", old.to_base64().to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = db.run_env(&["keys", "rotate"], &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout)?;
    // 4 auth + 2 headers + 1 request body + 1 baseline body, two of them already done.
    assert_eq!(report["rewrapped"], 6);
    assert_eq!(report["alreadyCurrent"], 2);
    assert_eq!(
        report["fields"]["endpoints.sealed_auth"]["alreadyCurrent"],
        2
    );
    let ids = block_on(open_all(db, &KeyRing::new(new.clone(), Vec::new())?))??;
    assert_eq!(ids.len(), 8);
    assert!(ids.iter().all(|&id| id == new.id().0));
    Ok(())
}
