//! What the service takes in before it knows who is asking (security round two): an anonymous
//! client cannot make it buffer a request body (the console reads a form only after the session
//! check, and only to the route's limit), YAML nested so deep that the parser's work would
//! explode is refused before it runs, reading a document stops at the documented time budget,
//! and listing a document's operations spends the `checks` rate budget.

use crate::console::{self, Console, csrf_of};
use serde_json::{Value, json};
use std::error::Error;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn Error>>;

const MIB: usize = 1024 * 1024;

/// Resident memory of a process, in bytes (Linux).
fn rss(pid: u32) -> Result<u64, Box<dyn Error>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or("no VmRSS line")?;
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .ok_or("no VmRSS value")?
        .parse()?;
    Ok(kb * 1024)
}

/// Sends `POST path` without a session: `declared` bytes announced by `Content-Length` (or a
/// chunked body when `None`), `send` bytes of it sent (stopping quietly when the server closes
/// the connection), then the connection held for `hold`. Returns the bytes the server took.
fn anonymous_post(
    addr: std::net::SocketAddr,
    path: &str,
    declared: Option<usize>,
    send: usize,
    hold: Duration,
) -> Result<usize, Box<dyn Error>> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let length = match declared {
        Some(n) => format!("Content-Length: {n}\r\n"),
        None => "Transfer-Encoding: chunked\r\n".to_owned(),
    };
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\n{length}\r\n"
    );
    stream.write_all(head.as_bytes())?;
    let chunk = vec![b'a'; MIB];
    let mut sent = 0;
    while sent < send {
        let n = MIB.min(send - sent);
        let written = if declared.is_some() {
            stream.write_all(&chunk[..n])
        } else {
            stream
                .write_all(format!("{n:x}\r\n").as_bytes())
                .and_then(|()| stream.write_all(&chunk[..n]))
                .and_then(|()| stream.write_all(b"\r\n"))
        };
        if written.is_err() {
            break;
        }
        sent += n;
    }
    std::thread::sleep(hold);
    Ok(sent)
}

/// Three connections that send 90 MiB and hold back the last byte, a chunked one, and four
/// complete anonymous 90 MiB posts to the console's import form leave the server's resident
/// memory within 10 MiB of what it was idle; a small anonymous post is sent to the login page
/// unread, and a signed-in form over its route's limit answers 413.
#[test]
fn anonymous_bodies_are_never_buffered() -> TestResult {
    let c = console::start()?;
    let pid = c.server.pid();
    let addr = c.server.addr;
    for _ in 0..3 {
        c.server.request("GET", "/healthz").send()?;
    }
    std::thread::sleep(Duration::from_millis(300));
    let idle = rss(pid)?;
    let big = 90 * MIB;
    let mut attackers = Vec::new();
    for held in [true, true, true, false, false, false, false] {
        let send = if held { big - 1 } else { big };
        let hold = Duration::from_secs(if held { 4 } else { 0 });
        attackers.push(std::thread::spawn(move || {
            anonymous_post(addr, "/console/import", Some(big), send, hold)
                .map_err(|e| e.to_string())
        }));
    }
    attackers.push(std::thread::spawn(move || {
        anonymous_post(
            addr,
            "/console/import",
            None,
            20 * MIB,
            Duration::from_secs(4),
        )
        .map_err(|e| e.to_string())
    }));
    let mut peak = idle;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        peak = peak.max(rss(pid)?);
        std::thread::sleep(Duration::from_millis(50));
    }
    for a in attackers {
        a.join().map_err(|_| "attacker thread panicked")??;
    }
    peak = peak.max(rss(pid)?);
    let growth = peak.saturating_sub(idle);
    assert!(
        growth < 10 * MIB as u64,
        "anonymous bodies grew the server from {idle} to {peak} bytes resident"
    );

    // Every console form route sends an anonymous post to the login page without reading it.
    for path in [
        "/console/import",
        "/console/tokens",
        "/console/webhooks",
        "/console/probe",
        "/console/logout",
        "/console/endpoints/delete",
        "/console/endpoints/01a218f6-836c-75d9-9dc6-5f49deded361/edit",
        "/console/endpoints/01a218f6-836c-75d9-9dc6-5f49deded361/check",
        "/console/webhooks/01a218f6-836c-75d9-9dc6-5f49deded361/test",
    ] {
        let res = c
            .server
            .request("POST", path)
            .header("Origin", &c.origin)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(vec![b'a'; 4 * 1024])
            .send()?;
        assert_eq!(res.status, 303, "{path}: {}", res.text());
        assert_eq!(res.header("location"), Some("/console/login"), "{path}");
    }

    // A signed-in form over its route's limit is refused with 413; the server still answers.
    let cookie = c.session("admin@localhost", &c.password)?;
    let res = c.post_form(
        "/console/tokens",
        &cookie,
        &c.origin,
        &[("name", &"n".repeat(300 * 1024))],
    )?;
    assert_eq!(res.status, 413, "{}", res.text());
    assert!(res.text().contains("262144 bytes"), "{}", res.text());
    // The login form is small.
    let res = c.login(&"e".repeat(16 * 1024), "x", None)?;
    assert_eq!(res.status, 413, "{}", res.text());
    assert_eq!(c.server.request("GET", "/healthz").send()?.status, 200);
    Ok(())
}

