//! [`LifecycleStore`] on SQLite: changing and deleting endpoints, check history, deliveries, the
//! in-flight marker of a run and the retention of check rows.

use crate::cached::cached;
use crate::rows::{EndpointRow, SecretColumns, SettingsColumns, from_ts, id, parse_id, ts};
use crate::run::{self, Tx};
use crate::schema::endpoints;
use crate::{Error, Result, SqliteStore};
use apidrift_model::Health;
use apidrift_store::run as store_run;
use apidrift_store::{
    ApplyWrite, CheckHistoryRow, EndpointChanges, EndpointFilter, FailingEndpoint, LifecycleStore,
    ListedEndpoint, NextRun, Page, PageRequest, ResponsePoint, StoreError, StoredDelivery,
    StoredEndpoint, UptimeCounts, WorkspaceOverview, to_u16, to_u32,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer, Nullable, Text};
use time::OffsetDateTime;
use uuid::Uuid;

fn get(c: &mut SqliteConnection, ws: Uuid, ep: Uuid) -> Result<StoredEndpoint> {
    let row = endpoints::table
        .filter(endpoints::workspace_id.eq(id(ws)))
        .filter(endpoints::id.eq(id(ep)))
        .select(EndpointRow::as_select())
        .first(c)
        .optional()?;
    match row {
        Some(r) => {
            let mut found = [r.into_model()?];
            crate::endpoints::with_next_runs(c, ws, &mut found)?;
            let [e] = found;
            Ok(e)
        }
        None => Err(Error::Store(StoreError::NotFound)),
    }
}

fn update(
    c: &mut SqliteConnection,
    ws: Uuid,
    ep: Uuid,
    ch: &EndpointChanges,
    expected: Option<i64>,
    now: OffsetDateTime,
) -> Result<StoredEndpoint> {
    // One writer transaction: the version read here is the one the write below replaces (the
    // `version` filter says so again in the statement).
    let before = get(c, ws, ep)?;
    if expected.is_some_and(|v| v != before.version) {
        return Err(Error::Store(StoreError::Changed));
    }
    let n = diesel::update(
        endpoints::table
            .filter(endpoints::workspace_id.eq(id(ws)))
            .filter(endpoints::id.eq(id(ep)))
            .filter(endpoints::version.eq(before.version)),
    )
    .set((
        SettingsColumns::new(&ch.settings)?,
        SecretColumns::new(&ch.secrets),
        endpoints::paused.eq(ch.paused),
        endpoints::updated_at.eq(ts(now)),
        endpoints::version.eq(endpoints::version + 1),
    ))
    .execute(c)?;
    if n != 1 {
        return Err(Error::Store(StoreError::Changed));
    }
    if apidrift_store::rules::resets_schedule(before.settings.schedule, ch.settings.schedule) {
        cached("DELETE FROM schedules WHERE workspace_id = ? AND endpoint_id = ?")
            .bind::<Text, _>(id(ws))
            .bind::<Text, _>(id(ep))
            .execute(c)?;
    }
    get(c, ws, ep)
}

fn delete(c: &mut SqliteConnection, ws: Uuid, ep: Uuid, expected: Option<i64>) -> Result<()> {
    // One writer transaction: a mismatch returns before anything is deleted.
    let current = get(c, ws, ep)?;
    if expected.is_some_and(|v| v != current.version) {
        return Err(Error::Store(StoreError::Changed));
    }
    let (w, e) = (id(ws), id(ep));
    for sql in [
        "DELETE FROM deliveries WHERE event_id IN \
         (SELECT id FROM outbox_events WHERE workspace_id = ? AND endpoint_id = ?)",
        "DELETE FROM outbox_events WHERE workspace_id = ? AND endpoint_id = ?",
        "DELETE FROM schedules WHERE workspace_id = ? AND endpoint_id = ?",
        "DELETE FROM alert_state WHERE workspace_id = ? AND endpoint_id = ?",
        "DELETE FROM diffs WHERE workspace_id = ? AND endpoint_id = ?",
        "DELETE FROM checks WHERE workspace_id = ? AND endpoint_id = ?",
        "DELETE FROM baselines WHERE workspace_id = ? AND endpoint_id = ?",
        "DELETE FROM endpoints WHERE workspace_id = ? AND id = ?",
    ] {
        cached(sql)
            .bind::<Text, _>(&w)
            .bind::<Text, _>(&e)
            .execute(c)?;
    }
    // Its contract's schema set goes with its last reference.
    let set = current.response_contract.and_then(|rc| rc.set);
    crate::contracts::free_sets(c, ws, set.as_deref())
}

