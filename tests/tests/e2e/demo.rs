//! `apidrift demo`, the real binary, offline: it prints a diff with breaking changes, the
//! console URL and login and an API token; the console and the API answer with what it printed;
//! SIGTERM ends it with status 0 within seconds and its temporary directory is gone.

use apidrift_e2e::server::Server;
use serde_json::Value;
use std::error::Error;
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn Error>>;

/// The last line the demo prints once everything is set up.
const READY: &str = "apidrift demo: serving until Ctrl-C or SIGTERM";

/// Waits (up to `timeout`) until the process's output holds `needle`; the output.
fn wait_for(server: &Server, needle: &str, timeout: Duration) -> Result<String, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let out = server.output();
        if out.contains(needle) {
            return Ok(out);
        }
        if Instant::now() > deadline {
            return Err(format!("{needle:?} not printed within {timeout:?}:\n{out}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The text after `prefix` on the first line that has it, up to the next blank.
fn after<'a>(out: &'a str, prefix: &str) -> Option<&'a str> {
    out.lines()
        .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
        .and_then(|rest| rest.split_whitespace().next())
}

/// The path part of an `http://ADDR/…` URL printed by the demo, checking its address.
fn path_of<'a>(url: &'a str, server: &Server) -> Result<&'a str, String> {
    let rest = url
        .strip_prefix(&format!("http://{}", server.addr))
        .ok_or_else(|| format!("{url} is not on {}", server.addr))?;
    Ok(rest)
}

#[test]
fn demo_shows_a_drift_offline_and_cleans_up_on_sigterm() -> TestResult {
    // The demo's temporary directory goes under TMPDIR: this test's own directory.
    let tmp = tempfile::tempdir()?;
    let tmp_text = tmp.path().display().to_string();
    let mut server = Server::start_command(&["demo"], tmp.path(), &[("TMPDIR", &tmp_text)])?;
    let out = wait_for(&server, READY, Duration::from_secs(60))?;

    // Its own directory under TMPDIR, with the database and the key file in it.
    let dirs: Vec<_> = std::fs::read_dir(tmp.path())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let demo_dir = dirs.first().ok_or("no demo directory")?.clone();
    assert!(
        demo_dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("apidrift-demo-")),
        "{demo_dir:?}"
    );
    assert!(demo_dir.join("apidrift.db").is_file() && demo_dir.join("apidrift.key").is_file());
    assert!(out.contains(&demo_dir.display().to_string()), "{out}");

    // The diff as text: the users API broke, the health check did not change.
    assert!(out.contains("BREAKING  $.email  removed"), "{out}");
    assert!(out.contains("BREAKING  $.id  type_changed"), "{out}");
    assert!(
        out.contains("5 changes: 3 breaking, 1 warning, 1 info"),
        "{out}"
    );
    assert!(out.contains("no changes"), "{out}");
    assert!(!out.contains('\u{1b}'), "no colour on a pipe: {out}");

    // The console: its URL, the login and the diff page's address.
    let console = after(&out, "apidrift: console at ").ok_or("no console URL")?;
    assert_eq!(console, format!("http://{}/console", server.addr));
    assert!(out.contains("apidrift: console user admin@localhost (owner)"));
    let login = server.request("GET", "/console/login").send()?;
    assert_eq!(login.status, 200, "{}", login.text());
    assert!(login.text().contains("password"), "{}", login.text());
    let console_diff = after(&out, "diff in the console: ").ok_or("no console diff URL")?;
    assert!(
        path_of(console_diff, &server)?.starts_with("/console/diffs/"),
        "{console_diff}"
    );

    // The API, with the printed token: the three endpoints and the printed diff.
    let token = server
        .bootstrap_token
        .clone()
        .ok_or("no token printed before the listening line")?;
    assert!(out.contains(&format!("Bearer {token}")), "{out}");
    let res = server
        .request("GET", "/api/v1/endpoints")
        .bearer(&token)
        .send()?;
    assert_eq!(res.status, 200, "{}", res.text());
    let body = res.json();
    let mut names: Vec<&str> = body["endpoints"]
        .as_array()
        .ok_or("no endpoints")?
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["Health", "Orders API: list", "Users API: user 42"],
        "{body}"
    );
    let api_diff = after(&out, "diff in the API:     ").ok_or("no API diff URL")?;
    let res = server
        .request("GET", path_of(api_diff, &server)?)
        .bearer(&token)
        .send()?;
    assert_eq!(res.status, 200, "{}", res.text());
    let diff: Value = res.json();
    let breaking = diff["breakingCount"]
        .as_u64()
        .or_else(|| diff["diff"]["breakingCount"].as_u64())
        .ok_or_else(|| format!("no breakingCount in {diff}"))?;
    assert!(breaking > 0, "{diff}");
    // Without the token the API refuses.
    let res = server.request("GET", "/api/v1/endpoints").send()?;
    assert_eq!(res.status, 401, "{}", res.text());

    // SIGTERM: status 0 within seconds, and the directory is gone.
    let started = Instant::now();
    let status = server.terminate(Duration::from_secs(15))?;
    assert!(status.success(), "{status:?}\n{}", server.output());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(!demo_dir.exists(), "{demo_dir:?} left behind");
    assert_eq!(std::fs::read_dir(tmp.path())?.count(), 0);
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        server.output().contains("apidrift demo: stopped; removed"),
        "{}",
        server.output()
    );
    Ok(())
}

#[test]
fn demo_takes_a_port_and_no_database_flags() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let tmp_text = tmp.path().display().to_string();
    let run = |args: &[&str]| {
        std::process::Command::new(apidrift_e2e::binary())
            .args(args)
            .current_dir(tmp.path())
            .env("TMPDIR", &tmp_text)
            .output()
    };
    let out = run(&["demo", "--database-url", "sqlite://x.db"])?;
    assert_eq!(out.status.code(), Some(2));
    let help = run(&["demo", "--help"])?;
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--port"), "{help}");

    // A port in use: one line naming it, exit 2, and the temporary directory is gone.
    let busy = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = busy.local_addr()?.port().to_string();
    let out = run(&["demo", "--port", &port])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(std::fs::read_dir(tmp.path())?.count(), 0, "nothing left");
    drop(busy);
    Ok(())
}
