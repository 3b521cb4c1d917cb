//! Baselines and checks.
//! Statements of the PostgreSQL adapter over one connection; the caller picks the transaction.

use crate::Result;
use crate::endpoints::lock_endpoint;
use crate::escape::{store_json, store_opt};
use crate::not_found;
use crate::rows::{BaselineRow, CheckRow, int, micros};
use crate::schema::{baselines, checks, diffs, endpoints};
use apidrift_model::Health;
use apidrift_store::{
    DiffCounts, NewBaseline, NewCheck, NewDiff, StoredBaseline, StoredCheck, changes_to_json,
};
use diesel::prelude::*;
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
    c: &mut Conn,
    ws: Uuid,
    endpoint: Uuid,
) -> Result<Option<StoredBaseline>> {
    let row = baselines::table
        .filter(baselines::workspace_id.eq(ws))
        .filter(baselines::endpoint_id.eq(endpoint))
        .order(baselines::version.desc())
        .select(BaselineRow::as_select())
        .first(c)
        .await
        .optional()?;
    Ok(row.map(BaselineRow::into_model).transpose()?)
}

/// The check row, its diff (with `counts`) and the endpoint's latest figures (`health`, counts,
/// `last_checked_at`, `response_time`): the store half of `run::record_check`, which computes the
/// figures.
pub async fn insert_check(
    c: &mut Conn,
    ws: Uuid,
    check: &NewCheck,
    diff: Option<&NewDiff>,
    counts: DiffCounts,
    health: Health,
) -> Result<StoredCheck> {
    lock_endpoint(c, ws, check.endpoint_id).await?;
    if let Some(baseline) = diff.and_then(|d| d.baseline_id) {
        let found: i64 = baselines::table
            .filter(baselines::workspace_id.eq(ws))
            .filter(baselines::endpoint_id.eq(check.endpoint_id))
            .filter(baselines::id.eq(baseline))
            .count()
            .get_result(c)
            .await?;
        if found == 0 {
            return Err(not_found());
        }
    }
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
    let row = diesel::insert_into(checks::table)
        .values(&row)
        .returning(CheckRow::as_returning())
        .get_result(c)
        .await?;
    if let Some(d) = diff {
        let summary = d
            .summary
            .as_ref()
            .map(|m| store_json(Value::Object(m.clone())));
        diesel::insert_into(diffs::table)
            .values((
                diffs::id.eq(d.id),
                diffs::workspace_id.eq(ws),
                diffs::endpoint_id.eq(check.endpoint_id),
                diffs::check_id.eq(check.id),
                diffs::baseline_id.eq(d.baseline_id),
                diffs::created_at.eq(micros(d.created_at)),
                diffs::accepted.eq(false),
                diffs::breaking_count.eq(int("breaking_count", counts.breaking)?),
                diffs::warning_count.eq(int("warning_count", counts.warning)?),
                diffs::info_count.eq(int("info_count", counts.info)?),
                diffs::change_count.eq(int("change_count", counts.changes)?),
                diffs::changes.eq(store_json(changes_to_json(&d.changes)?)),
                diffs::summary.eq(summary),
                diffs::fingerprint.eq(store_opt(d.fingerprint.as_deref())),
                diffs::first_seen_at.eq(micros(d.created_at)),
                diffs::last_seen_at.eq(micros(d.created_at)),
                diffs::seen_count.eq(1),
            ))
            .execute(c)
            .await?;
    }
    diesel::update(
        endpoints::table
            .filter(endpoints::workspace_id.eq(ws))
            .filter(endpoints::id.eq(check.endpoint_id)),
    )
    .set((
        endpoints::health.eq(health.as_str()),
        endpoints::last_checked_at.eq(Some(micros(check.finished_at))),
        endpoints::response_time.eq(check
            .response_time
            .map(|v| int("response_time", v))
            .transpose()?),
        endpoints::breaking_count.eq(int("breaking_count", counts.breaking)?),
        endpoints::warning_count.eq(int("warning_count", counts.warning)?),
        endpoints::updated_at.eq(micros(check.finished_at)),
    ))
    .execute(c)
    .await?;
    Ok(row.into_model()?)
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
