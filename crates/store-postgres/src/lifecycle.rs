//! [`LifecycleStore`] on PostgreSQL: changing and deleting endpoints, check history, deliveries,
//! the in-flight marker of a run and the retention of check rows.

use crate::cached::cached;
use crate::escape::{read_opt, read_text};
use crate::rows::{EndpointRow, SecretColumns, SettingsColumns, micros};
use crate::run::Tx;
use crate::schema::endpoints;
use crate::{Error, PgStore, Result, totals};
use apidrift_model::Health;
use apidrift_store::run as store_run;
use apidrift_store::{
    ApplyWrite, CheckHistoryRow, EndpointChanges, EndpointFilter, FailingEndpoint, LifecycleStore,
    ListedEndpoint, NextRun, Page, PageRequest, ResponsePoint, StoreError, StoredDelivery,
    StoredEndpoint, UptimeCounts, WorkspaceOverview, to_u16, to_u32,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

type Conn = AsyncPgConnection;

async fn get(c: &mut Conn, ws: Uuid, ep: Uuid) -> Result<StoredEndpoint> {
    let row = endpoints::table
        .filter(endpoints::workspace_id.eq(ws))
        .filter(endpoints::id.eq(ep))
        .select(EndpointRow::as_select())
        .for_update()
        .first(c)
        .await
        .optional()?;
    match row {
        Some(r) => {
            let mut found = [r.into_model()?];
            crate::endpoints::with_next_runs(c, ws, &mut found).await?;
            let [e] = found;
            Ok(e)
        }
        None => Err(Error::Store(StoreError::NotFound)),
    }
}

async fn update(
    c: &mut Conn,
    ws: Uuid,
    ep: Uuid,
    ch: &EndpointChanges,
    expected: Option<i64>,
    now: OffsetDateTime,
) -> Result<StoredEndpoint> {
    // The schedule row (when there is one) before the endpoint row, in the order of a claim: an
    // update that drops the schedule and a claim of it never wait on each other in a cycle.
    cached("SELECT 1 FROM schedules WHERE workspace_id = $1 AND endpoint_id = $2 FOR UPDATE")
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(ep)
        .execute(c)
        .await?;
    // `get` locks the endpoint row: the version compared here is the one the write replaces.
    let before = get(c, ws, ep).await?;
    if expected.is_some_and(|v| v != before.version) {
        return Err(Error::Store(StoreError::Changed));
    }
    let n = diesel::update(
        endpoints::table
            .filter(endpoints::workspace_id.eq(ws))
            .filter(endpoints::id.eq(ep))
            .filter(endpoints::version.eq(before.version)),
    )
    .set((
        SettingsColumns::new(&ch.settings)?,
        SecretColumns::new(&ch.secrets),
        endpoints::paused.eq(ch.paused),
        endpoints::updated_at.eq(micros(now)),
        endpoints::version.eq(endpoints::version + 1),
    ))
    .execute(c)
    .await?;
    if n != 1 {
        return Err(Error::Store(StoreError::Changed));
    }
    if apidrift_store::rules::resets_schedule(before.settings.schedule, ch.settings.schedule) {
        cached("DELETE FROM schedules WHERE workspace_id = $1 AND endpoint_id = $2")
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(ep)
            .execute(c)
            .await?;
    }
    get(c, ws, ep).await
}

async fn keyed(c: &mut Conn, ws: Uuid) -> Result<Vec<StoredEndpoint>> {
    let rows = endpoints::table
        .filter(endpoints::workspace_id.eq(ws))
        .filter(endpoints::key.is_not_null())
        .order(endpoints::key.asc())
        .select(EndpointRow::as_select())
        .load(c)
        .await?;
    Ok(rows
        .into_iter()
        .map(EndpointRow::into_model)
        .collect::<std::result::Result<_, _>>()?)
}

/// One apply, inside the caller's transaction: the workspace row locked first (as creating and
/// deleting endpoints do), then deletes, updates and creates (in chunks of the bulk limit);
/// creates that do not all fit the plan undo the whole write.
async fn apply(c: &mut Conn, ws: Uuid, w: &ApplyWrite, now: OffsetDateTime) -> Result<()> {
    crate::workspaces::lock_workspace(c, ws).await?;
    for (ep, version) in &w.deletes {
        delete(c, ws, *ep, Some(*version)).await?;
    }
    for u in &w.updates {
        update(c, ws, u.id, &u.changes, Some(u.version), now).await?;
    }
    for chunk in w.creates.chunks(apidrift_store::MAX_BULK_ENDPOINTS) {
        let done = crate::endpoints::create_endpoints(c, ws, chunk).await?;
        if done.not_created > 0 {
            let limit = done.endpoint_limit.unwrap_or_default();
            return Err(Error::Store(StoreError::Conflict(
                apidrift_store::apply_limit_message(limit),
            )));
        }
    }
    Ok(())
}

async fn delete(c: &mut Conn, ws: Uuid, ep: Uuid, expected: Option<i64>) -> Result<()> {
    // Lock the workspace row as creating endpoints does, so the plan count stays exact (the same
    // `FOR NO KEY UPDATE`, which the foreign-key checks of a concurrent check's rows pass).
    cached("SELECT id FROM workspaces WHERE id = $1 FOR NO KEY UPDATE")
        .bind::<SqlUuid, _>(ws)
        .execute(c)
        .await?;
    // The schedule row before the endpoint row: the order of a claim, a finish and a scheduled
    // run's recording (schedule, then endpoint), so none of them waits on this delete in the
    // opposite order.
    cached("DELETE FROM schedules WHERE workspace_id = $1 AND endpoint_id = $2")
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(ep)
        .execute(c)
        .await?;
    // `get` locks the endpoint row: nobody changes its version before the delete below. A
    // mismatch returns before anything is deleted, and the transaction rolls back the schedule.
    let current = get(c, ws, ep).await?;
    if expected.is_some_and(|v| v != current.version) {
        return Err(Error::Store(StoreError::Changed));
    }
    for sql in [
        "DELETE FROM deliveries WHERE event_id IN \
         (SELECT id FROM outbox_events WHERE workspace_id = $1 AND endpoint_id = $2)",
        "DELETE FROM outbox_events WHERE workspace_id = $1 AND endpoint_id = $2",
        "DELETE FROM alert_state WHERE workspace_id = $1 AND endpoint_id = $2",
        "DELETE FROM diffs WHERE workspace_id = $1 AND endpoint_id = $2",
        "DELETE FROM checks WHERE workspace_id = $1 AND endpoint_id = $2",
        "DELETE FROM baselines WHERE workspace_id = $1 AND endpoint_id = $2",
        "DELETE FROM endpoints WHERE workspace_id = $1 AND id = $2",
    ] {
        cached(sql)
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(ep)
            .execute(c)
            .await?;
    }
    // Its contract's schema set goes with its last reference.
    let set = current.response_contract.and_then(|rc| rc.set);
    let sets: Vec<&str> = set.as_deref().into_iter().collect();
    crate::contracts::free_sets(c, ws, &sets).await
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct HistoryRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    endpoint_id: Uuid,
    #[diesel(sql_type = Timestamptz)]
    started_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    finished_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Integer>)]
    http_status: Option<i32>,
    #[diesel(sql_type = Nullable<Integer>)]
    response_time: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    error_kind: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    diff_id: Option<Uuid>,
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
            id: self.id,
            endpoint_id: self.endpoint_id,
            started_at: self.started_at,
            finished_at: self.finished_at,
            http_status: self
                .http_status
                .map(|v| to_u16("checks.http_status", v))
                .transpose()?,
            response_time: self
                .response_time
                .map(|v| u("checks.response_time", v))
                .transpose()?,
            error_kind: read_opt(self.error_kind),
            diff_id: self.diff_id,
            breaking_count: u("diffs.breaking_count", self.breaking_count)?,
            warning_count: u("diffs.warning_count", self.warning_count)?,
            change_count: u("diffs.change_count", self.change_count)?,
            scheduled: self.scheduled,
        })
    }
}

