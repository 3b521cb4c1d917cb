//! Endpoints: bulk create, reads, lists, health and contract.
//! Statements of the SQLite adapter over one connection; the caller picks the transaction.

use crate::rows::{EndpointRow, FigureColumns, SettingsColumns, from_ts, id, parse_id, ts};
use crate::schema::{endpoints, schedules};
use crate::totals::{count, counts, i64_of, known_total};
use crate::workspaces::require_workspace;
use crate::{Error, Result};
use apidrift_model::Health;
use apidrift_store::{
    BulkCreated, ENDPOINT_PAGE_ROWS, EndpointFilter, ListedEndpoint, NewEndpointRow, Page,
    PageRequest, SealedSecrets, StoreError, StoredEndpoint, UptimeCounts, parse_enum, rules,
};
use diesel::prelude::*;
use time::OffsetDateTime;
use uuid::Uuid;

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
    let Some(row) = row else {
        return Ok(None);
    };
    let mut found = [row.into_model()?];
    with_next_runs(c, ws, &mut found)?;
    let [e] = found;
    Ok(Some(e))
}

/// Sets `next_run_at` of `items` (endpoints of workspace `ws`) from their schedule rows, in one
/// query for all of them.
pub(crate) fn with_next_runs(
    c: &mut SqliteConnection,
    ws: Uuid,
    items: &mut [StoredEndpoint],
) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let rows: Vec<(String, i64)> = schedules::table
        .filter(schedules::workspace_id.eq(id(ws)))
        .filter(schedules::endpoint_id.eq_any(items.iter().map(|e| id(e.id))))
        .select((schedules::endpoint_id, schedules::next_run_at))
        .load(c)?;
    let mut due = std::collections::HashMap::with_capacity(rows.len());
    for (endpoint, at) in rows {
        due.insert(
            parse_id("schedules.endpoint_id", &endpoint)?,
            from_ts("schedules.next_run_at", at)?,
        );
    }
    for e in items {
        e.next_run_at = rules::visible_next_run(
            e.settings.schedule.is_some(),
            e.paused,
            due.get(&e.id).copied(),
        );
    }
    Ok(())
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
    let mut items: Vec<StoredEndpoint> = rows
        .into_iter()
        .map(EndpointRow::into_model)
        .collect::<Result<_, _>>()?;
    with_next_runs(c, ws, &mut items)?;
    Ok(Page { items, total })
}

pub(crate) fn require_endpoint(c: &mut SqliteConnection, ws: Uuid, endpoint: Uuid) -> Result<()> {
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

/// The columns of an endpoint a list shows: not the sealed values, not the contract body (only
/// whether there is one).
#[derive(Queryable, Selectable)]
#[diesel(table_name = endpoints, check_for_backend(diesel::sqlite::Sqlite))]
struct ListedRow {
    id: String,
    #[diesel(embed)]
    settings: SettingsColumns,
    auth_type: String,
    #[diesel(select_expression = endpoints::response_contract.is_not_null())]
    #[diesel(select_expression_type = diesel::dsl::IsNotNull<endpoints::response_contract>)]
    has_contract: bool,
    #[diesel(embed)]
    figures: FigureColumns,
}

impl ListedRow {
    fn into_listed(self, ws: Uuid) -> Result<ListedEndpoint, StoreError> {
        let secrets = SealedSecrets {
            auth_type: parse_enum("endpoints.auth_type", &self.auth_type)?,
            sealed_auth: None,
            sealed_headers: None,
            sealed_request_body: None,
        };
        Ok(ListedEndpoint {
            endpoint: self.figures.into_endpoint(
                (parse_id("endpoints.id", &self.id)?, ws),
                self.settings,
                secrets,
                None,
            )?,
            has_response_contract: self.has_contract,
            uptime_counts: UptimeCounts::default(),
            recent: Vec::new(),
        })
    }
}

/// The most response times a page reads per endpoint.
const MAX_POINTS: u32 = 100;

/// One page of endpoints as the lists show them: the page (list columns only), its total, the
/// next runs, the uptime counts and the last `points` response times, in the caller's read
/// transaction (one snapshot). In-process statements cost microseconds: what matters on SQLite
/// is that they share one call (one connection, no hop per statement).
pub(crate) fn endpoint_page(
    c: &mut SqliteConnection,
    ws: Uuid,
    filter: &EndpointFilter,
    page: PageRequest,
    now: OffsetDateTime,
    points: u32,
) -> Result<Page<ListedEndpoint>> {
    let page = PageRequest {
        limit: page.limit.min(ENDPOINT_PAGE_ROWS),
        ..page
    };
    let rows = endpoint_query(ws, filter)
        .order((endpoints::created_at.desc(), endpoints::id.desc()))
        .limit(i64::from(page.limit))
        .offset(i64_of(page.offset))
        .select(ListedRow::as_select())
        .load(c)?;
    let total = match known_total(page, rows.len()) {
        Some(t) => t,
        None if *filter == EndpointFilter::default() => counts(c, ws)?.0,
        None => count(endpoint_query(ws, filter).count().get_result(c)?),
    };
    let mut items: Vec<ListedEndpoint> = rows
        .into_iter()
        .map(|r| r.into_listed(ws))
        .collect::<Result<_, _>>()?;
    if items.is_empty() {
        return Ok(Page { items, total });
    }
    let mut endpoints: Vec<StoredEndpoint> = items.iter().map(|l| l.endpoint.clone()).collect();
    with_next_runs(c, ws, &mut endpoints)?;
    let ids: Vec<Uuid> = endpoints.iter().map(|e| e.id).collect();
    let uptime = crate::history::uptime_counts(c, ws, &ids, now)?;
    let recent = crate::history::recent_response_times(c, ws, &ids, points.min(MAX_POINTS))?;
    for (listed, e) in items.iter_mut().zip(endpoints) {
        listed.endpoint.next_run_at = e.next_run_at;
        if let Some((_, counts)) = uptime.iter().find(|(id, _)| *id == e.id) {
            listed.uptime_counts = *counts;
        }
        if let Some((_, points)) = recent.iter().find(|(id, _)| *id == e.id) {
            listed.recent.clone_from(points);
        }
    }
    Ok(Page { items, total })
}
