//! # apidrift-store-sqlite
//!
//! The SQLite adapter of [`apidrift_store::Store`]: one file on a laptop, the default database of
//! `apidrift serve` (`sqlite://apidrift.db`).
//!
//! Public API: [`SqliteStore`] with [`SqliteStore::connect`] / [`SqliteStore::connect_with`]
//! (accepting `sqlite://PATH`, `sqlite::memory:` or a plain path) and the [`Store`] impl;
//! [`MIGRATIONS`], the embedded `migrations/sqlite` folder.
//!
//! How it works:
//! * diesel with bundled libsqlite3 (≥ 3.35 for `RETURNING`), driven through diesel-async's
//!   `SyncConnectionWrapper<SqliteConnection>` in a deadpool pool (default 4 connections). Long
//!   reads run as one closure on the blocking thread pool (`SyncConnectionWrapper::spawn_blocking`).
//! * Short reads (a lookup by key, a page, the check context) run on the calling thread, on that
//!   thread's own read connection to the database, without the two thread hand-offs
//!   (`SqliteStore::quick`, the `local` module); a slow one delays its thread's other tasks.
//! * Every pooled connection is set up with `busy_timeout` first (5 s), then `journal_mode=WAL`,
//!   `foreign_keys=ON`, `synchronous=NORMAL`.
//! * Writes run in `BEGIN IMMEDIATE` transactions: SQLite has one writer at a time, and taking the
//!   write lock up front makes a second writer wait (busy timeout) instead of failing with
//!   "database is locked" on a lock upgrade. Lists read in one deferred transaction so the page
//!   and its total come from the same snapshot.
//! * Every write of a file database runs on one writer thread with its own connection: the
//!   writes that arrive while a transaction is open are committed together, each in a savepoint
//!   (one failing write is rolled back alone), and each caller is answered after the commit (see
//!   the `writer` module). Writers no longer sleep in SQLite's busy handler (which polls at 1,
//!   2, 5, 10… ms); the busy timeout remains for other processes.
//! * Every query is prepared once per connection: diesel's DSL queries are cached by type, the
//!   raw SQL goes through `cached::cached` (cached by its constant text) instead of
//!   `diesel::sql_query` (compiled on every call).
//! * `sqlite::memory:`: every connection of a pool would open its own empty database, so a memory
//!   store uses exactly one connection (requests queue on it). Tests use a temporary file.
//! * uuids are stored as lower-case hyphenated TEXT, timestamps as INTEGER microseconds since the
//!   Unix epoch (UTC), JSON as TEXT; all sort correctly.

mod alerts;
mod cached;
mod checks;
mod contracts;
mod diffs;
mod endpoints;
mod history;
mod lifecycle;
mod local;
mod ops;
mod rows;
mod run;
mod schema;
mod sealed;
mod tokens;
mod totals;
mod users;
mod webhooks;
mod workspaces;
mod writer;

use apidrift_model::{DiffDetail, DiffSummary, Health};
use apidrift_store::{
    AcceptOutcome, Backend, BulkCreated, CheckContext, ConnectOptions, DiffFilter, EndpointFilter,
    MigrationReport, NewBaseline, NewCheck, NewDiff, NewEndpointRow, NewToken, NewWorkspace, Page,
    PageRequest, QuotaUsage, RecordedCheck, ResponseContract, SealedField, SealedValue, Store,
    StoreError, StoredBaseline, StoredCheck, StoredEndpoint, StoredToken, Workspace,
    WorkspaceUpdate,
};
use async_trait::async_trait;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig};
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use std::path::Path;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// The embedded `migrations/sqlite` folder.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT_MS: u32 = 5_000;
/// Page cache per connection (KiB) and memory-mapped I/O window: list totals scan indexes, and
/// reading them from the map instead of through small read() calls keeps them fast.
const CACHE_KIB: u32 = 32 * 1024;
const MMAP_BYTES: u64 = 256 * 1024 * 1024;
/// Default pool size (SQLite has one writer at a time; readers share the WAL).
const DEFAULT_POOL: usize = 4;

type Conn = SyncConnectionWrapper<SqliteConnection>;

