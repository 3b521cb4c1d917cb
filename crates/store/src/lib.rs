//! # apidrift-store
//!
//! The repository interface of apidrift (decision D1): what the API, the check pipeline and the
//! admin CLI may read and write, independent of the database. Two adapters implement it:
//! `apidrift-store-sqlite` and `apidrift-store-postgres`; the binary is the only place that picks
//! one (by `DATABASE_URL`), everything else holds an `Arc<dyn Store>`.
//!
//! Public API:
//! * [`Store`]: one object-safe async trait (`async-trait`, `Send + Sync`) with every operation,
//!   grouped by entity: workspaces and the monthly check quota, tokens, endpoints, baselines,
//!   checks, diffs, and the sealed-value rewrap used by `apidrift keys rotate`;
//! * the row and input types in [`types`] (re-exported here): [`Workspace`], [`StoredToken`],
//!   [`StoredEndpoint`], [`StoredBaseline`], [`StoredCheck`], [`Page`], filters, …;
//! * [`StoreError`]: the one error type of every adapter;
//! * [`new_id`]: the UUIDv7 generator callers use for new rows;
//! * [`rules`]: the business rules behind the values adapters write (the plan-limit fit, health
//!   from severity counts, the accept reset, workspace updates, the health a `checking` mark
//!   keeps and gives back, the schedule reset), written once;
//! * [`run`]: one check's transaction written once ([`run::record_check_run`] and its parts)
//!   over the primitives of [`run::CheckTx`] that each adapter implements, and a run's `checking`
//!   mark over [`run::MarkTx`]: adapters store and fetch, the rules (figures, alert planning, the
//!   quota decision, a run's finish, the mark) stay here;
//! * [`text`]: the one rule for text that reaches a column (monitored content and JSON kept
//!   faithfully, NUL refused in user input with [`StoreError::InvalidInput`]);
//! * feature `testkit`: the conformance suite ([`testkit`], with the [`AlertStore`] cases in
//!   [`testkit_alerts`] and the text cases in [`testkit_text`]) and the [`conformance_suite!`]
//!   macro that both adapters' test files expand.
//!
//! Adapters and their constructors (each runs the migrations unless told not to):
//! * `apidrift_store_sqlite::SqliteStore::connect(url_or_path) -> Result<SqliteStore, StoreError>`
//!   for `sqlite://PATH`, `sqlite::memory:` or a plain path, and
//!   `SqliteStore::connect_with(url_or_path, ConnectOptions)`;
//! * `apidrift_store_postgres::PgStore::connect(url) -> Result<PgStore, StoreError>` for
//!   `postgres://…`/`postgresql://…`, and `PgStore::connect_with(url, ConnectOptions)`;
//! * both implement [`Store`] (so `migrate()` is also a trait method) and are cheap to clone.
//!
//! Rules every adapter keeps:
//! * **Isolation.** Every read and write of workspace data takes the workspace id, and a row of
//!   another workspace behaves exactly like a missing one (`Ok(None)` or [`StoreError::NotFound`]).
//!   The only operations without a workspace id are the ones that cannot have one, and they are
//!   marked "operator" or "authentication" in their docs: token lookup by hash (authentication
//!   finds the workspace from the token), `revoke_token_by_id` (`apidrift token revoke ID`),
//!   `endpoint_workspace` (`apidrift baseline capture ID`, `apidrift contract attach ID`),
//!   `count_workspaces` (first-run bootstrap), the rewrap iteration (`keys rotate`) and the
//!   operator reads of [`OpsStore`] (`workspace list`, `/metrics`, `backup`).
//! * **Ids and clocks come from the caller.** Input types carry the new row's `id` (use
//!   [`new_id`], a UUIDv7) and its timestamps. The seal crate binds a sealed blob to its row id, so
//!   the id must be known before the blob is sealed. Timestamps are stored with microsecond
//!   precision (the API writes milliseconds).
//! * **Opaque secrets.** The store never sees a clear credential: sealed values are opaque
//!   `Vec<u8>` blobs made by `apidrift-seal`, token secrets arrive as hex SHA-256 hashes.
//! * **Newest first** is `created_at` descending, then `id` descending (D5).
//! * **Text** ([`text`]): monitored content and JSON columns round-trip exactly, NUL included;
//!   a NUL in user input is [`StoreError::InvalidInput`] naming the column, never a backend
//!   error.

