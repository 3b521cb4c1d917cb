//! # apidrift-store-postgres
//!
//! The PostgreSQL adapter of [`apidrift_store::Store`], for installs with many `serve` instances
//! sharing one database (D18).
//!
//! Public API: [`PgStore`] with [`PgStore::connect`] / [`PgStore::connect_with`] (URLs
//! `postgres://…` and `postgresql://…`) and the [`Store`] impl; [`MIGRATIONS`], the embedded
//! `migrations/postgres` folder; [`run_migrations`] (advisory-locked); feature `testkit`: the
//! [`testdb`] module that gives each test a fresh database cloned from a migrated template.
//!
//! How it works:
//! * diesel-async `AsyncPgConnection` (tokio-postgres underneath, no libpq) in a deadpool pool
//!   (default 16 connections). Native types: `uuid`, `timestamptz` (microseconds), `jsonb`,
//!   `bytea`.
//! * Migrations run at connect (unless told not to) on a dedicated connection holding
//!   `pg_advisory_lock`, so several instances may start at once: the first migrates, the others
//!   wait and then find nothing pending. diesel_migrations' harness is synchronous, so it runs on
//!   a blocking thread through diesel-async's `AsyncConnectionWrapper`.
//! * Multi-statement writes run in one transaction and lock what they count: the workspace row
//!   for the endpoint limit, the endpoint row for baseline versions and check figures.
//! * TLS: connections are made without TLS (`sslmode=require` URLs are refused by the driver);
//!   run the database on a private network or a local socket.

#[macro_use]
mod tx;
mod alerts;
mod cached;
mod checks;
mod contracts;
mod diffs;
mod endpoints;
mod escape;
mod history;
mod lifecycle;
mod ops;
mod ratelimits;
mod rows;
mod run;
mod schema;
mod sealed;
mod tokens;
mod totals;
mod usage;
mod users;
mod webhooks;
mod workspaces;

#[cfg(feature = "testkit")]
pub mod testdb;

use crate::cached::cached;
use crate::tx::join2;
use apidrift_model::{DiffDetail, DiffSummary, Health};
use apidrift_store::{
    AcceptOutcome, Backend, BulkCreated, CheckContext, ConnectOptions, DiffFilter, EndpointFilter,
    MigrationReport, NewBaseline, NewCheck, NewDiff, NewEndpointRow, NewToken, NewWorkspace, Page,
    PageRequest, QuotaUsage, RecordedCheck, ResponseContract, SealedField, SealedValue, Store,
    StoreError, StoredBaseline, StoredCheck, StoredEndpoint, StoredToken, Workspace,
    WorkspaceUpdate,
};
use async_trait::async_trait;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use time::OffsetDateTime;
use uuid::Uuid;

/// The embedded `migrations/postgres` folder.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// The advisory-lock key migrations run under (any constant shared by every instance).
const MIGRATION_LOCK_KEY: i64 = 0x6170_6964_7269_6674; // "apidrift"

/// Default pool size.
const DEFAULT_POOL: usize = 16;

/// The error inside an operation: a store error, or a diesel error to map.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
    /// A check's recording found the monthly quota used up: the transaction rolls back.
    #[error("monthly check quota exhausted ({used} of {quota})")]
    QuotaExhausted { used: u64, quota: u32 },
}

/// The error of a row that is missing in the workspace.
pub(crate) fn not_found() -> Error {
    Error::Store(StoreError::NotFound)
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
        D::DatabaseError(DatabaseErrorKind::ClosedConnection, info) => {
            StoreError::Unavailable(info.message().to_owned())
        }
        // Still conflicting after the retries (or a statement that is not retried): transient,
        // so "try again" (503), never a 500.
        ref e @ D::DatabaseError(_, ref info) if tx::transient(e) => {
            StoreError::Unavailable(format!(
                "a concurrent transaction conflicted with this one ({}); try again",
                info.message()
            ))
        }
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

/// Checks that `url` is a PostgreSQL URL.
fn check_url(url: &str) -> Result<(), StoreError> {
    let lower = url.trim().to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        Ok(())
    } else {
        Err(StoreError::InvalidUrl(
            "expected a postgres:// or postgresql:// URL".into(),
        ))
    }
}

