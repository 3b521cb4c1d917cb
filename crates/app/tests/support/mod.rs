//! What the service's integration tests share: a fresh store on each backend.

use apidrift_store::Store;
use apidrift_store_postgres::testdb::TestDb;
use std::sync::Arc;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

pub enum Backend {
    Sqlite,
    Postgres,
}

/// A fresh, migrated store; its temporary file or database lives as long as this value.
pub struct TestStore {
    pub store: Arc<dyn Store>,
    _dir: Option<tempfile::TempDir>,
    _pg: Option<TestDb>,
}

/// A store on `backend`, or `None` when the PostgreSQL tests are switched off.
pub async fn test_store(backend: Backend) -> Result<Option<TestStore>, Box<dyn std::error::Error>> {
    Ok(Some(match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("t.db");
            let store =
                apidrift_store_sqlite::SqliteStore::connect(path.to_str().unwrap_or("t.db"))
                    .await?;
            TestStore {
                store: Arc::new(store),
                _dir: Some(dir),
                _pg: None,
            }
        }
        Backend::Postgres => {
            let Some(db) = TestDb::create().await.map_err(|e| e.to_string())? else {
                return Ok(None);
            };
            let store = apidrift_store_postgres::PgStore::connect(&db.url).await?;
            TestStore {
                store: Arc::new(store),
                _dir: None,
                _pg: Some(db),
            }
        }
    }))
}