/// A signed-in user's session cookie and the CSRF token of the import page.
fn signed_in(c: &Console) -> Result<(String, String), Box<dyn Error>> {
    let cookie = c.session("admin@localhost", &c.password)?;
    let page = c.get("/console/import", &cookie)?;
    let csrf = csrf_of(&page.text()).ok_or("no csrf field")?;
    Ok((cookie, csrf))
}

fn parse(c: &Console, cookie: &str, csrf: &str, document: &str) -> TestResult2 {
    let res = c.post_json(
        "/api/openapi/parse",
        cookie,
        csrf,
        &json!({ "document": document }),
    )?;
    Ok((res.status, res.json()))
}

type TestResult2 = Result<(u16, Value), Box<dyn Error>>;

/// `"[" × 120000` answers 400 naming the nesting limit at once (the YAML parser alone takes
/// seconds of CPU on it, growing with the square of its length); a document within the limit
/// whose reading outlasts `[limits] import_parse_secs` answers 400 naming the budget and the
/// setting; a listing spends the `checks` budget.
#[test]
fn yaml_work_is_bounded() -> TestResult {
    let c = console::start_with(&[
        ("APIDRIFT_LIMITS__IMPORT_PARSE_SECS", "1"),
        ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "4"),
    ])?;
    let (cookie, csrf) = signed_in(&c)?;

    let started = Instant::now();
    let (status, body) = parse(&c, &cookie, &csrf, &"[".repeat(120_000))?;
    let took = started.elapsed();
    assert_eq!(status, 400, "{body}");
    let text = body["error"].as_str().unwrap_or("");
    assert!(text.contains("nested more than 64 levels deep"), "{text}");
    assert!(took < Duration::from_millis(900), "refused in {took:?}");

    // Within the nesting limit, but seconds of parsing in a debug build (the tests' build): the
    // budget of one second answers first.
    let unit = format!("{}{},", "[".repeat(60), "]".repeat(60));
    let mut doc =
        String::from("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\nx-big: [");
    while doc.len() < 6 * MIB {
        doc.push_str(&unit);
    }
    doc.push_str("1]\n");
    let started = Instant::now();
    let (status, body) = parse(&c, &cookie, &csrf, &doc)?;
    let took = started.elapsed();
    assert_eq!(status, 400, "{body}");
    let text = body["error"].as_str().unwrap_or("");
    assert!(
        text.contains("1 s budget") && text.contains("import_parse_secs"),
        "{text}"
    );
    assert!(took < Duration::from_secs(5), "answered in {took:?}");

    // The two listings above spent two of the four checks a minute: two more pass, then 429.
    let small = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n";
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(parse(&c, &cookie, &csrf, small)?.0);
    }
    assert_eq!(statuses, [200, 200, 429], "{statuses:?}");
    Ok(())
}
