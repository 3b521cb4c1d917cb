//! Operating apidrift (issue 17, D23), the real binary:
//!
//! * admin commands refuse to create a database unless `--create`, and name the database they
//!   used on stderr in one line; `workspace list`; `token` reads `APIDRIFT_WORKSPACE`;
//! * `backup --to FILE` while the service writes: the copy passes `PRAGMA integrity_check` and
//!   holds every row acknowledged before the backup began; PostgreSQL is refused (pg_dump);
//! * every subcommand's `--help`: no decision id, no argument without a description, database
//!   flags only where a database is used;
//! * `--color` and `NO_COLOR` under a pseudo-terminal (`script` from util-linux);
//! * bad log settings stop `serve` with a message naming them.

use crate::env::{Backend, Env};
use apidrift_e2e::server::{CLEARED, Server};
use apidrift_e2e::{binary, stderr, stdout};
use serde_json::{Value, json};
use std::error::Error;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type TestResult = Result<(), Box<dyn Error>>;

const ALL_SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
const VARS: &[(&str, &str)] = &[
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "1000000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "1000000"),
    ("APIDRIFT_LIMITS__UNAUTHENTICATED_PER_MINUTE", "1000000"),
];

/// `apidrift ARGS…` in `dir` with a clean environment plus `env`.
fn run_in(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(binary());
    cmd.args(args).current_dir(dir);
    for name in CLEARED {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    match cmd.output() {
        Ok(out) => out,
        Err(e) => panic!("cannot run {}: {e}", binary().display()),
    }
}

/// Exit 2, exactly one line on stderr containing every needle, nothing on stdout.
fn assert_refused(out: &Output, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err:?}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
    assert!(out.stdout.is_empty(), "{}", stdout(out));
}

// ------------------------------------------------------------------- database guard and list

