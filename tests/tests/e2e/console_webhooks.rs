//! The console's webhook delivery log and **Send test** (issue 15) end to end on SQLite and
//! PostgreSQL: the real `apidrift serve` (`--role all`, fast worker settings), a loopback upstream
//! that drifts, and loopback receivers answering 200 or 500. The log lists a delivered and a
//! failed delivery newest first with their endpoint and diff; Send test shows what a receiver
//! answered (200, 500, a refused connection); roles as the API (admin and above); another
//! workspace's webhook answers 404 like an unknown id; CSRF holds; and no secret, signature,
//! payload or Slack URL token appears in any page.
//!
//! Webhook URLs that hold a secret by their form (issue 23, item 6): a Discord URL given as a
//! `slack` webhook (`/api/webhooks/{id}/{token}/slack`), a generic URL with `?key=&token=` and a
//! Mattermost-style `/hooks/{key}` URL are delivered to in full, but their secret appears in no
//! API answer, console page, CLI output, log line, nor in clear in the database. The console's
//! endpoint list and detail show an endpoint URL's query values hidden (item 8).

use crate::console::{Upstream, csrf_of, form};
use crate::env::{Backend, Env};
use apidrift_e2e::server::{Response, Server};
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn Error>>;

const ALL_SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
const PASSWORD: &str = "a console password 123";
const SUPPLIED_SECRET: &str = "console-supplied-signing-secret-77";
const SLACK_TOKEN: &str = "consoleDeliveryLogSlackToken91";
const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    ("APIDRIFT_WORKER__POLL_MS", "50"),
    ("APIDRIFT_WORKER__RETRY_BASE_MS", "200"),
    ("APIDRIFT_WORKER__RETRY_MAX_MS", "400"),
    ("APIDRIFT_WORKER__DELIVERY_TIMEOUT_MS", "2000"),
    // A failing receiver's delivery gives up after a second: its state turns `failed`.
    ("APIDRIFT_WORKER__RETRY_WINDOW_SECS", "1"),
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

both_backends!(delivery_log_and_send_test, secret_bearing_urls_are_redacted);

/// A loopback webhook receiver answering every request with the current status; it records each
/// request (head and body).
struct Receiver {
    base: String,
    status: Arc<AtomicU16>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    fn start(status: u16) -> Result<Receiver, Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let base = format!("http://{}", listener.local_addr()?);
        let status = Arc::new(AtomicU16::new(status));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (st, se) = (status.clone(), seen.clone());
        std::thread::spawn(move || {
            for mut conn in listener.incoming().map_while(Result::ok) {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                let mut raw = Vec::new();
                let mut buf = [0u8; 8192];
                // The head, then the body by its Content-Length.
                let head_end = loop {
                    if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                        break Some(at + 4);
                    }
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break None,
                        Ok(n) => raw.extend_from_slice(&buf[..n]),
                    }
                };
                let Some(head_end) = head_end else { continue };
                let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while raw.len() < head_end + length {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => raw.extend_from_slice(&buf[..n]),
                    }
                }
                if let Ok(mut s) = se.lock() {
                    s.push(String::from_utf8_lossy(&raw).into_owned());
                }
                let code = st.load(Ordering::SeqCst);
                let _ = write!(
                    conn,
                    "HTTP/1.1 {code} X\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nConnection: close\r\n\r\nreceiver-ok"
                );
            }
        });
        Ok(Receiver { base, status, seen })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn set(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// How many test events (`ping`) it got; the worker's retries of real deliveries may arrive
    /// at any time, so they are not counted.
    fn pings(&self) -> usize {
        self.seen()
            .iter()
            .filter(|r| r.contains("\"ping\""))
            .count()
    }
}

/// The server, its workspace's owner token, and how to reach it as a browser.
struct Site {
    env: Env,
    server: Server,
    origin: String,
}

impl Site {
    fn api(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<&Value>,
    ) -> Result<Response, Box<dyn Error>> {
        let mut req = self.server.request(method, path).bearer(token);
        if let Some(b) = body {
            req = req.json(b);
        }
        Ok(req.send()?)
    }