/// A connection error without the URL (which may hold a password).
fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("cannot connect to PostgreSQL: {e}"))
}

/// Applies pending migrations on a dedicated connection to `url`, under a session advisory lock.
pub async fn run_migrations(url: &str) -> Result<MigrationReport, StoreError> {
    check_url(url)?;
    let mut conn = AsyncPgConnection::establish(url)
        .await
        .map_err(unavailable)?;
    conn.batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"))
        .await
        .map_err(map_db)?;
    let wrapper: AsyncConnectionWrapper<AsyncPgConnection> = AsyncConnectionWrapper::from(conn);
    let outcome = tokio::task::spawn_blocking(move || {
        let mut wrapper = wrapper;
        let applied = wrapper
            .run_pending_migrations(MIGRATIONS)
            .map(|v| v.iter().map(|v| v.to_string()).collect::<Vec<_>>())
            .map_err(|e| StoreError::Migration(e.to_string()));
        (wrapper, applied)
    })
    .await;
    let (wrapper, applied) = outcome.map_err(|e| StoreError::Migration(e.to_string()))?;
    let mut conn = wrapper.into_inner();
    // Closing the session releases the lock too; unlock explicitly for a prompt hand-over.
    conn.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})"))
        .await
        .map_err(map_db)?;
    Ok(MigrationReport { applied: applied? })
}

/// The PostgreSQL store. Cheap to clone (the pool is shared).
#[derive(Clone)]
pub struct PgStore {
    pool: Pool<AsyncPgConnection>,
    url: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: never print it.
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to `url` (`postgres://…` or `postgresql://…`) and applies pending migrations.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, ConnectOptions::default()).await
    }

    /// [`PgStore::connect`] with options (skip migrations, pool size).
    pub async fn connect_with(url: &str, options: ConnectOptions) -> Result<Self, StoreError> {
        check_url(url)?;
        // `Fast` recycling: a checked-out connection is not verified with a `SELECT 1` round
        // trip first (that doubled the round trips of every one-statement read). A broken
        // connection is still discarded (`is_broken`), and one that died unnoticed (server
        // restart) fails its first statement once: `StoreError::Unavailable`, a 503. Connections
        // are driven by a runtime of their own, so no request runtime's shutdown closes them.
        let mut config = ManagerConfig::default();
        config.recycling_method = RecyclingMethod::Fast;
        config.custom_setup = Box::new(|url| Box::pin(establish(url.to_owned())));
        let manager =
            AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(url.trim(), config);
        let pool = Pool::builder(manager)
            .max_size(options.max_connections.unwrap_or(DEFAULT_POOL).max(1))
            .build()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let store = PgStore {
            pool,
            url: url.trim().to_owned(),
        };
        store.ping().await?;
        if options.migrate {
            store.migrate().await?;
        }
        Ok(store)
    }

    async fn conn(&self) -> Result<Object<AsyncPgConnection>, StoreError> {
        self.pool.get().await.map_err(unavailable)
    }
}

/// The runtime that drives every pooled connection's socket (one thread, never dropped).
///
/// A connection's driver task runs on the runtime that opened it. Opened from a request, that was
/// one of the HTTP server's per-thread runtimes, which stop at shutdown (and when a worker thread
/// is restarted): the pooled connection then fails its next statement. With `Fast` recycling
/// nothing would catch that before a statement does (the graceful shutdown's rate-limit hand-back
/// did hit it), so connections are opened, and driven, here.
fn driver_runtime() -> Option<&'static tokio::runtime::Runtime> {
    static RUNTIME: std::sync::OnceLock<Option<tokio::runtime::Runtime>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("apidrift-pg")
                .enable_all()
                .build()
                .ok()
        })
        .as_ref()
}

