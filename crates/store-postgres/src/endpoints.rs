//! Endpoints: bulk create, reads, lists, health and contract.
//! Statements of the PostgreSQL adapter over one connection; the caller picks the transaction.

use crate::Result;
use crate::not_found;
use crate::rows::{EndpointRow, contract_to_json, micros};
use crate::schema::{endpoints, schedules};
use crate::totals::{count, counts, i64_of, known_total};
use crate::workspaces::lock_workspace;
use apidrift_model::Health;
use apidrift_store::{
    BulkCreated, EndpointFilter, NewEndpointRow, Page, PageRequest, ResponseContract,
    StoredEndpoint, rules,
};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

type Conn = AsyncPgConnection;

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
    let Some(row) = row else {
        return Ok(None);
    };
    let mut found = [row.into_model()?];
    with_next_runs(c, ws, &mut found).await?;
    let [e] = found;
    Ok(Some(e))
}

/// Sets `next_run_at` of `items` (endpoints of workspace `ws`) from their schedule rows, in one
/// query for all of them.
pub(crate) async fn with_next_runs(
    c: &mut Conn,
    ws: Uuid,
    items: &mut [StoredEndpoint],
) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = items.iter().map(|e| e.id).collect();
    let rows: Vec<(Uuid, OffsetDateTime)> = schedules::table
        .filter(schedules::workspace_id.eq(ws))
        .filter(schedules::endpoint_id.eq_any(ids))
        .select((schedules::endpoint_id, schedules::next_run_at))
        .load(c)
        .await?;
    let due: std::collections::HashMap<Uuid, OffsetDateTime> = rows.into_iter().collect();
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
    let mut items: Vec<StoredEndpoint> = rows
        .into_iter()
        .map(EndpointRow::into_model)
        .collect::<Result<_, _>>()?;
    with_next_runs(c, ws, &mut items).await?;
    Ok(Page { items, total })
}

/// Checks the endpoint exists in the workspace and locks its row until the end of the
/// transaction (serialises baseline versions and check figures per endpoint).
pub(crate) async fn lock_endpoint(c: &mut Conn, ws: Uuid, endpoint: Uuid) -> Result<()> {
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
    // The workspace row first, as every write that adds or drops a set reference holds it.
    lock_workspace(c, ws).await?;
    // A reference must name a set the workspace stores; the set referred to before is freed
    // when nothing else refers to it.
    if let Some(set) = contract.and_then(|c| c.set.as_deref())
        && !crate::contracts::has_set(c, ws, set).await?
    {
        return Err(crate::Error::Store(
            apidrift_store::StoreError::InvalidInput(format!(
                "response contract refers to schema set {set}, which the workspace does not store"
            )),
        ));
    }
    let before = crate::contracts::set_of(c, ws, endpoint).await?;
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
    if n == 0 {
        return Err(not_found());
    }
    let before: Vec<&str> = before.as_deref().into_iter().collect();
    crate::contracts::free_sets(c, ws, &before).await
}