    /// A workspace with an owner token: (workspace id, token).
    fn workspace(&self, name: &str) -> Result<(String, String), Box<dyn Error>> {
        let ws = self.env.cli(&["workspace", "create", "--name", name])?["id"]
            .as_str()
            .ok_or("no workspace id")?
            .to_owned();
        let token = self.env.cli(&[
            "token",
            "create",
            "--workspace",
            &ws,
            "--scopes",
            ALL_SCOPES,
            "--role",
            "owner",
        ])?["token"]
            .as_str()
            .ok_or("no token")?
            .to_owned();
        Ok((ws, token))
    }

    /// A console user of `ws` with `role`, logged in: its session cookie.
    fn user(&self, ws: &str, email: &str, role: &str) -> Result<String, Box<dyn Error>> {
        let mut cmd = self.env.command(&[
            "user",
            "create",
            "--email",
            email,
            "--password-stdin",
            "--workspace",
            ws,
            "--role",
            role,
        ]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        child
            .stdin
            .take()
            .ok_or("no stdin")?
            .write_all(format!("{PASSWORD}\n").as_bytes())?;
        let out = child.wait_with_output()?;
        if !out.status.success() {
            return Err(format!("user create: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        let res = self
            .server
            .request("POST", "/console/login")
            .header("Origin", &self.origin)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form(&[("email", email), ("password", PASSWORD)]))
            .send()?;
        assert_eq!(res.status, 303, "login {email}: {}", res.text());
        let cookie = res
            .header("set-cookie")
            .and_then(|c| c.strip_prefix("apidrift_session="))
            .and_then(|c| c.split(';').next())
            .ok_or("no session cookie")?;
        Ok(cookie.to_owned())
    }

    fn get(&self, path: &str, cookie: &str) -> Result<Response, Box<dyn Error>> {
        Ok(self
            .server
            .request("GET", path)
            .header("Cookie", &format!("apidrift_session={cookie}"))
            .send()?)
    }

    fn post(
        &self,
        path: &str,
        cookie: &str,
        origin: &str,
        pairs: &[(&str, &str)],
    ) -> Result<Response, Box<dyn Error>> {
        Ok(self
            .server
            .request("POST", path)
            .header("Cookie", &format!("apidrift_session={cookie}"))
            .header("Origin", origin)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form(pairs))
            .send()?)
    }

    /// Creates a webhook through the API: (id, the generated secret when one was).
    fn webhook(
        &self,
        token: &str,
        body: &Value,
    ) -> Result<(String, Option<String>), Box<dyn Error>> {
        let res = self.api("POST", "/v1/webhooks", token, Some(body))?;
        assert_eq!(res.status, 201, "{}", res.text());
        let v = res.json();
        let id = v["webhook"]["id"]
            .as_str()
            .ok_or("no webhook id")?
            .to_owned();
        Ok((id, v["webhook"]["secret"].as_str().map(str::to_owned)))
    }

    /// Waits until the API lists `n` deliveries of webhook `id` in a final state.
    fn settled(&self, token: &str, id: &str, n: usize) -> Result<Vec<Value>, Box<dyn Error>> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let res = self.api("GET", &format!("/v1/webhooks/{id}/deliveries"), token, None)?;
            assert_eq!(res.status, 200, "{}", res.text());
            let list = res.json()["deliveries"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if list.len() == n && list.iter().all(|d| d["state"] != "pending") {
                return Ok(list);
            }
            if Instant::now() > deadline {
                return Err(format!("deliveries of {id} did not settle: {list:?}").into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The `v1=` signatures in the recorded requests.
fn signatures(seen: &[String]) -> Vec<String> {
    seen.iter()
        .filter_map(|r| r.split("v1=").nth(1))
        .filter_map(|s| s.split(['\r', '\n', ',']).next())
        .map(str::to_owned)
        .collect()
}

fn delivery_log_and_send_test(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        println!("skipped: PostgreSQL is skipped (APIDRIFT_SKIP_POSTGRES=1)");
        return Ok(());
    };
    let server = env.serve(&[])?;
    let origin = format!("http://{}", server.addr);
    let site = Site {
        env,
        server,
        origin,
    };
    let (ws, token) = site.workspace("w")?;
    let admin = site.user(&ws, "admin@example.com", "admin")?;

    // An endpoint with a baseline; three webhooks: a receiver that answers 200, one that
    // answers 500 (with a supplied secret), and a Slack webhook on the good receiver.
    let up = Upstream::start(r#"{"id":1,"name":"a"}"#)?;
    let res = site.api(
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({ "name": "orders <v2>", "url": up.url })),
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let eid = res.json()["endpoints"][0]["id"]
        .as_str()
        .ok_or("no endpoint id")?
        .to_owned();
    let res = site.api(
        "POST",
        &format!("/v1/endpoints/{eid}/baseline"),
        &token,
        None,
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let good = Receiver::start(200)?;
    let bad = Receiver::start(500)?;
    let (ok_id, generated) = site.webhook(
        &token,
        &json!({ "url": good.url("/hook"), "minSeverity": "info" }),
    )?;
    let generated = generated.ok_or("no generated secret")?;
    let (bad_id, _) = site.webhook(
        &token,
        &json!({ "url": bad.url("/hook"), "minSeverity": "info", "secret": SUPPLIED_SECRET }),
    )?;
    let slack_url = good.url(&format!("/services/T1/B1/{SLACK_TOKEN}"));
    let (slack_id, _) = site.webhook(&token, &json!({ "kind": "slack", "url": slack_url }))?;

    // A drift queues one delivery per webhook: delivered to the good receiver, failed to the bad.
    up.set(r#"{"id":"1"}"#);
    let res = site.api(
        "POST",
        &format!("/api/v1/endpoints/{eid}/check"),
        &token,
        None,
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let did = res.json()["diffId"]
        .as_str()
        .ok_or("no diff id")?
        .to_owned();
    let ok_list = site.settled(&token, &ok_id, 1)?;
    assert_eq!(ok_list[0]["state"], "delivered", "{ok_list:?}");
    let bad_list = site.settled(&token, &bad_id, 1)?;
    assert_eq!(bad_list[0]["state"], "failed", "{bad_list:?}");
    site.settled(&token, &slack_id, 1)?;

    // The webhooks page links each webhook's log.
    let list = site.get("/console/webhooks", &admin)?.text();
    for id in [&ok_id, &bad_id, &slack_id] {
        assert!(
            list.contains(&format!("<a href=\"/console/webhooks/{id}\"")),
            "{list}"
        );
    }

    // The good receiver's log: the delivered event with its endpoint and diff linked.
    let ok_path = format!("/console/webhooks/{ok_id}");
    let res = site.get(&ok_path, &admin)?;
    assert_eq!(res.status, 200, "{}", res.text());
    let page = res.text();
    assert!(page.contains("href=\"/console/webhooks\" aria-current=\"page\""));
    assert!(
        page.contains(&format!(
            "<code id=\"webhook-url\">{}</code>",
            good.url("/hook")
        )),
        "{page}"
    );
    assert!(page.contains("<p>1 delivery, newest first</p>"), "{page}");
    let row = format!(
        "<td><code>drift.detected</code></td><td><a href=\"/console/endpoints/{eid}\">orders &lt;v2&gt;</a></td>\
         <td><a href=\"/console/diffs/{did}\">view diff</a></td>"
    );
    assert!(page.contains(&row), "{page}");
    assert!(
        page.contains(
            "<td>200</td><td>—</td><td><span class=\"badge delivered\">delivered</span></td>"
        ),
        "{page}"
    );
    // The bad receiver's log: failed, with the status and the error.
    let bad_path = format!("/console/webhooks/{bad_id}");
    let page = site.get(&bad_path, &admin)?.text();
    assert!(page.contains(&row), "{page}");
    assert!(
        page.contains(
            "<td>500</td><td>HTTP 500</td><td><span class=\"badge failed\">failed</span></td>"
        ),
        "{page}"
    );

    // Send test: delivered to the good receiver (a signed ping), under the creates class.
    let csrf = csrf_of(&page).ok_or("no csrf")?;
    let before = good.pings();
    let res = site.post(
        &format!("{ok_path}/test"),
        &admin,
        &site.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(
        res.header("ratelimit-policy")
            .is_some_and(|p| p.contains("\"creates\"")),
        "{:?}",
        res.header("ratelimit-policy")
    );
    let tested = res.text();
    assert!(
        tested.contains("id=\"test-outcome\">Test delivered: the receiver answered HTTP 200.</p>"),
        "{tested}"
    );
    assert_eq!(good.pings(), before + 1);
    let ping = good
        .seen()
        .into_iter()
        .rfind(|r| r.contains("\"ping\""))
        .unwrap_or_default();
    assert!(
        ping.to_ascii_lowercase().contains("apidrift-signature: t="),
        "{ping}"
    );
    // The test is not a delivery: the log still lists one.
    assert!(
        tested.contains("<p>1 delivery, newest first</p>"),
        "{tested}"
    );
    // The failing receiver: the status on the page.
    let res = site.post(
        &format!("{bad_path}/test"),
        &admin,
        &site.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let failed = res.text();
    assert!(
        failed.contains(
            "role=\"alert\" id=\"test-outcome\">Test failed: the receiver answered HTTP 500.</p>"
        ),
        "{failed}"
    );
    // A receiver that is not there: the error text on the page.
    let gone = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let (gone_id, _) = site.webhook(&token, &json!({ "url": format!("http://{gone}/hook") }))?;
    let res = site.post(
        &format!("/console/webhooks/{gone_id}/test"),
        &admin,
        &site.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let refused = res.text();
    assert!(
        refused.contains("id=\"test-outcome\">Test failed: connect_refused"),
        "{refused}"
    );
    assert!(refused.contains("No deliveries yet"), "{refused}");

    // Slack: the URL redacted, the test delivered, the token nowhere.
    let slack_path = format!("/console/webhooks/{slack_id}");
    let page = site.get(&slack_path, &admin)?.text();
    assert!(
        page.contains(&format!(
            "<code id=\"webhook-url\">{}</code>",
            good.url("/services/T1/B1/…")
        )),
        "{page}"
    );
    assert!(
        page.contains("<span class=\"badge delivered\">delivered</span>"),
        "{page}"
    );
    let res = site.post(
        &format!("{slack_path}/test"),
        &admin,
        &site.origin,
        &[("_csrf", &csrf)],
    )?;
    let slack_tested = res.text();
    assert!(slack_tested.contains("Test delivered"), "{slack_tested}");
    good.set(500);
    let res = site.post(
        &format!("{slack_path}/test"),
        &admin,
        &site.origin,
        &[("_csrf", &csrf)],
    )?;
    let slack_failed = res.text();
    assert!(slack_failed.contains("Test failed"), "{slack_failed}");

    // Newest first: back to the baseline, the good webhook gets `drift.resolved`, which now fails.
    up.set(r#"{"id":1,"name":"a"}"#);
    let res = site.api(
        "POST",
        &format!("/api/v1/endpoints/{eid}/check"),
        &token,
        None,
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let ok_list = site.settled(&token, &ok_id, 2)?;
    assert_eq!(ok_list[0]["event"], "drift.resolved", "{ok_list:?}");
    assert_eq!(ok_list[0]["state"], "failed", "{ok_list:?}");
    let both = site.get(&ok_path, &admin)?.text();
    assert!(both.contains("<p>2 deliveries, newest first</p>"), "{both}");
    let resolved = both
        .find("<code>drift.resolved</code>")
        .ok_or("no resolved row")?;
    let detected = both
        .find("<code>drift.detected</code>")
        .ok_or("no detected row")?;
    assert!(resolved < detected, "newest first: {both}");
    assert!(
        both.contains("<span class=\"badge failed\">failed</span>"),
        "{both}"
    );
    assert!(
        both.contains("<span class=\"badge delivered\">delivered</span>"),
        "{both}"
    );

    // No secret, signature, payload or Slack token in any page shown.
    let mut sigs = signatures(&good.seen());
    sigs.extend(signatures(&bad.seen()));
    assert!(!sigs.is_empty(), "the generic deliveries are signed");
    let pages = [
        site.get("/console/webhooks", &admin)?.text(),
        site.get(&ok_path, &admin)?.text(),
        site.get(&bad_path, &admin)?.text(),
        site.get(&slack_path, &admin)?.text(),
        tested,
        failed,
        refused,
        slack_tested,
        slack_failed,
        both,
    ];
    for page in &pages {
        for secret in [
            generated.as_str(),
            SUPPLIED_SECRET,
            SLACK_TOKEN,
            token.as_str(),
        ] {
            assert!(!page.contains(secret), "a secret in {page}");
        }
        for sig in &sigs {
            assert!(!page.contains(sig.as_str()), "a signature in {page}");
        }
        for payload in ["workspaceId", "\"ping\"", "sentAt", "receiver-ok"] {
            assert!(!page.contains(payload), "{payload} in {page}");
        }
    }

    // CSRF: without the token, or cross-site, nothing is sent.
    let before = bad.pings();
    let res = site.post(&format!("{bad_path}/test"), &admin, &site.origin, &[])?;
    assert_eq!(res.status, 403, "{}", res.text());
    let res = site.post(
        &format!("{bad_path}/test"),
        &admin,
        "https://evil.example",
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 403, "{}", res.text());
    assert_eq!(bad.pings(), before, "a refused post sent a test");

    // Roles as the API: member and viewer get 403 on the log and on the test; nothing is sent.
    for (email, role) in [
        ("member@example.com", "member"),
        ("viewer@example.com", "viewer"),
    ] {
        let cookie = site.user(&ws, email, role)?;
        let res = site.get(&bad_path, &cookie)?;
        assert_eq!(res.status, 403, "{role}: {}", res.text());
        assert!(
            res.text()
                .contains(&format!("role {role} cannot manage webhooks"))
        );
        let rcsrf = csrf_of(&site.get("/console/endpoints", &cookie)?.text()).ok_or("no csrf")?;
        let res = site.post(
            &format!("{bad_path}/test"),
            &cookie,
            &site.origin,
            &[("_csrf", &rcsrf)],
        )?;
        assert_eq!(res.status, 403, "{role}: {}", res.text());
        // The API route answers the same for a token of that role.
        let rtoken = site.env.cli(&[
            "token",
            "create",
            "--workspace",
            &ws,
            "--scopes",
            ALL_SCOPES,
            "--role",
            role,
        ])?["token"]
            .as_str()
            .ok_or("no token")?
            .to_owned();
        let res = site.api(
            "POST",
            &format!("/v1/webhooks/{bad_id}/test"),
            &rtoken,
            None,
        )?;
        assert_eq!(res.status, 403, "{role}: {}", res.text());
    }
    assert_eq!(bad.pings(), before, "a refused role sent a test");
    // The owner sees it too.
    let owner = site.user(&ws, "owner@example.com", "owner")?;
    assert_eq!(site.get(&bad_path, &owner)?.status, 200);

    // Another workspace's webhook answers 404 exactly like an unknown id; nothing is sent.
    let (_, other_token) = site.workspace("other")?;
    let theirs = Receiver::start(200)?;
    let (their_id, _) = site.webhook(&other_token, &json!({ "url": theirs.url("/hook") }))?;
    let unknown = "00000000-0000-4000-8000-000000000000";
    let foreign = site.get(&format!("/console/webhooks/{their_id}"), &admin)?;
    let missing = site.get(&format!("/console/webhooks/{unknown}"), &admin)?;
    assert_eq!((foreign.status, missing.status), (404, 404));
    assert_eq!(foreign.text(), missing.text());
    assert!(!foreign.text().contains(&theirs.base));
    assert_eq!(
        site.get("/console/webhooks/not-a-uuid", &admin)?.status,
        404
    );
    let res = site.post(
        &format!("/console/webhooks/{their_id}/test"),
        &admin,
        &site.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 404, "{}", res.text());
    let res = site.post(
        &format!("/console/webhooks/{unknown}/test"),
        &admin,
        &site.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 404, "{}", res.text());
    assert!(
        theirs.seen().is_empty(),
        "another workspace's webhook was sent a test"
    );
    Ok(())
}

const DISCORD_VIA_SLACK_TOKEN: &str = "discordViaSlackToken5e7d";
const QUERY_KEY: &str = "genericQueryKey0c4f";
const QUERY_TOKEN: &str = "genericQueryToken9a2b";
const HOOKS_KEY: &str = "mattermostHookKey71d3";
const ENDPOINT_KEY: &str = "consoleEndpointApiKey3c8a";

fn secret_bearing_urls_are_redacted(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        println!("skipped: PostgreSQL is skipped (APIDRIFT_SKIP_POSTGRES=1)");
        return Ok(());
    };
    let server = env.serve(&[])?;
    let origin = format!("http://{}", server.addr);
    let site = Site {
        env,
        server,
        origin,
    };
    let (ws, token) = site.workspace("w")?;
    let admin = site.user(&ws, "admin@example.com", "admin")?;
    let up = Upstream::start(r#"{"id":1,"name":"a"}"#)?;
    let res = site.api(
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({ "name": "orders", "url": up.url })),
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let eid = res.json()["endpoints"][0]["id"]
        .as_str()
        .ok_or("no endpoint id")?
        .to_owned();
    let res = site.api(
        "POST",
        &format!("/v1/endpoints/{eid}/baseline"),
        &token,
        None,
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let rx = Receiver::start(200)?;
    let secrets = [DISCORD_VIA_SLACK_TOKEN, QUERY_KEY, QUERY_TOKEN, HOOKS_KEY];

    // Created through the API: each answer shows the redacted form only.
    let mut answers = String::new();
    let hooks = [
        (
            json!({"kind": "slack", "url": rx.url(&format!("/api/webhooks/4242/{DISCORD_VIA_SLACK_TOKEN}/slack")), "minSeverity": "info"}),
            rx.url("/api/webhooks/4242/…/slack"),
            format!("POST /api/webhooks/4242/{DISCORD_VIA_SLACK_TOKEN}/slack "),
        ),
        (
            json!({"url": rx.url(&format!("/chat?key={QUERY_KEY}&token={QUERY_TOKEN}")), "minSeverity": "info"}),
            rx.url("/chat?key=…&token=…"),
            format!("POST /chat?key={QUERY_KEY}&token={QUERY_TOKEN} "),
        ),
        (
            json!({"url": rx.url(&format!("/hooks/{HOOKS_KEY}")), "minSeverity": "info", "secret": SUPPLIED_SECRET}),
            rx.url("/hooks/…"),
            format!("POST /hooks/{HOOKS_KEY} "),
        ),
    ];
    let mut ids = Vec::new();
    for (body, shown, _) in &hooks {
        let res = site.api("POST", "/v1/webhooks", &token, Some(body))?;
        assert_eq!(res.status, 201, "{}", res.text());
        answers.push_str(&res.text());
        let v = res.json();
        assert_eq!(v["webhook"]["url"], shown.as_str(), "{v}");
        ids.push(v["webhook"]["id"].as_str().ok_or("no id")?.to_owned());
    }
    let res = site.api("GET", "/v1/webhooks", &token, None)?;
    assert_eq!(res.status, 200, "{}", res.text());
    let listed: Vec<String> = res.json()["webhooks"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|w| w["url"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        listed,
        hooks.iter().map(|h| h.1.clone()).collect::<Vec<_>>(),
        "{}",
        res.text()
    );
    answers.push_str(&res.text());

    // A drift is delivered to each full URL (the sealed one), and recorded.
    up.set(r#"{"id":"1"}"#);
    let res = site.api(
        "POST",
        &format!("/api/v1/endpoints/{eid}/check"),
        &token,
        None,
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    for id in &ids {
        let list = site.settled(&token, id, 1)?;
        assert_eq!(list[0]["state"], "delivered", "{list:?}");
        answers.push_str(&serde_json::to_string(&list)?);
    }
    let seen = rx.seen();
    for (_, _, head) in &hooks {
        assert!(
            seen.iter().any(|r| r.starts_with(head.as_str())),
            "no {head} in {seen:?}"
        );
    }

    // The console: the list, each delivery page and its Send test (delivered to the full URL).
    let mut pages = vec![site.get("/console/webhooks", &admin)?.text()];
    for (id, (_, shown, _)) in ids.iter().zip(&hooks) {
        let path = format!("/console/webhooks/{id}");
        let page = site.get(&path, &admin)?.text();
        assert!(
            page.contains(&format!(
                "<code id=\"webhook-url\">{}</code>",
                shown.replace('&', "&amp;")
            )),
            "{page}"
        );
        let csrf = csrf_of(&page).ok_or("no csrf")?;
        let res = site.post(
            &format!("{path}/test"),
            &admin,
            &site.origin,
            &[("_csrf", &csrf)],
        )?;
        assert_eq!(res.status, 200, "{}", res.text());
        let tested = res.text();
        assert!(tested.contains("Test delivered"), "{tested}");
        pages.push(page);
        pages.push(tested);
    }
    // An endpoint with a key in its URL query: the console's list and detail hide the value.
    let keyed = format!("{}?api_key={ENDPOINT_KEY}&v=2", up.url);
    let res = site.api(
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({ "name": "keyed", "url": keyed })),
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let keyed_id = res.json()["endpoints"][0]["id"]
        .as_str()
        .ok_or("no endpoint id")?
        .to_owned();
    let shown = format!("{}?api_key=…&amp;v=…", up.url);
    for path in [
        "/console/endpoints".to_owned(),
        format!("/console/endpoints/{keyed_id}"),
    ] {
        let page = site.get(&path, &admin)?.text();
        assert!(page.contains(&shown), "{page}");
        assert!(!page.contains(ENDPOINT_KEY), "{page}");
    }
    // A refused add does not send a secret-bearing URL back into the form.
    let csrf = csrf_of(&pages[0]).ok_or("no csrf")?;
    let res = site.post(
        "/console/webhooks",
        &admin,
        &site.origin,
        &[
            ("_csrf", &csrf),
            ("kind", "generic"),
            (
                "url",
                &rx.url(&format!("/chat?key={QUERY_KEY}&token={QUERY_TOKEN}")),
            ),
            ("min_severity", "loud"),
        ],
    )?;
    assert_eq!(res.status, 400, "{}", res.text());
    pages.push(res.text());
    let res = site.post(
        "/console/webhooks",
        &admin,
        &site.origin,
        &[
            ("_csrf", &csrf),
            ("kind", "generic"),
            ("url", &rx.url("/plain")),
            ("min_severity", "loud"),
        ],
    )?;
    assert_eq!(res.status, 400, "{}", res.text());
    assert!(
        res.text().contains(&rx.url("/plain")),
        "a plain URL is kept"
    );

    // The CLI lists the same redacted forms.
    let cli = site
        .env
        .cli(&["webhook", "list", "--workspace", &ws])?
        .to_string();
    for (_, shown, _) in &hooks {
        assert!(cli.contains(shown.as_str()), "{cli}");
    }

    let logs = site.server.output();
    for secret in secrets {
        assert!(!answers.contains(secret), "{secret} in an API answer");
        assert!(!cli.contains(secret), "{secret} in the CLI output");
        assert!(!logs.contains(secret), "{secret} in the log");
        for page in &pages {
            assert!(!page.contains(secret), "{secret} in {page}");
        }
    }
    // Sealed, not stored in clear: no file of the SQLite database holds a secret.
    if matches!(backend, Backend::Sqlite) {
        for entry in std::fs::read_dir(site.env.dir.path())? {
            let path = entry?.path();
            if !path.is_file() {
                continue;
            }
            let bytes = std::fs::read(&path)?;
            for secret in secrets {
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "{secret} in clear in {}",
                    path.display()
                );
            }
        }
    }
    Ok(())
}
