//! Endpoint lifecycle and history (D19): the [`LifecycleStore`] trait, a supertrait of
//! [`crate::Store`] that both adapters implement: changing and deleting an endpoint, its check
//! history, a webhook's deliveries, the in-flight marker of a run (so no endpoint stays
//! `checking` after a crash) and the retention of check rows.

use crate::{
    EndpointFilter, NewEndpointRow, Page, PageRequest, SealedSecrets, StoreError, StoredEndpoint,
};
use apidrift_model::{EndpointSettings, Health};
use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

/// The new state of every field a PATCH may change (the service merges the request into the
/// stored settings, validates the result, seals new secrets, and passes the whole state).
/// Figures, health, baseline and contract are not part of it: they stay. A new
/// `settings.schedule` (or `None`) resets the schedule row: the scheduler creates it again.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointChanges {
    pub settings: EndpointSettings,
    pub secrets: SealedSecrets,
    pub paused: bool,
}

impl EndpointChanges {
    /// The current state of `e`, to be changed field by field.
    pub fn of(e: &StoredEndpoint) -> Self {
        EndpointChanges {
            settings: e.settings.clone(),
            secrets: e.secrets.clone(),
            paused: e.paused,
        }
    }
}

/// What the console's overview shows of a workspace, read at once: its endpoints by health, those
/// whose latest check failed to fetch, and the next scheduled runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WorkspaceOverview {
    /// How many endpoints have each health (only the healths that occur, in no order).
    pub by_health: Vec<(Health, u64)>,
    /// Endpoints whose latest check got no response (an error kind), newest failure first.
    pub failing: Vec<FailingEndpoint>,
    /// The next runs of the schedules of endpoints that are not paused, soonest first.
    pub next_runs: Vec<NextRun>,
}

/// An endpoint whose latest check failed to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingEndpoint {
    pub endpoint_id: Uuid,
    pub name: String,
    /// When that check started.
    pub at: OffsetDateTime,
    /// Its error kind (`timeout`, `connect_refused`, …).
    pub error_kind: String,
}

/// The next run of an endpoint's schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextRun {
    pub endpoint_id: Uuid,
    pub name: String,
    pub at: OffsetDateTime,
}

/// One endpoint an apply changes: its new state, written only while the endpoint still has
/// `version` (the one the plan was computed from).
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyUpdate {
    pub id: Uuid,
    pub version: i64,
    pub changes: EndpointChanges,
}

/// Every write of one apply of a monitors file ([`LifecycleStore::apply_endpoints`]): the
/// endpoints to create, to change and to delete (id and the version the plan read).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApplyWrite {
    pub creates: Vec<NewEndpointRow>,
    pub updates: Vec<ApplyUpdate>,
    pub deletes: Vec<(Uuid, i64)>,
}

impl ApplyWrite {
    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.creates.is_empty() && self.updates.is_empty() && self.deletes.is_empty()
    }

    /// [`StoreError::InvalidInput`] for a NUL in any text of the write.
    pub fn check_text(&self) -> Result<(), StoreError> {
        self.creates
            .iter()
            .try_for_each(NewEndpointRow::check_text)?;
        self.updates.iter().try_for_each(|u| u.changes.check_text())
    }
}

/// The message of the [`StoreError::Conflict`] of an apply whose result does not fit the
/// workspace's endpoint limit.
pub fn apply_limit_message(limit: u32) -> String {
    format!("workspace plan endpoint limit reached ({limit} endpoints)")
}

/// One row of an endpoint's check history: the check's figures and its diff's counts (0 without
/// a diff). Never a body, header value or credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckHistoryRow {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub started_at: OffsetDateTime,
    pub finished_at: OffsetDateTime,
    pub http_status: Option<u16>,
    pub response_time: Option<u32>,
    pub error_kind: Option<String>,
    pub diff_id: Option<Uuid>,
    pub breaking_count: u32,
    pub warning_count: u32,
    pub change_count: u32,
    pub scheduled: bool,
}

/// An endpoint's checks in one window of its uptime: how many ran and how many were up (a
/// response arrived, with a status below 500).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowCounts {
    pub checks: u64,
    pub up: u64,
}