fn keyed(c: &mut SqliteConnection, ws: Uuid) -> Result<Vec<StoredEndpoint>> {
    let rows = endpoints::table
        .filter(endpoints::workspace_id.eq(id(ws)))
        .filter(endpoints::key.is_not_null())
        .order(endpoints::key.asc())
        .select(EndpointRow::as_select())
        .load(c)?;
    Ok(rows
        .into_iter()
        .map(EndpointRow::into_model)
        .collect::<std::result::Result<_, _>>()?)
}

/// One apply, inside the caller's write transaction: deletes, updates, then creates (in chunks
/// of the bulk limit); creates that do not all fit the plan undo the whole write.
fn apply(c: &mut SqliteConnection, ws: Uuid, w: &ApplyWrite, now: OffsetDateTime) -> Result<()> {
    crate::workspaces::require_workspace(c, ws)?;
    for (ep, version) in &w.deletes {
        delete(c, ws, *ep, Some(*version))?;
    }
    for u in &w.updates {
        update(c, ws, u.id, &u.changes, Some(u.version), now)?;
    }
    for chunk in w.creates.chunks(apidrift_store::MAX_BULK_ENDPOINTS) {
        let done = crate::endpoints::create_endpoints(c, ws, chunk)?;
        if done.not_created > 0 {
            let limit = done.endpoint_limit.unwrap_or_default();
            return Err(Error::Store(StoreError::Conflict(
                apidrift_store::apply_limit_message(limit),
            )));
        }
    }
    Ok(())
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct HistoryRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    endpoint_id: String,
    #[diesel(sql_type = BigInt)]
    started_at: i64,
    #[diesel(sql_type = BigInt)]
    finished_at: i64,
    #[diesel(sql_type = Nullable<Integer>)]
    http_status: Option<i32>,
    #[diesel(sql_type = Nullable<Integer>)]
    response_time: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    error_kind: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    diff_id: Option<String>,
    #[diesel(sql_type = Integer)]
    breaking_count: i32,
    #[diesel(sql_type = Integer)]
    warning_count: i32,
    #[diesel(sql_type = Integer)]
    change_count: i32,
    #[diesel(sql_type = Bool)]
    scheduled: bool,
}

impl HistoryRow {
    fn into_model(self) -> std::result::Result<CheckHistoryRow, StoreError> {
        let u = |c: &str, v: i32| to_u32(c, v.into());
        Ok(CheckHistoryRow {
            id: parse_id("checks.id", &self.id)?,
            endpoint_id: parse_id("checks.endpoint_id", &self.endpoint_id)?,
            started_at: from_ts("checks.started_at", self.started_at)?,
            finished_at: from_ts("checks.finished_at", self.finished_at)?,
            http_status: self
                .http_status
                .map(|v| to_u16("checks.http_status", v))
                .transpose()?,
            response_time: self
                .response_time
                .map(|v| u("checks.response_time", v))
                .transpose()?,
            error_kind: self.error_kind,
            diff_id: self
                .diff_id
                .map(|d| parse_id("checks.diff_id", &d))
                .transpose()?,
            breaking_count: u("diffs.breaking_count", self.breaking_count)?,
            warning_count: u("diffs.warning_count", self.warning_count)?,
            change_count: u("diffs.change_count", self.change_count)?,
            scheduled: self.scheduled,
        })
    }
}

