//! Baselines and checks.
//! Statements of the PostgreSQL adapter over one connection; the caller picks the transaction.

use crate::Result;
use crate::cached::cached;
use crate::endpoints::lock_endpoint;
use crate::escape::{store_json, store_opt};
use crate::not_found;
use crate::rows::{BaselineRow, CheckRow, int, micros};
use crate::schema::{baselines, checks, diffs, endpoints};
use crate::tx::{Step, pipeline};
use apidrift_model::Health;
use apidrift_store::{
    DiffCounts, NewBaseline, NewCheck, NewDiff, StoredBaseline, StoredCheck, changes_to_json,
};
use diesel::prelude::*;
use diesel::sql_types::{Bool, Bytea, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

type Conn = AsyncPgConnection;

pub async fn record_baseline(
    c: &mut Conn,
    ws: Uuid,
    b: &NewBaseline,
    health: Option<Health>,
) -> Result<StoredBaseline> {
    lock_endpoint(c, ws, b.endpoint_id).await?;
    let max: Option<i32> = baselines::table
        .filter(baselines::workspace_id.eq(ws))
        .filter(baselines::endpoint_id.eq(b.endpoint_id))
        .select(diesel::dsl::max(baselines::version))
        .first(c)
        .await?;
    let version = max.unwrap_or(0) + 1;
    let row = diesel::insert_into(baselines::table)
        .values(&BaselineRow::new(ws, b, version))
        .returning(BaselineRow::as_returning())
        .get_result(c)
        .await?;
    let target = endpoints::table
        .filter(endpoints::workspace_id.eq(ws))
        .filter(endpoints::id.eq(b.endpoint_id));
    match health {
        Some(h) => {
            diesel::update(target)
                .set((
                    endpoints::baseline_version.eq(Some(version)),
                    endpoints::health.eq(h.as_str()),
                    endpoints::updated_at.eq(micros(b.captured_at)),
                ))
                .execute(c)
                .await?
        }
        None => {
            diesel::update(target)
                .set((
                    endpoints::baseline_version.eq(Some(version)),
                    endpoints::updated_at.eq(micros(b.captured_at)),
                ))
                .execute(c)
                .await?
        }
    };
    Ok(row.into_model()?)
}

pub async fn active_baseline(
    mut c: &Conn,
    ws: Uuid,
    endpoint: Uuid,
) -> Result<Option<StoredBaseline>> {
    let row = baselines::table
        .filter(baselines::workspace_id.eq(ws))
        .filter(baselines::endpoint_id.eq(endpoint))
        .order(baselines::version.desc())
        .select(BaselineRow::as_select())
        .first(&mut c)
        .await
        .optional()?;
    Ok(row.map(BaselineRow::into_model).transpose()?)
}

/// The check row, its diff (with `counts`) and the endpoint's latest figures (`health`, counts,
/// `last_checked_at`, `response_time`): the store half of `run::record_check`, which computes the
/// figures. Locks the endpoint row first.
pub async fn insert_check(
    c: &mut Conn,
    ws: Uuid,
    check: &NewCheck,
    diff: Option<&NewDiff>,
    counts: DiffCounts,
    health: Health,
) -> Result<StoredCheck> {
    lock_endpoint(c, ws, check.endpoint_id).await?;
    if let Some(baseline) = diff.and_then(|d| d.baseline_id)
        && !baseline_of(c, ws, check.endpoint_id, baseline).await?
    {
        return Err(not_found());
    }
    let writes = CheckWrites::new(ws, check, diff, counts, health)?;
    pipeline(writes.steps(c)).await?;
    writes.stored()
}

/// Whether `baseline` is one of the endpoint's baselines.
pub(crate) async fn baseline_of(
    c: &mut Conn,
    ws: Uuid,
    endpoint: Uuid,
    baseline: Uuid,
) -> Result<bool> {
    let found: i64 = baselines::table
        .filter(baselines::workspace_id.eq(ws))
        .filter(baselines::endpoint_id.eq(endpoint))
        .filter(baselines::id.eq(baseline))
        .count()
        .get_result(c)
        .await?;
    Ok(found > 0)
}

/// The writes of one check, their values computed up front: the check row with the endpoint's
/// latest figures (one statement) and its diff. [`CheckWrites::stored`] answers the row as the
/// insert stores it, so a transaction can answer before it sends the writes.
pub(crate) struct CheckWrites {
    ws: Uuid,
    row: CheckRow,
    health: &'static str,
    breaking: i32,
    warning: i32,
    diff: Option<DiffValues>,
}

/// The columns of a new diff.
struct DiffValues {
    id: Uuid,
    baseline_id: Option<Uuid>,
    created_at: time::OffsetDateTime,
    breaking: i32,
    warning: i32,
    info: i32,
    changes_count: i32,
    changes: Value,
    summary: Option<Value>,
    fingerprint: Option<String>,
}

impl CheckWrites {
    pub(crate) fn new(
        ws: Uuid,
        check: &NewCheck,
        diff: Option<&NewDiff>,
        counts: DiffCounts,
        health: Health,
    ) -> Result<Self> {
        let row = CheckRow {
            id: check.id,
            workspace_id: ws,
            endpoint_id: check.endpoint_id,
            started_at: micros(check.started_at),
            finished_at: micros(check.finished_at),
            http_status: check.http_status.map(i32::from),
            response_time: check
                .response_time
                .map(|v| int("response_time", v))
                .transpose()?,
            error_kind: store_opt(check.error_kind.as_deref()),
            error_message: store_opt(check.error_message.as_deref()),
            content_type: store_opt(check.content_type.as_deref()),
            headers: check.headers.clone().map(store_json),
            sealed_body: check.sealed_body.clone(),
            diff_id: diff.map(|d| d.id),
            scheduled: check.scheduled,
        };
        let diff = diff
            .map(|d| -> Result<DiffValues> {
                Ok(DiffValues {
                    id: d.id,
                    baseline_id: d.baseline_id,
                    created_at: micros(d.created_at),
                    breaking: int("breaking_count", counts.breaking)?,
                    warning: int("warning_count", counts.warning)?,
                    info: int("info_count", counts.info)?,
                    changes_count: int("change_count", counts.changes)?,
                    changes: store_json(changes_to_json(&d.changes)?),
                    summary: d
                        .summary
                        .as_ref()
                        .map(|m| store_json(Value::Object(m.clone()))),
                    fingerprint: store_opt(d.fingerprint.as_deref()),
                })
            })
            .transpose()?;
        Ok(CheckWrites {
            ws,
            row,
            health: health.as_str(),
            breaking: int("breaking_count", counts.breaking)?,
            warning: int("warning_count", counts.warning)?,
            diff,
        })
    }

    /// The check's id.
    pub(crate) fn check_id(&self) -> Uuid {
        self.row.id
    }

    /// Links the check to `diff` (an open diff it joined) instead of a diff of its own.
    pub(crate) fn link_diff(&mut self, diff: Uuid) {
        self.row.diff_id = Some(diff);
    }

    /// The check row as the insert stores it.
    pub(crate) fn stored(&self) -> Result<StoredCheck> {
        Ok(self.row.clone().into_model()?)
    }

    /// The statements, in order (the diff refers to its check), for a [`pipeline`].
    pub(crate) fn steps<'a>(&self, mut c: &'a Conn) -> Vec<Step<'a, usize>> {
        let r = &self.row;
        let mut steps = vec![
            cached(
                "WITH c AS (INSERT INTO checks (id, workspace_id, endpoint_id, started_at, \
                 finished_at, http_status, response_time, error_kind, error_message, content_type, \
                 headers, sealed_body, diff_id, scheduled) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)) \
                 UPDATE endpoints SET health = $15, last_checked_at = $5, response_time = $7, \
                 breaking_count = $16, warning_count = $17, updated_at = $5 \
                 WHERE workspace_id = $2 AND id = $3",
            )
            .bind::<SqlUuid, _>(r.id)
            .bind::<SqlUuid, _>(self.ws)
            .bind::<SqlUuid, _>(r.endpoint_id)
            .bind::<Timestamptz, _>(r.started_at)
            .bind::<Timestamptz, _>(r.finished_at)
            .bind::<Nullable<Int4>, _>(r.http_status)
            .bind::<Nullable<Int4>, _>(r.response_time)
            .bind::<Nullable<Text>, _>(r.error_kind.as_deref())
            .bind::<Nullable<Text>, _>(r.error_message.as_deref())
            .bind::<Nullable<Text>, _>(r.content_type.as_deref())
            .bind::<Nullable<Jsonb>, _>(r.headers.as_ref())
            .bind::<Nullable<Bytea>, _>(r.sealed_body.as_deref())
            .bind::<Nullable<SqlUuid>, _>(r.diff_id)
            .bind::<Bool, _>(r.scheduled)
            .bind::<Text, _>(self.health)
            .bind::<Int4, _>(self.breaking)
            .bind::<Int4, _>(self.warning)
            .execute(&mut c),
        ];
        if let Some(d) = &self.diff {
            steps.push(
                diesel::insert_into(diffs::table)
                    .values((
                        diffs::id.eq(d.id),
                        diffs::workspace_id.eq(self.ws),
                        diffs::endpoint_id.eq(r.endpoint_id),
                        diffs::check_id.eq(r.id),
                        diffs::baseline_id.eq(d.baseline_id),
                        diffs::created_at.eq(d.created_at),
                        diffs::accepted.eq(false),
                        diffs::breaking_count.eq(d.breaking),
                        diffs::warning_count.eq(d.warning),
                        diffs::info_count.eq(d.info),
                        diffs::change_count.eq(d.changes_count),
                        diffs::changes.eq(&d.changes),
                        diffs::summary.eq(d.summary.as_ref()),
                        diffs::fingerprint.eq(d.fingerprint.as_deref()),
                        diffs::first_seen_at.eq(d.created_at),
                        diffs::last_seen_at.eq(d.created_at),
                        diffs::seen_count.eq(1),
                    ))
                    .execute(&mut c),
            );
        }
        steps
    }
}

pub async fn get_check(c: &mut Conn, ws: Uuid, check: Uuid) -> Result<Option<StoredCheck>> {
    let row = checks::table
        .filter(checks::workspace_id.eq(ws))
        .filter(checks::id.eq(check))
        .select(CheckRow::as_select())
        .first(c)
        .await
        .optional()?;
    Ok(row.map(CheckRow::into_model).transpose()?)
}