pub mod alerts;
pub mod contracts;
pub mod lifecycle;
pub mod ops;
pub mod retry;
pub mod rules;
pub mod run;
pub mod text;
pub mod types;
pub mod users;

#[cfg(feature = "testkit")]
pub mod bench;
#[cfg(feature = "testkit")]
pub mod testkit;
#[cfg(feature = "testkit")]
pub mod testkit_alerts;
#[cfg(feature = "testkit")]
pub mod testkit_apply;
#[cfg(feature = "testkit")]
pub mod testkit_contracts;
#[cfg(feature = "testkit")]
pub mod testkit_incidents;
#[cfg(feature = "testkit")]
pub mod testkit_lifecycle;
#[cfg(feature = "testkit")]
pub mod testkit_ops;
#[cfg(feature = "testkit")]
pub mod testkit_text;

pub use alerts::*;
pub use contracts::*;
pub use lifecycle::*;
pub use ops::*;
pub use types::*;
pub use users::*;

use apidrift_model::{DiffDetail, DiffSummary, Health, HttpMethod};
use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

/// A fresh row id: a UUIDv7 (time-ordered, so new rows land at the end of the primary-key index).
pub fn new_id() -> Uuid {
    Uuid::now_v7()
}

/// The error of every store operation. Messages name what failed, never a value that was stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The row does not exist in this workspace (a row of another workspace is reported the same).
    #[error("not found")]
    NotFound,
    /// The row exists but its version is not the one the caller expected (someone changed it
    /// since it was read); nothing was written.
    #[error("changed since it was read")]
    Changed,
    /// A uniqueness rule was violated (e.g. a token hash that already exists).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The caller passed something the store cannot hold (e.g. more than 200 endpoints at once).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The database URL is not one this adapter understands.
    #[error("invalid database URL: {0}")]
    InvalidUrl(String),
    /// The database cannot be reached or the pool gave no connection in time.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Applying the embedded migrations failed.
    #[error("migration failed: {0}")]
    Migration(String),
    /// A stored value does not map back to its type (e.g. an unknown enum spelling).
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
    /// Any other database failure.
    #[error("database error: {0}")]
    Database(String),
    /// This adapter does not offer the operation (e.g. `backup_to` on PostgreSQL).
    #[error("not supported: {0}")]
    Unsupported(String),
}

impl StoreError {
    /// A [`StoreError::Corrupt`] for a column that did not parse.
    pub fn corrupt(column: &str, detail: impl std::fmt::Display) -> Self {
        StoreError::Corrupt(format!("{column}: {detail}"))
    }
}

