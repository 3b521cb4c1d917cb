//! Drift as incidents end to end (issue 27, item 1): the real `apidrift serve` with a loopback
//! upstream and a loopback webhook receiver (the ones of [`crate::alerts`]), on SQLite and
//! PostgreSQL.
//!
//! An upstream that drifts once then stays: 20 checks are one diff seen 20 times (the list holds
//! one diff, every check row names it) and one alert; a different drift opens a second diff
//! with a second alert; a clean check resolves the open diff (the same drift after it is a new
//! diff); accepting closes a diff (its count stays, the next check is clean).

use crate::alerts::{
    ALL_SCOPES, BODY, DRIFTED, ENV, Loopback, TestResult, call, deliveries, wait_for,
};
use crate::env::{Backend, Env};
use apidrift_e2e::server::Server;
use serde_json::{Value, json};
use std::error::Error;
use std::time::Duration;

/// The first user's id turned into a string: a breaking change, another drift than [`DRIFTED`].
const DRIFTED_AGAIN: &str = r#"{"users":[{"id":"1","name":"ann","email":"a@x"}],"total":1}"#;

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

both_backends!(a_persisting_drift_is_one_diff);

/// `POST …/check`: the 200 body.
fn check(server: &Server, token: &str, id: &str) -> Result<Value, Box<dyn Error>> {
    let (s, b) = call(
        server,
        "POST",
        &format!("/api/v1/endpoints/{id}/check"),
        token,
        None,
    )?;
    assert_eq!(s, 200, "{b}");
    Ok(b)
}

fn text(v: &Value) -> Result<String, Box<dyn Error>> {
    Ok(v.as_str()
        .ok_or_else(|| format!("not a string: {v}"))?
        .to_owned())
}

/// The deliveries the receiver got, after the queue had time to drain: (type, diff id).
fn delivered(
    rx: &Loopback,
    secret: &str,
    n: usize,
) -> Result<Vec<(String, String)>, Box<dyn Error>> {
    wait_for(20, &format!("{n} deliveries"), || rx.seen().len() >= n)?;
    // Anything queued beyond `n` would arrive within the worker's poll (50 ms).
    std::thread::sleep(Duration::from_millis(1000));
    Ok(deliveries(rx, secret)?
        .into_iter()
        .map(|(kind, _, body)| (kind, body["diff"]["id"].as_str().unwrap_or("").to_owned()))
        .collect())
}

