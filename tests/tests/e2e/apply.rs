//! Monitors as code end to end (issue 26, D25), on SQLite and PostgreSQL, through each front
//! door: `POST /api/v1/apply`, `apidrift apply --server` against a running server with a token,
//! and `apidrift apply` directly on the database. Each flow applies 50 keyed endpoints (secrets
//! given as `${SECRET}`), applies again (all unchanged, nothing written: `updatedAt` stays),
//! changes 3 and drops 2 (a dry run says exactly that and changes nothing; with prune, 3 updated
//! and 2 deleted), sends invalid files (bad URL, duplicate key, missing variable: 400 or exit 2
//! naming it, nothing written), and exports the workspace: the file holds no secret, and applying
//! it back is all unchanged. The endpoints are never fetched (no schedule).

use apidrift_e2e::server::Server;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::error::Error;
use std::path::PathBuf;

use crate::env::{Backend, Env};

type TestResult = Result<(), Box<dyn Error>>;

const CANARY: &str = "canary-apply-secret-7f3a";
const CANARY2: &str = "canary-apply-secret-rotated-19c4";
const SCOPES: &str = "endpoints:read,endpoints:write";
const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
];

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
    apply_through_the_api,
    apply_through_the_cli_and_a_server,
    apply_on_the_database
);

/// The monitors file of the flow: 50 keyed endpoints, `svc-07` with a bearer credential and
/// `svc-08` with a header, both `${SECRET}`.
fn file50() -> Value {
    let entries: Vec<Value> = (0..50)
        .map(|i| {
            let mut e = json!({
                "key": format!("svc-{i:02}"),
                "name": format!("Service {i}"),
                "url": format!("https://api.example.com/svc/{i}"),
                "tags": ["apply", "e2e"],
            });
            if i == 7 {
                e["auth"] = json!({"type": "bearer", "token": "${SECRET}"});
            }
            if i == 8 {
                e["headers"] = json!({"X-Api-Key": "${SECRET}"});
            }
            e
        })
        .collect();
    json!({ "endpoints": entries })
}

/// `file50` with 3 entries changed (name, timeoutMs, the credential) and the last 2 dropped.
fn changed_file() -> Value {
    let mut file = file50();
    let entries = file["endpoints"].as_array_mut().map(std::mem::take);
    let mut entries = entries.unwrap_or_default();
    entries.truncate(48);
    entries[0]["name"] = json!("Service zero, renamed");
    entries[1]["timeoutMs"] = json!(4000);
    entries[7]["auth"] = json!({"type": "bearer", "token": "${SECRET2}"});
    json!({ "endpoints": entries })
}

/// What an apply answered: the result, or the failure text (an HTTP status or exit 2).
#[derive(Debug)]
enum Outcome {
    Done(Value),
    Refused(String),
}

impl Outcome {
    fn done(self) -> Result<Value, Box<dyn Error>> {
        match self {
            Outcome::Done(v) => Ok(v),
            Outcome::Refused(e) => Err(format!("apply refused: {e}").into()),
        }
    }

    fn refused(self) -> Result<String, Box<dyn Error>> {
        match self {
            Outcome::Refused(e) => Ok(e),
            Outcome::Done(v) => Err(format!("apply should have been refused: {v}").into()),
        }
    }
}

/// A front door of apply.
enum Door<'a> {
    Api { server: &'a Server, token: String },
    CliServer { server: &'a Server, token: String },
    CliDb,
}

struct Flow<'a> {
    env: &'a Env,
    door: Door<'a>,
    n: usize,
}

