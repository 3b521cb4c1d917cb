//! The console and the session routes end to end (issue 8; D2, D4, D15): the real
//! `apidrift serve` on SQLite with its first-run bootstrap, driven over HTTP like a browser
//! would (cookies, forms, Origin). Security: CSRF (a cross-site form post fails), session
//! fixation (the id changes at login), cookie flags, a viewer cannot run checks or create
//! tokens, another workspace's pages answer 404, and no token, token hash or password in any
//! page source.

use apidrift_e2e::server::{Response, Server};
use apidrift_e2e::{run_with_stdin, stderr, stdout};
use serde_json::{Value, json};
use std::error::Error;

type TestResult = Result<(), Box<dyn Error>>;

const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
];

pub(crate) struct Console {
    _dir: tempfile::TempDir,
    pub(crate) url: String,
    pub(crate) server: Server,
    pub(crate) origin: String,
    pub(crate) password: String,
    pub(crate) workspace: String,
    pub(crate) token: String,
}

pub(crate) fn start() -> Result<Console, Box<dyn Error>> {
    start_with(&[])
}

/// [`start`] with more environment variables (they win over the defaults above).
pub(crate) fn start_with(extra: &[(&str, &str)]) -> Result<Console, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("console.db").display());
    let env: Vec<(&str, &str)> = ENV.iter().chain(extra).copied().collect();
    let server = Server::start(dir.path(), &url, &[], &env)?;
    let out = server.output();
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("apidrift: console user admin@localhost (owner)"))
        .ok_or("no console user line in the bootstrap output")?;
    let password = lines
        .get(at + 1)
        .ok_or("no password line")?
        .trim()
        .to_owned();
    assert!(password.len() >= 20, "password {password:?}");
    // The console URL line follows the address line.
    let wanted = format!("apidrift: console at http://{}/console", server.addr);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !server.output().contains(&wanted) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(server.output().contains(&wanted), "{}", server.output());
    let workspace = out
        .split("created workspace \"default\" (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or("no workspace id")?
        .to_owned();
    let token = server.bootstrap_token.clone().ok_or("no bootstrap token")?;
    let origin = format!("http://{}", server.addr);
    Ok(Console {
        _dir: dir,
        url,
        server,
        origin,
        password,
        workspace,
        token,
    })
}

fn cookie_of(res: &Response) -> Option<String> {
    let set = res.header("set-cookie")?;
    let value = set.strip_prefix("apidrift_session=")?.split(';').next()?;
    Some(value.to_owned())
}

pub(crate) fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut s = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            s.push('&');
        }
        s.push_str(k);
        s.push('=');
        for b in v.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                s.push(char::from(b));
            } else {
                s.push_str(&format!("%{b:02X}"));
            }
        }
    }
    s.into_bytes()
}

pub(crate) fn csrf_of(html: &str) -> Option<String> {
    let rest = html.split("name=\"_csrf\" value=\"").nth(1)?;
    Some(rest.split('"').next()?.to_owned())
}

