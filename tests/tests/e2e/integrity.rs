//! Nothing silent (integrity): an unknown configuration key, in a file or in an `APIDRIFT_`
//! variable, stops the binary with exit 2 naming it and the nearest valid key;
//! `apidrift config check` prints the effective settings without a secret; a new SQLite
//! database is created 0600 whatever the umask.

use apidrift_e2e::{binary, stderr, stdout};
use std::error::Error;
use std::process::{Command, Output, Stdio};

type TestResult = Result<(), Box<dyn Error>>;

/// `apidrift ARGS…` in `dir` with `env` (and no inherited `APIDRIFT_` or key variables).
fn run_in(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> std::io::Result<Output> {
    let mut cmd = Command::new(binary());
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    for name in apidrift_e2e::server::CLEARED {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied()).output()
}

#[test]
fn unknown_configuration_keys_stop_the_start() -> TestResult {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("apidrift.toml");
    std::fs::write(&file, "[servr]\nbind = \"127.0.0.1:0\"\n")?;
    let conf = file.to_string_lossy().into_owned();
    let db = format!("sqlite://{}", dir.path().join("x.db").display());
    let out = run_in(
        dir.path(),
        &["serve", "--config", &conf, "--database-url", &db],
        &[],
    )?;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown key `servr`; did you mean `server`?"),
        "{}",
        stderr(&out)
    );
    // Nothing was created: the start stopped before the database was opened.
    assert!(!dir.path().join("x.db").exists());

    let out = run_in(
        dir.path(),
        &["serve", "--database-url", &db],
        &[("APIDRIFT_SERVR__BIND", "127.0.0.1:0")],
    )?;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("APIDRIFT_SERVR__BIND names no setting; did you mean APIDRIFT_SERVER__BIND?"),
        "{}",
        stderr(&out)
    );
    let out = run_in(
        dir.path(),
        &["config", "check"],
        &[("APIDRIFT_LIMITS__READS_PER_MINUT", "5")],
    )?;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("did you mean APIDRIFT_LIMITS__READS_PER_MINUTE?"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn config_check_prints_the_settings_without_a_secret() -> TestResult {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("apidrift.toml");
    std::fs::write(
        &file,
        "[limits]\nreads_per_minute = 7\n[metrics]\ntoken = \"CANARY-metrics-token\"\n",
    )?;
    let conf = file.to_string_lossy().into_owned();
    let key = "Q0FOQVJZLWtleS0wMTIzNDU2Nzg5MDEyMzQ1Njc4OTA=";
    let out = run_in(
        dir.path(),
        &["config", "check", "--config", &conf],
        &[
            ("ENDPOINT_SECRET_KEY", key),
            (
                "DATABASE_URL",
                "postgres://apidrift:CANARY-db-password@127.0.0.1:5432/apidrift",
            ),
        ],
    )?;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let settings: serde_json::Value = serde_json::from_str(&text)?;
    assert_eq!(settings["limits"]["reads_per_minute"], 7);
    assert_eq!(settings["metrics"]["token"], "<redacted>");
    assert_eq!(settings["secret_key"], "<redacted>");
    assert_eq!(
        settings["database_url"],
        "postgres://apidrift:<redacted>@127.0.0.1:5432/apidrift"
    );
    for secret in ["CANARY", key] {
        assert!(!text.contains(secret), "{text}");
        assert!(!stderr(&out).contains(secret));
    }
    Ok(())
}

/// Under umask 000 (the loosest), a new database and its WAL files are still 0600.
#[cfg(unix)]
#[test]
fn a_new_database_is_private_whatever_the_umask() -> TestResult {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("fresh.db");
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 000 && exec \"$0\" migrate --create --database-url \"$1\"")
        .arg(binary())
        .arg(format!("sqlite://{}", db.display()))
        .current_dir(dir.path())
        .env_remove("DATABASE_URL")
        .output()?;
    assert!(out.status.success(), "{}", stderr(&out));
    for entry in std::fs::read_dir(dir.path())? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("fresh.db") {
            let mode = entry.metadata()?.permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{name} is {mode:o}");
        }
    }
    Ok(())
}

/// A start on a port that is taken exits 2 and creates nothing (no workspace, no key file), so
/// the next start is still the first: it prints the one-time secrets, and they work.
#[test]
fn a_start_that_cannot_listen_creates_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("first.db").display());
    let taken = std::net::TcpListener::bind("127.0.0.1:0")?;
    let bind = taken.local_addr()?.to_string();
    let out = run_in(
        dir.path(),
        &["serve", "--bind", &bind, "--database-url", &url],
        &[],
    )?;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("cannot listen on {bind}")),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("svc_live_"), "{}", stdout(&out));
    assert!(!dir.path().join("apidrift.key").exists());
    let listed = run_in(
        dir.path(),
        &["workspace", "list", "--database-url", &url],
        &[],
    )?;
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert_eq!(stdout(&listed).trim(), "[]");
    drop(taken);

    let server = apidrift_e2e::server::Server::start(dir.path(), &url, &[], &[])?;
    let token = server
        .bootstrap_token
        .clone()
        .ok_or("the next start printed no token")?;
    assert!(
        server.output().contains("one-time password"),
        "{}",
        server.output()
    );
    let res = server
        .request("GET", "/api/v1/endpoints")
        .bearer(&token)
        .send()?;
    assert_eq!(res.status, 200, "{}", res.text());
    Ok(())
}

/// CLI papercuts: suggestions for a mistyped subcommand or flag, plain refusal texts that say how
/// to allow a loopback address, and `--workspace` defaulting to the only workspace.
#[test]
fn the_cli_suggests_and_defaults() -> TestResult {
    let dir = tempfile::tempdir()?;
    let out = run_in(dir.path(), &["difff"], &[])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("'diff'"), "{}", stderr(&out));
    let out = run_in(
        dir.path(),
        &["diff", "--fail-onn", "breaking", "a", "b"],
        &[],
    )?;
    assert!(stderr(&out).contains("'--fail-on'"), "{}", stderr(&out));
    let out = run_in(dir.path(), &["snapshot", "notaurl"], &[])?;
    assert!(
        stderr(&out).contains("the URL must be an absolute http or https URL"),
        "{}",
        stderr(&out)
    );
    let out = run_in(dir.path(), &["snapshot", "http://127.0.0.1:9/x"], &[])?;
    assert!(
        stderr(&out).contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.1/32"),
        "{}",
        stderr(&out)
    );

    let url = format!("sqlite://{}", dir.path().join("cli.db").display());
    let db = ["--database-url", url.as_str()];
    let args = |a: &[&'static str]| -> Vec<String> {
        a.iter()
            .map(|s| (*s).to_owned())
            .chain(db.iter().map(|s| (*s).to_owned()))
            .collect()
    };
    let run = |a: &[&'static str]| -> std::io::Result<Output> {
        let owned = args(a);
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        run_in(dir.path(), &refs, &[])
    };
    assert!(
        run(&["workspace", "create", "--name", "one", "--create"])?
            .status
            .success()
    );
    let out = run(&["token", "create", "--scopes", "endpoints:read"])?;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["token", "list"])?;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("endpoints:read"), "{}", stdout(&out));
    assert!(
        run(&["workspace", "create", "--name", "two"])?
            .status
            .success()
    );
    let out = run(&["token", "list"])?;
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert!(
        text.contains("has 2 workspaces") && text.contains("(one)") && text.contains("(two)"),
        "{text}"
    );
    Ok(())
}