impl Flow<'_> {
    fn path(&mut self, ext: &str) -> PathBuf {
        self.n += 1;
        self.env
            .dir
            .path()
            .join(format!("monitors-{}.{ext}", self.n))
    }

    /// Applies `file` (with its `${…}` placeholders) through the door; `vars` is the
    /// environment of the CLI (the API door fills the placeholders itself, as a client would).
    fn apply(
        &mut self,
        file: &Value,
        prune: bool,
        dry_run: bool,
        vars: &[(&str, &str)],
    ) -> Result<Outcome, Box<dyn Error>> {
        if let Door::Api { server, token } = &self.door {
            let mut text = file.to_string();
            for (name, value) in vars {
                text = text.replace(&format!("${{{name}}}"), value);
            }
            let mut body: Value = serde_json::from_str(&text)?;
            body["prune"] = json!(prune);
            body["dryRun"] = json!(dry_run);
            let res = server
                .request("POST", "/api/v1/apply")
                .bearer(token)
                .json(&body)
                .send()?;
            return Ok(match res.status {
                200 => Outcome::Done(res.json()),
                s => Outcome::Refused(format!("{s} {}", res.text())),
            });
        }
        let path = self.path("json");
        std::fs::write(&path, file.to_string())?;
        self.apply_path(&path, prune, dry_run, vars)
    }

    fn apply_path(
        &mut self,
        path: &std::path::Path,
        prune: bool,
        dry_run: bool,
        vars: &[(&str, &str)],
    ) -> Result<Outcome, Box<dyn Error>> {
        let path = path.display().to_string();
        let mut args = vec!["apply", "-f", &path, "--json"];
        if prune {
            args.push("--prune");
        }
        if dry_run {
            args.push("--dry-run");
        }
        let server_url;
        let mut cmd = self.env.command(&args);
        match &self.door {
            Door::Api { server, token } | Door::CliServer { server, token } => {
                server_url = format!("http://{}", server.addr);
                cmd.arg("--server").arg(&server_url);
                cmd.env("APIDRIFT_TOKEN", token);
            }
            Door::CliDb => {}
        }
        cmd.envs(vars.iter().copied());
        let out = cmd.output()?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        Ok(match out.status.code() {
            Some(0) => Outcome::Done(serde_json::from_slice(&out.stdout)?),
            Some(2) => {
                assert!(out.stdout.is_empty(), "a refused apply printed a plan");
                Outcome::Refused(stderr)
            }
            other => return Err(format!("apply exited {other:?}: {stderr}").into()),
        })
    }

    /// Every endpoint of the workspace: key (or `name` for an unkeyed one) → the endpoint.
    fn endpoints(&self) -> Result<BTreeMap<String, Value>, Box<dyn Error>> {
        let list = match &self.door {
            Door::Api { server, token } | Door::CliServer { server, token } => server
                .request("GET", "/api/v1/endpoints?limit=100")
                .bearer(token)
                .send()?
                .json(),
            Door::CliDb => self.env.cli(&["endpoint", "list", "--limit", "100"])?,
        };
        let items = list["endpoints"].as_array().ok_or("no endpoint list")?;
        Ok(items
            .iter()
            .map(|e| {
                let name = e["key"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("unkeyed:{}", e["name"].as_str().unwrap_or("")));
                (name, e.clone())
            })
            .collect())
    }

    /// `apidrift export -o FILE`: the file's text and stderr.
    fn export(&mut self) -> Result<(PathBuf, String, String), Box<dyn Error>> {
        let path = self.path("yaml");
        let shown = path.display().to_string();
        let out = self.env.run(&["export", "-o", &shown])?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Err(format!("export failed: {stderr}").into());
        }
        Ok((path.clone(), std::fs::read_to_string(&path)?, stderr))
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn updated(all: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    all.iter()
        .map(|(k, e)| (k.clone(), e["updatedAt"].clone()))
        .collect()
}

