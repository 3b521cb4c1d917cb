//! The statements of the PostgreSQL adapter over one connection. The caller
//! ([`crate::PgStore`]) picks the transaction; every function filters on the workspace id.

use crate::cached::cached;
use crate::escape::{store_json, store_opt};
use crate::rows::{
    BaselineRow, CheckRow, DetailTuple, EndpointRow, SummaryTuple, TokenRow, WorkspaceRow,
    contract_to_json, detail_from, int, micros, summary_from,
};
use crate::schema::{
    baselines, check_usage, checks, diffs, endpoints, tokens, workspace_counts, workspaces,
};
use crate::{Error, Result};
use apidrift_model::{DiffDetail, DiffSummary, Health};
use apidrift_store::{
    AcceptOutcome, BulkCreated, DiffFilter, EndpointFilter, NewBaseline, NewCheck, NewDiff,
    NewEndpointRow, NewToken, NewWorkspace, Page, PageRequest, QuotaOutcome, QuotaUsage,
    RecordedCheck, ResponseContract, SealedField, SealedValue, StoreError, StoredBaseline,
    StoredCheck, StoredEndpoint, StoredToken, TOKEN_TOUCH_INTERVAL_SECS, Workspace,
    WorkspaceUpdate, changes_to_json, month_key, rules,
};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{Int4, Int8, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

type Conn = AsyncPgConnection;

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn not_found() -> Error {
    Error::Store(StoreError::NotFound)
}

// ------------------------------------------------------------------------------ workspaces

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
async fn lock_workspace(c: &mut Conn, ws: Uuid) -> Result<Workspace> {
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
    let next = rules::apply_update(current, update);
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
struct Used {
    #[diesel(sql_type = Int8)]
    used: i64,
}

pub async fn consume_check_unit(
    c: &mut Conn,
    ws: Uuid,
    now: OffsetDateTime,
) -> Result<QuotaOutcome> {
    let quota = get_workspace(c, ws)
        .await?
        .ok_or_else(not_found)?
        .check_quota;
    let month = month_key(now);
    // One statement: insert the month's first unit or add one, both only below the quota. The
    // conflict update locks the usage row, so concurrent checks never pass the quota.
    let consumed: Option<Used> = cached(
        "INSERT INTO check_usage (workspace_id, month, used) \
         SELECT $1, $2, 1 WHERE $3::int8 IS NULL OR $3::int8 > 0 \
         ON CONFLICT (workspace_id, month) DO UPDATE SET used = check_usage.used + 1 \
         WHERE $3::int8 IS NULL OR check_usage.used < $3::int8 \
         RETURNING used",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<Text, _>(&month)
    .bind::<Nullable<Int8>, _>(quota.map(i64::from))
    .get_result(c)
    .await
    .optional()?;
    match (consumed, quota) {
        (Some(u), quota) => Ok(QuotaOutcome::Consumed {
            used: count(u.used),
            quota,
        }),
        (None, Some(quota)) => Ok(QuotaOutcome::Exhausted {
            used: check_usage(c, ws, now).await?,
            quota,
        }),
        (None, None) => Err(Error::Store(StoreError::Database(
            "quota upsert wrote nothing".into(),
        ))),
    }
}

#[derive(QueryableByName)]
struct QuotaRow {
    #[diesel(sql_type = Nullable<Int4>)]
    check_quota: Option<i32>,
    #[diesel(sql_type = Int8)]
    used: i64,
}

/// The quota and the month's usage in one read.
pub async fn check_quota_usage(c: &mut Conn, ws: Uuid, at: OffsetDateTime) -> Result<QuotaUsage> {
    let row: Option<QuotaRow> = cached(
        "SELECT w.check_quota, COALESCE((SELECT u.used FROM check_usage u \
         WHERE u.workspace_id = w.id AND u.month = $2), 0)::int8 AS used \
         FROM workspaces w WHERE w.id = $1",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<Text, _>(month_key(at))
    .get_result(c)
    .await
    .optional()?;
    let row = row.ok_or_else(not_found)?;
    Ok(QuotaUsage {
        used: count(row.used),
        quota: row
            .check_quota
            .map(|q| u32::try_from(q).map_err(|e| StoreError::corrupt("check_quota", e)))
            .transpose()?,
    })
}

pub async fn check_usage(c: &mut Conn, ws: Uuid, at: OffsetDateTime) -> Result<u64> {
    let used: Option<i64> = check_usage::table
        .find((ws, month_key(at)))
        .select(check_usage::used)
        .first(c)
        .await
        .optional()?;
    Ok(used.map(count).unwrap_or(0))
}

// ------------------------------------------------------------------------------ tokens

pub async fn create_token(c: &mut Conn, new: &NewToken) -> Result<StoredToken> {
    get_workspace(c, new.workspace_id)
        .await?
        .ok_or_else(not_found)?;
    let row = diesel::insert_into(tokens::table)
        .values(&TokenRow::new(new))
        .returning(TokenRow::as_returning())
        .get_result(c)
        .await?;
    Ok(row.into_model()?)
}

pub async fn find_token_by_hash(c: &mut Conn, hash: &str) -> Result<Option<StoredToken>> {
    let row = tokens::table
        .filter(tokens::token_hash.eq(hash))
        .select(TokenRow::as_select())
        .first(c)
        .await
        .optional()?;
    Ok(row.map(TokenRow::into_model).transpose()?)
}

pub async fn get_token(c: &mut Conn, ws: Option<Uuid>, token: Uuid) -> Result<Option<StoredToken>> {
    let mut q = tokens::table
        .filter(tokens::id.eq(token))
        .into_boxed::<Pg>();
    if let Some(ws) = ws {
        q = q.filter(tokens::workspace_id.eq(ws));
    }
    let row = q.select(TokenRow::as_select()).first(c).await.optional()?;
    Ok(row.map(TokenRow::into_model).transpose()?)
}

pub async fn list_tokens(c: &mut Conn, ws: Uuid) -> Result<Vec<StoredToken>> {
    let rows = tokens::table
        .filter(tokens::workspace_id.eq(ws))
        .order((tokens::created_at.asc(), tokens::id.asc()))
        .select(TokenRow::as_select())
        .load(c)
        .await?;
    Ok(rows
        .into_iter()
        .map(TokenRow::into_model)
        .collect::<Result<_, _>>()?)
}

pub async fn revoke_token(
    c: &mut Conn,
    ws: Option<Uuid>,
    token: Uuid,
    now: OffsetDateTime,
) -> Result<StoredToken> {
    // One statement: set revoked_at only when unset, then read the row either way.
    let mut q = diesel::update(tokens::table)
        .filter(tokens::id.eq(token))
        .filter(tokens::revoked_at.is_null())
        .into_boxed();
    if let Some(ws) = ws {
        q = q.filter(tokens::workspace_id.eq(ws));
    }
    q.set(tokens::revoked_at.eq(Some(micros(now))))
        .execute(c)
        .await?;
    get_token(c, ws, token).await?.ok_or_else(not_found)
}

pub async fn touch_token(c: &mut Conn, ws: Uuid, token: Uuid, now: OffsetDateTime) -> Result<bool> {
    let now = micros(now);
    let threshold = now - time::Duration::seconds(TOKEN_TOUCH_INTERVAL_SECS);
    let n = diesel::update(
        tokens::table
            .filter(tokens::id.eq(token))
            .filter(tokens::workspace_id.eq(ws))
            .filter(
                tokens::last_used_at
                    .is_null()
                    .or(tokens::last_used_at.le(threshold)),
            ),
    )
    .set(tokens::last_used_at.eq(Some(now)))
    .execute(c)
    .await?;
    Ok(n > 0)
}

// ------------------------------------------------------------------------------ endpoints

/// The trigger-kept row counts of a workspace: (endpoints, diffs, breaking diffs).
async fn counts(c: &mut Conn, ws: Uuid) -> Result<(u64, u64, u64)> {
    let row: Option<(i64, i64, i64)> = workspace_counts::table
        .find(ws)
        .select((
            workspace_counts::endpoints,
            workspace_counts::diffs,
            workspace_counts::breaking_diffs,
        ))
        .first(c)
        .await
        .optional()?;
    Ok(row
        .map(|(e, d, b)| (count(e), count(d), count(b)))
        .unwrap_or((0, 0, 0)))
}

pub async fn count_endpoints(c: &mut Conn, ws: Uuid) -> Result<u64> {
    Ok(counts(c, ws).await?.0)
}

pub async fn create_endpoints(
    c: &mut Conn,
    ws: Uuid,
    rows: &[NewEndpointRow],
) -> Result<BulkCreated> {
    let workspace = lock_workspace(c, ws).await?;
    let existing = count_endpoints(c, ws).await?;
    let fit = rules::endpoints_that_fit(workspace.endpoint_limit, existing, rows.len());
    let new_rows = rows[..fit]
        .iter()
        .map(|r| EndpointRow::new(ws, r))
        .collect::<Result<Vec<_>, _>>()?;
    if !new_rows.is_empty() {
        diesel::insert_into(endpoints::table)
            .values(&new_rows)
            .execute(c)
            .await?;
    }
    let created = new_rows
        .into_iter()
        .map(EndpointRow::into_model)
        .collect::<Result<_, _>>()?;
    Ok(BulkCreated {
        created,
        not_created: rows.len() - fit,
        existing,
        endpoint_limit: workspace.endpoint_limit,
    })
}

pub async fn get_endpoint(
    c: &mut Conn,
    ws: Uuid,
    endpoint: Uuid,
) -> Result<Option<StoredEndpoint>> {
    let row = endpoints::table
        .filter(endpoints::workspace_id.eq(ws))
        .filter(endpoints::id.eq(endpoint))
        .select(EndpointRow::as_select())
        .first(c)
        .await
        .optional()?;
    Ok(row.map(EndpointRow::into_model).transpose()?)
}

/// Operator: the workspace an endpoint belongs to.
pub async fn endpoint_workspace(c: &mut Conn, endpoint: Uuid) -> Result<Option<Uuid>> {
    Ok(endpoints::table
        .filter(endpoints::id.eq(endpoint))
        .select(endpoints::workspace_id)
        .first(c)
        .await
        .optional()?)
}

fn endpoint_query(ws: Uuid, filter: &EndpointFilter) -> endpoints::BoxedQuery<'static, Pg> {
    let mut q = endpoints::table
        .filter(endpoints::workspace_id.eq(ws))
        .into_boxed();
    if let Some(h) = filter.health {
        q = q.filter(endpoints::health.eq(h.as_str()));
    }
    if let Some(env) = &filter.environment {
        q = q.filter(endpoints::environment.eq(env.clone()));
    }
    q
}

/// The total without a second statement when the page itself proves it.
pub(crate) fn known_total(page: PageRequest, len: usize) -> Option<u64> {
    let len = len as u64;
    if (len > 0 || page.offset == 0) && len < u64::from(page.limit) {
        Some(page.offset + len)
    } else {
        None
    }
}

/// The method and URL of every endpoint of the workspace (those two columns only).
pub async fn endpoint_keys(c: &mut Conn, ws: Uuid) -> Result<Vec<(String, String)>> {
    Ok(endpoints::table
        .filter(endpoints::workspace_id.eq(ws))
        .select((endpoints::method, endpoints::url))
        .load(c)
        .await?)
}

pub async fn list_endpoints(
    c: &mut Conn,
    ws: Uuid,
    filter: &EndpointFilter,
    page: PageRequest,
) -> Result<Page<StoredEndpoint>> {
    let rows = endpoint_query(ws, filter)
        .order((endpoints::created_at.desc(), endpoints::id.desc()))
        .limit(i64::from(page.limit))
        .offset(i64_of(page.offset))
        .select(EndpointRow::as_select())
        .load(c)
        .await?;
    let total = match known_total(page, rows.len()) {
        Some(t) => t,
        None if *filter == EndpointFilter::default() => counts(c, ws).await?.0,
        None => count(endpoint_query(ws, filter).count().get_result(c).await?),
    };
    let items = rows
        .into_iter()
        .map(EndpointRow::into_model)
        .collect::<Result<_, _>>()?;
    Ok(Page { items, total })
}

/// Checks the endpoint exists in the workspace and locks its row until the end of the
/// transaction (serialises baseline versions and check figures per endpoint).
async fn lock_endpoint(c: &mut Conn, ws: Uuid, endpoint: Uuid) -> Result<()> {
    let found: Option<Uuid> = endpoints::table
        .filter(endpoints::workspace_id.eq(ws))
        .filter(endpoints::id.eq(endpoint))
        .select(endpoints::id)
        .for_update()
        .first(c)
        .await
        .optional()?;
    found.map(|_| ()).ok_or_else(not_found)
}

pub async fn set_health(
    c: &mut Conn,
    ws: Uuid,
    endpoint: Uuid,
    health: Health,
    now: OffsetDateTime,
) -> Result<()> {
    let n = diesel::update(
        endpoints::table
            .filter(endpoints::workspace_id.eq(ws))
            .filter(endpoints::id.eq(endpoint)),
    )
    .set((
        endpoints::health.eq(health.as_str()),
        endpoints::updated_at.eq(micros(now)),
    ))
    .execute(c)
    .await?;
    if n == 0 { Err(not_found()) } else { Ok(()) }
}

pub async fn set_contract(
    c: &mut Conn,
    ws: Uuid,
    endpoint: Uuid,
    contract: Option<&ResponseContract>,
    now: OffsetDateTime,
) -> Result<()> {
    let value = contract.map(contract_to_json).transpose()?;
    let n = diesel::update(
        endpoints::table
            .filter(endpoints::workspace_id.eq(ws))
            .filter(endpoints::id.eq(endpoint)),
    )
    .set((
        endpoints::response_contract.eq(value),
        endpoints::updated_at.eq(micros(now)),
    ))
    .execute(c)
    .await?;
    if n == 0 { Err(not_found()) } else { Ok(()) }
}

// ------------------------------------------------------------------------------ baselines

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

// ------------------------------------------------------------------------------ checks, diffs

pub async fn record_check(
    c: &mut Conn,
    ws: Uuid,
    check: &NewCheck,
    diff: Option<&NewDiff>,
) -> Result<RecordedCheck> {
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
    let (counts, health) = rules::check_figures(diff);
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
    Ok(RecordedCheck {
        check: row.into_model()?,
        counts,
        health,
    })
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

type SummaryCols = (
    diffs::id,
    diffs::endpoint_id,
    endpoints::name,
    diffs::created_at,
    diffs::accepted,
    diffs::breaking_count,
    diffs::warning_count,
    diffs::info_count,
    diffs::change_count,
);

const SUMMARY: SummaryCols = (
    diffs::id,
    diffs::endpoint_id,
    endpoints::name,
    diffs::created_at,
    diffs::accepted,
    diffs::breaking_count,
    diffs::warning_count,
    diffs::info_count,
    diffs::change_count,
);

macro_rules! joined {
    () => {
        diffs::table.inner_join(
            endpoints::table.on(endpoints::id
                .eq(diffs::endpoint_id)
                .and(endpoints::workspace_id.eq(diffs::workspace_id))),
        )
    };
}

async fn detail_where(
    c: &mut Conn,
    ws: Uuid,
    diff: Option<Uuid>,
    endpoint: Option<Uuid>,
) -> Result<Option<DiffDetail>> {
    let mut q = joined!()
        .filter(diffs::workspace_id.eq(ws))
        .into_boxed::<Pg>();
    if let Some(d) = diff {
        q = q.filter(diffs::id.eq(d));
    }
    if let Some(e) = endpoint {
        q = q.filter(diffs::endpoint_id.eq(e));
    }
    let row: Option<DetailTuple> = q
        .order((diffs::created_at.desc(), diffs::id.desc()))
        .select((
            SUMMARY,
            diffs::baseline_id,
            diffs::check_id,
            diffs::changes,
            diffs::summary,
        ))
        .first(c)
        .await
        .optional()?;
    Ok(row.map(detail_from).transpose()?)
}

pub async fn get_diff(c: &mut Conn, ws: Uuid, diff: Uuid) -> Result<Option<DiffDetail>> {
    detail_where(c, ws, Some(diff), None).await
}

pub async fn latest_diff(c: &mut Conn, ws: Uuid, endpoint: Uuid) -> Result<Option<DiffDetail>> {
    detail_where(c, ws, None, Some(endpoint)).await
}

pub async fn list_diffs(
    c: &mut Conn,
    ws: Uuid,
    filter: &DiffFilter,
    page: PageRequest,
) -> Result<Page<DiffSummary>> {
    let base = || {
        let mut q = diffs::table
            .filter(diffs::workspace_id.eq(ws))
            .into_boxed::<Pg>();
        if let Some(e) = filter.endpoint_id {
            q = q.filter(diffs::endpoint_id.eq(e));
        }
        if let Some(since) = filter.since {
            q = q.filter(diffs::created_at.ge(since));
        }
        if filter.breaking_only {
            q = q.filter(diffs::breaking_count.gt(0));
        }
        q
    };
    // Deferred join: the page's ids come from the index alone (cheap even at a deep offset),
    // then only those rows are read and joined to their endpoint.
    let page_ids = base()
        .order((diffs::created_at.desc(), diffs::id.desc()))
        .limit(i64::from(page.limit))
        .offset(i64_of(page.offset))
        .select(diffs::id);
    let rows: Vec<SummaryTuple> = joined!()
        .filter(diffs::workspace_id.eq(ws))
        .filter(diffs::id.eq_any(page_ids))
        .order((diffs::created_at.desc(), diffs::id.desc()))
        .select(SUMMARY)
        .load(c)
        .await?;
    let total = match known_total(page, rows.len()) {
        Some(t) => t,
        None if *filter == DiffFilter::default() => counts(c, ws).await?.1,
        None if *filter
            == (DiffFilter {
                breaking_only: true,
                ..Default::default()
            }) =>
        {
            counts(c, ws).await?.2
        }
        None => count(base().count().get_result(c).await?),
    };
    let items = rows
        .into_iter()
        .map(summary_from)
        .collect::<Result<_, _>>()?;
    Ok(Page { items, total })
}

pub async fn accept_diff(
    c: &mut Conn,
    ws: Uuid,
    diff: Uuid,
    baseline: Option<&NewBaseline>,
    now: OffsetDateTime,
) -> Result<AcceptOutcome> {
    let found: Option<(Uuid, bool)> = diffs::table
        .filter(diffs::workspace_id.eq(ws))
        .filter(diffs::id.eq(diff))
        .select((diffs::endpoint_id, diffs::accepted))
        .for_update()
        .first(c)
        .await
        .optional()?;
    let (endpoint, accepted) = found.ok_or_else(not_found)?;
    if accepted {
        return Ok(AcceptOutcome {
            newly_accepted: false,
            baseline: None,
            health_reset: false,
        });
    }
    if baseline.is_some_and(|b| b.endpoint_id != endpoint) {
        return Err(Error::Store(StoreError::InvalidInput(
            "the baseline belongs to another endpoint than the diff".into(),
        )));
    }
    diesel::update(diffs::table.find(diff))
        .set(diffs::accepted.eq(true))
        .execute(c)
        .await?;
    let baseline = match baseline {
        Some(b) => Some(record_baseline(c, ws, b, None).await?),
        None => None,
    };
    let latest: Option<Uuid> = diffs::table
        .filter(diffs::workspace_id.eq(ws))
        .filter(diffs::endpoint_id.eq(endpoint))
        .order((diffs::created_at.desc(), diffs::id.desc()))
        .select(diffs::id)
        .first(c)
        .await
        .optional()?;
    let reset = rules::figures_after_accept(latest, diff);
    if let Some((counts, health)) = reset {
        set_health(c, ws, endpoint, health, now).await?;
        diesel::update(
            endpoints::table
                .filter(endpoints::workspace_id.eq(ws))
                .filter(endpoints::id.eq(endpoint)),
        )
        .set((
            endpoints::breaking_count.eq(int("breaking_count", counts.breaking)?),
            endpoints::warning_count.eq(int("warning_count", counts.warning)?),
        ))
        .execute(c)
        .await?;
    }
    let health_reset = reset.is_some();
    Ok(AcceptOutcome {
        newly_accepted: true,
        baseline,
        health_reset,
    })
}

// ------------------------------------------------------------------------------ sealed values

/// One batch of a sealed column.
macro_rules! sealed_batch {
    ($c:expr, $table:ident, $col:expr, $select:expr, $after:expr, $limit:expr) => {
        $table::table
            .filter($table::id.gt($after))
            .filter($col.is_not_null())
            .order($table::id.asc())
            .limit($limit)
            .select(($table::id, $table::workspace_id, $select))
            .load::<(Uuid, Uuid, Option<Vec<u8>>)>($c)
            .await?
    };
}

pub async fn sealed_values(
    c: &mut Conn,
    field: SealedField,
    after: Option<Uuid>,
    limit: u32,
) -> Result<Vec<SealedValue>> {
    let after = after.unwrap_or(Uuid::nil());
    let limit = i64::from(limit);
    let rows = match field {
        SealedField::EndpointAuth => {
            sealed_batch!(
                c,
                endpoints,
                endpoints::sealed_auth,
                endpoints::sealed_auth,
                after,
                limit
            )
        }
        SealedField::EndpointHeaders => sealed_batch!(
            c,
            endpoints,
            endpoints::sealed_headers,
            endpoints::sealed_headers,
            after,
            limit
        ),
        SealedField::EndpointRequestBody => sealed_batch!(
            c,
            endpoints,
            endpoints::sealed_request_body,
            endpoints::sealed_request_body,
            after,
            limit
        ),
        SealedField::BaselineBody => sealed_batch!(
            c,
            baselines,
            baselines::sealed_body,
            baselines::sealed_body.nullable(),
            after,
            limit
        ),
        SealedField::CheckBody => {
            sealed_batch!(
                c,
                checks,
                checks::sealed_body,
                checks::sealed_body,
                after,
                limit
            )
        }
        SealedField::WebhookSecret => {
            #[derive(QueryableByName)]
            struct Row {
                #[diesel(sql_type = SqlUuid)]
                id: Uuid,
                #[diesel(sql_type = SqlUuid)]
                workspace_id: Uuid,
                #[diesel(sql_type = Nullable<diesel::sql_types::Bytea>)]
                blob: Option<Vec<u8>>,
            }
            cached(
                "SELECT id, workspace_id, sealed_secret AS blob FROM webhooks \
                 WHERE id > $1 ORDER BY id LIMIT $2",
            )
            .bind::<SqlUuid, _>(after)
            .bind::<Int8, _>(limit)
            .load::<Row>(c)
            .await?
            .into_iter()
            .map(|r| (r.id, r.workspace_id, r.blob))
            .collect::<Vec<_>>()
        }
        _ => {
            return Err(Error::Store(StoreError::InvalidInput(
                "unknown sealed field".into(),
            )));
        }
    };
    Ok(rows
        .into_iter()
        .filter_map(|(row_id, workspace_id, blob)| {
            blob.map(|blob| SealedValue {
                field,
                workspace_id,
                row_id,
                blob,
            })
        })
        .collect())
}

/// Compare-and-swap of one sealed column.
macro_rules! swap {
    ($c:expr, $table:ident, $col:expr, $ws:expr, $row:expr, $old:expr, $new:expr) => {
        diesel::update(
            $table::table
                .filter($table::id.eq($row))
                .filter($table::workspace_id.eq($ws))
                .filter($col.eq($old)),
        )
        .set($col.eq($new))
        .execute($c)
        .await?
    };
}

pub async fn replace_sealed_value(
    c: &mut Conn,
    field: SealedField,
    ws: Uuid,
    row: Uuid,
    old: &[u8],
    new: &[u8],
) -> Result<bool> {
    let n = match field {
        SealedField::EndpointAuth => swap!(c, endpoints, endpoints::sealed_auth, ws, row, old, new),
        SealedField::EndpointHeaders => {
            swap!(c, endpoints, endpoints::sealed_headers, ws, row, old, new)
        }
        SealedField::EndpointRequestBody => {
            swap!(
                c,
                endpoints,
                endpoints::sealed_request_body,
                ws,
                row,
                old,
                new
            )
        }
        SealedField::BaselineBody => swap!(c, baselines, baselines::sealed_body, ws, row, old, new),
        SealedField::CheckBody => swap!(c, checks, checks::sealed_body, ws, row, old, new),
        SealedField::WebhookSecret => {
            cached(
                "UPDATE webhooks SET sealed_secret = $1 \
                 WHERE id = $2 AND workspace_id = $3 AND sealed_secret = $4",
            )
            .bind::<diesel::sql_types::Bytea, _>(new)
            .bind::<SqlUuid, _>(row)
            .bind::<SqlUuid, _>(ws)
            .bind::<diesel::sql_types::Bytea, _>(old)
            .execute(c)
            .await?
        }
        _ => {
            return Err(Error::Store(StoreError::InvalidInput(
                "unknown sealed field".into(),
            )));
        }
    };
    Ok(n > 0)
}

#[derive(QueryableByName)]
struct RateRow {
    #[diesel(sql_type = Int8)]
    now_nanos: i64,
    #[diesel(sql_type = Nullable<Int8>)]
    tat: Option<i64>,
}

/// The database clock (nanoseconds since the Unix epoch) and `key`'s TAT, in one read-only
/// statement (see `Store::rate_limit_read`).
pub async fn rate_limit_read(c: &mut Conn, key: &str) -> Result<apidrift_store::RateLimitRow> {
    let row: RateRow = cached(
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::int8 AS now_nanos, \
                (SELECT tat FROM rate_limits WHERE key = $1) AS tat",
    )
    .bind::<Text, _>(key)
    .get_result(c)
    .await?;
    Ok(apidrift_store::RateLimitRow {
        now_nanos: row.now_nanos,
        tat: row.tat,
    })
}

/// Compare-and-swap of `key`'s TAT in one statement (see `Store::rate_limit_swap`): the update
/// re-reads the row it locks, so of two instances swapping from the same `old` exactly one writes.
pub async fn rate_limit_swap(c: &mut Conn, key: &str, old: Option<i64>, new: i64) -> Result<bool> {
    let written =
        match old {
            Some(old) => {
                cached("UPDATE rate_limits SET tat = $3 WHERE key = $1 AND tat = $2")
                    .bind::<Text, _>(key)
                    .bind::<Int8, _>(old)
                    .bind::<Int8, _>(new)
                    .execute(c)
                    .await?
            }
            None => cached(
                "INSERT INTO rate_limits (key, tat) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
            )
            .bind::<Text, _>(key)
            .bind::<Int8, _>(new)
            .execute(c)
            .await?,
        };
    Ok(written == 1)
}

/// Moves `key`'s TAT back by `nanos` (unspent leased units handed back).
pub async fn rate_limit_give_back(c: &mut Conn, key: &str, nanos: i64) -> Result<()> {
    cached("UPDATE rate_limits SET tat = tat - $2 WHERE key = $1")
        .bind::<Text, _>(key)
        .bind::<Int8, _>(nanos)
        .execute(c)
        .await?;
    Ok(())
}
