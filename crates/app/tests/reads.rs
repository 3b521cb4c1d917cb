//! Statements per read on PostgreSQL (issue 29), counted with `pg_stat_statements` in a database
//! of the test's own: a page of the endpoint list is ONE statement whatever its filter, its
//! offset (an empty page past the end included) or its sparkline points (plus the setting of
//! its generic plan and the reset, sent in the same round trip and not counted); a token that
//! authenticated a moment ago is answered without a statement, and a revoke through the service
//! takes effect at once. The figures of the reads the list route made before (the token lookup,
//! `list_endpoints` and `uptime_counts`) are printed beside them.

use apidrift_app::read::{EndpointFilter, PageRequest};
use apidrift_app::{Actor, MintToken, Service};
use apidrift_model::net::AllowList;
use apidrift_model::{Health, Plan, Role, Scope};
use apidrift_seal::{KeyRing, SecretKey};
use apidrift_store::{NewWorkspace, Store, new_id};
use apidrift_store_postgres::testdb::TestDb;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use time::OffsetDateTime;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Statement executions per normalised text.
async fn snapshot(db: &TestDb) -> Result<BTreeMap<String, i64>, Box<dyn std::error::Error>> {
    Ok(db
        .statement_calls()
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect())
}

/// The statements run between two snapshots, with their counts.
fn delta(before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>) -> Vec<(String, i64)> {
    after
        .iter()
        .filter_map(|(q, n)| {
            let d = n - before.get(q).copied().unwrap_or(0);
            (d != 0).then(|| (q.clone(), d))
        })
        .collect()
}

fn total(d: &[(String, i64)]) -> i64 {
    d.iter().map(|(_, n)| n).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_page_is_one_statement_and_a_cached_token_none() -> TestResult {
    let Some(db) = TestDb::create().await.map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let result = run(&db).await;
    db.drop_db().await.map_err(|e| e.to_string())?;
    result
}

async fn run(db: &TestDb) -> TestResult {
    let store: Arc<dyn Store> = Arc::new(apidrift_store_postgres::PgStore::connect(&db.url).await?);
    let ws = new_id();
    store
        .create_workspace(NewWorkspace {
            id: ws,
            name: "w".into(),
            plan: Plan::Enterprise,
            endpoint_limit: None,
            check_quota: None,
            created_at: OffsetDateTime::now_utc(),
        })
        .await?;
    let keys = KeyRing::new(SecretKey::generate()?, Vec::new())?;
    let service = Service::new(store.clone(), Some(keys), AllowList::default())?;
    let operator = Actor::operator(ws);
    let bodies: Vec<_> = (0..30)
        .map(|n| json!({"name": format!("e{n}"), "url": format!("https://api.example.com/e{n}")}))
        .collect();
    service
        .register_endpoints(&operator, &json!(bodies))
        .await?;
    let minted = service
        .mint_token(
            &operator,
            MintToken {
                name: "reader".into(),
                scopes: vec![Scope::EndpointsRead],
                role: Role::Viewer,
                expires_in_days: None,
            },
        )
        .await?;
    let text = minted.expose().to_owned();
    let page = |limit, offset| PageRequest { limit, offset };
    let all = EndpointFilter::default();
    let now = OffsetDateTime::now_utc();
    // Warm the pool: its connections' set-up is not a read's.
    for _ in 0..3 {
        service
            .list_endpoints(&operator, &all, page(25, 0), 0)
            .await?;
    }

    // Before (the route's reads until this change), for the record.
    let s0 = snapshot(db).await?;
    let found = store.find_token_by_hash(&minted.token.token_hash).await?;
    assert!(found.is_some());
    let listed = store.list_endpoints(ws, &all, page(25, 0)).await?;
    let ids: Vec<_> = listed.items.iter().map(|e| e.id).collect();
    store.uptime_counts(ws, &ids, now).await?;
    let s1 = snapshot(db).await?;
    let before = delta(&s0, &s1);
    eprintln!(
        "before: token lookup + list_endpoints + uptime_counts = {} statements: {before:#?}",
        total(&before)
    );

    // After: the token lookup once, then from the cache.
    let s0 = snapshot(db).await?;
    assert!(service.authenticate(&text).await?.is_some());
    let s1 = snapshot(db).await?;
    assert_eq!(total(&delta(&s0, &s1)), 1, "{:#?}", delta(&s0, &s1));
    for _ in 0..5 {
        assert!(service.authenticate(&text).await?.is_some());
    }
    let s2 = snapshot(db).await?;
    assert_eq!(total(&delta(&s1, &s2)), 0, "{:#?}", delta(&s1, &s2));

    // One statement per page, whatever the page.
    let staging = EndpointFilter {
        health: Some(Health::Unknown),
        environment: Some("production".into()),
    };
    let cases = [
        (&all, page(25, 0), 0, 25),
        (&all, page(25, 25), 0, 5),
        (&all, page(25, 100), 0, 0),
        (&staging, page(10, 10), 0, 10),
        (&staging, page(10, 500), 0, 0),
        (&all, page(25, 0), 30, 25),
    ];
    for (filter, p, points, rows) in cases {
        let s0 = snapshot(db).await?;
        let got = service.list_endpoints(&operator, filter, p, points).await?;
        let s1 = snapshot(db).await?;
        let d = delta(&s0, &s1);
        assert_eq!(got.items.len(), rows, "{filter:?} {p:?}");
        assert_eq!(got.total, 30, "{filter:?} {p:?}");
        assert!(got.items.iter().all(|l| l.endpoint.uptime.is_some()));
        assert_eq!(total(&d), 1, "{filter:?} {p:?}: {d:#?}");
    }
    eprintln!("after: token lookup 0 statements (cached), list page 1 statement");

    // A revoke through the service takes effect at once (its cached lookup is evicted).
    service.revoke_token(&operator, minted.token.id).await?;
    assert!(service.authenticate(&text).await?.is_none());
    Ok(())
}
