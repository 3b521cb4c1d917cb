//! The console's **Add endpoint** form, schedules shown, the overview page and the import's path
//! values (issue 26), end to end on the real `apidrift serve` (SQLite), driven over HTTP like a
//! browser without scripts: forms, cookies, Origin.

use crate::console::{Upstream, csrf_of, start};
use serde_json::json;
use std::error::Error;
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn Error>>;

/// A credential that must never come back in a page.
const CANARY: &str = "canary-bearer-7f3a9c";

#[test]
fn add_an_endpoint_from_the_console() -> TestResult {
    let c = start()?;
    let up = Upstream::start(r#"{"id":1}"#)?;
    let admin = c.session("admin@localhost", &c.password)?;
    let list = c.get("/console/endpoints", &admin)?.text();
    assert!(
        list.contains("<a href=\"/console/endpoints/new\" id=\"add-endpoint\">Add endpoint</a>"),
        "{list}"
    );
    let page = c.get("/console/endpoints/new", &admin)?;
    assert_eq!(page.status, 200);
    let page = page.text();
    assert!(page.contains("<h1>Add endpoint</h1>"), "{page}");
    // The create defaults.
    assert!(page.contains("<option value=\"GET\" selected>GET</option>"));
    assert!(page.contains("name=\"environment\" value=\"production\""));
    assert!(page.contains("name=\"timeout_ms\" type=\"number\" value=\"10000\""));
    let csrf = csrf_of(&page).ok_or("no csrf")?;

    // A refused entry: the reason naming the field, the entered values, never the secret.
    let bad = [
        ("_csrf", csrf.as_str()),
        ("name", "orders"),
        ("url", "ftp://example.com/orders"),
        ("method", "GET"),
        ("environment", "staging"),
        ("timeout_ms", "5000"),
        ("diff_mode", "schema"),
        ("content_type", "application/json"),
        ("schedule", "HOURLY"),
        ("auth_type", "bearer"),
        ("auth_token", CANARY),
    ];
    let res = c.post_form("/console/endpoints/new", &admin, &c.origin, &bad)?;
    assert_eq!(res.status, 400, "{}", res.text());
    let page = res.text();
    assert!(
        page.contains("<p class=\"error\" role=\"alert\">url: "),
        "{page}"
    );
    assert!(page.contains("name=\"name\" value=\"orders\""), "{page}");
    assert!(page.contains("name=\"url\" value=\"ftp://example.com/orders\""));
    assert!(page.contains("name=\"environment\" value=\"staging\""));
    assert!(page.contains("<option value=\"HOURLY\" selected>hourly</option>"));
    assert!(!page.contains(CANARY), "the secret came back in the form");
    let res = c.api("GET", "/api/v1/endpoints", &c.token, None)?;
    assert_eq!(res.json()["pagination"]["total"], 0, "{}", res.text());
    // A number that is not one: the service's message names the field.
    let mut typo = bad;
    typo[2] = ("url", up.url.as_str());
    typo[5] = ("timeout_ms", "soon");
    let res = c.post_form("/console/endpoints/new", &admin, &c.origin, &typo)?;
    assert_eq!(res.status, 400, "{}", res.text());
    assert!(
        res.text().contains("role=\"alert\">timeoutMs: "),
        "{}",
        res.text()
    );

    // Accepted: the endpoint's page, its schedule, the same endpoint through the API.
    let mut good = bad;
    good[2] = ("url", up.url.as_str());
    let res = c.post_form(
        "/console/endpoints/new",
        &admin,
        &c.origin,
        &[&good[..], &[("headers", "X-Team: payments")]].concat(),
    )?;
    assert_eq!(res.status, 303, "{}", res.text());
    let to = res.header("location").ok_or("no redirect")?.to_owned();
    assert!(to.starts_with("/console/endpoints/"), "{to}");
    let page = c.get(&to, &admin)?.text();
    assert!(page.contains("<h1>orders</h1>"), "{page}");
    assert!(page.contains("Endpoint added."), "{page}");
    assert!(
        page.contains("<dd id=\"schedule-state\">every 1 hour"),
        "{page}"
    );
    assert!(!page.contains(CANARY));
    let id = to
        .trim_start_matches("/console/endpoints/")
        .split('?')
        .next()
        .unwrap_or_default()
        .to_owned();
    let res = c.api("GET", &format!("/api/v1/endpoints/{id}"), &c.token, None)?;
    assert_eq!(res.status, 200, "{}", res.text());
    let e = &res.json()["endpoint"];
    assert_eq!(e["name"], "orders");
    assert_eq!(e["environment"], "staging");
    assert_eq!(e["authType"], "bearer");
    assert_eq!(e["timeoutMs"], 5000);
    assert!(!res.text().contains(CANARY));
    // The list's schedule column.
    let list = c.get("/console/endpoints", &admin)?.text();
    assert!(list.contains("<th scope=\"col\">Schedule</th>"), "{list}");
    assert!(list.contains("<td class=\"nowrap\">every 1 hour"), "{list}");
    // A viewer has no link, no form, and cannot post.
    let pw = "viewer password 123";
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
        &format!("{pw}\n"),
    )?;
    let viewer = c.session("viewer@example.com", pw)?;
    let list = c.get("/console/endpoints", &viewer)?.text();
    assert!(!list.contains("add-endpoint"), "{list}");
    assert_eq!(c.get("/console/endpoints/new", &viewer)?.status, 403);
    let vcsrf = csrf_of(&list).ok_or("no csrf")?;
    let mut as_viewer = good;
    as_viewer[0] = ("_csrf", vcsrf.as_str());
    as_viewer[1] = ("name", "viewer's");
    let res = c.post_form("/console/endpoints/new", &viewer, &c.origin, &as_viewer)?;
    assert_eq!(res.status, 403, "{}", res.text());
    assert!(
        res.text().contains("role viewer cannot create endpoints"),
        "{}",
        res.text()
    );
    // Cross-site: refused before anything.
    let res = c.post_form(
        "/console/endpoints/new",
        &admin,
        "https://evil.example",
        &good,
    )?;
    assert_eq!(res.status, 403, "{}", res.text());
    let res = c.api("GET", "/api/v1/endpoints", &c.token, None)?;
    assert_eq!(res.json()["pagination"]["total"], 1, "{}", res.text());
    Ok(())
}

