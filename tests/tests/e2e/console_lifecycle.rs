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