#[test]
fn admin_commands_never_create_a_database_unless_asked() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("apidrift.db");
    let expected = format!("sqlite://{}", std::path::absolute(&db)?.display());
    let nil = "00000000-0000-0000-0000-000000000000";
    // The default database (sqlite://apidrift.db in the working directory) does not exist.
    for args in [
        vec!["workspace", "list"],
        vec!["workspace", "create", "--name", "x"],
        vec!["migrate"],
        vec!["token", "list", "--workspace", nil],
        vec!["user", "list"],
        vec!["webhook", "list", "--workspace", nil],
        vec!["keys", "rotate"],
        vec!["backup", "--to", "copy.db"],
    ] {
        let out = run_in(dir.path(), &args, &[]);
        assert_refused(&out, &["no database at", &expected]);
        assert!(!db.exists(), "{args:?} created the database");
    }
    let out = run_in(dir.path(), &["workspace", "list"], &[]);
    assert!(stderr(&out).contains("--create"));
    let out = run_in(dir.path(), &["token", "list", "--workspace", nil], &[]);
    assert!(stderr(&out).contains("apidrift migrate --create"));
    // In memory: a new database every time, so refused too.
    let out = run_in(
        dir.path(),
        &["workspace", "list", "--database-url", "sqlite::memory:"],
        &[],
    );
    assert_refused(&out, &["sqlite::memory:"]);

    // --create makes it; stderr names the database in one line.
    let out = run_in(
        dir.path(),
        &["workspace", "create", "--name", "First", "--create"],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), format!("apidrift: database {expected}\n"));
    let first: Value = serde_json::from_slice(&out.stdout)?;
    assert!(db.exists());
    let out = run_in(
        dir.path(),
        &["workspace", "create", "--name", "Second", "--plan", "free"],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let second: Value = serde_json::from_slice(&out.stdout)?;

    // workspace list: a JSON array of the same objects, oldest first.
    let out = run_in(dir.path(), &["workspace", "list"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 1);
    let list: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(list, json!([first, second]));
    assert_eq!(stderr(&out), format!("apidrift: database {expected}\n"));

    // A failure names the database on its one line too.
    let out = run_in(dir.path(), &["token", "list", "--workspace", nil], &[]);
    assert_refused(&out, &["not found", &format!("(database {expected})")]);

    // token honours APIDRIFT_WORKSPACE like the other workspace-scoped commands.
    let ws = first["id"].as_str().ok_or("no id")?;
    let env = [("APIDRIFT_WORKSPACE", ws)];
    let out = run_in(dir.path(), &["token", "create", "--name", "ci"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run_in(dir.path(), &["token", "list"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let tokens: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(tokens[0]["workspaceId"], ws);
    assert_eq!(tokens[0]["name"], "ci");
    Ok(())
}

#[test]
fn postgres_databases_are_named_without_their_password() -> TestResult {
    let Some(env) = Env::new(Backend::Postgres, &[])? else {
        return Ok(());
    };
    let out = env.run(&["workspace", "list"])?;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout)?, json!([]));
    let line = stderr(&out);
    assert!(
        line.starts_with("apidrift: database postgres") && line.lines().count() == 1,
        "{line}"
    );
    // backup refuses PostgreSQL, pointing at pg_dump.
    let out = env.run(&["backup", "--to", "copy.db"])?;
    assert_refused(&out, &["pg_dump"]);
    assert!(!env.dir.path().join("copy.db").exists());
    Ok(())
}

// ------------------------------------------------------------------------------------- backup

/// Every `(name)` in the copy's endpoints table, after checking the file with
/// `PRAGMA integrity_check`.
fn read_copy(path: &std::path::Path) -> Result<Vec<String>, Box<dyn Error>> {
    use diesel::prelude::*;
    use diesel::sql_types::Text;
    #[derive(QueryableByName)]
    struct Check {
        #[diesel(sql_type = Text)]
        integrity_check: String,
    }
    #[derive(QueryableByName)]
    struct Name {
        #[diesel(sql_type = Text)]
        name: String,
    }
    let mut conn = SqliteConnection::establish(&path.display().to_string())?;
    let check: Vec<Check> = diesel::sql_query("PRAGMA integrity_check").load(&mut conn)?;
    let verdict: Vec<&str> = check.iter().map(|c| c.integrity_check.as_str()).collect();
    assert_eq!(verdict, ["ok"], "integrity_check of the copy");
    let names: Vec<Name> = diesel::sql_query("SELECT name FROM endpoints").load(&mut conn)?;
    Ok(names.into_iter().map(|n| n.name).collect())
}

#[test]
fn backup_while_the_service_writes_holds_every_acknowledged_row() -> TestResult {
    let Some(env) = Env::new(Backend::Sqlite, VARS)? else {
        return Ok(());
    };
    let ws = env.cli(&["workspace", "create", "--name", "b"])?["id"]
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
        "admin",
    ])?["token"]
        .as_str()
        .ok_or("no token")?
        .to_owned();
    let server = env.serve(&[])?;

    // A writer creates endpoints one by one; a name is acknowledged once its 201 is read.
    let acked: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acked, stop) = (acked.clone(), stop.clone());
        let request = server.request("POST", "/api/v1/endpoints").bearer(&token);
        std::thread::spawn(move || -> Result<usize, String> {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let name = format!("e{n}");
                let body = json!({"name": name, "url": format!("https://api.example.com/{name}")});
                let res = request.clone().json(&body).send()?;
                if res.status != 201 {
                    return Err(format!("create answered {}: {}", res.status, res.text()));
                }
                acked.lock().map_err(|e| e.to_string())?.push(name);
                n += 1;
            }
            Ok(n)
        })
    };
    let count = || acked.lock().map(|a| a.len()).unwrap_or(0);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while count() < 30 {
        assert!(std::time::Instant::now() < deadline, "the writer is stuck");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before: Vec<String> = acked.lock().map(|a| a.clone()).unwrap_or_default();
    let target = env.dir.path().join("backup.db");
    let out = env.run(&["backup", "--to", "backup.db"])?;
    let during = count();
    // Let the writer go on a little after the backup, then stop it.
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().map_err(|_| "writer panicked")??;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        written > during && during >= before.len(),
        "the service kept writing"
    );
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(report["backend"], "sqlite");
    assert_eq!(report["to"], target.display().to_string());
    assert!(report["bytes"].as_u64().is_some_and(|b| b > 0));
    assert!(stderr(&out).starts_with("apidrift: database sqlite://"));

    let copied = read_copy(&target)?;
    for name in &before {
        assert!(
            copied.contains(name),
            "{name} acknowledged before the backup is missing"
        );
    }
    assert!(copied.len() <= written, "{} > {written}", copied.len());

    // The copy is a working database: a server starts on it and lists the endpoints.
    drop(server);
    let copy_url = format!("sqlite://{}", target.display());
    let restored = Server::start(
        env.dir.path(),
        &copy_url,
        &["--no-bootstrap"],
        &[("ENDPOINT_SECRET_KEY", env.key.as_str())],
    )?;
    let res = restored
        .request("GET", "/api/v1/endpoints?limit=1")
        .bearer(&token)
        .send()?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(
        res.json()["pagination"]["total"].as_u64(),
        Some(copied.len() as u64)
    );

    // Never overwrites; never writes into a missing folder.
    let out = env.run(&["backup", "--to", "backup.db"])?;
    assert_refused(&out, &["already exists"]);
    let out = env.run(&["backup", "--to", "no-such-dir/x.db"])?;
    assert_refused(&out, &["does not exist"]);
    Ok(())
}

