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

/// Issue 25: the edit form carries the version it shows; when the endpoint changed after the form
/// was opened, saving writes nothing and the form comes back with the current values, their
/// version and a message saying so; saving that form then works.
#[test]
fn edit_form_opened_before_a_change_saves_nothing_and_shows_the_current_values() -> TestResult {
    let c = start()?;
    let up = Upstream::start(r#"{"id":1}"#)?;
    let res = c.api(
        "POST",
        "/api/v1/endpoints",
        &c.token,
        Some(&json!({ "name": "shared", "url": up.url, "timeoutMs": 3000 })),
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let eid = res.json()["endpoints"][0]["id"]
        .as_str()
        .ok_or("no endpoint id")?
        .to_owned();
    let admin = c.session("admin@localhost", &c.password)?;
    let edit_path = format!("/console/endpoints/{eid}/edit");
    let form_page = c.get(&edit_path, &admin)?.text();
    assert!(
        form_page.contains("<input type=\"hidden\" name=\"version\" value=\"1\">"),
        "{form_page}"
    );
    let csrf = csrf_of(&form_page).ok_or("no csrf")?;

    // Someone else changes the endpoint after the form was opened.
    let res = c.api(
        "PATCH",
        &format!("/api/v1/endpoints/{eid}"),
        &c.token,
        Some(&json!({ "timeoutMs": 4000, "environment": "staging" })),
    )?;
    assert_eq!(res.status, 200, "{}", res.text());

    let fields = |version: &str| {
        vec![
            ("_csrf", csrf.clone()),
            ("version", version.to_owned()),
            ("name", "from the form".to_owned()),
            ("url", up.url.clone()),
            ("method", "GET".to_owned()),
            ("environment", "production".to_owned()),
            ("content_type", "application/json".to_owned()),
            ("diff_mode", "schema".to_owned()),
            ("timeout_ms", "3000".to_owned()),
            ("retries", "1".to_owned()),
            ("schedule", String::new()),
        ]
    };
    let owned = fields("1");
    let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let res = c.post_form(&edit_path, &admin, &c.origin, &pairs)?;
    let page = res.text();
    assert_eq!(res.status, 412, "{page}");
    assert!(
        page.contains(
            "Someone else changed this endpoint after you opened the form: review the current values below and save again."
        ),
        "{page}"
    );
    // The current stored values and their version, not the submitted ones.
    assert!(
        page.contains("id=\"name\" name=\"name\" value=\"shared\""),
        "{page}"
    );
    assert!(page.contains("value=\"4000\""), "{page}");
    assert!(
        page.contains("id=\"environment\" name=\"environment\" value=\"staging\""),
        "{page}"
    );
    assert!(
        page.contains("<input type=\"hidden\" name=\"version\" value=\"2\">"),
        "{page}"
    );
    let e = c
        .api("GET", &format!("/api/v1/endpoints/{eid}"), &c.token, None)?
        .json();
    assert_eq!(
        (&e["endpoint"]["name"], &e["endpoint"]["timeoutMs"]),
        (&json!("shared"), &json!(4000)),
        "nothing of the stale form is saved: {e}"
    );

    // Saved from the form as it came back (its version): written.
    let owned = fields("2");
    let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let res = c.post_form(&edit_path, &admin, &c.origin, &pairs)?;
    assert_eq!(res.status, 303, "{}", res.text());
    let e = c
        .api("GET", &format!("/api/v1/endpoints/{eid}"), &c.token, None)?
        .json();
    assert_eq!(e["endpoint"]["name"], "from the form", "{e}");
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
        page.contains("<dd id=\"schedule-state\">not scheduled</dd>"),
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

/// The hidden `id` values of the form whose opening tag contains `marker`.
fn hidden_ids(page: &str, marker: &str) -> Vec<String> {
    let Some(at) = page.find(marker) else {
        return Vec::new();
    };
    let form = &page[at..page[at..].find("</form>").map_or(page.len(), |e| at + e)];
    form.split("name=\"id\" value=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn delete_selected_and_undo_an_import() -> TestResult {
    let c = start()?;
    let admin = c.session("admin@localhost", &c.password)?;
    let page = c.get("/console/import", &admin)?.text();
    let csrf = csrf_of(&page).ok_or("no csrf")?;

    // A mistaken import of three operations, undone from its result page.
    let doc = json!({
        "openapi": "3.1.0",
        "info": { "title": "t", "version": "1" },
        "servers": [{ "url": c.origin }],
        "paths": {
            "/a": { "get": { "operationId": "op a", "responses": { "200": { "description": "ok" } } } },
            "/b": { "get": { "operationId": "op b", "responses": { "200": { "description": "ok" } } } },
            "/c": { "get": { "operationId": "op <c>", "responses": { "200": { "description": "ok" } } } }
        }
    })
    .to_string();
    let res = c.post_form(
        "/console/import",
        &admin,
        &c.origin,
        &[
            ("_csrf", &csrf),
            ("document", &doc),
            ("methods", "GET"),
            ("action", "import"),
        ],
    )?;
    assert_eq!(res.status, 200, "{}", res.text());
    let page = res.text();
    assert!(page.contains("Created 3 endpoint(s)"), "{page}");
    let ids = hidden_ids(&page, "id=\"undo-import\"");
    assert_eq!(ids.len(), 3, "{page}");
    assert!(page.contains("Delete the 3 endpoint(s) this import created…"));
    let query: Vec<String> = ids.iter().map(|id| format!("id={id}")).collect();
    let confirm_path = format!("/console/endpoints/delete?{}", query.join("&"));
    let confirm = c.get(&confirm_path, &admin)?;
    assert_eq!(confirm.status, 200);
    let confirm = confirm.text();
    assert!(confirm.contains("Delete these 3 endpoint(s)?"), "{confirm}");
    assert!(confirm.contains("op &lt;c&gt; (GET "), "{confirm}");
    assert_eq!(
        hidden_ids(&confirm, "action=\"/console/endpoints/delete\""),
        ids
    );
    // The confirmation alone deletes nothing; a viewer can neither see nor post it.
    let listed = |token: &str| -> Result<u64, Box<dyn Error>> {
        let body = c.api("GET", "/api/v1/endpoints", token, None)?.json();
        Ok(body["pagination"]["total"].as_u64().ok_or("no total")?)
    };
    assert_eq!(listed(&c.token)?, 3);
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
    assert_eq!(c.get(&confirm_path, &viewer)?.status, 403);
    let viewer_page = c.get("/console/endpoints", &viewer)?.text();
    assert!(!viewer_page.contains("type=\"checkbox\""), "{viewer_page}");
    let csrf = csrf_of(&confirm).ok_or("no csrf")?;
    let mut pairs: Vec<(&str, &str)> = vec![("_csrf", &csrf), ("confirm", "yes")];
    pairs.extend(ids.iter().map(|id| ("id", id.as_str())));
    let viewer_csrf = csrf_of(&viewer_page).ok_or("no csrf")?;
    let mut viewer_pairs = pairs.clone();
    viewer_pairs[0] = ("_csrf", &viewer_csrf);
    let res = c.post_form(
        "/console/endpoints/delete",
        &viewer,
        &c.origin,
        &viewer_pairs,
    )?;
    assert_eq!(res.status, 403, "{}", res.text());
    assert_eq!(listed(&c.token)?, 3);
    // Confirmed: all three go; the list says so.
    let res = c.post_form("/console/endpoints/delete", &admin, &c.origin, &pairs)?;
    assert_eq!(res.status, 303, "{}", res.text());
    let to = res.header("location").ok_or("no location")?.to_owned();
    assert_eq!(to, "/console/endpoints?done=Deleted%203%20endpoint%28s%29.");
    assert!(
        c.get(&to, &admin)?
            .text()
            .contains("Deleted 3 endpoint(s).")
    );
    assert_eq!(listed(&c.token)?, 0);
    for id in &ids {
        let res = c.api("GET", &format!("/api/v1/endpoints/{id}"), &c.token, None)?;
        assert_eq!(res.status, 404);
    }

    // Ticked in the list: the selected one goes, the other stays.
    let up = Upstream::start(r#"{"id":1}"#)?;
    let res = c.api(
        "POST",
        "/api/v1/endpoints",
        &c.token,
        Some(&json!([{ "name": "keep", "url": up.url }, { "name": "drop", "url": up.url }])),
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let created = res.json();
    let keep = created["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let drop = created["endpoints"][1]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let list = c.get("/console/endpoints", &admin)?.text();
    assert!(
        list.contains(&format!("name=\"id\" value=\"{drop}\"")),
        "{list}"
    );
    assert!(list.contains("id=\"delete-selected\""), "{list}");
    let confirm = c
        .get(&format!("/console/endpoints/delete?id={drop}"), &admin)?
        .text();
    assert!(confirm.contains("Delete these 1 endpoint(s)?"), "{confirm}");
    let csrf = csrf_of(&confirm).ok_or("no csrf")?;
    let res = c.post_form(
        "/console/endpoints/delete",
        &admin,
        &c.origin,
        &[("_csrf", &csrf), ("confirm", "yes"), ("id", &drop)],
    )?;
    assert_eq!(res.status, 303, "{}", res.text());
    assert_eq!(listed(&c.token)?, 1);
    let res = c.api("GET", &format!("/api/v1/endpoints/{keep}"), &c.token, None)?;
    assert_eq!(res.status, 200);

    // Nothing selected is a 400; an unknown id, or one of another workspace, is a 404 that
    // deletes nothing (not even the known ids beside it).
    assert_eq!(c.get("/console/endpoints/delete", &admin)?.status, 400);
    let other_ws = c.cli(&["workspace", "create", "--name", "other"], "")?["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let other_token = c.cli(
        &[
            "token",
            "create",
            "--workspace",
            &other_ws,
            "--scopes",
            "endpoints:read,endpoints:write",
            "--role",
            "admin",
        ],
        "",
    )?["token"]
        .as_str()
        .ok_or("no token")?
        .to_owned();
    let res = c.api(
        "POST",
        "/api/v1/endpoints",
        &other_token,
        Some(&json!({ "name": "theirs", "url": up.url })),
    )?;
    assert_eq!(res.status, 201, "{}", res.text());
    let theirs = res.json()["endpoints"][0]["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let missing = "01a21900-0000-7000-8000-000000000000";
    for foreign in [theirs.as_str(), missing] {
        let res = c.get(
            &format!("/console/endpoints/delete?id={keep}&id={foreign}"),
            &admin,
        )?;
        assert_eq!(res.status, 404, "{}", res.text());
        let res = c.post_form(
            "/console/endpoints/delete",
            &admin,
            &c.origin,
            &[
                ("_csrf", &csrf),
                ("confirm", "yes"),
                ("id", &keep),
                ("id", foreign),
            ],
        )?;
        assert_eq!(res.status, 404, "{}", res.text());
    }
    assert_eq!(listed(&c.token)?, 1);
    let res = c.api(
        "GET",
        &format!("/api/v1/endpoints/{theirs}"),
        &other_token,
        None,
    )?;
    assert_eq!(res.status, 200);
    Ok(())
}
