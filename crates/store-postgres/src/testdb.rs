//! Fresh PostgreSQL databases for tests (feature `testkit`), the way crates.io's test databases
//! work: the migrations run once into a template database (`apidrift_tmpl_<fingerprint>`), and
//! every test gets its own `CREATE DATABASE … TEMPLATE …` copy, dropped at the end.
//!
//! * The server comes from `APIDRIFT_TEST_DATABASE_URL` (default [`DEFAULT_URL`]); its user must
//!   be allowed to create databases.
//! * `APIDRIFT_SKIP_POSTGRES=1` makes [`TestDb::create`] answer `None` (tests skip). Otherwise an
//!   unreachable server is an error whose one line says how to start it.
//! * Leftovers of earlier runs (databases of test processes that no longer exist, templates of
//!   older migrations) are dropped when a test database is created.

use crate::run_migrations;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use std::sync::atomic::{AtomicU32, Ordering};

/// The server tests use when `APIDRIFT_TEST_DATABASE_URL` is not set.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// How to start the local server (Debian/Ubuntu `postgresql` package).
pub const START_HINT: &str =
    "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start";

const TEST_PREFIX: &str = "apidrift_test_";
const TEMPLATE_PREFIX: &str = "apidrift_tmpl_";
const SETUP_LOCK_KEY: i64 = 0x6170_6964_7465_7374; // "apidtest"