/// The repository. Object-safe and `Send + Sync`: hold it as `Arc<dyn Store>`.
///
/// Operations that change several rows do so in one transaction. Methods that take a workspace
/// id and a row id answer [`StoreError::NotFound`] (writes) or `Ok(None)` (reads) when the row is
/// missing *or belongs to another workspace*.
#[async_trait]
pub trait Store:
    UserStore + AlertStore + OpsStore + LifecycleStore + ContractStore + Send + Sync + std::fmt::Debug
{
    // ---------------------------------------------------------------- database

    /// Which adapter this is.
    fn backend(&self) -> Backend;

    /// Applies every pending embedded migration (idempotent; PostgreSQL takes an advisory lock so
    /// several instances may start at once). `connect` already does this unless told not to.
    async fn migrate(&self) -> Result<MigrationReport, StoreError>;

    /// Cheap round trip to the database (`GET /readyz`).
    async fn ping(&self) -> Result<(), StoreError>;

    // ---------------------------------------------------------------- workspaces

    /// Creates a workspace. [`StoreError::Conflict`] when the id exists.
    async fn create_workspace(&self, new: NewWorkspace) -> Result<Workspace, StoreError>;

    /// One workspace by its id.
    async fn get_workspace(&self, workspace_id: Uuid) -> Result<Option<Workspace>, StoreError>;

    /// Changes the fields that are `Some` and returns the new row.
    async fn update_workspace(
        &self,
        workspace_id: Uuid,
        update: WorkspaceUpdate,
    ) -> Result<Workspace, StoreError>;

    /// Operator: how many workspaces exist (first-run bootstrap creates one when there is none).
    async fn count_workspaces(&self) -> Result<u64, StoreError>;

    /// Consumes one unit of the monthly check quota (calendar month of `now`, UTC) if the
    /// workspace is below its `check_quota`. Unlimited workspaces always consume. Written once
    /// over [`Store::take_check_unit`] (the atomic part) with the workspace's quota as the limit
    /// and [`run::quota_outcome`] as the decision.
    async fn consume_check_unit(
        &self,
        workspace_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<QuotaOutcome, StoreError> {
        let limit = self
            .get_workspace(workspace_id)
            .await?
            .ok_or(StoreError::NotFound)?
            .check_quota;
        let taken = self.take_check_unit(workspace_id, now, limit).await?;
        let used = match taken {
            Some(_) => 0,
            None => self.check_usage(workspace_id, now).await?,
        };
        run::quota_outcome(limit, taken, used)
    }

    /// The atomic primitive of the quota: adds one unit to the usage of the calendar month of
    /// `at` (UTC) only while it is below `limit` (always when `None`), in one statement, and
    /// returns the usage after it; `None` when the usage had reached `limit` (nothing written).
    /// Exact under concurrency. The limit and the decision come from the caller.
    async fn take_check_unit(
        &self,
        workspace_id: Uuid,
        at: OffsetDateTime,
        limit: Option<u32>,
    ) -> Result<Option<u64>, StoreError>;

    /// Units consumed in the calendar month (UTC) of `at`.
    async fn check_usage(&self, workspace_id: Uuid, at: OffsetDateTime) -> Result<u64, StoreError>;

    /// The workspace's quota and the units consumed in the month of `at`, read without any
    /// write (a check refuses before it fetches when nothing is left; the unit itself is taken by
    /// [`AlertStore::record_check_run`]). [`StoreError::NotFound`] when the workspace is missing.
    async fn check_quota_usage(
        &self,
        workspace_id: Uuid,
        at: OffsetDateTime,
    ) -> Result<QuotaUsage, StoreError>;

    // ---------------------------------------------------------------- tokens

    /// Stores a token (its hash, never its text). [`StoreError::NotFound`] when the workspace does
    /// not exist, [`StoreError::Conflict`] when the hash or id exists.
    async fn create_token(&self, new: NewToken) -> Result<StoredToken, StoreError>;

    /// Authentication: the token whose hex SHA-256 is `token_hash`, whatever its state (the
    /// caller checks expiry and revocation). The returned row names its workspace.
    async fn find_token_by_hash(&self, token_hash: &str)
    -> Result<Option<StoredToken>, StoreError>;

    /// One token of a workspace.
    async fn get_token(
        &self,
        workspace_id: Uuid,
        token_id: Uuid,
    ) -> Result<Option<StoredToken>, StoreError>;

    /// Every token of a workspace, oldest first (`created_at`, then id).
    async fn list_tokens(&self, workspace_id: Uuid) -> Result<Vec<StoredToken>, StoreError>;

    /// Sets `revoked_at` (kept when already revoked: idempotent) and returns the row.
    async fn revoke_token(
        &self,
        workspace_id: Uuid,
        token_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<StoredToken, StoreError>;

    /// Operator (`apidrift token revoke ID`): the same without a workspace id.
    async fn revoke_token_by_id(
        &self,
        token_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<StoredToken, StoreError>;

    /// Operator (`apidrift baseline capture ID`, `apidrift contract attach ID`): the workspace an
    /// endpoint belongs to, or `None` when no endpoint has that id. The admin CLI uses it to find
    /// the workspace for commands that name only the endpoint; nothing else may.
    async fn endpoint_workspace(&self, endpoint_id: Uuid) -> Result<Option<Uuid>, StoreError>;

    /// Sets `last_used_at = now` when it is unset or older than 60 s, in one statement. Returns
    /// whether a row was written (false also when the token is missing).
    async fn touch_token(
        &self,
        workspace_id: Uuid,
        token_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError>;

    // ---------------------------------------------------------------- endpoints

    /// Creates endpoints in ONE transaction (at most [`MAX_BULK_ENDPOINTS`]): counts the
    /// workspace's endpoints under a write lock, creates the first rows that fit its
    /// `endpoint_limit` and reports the rest as not created. A failure writes nothing.
    /// [`StoreError::NotFound`] when the workspace does not exist.
    async fn create_endpoints(
        &self,
        workspace_id: Uuid,
        rows: Vec<NewEndpointRow>,
    ) -> Result<BulkCreated, StoreError>;

    /// One endpoint.
    async fn get_endpoint(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<StoredEndpoint>, StoreError>;

    /// Endpoints newest first, filtered, paginated, with the unpaginated total.
    async fn list_endpoints(
        &self,
        workspace_id: Uuid,
        filter: &EndpointFilter,
        page: PageRequest,
    ) -> Result<Page<StoredEndpoint>, StoreError>;

    /// How many endpoints the workspace holds.
    async fn count_endpoints(&self, workspace_id: Uuid) -> Result<u64, StoreError>;

    /// The method and URL of every endpoint of the workspace, and nothing else (the OpenAPI
    /// import's `already registered`: no contract, secret or other column is read).
    async fn endpoint_keys(
        &self,
        workspace_id: Uuid,
    ) -> Result<Vec<(HttpMethod, String)>, StoreError>;

    /// Sets the health (and `updated_at`).
    async fn set_health(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        health: Health,
        now: OffsetDateTime,
    ) -> Result<(), StoreError>;

    /// Attaches (`Some`) or removes (`None`) the response contract (and sets `updated_at`).
    async fn set_contract(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        contract: Option<ResponseContract>,
        now: OffsetDateTime,
    ) -> Result<(), StoreError>;

    // ---------------------------------------------------------------- baselines

    /// Records a baseline in one transaction: `version` = the endpoint's highest version + 1, the
    /// endpoint's `baseline_version` set to it, and its health set to `health` when given (D7:
    /// `healthy` after a capture).
    async fn record_baseline(
        &self,
        workspace_id: Uuid,
        baseline: NewBaseline,
        health: Option<Health>,
    ) -> Result<StoredBaseline, StoreError>;

    /// The active baseline: the endpoint's highest version.
    async fn active_baseline(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<StoredBaseline>, StoreError>;

    // ---------------------------------------------------------------- checks and diffs

    /// Records a check in one transaction: the check row, the diff when given (its counts are
    /// computed from its changes), and the endpoint's latest figures: `last_checked_at` =
    /// `finished_at`, `response_time`, `breaking_count`/`warning_count` of this check (0 without
    /// a diff) and the health D7 derives from them ([`Health`] `breaking`/`warning`/`healthy`).
    async fn record_check(
        &self,
        workspace_id: Uuid,
        check: NewCheck,
        diff: Option<NewDiff>,
    ) -> Result<RecordedCheck, StoreError>;

    /// One check.
    async fn get_check(
        &self,
        workspace_id: Uuid,
        check_id: Uuid,
    ) -> Result<Option<StoredCheck>, StoreError>;

    /// The newest diff of an endpoint (newest first order), with its changes.
    async fn latest_diff(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<DiffDetail>, StoreError>;

    /// Everything a check reads before it fetches, in one call: the endpoint, its active
    /// baseline, the workspace's quota usage in the month of `at` (as
    /// [`Store::check_quota_usage`]), the endpoint's newest diff (as [`Store::latest_diff`]) and
    /// the workspace's default severity overrides and plan.
    /// `None` when the endpoint is not in the workspace. Adapters answer on one connection in
    /// one read transaction; this default composes the single reads.
    async fn check_context(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        at: OffsetDateTime,
    ) -> Result<Option<CheckContext>, StoreError> {
        let Some(endpoint) = self.get_endpoint(workspace_id, endpoint_id).await? else {
            return Ok(None);
        };
        // The endpoint's workspace exists (a foreign key); gone meanwhile, so is the endpoint.
        let Some(workspace) = self.get_workspace(workspace_id).await? else {
            return Ok(None);
        };
        Ok(Some(CheckContext {
            baseline: self.active_baseline(workspace_id, endpoint_id).await?,
            usage: self.check_quota_usage(workspace_id, at).await?,
            latest_diff: self.latest_diff(workspace_id, endpoint_id).await?,
            endpoint,
            workspace_overrides: workspace.severity_overrides,
            plan: workspace.plan,
        }))
    }

    /// Diffs newest first, filtered, paginated, with the unpaginated total; `endpointName` filled
    /// from the endpoint.
    async fn list_diffs(
        &self,
        workspace_id: Uuid,
        filter: &DiffFilter,
        page: PageRequest,
    ) -> Result<Page<DiffSummary>, StoreError>;

    /// One diff with every change.
    async fn get_diff(
        &self,
        workspace_id: Uuid,
        diff_id: Uuid,
    ) -> Result<Option<DiffDetail>, StoreError>;

    /// Accepting a diff (D12) in one transaction: sets `accepted`; records `baseline` (as
    /// [`Store::record_baseline`] does) when given; when this diff is the endpoint's latest, sets
    /// the endpoint `healthy` with zero breaking and warning counts
    /// ([`crate::rules::figures_after_accept`]). Idempotent: accepting an accepted diff changes nothing and records no baseline.
    async fn accept_diff(
        &self,
        workspace_id: Uuid,
        diff_id: Uuid,
        baseline: Option<NewBaseline>,
        now: OffsetDateTime,
    ) -> Result<AcceptOutcome, StoreError>;

    // ---------------------------------------------------------------- rate limits

    /// Rate limits shared by every instance on the database (D17): the database clock now and
    /// `key`'s stored theoretical arrival time (TAT, nanoseconds since the Unix epoch; `None` when
    /// the key has no row), read without any write. `Ok(None)` means this adapter keeps no shared
    /// state (the default; SQLite is one process, so the API limits in memory). The GCRA
    /// arithmetic, and how many units an instance leases at once, live above the store.
    async fn rate_limit_read(&self, key: &str) -> Result<Option<RateLimitRow>, StoreError> {
        let _ = key;
        Ok(None)
    }

    /// Compare-and-swap of `key`'s TAT: writes `new` only when the stored TAT is still `old`
    /// (`None`: only when the key has no row yet), in one statement. Returns whether it wrote;
    /// `false` means another instance moved the TAT first (read again and retry). Adapters that
    /// answer `Some` from [`Store::rate_limit_read`] must implement it.
    async fn rate_limit_swap(
        &self,
        key: &str,
        old: Option<i64>,
        new: i64,
    ) -> Result<bool, StoreError> {
        let _ = (key, old, new);
        Ok(false)
    }

    /// Moves `key`'s TAT back by `nanos` in one statement (an instance handing back leased units
    /// it did not spend). A missing key is left alone.
    async fn rate_limit_give_back(&self, key: &str, nanos: i64) -> Result<(), StoreError> {
        let _ = (key, nanos);
        Ok(())
    }

    // ---------------------------------------------------------------- key rotation

    /// Operator (`apidrift keys rotate`): one batch of sealed values of `field`, across every
    /// workspace, in row-id order after `after` (exclusive), at most `limit` (use
    /// [`REWRAP_BATCH`]). Rows whose blob is NULL are skipped.
    async fn sealed_values(
        &self,
        field: SealedField,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<Vec<SealedValue>, StoreError>;

    /// Compare-and-swap of one sealed value: `SET blob = new WHERE id = row AND blob = old`.
    /// Returns false when the stored blob is no longer `old` (someone rewrote it meanwhile).
    async fn replace_sealed_value(
        &self,
        field: SealedField,
        workspace_id: Uuid,
        row_id: Uuid,
        old: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError>;
}