impl Console {
    pub(crate) fn login(
        &self,
        email: &str,
        password: &str,
        planted: Option<&str>,
    ) -> Result<Response, Box<dyn Error>> {
        let mut req = self
            .server
            .request("POST", "/console/login")
            .header("Origin", &self.origin)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form(&[("email", email), ("password", password)]));
        if let Some(c) = planted {
            req = req.header("Cookie", &format!("apidrift_session={c}"));
        }
        Ok(req.send()?)
    }

    pub(crate) fn session(&self, email: &str, password: &str) -> Result<String, Box<dyn Error>> {
        let res = self.login(email, password, None)?;
        assert_eq!(res.status, 303, "{}", res.text());
        Ok(cookie_of(&res).ok_or("no session cookie")?)
    }

    pub(crate) fn get(&self, path: &str, cookie: &str) -> Result<Response, Box<dyn Error>> {
        Ok(self
            .server
            .request("GET", path)
            .header("Cookie", &format!("apidrift_session={cookie}"))
            .send()?)
    }

    pub(crate) fn post_form(
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

    pub(crate) fn post_json(
        &self,
        path: &str,
        cookie: &str,
        csrf: &str,
        body: &Value,
    ) -> Result<Response, Box<dyn Error>> {
        Ok(self
            .server
            .request("POST", path)
            .header("Cookie", &format!("apidrift_session={cookie}"))
            .header("Origin", &self.origin)
            .header("X-CSRF-Token", csrf)
            .json(body)
            .send()?)
    }

    pub(crate) fn api(
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

    pub(crate) fn cli(&self, args: &[&str], stdin: &str) -> Result<Value, Box<dyn Error>> {
        let mut all = vec!["--database-url", self.url.as_str()];
        all.extend_from_slice(args);
        let out = run_with_stdin(&all, stdin.as_bytes());
        if !out.status.success() {
            return Err(format!("apidrift {args:?}: {}", stderr(&out)).into());
        }
        Ok(serde_json::from_str(stdout(&out).trim())?)
    }
}

#[test]
fn login_sessions_cookies_and_fixation() -> TestResult {
    let c = start()?;
    // Unauthenticated pages send the browser to the login page.
    let res = c.server.request("GET", "/console/endpoints").send()?;
    assert_eq!(res.status, 303);
    assert_eq!(res.header("location"), Some("/console/login"));
    let page = c.server.request("GET", "/console/login").send()?;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("<label for=\"email\">"));

    // Wrong password, unknown user: the same 401 page, no cookie.
    for (email, password) in [
        ("admin@localhost", "wrong password!"),
        ("nobody@x.y", "whatever"),
    ] {
        let res = c.login(email, password, None)?;
        assert_eq!(res.status, 401);
        assert!(res.text().contains("Wrong e-mail or password."));
        assert!(cookie_of(&res).is_none());
    }
    // A cross-site login post fails.
    let res = c
        .server
        .request("POST", "/console/login")
        .header("Origin", "http://evil.example")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("email", "admin@localhost"),
            ("password", &c.password),
        ]))
        .send()?;
    assert_eq!(res.status, 403);
    assert!(cookie_of(&res).is_none());

    // Fixation: a planted or earlier session id is never kept; each login mints a new one.
    let first = c.session("admin@localhost", &c.password)?;
    let res = c.login("ADMIN@localhost", &c.password, Some(&first))?;
    assert_eq!(res.status, 303);
    let second = cookie_of(&res).ok_or("no cookie")?;
    assert_ne!(first, second);
    assert_eq!(
        c.get("/console/endpoints", &first)?.status,
        303,
        "the presented session ended"
    );
    let planted = "attacker-chosen-session-id";
    let res = c.login("admin@localhost", &c.password, Some(planted))?;
    let third = cookie_of(&res).ok_or("no cookie")?;
    assert_ne!(third, planted);
    assert_eq!(c.get("/console/endpoints", planted)?.status, 303);

    // Cookie flags.
    let set = res.header("set-cookie").ok_or("no Set-Cookie")?.to_owned();
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set.contains(flag), "{set}");
    }
    assert!(!set.contains("Secure"), "plain http: {set}");
    assert!(third.len() >= 40);

    // The session works; logout revokes it server-side.
    let page = c.get("/console/endpoints", &third)?;
    assert_eq!(page.status, 200);
    let csrf = csrf_of(&page.text()).ok_or("no csrf field")?;
    let res = c.post_form("/console/logout", &third, &c.origin, &[("_csrf", &csrf)])?;
    assert_eq!(res.status, 303);
    assert_eq!(c.get("/console/endpoints", &third)?.status, 303);
    assert!(!c.server.output().contains(&third), "session id logged");
    Ok(())
}