async fn list_checks(
    c: &mut Conn,
    ws: Uuid,
    ep: Uuid,
    page: PageRequest,
) -> Result<Page<CheckHistoryRow>> {
    let rows: Vec<HistoryRow> = cached(
        "SELECT c.id, c.endpoint_id, c.started_at, c.finished_at, c.http_status, \
         c.response_time, c.error_kind, d.id AS diff_id, \
         COALESCE(d.breaking_count, 0) AS breaking_count, \
         COALESCE(d.warning_count, 0) AS warning_count, \
         COALESCE(d.change_count, 0) AS change_count, c.scheduled \
         FROM checks c LEFT JOIN diffs d ON d.id = c.diff_id AND d.workspace_id = c.workspace_id \
         WHERE c.workspace_id = $1 AND c.endpoint_id = $2 \
         ORDER BY c.started_at DESC, c.id DESC LIMIT $3 OFFSET $4",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<SqlUuid, _>(ep)
    .bind::<BigInt, _>(i64::from(page.limit))
    .bind::<BigInt, _>(i64::try_from(page.offset).unwrap_or(i64::MAX))
    .load(c)
    .await?;
    // A short page (the usual case) tells the total: no second statement.
    let total = match totals::known_total(page, rows.len()) {
        Some(t) => t,
        None => {
            let n: Count = cached(
                "SELECT COUNT(*) AS n FROM checks WHERE workspace_id = $1 AND endpoint_id = $2",
            )
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(ep)
            .get_result(c)
            .await?;
            u64::try_from(n.n).unwrap_or(0)
        }
    };
    Ok(Page {
        items: rows
            .into_iter()
            .map(HistoryRow::into_model)
            .collect::<std::result::Result<_, _>>()?,
        total,
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
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Timestamptz)]
    at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Text>)]
    error_kind: Option<String>,
}