/// The flow every door runs (see the module).
fn flow(f: &mut Flow<'_>, unkeyed: bool) -> TestResult {
    let secret = [("SECRET", CANARY)];
    let both = [("SECRET", CANARY), ("SECRET2", CANARY2)];

    // 50 created.
    let r = f.apply(&file50(), false, false, &secret)?.done()?;
    assert_eq!(r["applied"], json!(true), "{r}");
    assert_eq!(strings(&r["plan"]["create"]).len(), 50, "{r}");
    assert_eq!(strings(&r["plan"]["create"])[0], "svc-00");
    assert_eq!(r["plan"]["unchanged"], json!(0));
    let first = f.endpoints()?;
    let keyed = first.keys().filter(|k| k.starts_with("svc-")).count();
    assert_eq!(keyed, 50);
    assert_eq!(first["svc-07"]["authType"], json!("bearer"));
    assert_eq!(first["svc-03"]["key"], json!("svc-03"));
    std::thread::sleep(std::time::Duration::from_millis(20));

    // Again: all unchanged, nothing written.
    let r = f.apply(&file50(), false, false, &secret)?.done()?;
    assert_eq!(
        r["plan"],
        json!({"create": [], "update": [], "delete": [], "unchanged": 50}),
        "{r}"
    );
    assert_eq!(updated(&f.endpoints()?), updated(&first));

    // Change 3, drop 2: the dry run says exactly that and writes nothing.
    let r = f.apply(&changed_file(), true, true, &both)?.done()?;
    assert_eq!(
        r,
        json!({"plan": {
            "create": [],
            "update": [
                {"key": "svc-00", "fields": ["name"]},
                {"key": "svc-01", "fields": ["timeoutMs"]},
                {"key": "svc-07", "fields": ["auth"]},
            ],
            "delete": ["svc-48", "svc-49"],
            "unchanged": 45,
        }, "applied": false})
    );
    assert_eq!(f.endpoints()?, first);

    // Without prune the dropped ones stay.
    let r = f.apply(&changed_file(), false, true, &both)?.done()?;
    assert_eq!(r["plan"]["delete"], json!([]));

    // With prune: 3 updated, 2 deleted; the others (and an unkeyed endpoint) untouched.
    let r = f.apply(&changed_file(), true, false, &both)?.done()?;
    assert_eq!(r["applied"], json!(true));
    assert_eq!(r["plan"]["update"].as_array().map(Vec::len), Some(3));
    assert_eq!(strings(&r["plan"]["delete"]), ["svc-48", "svc-49"]);
    let after = f.endpoints()?;
    assert_eq!(after.keys().filter(|k| k.starts_with("svc-")).count(), 48);
    assert!(!after.contains_key("svc-48") && !after.contains_key("svc-49"));
    assert_eq!(after["svc-00"]["name"], json!("Service zero, renamed"));
    assert_eq!(after["svc-01"]["timeoutMs"], json!(4000));
    for k in ["svc-00", "svc-01", "svc-07"] {
        assert_ne!(after[k]["updatedAt"], first[k]["updatedAt"], "{k}");
    }
    for k in ["svc-02", "svc-08", "svc-47"] {
        assert_eq!(after[k], first[k], "{k}");
    }
    if unkeyed {
        assert!(
            after.contains_key("unkeyed:hand-made"),
            "prune deleted an unkeyed endpoint"
        );
    }

    // Invalid files: refused naming the entry and the field; nothing written.
    let mut bad_url = changed_file();
    bad_url["endpoints"][5]["url"] = json!("not a url");
    let e = f.apply(&bad_url, true, false, &both)?.refused()?;
    assert!(
        e.contains("entry \\\"svc-05\\\": url") || e.contains("entry \"svc-05\": url"),
        "{e}"
    );
    let mut dup = changed_file();
    dup["endpoints"][9]["key"] = json!("svc-03");
    let e = f.apply(&dup, true, false, &both)?.refused()?;
    assert!(
        e.contains("svc-03") && e.contains("key: named twice"),
        "{e}"
    );
    let mut unkeyed_entry = changed_file();
    if let Some(e) = unkeyed_entry["endpoints"][2].as_object_mut() {
        e.remove("key");
    }
    let e = f.apply(&unkeyed_entry, true, false, &both)?.refused()?;
    assert!(e.contains("entry 2: key: required"), "{e}");
    if !matches!(f.door, Door::Api { .. }) {
        // SECRET2 missing from the CLI's environment: exit 2 naming it, before anything is sent.
        let e = f.apply(&changed_file(), true, false, &secret)?.refused()?;
        assert!(
            e.contains("environment variable SECRET2 is not set") && e.contains("svc-07"),
            "{e}"
        );
    }
    assert_eq!(f.endpoints()?, after);

    // Export: no secret in the file; applied back with its variables set, all unchanged.
    let (path, text, stderr) = f.export()?;
    for canary in [CANARY, CANARY2] {
        assert!(!text.contains(canary), "the export holds a secret:\n{text}");
        assert!(
            !stderr.contains(canary),
            "export printed a secret: {stderr}"
        );
    }
    assert!(
        text.contains("${APIDRIFT_SECRET_SVC_07_AUTH_TOKEN}"),
        "{text}"
    );
    assert!(
        text.contains("${APIDRIFT_SECRET_SVC_08_HEADER_X_API_KEY}"),
        "{text}"
    );
    if unkeyed {
        assert!(
            stderr.contains("left out endpoint \"hand-made\""),
            "{stderr}"
        );
    }
    let vars = [
        ("APIDRIFT_SECRET_SVC_07_AUTH_TOKEN", CANARY2),
        ("APIDRIFT_SECRET_SVC_08_HEADER_X_API_KEY", CANARY),
    ];
    let r = f.apply_path(&path, true, false, &vars)?.done()?;
    assert_eq!(
        r["plan"],
        json!({"create": [], "update": [], "delete": [], "unchanged": 48}),
        "{r}"
    );
    assert_eq!(f.endpoints()?, after);
    // With a variable of another value, the credential is an update of `auth` only.
    let other = [
        vars[0],
        ("APIDRIFT_SECRET_SVC_08_HEADER_X_API_KEY", "other"),
    ];
    let r = f.apply_path(&path, false, true, &other)?.done()?;
    assert_eq!(
        r["plan"]["update"],
        json!([{"key": "svc-08", "fields": ["headers"]}])
    );
    Ok(())
}

/// An environment with a workspace and an admin token: (env, workspace id, token).
type Setup = (Env, String, String);

fn setup(backend: Backend) -> Result<Option<Setup>, Box<dyn Error>> {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(None);
    };
    let (ws, token) = env.workspace_and_token(&[], SCOPES, "admin")?;
    Ok(Some((env, ws, token)))
}