fn list_checks(
    c: &mut SqliteConnection,
    ws: Uuid,
    ep: Uuid,
    page: PageRequest,
) -> Result<Page<CheckHistoryRow>> {
    let total: Count =
        cached("SELECT COUNT(*) AS n FROM checks WHERE workspace_id = ? AND endpoint_id = ?")
            .bind::<Text, _>(id(ws))
            .bind::<Text, _>(id(ep))
            .get_result(c)?;
    let rows: Vec<HistoryRow> = cached(
        "SELECT c.id, c.endpoint_id, c.started_at, c.finished_at, c.http_status, \
         c.response_time, c.error_kind, d.id AS diff_id, \
         COALESCE(d.breaking_count, 0) AS breaking_count, \
         COALESCE(d.warning_count, 0) AS warning_count, \
         COALESCE(d.change_count, 0) AS change_count, c.scheduled \
         FROM checks c LEFT JOIN diffs d ON d.id = c.diff_id AND d.workspace_id = c.workspace_id \
         WHERE c.workspace_id = ? AND c.endpoint_id = ? \
         ORDER BY c.started_at DESC, c.id DESC LIMIT ? OFFSET ?",
    )
    .bind::<Text, _>(id(ws))
    .bind::<Text, _>(id(ep))
    .bind::<BigInt, _>(i64::from(page.limit))
    .bind::<BigInt, _>(i64::try_from(page.offset).unwrap_or(i64::MAX))
    .load(c)?;
    Ok(Page {
        items: rows
            .into_iter()
            .map(HistoryRow::into_model)
            .collect::<std::result::Result<_, _>>()?,
        total: u64::try_from(total.n).unwrap_or(0),
    })
}

#[derive(QueryableByName)]
struct HealthCount {
    #[diesel(sql_type = Text)]
    health: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// An endpoint and an instant: a failing endpoint (with its error kind) or a next run.
#[derive(QueryableByName)]
struct EndpointAt {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = BigInt)]
    at: i64,
    #[diesel(sql_type = Nullable<Text>)]
    error_kind: Option<String>,
}

fn workspace_overview(c: &mut SqliteConnection, ws: Uuid, limit: u32) -> Result<WorkspaceOverview> {
    let w = id(ws);
    let counts: Vec<HealthCount> = cached(
        "SELECT health, COUNT(*) AS n FROM endpoints WHERE workspace_id = ? GROUP BY health",
    )
    .bind::<Text, _>(&w)
    .load(c)?;
    let mut by_health = Vec::with_capacity(counts.len());
    for r in counts {
        let health = r
            .health
            .parse::<Health>()
            .map_err(|e| StoreError::corrupt("endpoints.health", e))?;
        by_health.push((health, u64::try_from(r.n).unwrap_or(0)));
    }
    let failing: Vec<EndpointAt> = cached(
        "SELECT e.id, e.name, c.started_at AS at, c.error_kind FROM endpoints e \
         JOIN checks c ON c.workspace_id = e.workspace_id AND c.endpoint_id = e.id \
         WHERE e.workspace_id = ? AND c.error_kind IS NOT NULL AND c.id = \
         (SELECT l.id FROM checks l WHERE l.workspace_id = e.workspace_id \
          AND l.endpoint_id = e.id ORDER BY l.started_at DESC, l.id DESC LIMIT 1) \
         ORDER BY c.started_at DESC, e.id LIMIT ?",
    )
    .bind::<Text, _>(&w)
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)?;
    let next: Vec<EndpointAt> = cached(
        "SELECT e.id, e.name, s.next_run_at AS at, NULL AS error_kind FROM schedules s \
         JOIN endpoints e ON e.workspace_id = s.workspace_id AND e.id = s.endpoint_id \
         WHERE s.workspace_id = ? AND NOT e.paused ORDER BY s.next_run_at, e.id LIMIT ?",
    )
    .bind::<Text, _>(&w)
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)?;
    Ok(WorkspaceOverview {
        by_health,
        failing: failing
            .into_iter()
            .map(|r| {
                Ok(FailingEndpoint {
                    endpoint_id: parse_id("endpoints.id", &r.id)?,
                    name: r.name,
                    at: from_ts("checks.started_at", r.at)?,
                    error_kind: r.error_kind.unwrap_or_default(),
                })
            })
            .collect::<std::result::Result<_, StoreError>>()?,
        next_runs: next
            .into_iter()
            .map(|r| {
                Ok(NextRun {
                    endpoint_id: parse_id("endpoints.id", &r.id)?,
                    name: r.name,
                    at: from_ts("schedules.next_run_at", r.at)?,
                })
            })
            .collect::<std::result::Result<_, StoreError>>()?,
    })
}