// ------------------------------------------------------------------------------------- --help

/// Subcommand names listed under `Commands:` of a help text (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_owned)
        .collect()
}

/// Every argument line of a short (`-h`) help text and its description (empty when none).
fn arguments(help: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = "";
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            section = line;
            continue;
        }
        if section != "Arguments:" && section != "Options:" {
            continue;
        }
        let trimmed = line.trim_start();
        if !(trimmed.starts_with('-') || trimmed.starts_with('<') || trimmed.starts_with('[')) {
            continue;
        }
        // The argument is up to the first run of two spaces; the description follows.
        let (arg, description) = match trimmed.find("  ") {
            Some(i) => (&trimmed[..i], trimmed[i..].trim()),
            None => (trimmed, ""),
        };
        out.push((arg.to_owned(), description.to_owned()));
    }
    out
}

fn help_of(path: &[String]) -> String {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("-h");
    let out = run_in(std::env::temp_dir().as_path(), &args, &[]);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn every_help_text_is_clean() -> TestResult {
    let offline = ["diff", "validate", "keygen", "snapshot", "demo"];
    let with_database = [
        "serve",
        "migrate",
        "workspace",
        "token",
        "user",
        "keys",
        "backup",
        "baseline",
        "contract",
        "endpoint",
        "webhook",
        // On the database, or with --server through the API (the database flags are then
        // unused).
        "apply",
        "export",
        // Checks the configuration as the database commands read it (`--config`, and the
        // database URL it shows).
        "config",
    ];
    let mut queue: Vec<Vec<String>> = vec![Vec::new()];
    let mut seen = 0;
    while let Some(path) = queue.pop() {
        let help = help_of(&path);
        seen += 1;
        let name = if path.is_empty() {
            "apidrift".to_owned()
        } else {
            path.join(" ")
        };
        // No decision id like (D11) or (D14 rules).
        let bytes = help.as_bytes();
        for (i, w) in bytes.windows(3).enumerate() {
            assert!(
                !(w[0] == b'(' && w[1] == b'D' && w[2].is_ascii_digit()),
                "{name}: decision id at {i}: {help}"
            );
        }
        for (arg, description) in arguments(&help) {
            assert!(
                !description.is_empty(),
                "{name}: {arg} has no description:\n{help}"
            );
        }
        let top = path.first().map(String::as_str).unwrap_or_default();
        let has_db_flags = help.contains("--database-url") || help.contains("--config");
        if offline.contains(&top) || path.is_empty() {
            assert!(!has_db_flags, "{name} shows database flags:\n{help}");
        } else if with_database.contains(&top) {
            assert!(
                help.contains("--database-url") && help.contains("--config"),
                "{name} lacks the database flags:\n{help}"
            );
        } else {
            panic!("{name}: a subcommand this test does not know about: classify it");
        }
        assert!(help.contains("--color"), "{name} lacks --color");
        for sub in subcommands(&help) {
            let mut next = path.clone();
            next.push(sub);
            queue.push(next);
        }
    }
    assert!(seen >= 30, "only {seen} help texts visited");
    Ok(())
}

// ------------------------------------------------------------------------------------- colour

/// Runs `apidrift ARGS…` under a pseudo-terminal (`script -qec`), returning what it printed.
fn under_pty(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut line = binary().display().to_string();
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .current_dir(dir)
        .env("TERM", "xterm-256color");
    for name in CLEARED {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    match cmd.output() {
        Ok(out) => stdout(&out),
        Err(e) => panic!(
            "cannot run `script` ({e}): install util-linux (Debian: bsdutils) for the colour tests"
        ),
    }
}

#[test]
fn color_follows_the_flag_and_no_color() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("a.json"), r#"{"id":1,"name":"x"}"#)?;
    std::fs::write(dir.path().join("b.json"), r#"{"id":"1"}"#)?;
    let diff = ["diff", "a.json", "b.json"];
    let with = |extra: &[&'static str]| {
        let mut args: Vec<&str> = diff.to_vec();
        args.extend_from_slice(extra);
        args
    };
    const ESC: &str = "\u{1b}[";
    // A terminal gets colour by default (this also proves the pseudo-terminal works).
    let auto = under_pty(dir.path(), &diff, &[]);
    assert!(auto.contains("BREAKING") && auto.contains(ESC), "{auto:?}");
    // NO_COLOR (any non-empty value) turns it off; --color always wins over NO_COLOR.
    let no_color = under_pty(dir.path(), &diff, &[("NO_COLOR", "1")]);
    assert!(
        no_color.contains("BREAKING") && !no_color.contains('\u{1b}'),
        "{no_color:?}"
    );
    let forced = under_pty(
        dir.path(),
        &with(&["--color", "always"]),
        &[("NO_COLOR", "1")],
    );
    assert!(forced.contains(ESC), "{forced:?}");
    let never = under_pty(dir.path(), &with(&["--color=never"]), &[]);
    assert!(
        never.contains("BREAKING") && !never.contains('\u{1b}'),
        "{never:?}"
    );
    // The flag is global: before the subcommand too.
    let mut before = vec!["--color", "never"];
    before.extend_from_slice(&diff);
    assert!(!under_pty(dir.path(), &before, &[]).contains('\u{1b}'));
    // Into a pipe: plain unless forced.
    let piped = run_in(dir.path(), &diff, &[]);
    assert!(!stdout(&piped).contains('\u{1b}'));
    let piped = run_in(dir.path(), &with(&["--color", "always"]), &[]);
    assert!(stdout(&piped).contains(ESC));

    // clap's help follows the same choice.
    let help = under_pty(dir.path(), &["diff", "--help"], &[]);
    assert!(help.contains(ESC), "help on a terminal: {help:?}");
    for (args, env) in [
        (vec!["diff", "--help"], vec![("NO_COLOR", "1")]),
        (vec!["--color", "never", "diff", "--help"], vec![]),
        (vec!["diff", "--color=never", "--help"], vec![]),
    ] {
        let text = under_pty(dir.path(), &args, &env);
        assert!(
            text.contains("Usage") && !text.contains('\u{1b}'),
            "{args:?} {env:?}: {text:?}"
        );
    }
    Ok(())
}

// ----------------------------------------------------------------------------------- log setup

#[test]
fn bad_log_settings_stop_serve_with_a_clear_message() -> TestResult {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("logs.db").display());
    for (env, needle) in [
        (("APIDRIFT_LOG", "apidrift=loud"), "`apidrift=loud`"),
        (("APIDRIFT_LOG", "info,apidrift debug"), "`apidrift debug`"),
        (("APIDRIFT_LOG_FORMAT", "xml"), "xml"),
    ] {
        let err = Server::start(dir.path(), &url, &[], &[env])
            .err()
            .ok_or("serve started with a bad log setting")?;
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    // Directives with several targets are accepted.
    let server = Server::start(
        dir.path(),
        &url,
        &[],
        &[("APIDRIFT_LOG", "apidrift=debug,actix_web=warn")],
    )?;
    assert!(server.request("GET", "/healthz").send()?.status == 200);
    Ok(())
}
