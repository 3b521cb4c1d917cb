//! The [`apidrift_store::UserStore`] conformance test on SQLite.

use apidrift_store_sqlite::SqliteStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_store_conformance() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("users.db");
    let store = SqliteStore::connect(&path.to_string_lossy()).await?;
    apidrift_store::users::user_store_conformance(&store).await
}