/// An endpoint's checks in the three windows of its uptime, which end at the `now` of the read:
/// the last 24 hours, 7 days and 30 days (by the checks' `started_at`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UptimeCounts {
    pub day: WindowCounts,
    pub week: WindowCounts,
    pub month: WindowCounts,
}

/// The most rows of one page of [`LifecycleStore::endpoint_page`] (the API's largest page): a
/// larger `limit` reads this many.
pub const ENDPOINT_PAGE_ROWS: u32 = 100;

/// How long each window of [`UptimeCounts`] reaches back.
pub const UPTIME_DAY: time::Duration = time::Duration::days(1);
/// See [`UPTIME_DAY`].
pub const UPTIME_WEEK: time::Duration = time::Duration::days(7);
/// See [`UPTIME_DAY`].
pub const UPTIME_MONTH: time::Duration = time::Duration::days(30);

/// One point of an endpoint's response-time series: when the check started and its response
/// time (`None`: no response).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponsePoint {
    pub started_at: OffsetDateTime,
    pub response_time: Option<u32>,
}

/// One row of an endpoint list page ([`LifecycleStore::endpoint_page`]): what the API's and the
/// console's lists show, read together in one store call.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedEndpoint {
    /// The endpoint as a list shows it. Its sealed values and its contract body are **not
    /// read**: `secrets` carries only `auth_type` (the `sealed_*` fields are `None`) and
    /// `response_contract` is `None` (see [`ListedEndpoint::has_response_contract`]).
    /// `next_run_at` is filled as [`crate::Store::list_endpoints`] fills it; `uptime` is left
    /// `None` for the use case to compute from [`ListedEndpoint::uptime_counts`].
    pub endpoint: StoredEndpoint,
    /// Whether the endpoint has a response contract (its body is not read).
    pub has_response_contract: bool,
    /// Its checks in the windows of its uptime, as [`LifecycleStore::uptime_counts`] counts them
    /// (all zero without checks).
    pub uptime_counts: UptimeCounts,
    /// Its last `points` response times, oldest first, as
    /// [`LifecycleStore::recent_response_times`] reads them (empty without checks or when
    /// `points` is 0).
    pub recent: Vec<ResponsePoint>,
}

impl ListedEndpoint {
    /// The wire form: [`StoredEndpoint::to_model`] with `hasResponseContract` from the row.
    pub fn to_model(&self) -> apidrift_model::Endpoint {
        let mut m = self.endpoint.to_model();
        m.has_response_contract = self.has_response_contract;
        m
    }
}

/// One delivery of a webhook, with its event and its last attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDelivery {
    pub id: Uuid,
    pub webhook_id: Uuid,
    /// The event kind (`drift.detected`, `drift.resolved`).
    pub event: String,
    pub endpoint_id: Uuid,
    /// The exact JSON body that is signed and sent (it names the diff; no monitored content).
    pub payload: String,
    pub created_at: OffsetDateTime,
    pub attempts: u32,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub last_attempt_at: Option<OffsetDateTime>,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
}

/// Endpoint lifecycle and history. Implemented by both adapters.
#[async_trait]
pub trait LifecycleStore: Send + Sync {
    /// Writes `changes` to the endpoint (and `updated_at = now`, `version + 1`) in one
    /// transaction; when the schedule changed, its schedule row is removed (the scheduler creates
    /// the new one). Figures, health, baseline and contract stay. With `expected_version`, the
    /// write happens only while the stored version is that one: otherwise
    /// [`StoreError::Changed`] and nothing is written. [`StoreError::NotFound`] when missing.
    async fn update_endpoint(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        changes: EndpointChanges,
        expected_version: Option<i64>,
        now: OffsetDateTime,
    ) -> Result<StoredEndpoint, StoreError>;

    /// Every endpoint of the workspace that has a key, ordered by key (an apply's plan).
    async fn keyed_endpoints(&self, workspace_id: Uuid) -> Result<Vec<StoredEndpoint>, StoreError>;

