//! Workspaces and the monthly check quota.
//! Statements of the PostgreSQL adapter over one connection; the caller picks the transaction.

use crate::cached::cached;
use crate::not_found;
use crate::rows::{WorkspaceRow, int, overrides, overrides_from};
use crate::schema::workspaces;
use crate::totals::count;
use crate::usage;
use crate::{Error, Result};
use apidrift_model::{Plan, SeverityOverride};
use apidrift_store::{
    NewWorkspace, QuotaUsage, StoreError, Workspace, WorkspaceUpdate, month_key, rules,
};
use diesel::prelude::*;
use diesel::sql_types::{Int4, Int8, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

type Conn = AsyncPgConnection;

pub async fn create_workspace(c: &mut Conn, new: &NewWorkspace) -> Result<Workspace> {
    let row = WorkspaceRow::new(new)?;
    let row = diesel::insert_into(workspaces::table)
        .values(&row)
        .returning(WorkspaceRow::as_returning())
        .get_result(c)
        .await?;
    Ok(row.into_model()?)
}

pub async fn get_workspace(c: &mut Conn, ws: Uuid) -> Result<Option<Workspace>> {
    let row = workspaces::table
        .find(ws)
        .select(WorkspaceRow::as_select())
        .first(c)
        .await
        .optional()?;
    Ok(row.map(WorkspaceRow::into_model).transpose()?)
}

/// The workspace, row-locked until the end of the transaction (serialises creates and deletes
/// per workspace so the endpoint limit holds under concurrency).
///
/// `FOR NO KEY UPDATE`, not `FOR UPDATE`: the key of a workspace never changes, and the weaker
/// lock does not conflict with the `FOR KEY SHARE` that a foreign key to `workspaces` takes (an
/// outbox event, a month's first usage row). With `FOR UPDATE`, a check that had updated
/// `workspace_counts` (its diff's trigger) waited here for a create or delete that held this row
/// and waited for `workspace_counts`: a deadlock (issue 23).
pub(crate) async fn lock_workspace(c: &mut Conn, ws: Uuid) -> Result<Workspace> {
    let row = workspaces::table
        .find(ws)
        .select(WorkspaceRow::as_select())
        .for_no_key_update()
        .first(c)
        .await
        .optional()?;
    row.ok_or_else(not_found)?
        .into_model()
        .map_err(Error::Store)
}

pub async fn update_workspace(
    c: &mut Conn,
    ws: Uuid,
    update: &WorkspaceUpdate,
) -> Result<Workspace> {
    let current = lock_workspace(c, ws).await?;
    let before = current.check_quota;
    let next = rules::apply_update(current, update)?;
    if let Some(limit) = next.check_quota.filter(|_| next.check_quota != before) {
        // The usage within the caps of its new limit (see `usage`).
        usage::respread(c, ws, limit).await?;
    }
    let row = diesel::update(workspaces::table.find(ws))
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
            workspaces::severity_overrides.eq(overrides(&next.severity_overrides)),
            workspaces::version.eq(next.version),
        ))
        .returning(WorkspaceRow::as_returning())
        .get_result(c)
        .await?;
    Ok(row.into_model()?)
}

pub async fn count_workspaces(c: &mut Conn) -> Result<u64> {
    Ok(count(workspaces::table.count().get_result(c).await?))
}

#[derive(QueryableByName)]
struct QuotaRow {
    #[diesel(sql_type = Nullable<Int4>)]
    check_quota: Option<i32>,
    #[diesel(sql_type = Int8)]
    used: i64,
    #[diesel(sql_type = Jsonb)]
    severity_overrides: serde_json::Value,
    #[diesel(sql_type = Text)]
    plan: String,
}

/// The quota and the month's usage in one read.
pub async fn check_quota_usage(c: &mut Conn, ws: Uuid, at: OffsetDateTime) -> Result<QuotaUsage> {
    Ok(check_quota_and_overrides(c, ws, at).await?.0)
}

/// The quota, the month's usage, the workspace's default severity overrides and its plan in one
/// read (a check's context).
pub async fn check_quota_and_overrides(
    mut c: &Conn,
    ws: Uuid,
    at: OffsetDateTime,
) -> Result<(QuotaUsage, Vec<SeverityOverride>, Plan)> {
    let row: Option<QuotaRow> = cached(
        "SELECT w.check_quota, COALESCE((SELECT sum(u.used) FROM check_usage u \
         WHERE u.workspace_id = w.id AND u.month = $2), 0)::int8 AS used, \
         w.severity_overrides, w.plan \
         FROM workspaces w WHERE w.id = $1",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<Text, _>(month_key(at))
    .get_result(&mut c)
    .await
    .optional()?;
    let row = row.ok_or_else(not_found)?;
    let usage = QuotaUsage {
        used: count(row.used),
        quota: row
            .check_quota
            .map(|q| u32::try_from(q).map_err(|e| StoreError::corrupt("check_quota", e)))
            .transpose()?,
    };
    let overrides = overrides_from("workspaces.severity_overrides", row.severity_overrides)?;
    let plan = apidrift_store::parse_enum("workspaces.plan", &row.plan)?;
    Ok((usage, overrides, plan))
}

pub async fn check_usage(c: &mut Conn, ws: Uuid, at: OffsetDateTime) -> Result<u64> {
    usage::units_used(c, ws, &month_key(at)).await
}
