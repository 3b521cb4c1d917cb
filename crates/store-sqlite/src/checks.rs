//! Baselines and checks.
//! Statements of the SQLite adapter over one connection; the caller picks the transaction.

use crate::endpoints::require_endpoint;
use crate::rows::{BaselineRow, CheckRow, id, int, ts};
use crate::schema::{baselines, checks, diffs, endpoints};
use crate::{Error, Result};
use apidrift_model::Health;
use apidrift_store::{
    DiffCounts, NewBaseline, NewCheck, NewDiff, StoreError, StoredBaseline, StoredCheck,
    changes_to_json,
};
use diesel::prelude::*;
use uuid::Uuid;

pub fn record_baseline(
    c: &mut SqliteConnection,
    ws: Uuid,
    b: &NewBaseline,
    health: Option<Health>,
) -> Result<StoredBaseline> {
    require_endpoint(c, ws, b.endpoint_id)?;
    let max: Option<i32> = baselines::table
        .filter(baselines::workspace_id.eq(id(ws)))
        .filter(baselines::endpoint_id.eq(id(b.endpoint_id)))
        .select(diesel::dsl::max(baselines::version))
        .first(c)?;
    let version = max.unwrap_or(0) + 1;
    let row = diesel::insert_into(baselines::table)
        .values(&BaselineRow::new(ws, b, version))
        .returning(BaselineRow::as_returning())
        .get_result(c)?;
    let target = endpoints::table
        .filter(endpoints::workspace_id.eq(id(ws)))
        .filter(endpoints::id.eq(id(b.endpoint_id)));
    match health {
        Some(h) => diesel::update(target)
            .set((
                endpoints::baseline_version.eq(Some(version)),
                endpoints::health.eq(h.as_str()),
                endpoints::updated_at.eq(ts(b.captured_at)),
            ))
            .execute(c)?,
        None => diesel::update(target)
            .set((
                endpoints::baseline_version.eq(Some(version)),
                endpoints::updated_at.eq(ts(b.captured_at)),
            ))
            .execute(c)?,
    };
    Ok(row.into_model()?)
}

pub fn active_baseline(
    c: &mut SqliteConnection,
    ws: Uuid,
    endpoint: Uuid,
) -> Result<Option<StoredBaseline>> {
    let row = baselines::table
        .filter(baselines::workspace_id.eq(id(ws)))
        .filter(baselines::endpoint_id.eq(id(endpoint)))
        .order(baselines::version.desc())
        .select(BaselineRow::as_select())
        .first(c)
        .optional()?;
    Ok(row.map(BaselineRow::into_model).transpose()?)
}

/// The check row, its diff (with `counts`) and the endpoint's latest figures (`health`, counts,
/// `last_checked_at`, `response_time`): the store half of `run::record_check`, which computes the
/// figures.
pub fn insert_check(
    c: &mut SqliteConnection,
    ws: Uuid,
    check: &NewCheck,
    diff: Option<&NewDiff>,
    counts: DiffCounts,
    health: Health,
) -> Result<StoredCheck> {
    require_endpoint(c, ws, check.endpoint_id)?;
    if let Some(baseline) = diff.and_then(|d| d.baseline_id) {
        let found: i64 = baselines::table
            .filter(baselines::workspace_id.eq(id(ws)))
            .filter(baselines::endpoint_id.eq(id(check.endpoint_id)))
            .filter(baselines::id.eq(id(baseline)))
            .count()
            .get_result(c)?;
        if found == 0 {
            return Err(Error::Store(StoreError::NotFound));
        }
    }
    let row = CheckRow {
        id: id(check.id),
        workspace_id: id(ws),
        endpoint_id: id(check.endpoint_id),
        started_at: ts(check.started_at),
        finished_at: ts(check.finished_at),
        http_status: check.http_status.map(i32::from),
        response_time: check
            .response_time
            .map(|v| int("response_time", v))
            .transpose()?,
        error_kind: check.error_kind.clone(),
        error_message: check.error_message.clone(),
        content_type: check.content_type.clone(),
        headers: check.headers.as_ref().map(|h| h.to_string()),
        sealed_body: check.sealed_body.clone(),
        diff_id: diff.map(|d| id(d.id)),
        scheduled: check.scheduled,
    };
    let row = diesel::insert_into(checks::table)
        .values(&row)
        .returning(CheckRow::as_returning())
        .get_result(c)?;
    if let Some(d) = diff {
        let summary = d
            .summary
            .as_ref()
            .map(|m| serde_json::Value::Object(m.clone()).to_string());
        diesel::insert_into(diffs::table)
            .values((
                diffs::id.eq(id(d.id)),
                diffs::workspace_id.eq(id(ws)),
                diffs::endpoint_id.eq(id(check.endpoint_id)),
                diffs::check_id.eq(id(check.id)),
                diffs::baseline_id.eq(d.baseline_id.map(id)),
                diffs::created_at.eq(ts(d.created_at)),
                diffs::accepted.eq(false),
                diffs::breaking_count.eq(int("breaking_count", counts.breaking)?),
                diffs::warning_count.eq(int("warning_count", counts.warning)?),
                diffs::info_count.eq(int("info_count", counts.info)?),
                diffs::change_count.eq(int("change_count", counts.changes)?),
                diffs::changes.eq(changes_to_json(&d.changes)?.to_string()),
                diffs::summary.eq(summary),
                diffs::fingerprint.eq(d.fingerprint.as_deref()),
                diffs::first_seen_at.eq(ts(d.created_at)),
                diffs::last_seen_at.eq(ts(d.created_at)),
                diffs::seen_count.eq(1),
            ))
            .execute(c)?;
    }
    diesel::update(
        endpoints::table
            .filter(endpoints::workspace_id.eq(id(ws)))
            .filter(endpoints::id.eq(id(check.endpoint_id))),
    )
    .set((
        endpoints::health.eq(health.as_str()),
        endpoints::last_checked_at.eq(Some(ts(check.finished_at))),
        endpoints::response_time.eq(check
            .response_time
            .map(|v| int("response_time", v))
            .transpose()?),
        endpoints::breaking_count.eq(int("breaking_count", counts.breaking)?),
        endpoints::warning_count.eq(int("warning_count", counts.warning)?),
        endpoints::updated_at.eq(ts(check.finished_at)),
    ))
    .execute(c)?;
    Ok(row.into_model()?)
}

pub fn get_check(c: &mut SqliteConnection, ws: Uuid, check: Uuid) -> Result<Option<StoredCheck>> {
    let row = checks::table
        .filter(checks::workspace_id.eq(id(ws)))
        .filter(checks::id.eq(id(check)))
        .select(CheckRow::as_select())
        .first(c)
        .optional()?;
    Ok(row.map(CheckRow::into_model).transpose()?)
}