/// The error inside a blocking closure: a store error, or a diesel error to map.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
    /// A check's recording found the monthly quota used up: its steps roll back.
    #[error("monthly check quota exhausted ({used} of {quota})")]
    QuotaExhausted { used: u64, quota: u32 },
}

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

fn map_db(e: diesel::result::Error) -> StoreError {
    use diesel::result::{DatabaseErrorKind, Error as D};
    match e {
        D::NotFound => StoreError::NotFound,
        D::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            StoreError::Conflict(info.message().to_owned())
        }
        D::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _) => StoreError::NotFound,
        other => StoreError::Database(other.to_string()),
    }
}

impl From<Error> for StoreError {
    fn from(e: Error) -> Self {
        match e {
            Error::Store(s) => s,
            Error::Db(d) => map_db(d),
            quota @ Error::QuotaExhausted { .. } => StoreError::Conflict(quota.to_string()),
        }
    }
}

/// Where a SQLite URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Memory,
    File(String),
}

fn parse_target(url: &str) -> Result<Target, StoreError> {
    let url = url.trim();
    if url == "sqlite::memory:" || url == ":memory:" || url == "sqlite://:memory:" {
        return Ok(Target::Memory);
    }
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        return Err(StoreError::InvalidUrl(
            "a PostgreSQL URL was given to the SQLite adapter".into(),
        ));
    }
    let path = if let Some(rest) = url.strip_prefix("sqlite://") {
        rest
    } else if let Some(rest) = url.strip_prefix("sqlite:") {
        rest
    } else if url.contains("://") {
        return Err(StoreError::InvalidUrl(
            "expected sqlite://PATH, sqlite::memory: or a file path".into(),
        ));
    } else {
        url
    };
    // `sqlite://x.db?mode=rwc`: connection options in the query are not used.
    let path = path.split('?').next().unwrap_or(path);
    if path.is_empty() {
        return Err(StoreError::InvalidUrl("the SQLite path is empty".into()));
    }
    Ok(Target::File(path.to_owned()))
}

/// Creates the database file, when it does not exist yet, readable and writable by its owner
/// only (0600, whatever the umask): it holds token and password hashes and sealed values.
/// SQLite then gives its `-wal` and `-shm` files the database's mode. A file that cannot be
/// created here is left to SQLite's own open, which reports why.
fn create_private(path: &Path) {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    if options.open(path).is_ok() {
        // The umask may have taken bits off 0600 too; set it exactly.
        let _ = ops::restrict(path);
    }
}