#[derive(QueryableByName)]
struct DeliveryRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    webhook_id: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    endpoint_id: String,
    #[diesel(sql_type = Text)]
    payload: String,
    #[diesel(sql_type = BigInt)]
    created_at: i64,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = Nullable<BigInt>)]
    last_attempt_at: Option<i64>,
    #[diesel(sql_type = Nullable<Integer>)]
    last_status: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    last_error: Option<String>,
}

fn list_deliveries(
    c: &mut SqliteConnection,
    ws: Uuid,
    hook: Uuid,
    page: PageRequest,
) -> Result<Page<StoredDelivery>> {
    let total: Count =
        cached("SELECT COUNT(*) AS n FROM deliveries WHERE workspace_id = ? AND webhook_id = ?")
            .bind::<Text, _>(id(ws))
            .bind::<Text, _>(id(hook))
            .get_result(c)?;
    let rows: Vec<DeliveryRow> = cached(
        "SELECT d.id, d.webhook_id, e.kind, e.endpoint_id, e.payload, d.created_at, d.attempts, \
         d.state, a.attempted_at AS last_attempt_at, a.http_status AS last_status, \
         COALESCE(a.error, d.last_error) AS last_error \
         FROM deliveries d JOIN outbox_events e ON e.id = d.event_id \
         LEFT JOIN delivery_attempts a ON a.delivery_id = d.id AND a.attempt = \
           (SELECT MAX(attempt) FROM delivery_attempts WHERE delivery_id = d.id) \
         WHERE d.workspace_id = ? AND d.webhook_id = ? \
         ORDER BY d.created_at DESC, d.id DESC LIMIT ? OFFSET ?",
    )
    .bind::<Text, _>(id(ws))
    .bind::<Text, _>(id(hook))
    .bind::<BigInt, _>(i64::from(page.limit))
    .bind::<BigInt, _>(i64::try_from(page.offset).unwrap_or(i64::MAX))
    .load(c)?;
    let items = rows
        .into_iter()
        .map(|r| -> std::result::Result<StoredDelivery, StoreError> {
            Ok(StoredDelivery {
                id: parse_id("deliveries.id", &r.id)?,
                webhook_id: parse_id("deliveries.webhook_id", &r.webhook_id)?,
                event: r.kind,
                endpoint_id: parse_id("outbox_events.endpoint_id", &r.endpoint_id)?,
                payload: r.payload,
                created_at: from_ts("deliveries.created_at", r.created_at)?,
                attempts: to_u32("deliveries.attempts", r.attempts.into())?,
                state: r.state,
                last_attempt_at: r
                    .last_attempt_at
                    .map(|t| from_ts("delivery_attempts.attempted_at", t))
                    .transpose()?,
                last_status: r
                    .last_status
                    .map(|s| to_u16("delivery_attempts.http_status", s))
                    .transpose()?,
                last_error: r.last_error,
            })
        })
        .collect::<std::result::Result<_, _>>()?;
    Ok(Page {
        items,
        total: u64::try_from(total.n).unwrap_or(0),
    })
}

#[async_trait]
impl LifecycleStore for SqliteStore {
    async fn update_endpoint(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        changes: EndpointChanges,
        expected_version: Option<i64>,
        now: OffsetDateTime,
    ) -> std::result::Result<StoredEndpoint, StoreError> {
        changes.check_text()?;
        self.write(move |c| {
            update(
                c,
                workspace_id,
                endpoint_id,
                &changes,
                expected_version,
                now,
            )
        })
        .await
    }

