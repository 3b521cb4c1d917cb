//! The conformance suite on PostgreSQL (a fresh database per test, cloned from a migrated
//! template), plus the PostgreSQL-only tests: migrations from an empty database, concurrent
//! migrators under the advisory lock, and the raw-dump canary.
//!
//! The server is `APIDRIFT_TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).
//! When it is unreachable these tests fail with one line saying how to start it, unless
//! `APIDRIFT_SKIP_POSTGRES=1` is set.

use apidrift_seal::{Binding, Field, KeyRing, SecretKey};
use apidrift_store::testkit::{self, TestResult};
use apidrift_store::{ConnectOptions, SealedField, Store, StoreError};
use apidrift_store_postgres::testdb::{TestDb, TestDbError};
use apidrift_store_postgres::{PgStore, run_migrations};
use std::sync::Arc;
use uuid::Uuid;

fn options() -> ConnectOptions {
    ConnectOptions {
        migrate: true,
        max_connections: Some(4),
    }
}

async fn setup() -> Result<Option<(Arc<dyn Store>, TestDb)>, TestDbError> {
    let Some(db) = TestDb::create().await? else {
        return Ok(None);
    };
    let store = PgStore::connect_with(&db.url, options()).await?;
    Ok(Some((Arc::new(store), db)))
}

async fn teardown(db: TestDb) -> Result<(), TestDbError> {
    db.drop_db().await
}

apidrift_store::conformance_suite!(setup = setup, teardown = teardown);
apidrift_store::ops_conformance_suite!(setup = setup, teardown = teardown);

/// An empty database of its own (not from the template).
async fn empty_db() -> Result<Option<TestDb>, TestDbError> {
    let Some(db) = TestDb::create().await? else {
        return Ok(None);
    };
    // Reuse the name but start over from nothing.
    let store = PgStore::connect_with(
        &db.url,
        ConnectOptions {
            migrate: false,
            ..options()
        },
    )
    .await?;
    drop(store);
    let admin = apidrift_store_postgres::testdb::server_url();
    let mut conn =
        <diesel_async::AsyncPgConnection as diesel_async::AsyncConnection>::establish(&admin)
            .await?;
    for sql in [
        format!("DROP DATABASE \"{}\" WITH (FORCE)", db.name()),
        format!("CREATE DATABASE \"{}\"", db.name()),
    ] {
        diesel_async::SimpleAsyncConnection::batch_execute(&mut conn, &sql).await?;
    }
    Ok(Some(db))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrations_run_up_from_empty_under_a_lock() -> TestResult {
    let Some(db) = empty_db().await? else {
        return Ok(());
    };
    let result = async {
        let store = PgStore::connect_with(
            &db.url,
            ConnectOptions {
                migrate: false,
                ..options()
            },
        )
        .await?;
        assert!(
            store.count_workspaces().await.is_err(),
            "no tables before migrating"
        );
        // Three instances start at once: exactly one applies each migration.
        let (a, b, c) = tokio::join!(
            run_migrations(&db.url),
            run_migrations(&db.url),
            run_migrations(&db.url)
        );
        let applied: Vec<usize> = [a?, b?, c?].iter().map(|r| r.applied.len()).collect();
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/postgres");
        let expected = std::fs::read_dir(root)?
            .filter(|e| e.as_ref().is_ok_and(|e| e.path().is_dir()))
            .count();
        assert_eq!(applied.iter().sum::<usize>(), expected, "{applied:?}");
        assert_eq!(applied.iter().filter(|n| **n > 0).count(), 1, "{applied:?}");
        assert_eq!(store.count_workspaces().await?, 0);
        assert!(store.migrate().await?.applied.is_empty());
        TestResult::Ok(())
    }
    .await;
    db.drop_db().await?;
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_urls_fail_clearly() -> TestResult {
    let err = PgStore::connect("sqlite://x.db").await.err();
    assert!(matches!(err, Some(StoreError::InvalidUrl(_))), "{err:?}");
    let err = PgStore::connect("postgres://nobody:secret-pw@127.0.0.1:1/none")
        .await
        .err();
    assert!(matches!(err, Some(StoreError::Unavailable(_))), "{err:?}");
    assert!(
        !format!("{err:?}").contains("secret-pw"),
        "the password leaked: {err:?}"
    );
    Ok(())
}

fn seal_field(field: SealedField) -> Field {
    match field {
        SealedField::EndpointAuth => Field::EndpointAuth,
        SealedField::EndpointHeaders => Field::EndpointHeaders,
        SealedField::EndpointRequestBody => Field::EndpointRequestBody,
        SealedField::BaselineBody => Field::BaselineBody,
        _ => Field::CheckBody,
    }
}

#[derive(diesel::QueryableByName)]
struct Line {
    #[diesel(sql_type = diesel::sql_types::Text)]
    line: String,
}

/// Every row of every table as text (`pg_dump`-like, without needing a matching pg_dump).
async fn dump(url: &str) -> Result<String, TestDbError> {
    use diesel_async::{AsyncConnection, RunQueryDsl};
    let mut conn = diesel_async::AsyncPgConnection::establish(url).await?;
    let tables: Vec<Line> = diesel::sql_query(
        "SELECT tablename::text AS line FROM pg_tables WHERE schemaname = 'public'",
    )
    .load(&mut conn)
    .await?;
    let mut out = String::new();
    for t in tables {
        let rows: Vec<Line> =
            diesel::sql_query(format!("SELECT t::text AS line FROM \"{}\" t", t.line))
                .load(&mut conn)
                .await?;
        for r in rows {
            out.push_str(&r.line);
            out.push('\n');
        }
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_dump_holds_no_canary_secret() -> TestResult {
    let Some((store, db)) = setup().await? else {
        return Ok(());
    };
    let result = async {
        let canary = testkit::Canary::new();
        let ring = KeyRing::new(SecretKey::generate()?, vec![])?;
        let seal = |plain: &[u8], ws: Uuid, row: Uuid, field: SealedField| {
            let binding = Binding::new(ws.into_bytes(), row.into_bytes(), seal_field(field));
            ring.seal(plain, &binding).unwrap_or_default()
        };
        let hash = apidrift_seal::token::hash;
        let token_hash = canary.write(&*store, &seal, &hash).await?;
        let text = dump(&db.url).await?;
        // bytea prints as hex: search for the secrets both raw and hex-encoded.
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        canary.assert_dump(&token_hash, |needle| {
            let needle_text = String::from_utf8_lossy(needle);
            text.contains(needle_text.as_ref()) || text.contains(&hex(needle))
        })?;
        TestResult::Ok(())
    }
    .await;
    drop(store);
    db.drop_db().await?;
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_is_refused_with_a_pointer_to_pg_dump() -> TestResult {
    let Some((store, db)) = setup().await? else {
        return Ok(());
    };
    let target = std::env::temp_dir().join(format!("apidrift-pg-backup-{}.db", Uuid::now_v7()));
    let err = store.backup_to(&target).await.err();
    db.drop_db().await?;
    assert!(matches!(err, Some(StoreError::Unsupported(_))), "{err:?}");
    assert!(!target.exists());
    Ok(())
}