    /// Writes a whole apply in ONE transaction: the deletes (as [`Self::delete_endpoint`]), the
    /// updates (as [`Self::update_endpoint`] with the update's version, `updated_at = now`), then
    /// the creates. Any failure writes nothing: [`StoreError::Changed`] when an endpoint changed
    /// since the plan read it, [`StoreError::NotFound`] when one is gone (or the workspace),
    /// [`StoreError::Conflict`] when a key is taken meanwhile or when the result would exceed the
    /// workspace's endpoint limit (message [`apply_limit_message`]).
    async fn apply_endpoints(
        &self,
        workspace_id: Uuid,
        write: ApplyWrite,
        now: OffsetDateTime,
    ) -> Result<(), StoreError>;

    /// Deletes the endpoint in ONE transaction with its schedule, baselines, checks, diffs, alert
    /// state, contract and sealed secrets, and its outbox events with their queued deliveries.
    /// The workspace's endpoint count drops. With `expected_version`, only while the stored
    /// version is that one: otherwise [`StoreError::Changed`] and the endpoint stays.
    /// [`StoreError::NotFound`] when missing.
    async fn delete_endpoint(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        expected_version: Option<i64>,
    ) -> Result<(), StoreError>;

    /// The endpoint's checks, newest first (`started_at`, then id, descending), paginated, with
    /// the total. Empty for an endpoint of another workspace.
    async fn list_checks(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        page: PageRequest,
    ) -> Result<Page<CheckHistoryRow>, StoreError>;

    /// The console overview of workspace `workspace_id`: endpoints by health, and at most
    /// `limit` failing endpoints and `limit` next runs (see [`WorkspaceOverview`]).
    async fn workspace_overview(
        &self,
        workspace_id: Uuid,
        limit: u32,
    ) -> Result<WorkspaceOverview, StoreError>;

    /// A webhook's deliveries, newest first, paginated, with the total. Empty for a webhook of
    /// another workspace.
    async fn list_deliveries(
        &self,
        workspace_id: Uuid,
        webhook_id: Uuid,
        page: PageRequest,
    ) -> Result<Page<StoredDelivery>, StoreError>;

    /// Marks a run in flight: health `checking` until `until` at the latest, the health before it
    /// kept to be restored ([`LifecycleStore::reset_stale_checking`]). A second mark keeps the
    /// first health. [`StoreError::NotFound`] when missing.
    async fn begin_checking(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<(), StoreError>;

    /// Operator (start-up and the worker): every endpoint still `checking` whose run should have
    /// ended before `now` gets back the health it had before the run. Returns how many.
    async fn reset_stale_checking(&self, now: OffsetDateTime) -> Result<u64, StoreError>;

    /// The uptime counts of each of `endpoint_ids` of the workspace that had a check in the last
    /// 30 days before `now` (the others are left out), in ONE statement for the whole list.
    async fn uptime_counts(
        &self,
        workspace_id: Uuid,
        endpoint_ids: &[Uuid],
        now: OffsetDateTime,
    ) -> Result<Vec<(Uuid, UptimeCounts)>, StoreError>;

    /// One page of the workspace's endpoints as the lists show them ([`ListedEndpoint`]): the
    /// endpoints of [`crate::Store::list_endpoints`] (same filter, order, page and total) with
    /// their next runs, their uptime counts at `now` and their last `points` response times (at
    /// most 100; 0 for none), without sealed values nor contract bodies. At most
    /// [`ENDPOINT_PAGE_ROWS`] a page. PostgreSQL answers it with ONE statement (docs/storage.md);
    /// SQLite with one read transaction.
    async fn endpoint_page(
        &self,
        workspace_id: Uuid,
        filter: &EndpointFilter,
        page: PageRequest,
        now: OffsetDateTime,
        points: u32,
    ) -> Result<Page<ListedEndpoint>, StoreError>;

    /// The last `limit` checks of each of `endpoint_ids` of the workspace, oldest first, in ONE
    /// statement for the whole list; an endpoint without checks is left out.
    async fn recent_response_times(
        &self,
        workspace_id: Uuid,
        endpoint_ids: &[Uuid],
        limit: u32,
    ) -> Result<Vec<(Uuid, Vec<ResponsePoint>)>, StoreError>;

    /// Operator (the worker's retention): deletes at most `limit` check rows without a diff that
    /// started before `before`, their sealed bodies with them. Returns how many.
    async fn prune_checks(&self, before: OffsetDateTime, limit: u32) -> Result<u64, StoreError>;
}