async fn workspace_overview(c: &mut Conn, ws: Uuid, limit: u32) -> Result<WorkspaceOverview> {
    let counts: Vec<HealthCount> = cached(
        "SELECT health, COUNT(*) AS n FROM endpoints WHERE workspace_id = $1 GROUP BY health",
    )
    .bind::<SqlUuid, _>(ws)
    .load(c)
    .await?;
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
         WHERE e.workspace_id = $1 AND c.error_kind IS NOT NULL AND c.id = \
         (SELECT l.id FROM checks l WHERE l.workspace_id = e.workspace_id \
          AND l.endpoint_id = e.id ORDER BY l.started_at DESC, l.id DESC LIMIT 1) \
         ORDER BY c.started_at DESC, e.id LIMIT $2",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)
    .await?;
    let next: Vec<EndpointAt> = cached(
        "SELECT e.id, e.name, s.next_run_at AS at, NULL::text AS error_kind FROM schedules s \
         JOIN endpoints e ON e.workspace_id = s.workspace_id AND e.id = s.endpoint_id \
         WHERE s.workspace_id = $1 AND NOT e.paused ORDER BY s.next_run_at, e.id LIMIT $2",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)
    .await?;
    Ok(WorkspaceOverview {
        by_health,
        failing: failing
            .into_iter()
            .map(|r| FailingEndpoint {
                endpoint_id: r.id,
                name: r.name,
                at: r.at,
                error_kind: read_opt(r.error_kind).unwrap_or_default(),
            })
            .collect(),
        next_runs: next
            .into_iter()
            .map(|r| NextRun {
                endpoint_id: r.id,
                name: r.name,
                at: r.at,
            })
            .collect(),
    })
}

#[derive(QueryableByName)]
struct DeliveryRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    webhook_id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = SqlUuid)]
    endpoint_id: Uuid,
    #[diesel(sql_type = Text)]
    payload: String,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_attempt_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Integer>)]
    last_status: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    last_error: Option<String>,
}