#[test]
fn tokens_csrf_roles_isolation_probe_and_import() -> TestResult {
    let c = start()?;
    let admin = c.session("admin@localhost", &c.password)?;
    let page = c.get("/console/tokens", &admin)?;
    assert_eq!(page.status, 200);
    let html = page.text();
    let csrf = csrf_of(&html).ok_or("no csrf")?;
    // endpoints:write is unchecked by default, the others checked.
    assert!(html.contains("value=\"endpoints:write\">"), "{html}");
    assert!(html.contains("value=\"endpoints:read\" checked>"));

    // CSRF: a cross-site form post fails, so does a same-site post without the token.
    let create = [
        ("_csrf", csrf.as_str()),
        ("name", "ci"),
        ("scopes", "endpoints:read"),
        ("scopes", "endpoints:write"),
        ("role", "member"),
    ];
    let res = c.post_form("/console/tokens", &admin, "http://evil.example", &create)?;
    assert_eq!(res.status, 403);
    assert!(!res.text().contains("svc_live_"));
    let res = c.post_form("/console/tokens", &admin, &c.origin, &create[1..])?;
    assert_eq!(res.status, 403);
    let listed = c.api("GET", "/api/v1/endpoints", &c.token, None)?;
    assert_eq!(listed.status, 200);

    // Created once, shown once with a copy button and a warning, then usable.
    let res = c.post_form("/console/tokens", &admin, &c.origin, &create)?;
    assert_eq!(res.status, 200, "{}", res.text());
    let html = res.text();
    let token = html
        .split("id=\"token-value\" class=\"token\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .ok_or("token not shown")?
        .to_owned();
    assert!(
        token.starts_with("svc_live_") && token.len() == 58,
        "{token}"
    );
    assert!(html.contains("shown only once"));
    assert!(html.contains("id=\"copy-token\""));
    let res = c.api("GET", "/api/v1/endpoints", &token, None)?;
    assert_eq!(res.status, 200);
    // Never again in a page: not the token, not its hash, not the bootstrap token.
    let again = c.get("/console/tokens", &admin)?.text();
    let hash = apidrift_seal::token::hash(&token);
    for secret in [
        token.as_str(),
        hash.as_str(),
        c.token.as_str(),
        c.password.as_str(),
    ] {
        assert!(!again.contains(secret));
    }
    assert!(again.contains("<td>ci</td>"));
    // Revoke → 401.
    let before = again
        .split("aria-label=\"Revoke ci\"")
        .next()
        .ok_or("no revoke form")?;
    let id = before
        .rsplit("/console/tokens/")
        .next()
        .and_then(|s| s.split('/').next())
        .ok_or("no token id")?;
    let revoke_path = format!("/console/tokens/{id}/revoke");
    let res = c.post_form(&revoke_path, &admin, &c.origin, &[("_csrf", &csrf)])?;
    assert_eq!(res.status, 303, "{}", res.text());
    assert_eq!(c.api("GET", "/api/v1/endpoints", &token, None)?.status, 401);

    // Probe a loopback URL (the allow-list covers 127.0.0.0/8): no body comes back.
    let target = format!("{}/openapi.json", c.origin);
    let res = c.post_json("/api/check", &admin, &csrf, &json!({ "url": target }))?;
    assert_eq!(res.status, 200, "{}", res.text());
    let probe = res.json();
    assert_eq!(probe["status"], 200);
    assert_eq!(probe["json"], true);
    assert!(probe["size"].as_u64().unwrap_or(0) > 1000);
    assert!(
        probe["contentType"]
            .as_str()
            .unwrap_or("")
            .starts_with("application/json")
    );
    assert!(probe["shape"]["fields"].is_array());
    assert!(!res.text().contains("API drift monitor"), "the body leaked");
    // Without the CSRF header, or cross-origin: 403. Without a session: 401.
    let res = c
        .server
        .request("POST", "/api/check")
        .header("Cookie", &format!("apidrift_session={admin}"))
        .header("Origin", &c.origin)
        .json(&json!({ "url": target }))
        .send()?;
    assert_eq!(res.status, 403);
    let res = c
        .server
        .request("POST", "/api/check")
        .json(&json!({ "url": target }))
        .send()?;
    assert_eq!(res.status, 401);
    let res = c.post_json(
        "/api/check",
        &admin,
        &csrf,
        &json!({ "url": "http://169.254.169.254/" }),
    )?;
    assert_eq!(res.status, 400, "{}", res.text());

    // Import a small OpenAPI document.
    let doc = json!({
        "openapi": "3.1.0",
        "info": { "title": "t", "version": "1" },
        "servers": [{ "url": c.origin }],
        "paths": {
            "/healthz": { "get": { "operationId": "health", "responses": { "200": {
                "description": "ok",
                "content": { "application/json": { "schema": { "type": "object" } } } } } } },
            "/items/{id}": { "get": { "responses": { "200": { "description": "ok" } } } }
        }
    });
    let res = c.post_json(
        "/api/openapi/parse",
        &admin,
        &csrf,
        &json!({ "document": doc }),
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.json()["operations"].as_array().map(Vec::len), Some(2));
    let res = c.post_json(
        "/api/openapi/parse",
        &admin,
        &csrf,
        &json!({ "document": doc.to_string(), "import": true }),
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let body = res.json();
    assert_eq!(body["import"]["created"], 1);
    assert!(
        body["import"]["skipped"][0]["reason"].as_str().is_some_and(
            |r| r.starts_with("path parameters without example values: id; add an `example`")
        ),
        "{body}"
    );
    let endpoint = body["import"]["endpoints"][0].clone();
    assert_eq!(endpoint["authType"], "none");
    assert_eq!(endpoint["hasResponseContract"], true);
    let eid = endpoint["id"].as_str().ok_or("no id")?.to_owned();

    // The endpoint pages: list with health badges, details, buttons for an owner.
    let list = c.get("/console/endpoints?health=unknown", &admin)?.text();
    assert!(list.contains("class=\"badge unknown\""));
    assert!(list.contains("health"));
    let detail = c.get(&format!("/console/endpoints/{eid}"), &admin)?;
    assert_eq!(detail.status, 200);
    assert!(detail.text().contains("Capture baseline"));
    let res = c.post_form(
        &format!("/console/endpoints/{eid}/baseline"),
        &admin,
        &c.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 303, "{}", res.text());
    let res = c.post_form(
        &format!("/console/endpoints/{eid}/check"),
        &admin,
        &c.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 303, "{}", res.text());
    let detail = c.get(&format!("/console/endpoints/{eid}"), &admin)?.text();
    assert!(detail.contains("class=\"badge healthy\""), "{detail}");

    // A viewer reads but cannot run checks, probe or create tokens.
    let viewer_pw = "viewer password 123";
    c.cli(
        &[
            "user",
            "create",
            "--email",
            "viewer@example.com",
            "--password-stdin",
            "--workspace",
            &c.workspace,
            "--role",
            "viewer",
        ],
        &format!("{viewer_pw}\n"),
    )?;
    let listed = c.cli(&["user", "list"], "")?;
    assert_eq!(listed.as_array().map(Vec::len), Some(2));
    assert!(!listed.to_string().contains("argon2"));
    let viewer = c.session("viewer@example.com", viewer_pw)?;
    let vpage = c.get(&format!("/console/endpoints/{eid}"), &viewer)?;
    assert_eq!(vpage.status, 200);
    assert!(!vpage.text().contains("Run check</button>"));
    let vcsrf = csrf_of(&vpage.text()).ok_or("no csrf")?;
    let res = c.post_form(
        &format!("/console/endpoints/{eid}/check"),
        &viewer,
        &c.origin,
        &[("_csrf", &vcsrf)],
    )?;
    assert_eq!(res.status, 403);
    assert!(res.text().contains("role viewer cannot run checks"));
    let res = c.post_json("/api/check", &viewer, &vcsrf, &json!({ "url": target }))?;
    assert_eq!(res.status, 403);
    assert_eq!(res.json()["error"], "role viewer cannot run checks");
    assert_eq!(c.get("/console/tokens", &viewer)?.status, 403);
    let res = c.post_form(
        "/console/tokens",
        &viewer,
        &c.origin,
        &[
            ("_csrf", &vcsrf),
            ("name", "x"),
            ("scopes", "endpoints:read"),
        ],
    )?;
    assert_eq!(res.status, 403);
    assert!(!res.text().contains("svc_live_"));

    // Another workspace's endpoint and diff pages answer 404 like missing ones.
    let other = c.cli(&["workspace", "create", "--name", "other"], "")?;
    let other_ws = other["id"].as_str().ok_or("no id")?;
    let other_token = c.cli(
        &[
            "token",
            "create",
            "--workspace",
            other_ws,
            "--scopes",
            "endpoints:read,endpoints:write",
            "--role",
            "owner",
        ],
        "",
    )?;
    let res = c.api(
        "POST",
        "/api/v1/endpoints",
        other_token["token"].as_str().ok_or("no token")?,
        Some(&json!({ "name": "theirs", "url": format!("{}/healthz", c.origin) })),
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let theirs = res.json()["endpoints"][0]["id"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let foreign = c.get(&format!("/console/endpoints/{theirs}"), &admin)?;
    let missing = c.get(
        "/console/endpoints/01900000-0000-7000-8000-000000000000",
        &admin,
    )?;
    assert_eq!(foreign.status, 404);
    assert_eq!(missing.status, 404);
    assert_eq!(foreign.text(), missing.text());
    assert_eq!(
        c.get(&format!("/console/diffs/{theirs}"), &admin)?.status,
        404
    );
    assert!(
        !c.get("/console/endpoints", &admin)?
            .text()
            .contains("theirs")
    );

    // Removing a user ends their sessions.
    c.cli(&["user", "remove", "viewer@example.com"], "")?;
    assert_eq!(c.get("/console/endpoints", &viewer)?.status, 303);
    Ok(())
}

/// A loopback upstream answering every request with the current JSON body (it can drift).
pub(crate) struct Upstream {
    /// `http://127.0.0.1:PORT/items` (any path answers the same).
    pub(crate) url: String,
    body: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Upstream {
    pub(crate) fn start(body: &str) -> Result<Upstream, Box<dyn Error>> {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}/items", listener.local_addr()?);
        let body = std::sync::Arc::new(std::sync::Mutex::new(body.to_owned()));
        let shared = body.clone();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let mut seen = Vec::new();
                let mut buf = [0u8; 2048];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let text = shared.lock().map(|b| b.clone()).unwrap_or_default();
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        Ok(Upstream { url, body })
    }

    pub(crate) fn set(&self, body: &str) {
        if let Ok(mut b) = self.body.lock() {
            *b = body.to_owned();
        }
    }
}

#[test]
fn accept_a_diff_from_the_console() -> TestResult {
    let c = start()?;
    let up = Upstream::start(r#"{"id":1,"name":"a","tags":["x"]}"#)?;
    let res = c.api(
        "POST",
        "/api/v1/endpoints",
        &c.token,
        Some(&json!({ "name": "items", "url": up.url })),
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let eid = res.json()["endpoints"][0]["id"]
        .as_str()
        .ok_or("no endpoint id")?
        .to_owned();
    let res = c.api(
        "POST",
        &format!("/v1/endpoints/{eid}/baseline"),
        &c.token,
        None,
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    up.set(r#"{"id":"1","tags":["x"]}"#);
    let res = c.api(
        "POST",
        &format!("/api/v1/endpoints/{eid}/check"),
        &c.token,
        None,
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let did = res.json()["diffId"]
        .as_str()
        .ok_or("no diff id")?
        .to_owned();
    let endpoint = c.api("GET", &format!("/api/v1/endpoints/{eid}"), &c.token, None)?;
    assert_eq!(endpoint.json()["endpoint"]["health"], "breaking");

    // A member sees the diff but no Accept button, and posting answers 403.
    let member_pw = "member password 123";
    c.cli(
        &[
            "user",
            "create",
            "--email",
            "member@example.com",
            "--password-stdin",
            "--workspace",
            &c.workspace,
            "--role",
            "member",
        ],
        &format!("{member_pw}\n"),
    )?;
    let member = c.session("member@example.com", member_pw)?;
    let diff_path = format!("/console/diffs/{did}");
    let accept_path = format!("{diff_path}/accept");
    let page = c.get(&diff_path, &member)?;
    assert_eq!(page.status, 200);
    let page = page.text();
    assert!(page.contains("not accepted"), "{page}");
    assert!(!page.contains("id=\"accept-diff\""), "{page}");
    let mcsrf = csrf_of(&page).ok_or("no csrf")?;
    let res = c.post_form(&accept_path, &member, &c.origin, &[("_csrf", &mcsrf)])?;
    assert_eq!(res.status, 403, "{}", res.text());
    assert!(res.text().contains("role member cannot accept diffs"));
    assert_eq!(c.get("/console/webhooks", &member)?.status, 403);
    let res = c.post_form(
        "/console/webhooks",
        &member,
        &c.origin,
        &[("_csrf", &mcsrf), ("url", &up.url)],
    )?;
    assert_eq!(res.status, 403, "{}", res.text());

    // The owner sees the button; without the CSRF token, or cross-site, the post fails.
    let admin = c.session("admin@localhost", &c.password)?;
    let page = c.get(&diff_path, &admin)?.text();
    assert!(page.contains("id=\"accept-diff\""), "{page}");
    assert!(page.contains(&format!("action=\"{accept_path}\"")));
    let csrf = csrf_of(&page).ok_or("no csrf")?;
    let res = c.post_form(&accept_path, &admin, &c.origin, &[])?;
    assert_eq!(res.status, 403, "{}", res.text());
    let res = c.post_form(
        &accept_path,
        &admin,
        "https://evil.example",
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 403, "{}", res.text());
    let res = c.api("GET", &format!("/api/v1/diffs/{did}"), &c.token, None)?;
    assert_eq!(res.json()["diff"]["accepted"], false);

    // With the token: accepted, redirected back to the diff page which says so.
    let res = c.post_form(&accept_path, &admin, &c.origin, &[("_csrf", &csrf)])?;
    assert_eq!(res.status, 303, "{}", res.text());
    let to = res.header("location").ok_or("no redirect")?.to_owned();
    assert!(to.starts_with(&diff_path), "{to}");
    let page = c.get(&to, &admin)?.text();
    assert!(page.contains(">accepted</span>"), "{page}");
    assert!(page.contains("Diff accepted"), "{page}");
    assert!(!page.contains("id=\"accept-diff\""), "{page}");
    let res = c.api("GET", &format!("/api/v1/diffs/{did}"), &c.token, None)?;
    assert_eq!(res.json()["diff"]["accepted"], true, "{}", res.text());
    let endpoint = c
        .api("GET", &format!("/api/v1/endpoints/{eid}"), &c.token, None)?
        .json();
    assert_eq!(endpoint["endpoint"]["health"], "healthy", "{endpoint}");
    assert_eq!(endpoint["endpoint"]["baselineVersion"], 2, "{endpoint}");
    // The new baseline is the drifted response: a check finds nothing.
    let res = c.api(
        "POST",
        &format!("/api/v1/endpoints/{eid}/check"),
        &c.token,
        None,
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.json()["breakingCount"], 0, "{}", res.text());
    // Posting again is harmless (idempotent, like the API).
    let res = c.post_form(&accept_path, &admin, &c.origin, &[("_csrf", &csrf)])?;
    assert_eq!(res.status, 303, "{}", res.text());
    Ok(())
}

#[test]
fn webhooks_page_adds_lists_and_removes() -> TestResult {
    let c = start()?;
    let admin = c.session("admin@localhost", &c.password)?;
    let page = c.get("/console/webhooks", &admin)?;
    assert_eq!(page.status, 200);
    let page = page.text();
    assert!(page.contains("href=\"/console/webhooks\" aria-current=\"page\""));
    assert!(page.contains("No webhooks yet."));
    assert!(page.contains("<option value=\"warning\" selected>warning</option>"));
    let csrf = csrf_of(&page).ok_or("no csrf")?;
    let receiver = format!("{}/hooks/a", c.origin);

    // A private address is refused (D14) with the reason on the page, and nothing is stored.
    let res = c.post_form(
        "/console/webhooks",
        &admin,
        &c.origin,
        &[
            ("_csrf", &csrf),
            ("url", "http://10.1.2.3/h"),
            ("min_severity", "breaking"),
        ],
    )?;
    assert_eq!(res.status, 400, "{}", res.text());
    let text = res.text();
    assert!(text.contains("id=\"webhook-error\">url: "), "{text}");
    // The reason on the page says how a self-hosted install allows the address.
    assert!(
        text.contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.1/32"),
        "{text}"
    );
    assert!(text.contains("value=\"http://10.1.2.3/h\""), "{text}");
    assert!(text.contains("No webhooks yet."));
    // Without the CSRF token: refused, nothing stored.
    let res = c.post_form(
        "/console/webhooks",
        &admin,
        &c.origin,
        &[("url", &receiver)],
    )?;
    assert_eq!(res.status, 403, "{}", res.text());
    let api = c.api("GET", "/v1/webhooks", &c.token, None)?;
    assert_eq!(api.json()["webhooks"].as_array().map(Vec::len), Some(0));

    // A generated secret is shown once, with a warning.
    let res = c.post_form(
        "/console/webhooks",
        &admin,
        &c.origin,
        &[
            ("_csrf", &csrf),
            ("url", &receiver),
            ("min_severity", "info"),
        ],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let text = res.text();
    assert!(text.contains("shown only once"), "{text}");
    let secret = text
        .split("id=\"secret-value\" class=\"token\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .ok_or("no secret shown")?
        .to_owned();
    assert!(secret.len() >= 32, "{secret}");
    // A supplied secret is never shown.
    let supplied = "my-own-signing-secret-1";
    let res = c.post_form(
        "/console/webhooks",
        &admin,
        &c.origin,
        &[
            ("_csrf", &csrf),
            ("url", &format!("{}/hooks/b", c.origin)),
            ("secret", supplied),
        ],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(res.text().contains("with the secret you supplied"));
    assert!(!res.text().contains(supplied));

    // Listed (url, minimum severity, created) on the page and by the API; no secret anywhere.
    let page = c.get("/console/webhooks", &admin)?.text();
    assert!(page.contains(&format!("<code>{receiver}</code>")), "{page}");
    assert!(
        page.contains("<span class=\"badge info\">info</span>"),
        "{page}"
    );
    assert!(
        page.contains("<span class=\"badge warning\">warning</span>"),
        "{page}"
    );
    assert!(!page.contains("id=\"secret-value\""));
    for path in ["/console/webhooks", "/console/endpoints", "/console/tokens"] {
        let text = c.get(path, &admin)?.text();
        assert!(!text.contains(&secret), "{path} shows the secret");
        assert!(!text.contains(supplied), "{path} shows the secret");
    }
    let api = c.api("GET", "/v1/webhooks", &c.token, None)?.json();
    let hooks = api["webhooks"].as_array().ok_or("no list")?;
    assert_eq!(hooks.len(), 2, "{api}");
    assert_eq!(hooks[0]["url"], receiver.as_str());
    assert_eq!(hooks[0]["minSeverity"], "info");
    let first = hooks[0]["id"].as_str().ok_or("no id")?.to_owned();

    // Remove: CSRF enforced, then gone from the page and the API.
    let remove = format!("/console/webhooks/{first}/remove");
    assert!(page.contains(&format!("action=\"{remove}\"")));
    let res = c.post_form(&remove, &admin, "https://evil.example", &[("_csrf", &csrf)])?;
    assert_eq!(res.status, 403, "{}", res.text());
    let res = c.post_form(&remove, &admin, &c.origin, &[("_csrf", &csrf)])?;
    assert_eq!(res.status, 303, "{}", res.text());
    let page = c.get("/console/webhooks", &admin)?.text();
    assert!(
        !page.contains(&format!("<code>{receiver}</code>")),
        "{page}"
    );
    let api = c.api("GET", "/v1/webhooks", &c.token, None)?.json();
    assert_eq!(api["webhooks"].as_array().map(Vec::len), Some(1), "{api}");
    let res = c.post_form(&remove, &admin, &c.origin, &[("_csrf", &csrf)])?;
    assert_eq!(res.status, 404, "{}", res.text());
    Ok(())
}

#[test]
fn webhooks_page_offers_native_kinds_and_hides_their_secrets() -> TestResult {
    let c = start()?;
    let admin = c.session("admin@localhost", &c.password)?;
    let page = c.get("/console/webhooks", &admin)?.text();
    for (value, label) in [
        ("generic", "Generic (signed JSON event)"),
        ("slack", "Slack incoming webhook"),
        ("discord", "Discord webhook"),
        ("pagerduty", "PagerDuty (Events API v2)"),
    ] {
        let selected = if value == "generic" { " selected" } else { "" };
        assert!(
            page.contains(&format!(
                "<option value=\"{value}\"{selected}>{label}</option>"
            )),
            "{page}"
        );
    }
    let csrf = csrf_of(&page).ok_or("no csrf")?;
    let token = "consoleSlackToken55aa";
    let slack_url = format!("{}/services/T1/B1/{token}", c.origin);
    let routing_key = "consoleRoutingKey0123456789ABCDE";

    // A refused Slack add (a secret given) shows the reason and does not echo the URL.
    let res = c.post_form(
        "/console/webhooks",
        &admin,
        &c.origin,
        &[
            ("_csrf", &csrf),
            ("kind", "slack"),
            ("url", &slack_url),
            ("secret", "nope"),
        ],
    )?;
    assert_eq!(res.status, 400, "{}", res.text());
    let text = res.text();
    assert!(
        text.contains("id=\"webhook-error\">secret: a slack webhook"),
        "{text}"
    );
    assert!(!text.contains(token), "{text}");
    assert!(text.contains("<option value=\"slack\" selected>"), "{text}");

    let res = c.post_form(
        "/console/webhooks",
        &admin,
        &c.origin,
        &[("_csrf", &csrf), ("kind", "slack"), ("url", &slack_url)],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(
        res.text().contains("Its URL is kept secret"),
        "{}",
        res.text()
    );
    // PagerDuty: no URL (the Events API by default), the routing key as the secret.
    let res = c.post_form(
        "/console/webhooks",
        &admin,
        &c.origin,
        &[
            ("_csrf", &csrf),
            ("kind", "pagerduty"),
            ("url", ""),
            ("secret", routing_key),
        ],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(!res.text().contains(routing_key));

    let page = c.get("/console/webhooks", &admin)?.text();
    assert!(
        page.contains(&format!(
            "<td>slack</td><td><code>{}/services/T1/B1/…</code></td>",
            c.origin
        )),
        "{page}"
    );
    assert!(
        page.contains(
            "<td>pagerduty</td><td><code>https://events.pagerduty.com/v2/enqueue</code></td>"
        ),
        "{page}"
    );
    for path in ["/console/webhooks", "/console/endpoints", "/console/tokens"] {
        let text = c.get(path, &admin)?.text();
        assert!(!text.contains(token), "{path} shows the Slack URL");
        assert!(!text.contains(routing_key), "{path} shows the routing key");
    }
    let api = c.api("GET", "/v1/webhooks", &c.token, None)?.text();
    assert!(!api.contains(token) && !api.contains(routing_key), "{api}");
    Ok(())
}