fn a_persisting_drift_is_one_diff(backend: Backend) -> TestResult {
    let Some(env) = Env::new(backend, ENV)? else {
        return Ok(());
    };
    let (_, token) = env.workspace_and_token(&[], ALL_SCOPES, "admin")?;
    let up = Loopback::start(BODY)?;
    let rx = Loopback::start("{}")?;
    let server = env.serve(&[])?;
    let (s, hook) = call(
        &server,
        "POST",
        "/v1/webhooks",
        &token,
        Some(&json!({"url": rx.url("/h")})),
    )?;
    assert_eq!(s, 201, "{hook}");
    let secret = text(&hook["webhook"]["secret"])?;
    let (s, created) = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({"name": "users", "url": up.url("/users"), "diffMode": "full"})),
    )?;
    assert_eq!(s, 201, "{created}");
    let id = text(&created["endpoints"][0]["id"])?;
    let (s, b) = call(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        None,
    )?;
    assert_eq!(s, 201, "{b}");

    // The upstream drifts once and stays so: 20 checks, one diff seen 20 times, one alert.
    up.set(DRIFTED);
    let first = check(&server, &token, &id)?;
    let d1 = text(&first["diffId"])?;
    assert_eq!(
        (first["seenCount"].as_u64(), first["alertsSent"].as_u64()),
        (Some(1), Some(1)),
        "{first}"
    );
    for n in 2..=20u64 {
        let b = check(&server, &token, &id)?;
        assert_eq!(b["diffId"], d1.as_str(), "check {n}: {b}");
        assert_eq!(
            (b["seenCount"].as_u64(), b["alertsSent"].as_u64()),
            (Some(n), Some(0)),
            "check {n}: {b}"
        );
        assert_eq!(b["breakingCount"], first["breakingCount"], "{b}");
    }
    let (s, list) = call(&server, "GET", "/api/v1/diffs", &token, None)?;
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["pagination"]["total"], 1, "{list}");
    let row = &list["diffs"][0];
    assert_eq!(row["id"], d1.as_str());
    assert_eq!(row["seenCount"], 20, "{row}");
    assert_eq!(row["firstSeenAt"], row["createdAt"], "{row}");
    assert!(
        text(&row["lastSeenAt"])? > text(&row["firstSeenAt"])?,
        "{row}"
    );
    let (s, detail) = call(&server, "GET", &format!("/api/v1/diffs/{d1}"), &token, None)?;
    assert_eq!(s, 200, "{detail}");
    assert_eq!(
        (&detail["diff"]["seenCount"], &detail["diff"]["lastSeenAt"]),
        (&row["seenCount"], &row["lastSeenAt"])
    );
    let (s, checks) = call(
        &server,
        "GET",
        &format!("/api/v1/endpoints/{id}/checks?limit=100"),
        &token,
        None,
    )?;
    assert_eq!(s, 200, "{checks}");
    let linked = checks["checks"]
        .as_array()
        .ok_or("no checks")?
        .iter()
        .filter(|c| c["diffId"] == d1.as_str())
        .count();
    assert_eq!(linked, 20, "every drifting check names the diff: {checks}");
    let got = delivered(&rx, &secret, 1)?;
    assert_eq!(got, vec![("drift.detected".to_owned(), d1.clone())]);

    // A different drift: a second diff and a second alert; it persists on its own diff.
    up.set(DRIFTED_AGAIN);
    let b = check(&server, &token, &id)?;
    let d2 = text(&b["diffId"])?;
    assert_ne!(d2, d1);
    assert_eq!(
        (b["seenCount"].as_u64(), b["alertsSent"].as_u64()),
        (Some(1), Some(1)),
        "{b}"
    );
    let b = check(&server, &token, &id)?;
    assert_eq!(
        (
            text(&b["diffId"])?,
            b["seenCount"].as_u64(),
            b["alertsSent"].as_u64()
        ),
        (d2.clone(), Some(2), Some(0)),
        "{b}"
    );
    let got = delivered(&rx, &secret, 2)?;
    assert_eq!(got[1], ("drift.detected".to_owned(), d2.clone()), "{got:?}");
    assert_eq!(got.len(), 2, "{got:?}");

    // Clean: resolved (one drift.resolved), and the same drift after it is a new diff.
    up.set(BODY);
    let b = check(&server, &token, &id)?;
    assert_eq!(
        (
            b["diffId"].is_null(),
            b["seenCount"].is_null(),
            b["alertsSent"].as_u64()
        ),
        (true, true, Some(1)),
        "{b}"
    );
    up.set(DRIFTED_AGAIN);
    let b = check(&server, &token, &id)?;
    let d3 = text(&b["diffId"])?;
    assert!(
        d3 != d2 && d3 != d1,
        "a resolved drift is not reopened: {b}"
    );
    assert_eq!(
        (b["seenCount"].as_u64(), b["alertsSent"].as_u64()),
        (Some(1), Some(1)),
        "{b}"
    );
    let got = delivered(&rx, &secret, 4)?;
    // The two events are delivered by the outbox workers in either order.
    let mut last_two = got[2..].to_vec();
    last_two.sort();
    assert_eq!(
        last_two,
        [
            ("drift.detected".to_owned(), d3.clone()),
            ("drift.resolved".to_owned(), d2.clone())
        ],
        "{got:?}"
    );

    // Accept: closed. The accepted response is the baseline, so the next check is clean and
    // leaves the accepted diff's count alone.
    let (s, b) = call(
        &server,
        "POST",
        &format!("/api/v1/diffs/{d3}/accept"),
        &token,
        None,
    )?;
    assert_eq!(
        (s, b["diff"]["accepted"].as_bool()),
        (200, Some(true)),
        "{b}"
    );
    let b = check(&server, &token, &id)?;
    assert!(b["diffId"].is_null(), "{b}");
    let (_, list) = call(&server, "GET", "/api/v1/diffs", &token, None)?;
    let rows: Vec<(String, u64, bool)> = list["diffs"]
        .as_array()
        .ok_or("no diffs")?
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap_or("").to_owned(),
                d["seenCount"].as_u64().unwrap_or(0),
                d["accepted"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![(d3, 1, true), (d2, 2, false), (d1, 20, false)],
        "{list}"
    );
    Ok(())
}
