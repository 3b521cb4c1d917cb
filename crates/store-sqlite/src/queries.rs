//! The statements of the SQLite adapter, as synchronous functions over one connection. The caller
//! ([`crate::SqliteStore`]) picks the transaction; every function filters on the workspace id.

use crate::cached::cached;
use crate::rows::{
    BaselineRow, CheckRow, DetailTuple, EndpointRow, SummaryTuple, TokenRow, WorkspaceRow,
    contract_to_text, detail_from, id, int, parse_id, summary_from, ts,
};
use crate::schema::{
    baselines, check_usage, checks, diffs, endpoints, tokens, workspace_counts, workspaces,
};
use crate::{Error, Result};
use apidrift_model::{DiffDetail, DiffSummary, Health};
use apidrift_store::{
    AcceptOutcome, BulkCreated, DiffFilter, EndpointFilter, NewBaseline, NewCheck, NewDiff,
    NewEndpointRow, NewToken, NewWorkspace, Page, PageRequest, QuotaOutcome, RecordedCheck,
    ResponseContract, SealedField, SealedValue, StoreError, StoredBaseline, StoredCheck,
    StoredEndpoint, StoredToken, TOKEN_TOUCH_INTERVAL_SECS, Workspace, WorkspaceUpdate,
    changes_to_json, month_key, rules,
};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use time::OffsetDateTime;
use uuid::Uuid;

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

// ------------------------------------------------------------------------------ workspaces

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
    let next = rules::apply_update(current, update);
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

pub fn consume_check_unit(
    c: &mut SqliteConnection,
    ws: Uuid,
    now: OffsetDateTime,
) -> Result<QuotaOutcome> {
    let quota = require_workspace(c, ws)?.check_quota;
    let month = month_key(now);
    // One statement: insert the month's first unit or add one, both only below the quota.
    let consumed: Option<Used> = cached(
        "INSERT INTO check_usage (workspace_id, month, used) \
         SELECT ?, ?, 1 WHERE ? IS NULL OR ? > 0 \
         ON CONFLICT (workspace_id, month) DO UPDATE SET used = check_usage.used + 1 \
         WHERE ? IS NULL OR check_usage.used < ? \
         RETURNING used",
    )
    .bind::<Text, _>(id(ws))
    .bind::<Text, _>(&month)
    // The quota, once per placeholder (positional placeholders only: see `cached`).
    .bind::<Nullable<BigInt>, _>(quota.map(i64::from))
    .bind::<Nullable<BigInt>, _>(quota.map(i64::from))
    .bind::<Nullable<BigInt>, _>(quota.map(i64::from))
    .bind::<Nullable<BigInt>, _>(quota.map(i64::from))
    .get_result(c)
    .optional()?;
    match (consumed, quota) {
        (Some(u), quota) => Ok(QuotaOutcome::Consumed {
            used: count(u.used),
            quota,
        }),
        (None, Some(quota)) => Ok(QuotaOutcome::Exhausted {
            used: check_usage(c, ws, now)?,
            quota,
        }),
        (None, None) => Err(Error::Store(StoreError::Database(
            "quota upsert wrote nothing".into(),
        ))),
    }
}

pub fn check_usage(c: &mut SqliteConnection, ws: Uuid, at: OffsetDateTime) -> Result<u64> {
    let used: Option<i64> = check_usage::table
        .find((id(ws), month_key(at)))
        .select(check_usage::used)
        .first(c)
        .optional()?;
    Ok(used.map(count).unwrap_or(0))
}

// ------------------------------------------------------------------------------ tokens

pub fn create_token(c: &mut SqliteConnection, new: &NewToken) -> Result<StoredToken> {
    require_workspace(c, new.workspace_id)?;
    let row = diesel::insert_into(tokens::table)
        .values(&TokenRow::new(new))
        .returning(TokenRow::as_returning())
        .get_result(c)?;
    Ok(row.into_model()?)
}

pub fn find_token_by_hash(c: &mut SqliteConnection, hash: &str) -> Result<Option<StoredToken>> {
    let row = tokens::table
        .filter(tokens::token_hash.eq(hash))
        .select(TokenRow::as_select())
        .first(c)
        .optional()?;
    Ok(row.map(TokenRow::into_model).transpose()?)
}