/// Opens a connection on [`driver_runtime`] (on the caller's runtime when it could not start).
async fn establish(url: String) -> diesel::ConnectionResult<AsyncPgConnection> {
    match driver_runtime() {
        Some(rt) => match rt
            .spawn(async move { AsyncPgConnection::establish(&url).await })
            .await
        {
            Ok(result) => result,
            Err(e) => Err(diesel::ConnectionError::BadConnection(format!(
                "opening a connection failed: {e}"
            ))),
        },
        None => AsyncPgConnection::establish(&url).await,
    }
}

/// Runs `$body` on a pooled connection without a transaction.
macro_rules! plain {
    ($self:ident, |$c:ident| $body:expr) => {{
        let mut conn = $self.conn().await?;
        let $c: &mut AsyncPgConnection = &mut conn;
        let out: Result<_> = $body;
        out.map_err(StoreError::from)
    }};
}

#[async_trait]
impl Store for PgStore {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }

    async fn migrate(&self) -> Result<MigrationReport, StoreError> {
        run_migrations(&self.url).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        plain!(self, |c| Ok(cached("SELECT 1")
            .execute(c)
            .await
            .map(|_| ())
            .map_err(Error::from)?))
    }

    async fn create_workspace(&self, new: NewWorkspace) -> Result<Workspace, StoreError> {
        new.check_text()?;
        plain!(self, |c| workspaces::create_workspace(c, &new).await)
    }

    async fn get_workspace(&self, workspace_id: Uuid) -> Result<Option<Workspace>, StoreError> {
        plain!(self, |c| workspaces::get_workspace(c, workspace_id).await)
    }

    async fn update_workspace(
        &self,
        workspace_id: Uuid,
        update: WorkspaceUpdate,
    ) -> Result<Workspace, StoreError> {
        update.check_text()?;
        tx!(self, |c| workspaces::update_workspace(
            c,
            workspace_id,
            &update
        )
        .await)
    }

    async fn count_workspaces(&self) -> Result<u64, StoreError> {
        plain!(self, |c| workspaces::count_workspaces(c).await)
    }

    async fn take_check_unit(
        &self,
        workspace_id: Uuid,
        at: OffsetDateTime,
        limit: Option<u32>,
    ) -> Result<Option<u64>, StoreError> {
        let month = apidrift_store::month_key(at);
        statement!(self, |c| usage::take_unit(c, workspace_id, &month, limit)
            .await)
    }

    async fn check_quota_usage(
        &self,
        workspace_id: Uuid,
        at: OffsetDateTime,
    ) -> Result<QuotaUsage, StoreError> {
        let mut conn = self.conn().await?;
        workspaces::check_quota_usage(&mut conn, workspace_id, at)
            .await
            .map_err(StoreError::from)
    }

    async fn check_usage(&self, workspace_id: Uuid, at: OffsetDateTime) -> Result<u64, StoreError> {
        plain!(self, |c| workspaces::check_usage(c, workspace_id, at).await)
    }

    async fn create_token(&self, new: NewToken) -> Result<StoredToken, StoreError> {
        new.check_text()?;
        plain!(self, |c| tokens::create_token(c, &new).await)
    }

    async fn find_token_by_hash(
        &self,
        token_hash: &str,
    ) -> Result<Option<StoredToken>, StoreError> {
        apidrift_store::text::refuse_nul("tokens.token_hash", token_hash)?;
        plain!(self, |c| tokens::find_token_by_hash(c, token_hash).await)
    }

    async fn get_token(
        &self,
        workspace_id: Uuid,
        token_id: Uuid,
    ) -> Result<Option<StoredToken>, StoreError> {
        plain!(self, |c| tokens::get_token(c, Some(workspace_id), token_id)
            .await)
    }

    async fn list_tokens(&self, workspace_id: Uuid) -> Result<Vec<StoredToken>, StoreError> {
        plain!(self, |c| tokens::list_tokens(c, workspace_id).await)
    }

    async fn revoke_token(
        &self,
        workspace_id: Uuid,
        token_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<StoredToken, StoreError> {
        plain!(self, |c| tokens::revoke_token(
            c,
            Some(workspace_id),
            token_id,
            now
        )
        .await)
    }

    async fn revoke_token_by_id(
        &self,
        token_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<StoredToken, StoreError> {
        plain!(self, |c| tokens::revoke_token(c, None, token_id, now).await)
    }

    async fn endpoint_workspace(&self, endpoint_id: Uuid) -> Result<Option<Uuid>, StoreError> {
        plain!(self, |c| endpoints::endpoint_workspace(c, endpoint_id)
            .await)
    }

    async fn touch_token(
        &self,
        workspace_id: Uuid,
        token_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        plain!(self, |c| tokens::touch_token(
            c,
            workspace_id,
            token_id,
            now
        )
        .await)
    }

    async fn rate_limit_read(
        &self,
        key: &str,
    ) -> Result<Option<apidrift_store::RateLimitRow>, StoreError> {
        apidrift_store::text::refuse_nul("rate_limits.key", key)?;
        plain!(self, |c| ratelimits::rate_limit_read(c, key)
            .await
            .map(Some))
    }

    async fn rate_limit_swap(
        &self,
        key: &str,
        old: Option<i64>,
        new: i64,
    ) -> Result<bool, StoreError> {
        apidrift_store::text::refuse_nul("rate_limits.key", key)?;
        plain!(self, |c| ratelimits::rate_limit_swap(c, key, old, new)
            .await)
    }

    async fn rate_limit_give_back(&self, key: &str, nanos: i64) -> Result<(), StoreError> {
        apidrift_store::text::refuse_nul("rate_limits.key", key)?;
        plain!(self, |c| ratelimits::rate_limit_give_back(c, key, nanos)
            .await)
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
        tx!(self, |c| endpoints::create_endpoints(
            c,
            workspace_id,
            &rows
        )
        .await)
    }

    async fn get_endpoint(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<StoredEndpoint>, StoreError> {
        plain!(self, |c| endpoints::get_endpoint(
            c,
            workspace_id,
            endpoint_id
        )
        .await)
    }

    async fn list_endpoints(
        &self,
        workspace_id: Uuid,
        filter: &EndpointFilter,
        page: PageRequest,
    ) -> Result<Page<StoredEndpoint>, StoreError> {
        filter.check_text()?;
        plain!(self, |c| endpoints::list_endpoints(
            c,
            workspace_id,
            filter,
            page
        )
        .await)
    }

    async fn count_endpoints(&self, workspace_id: Uuid) -> Result<u64, StoreError> {
        plain!(self, |c| endpoints::count_endpoints(c, workspace_id).await)
    }

    async fn endpoint_keys(
        &self,
        workspace_id: Uuid,
    ) -> Result<Vec<(apidrift_model::HttpMethod, String)>, StoreError> {
        let rows: Vec<(String, String)> =
            plain!(self, |c| endpoints::endpoint_keys(c, workspace_id).await)?;
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
        plain!(self, |c| endpoints::set_health(
            c,
            workspace_id,
            endpoint_id,
            health,
            now
        )
        .await)
    }

    async fn set_contract(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        contract: Option<ResponseContract>,
        now: OffsetDateTime,
    ) -> Result<(), StoreError> {
        tx!(self, |c| {
            contracts::set_contract(c, workspace_id, endpoint_id, contract.as_ref(), now).await
        })
    }

    async fn record_baseline(
        &self,
        workspace_id: Uuid,
        baseline: NewBaseline,
        health: Option<Health>,
    ) -> Result<StoredBaseline, StoreError> {
        tx!(self, |c| checks::record_baseline(
            c,
            workspace_id,
            &baseline,
            health
        )
        .await)
    }

    async fn active_baseline(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<StoredBaseline>, StoreError> {
        plain!(self, |c| checks::active_baseline(
            c,
            workspace_id,
            endpoint_id
        )
        .await)
    }

    async fn record_check(
        &self,
        workspace_id: Uuid,
        check: NewCheck,
        diff: Option<NewDiff>,
    ) -> Result<RecordedCheck, StoreError> {
        tx!(self, |c| apidrift_store::run::record_check(
            &mut run::Tx::new(c),
            workspace_id,
            &check,
            diff.as_ref()
        )
        .await)
    }

    async fn get_check(
        &self,
        workspace_id: Uuid,
        check_id: Uuid,
    ) -> Result<Option<StoredCheck>, StoreError> {
        plain!(self, |c| checks::get_check(c, workspace_id, check_id).await)
    }

    async fn latest_diff(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<DiffDetail>, StoreError> {
        plain!(self, |c| diffs::latest_diff(c, workspace_id, endpoint_id)
            .await)
    }

    async fn check_context(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        at: OffsetDateTime,
    ) -> Result<Option<CheckContext>, StoreError> {
        // One pooled connection, no transaction: five short reads (the endpoint, its next run,
        // the quota with the workspace's overrides and plan, the baseline, the newest diff) sent
        // together, one round trip (a transaction would add two; the recording transaction is
        // the one that must be consistent).
        plain!(self, |c| {
            let c: &AsyncPgConnection = c;
            let (endpoint, (workspace, (baseline, latest_diff))) = join2(
                endpoints::get_endpoint(c, workspace_id, endpoint_id),
                join2(
                    workspaces::check_quota_and_overrides(c, workspace_id, at),
                    join2(
                        checks::active_baseline(c, workspace_id, endpoint_id),
                        diffs::latest_diff(c, workspace_id, endpoint_id),
                    ),
                ),
            )
            .await;
            // A missing endpoint is the answer, whatever the other reads found.
            let Some(endpoint) = endpoint? else {
                return Ok(None);
            };
            let (usage, workspace_overrides, plan) = workspace?;
            Ok(Some(CheckContext {
                baseline: baseline?,
                usage,
                latest_diff: latest_diff?,
                endpoint,
                workspace_overrides,
                plan,
            }))
        })
    }

    async fn list_diffs(
        &self,
        workspace_id: Uuid,
        filter: &DiffFilter,
        page: PageRequest,
    ) -> Result<Page<DiffSummary>, StoreError> {
        plain!(self, |c| diffs::list_diffs(c, workspace_id, filter, page)
            .await)
    }

    async fn get_diff(
        &self,
        workspace_id: Uuid,
        diff_id: Uuid,
    ) -> Result<Option<DiffDetail>, StoreError> {
        plain!(self, |c| diffs::get_diff(c, workspace_id, diff_id).await)
    }

    async fn accept_diff(
        &self,
        workspace_id: Uuid,
        diff_id: Uuid,
        baseline: Option<NewBaseline>,
        now: OffsetDateTime,
    ) -> Result<AcceptOutcome, StoreError> {
        tx!(self, |c| diffs::accept_diff(
            c,
            workspace_id,
            diff_id,
            baseline.as_ref(),
            now
        )
        .await)
    }

    async fn sealed_values(
        &self,
        field: SealedField,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<Vec<SealedValue>, StoreError> {
        plain!(self, |c| sealed::sealed_values(c, field, after, limit)
            .await)
    }

    async fn replace_sealed_value(
        &self,
        field: SealedField,
        workspace_id: Uuid,
        row_id: Uuid,
        old: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError> {
        plain!(self, |c| {
            sealed::replace_sealed_value(c, field, workspace_id, row_id, old, new).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_check() {
        assert!(check_url("postgres://u@h/db").is_ok());
        assert!(check_url("PostgreSQL://u@h/db").is_ok());
        assert!(matches!(
            check_url("sqlite://x.db"),
            Err(StoreError::InvalidUrl(_))
        ));
        assert!(matches!(check_url("x.db"), Err(StoreError::InvalidUrl(_))));
    }
}