/// An upstream that answers `n` requests with a JSON body and then closes its port (a fetch
/// after that is refused).
fn answers_then_closes(n: usize) -> Result<String, Box<dyn Error>> {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/status", listener.local_addr()?);
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten().take(n) {
            let mut seen = Vec::new();
            let mut buf = [0u8; 2048];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let body = r#"{"ok":true}"#;
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(url)
}

#[test]
fn the_overview_shows_health_drifts_failures_and_next_runs() -> TestResult {
    let c = start()?;
    let admin = c.session("admin@localhost", &c.password)?;
    // Login lands on the overview; an empty workspace says how to start.
    let res = c.login("admin@localhost", &c.password, None)?;
    assert_eq!(res.header("location"), Some("/console/overview"));
    let page = c.get("/console/overview", &admin)?;
    assert_eq!(page.status, 200);
    let page = page.text();
    assert!(page.contains("<h1>Overview</h1>"), "{page}");
    assert!(page.contains("href=\"/console/overview\" aria-current=\"page\">Overview</a>"));
    assert!(page.contains("No endpoints yet."), "{page}");

    // A drifting endpoint (breaking), one whose fetch fails, one scheduled.
    let up = Upstream::start(r#"{"id":1,"name":"a"}"#)?;
    let create = |body: serde_json::Value| -> Result<String, Box<dyn Error>> {
        let res = c.api("POST", "/api/v1/endpoints", &c.token, Some(&body))?;
        assert_eq!(res.status, 201, "{}", res.text());
        Ok(res.json()["endpoints"][0]["id"]
            .as_str()
            .ok_or("no endpoint id")?
            .to_owned())
    };
    let drifting = create(json!({ "name": "orders", "url": up.url }))?;
    let flaky =
        create(json!({ "name": "status page", "url": answers_then_closes(1)?, "retries": 0 }))?;
    let scheduled = create(json!({
        "name": "hourly", "url": format!("{}/hourly", up.url), "schedule": { "frequency": "HOURLY" }
    }))?;
    for id in [&drifting, &flaky] {
        let res = c.api(
            "POST",
            &format!("/v1/endpoints/{id}/baseline"),
            &c.token,
            None,
        )?;
        assert_eq!(res.status, 201, "{}", res.text());
    }
    up.set(r#"{"id":"1"}"#);
    for id in [&drifting, &flaky] {
        let res = c.api(
            "POST",
            &format!("/api/v1/endpoints/{id}/check"),
            &c.token,
            None,
        )?;
        assert!(res.status < 500, "{}", res.text());
    }

    // The scheduler creates the schedule row within a poll or two.
    let deadline = Instant::now() + Duration::from_secs(20);
    let page = loop {
        let page = c.get("/console/overview", &admin)?.text();
        if page.contains("id=\"next-runs\"") || Instant::now() > deadline {
            break page;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!page.contains("No endpoints yet."), "{page}");
    assert!(page.contains("3 endpoint(s) in all."), "{page}");
    assert!(page.contains(
        // The drift and the failed fetch (whose diff is breaking too).
        "<a href=\"/console/endpoints?health=breaking\"><span class=\"badge breaking\">breaking</span> 2</a>"
    ), "{page}");
    // The newest drift: its endpoint, severity and when.
    let drifts = page
        .split("id=\"newest-drifts\"")
        .nth(1)
        .ok_or("no drifts table")?;
    assert!(
        drifts.contains(&format!(
            "<a href=\"/console/endpoints/{drifting}\">orders</a>"
        )),
        "{drifts}"
    );
    assert!(drifts.contains("<span class=\"badge breaking\">breaking</span>"));
    assert!(drifts.contains("<time datetime=\""), "{drifts}");
    assert!(
        drifts.contains("just now</time>") || drifts.contains("min ago</time>"),
        "{drifts}"
    );
    // The failed fetch.
    let failing = page
        .split("id=\"failing\"")
        .nth(1)
        .ok_or("no failing table")?;
    assert!(
        failing.contains(&format!(
            "<a href=\"/console/endpoints/{flaky}\">status page</a>"
        )),
        "{failing}"
    );
    assert!(
        failing.contains("<td><code>connect_refused</code></td>"),
        "{failing}"
    );
    assert!(
        !failing
            .split("</table>")
            .next()
            .unwrap_or("")
            .contains("orders")
    );
    // The next run of the scheduled one.
    let runs = page
        .split("id=\"next-runs\"")
        .nth(1)
        .ok_or("no next runs table")?;
    assert!(
        runs.contains(&format!(
            "<a href=\"/console/endpoints/{scheduled}\">hourly</a>"
        )),
        "{runs}"
    );
    assert!(
        runs.contains("<td class=\"nowrap\"><time datetime=\""),
        "{runs}"
    );
    Ok(())
}

/// A GitHub-shaped document: path templates without examples, values given on the page.
#[test]
fn import_with_path_values_from_the_console() -> TestResult {
    let c = start()?;
    let admin = c.session("admin@localhost", &c.password)?;
    let up = Upstream::start(r#"{"id":1}"#)?;
    let server = up.url.trim_end_matches("/items").to_owned();
    let op = |id: &str| json!({ "get": { "operationId": id, "responses": { "200": { "description": "ok" } } } });
    let param = |name: &str| json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string" } });
    let mut repo = op("repos/get");
    repo["get"]["parameters"] = json!([param("owner"), param("repo")]);
    let mut user = op("users/get-by-username");
    user["get"]["parameters"] = json!([param("username")]);
    let doc = json!({
        "openapi": "3.0.3",
        "info": { "title": "GitHub-shaped", "version": "1" },
        "servers": [{ "url": server }],
        "paths": {
            "/meta": op("meta/get"),
            "/repos/{owner}/{repo}": repo,
            "/users/{username}": user,
        }
    })
    .to_string();
    let page = c.get("/console/import", &admin)?.text();
    let csrf = csrf_of(&page).ok_or("no csrf")?;
    let res = c.post_form(
        "/console/import",
        &admin,
        &c.origin,
        &[
            ("_csrf", &csrf),
            ("document", &doc),
            ("methods", "GET"),
            ("action", "parse"),
        ],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let page = res.text();
    // Each needed name asked for once, with the operations that need it.
    assert!(page.contains("<fieldset id=\"parameters\">"), "{page}");
    assert!(page.contains(
        "<code>owner</code> (needed by GET /repos/{owner}/{repo})</label><input id=\"parameter-0\" name=\"parameter.owner\" value=\"\""
    ), "{page}");
    assert!(page.contains("name=\"parameter.repo\""));
    assert!(page.contains("name=\"parameter.username\""));
    assert!(page.contains("value=\"GET /meta\" checked"));
    assert!(page.contains("<input type=\"checkbox\" id=\"op-1\" name=\"operations\" value=\"GET /repos/{owner}/{repo}\" aria-label"));

    // Values typed, listed again: the filled operations become importable and ticked.
    let base = [
        ("_csrf", csrf.as_str()),
        ("document", doc.as_str()),
        ("methods", "GET"),
        ("listed", "yes"),
        ("importable", "GET /meta"),
        ("operations", "GET /meta"),
        ("parameter.owner", "octocat"),
        ("parameter.repo", "hello-world"),
        ("parameter.username", " "),
    ];
    let res = c.post_form(
        "/console/import",
        &admin,
        &c.origin,
        &[&base[..], &[("action", "parse")]].concat(),
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let page = res.text();
    assert!(
        page.contains(&format!("<code>{server}/repos/octocat/hello-world</code>")),
        "{page}"
    );
    assert!(
        page.contains("value=\"GET /repos/{owner}/{repo}\" checked"),
        "{page}"
    );
    assert!(
        !page.contains("value=\"GET /users/{username}\" checked"),
        "{page}"
    );
    assert!(page.contains("name=\"parameter.owner\" value=\"octocat\""));

    // Import the ticked ones: /meta and the repo; the user without a value is not created.
    let res = c.post_form(
        "/console/import",
        &admin,
        &c.origin,
        &[
            &base[..],
            &[
                ("operations", "GET /repos/{owner}/{repo}"),
                ("action", "import"),
            ],
        ]
        .concat(),
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let page = res.text();
    assert!(page.contains("Created 2 endpoint(s), skipped 0."), "{page}");
    let list = c.api("GET", "/api/v1/endpoints", &c.token, None)?.json();
    let urls: Vec<&str> = list["endpoints"]
        .as_array()
        .ok_or("no endpoints")?
        .iter()
        .filter_map(|e| e["url"].as_str())
        .collect();
    assert!(
        urls.contains(&format!("{server}/repos/octocat/hello-world").as_str()),
        "{urls:?}"
    );
    assert!(
        urls.contains(&format!("{server}/meta").as_str()),
        "{urls:?}"
    );
    assert_eq!(urls.len(), 2, "{urls:?}");
    Ok(())
}