/// A warning when the database at `url_or_path` (a file) can be read or written by users other
/// than its owner, naming the command that fixes it; `None` otherwise (and for a memory
/// database, or a file that does not exist).
pub fn loose_permissions(url_or_path: &str) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let Ok(Target::File(path)) = parse_target(url_or_path) else {
            return None;
        };
        let mode = std::fs::metadata(&path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then(|| {
            format!(
                "the SQLite database {path} can be read by other users (mode {mode:o}); it holds token and password hashes and sealed secrets: run chmod 600 {path} (and on its -wal and -shm files)"
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = url_or_path;
        None
    }
}

fn setup_connection(path: &str) -> std::result::Result<SqliteConnection, diesel::ConnectionError> {
    let mut conn = SqliteConnection::establish(path)?;
    conn.batch_execute(&format!(
        "PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}; PRAGMA journal_mode = WAL; \
         PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; \
         PRAGMA cache_size = -{CACHE_KIB}; PRAGMA mmap_size = {MMAP_BYTES};"
    ))
    .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// A pool of `size` connections to `path`, each set up by [`setup_connection`].
fn pool_of(path: &str, size: usize) -> Result<Pool<Conn>, StoreError> {
    let mut config = ManagerConfig::default();
    config.custom_setup = Box::new(|url: &str| {
        let url = url.to_owned();
        Box::pin(async move {
            let conn = tokio::task::spawn_blocking(move || setup_connection(&url))
                .await
                .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))??;
            Ok(SyncConnectionWrapper::new(conn))
        })
    });
    let manager = AsyncDieselConnectionManager::<Conn>::new_with_config(path, config);
    Pool::builder(manager)
        .max_size(size)
        .build()
        .map_err(|e| StoreError::Unavailable(e.to_string()))
}

/// Runs `f` on a connection of `pool` on the blocking thread pool.
async fn run_on<R, F>(pool: &Pool<Conn>, f: F) -> Result<R, StoreError>
where
    R: Send + 'static,
    F: FnOnce(&mut SqliteConnection) -> Result<R> + Send + 'static,
{
    let mut conn = pool
        .get()
        .await
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let outcome = conn
        .spawn_blocking(move |c| Ok(f(c)))
        .await
        .map_err(map_db)?;
    outcome.map_err(StoreError::from)
}

/// Where the writes of a store run.
#[derive(Clone)]
enum Writes {
    /// A memory database: its one pooled connection, one `BEGIN IMMEDIATE` per write.
    Pool(Pool<Conn>),
    /// A file database: the writer thread.
    Thread(writer::Writer),
}

/// The SQLite store. Cheap to clone (the pools are shared).
#[derive(Clone)]
pub struct SqliteStore {
    /// Readers: single reads and deferred (snapshot) transactions.
    pool: Pool<Conn>,
    /// Where writes go: the writer thread of a file database (one connection, writes arriving
    /// together committed together: see [`writer`]), or the one connection of a memory database.
    writer: Writes,
    /// Short reads on the calling thread (file databases; `None` for a memory database, whose
    /// reads use its one pooled connection): see [`local`].
    local: Option<Arc<local::Readers>>,
    target: Target,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating the file if needed) and migrates the database at `url_or_path`:
    /// `sqlite://PATH`, `sqlite::memory:` or a plain path.
    pub async fn connect(url_or_path: &str) -> Result<Self, StoreError> {
        Self::connect_with(url_or_path, ConnectOptions::default()).await
    }

    /// [`SqliteStore::connect`] with options (skip migrations, pool size).
    pub async fn connect_with(
        url_or_path: &str,
        options: ConnectOptions,
    ) -> Result<Self, StoreError> {
        let target = parse_target(url_or_path)?;
        if let Target::File(path) = &target {
            create_private(Path::new(path));
        }
        let (path, size) = match &target {
            Target::Memory => (":memory:".to_owned(), 1),
            Target::File(p) => (
                p.clone(),
                options.max_connections.unwrap_or(DEFAULT_POOL).max(1),
            ),
        };
        let pool = pool_of(&path, size)?;
        // A memory database lives in its one connection: readers and writes share it.
        let writer = match &target {
            Target::Memory => Writes::Pool(pool.clone()),
            Target::File(_) => {
                let path = path.clone();
                Writes::Thread(writer::Writer::start(move || {
                    setup_connection(&path).map_err(|e| StoreError::Unavailable(e.to_string()))
                })?)
            }
        };
        let local = match &target {
            Target::Memory => None,
            Target::File(_) => Some(local::Readers::new(path.clone())),
        };
        let store = SqliteStore {
            pool,
            writer,
            local,
            target,
        };
        // Open one connection now so a bad path fails here, not at the first request.
        store.ping().await?;
        if options.migrate {
            store.migrate().await?;
        }
        Ok(store)
    }

    /// Runs `f` on a reader connection on the blocking thread pool.
    async fn run<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<R> + Send + 'static,
    {
        run_on(&self.pool, f).await
    }

    /// Runs `f` as one write: all of it is committed, or nothing when it fails. On a file
    /// database it runs on the writer thread, in a savepoint of the batch's `BEGIN IMMEDIATE`
    /// transaction; on a memory database in a transaction of its own.
    async fn write<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<R> + Send + 'static,
    {
        match &self.writer {
            Writes::Pool(pool) => run_on(pool, move |c| c.immediate_transaction(f)).await,
            Writes::Thread(writer) => writer.write(f).await,
        }
    }

    /// Runs `f` in a deferred (read) transaction: one snapshot for several statements.
    async fn read<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<R> + Send + 'static,
    {
        self.run(move |c| c.transaction(f)).await
    }

    /// Runs the short read `f` (a few indexed statements: a page, a lookup by key) on the
    /// calling thread's own read connection to this database, without the hop to the blocking
    /// pool and back (see [`local`]); on a memory database (or when this thread's connection is
    /// already in use) the same as [`SqliteStore::run`]. Long reads (exports, scans of a whole
    /// workspace) keep using [`SqliteStore::run`] / [`SqliteStore::read`].
    async fn quick<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<R> + Send + 'static,
    {
        match &self.local {
            Some(readers) => match readers.with(f) {
                local::Outcome::Done(result) => result,
                local::Outcome::Busy(f) => self.run(f).await,
            },
            None => self.run(f).await,
        }
    }

    /// [`SqliteStore::quick`] in a deferred (read) transaction: one snapshot for several
    /// statements.
    async fn quick_read<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<R> + Send + 'static,
    {
        self.quick(move |c| c.transaction(f)).await
    }
}