    async fn keyed_endpoints(
        &self,
        workspace_id: Uuid,
    ) -> std::result::Result<Vec<StoredEndpoint>, StoreError> {
        self.read(move |c| keyed(c, workspace_id)).await
    }

    async fn apply_endpoints(
        &self,
        workspace_id: Uuid,
        write: ApplyWrite,
        now: OffsetDateTime,
    ) -> std::result::Result<(), StoreError> {
        write.check_text()?;
        self.write(move |c| apply(c, workspace_id, &write, now))
            .await
    }

    async fn delete_endpoint(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        expected_version: Option<i64>,
    ) -> std::result::Result<(), StoreError> {
        self.write(move |c| delete(c, workspace_id, endpoint_id, expected_version))
            .await
    }

    async fn list_checks(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        page: PageRequest,
    ) -> std::result::Result<Page<CheckHistoryRow>, StoreError> {
        self.quick_read(move |c| list_checks(c, workspace_id, endpoint_id, page))
            .await
    }

    async fn uptime_counts(
        &self,
        workspace_id: Uuid,
        endpoint_ids: &[Uuid],
        now: OffsetDateTime,
    ) -> std::result::Result<Vec<(Uuid, UptimeCounts)>, StoreError> {
        let ids = endpoint_ids.to_vec();
        self.quick_read(move |c| crate::history::uptime_counts(c, workspace_id, &ids, now))
            .await
    }

    async fn endpoint_page(
        &self,
        workspace_id: Uuid,
        filter: &EndpointFilter,
        page: PageRequest,
        now: OffsetDateTime,
        points: u32,
    ) -> std::result::Result<Page<ListedEndpoint>, StoreError> {
        filter.check_text()?;
        let filter = filter.clone();
        self.quick_read(move |c| {
            crate::endpoints::endpoint_page(c, workspace_id, &filter, page, now, points)
        })
        .await
    }

    async fn recent_response_times(
        &self,
        workspace_id: Uuid,
        endpoint_ids: &[Uuid],
        limit: u32,
    ) -> std::result::Result<Vec<(Uuid, Vec<ResponsePoint>)>, StoreError> {
        let ids = endpoint_ids.to_vec();
        self.quick_read(move |c| {
            crate::history::recent_response_times(c, workspace_id, &ids, limit)
        })
        .await
    }

    async fn workspace_overview(
        &self,
        workspace_id: Uuid,
        limit: u32,
    ) -> std::result::Result<WorkspaceOverview, StoreError> {
        self.read(move |c| workspace_overview(c, workspace_id, limit))
            .await
    }

    async fn list_deliveries(
        &self,
        workspace_id: Uuid,
        webhook_id: Uuid,
        page: PageRequest,
    ) -> std::result::Result<Page<StoredDelivery>, StoreError> {
        self.read(move |c| list_deliveries(c, workspace_id, webhook_id, page))
            .await
    }

    async fn begin_checking(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> std::result::Result<(), StoreError> {
        self.write(move |c| {
            run::now(store_run::begin_checking(
                &mut Tx(c),
                workspace_id,
                endpoint_id,
                now,
                until,
            ))
        })
        .await
    }

    async fn reset_stale_checking(
        &self,
        now: OffsetDateTime,
    ) -> std::result::Result<u64, StoreError> {
        self.write(move |c| run::now(store_run::reset_stale_checking(&mut Tx(c), now)))
            .await
    }

    async fn prune_checks(
        &self,
        before: OffsetDateTime,
        limit: u32,
    ) -> std::result::Result<u64, StoreError> {
        self.write(move |c| {
            let n = cached(
                "DELETE FROM checks WHERE id IN (SELECT c.id FROM checks c \
                 WHERE c.diff_id IS NULL AND c.started_at < ? \
                 AND NOT EXISTS (SELECT 1 FROM diffs d WHERE d.check_id = c.id) LIMIT ?)",
            )
            .bind::<BigInt, _>(ts(before))
            .bind::<BigInt, _>(i64::from(limit))
            .execute(c)?;
            Ok(n as u64)
        })
        .await
    }
}