pub fn get_token(
    c: &mut SqliteConnection,
    ws: Option<Uuid>,
    token: Uuid,
) -> Result<Option<StoredToken>> {
    let mut q = tokens::table.filter(tokens::id.eq(id(token))).into_boxed();
    if let Some(ws) = ws {
        q = q.filter(tokens::workspace_id.eq(id(ws)));
    }
    let row = q.select(TokenRow::as_select()).first(c).optional()?;
    Ok(row.map(TokenRow::into_model).transpose()?)
}

pub fn list_tokens(c: &mut SqliteConnection, ws: Uuid) -> Result<Vec<StoredToken>> {
    let rows = tokens::table
        .filter(tokens::workspace_id.eq(id(ws)))
        .order((tokens::created_at.asc(), tokens::id.asc()))
        .select(TokenRow::as_select())
        .load(c)?;
    Ok(rows
        .into_iter()
        .map(TokenRow::into_model)
        .collect::<Result<_, _>>()?)
}

pub fn revoke_token(
    c: &mut SqliteConnection,
    ws: Option<Uuid>,
    token: Uuid,
    now: OffsetDateTime,
) -> Result<StoredToken> {
    let current = get_token(c, ws, token)?.ok_or(Error::Store(StoreError::NotFound))?;
    if current.revoked_at.is_some() {
        return Ok(current);
    }
    let row = diesel::update(tokens::table.find(id(token)))
        .set(tokens::revoked_at.eq(Some(ts(now))))
        .returning(TokenRow::as_returning())
        .get_result(c)?;
    Ok(row.into_model()?)
}

pub fn touch_token(
    c: &mut SqliteConnection,
    ws: Uuid,
    token: Uuid,
    now: OffsetDateTime,
) -> Result<bool> {
    let now = ts(now);
    let threshold = now - TOKEN_TOUCH_INTERVAL_SECS * 1_000_000;
    let n = diesel::update(
        tokens::table
            .filter(tokens::id.eq(id(token)))
            .filter(tokens::workspace_id.eq(id(ws)))
            .filter(
                tokens::last_used_at
                    .is_null()
                    .or(tokens::last_used_at.le(threshold)),
            ),
    )
    .set(tokens::last_used_at.eq(Some(now)))
    .execute(c)?;
    Ok(n > 0)
}

// ------------------------------------------------------------------------------ endpoints

/// The trigger-kept row counts of a workspace: (endpoints, diffs, breaking diffs).
fn counts(c: &mut SqliteConnection, ws: Uuid) -> Result<(u64, u64, u64)> {
    let row: Option<(i64, i64, i64)> = workspace_counts::table
        .find(id(ws))
        .select((
            workspace_counts::endpoints,
            workspace_counts::diffs,
            workspace_counts::breaking_diffs,
        ))
        .first(c)
        .optional()?;
    Ok(row
        .map(|(e, d, b)| (count(e), count(d), count(b)))
        .unwrap_or((0, 0, 0)))
}

pub fn count_endpoints(c: &mut SqliteConnection, ws: Uuid) -> Result<u64> {
    Ok(counts(c, ws)?.0)
}

