//! Workspaces and the monthly check quota.
//! Statements of the SQLite adapter over one connection; the caller picks the transaction.

use crate::cached::cached;
use crate::rows::{WorkspaceRow, id, int};
use crate::schema::{check_usage, workspaces};
use crate::totals::count;
use crate::{Error, Result};
use apidrift_store::{
    NewWorkspace, StoreError, Workspace, WorkspaceUpdate, month_key, overrides_to_json, rules,
};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use time::OffsetDateTime;
use uuid::Uuid;

pub fn create_workspace(c: &mut SqliteConnection, new: &NewWorkspace) -> Result<Workspace> {
    let row = WorkspaceRow::new(new)?;
    let row = diesel::insert_into(workspaces::table)
        .values(&row)
        .returning(WorkspaceRow::as_returning())
        .get_result(c)?;
    Ok(row.into_model()?)
}

pub fn get_workspace(c: &mut SqliteConnection, ws: Uuid) -> Result<Option<Workspace>> {
    let row = workspaces::table
        .find(id(ws))
        .select(WorkspaceRow::as_select())
        .first(c)
        .optional()?;
    Ok(row.map(WorkspaceRow::into_model).transpose()?)
}

pub(crate) fn require_workspace(c: &mut SqliteConnection, ws: Uuid) -> Result<Workspace> {
    get_workspace(c, ws)?.ok_or(Error::Store(StoreError::NotFound))
}

pub fn update_workspace(
    c: &mut SqliteConnection,
    ws: Uuid,
    update: &WorkspaceUpdate,
) -> Result<Workspace> {
    let current = require_workspace(c, ws)?;
    let next = rules::apply_update(current, update)?;
    let row = diesel::update(workspaces::table.find(id(ws)))
        .set((
            workspaces::name.eq(next.name),
            workspaces::plan.eq(next.plan.as_str()),
            workspaces::endpoint_limit.eq(next
                .endpoint_limit
                .map(|v| int("endpoint_limit", v))
                .transpose()?),
            workspaces::check_quota.eq(next
                .check_quota
                .map(|v| int("check_quota", v))
                .transpose()?),
            workspaces::severity_overrides.eq(overrides_to_json(&next.severity_overrides)),
            workspaces::version.eq(next.version),
        ))
        .returning(WorkspaceRow::as_returning())
        .get_result(c)?;
    Ok(row.into_model()?)
}

pub fn count_workspaces(c: &mut SqliteConnection) -> Result<u64> {
    Ok(count(workspaces::table.count().get_result(c)?))
}

#[derive(QueryableByName)]
struct Used {
    #[diesel(sql_type = BigInt)]
    used: i64,
}

/// The atomic primitive of the quota: one unit more for `month` while the usage is below `limit`
/// (always when `None`); the usage after it, or `None` at the limit (nothing written).
pub fn take_unit(
    c: &mut SqliteConnection,
    ws: Uuid,
    month: &str,
    limit: Option<u32>,
) -> Result<Option<u64>> {
    // One statement: insert the month's first unit or add one, both only below the limit.
    let taken: Option<Used> = cached(
        "INSERT INTO check_usage (workspace_id, month, used) \
         SELECT ?, ?, 1 WHERE ? IS NULL OR ? > 0 \
         ON CONFLICT (workspace_id, month) DO UPDATE SET used = check_usage.used + 1 \
         WHERE ? IS NULL OR check_usage.used < ? \
         RETURNING used",
    )
    .bind::<Text, _>(id(ws))
    .bind::<Text, _>(month)
    // The limit, once per placeholder (positional placeholders only: see `cached`).
    .bind::<Nullable<BigInt>, _>(limit.map(i64::from))
    .bind::<Nullable<BigInt>, _>(limit.map(i64::from))
    .bind::<Nullable<BigInt>, _>(limit.map(i64::from))
    .bind::<Nullable<BigInt>, _>(limit.map(i64::from))
    .get_result(c)
    .optional()?;
    Ok(taken.map(|u| count(u.used)))
}

/// Units used in `month`.
pub fn units_used(c: &mut SqliteConnection, ws: Uuid, month: &str) -> Result<u64> {
    let used: Option<i64> = check_usage::table
        .find((id(ws), month))
        .select(check_usage::used)
        .first(c)
        .optional()?;
    Ok(used.map(count).unwrap_or(0))
}

pub fn check_usage(c: &mut SqliteConnection, ws: Uuid, at: OffsetDateTime) -> Result<u64> {
    units_used(c, ws, &month_key(at))
}