async fn list_deliveries(
    c: &mut Conn,
    ws: Uuid,
    hook: Uuid,
    page: PageRequest,
) -> Result<Page<StoredDelivery>> {
    let total: Count =
        cached("SELECT COUNT(*) AS n FROM deliveries WHERE workspace_id = $1 AND webhook_id = $2")
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(hook)
            .get_result(c)
            .await?;
    let rows: Vec<DeliveryRow> = cached(
        "SELECT d.id, d.webhook_id, e.kind, e.endpoint_id, e.payload, d.created_at, d.attempts, \
         d.state, a.attempted_at AS last_attempt_at, a.http_status AS last_status, \
         COALESCE(a.error, d.last_error) AS last_error \
         FROM deliveries d JOIN outbox_events e ON e.id = d.event_id \
         LEFT JOIN delivery_attempts a ON a.delivery_id = d.id AND a.attempt = \
           (SELECT MAX(attempt) FROM delivery_attempts WHERE delivery_id = d.id) \
         WHERE d.workspace_id = $1 AND d.webhook_id = $2 \
         ORDER BY d.created_at DESC, d.id DESC LIMIT $3 OFFSET $4",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<SqlUuid, _>(hook)
    .bind::<BigInt, _>(i64::from(page.limit))
    .bind::<BigInt, _>(i64::try_from(page.offset).unwrap_or(i64::MAX))
    .load(c)
    .await?;
    let items = rows
        .into_iter()
        .map(|r| -> std::result::Result<StoredDelivery, StoreError> {
            Ok(StoredDelivery {
                id: r.id,
                webhook_id: r.webhook_id,
                event: r.kind,
                endpoint_id: r.endpoint_id,
                payload: read_text(r.payload),
                created_at: r.created_at,
                attempts: to_u32("deliveries.attempts", r.attempts.into())?,
                state: r.state,
                last_attempt_at: r.last_attempt_at,
                last_status: r
                    .last_status
                    .map(|s| to_u16("delivery_attempts.http_status", s))
                    .transpose()?,
                last_error: read_opt(r.last_error),
            })
        })
        .collect::<std::result::Result<_, _>>()?;
    Ok(Page {
        items,
        total: u64::try_from(total.n).unwrap_or(0),
    })
}

#[async_trait]
impl LifecycleStore for PgStore {
    async fn update_endpoint(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        changes: EndpointChanges,
        expected_version: Option<i64>,
        now: OffsetDateTime,
    ) -> std::result::Result<StoredEndpoint, StoreError> {
        changes.check_text()?;
        tx!(self, |c| update(
            c,
            workspace_id,
            endpoint_id,
            &changes,
            expected_version,
            now
        )
        .await)
    }

    async fn keyed_endpoints(
        &self,
        workspace_id: Uuid,
    ) -> std::result::Result<Vec<StoredEndpoint>, StoreError> {
        let mut conn = self.conn().await?;
        keyed(&mut conn, workspace_id)
            .await
            .map_err(StoreError::from)
    }

    async fn apply_endpoints(
        &self,
        workspace_id: Uuid,
        write: ApplyWrite,
        now: OffsetDateTime,
    ) -> std::result::Result<(), StoreError> {
        write.check_text()?;
        tx!(self, |c| apply(c, workspace_id, &write, now).await)
    }

    async fn delete_endpoint(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        expected_version: Option<i64>,
    ) -> std::result::Result<(), StoreError> {
        tx!(self, |c| delete(
            c,
            workspace_id,
            endpoint_id,
            expected_version
        )
        .await)
    }

    async fn list_checks(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        page: PageRequest,
    ) -> std::result::Result<Page<CheckHistoryRow>, StoreError> {
        let mut conn = self.conn().await?;
        list_checks(&mut conn, workspace_id, endpoint_id, page)
            .await
            .map_err(StoreError::from)
    }

    async fn uptime_counts(
        &self,
        workspace_id: Uuid,
        endpoint_ids: &[Uuid],
        now: OffsetDateTime,
    ) -> std::result::Result<Vec<(Uuid, UptimeCounts)>, StoreError> {
        let mut conn = self.conn().await?;
        crate::history::uptime_counts(&mut conn, workspace_id, endpoint_ids, now)
            .await
            .map_err(StoreError::from)
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
        let mut conn = self.conn().await?;
        crate::endpoints::endpoint_page(&mut conn, workspace_id, filter, page, now, points)
            .await
            .map_err(StoreError::from)
    }

    async fn recent_response_times(
        &self,
        workspace_id: Uuid,
        endpoint_ids: &[Uuid],
        limit: u32,
    ) -> std::result::Result<Vec<(Uuid, Vec<ResponsePoint>)>, StoreError> {
        let mut conn = self.conn().await?;
        crate::history::recent_response_times(&mut conn, workspace_id, endpoint_ids, limit)
            .await
            .map_err(StoreError::from)
    }

    async fn workspace_overview(
        &self,
        workspace_id: Uuid,
        limit: u32,
    ) -> std::result::Result<WorkspaceOverview, StoreError> {
        let mut conn = self.conn().await?;
        workspace_overview(&mut conn, workspace_id, limit)
            .await
            .map_err(StoreError::from)
    }

    async fn list_deliveries(
        &self,
        workspace_id: Uuid,
        webhook_id: Uuid,
        page: PageRequest,
    ) -> std::result::Result<Page<StoredDelivery>, StoreError> {
        tx!(self, |c| list_deliveries(c, workspace_id, webhook_id, page)
            .await)
    }

    async fn begin_checking(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> std::result::Result<(), StoreError> {
        tx!(self, |c| store_run::begin_checking(
            &mut Tx::new(c),
            workspace_id,
            endpoint_id,
            now,
            until
        )
        .await)
    }

    async fn reset_stale_checking(
        &self,
        now: OffsetDateTime,
    ) -> std::result::Result<u64, StoreError> {
        // Many endpoint rows locked in one transaction: retried when it meets a claim or a
        // delete.
        tx!(self, |c| store_run::reset_stale_checking(
            &mut Tx::new(c),
            now
        )
        .await)
    }

    async fn prune_checks(
        &self,
        before: OffsetDateTime,
        limit: u32,
    ) -> std::result::Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let n = cached(
            "DELETE FROM checks WHERE id IN (SELECT c.id FROM checks c \
             WHERE c.diff_id IS NULL AND c.started_at < $1 \
             AND NOT EXISTS (SELECT 1 FROM diffs d WHERE d.check_id = c.id) LIMIT $2)",
        )
        .bind::<Timestamptz, _>(micros(before))
        .bind::<BigInt, _>(i64::from(limit))
        .execute(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        Ok(n as u64)
    }
}