#[async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> Backend {
        Backend::Sqlite
    }

    async fn migrate(&self) -> Result<MigrationReport, StoreError> {
        // One write transaction around the whole run: a second process starting at the same
        // time waits for the write lock, then finds nothing pending.
        self.write(|c| {
            let applied = c
                .run_pending_migrations(MIGRATIONS)
                .map_err(|e| Error::Store(StoreError::Migration(e.to_string())))?;
            Ok(MigrationReport {
                applied: applied.iter().map(|v| v.to_string()).collect(),
            })
        })
        .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.run(|c| Ok(c.batch_execute("SELECT 1")?)).await
    }

    async fn create_workspace(&self, new: NewWorkspace) -> Result<Workspace, StoreError> {
        new.check_text()?;
        self.write(move |c| workspaces::create_workspace(c, &new))
            .await
    }

    async fn get_workspace(&self, workspace_id: Uuid) -> Result<Option<Workspace>, StoreError> {
        self.quick(move |c| workspaces::get_workspace(c, workspace_id))
            .await
    }

    async fn update_workspace(
        &self,
        workspace_id: Uuid,
        update: WorkspaceUpdate,
    ) -> Result<Workspace, StoreError> {
        update.check_text()?;
        self.write(move |c| workspaces::update_workspace(c, workspace_id, &update))
            .await
    }

    async fn count_workspaces(&self) -> Result<u64, StoreError> {
        self.run(workspaces::count_workspaces).await
    }

    async fn take_check_unit(
        &self,
        workspace_id: Uuid,
        at: OffsetDateTime,
        limit: Option<u32>,
    ) -> Result<Option<u64>, StoreError> {
        let month = apidrift_store::month_key(at);
        self.write(move |c| workspaces::take_unit(c, workspace_id, &month, limit))
            .await
    }

    async fn check_quota_usage(
        &self,
        workspace_id: Uuid,
        at: OffsetDateTime,
    ) -> Result<QuotaUsage, StoreError> {
        self.quick_read(move |c| {
            let quota = workspaces::require_workspace(c, workspace_id)?.check_quota;
            Ok(QuotaUsage {
                used: workspaces::check_usage(c, workspace_id, at)?,
                quota,
            })
        })
        .await
    }

    async fn check_usage(&self, workspace_id: Uuid, at: OffsetDateTime) -> Result<u64, StoreError> {
        self.quick(move |c| workspaces::check_usage(c, workspace_id, at))
            .await
    }

    async fn create_token(&self, new: NewToken) -> Result<StoredToken, StoreError> {
        new.check_text()?;
        self.write(move |c| tokens::create_token(c, &new)).await
    }

    async fn find_token_by_hash(
        &self,
        token_hash: &str,
    ) -> Result<Option<StoredToken>, StoreError> {
        apidrift_store::text::refuse_nul("tokens.token_hash", token_hash)?;
        let hash = token_hash.to_owned();
        self.quick(move |c| tokens::find_token_by_hash(c, &hash))
            .await
    }

    async fn get_token(
        &self,
        workspace_id: Uuid,
        token_id: Uuid,
    ) -> Result<Option<StoredToken>, StoreError> {
        self.quick(move |c| tokens::get_token(c, Some(workspace_id), token_id))
            .await
    }

    async fn list_tokens(&self, workspace_id: Uuid) -> Result<Vec<StoredToken>, StoreError> {
        self.quick(move |c| tokens::list_tokens(c, workspace_id))
            .await
    }

    async fn revoke_token(
        &self,
        workspace_id: Uuid,
        token_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<StoredToken, StoreError> {
        self.write(move |c| tokens::revoke_token(c, Some(workspace_id), token_id, now))
            .await
    }

    async fn revoke_token_by_id(
        &self,
        token_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<StoredToken, StoreError> {
        self.write(move |c| tokens::revoke_token(c, None, token_id, now))
            .await
    }

    async fn endpoint_workspace(&self, endpoint_id: Uuid) -> Result<Option<Uuid>, StoreError> {
        self.quick(move |c| endpoints::endpoint_workspace(c, endpoint_id))
            .await
    }

    async fn touch_token(
        &self,
        workspace_id: Uuid,
        token_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        self.write(move |c| tokens::touch_token(c, workspace_id, token_id, now))
            .await
    }

    async fn create_endpoints(
        &self,
        workspace_id: Uuid,
        rows: Vec<NewEndpointRow>,
    ) -> Result<BulkCreated, StoreError> {
        rows.iter().try_for_each(NewEndpointRow::check_text)?;
        if rows.len() > apidrift_store::MAX_BULK_ENDPOINTS {
            return Err(StoreError::InvalidInput(format!(
                "at most {} endpoints per call",
                apidrift_store::MAX_BULK_ENDPOINTS
            )));
        }
        self.write(move |c| endpoints::create_endpoints(c, workspace_id, &rows))
            .await
    }

    async fn get_endpoint(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<StoredEndpoint>, StoreError> {
        self.quick(move |c| endpoints::get_endpoint(c, workspace_id, endpoint_id))
            .await
    }

    async fn list_endpoints(
        &self,
        workspace_id: Uuid,
        filter: &EndpointFilter,
        page: PageRequest,
    ) -> Result<Page<StoredEndpoint>, StoreError> {
        filter.check_text()?;
        let filter = filter.clone();
        self.quick_read(move |c| endpoints::list_endpoints(c, workspace_id, &filter, page))
            .await
    }

    async fn count_endpoints(&self, workspace_id: Uuid) -> Result<u64, StoreError> {
        self.quick(move |c| endpoints::count_endpoints(c, workspace_id))
            .await
    }

    async fn endpoint_keys(
        &self,
        workspace_id: Uuid,
    ) -> Result<Vec<(apidrift_model::HttpMethod, String)>, StoreError> {
        let rows = self
            .run(move |c| endpoints::endpoint_keys(c, workspace_id))
            .await?;
        rows.into_iter()
            .map(|(m, url)| Ok((apidrift_store::parse_enum("endpoints.method", &m)?, url)))
            .collect()
    }

    async fn set_health(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        health: Health,
        now: OffsetDateTime,
    ) -> Result<(), StoreError> {
        self.write(move |c| endpoints::set_health(c, workspace_id, endpoint_id, health, now))
            .await
    }

    async fn set_contract(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        contract: Option<ResponseContract>,
        now: OffsetDateTime,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            contracts::set_contract(c, workspace_id, endpoint_id, contract.as_ref(), now)
        })
        .await
    }

    async fn record_baseline(
        &self,
        workspace_id: Uuid,
        baseline: NewBaseline,
        health: Option<Health>,
    ) -> Result<StoredBaseline, StoreError> {
        self.write(move |c| checks::record_baseline(c, workspace_id, &baseline, health))
            .await
    }

    async fn active_baseline(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<StoredBaseline>, StoreError> {
        self.quick(move |c| checks::active_baseline(c, workspace_id, endpoint_id))
            .await
    }

    async fn record_check(
        &self,
        workspace_id: Uuid,
        check: NewCheck,
        diff: Option<NewDiff>,
    ) -> Result<RecordedCheck, StoreError> {
        self.write(move |c| {
            run::now(apidrift_store::run::record_check(
                &mut run::Tx(c),
                workspace_id,
                &check,
                diff.as_ref(),
            ))
        })
        .await
    }

    async fn get_check(
        &self,
        workspace_id: Uuid,
        check_id: Uuid,
    ) -> Result<Option<StoredCheck>, StoreError> {
        self.quick(move |c| checks::get_check(c, workspace_id, check_id))
            .await
    }

    async fn latest_diff(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<DiffDetail>, StoreError> {
        self.quick(move |c| diffs::latest_diff(c, workspace_id, endpoint_id))
            .await
    }

    async fn check_context(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        at: OffsetDateTime,
    ) -> Result<Option<CheckContext>, StoreError> {
        self.quick_read(move |c| {
            let Some(endpoint) = endpoints::get_endpoint(c, workspace_id, endpoint_id)? else {
                return Ok(None);
            };
            let workspace = workspaces::require_workspace(c, workspace_id)?;
            Ok(Some(CheckContext {
                baseline: checks::active_baseline(c, workspace_id, endpoint_id)?,
                usage: QuotaUsage {
                    used: workspaces::check_usage(c, workspace_id, at)?,
                    quota: workspace.check_quota,
                },
                latest_diff: diffs::latest_diff(c, workspace_id, endpoint_id)?,
                endpoint,
                workspace_overrides: workspace.severity_overrides,
                plan: workspace.plan,
            }))
        })
        .await
    }

    async fn list_diffs(
        &self,
        workspace_id: Uuid,
        filter: &DiffFilter,
        page: PageRequest,
    ) -> Result<Page<DiffSummary>, StoreError> {
        let filter = filter.clone();
        self.quick_read(move |c| diffs::list_diffs(c, workspace_id, &filter, page))
            .await
    }

    async fn get_diff(
        &self,
        workspace_id: Uuid,
        diff_id: Uuid,
    ) -> Result<Option<DiffDetail>, StoreError> {
        self.quick(move |c| diffs::get_diff(c, workspace_id, diff_id))
            .await
    }

    async fn accept_diff(
        &self,
        workspace_id: Uuid,
        diff_id: Uuid,
        baseline: Option<NewBaseline>,
        now: OffsetDateTime,
    ) -> Result<AcceptOutcome, StoreError> {
        self.write(move |c| diffs::accept_diff(c, workspace_id, diff_id, baseline.as_ref(), now))
            .await
    }

    async fn sealed_values(
        &self,
        field: SealedField,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<Vec<SealedValue>, StoreError> {
        self.run(move |c| sealed::sealed_values(c, field, after, limit))
            .await
    }

    async fn replace_sealed_value(
        &self,
        field: SealedField,
        workspace_id: Uuid,
        row_id: Uuid,
        old: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError> {
        let (old, new) = (old.to_vec(), new.to_vec());
        self.write(move |c| {
            sealed::replace_sealed_value(c, field, workspace_id, row_id, &old, &new)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_forms() {
        assert_eq!(parse_target("sqlite::memory:").ok(), Some(Target::Memory));
        assert_eq!(
            parse_target("sqlite://apidrift.db").ok(),
            Some(Target::File("apidrift.db".into()))
        );
        assert_eq!(
            parse_target("sqlite:///var/lib/a.db").ok(),
            Some(Target::File("/var/lib/a.db".into()))
        );
        assert_eq!(
            parse_target("data/a.db").ok(),
            Some(Target::File("data/a.db".into()))
        );
        assert!(matches!(
            parse_target("postgres://x/y"),
            Err(StoreError::InvalidUrl(_))
        ));
        assert!(matches!(
            parse_target("mysql://x/y"),
            Err(StoreError::InvalidUrl(_))
        ));
        assert!(matches!(
            parse_target("sqlite://"),
            Err(StoreError::InvalidUrl(_))
        ));
    }

    #[test]
    fn migration_folders_match_postgres() -> Result<(), Box<dyn std::error::Error>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
        let list = |backend: &str| -> std::io::Result<Vec<String>> {
            let mut names = std::fs::read_dir(root.join(backend))?
                .filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect::<Vec<_>>();
            names.sort();
            Ok(names)
        };
        let sqlite = list("sqlite")?;
        assert!(!sqlite.is_empty());
        assert_eq!(sqlite, list("postgres")?);
        for name in &sqlite {
            for backend in ["sqlite", "postgres"] {
                for file in ["up.sql", "down.sql"] {
                    assert!(
                        root.join(backend).join(name).join(file).is_file(),
                        "{backend}/{name}/{file}"
                    );
                }
            }
        }
        Ok(())
    }
}