pub fn create_endpoints(
    c: &mut SqliteConnection,
    ws: Uuid,
    rows: &[NewEndpointRow],
) -> Result<BulkCreated> {
    let workspace = require_workspace(c, ws)?;
    let existing = count_endpoints(c, ws)?;
    let fit = rules::endpoints_that_fit(workspace.endpoint_limit, existing, rows.len());
    let new_rows = rows[..fit]
        .iter()
        .map(|r| EndpointRow::new(ws, r))
        .collect::<Result<Vec<_>, _>>()?;
    if !new_rows.is_empty() {
        diesel::insert_into(endpoints::table)
            .values(&new_rows)
            .execute(c)?;
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

pub fn get_endpoint(
    c: &mut SqliteConnection,
    ws: Uuid,
    endpoint: Uuid,
) -> Result<Option<StoredEndpoint>> {
    let row = endpoints::table
        .filter(endpoints::workspace_id.eq(id(ws)))
        .filter(endpoints::id.eq(id(endpoint)))
        .select(EndpointRow::as_select())
        .first(c)
        .optional()?;
    Ok(row.map(EndpointRow::into_model).transpose()?)
}

/// Operator: the workspace an endpoint belongs to.
pub fn endpoint_workspace(c: &mut SqliteConnection, endpoint: Uuid) -> Result<Option<Uuid>> {
    let ws: Option<String> = endpoints::table
        .filter(endpoints::id.eq(id(endpoint)))
        .select(endpoints::workspace_id)
        .first(c)
        .optional()?;
    Ok(ws
        .map(|w| parse_id("endpoints.workspace_id", &w))
        .transpose()?)
}

fn endpoint_query(
    ws: Uuid,
    filter: &EndpointFilter,
) -> endpoints::BoxedQuery<'static, diesel::sqlite::Sqlite> {
    let mut q = endpoints::table
        .filter(endpoints::workspace_id.eq(id(ws)))
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
pub fn known_total(page: PageRequest, len: usize) -> Option<u64> {
    let len = len as u64;
    if (len > 0 || page.offset == 0) && len < u64::from(page.limit) {
        Some(page.offset + len)
    } else {
        None
    }
}

/// The method and URL of every endpoint of the workspace (those two columns only).
pub fn endpoint_keys(c: &mut SqliteConnection, ws: Uuid) -> Result<Vec<(String, String)>> {
    Ok(endpoints::table
        .filter(endpoints::workspace_id.eq(id(ws)))
        .select((endpoints::method, endpoints::url))
        .load(c)?)
}

pub fn list_endpoints(
    c: &mut SqliteConnection,
    ws: Uuid,
    filter: &EndpointFilter,
    page: PageRequest,
) -> Result<Page<StoredEndpoint>> {
    let rows = endpoint_query(ws, filter)
        .order((endpoints::created_at.desc(), endpoints::id.desc()))
        .limit(i64::from(page.limit))
        .offset(i64_of(page.offset))
        .select(EndpointRow::as_select())
        .load(c)?;
    let total = match known_total(page, rows.len()) {
        Some(t) => t,
        None if *filter == EndpointFilter::default() => counts(c, ws)?.0,
        None => count(endpoint_query(ws, filter).count().get_result(c)?),
    };
    let items = rows
        .into_iter()
        .map(EndpointRow::into_model)
        .collect::<Result<_, _>>()?;
    Ok(Page { items, total })
}

fn require_endpoint(c: &mut SqliteConnection, ws: Uuid, endpoint: Uuid) -> Result<()> {
    let found: i64 = endpoints::table
        .filter(endpoints::workspace_id.eq(id(ws)))
        .filter(endpoints::id.eq(id(endpoint)))
        .count()
        .get_result(c)?;
    if found == 0 {
        Err(Error::Store(StoreError::NotFound))
    } else {
        Ok(())
    }
}

pub fn set_health(
    c: &mut SqliteConnection,
    ws: Uuid,
    endpoint: Uuid,
    health: Health,
    now: OffsetDateTime,
) -> Result<()> {
    let n = diesel::update(
        endpoints::table
            .filter(endpoints::workspace_id.eq(id(ws)))
            .filter(endpoints::id.eq(id(endpoint))),
    )
    .set((
        endpoints::health.eq(health.as_str()),
        endpoints::updated_at.eq(ts(now)),
    ))
    .execute(c)?;
    if n == 0 {
        Err(Error::Store(StoreError::NotFound))
    } else {
        Ok(())
    }
}

pub fn set_contract(
    c: &mut SqliteConnection,
    ws: Uuid,
    endpoint: Uuid,
    contract: Option<&ResponseContract>,
    now: OffsetDateTime,
) -> Result<()> {
    let text = contract.map(contract_to_text).transpose()?;
    let n = diesel::update(
        endpoints::table
            .filter(endpoints::workspace_id.eq(id(ws)))
            .filter(endpoints::id.eq(id(endpoint))),
    )
    .set((
        endpoints::response_contract.eq(text),
        endpoints::updated_at.eq(ts(now)),
    ))
    .execute(c)?;
    if n == 0 {
        Err(Error::Store(StoreError::NotFound))
    } else {
        Ok(())
    }
}

// ------------------------------------------------------------------------------ baselines

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

// ------------------------------------------------------------------------------ checks, diffs

pub fn record_check(
    c: &mut SqliteConnection,
    ws: Uuid,
    check: &NewCheck,
    diff: Option<&NewDiff>,
) -> Result<RecordedCheck> {
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
    let (counts, health) = rules::check_figures(diff);
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
    Ok(RecordedCheck {
        check: row.into_model()?,
        counts,
        health,
    })
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

fn detail_where(
    c: &mut SqliteConnection,
    ws: Uuid,
    diff: Option<Uuid>,
    endpoint: Option<Uuid>,
) -> Result<Option<DiffDetail>> {
    let mut q = joined!()
        .filter(diffs::workspace_id.eq(id(ws)))
        .into_boxed();
    if let Some(d) = diff {
        q = q.filter(diffs::id.eq(id(d)));
    }
    if let Some(e) = endpoint {
        q = q.filter(diffs::endpoint_id.eq(id(e)));
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
        .optional()?;
    Ok(row.map(detail_from).transpose()?)
}

pub fn get_diff(c: &mut SqliteConnection, ws: Uuid, diff: Uuid) -> Result<Option<DiffDetail>> {
    detail_where(c, ws, Some(diff), None)
}

pub fn latest_diff(
    c: &mut SqliteConnection,
    ws: Uuid,
    endpoint: Uuid,
) -> Result<Option<DiffDetail>> {
    detail_where(c, ws, None, Some(endpoint))
}

pub fn list_diffs(
    c: &mut SqliteConnection,
    ws: Uuid,
    filter: &DiffFilter,
    page: PageRequest,
) -> Result<Page<DiffSummary>> {
    let base = || {
        let mut q = diffs::table
            .filter(diffs::workspace_id.eq(id(ws)))
            .into_boxed();
        if let Some(e) = filter.endpoint_id {
            q = q.filter(diffs::endpoint_id.eq(id(e)));
        }
        if let Some(since) = filter.since {
            q = q.filter(diffs::created_at.ge(ts(since)));
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
        .filter(diffs::workspace_id.eq(id(ws)))
        .filter(diffs::id.eq_any(page_ids))
        .order((diffs::created_at.desc(), diffs::id.desc()))
        .select(SUMMARY)
        .load(c)?;
    let total = match known_total(page, rows.len()) {
        Some(t) => t,
        None if *filter == DiffFilter::default() => counts(c, ws)?.1,
        None if *filter
            == (DiffFilter {
                breaking_only: true,
                ..Default::default()
            }) =>
        {
            counts(c, ws)?.2
        }
        None => count(base().count().get_result(c)?),
    };
    let items = rows
        .into_iter()
        .map(summary_from)
        .collect::<Result<_, _>>()?;
    Ok(Page { items, total })
}

pub fn accept_diff(
    c: &mut SqliteConnection,
    ws: Uuid,
    diff: Uuid,
    baseline: Option<&NewBaseline>,
    now: OffsetDateTime,
) -> Result<AcceptOutcome> {
    let found: Option<(String, bool)> = diffs::table
        .filter(diffs::workspace_id.eq(id(ws)))
        .filter(diffs::id.eq(id(diff)))
        .select((diffs::endpoint_id, diffs::accepted))
        .first(c)
        .optional()?;
    let (endpoint, accepted) = found.ok_or(Error::Store(StoreError::NotFound))?;
    if accepted {
        return Ok(AcceptOutcome {
            newly_accepted: false,
            baseline: None,
            health_reset: false,
        });
    }
    let endpoint = parse_id("diffs.endpoint_id", &endpoint)?;
    if baseline.is_some_and(|b| b.endpoint_id != endpoint) {
        return Err(Error::Store(StoreError::InvalidInput(
            "the baseline belongs to another endpoint than the diff".into(),
        )));
    }
    diesel::update(diffs::table.find(id(diff)))
        .set(diffs::accepted.eq(true))
        .execute(c)?;
    let baseline = baseline
        .map(|b| record_baseline(c, ws, b, None))
        .transpose()?;
    let latest: Option<String> = diffs::table
        .filter(diffs::workspace_id.eq(id(ws)))
        .filter(diffs::endpoint_id.eq(id(endpoint)))
        .order((diffs::created_at.desc(), diffs::id.desc()))
        .select(diffs::id)
        .first(c)
        .optional()?;
    let latest = latest.and_then(|t| Uuid::parse_str(&t).ok());
    let reset = rules::figures_after_accept(latest, diff);
    if let Some((counts, health)) = reset {
        set_health(c, ws, endpoint, health, now)?;
        diesel::update(
            endpoints::table
                .filter(endpoints::workspace_id.eq(id(ws)))
                .filter(endpoints::id.eq(id(endpoint))),
        )
        .set((
            endpoints::breaking_count.eq(int("breaking_count", counts.breaking)?),
            endpoints::warning_count.eq(int("warning_count", counts.warning)?),
        ))
        .execute(c)?;
    }
    let health_reset = reset.is_some();
    Ok(AcceptOutcome {
        newly_accepted: true,
        baseline,
        health_reset,
    })
}

// ------------------------------------------------------------------------------ sealed values

/// One batch of a nullable sealed column.
macro_rules! sealed_batch {
    ($c:expr, $table:ident, $col:expr, $select:expr, $after:expr, $limit:expr) => {
        $table::table
            .filter($table::id.gt($after))
            .filter($col.is_not_null())
            .order($table::id.asc())
            .limit($limit)
            .select(($table::id, $table::workspace_id, $select))
            .load::<(String, String, Option<Vec<u8>>)>($c)?
    };
}

pub fn sealed_values(
    c: &mut SqliteConnection,
    field: SealedField,
    after: Option<Uuid>,
    limit: u32,
) -> Result<Vec<SealedValue>> {
    let after = after.map(id).unwrap_or_default();
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
                #[diesel(sql_type = Text)]
                id: String,
                #[diesel(sql_type = Text)]
                workspace_id: String,
                #[diesel(sql_type = Nullable<diesel::sql_types::Binary>)]
                blob: Option<Vec<u8>>,
            }
            cached(
                "SELECT id, workspace_id, sealed_secret AS blob FROM webhooks \
                 WHERE id > ? ORDER BY id LIMIT ?",
            )
            .bind::<Text, _>(after)
            .bind::<BigInt, _>(limit)
            .load::<Row>(c)?
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
    rows.into_iter()
        .filter_map(|(row, ws, blob)| blob.map(|b| (row, ws, b)))
        .map(|(row, ws, blob)| {
            Ok(SealedValue {
                field,
                workspace_id: parse_id("workspace_id", &ws)?,
                row_id: parse_id("id", &row)?,
                blob,
            })
        })
        .collect()
}

/// Compare-and-swap of one sealed column.
macro_rules! swap {
    ($c:expr, $table:ident, $col:expr, $ws:expr, $row:expr, $old:expr, $new:expr) => {
        diesel::update(
            $table::table
                .filter($table::id.eq(id($row)))
                .filter($table::workspace_id.eq(id($ws)))
                .filter($col.eq($old)),
        )
        .set($col.eq($new))
        .execute($c)?
    };
}

pub fn replace_sealed_value(
    c: &mut SqliteConnection,
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
        SealedField::WebhookSecret => cached(
            "UPDATE webhooks SET sealed_secret = ? \
             WHERE id = ? AND workspace_id = ? AND sealed_secret = ?",
        )
        .bind::<diesel::sql_types::Binary, _>(new)
        .bind::<Text, _>(id(row))
        .bind::<Text, _>(id(ws))
        .bind::<diesel::sql_types::Binary, _>(old)
        .execute(c)?,
        _ => {
            return Err(Error::Store(StoreError::InvalidInput(
                "unknown sealed field".into(),
            )));
        }
    };
    Ok(n > 0)
}