/// The error of the test-database helpers: one line, no password.
pub type TestDbError = Box<dyn std::error::Error + Send + Sync>;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The server URL tests use.
pub fn server_url() -> String {
    std::env::var("APIDRIFT_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// Whether PostgreSQL tests are skipped (`APIDRIFT_SKIP_POSTGRES=1`).
pub fn skipped() -> bool {
    std::env::var("APIDRIFT_SKIP_POSTGRES").is_ok_and(|v| v == "1")
}

/// `url` with its database name replaced by `db`.
pub fn with_database(url: &str, db: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let (head, rest) = url.split_at(start);
    let (authority, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let query = tail.find('?').map_or("", |i| &tail[i..]);
    format!("{head}{authority}/{db}{query}")
}

async fn admin_connection(url: &str) -> Result<AsyncPgConnection, TestDbError> {
    AsyncPgConnection::establish(url).await.map_err(|e| {
        let first = e.to_string().lines().next().unwrap_or_default().to_owned();
        format!(
            "PostgreSQL is unreachable ({first}); start it with `{START_HINT}`, \
             point APIDRIFT_TEST_DATABASE_URL at a server, or set APIDRIFT_SKIP_POSTGRES=1"
        )
        .into()
    })
}

#[derive(diesel::QueryableByName)]
struct Name {
    #[diesel(sql_type = diesel::sql_types::Text)]
    datname: String,
}

async fn database_names(admin: &mut AsyncPgConnection) -> Result<Vec<String>, TestDbError> {
    let rows: Vec<Name> = diesel::sql_query(
        "SELECT datname::text AS datname FROM pg_database \
         WHERE datname LIKE 'apidrift\\_test\\_%' OR datname LIKE 'apidrift\\_tmpl\\_%'",
    )
    .load(admin)
    .await?;
    Ok(rows.into_iter().map(|r| r.datname).collect())
}

/// Whether the test process that created `name` (`apidrift_test_<pid>_<n>`) is gone.
fn orphaned(name: &str) -> bool {
    let pid = name
        .strip_prefix(TEST_PREFIX)
        .and_then(|r| r.split('_').next());
    match pid.and_then(|p| p.parse::<u32>().ok()) {
        Some(pid) => {
            pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        }
        None => true,
    }
}

/// Runs `sql`, retrying for up to 5 s while PostgreSQL says the database is still in use (a
/// just-closed connection can linger for a moment after the client dropped it).
async fn when_unused(admin: &mut AsyncPgConnection, sql: &str) -> Result<(), TestDbError> {
    let mut attempts = 0;
    loop {
        match admin.batch_execute(sql).await {
            Ok(()) => return Ok(()),
            Err(e) if attempts < 50 && e.to_string().contains("being accessed by other users") => {
                attempts += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[derive(diesel::QueryableByName)]
struct DbStats {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    xact_commit: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    tup_inserted: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    tup_updated: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    tup_deleted: i64,
}

#[derive(diesel::QueryableByName)]
struct TableStats {
    #[diesel(sql_type = diesel::sql_types::Text)]
    relname: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    writes: i64,
}

#[derive(diesel::QueryableByName)]
struct StatementCalls {
    #[diesel(sql_type = diesel::sql_types::Text)]
    query: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    calls: i64,
}

/// Write counters of one test database ([`TestDb::write_stats`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteStats {
    /// Committed transactions (reads included: every autocommit statement is one).
    pub xact_commit: i64,
    pub tup_inserted: i64,
    pub tup_updated: i64,
    pub tup_deleted: i64,
    /// Rows inserted + updated + deleted, per table.
    pub table_writes: std::collections::BTreeMap<String, i64>,
}

/// A database of its own for one test.
#[derive(Debug)]
pub struct TestDb {
    name: String,
    server: String,
    /// The URL of the fresh, migrated database.
    pub url: String,
}

impl TestDb {
    /// Creates a fresh migrated database, or `None` when PostgreSQL tests are skipped.
    pub async fn create() -> Result<Option<TestDb>, TestDbError> {
        if skipped() {
            return Ok(None);
        }
        let server = server_url();
        let mut admin = admin_connection(&server).await?;
        let template = format!("{TEMPLATE_PREFIX}{}", env!("APIDRIFT_PG_MIGRATIONS_HASH"));
        let name = format!(
            "{TEST_PREFIX}{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        // One test process at a time builds the template and cleans up.
        admin
            .batch_execute(&format!("SELECT pg_advisory_lock({SETUP_LOCK_KEY})"))
            .await?;
        let result = Self::prepare(&mut admin, &server, &template, &name).await;
        admin
            .batch_execute(&format!("SELECT pg_advisory_unlock({SETUP_LOCK_KEY})"))
            .await?;
        result?;
        Ok(Some(TestDb {
            url: with_database(&server, &name),
            name,
            server,
        }))
    }

    async fn prepare(
        admin: &mut AsyncPgConnection,
        server: &str,
        template: &str,
        name: &str,
    ) -> Result<(), TestDbError> {
        let existing = database_names(admin).await?;
        for db in &existing {
            let stale_template = db.starts_with(TEMPLATE_PREFIX) && db != template;
            if stale_template || (db.starts_with(TEST_PREFIX) && orphaned(db)) {
                admin
                    .batch_execute(&format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)"))
                    .await?;
            }
        }
        if !existing.iter().any(|db| db == template) {
            let building = format!("{template}_building");
            // One statement per call: DROP/CREATE DATABASE cannot share an implicit transaction.
            admin
                .batch_execute(&format!(
                    "DROP DATABASE IF EXISTS \"{building}\" WITH (FORCE)"
                ))
                .await?;
            admin
                .batch_execute(&format!("CREATE DATABASE \"{building}\""))
                .await?;
            run_migrations(&with_database(server, &building)).await?;
            let rename = format!("ALTER DATABASE \"{building}\" RENAME TO \"{template}\"");
            when_unused(admin, &rename).await?;
        }
        when_unused(
            admin,
            &format!("CREATE DATABASE \"{name}\" TEMPLATE \"{template}\""),
        )
        .await
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database's cumulative statistics (`pg_stat_database`, `pg_stat_user_tables`), read on
    /// a connection of its own. Backends report their counters lazily (at the end of a
    /// transaction at most once a second, else after about 10 s idle): wait for the server under
    /// test to be idle before trusting a figure.
    pub async fn write_stats(&self) -> Result<WriteStats, TestDbError> {
        let mut c = AsyncPgConnection::establish(&self.url).await?;
        // A fresh snapshot, not one cached earlier in this transaction.
        c.batch_execute("SELECT pg_stat_clear_snapshot()").await?;
        let db: DbStats = diesel::sql_query(
            "SELECT xact_commit, tup_inserted, tup_updated, tup_deleted \
             FROM pg_stat_database WHERE datname = current_database()",
        )
        .get_result(&mut c)
        .await?;
        let tables: Vec<TableStats> = diesel::sql_query(
            "SELECT relname::text AS relname, n_tup_ins + n_tup_upd + n_tup_del AS writes \
             FROM pg_stat_user_tables ORDER BY relname",
        )
        .load(&mut c)
        .await?;
        Ok(WriteStats {
            xact_commit: db.xact_commit,
            tup_inserted: db.tup_inserted,
            tup_updated: db.tup_updated,
            tup_deleted: db.tup_deleted,
            table_writes: tables.into_iter().map(|t| (t.relname, t.writes)).collect(),
        })
    }

    /// The statements run in this database so far, from `pg_stat_statements` (the extension is
    /// created in the database on first use; the server must preload it): each normalised text
    /// with its number of executions, most executed first. The reads of these statistics
    /// themselves, the `SET …` of connection set-ups and the `SET`/`RESET` of `plan_cache_mode`
    /// around a list page (sent in the page's round trip) are left out. Executions are counted
    /// when they end, so a figure is exact once the calls it follows have returned.
    pub async fn statement_calls(&self) -> Result<Vec<(String, i64)>, TestDbError> {
        let mut c = AsyncPgConnection::establish(&self.url).await?;
        c.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .await?;
        let rows: Vec<StatementCalls> = diesel::sql_query(
            "SELECT query, calls FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE 'SET %' \
             AND query NOT LIKE 'RESET %' \
             ORDER BY calls DESC, query",
        )
        .load(&mut c)
        .await?;
        Ok(rows.into_iter().map(|r| (r.query, r.calls)).collect())
    }

    /// Drops the database (closing any connection still open on it).
    pub async fn drop_db(self) -> Result<(), TestDbError> {
        let mut admin = admin_connection(&self.server).await?;
        admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ))
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_name_replacement() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            with_database("postgresql://u:p@h/db?sslmode=disable", "y"),
            "postgresql://u:p@h/y?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "z"), "postgres://h/z");
    }

    #[test]
    fn orphan_detection() {
        assert!(!orphaned(&format!("{TEST_PREFIX}{}_0", std::process::id())));
        assert!(orphaned(&format!("{TEST_PREFIX}4000000000_0")));
        assert!(orphaned(&format!("{TEST_PREFIX}garbage")));
    }
}
