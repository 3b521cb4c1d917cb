//! The console's side of the endpoint lifecycle (issue 15) end to end, over HTTP like a browser:
//! confirmation steps on Accept and Revoke that name their target, the endpoints list after an
//! accept, and the endpoint page's history charts.

use crate::console::{Console, Upstream, csrf_of, start};
use serde_json::json;
use std::error::Error;

type TestResult = Result<(), Box<dyn Error>>;

/// An endpoint on `up` with a baseline, and one drifted check: (endpoint id, diff id).
fn drifted(c: &Console, up: &Upstream, name: &str) -> Result<(String, String), Box<dyn Error>> {
    let res = c.api(
        "POST",
        "/api/v1/endpoints",
        &c.token,
        Some(&json!({ "name": name, "url": up.url })),
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
    Ok((eid, did))
}

/// The cells of the endpoints list row that links to `eid`.
fn list_row(page: &str, eid: &str) -> Option<String> {
    let at = page.find(&format!("href=\"/console/endpoints/{eid}\""))?;
    let row = &page[at..];
    Some(row[..row.find("</tr>")?].to_owned())
}

#[test]
fn accept_asks_first_names_the_diff_and_the_list_stops_counting_it() -> TestResult {
    let c = start()?;
    let up = Upstream::start(r#"{"id":1,"name":"a","tags":["x"]}"#)?;
    let (eid, did) = drifted(&c, &up, "orders <v2>")?;
    let admin = c.session("admin@localhost", &c.password)?;

    // Before: the list shows the drift as current.
    let d = c
        .api("GET", &format!("/api/v1/diffs/{did}"), &c.token, None)?
        .json();
    let (b, w, i) = (
        d["diff"]["breakingCount"].as_u64().ok_or("no count")?,
        d["diff"]["warningCount"].as_u64().ok_or("no count")?,
        d["diff"]["infoCount"].as_u64().ok_or("no count")?,
    );
    assert!(b > 0, "{d}");
    let page = c.get("/console/endpoints", &admin)?.text();
    let row = list_row(&page, &eid).ok_or("no row")?;
    assert!(row.contains("badge breaking"), "{row}");
    assert!(row.contains(&format!("<td>{b} / {w}</td>")), "{row}");

    // The diff page's button leads to a confirmation page, which changes nothing by itself.
    let diff_path = format!("/console/diffs/{did}");
    let page = c.get(&diff_path, &admin)?.text();
    assert!(page.contains(&format!(
        "<form method=\"get\" action=\"{diff_path}/accept\">"
    )));
    let confirm = c.get(&format!("{diff_path}/accept"), &admin)?;
    assert_eq!(confirm.status, 200);
    let confirm = confirm.text();
    assert!(
        confirm.contains("Accept the diff of orders &lt;v2&gt; from "),
        "{confirm}"
    );
    assert!(
        confirm.contains(&format!("({b} breaking, {w} warnings, {i} info)?")),
        "{confirm}"
    );
    assert!(confirm.contains(&format!("action=\"{diff_path}/accept\"")));
    assert!(confirm.contains("id=\"confirm-accept\""));
    assert!(confirm.contains(&format!("<a href=\"{diff_path}\">Cancel</a>")));
    let res = c.api("GET", &format!("/api/v1/diffs/{did}"), &c.token, None)?;
    assert_eq!(res.json()["diff"]["accepted"], false);

    // Confirmed: accepted; the list reads healthy with nothing current.
    let csrf = csrf_of(&confirm).ok_or("no csrf")?;
    let res = c.post_form(
        &format!("{diff_path}/accept"),
        &admin,
        &c.origin,
        &[("_csrf", &csrf), ("confirm", "yes")],
    )?;
    assert_eq!(res.status, 303, "{}", res.text());
    let page = c.get("/console/endpoints", &admin)?.text();
    let row = list_row(&page, &eid).ok_or("no row")?;
    assert!(row.contains("badge healthy"), "{row}");
    assert!(row.contains("<td>0 / 0</td>"), "{row}");
    let e = c
        .api("GET", &format!("/api/v1/endpoints/{eid}"), &c.token, None)?
        .json();
    assert_eq!(
        (
            &e["endpoint"]["breakingCount"],
            &e["endpoint"]["warningCount"]
        ),
        (&json!(0), &json!(0)),
        "{e}"
    );
    // The diff keeps its own counts.
    let d = c
        .api("GET", &format!("/api/v1/diffs/{did}"), &c.token, None)?
        .json();
    assert_eq!(d["diff"]["breakingCount"], b, "{d}");
    // An accepted diff's confirmation page sends back to the diff.
    let res = c.get(&format!("{diff_path}/accept"), &admin)?;
    assert_eq!(res.status, 303);
    Ok(())
}

#[test]
fn revoke_asks_first_and_names_the_token() -> TestResult {
    let c = start()?;
    let admin = c.session("admin@localhost", &c.password)?;
    let page = c.get("/console/tokens", &admin)?.text();
    let csrf = csrf_of(&page).ok_or("no csrf")?;
    let res = c.post_form(
        "/console/tokens",
        &admin,
        &c.origin,
        &[
            ("_csrf", &csrf),
            ("name", "deploy <bot>"),
            ("scopes", "endpoints:read"),
            ("role", "member"),
        ],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let html = res.text();
    let token = html
        .split("id=\"token-value\" class=\"token\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .ok_or("token not shown")?
        .to_owned();
    let before = html
        .split("aria-label=\"Revoke deploy &lt;bot&gt;\"")
        .next()
        .ok_or("no revoke button")?;
    let id = before
        .rsplit("/console/tokens/")
        .next()
        .and_then(|s| s.split('/').next())
        .ok_or("no token id")?
        .to_owned();
    let path = format!("/console/tokens/{id}/revoke");
    assert!(before.contains(&format!("<form method=\"get\" action=\"{path}\">")));

    // The confirmation names the token (name, hint, role), never the token itself.
    let confirm = c.get(&path, &admin)?;
    assert_eq!(confirm.status, 200);
    let confirm = confirm.text();
    let hint = &token[token.len() - 4..];
    assert!(
        confirm.contains(&format!(
            "Revoke the token deploy &lt;bot&gt; (…{hint}, role member)?"
        )),
        "{confirm}"
    );
    assert!(!confirm.contains(&token));
    assert!(confirm.contains("id=\"confirm-revoke\""));
    assert_eq!(c.api("GET", "/api/v1/endpoints", &token, None)?.status, 200);

    // A viewer can neither see the confirmation nor post it.
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
    assert_eq!(c.get(&path, &viewer)?.status, 403);

    // Confirmed: revoked; its confirmation page is gone.
    let csrf = csrf_of(&confirm).ok_or("no csrf")?;
    let res = c.post_form(
        &path,
        &admin,
        &c.origin,
        &[("_csrf", &csrf), ("confirm", "yes")],
    )?;
    assert_eq!(res.status, 303, "{}", res.text());
    assert_eq!(c.api("GET", "/api/v1/endpoints", &token, None)?.status, 401);
    assert_eq!(c.get(&path, &admin)?.status, 404);
    Ok(())
}

#[test]
fn edit_pause_history_and_delete_with_role_limits() -> TestResult {
    let c = start()?;
    let up = Upstream::start(r#"{"id":1,"name":"a","tags":["x"]}"#)?;
    let (eid, did) = drifted(&c, &up, "items")?;
    // A second check: two checks in the history.
    let res = c.api(
        "POST",
        &format!("/api/v1/endpoints/{eid}/check"),
        &c.token,
        None,
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let admin = c.session("admin@localhost", &c.password)?;
    let page_path = format!("/console/endpoints/{eid}");

    // The history: one chart point and one timeline bar per check, rows linking the diff.
    let page = c.get(&page_path, &admin)?.text();
    assert!(page.contains("<svg id=\"response-chart\""), "{page}");
    assert_eq!(page.matches("<circle class=\"point").count(), 2, "{page}");
    assert_eq!(page.matches("<rect class=\"tick").count(), 2, "{page}");
    assert!(page.contains("<p>2 check(s), newest first</p>"), "{page}");
    assert!(page.contains(&format!("<a href=\"/console/diffs/{did}\">view diff</a>")));
    assert!(page.contains("id=\"edit-endpoint\""));
    assert!(page.contains("id=\"pause-endpoint\""));
    assert!(page.contains("id=\"delete-endpoint\""));

    // Edit: the form is prefilled; an invalid field changes nothing and names the field.
    let edit_path = format!("{page_path}/edit");
    let form_page = c.get(&edit_path, &admin)?.text();
    assert!(form_page.contains("id=\"name\" name=\"name\" value=\"items\""));
    let csrf = csrf_of(&form_page).ok_or("no csrf")?;
    let fields = |name: &str, timeout: &str| {
        vec![
            ("_csrf", csrf.clone()),
            ("name", name.to_owned()),
            ("url", up.url.clone()),
            ("method", "GET".to_owned()),
            ("environment", "staging".to_owned()),
            ("tags", "a, b".to_owned()),
            ("content_type", "application/json".to_owned()),
            ("diff_mode", "schema".to_owned()),
            ("timeout_ms", timeout.to_owned()),
            ("retries", "1".to_owned()),
            ("schedule", String::new()),
        ]
    };
    let owned = fields("renamed", "soon");
    let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let res = c.post_form(&edit_path, &admin, &c.origin, &pairs)?;
    assert_eq!(res.status, 400, "{}", res.text());
    assert!(res.text().contains("timeoutMs"), "{}", res.text());
    let e = c
        .api("GET", &format!("/api/v1/endpoints/{eid}"), &c.token, None)?
        .json();
    assert_eq!(e["endpoint"]["name"], "items", "{e}");
    let owned = fields("renamed", "5000");
    let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let res = c.post_form(&edit_path, &admin, &c.origin, &pairs)?;
    assert_eq!(res.status, 303, "{}", res.text());
    let e = c
        .api("GET", &format!("/api/v1/endpoints/{eid}"), &c.token, None)?
        .json();
    assert_eq!(e["endpoint"]["name"], "renamed", "{e}");
    assert_eq!(e["endpoint"]["environment"], "staging", "{e}");
    assert_eq!(e["endpoint"]["timeoutMs"], 5000, "{e}");

    // Pause and resume.
    let res = c.post_form(
        &format!("{page_path}/pause"),
        &admin,
        &c.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 303, "{}", res.text());
    let page = c.get(&page_path, &admin)?.text();
    assert!(page.contains("paused (manual checks still run)"), "{page}");
    assert!(page.contains("id=\"resume-endpoint\""));
    let res = c.post_form(
        &format!("{page_path}/resume"),
        &admin,
        &c.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 303, "{}", res.text());
    let page = c.get(&page_path, &admin)?.text();
    assert!(
        page.contains("<dd id=\"schedule-state\">active</dd>"),
        "{page}"
    );

    // A viewer sees no buttons and gets 403 on every post.
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
    let page = c.get(&page_path, &viewer)?.text();
    for id in ["edit-endpoint", "pause-endpoint", "delete-endpoint"] {
        assert!(!page.contains(id), "{id}");
    }
    let vcsrf = csrf_of(&page).ok_or("no csrf")?;
    for action in ["edit", "pause", "resume", "delete"] {
        let res = c.post_form(
            &format!("{page_path}/{action}"),
            &viewer,
            &c.origin,
            &[("_csrf", &vcsrf), ("confirm", "yes"), ("name", "x")],
        )?;
        assert_eq!(res.status, 403, "{action}: {}", res.text());
    }
    assert_eq!(c.get(&edit_path, &viewer)?.status, 403);

    // A member edits and pauses but cannot delete.
    let mpw = "member password 123";
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
        &format!("{mpw}\n"),
    )?;
    let member = c.session("member@example.com", mpw)?;
    let page = c.get(&page_path, &member)?.text();
    assert!(page.contains("id=\"edit-endpoint\""));
    assert!(!page.contains("id=\"delete-endpoint\""));
    assert_eq!(c.get(&format!("{page_path}/delete"), &member)?.status, 403);

    // Delete: a confirmation naming the endpoint, then gone everywhere.
    let confirm = c.get(&format!("{page_path}/delete"), &admin)?.text();
    assert!(
        confirm.contains(&format!("Delete the endpoint renamed (GET {})?", up.url)),
        "{confirm}"
    );
    let res = c.post_form(
        &format!("{page_path}/delete"),
        &admin,
        &c.origin,
        &[("_csrf", &csrf)],
    )?;
    assert_eq!(res.status, 400, "no confirmation: {}", res.text());
    let res = c.post_form(
        &format!("{page_path}/delete"),
        &admin,
        &c.origin,
        &[("_csrf", &csrf), ("confirm", "yes")],
    )?;
    assert_eq!(res.status, 303, "{}", res.text());
    assert_eq!(c.get(&page_path, &admin)?.status, 404);
    assert_eq!(c.get(&format!("/console/diffs/{did}"), &admin)?.status, 404);
    assert_eq!(
        c.api("GET", &format!("/api/v1/endpoints/{eid}"), &c.token, None)?
            .status,
        404
    );
    Ok(())
}
