//! The [`apidrift_store::UserStore`] conformance test on PostgreSQL (a fresh database; skipped
//! with `APIDRIFT_SKIP_POSTGRES=1`).

use apidrift_store::ConnectOptions;
use apidrift_store_postgres::PgStore;
use apidrift_store_postgres::testdb::TestDb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_store_conformance() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let Some(db) = TestDb::create().await? else {
        return Ok(());
    };
    let options = ConnectOptions {
        migrate: true,
        max_connections: Some(2),
    };
    let store = PgStore::connect_with(&db.url, options).await?;
    let outcome = apidrift_store::users::user_store_conformance(&store).await;
    drop(store);
    db.drop_db().await?;
    outcome
}