fn apply_through_the_api(backend: Backend) -> TestResult {
    let Some((env, ws, token)) = setup(backend)? else {
        return Ok(());
    };
    let server = env.serve(&[])?;
    // A member may create endpoints but not apply a file.
    let member = env.cli(&[
        "token",
        "create",
        "--workspace",
        &ws,
        "--scopes",
        SCOPES,
        "--role",
        "member",
    ])?["token"]
        .as_str()
        .ok_or("no token")?
        .to_owned();
    let res = server
        .request("POST", "/api/v1/apply")
        .bearer(&member)
        .json(&json!({"endpoints": []}))
        .send()?;
    assert_eq!(res.status, 403, "{}", res.text());
    // An endpoint without a key, and a create with a key that is then taken.
    let res = server
        .request("POST", "/api/v1/endpoints")
        .bearer(&token)
        .json(&json!([
            {"name": "hand-made", "url": "https://api.example.com/hand"},
            {"name": "keyed", "key": "svc-00", "url": "https://api.example.com/keyed"},
            {"name": "again", "key": "svc-00", "url": "https://api.example.com/again"},
        ]))
        .send()?;
    assert_eq!(res.status, 201, "{}", res.text());
    let created = res.json();
    assert_eq!(created["created"], json!(2));
    assert_eq!(
        created["skipped"][0]["reason"],
        json!("key: svc-00 is already used by another endpoint of the workspace")
    );
    let keyed_id = created["endpoints"][1]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    // A set key is immutable.
    let res = server
        .request("PATCH", &format!("/api/v1/endpoints/{keyed_id}"))
        .bearer(&token)
        .json(&json!({"key": "other"}))
        .send()?;
    assert_eq!(res.status, 400, "{}", res.text());
    assert!(res.text().contains("key: cannot be changed once set"));
    let res = server
        .request("DELETE", &format!("/api/v1/endpoints/{keyed_id}"))
        .bearer(&token)
        .send()?;
    assert!(res.status < 300, "{}", res.text());
    let mut f = Flow {
        env: &env,
        door: Door::Api {
            server: &server,
            token,
        },
        n: 0,
    };
    flow(&mut f, true)?;
    for canary in [CANARY, CANARY2] {
        assert!(!server.output().contains(canary), "the log holds a secret");
    }
    Ok(())
}

fn apply_through_the_cli_and_a_server(backend: Backend) -> TestResult {
    let Some((env, _ws, token)) = setup(backend)? else {
        return Ok(());
    };
    let server = env.serve(&[])?;
    let res = server
        .request("POST", "/api/v1/endpoints")
        .bearer(&token)
        .json(&json!({"name": "hand-made", "url": "https://api.example.com/hand"}))
        .send()?;
    assert_eq!(res.status, 201, "{}", res.text());
    // Without a token: exit 2 naming the variable.
    let path = env.dir.path().join("empty.json");
    std::fs::write(&path, r#"{"endpoints": []}"#)?;
    let shown = path.display().to_string();
    let url = format!("http://{}", server.addr);
    let out = env
        .command(&["apply", "-f", &shown, "--server", &url])
        .output()?;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("APIDRIFT_TOKEN"));
    let mut f = Flow {
        env: &env,
        door: Door::CliServer {
            server: &server,
            token,
        },
        n: 0,
    };
    flow(&mut f, true)?;
    for canary in [CANARY, CANARY2] {
        assert!(!server.output().contains(canary), "the log holds a secret");
    }
    Ok(())
}

fn apply_on_the_database(backend: Backend) -> TestResult {
    let Some((env, _ws, _token)) = setup(backend)? else {
        return Ok(());
    };
    let mut f = Flow {
        env: &env,
        door: Door::CliDb,
        n: 0,
    };
    flow(&mut f, false)?;
    // A YAML file, with the human-readable plan.
    let yaml = "# monitors\nendpoints:\n  - key: yaml-one\n    name: From YAML\n    url: https://api.example.com/yaml\n    tags: [a, b]\n    auth: {type: bearer, token: \"${SECRET}\"}\n";
    let path = env.dir.path().join("monitors.yaml");
    std::fs::write(&path, yaml)?;
    let shown = path.display().to_string();
    let out = env
        .command(&["apply", "-f", &shown, "--dry-run"])
        .env("SECRET", CANARY)
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        "create     yaml-one\n1 to create, 0 to update, 0 to delete, 0 unchanged (dry run, nothing changed)\n"
    );
    let out = env
        .command(&["apply", "-f", &shown])
        .env("SECRET", CANARY)
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = env.cli(&["endpoint", "list"])?;
    assert_eq!(listed["endpoints"][0]["key"], json!("yaml-one"));
    assert_eq!(listed["endpoints"][0]["tags"], json!(["a", "b"]));
    Ok(())
}
