//! Endpoints: bulk create, reads, lists (the lists' page in one statement: [`endpoint_page`]),
//! health and contract.
//! Statements of the PostgreSQL adapter over one connection; the caller picks the transaction.

use crate::Result;
use crate::cached::cached;
use crate::not_found;
use crate::rows::{EndpointRow, SettingsColumns, micros};
use crate::schema::{endpoints, schedules};
use crate::totals::{count, counts, i64_of, known_total};
use crate::tx::join2;
use crate::workspaces::lock_workspace;
use apidrift_model::Health;
use apidrift_store::{
    BulkCreated, ENDPOINT_PAGE_ROWS, EndpointFilter, ListedEndpoint, NewEndpointRow, Page,
    PageRequest, ResponsePoint, SealedSecrets, StoreError, StoredEndpoint, UPTIME_DAY,
    UPTIME_MONTH, UPTIME_WEEK, UptimeCounts, WindowCounts, parse_enum, rules, to_u32,
};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
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

/// The endpoint with its next run: the row and the schedule's next run read in one round trip.
pub async fn get_endpoint(c: &Conn, ws: Uuid, endpoint: Uuid) -> Result<Option<StoredEndpoint>> {
    let (mut row_conn, mut run_conn) = (c, c);
    let row = endpoints::table
        .filter(endpoints::workspace_id.eq(ws))
        .filter(endpoints::id.eq(endpoint))
        .select(EndpointRow::as_select())
        .first::<EndpointRow>(&mut row_conn);
    let due = schedules::table
        .filter(schedules::workspace_id.eq(ws))
        .filter(schedules::endpoint_id.eq(endpoint))
        .select(schedules::next_run_at)
        .first::<OffsetDateTime>(&mut run_conn);
    let (row, due) = join2(row, due).await;
    let Some(row) = row.optional()? else {
        return Ok(None);
    };
    let mut e = row.into_model()?;
    e.next_run_at =
        rules::visible_next_run(e.settings.schedule.is_some(), e.paused, due.optional()?);
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

/// The statement of [`endpoint_page`] for one filter: `$filter` narrows the rows (binds `$8`,
/// `$9`), `$total` is the page's total. The page, its total, the schedules' next runs, the
/// uptime counts and the last response times come back in ONE round trip; an empty page (past the
/// end) is one row with the total and every other column null. Only the columns a list shows are
/// read: not the sealed values, not the contract body (only whether there is one).
///
/// The statement runs under its generic plan, set for it alone (`plan_cache_mode`, reset in the
/// same round trip). Under the default (`auto`) PostgreSQL costed the generic plan above the
/// custom ones (it assumes an unknown `OFFSET` skips a tenth of the rows) and planned the
/// statement again on every execution: 0.4–0.85 ms of planning for 0.2–0.4 ms of execution
/// (issue 29). pgbench running the route's statement on 10,000 endpoints: 2,659 executions/s
/// under `auto`, 6,389 under the generic plan. The page is at most [`ENDPOINT_PAGE_ROWS`] rows,
/// and that bound is a constant of the SQL (`LIMIT 100`) with the page's size (`LIMIT $2`)
/// applied on top, so that the generic plan expects a page's rows, not a tenth of the table, and
/// joins them by index. Only this statement: a session-wide generic plan would cost the claim
/// (`LIMIT $4` of due schedules) a tenth of the table too.
macro_rules! page_sql {
    ($filter:literal, $total:expr) => {
        concat!(
            "WITH page AS (SELECT * FROM (SELECT e.id, e.key, e.name, e.url, e.method, e.environment, \
             e.description, e.tags, e.content_type, e.diff_mode, e.timeout_ms, e.schedule, \
             e.ignore_paths, e.follow_redirects, e.retries, e.identity_keys, \
             e.severity_overrides, e.latency, e.auth_type, e.health, \
             e.response_contract IS NOT NULL AS has_contract, e.baseline_version, \
             e.last_checked_at, e.response_time, e.breaking_count, e.warning_count, \
             e.created_at, e.updated_at, e.paused, e.version \
             FROM endpoints e WHERE e.workspace_id = $1",
            $filter,
            " ORDER BY e.created_at DESC, e.id DESC LIMIT 100 OFFSET $3) AS capped LIMIT $2) \
             SELECT t.total, p.*, s.next_run_at, \
             u.day_n, u.day_up, u.week_n, u.week_up, u.month_n, u.month_up, \
             r.points_at, r.points_ms \
             FROM (SELECT ",
            $total,
            " AS total) t \
             LEFT JOIN page p ON true \
             LEFT JOIN schedules s ON s.endpoint_id = p.id AND s.workspace_id = $1 \
             LEFT JOIN LATERAL (SELECT \
             COUNT(*) FILTER (WHERE c.started_at >= $4) AS day_n, \
             COUNT(*) FILTER (WHERE c.started_at >= $4 AND c.http_status < 500) AS day_up, \
             COUNT(*) FILTER (WHERE c.started_at >= $5) AS week_n, \
             COUNT(*) FILTER (WHERE c.started_at >= $5 AND c.http_status < 500) AS week_up, \
             COUNT(*) AS month_n, \
             COUNT(*) FILTER (WHERE c.http_status < 500) AS month_up \
             FROM checks c WHERE c.workspace_id = $1 AND c.endpoint_id = p.id \
             AND c.started_at >= $6) u ON true \
             LEFT JOIN LATERAL (SELECT \
             array_agg(q.started_at ORDER BY q.started_at, q.id) AS points_at, \
             array_agg(q.response_time ORDER BY q.started_at, q.id) AS points_ms \
             FROM (SELECT c.started_at, c.response_time, c.id FROM checks c \
             WHERE c.workspace_id = $1 AND c.endpoint_id = p.id \
             ORDER BY c.started_at DESC, c.id DESC LIMIT $7) q) r ON true \
             ORDER BY p.created_at DESC, p.id DESC"
        )
    };
}

/// The total of a filtered page: the page's own count when it proves the total (a short page),
/// else a count of the matching rows (PostgreSQL evaluates the count only when it is needed).
macro_rules! filtered_total {
    ($filter:literal) => {
        concat!(
            "(SELECT CASE WHEN (k.n > 0 OR $3 = 0) AND k.n < $2 THEN $3 + k.n \
             ELSE (SELECT COUNT(*) FROM endpoints e WHERE e.workspace_id = $1",
            $filter,
            ") END FROM (SELECT COUNT(*) AS n FROM page) k)"
        )
    };
}

const PAGE_ALL: &str = page_sql!(
    "",
    "COALESCE((SELECT w.endpoints FROM workspace_counts w WHERE w.workspace_id = $1), 0)"
);
const PAGE_HEALTH: &str = page_sql!(" AND e.health = $8", filtered_total!(" AND e.health = $8"));
const PAGE_ENVIRONMENT: &str = page_sql!(
    " AND e.environment = $8",
    filtered_total!(" AND e.environment = $8")
);
const PAGE_BOTH: &str = page_sql!(
    " AND e.health = $8 AND e.environment = $9",
    filtered_total!(" AND e.health = $8 AND e.environment = $9")
);

/// One row of [`endpoint_page`]'s statement: the total, then the page's columns (all null on
/// the one row of an empty page).
#[derive(QueryableByName)]
struct PageRow {
    #[diesel(sql_type = BigInt)]
    total: i64,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    key: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    name: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    url: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    method: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    environment: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    description: Option<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    tags: Option<Value>,
    #[diesel(sql_type = Nullable<Text>)]
    content_type: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    diff_mode: Option<String>,
    #[diesel(sql_type = Nullable<Integer>)]
    timeout_ms: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    schedule: Option<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    ignore_paths: Option<Value>,
    #[diesel(sql_type = Nullable<Bool>)]
    follow_redirects: Option<bool>,
    #[diesel(sql_type = Nullable<Integer>)]
    retries: Option<i32>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    identity_keys: Option<Value>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    severity_overrides: Option<Value>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    latency: Option<Value>,
    #[diesel(sql_type = Nullable<Text>)]
    auth_type: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    health: Option<String>,
    #[diesel(sql_type = Nullable<Bool>)]
    has_contract: Option<bool>,
    #[diesel(sql_type = Nullable<Integer>)]
    baseline_version: Option<i32>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_checked_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Integer>)]
    response_time: Option<i32>,
    #[diesel(sql_type = Nullable<Integer>)]
    breaking_count: Option<i32>,
    #[diesel(sql_type = Nullable<Integer>)]
    warning_count: Option<i32>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    created_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    updated_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Bool>)]
    paused: Option<bool>,
    #[diesel(sql_type = Nullable<BigInt>)]
    version: Option<i64>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    next_run_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<BigInt>)]
    day_n: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    day_up: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    week_n: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    week_up: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    month_n: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    month_up: Option<i64>,
    #[diesel(sql_type = Nullable<Array<Timestamptz>>)]
    points_at: Option<Vec<OffsetDateTime>>,
    #[diesel(sql_type = Nullable<Array<Nullable<Integer>>>)]
    points_ms: Option<Vec<Option<i32>>>,
}

/// A column that is NOT NULL in the table (null only on the row of an empty page).
fn required<T>(column: &str, v: Option<T>) -> Result<T, StoreError> {
    v.ok_or_else(|| StoreError::corrupt(column, "null"))
}

fn window(checks: Option<i64>, up: Option<i64>) -> WindowCounts {
    WindowCounts {
        checks: count(checks.unwrap_or(0)),
        up: count(up.unwrap_or(0)),
    }
}

impl PageRow {
    /// The listed endpoint of this row; `None` on the row of an empty page.
    fn into_listed(self, ws: Uuid) -> Result<Option<ListedEndpoint>, StoreError> {
        let Some(id) = self.id else {
            return Ok(None);
        };
        let u = |c: &str, v: Option<i32>| to_u32(c, required(c, v)?.into());
        let settings = SettingsColumns {
            key: self.key,
            name: required("endpoints.name", self.name)?,
            url: required("endpoints.url", self.url)?,
            method: required("endpoints.method", self.method)?,
            environment: required("endpoints.environment", self.environment)?,
            description: self.description,
            tags: required("endpoints.tags", self.tags)?,
            content_type: required("endpoints.content_type", self.content_type)?,
            diff_mode: required("endpoints.diff_mode", self.diff_mode)?,
            timeout_ms: required("endpoints.timeout_ms", self.timeout_ms)?,
            schedule: self.schedule,
            ignore_paths: required("endpoints.ignore_paths", self.ignore_paths)?,
            follow_redirects: required("endpoints.follow_redirects", self.follow_redirects)?,
            retries: required("endpoints.retries", self.retries)?,
            identity_keys: required("endpoints.identity_keys", self.identity_keys)?,
            severity_overrides: required("endpoints.severity_overrides", self.severity_overrides)?,
            latency: required("endpoints.latency", self.latency)?,
        }
        .into_settings()?;
        let paused = required("endpoints.paused", self.paused)?;
        let next_run_at =
            rules::visible_next_run(settings.schedule.is_some(), paused, self.next_run_at);
        let endpoint = StoredEndpoint {
            id,
            workspace_id: ws,
            settings,
            secrets: SealedSecrets {
                auth_type: parse_enum(
                    "endpoints.auth_type",
                    &required("endpoints.auth_type", self.auth_type)?,
                )?,
                sealed_auth: None,
                sealed_headers: None,
                sealed_request_body: None,
            },
            health: parse_enum(
                "endpoints.health",
                &required("endpoints.health", self.health)?,
            )?,
            response_contract: None,
            baseline_version: self
                .baseline_version
                .map(|v| to_u32("endpoints.baseline_version", v.into()))
                .transpose()?,
            last_checked_at: self.last_checked_at,
            response_time: self
                .response_time
                .map(|v| to_u32("endpoints.response_time", v.into()))
                .transpose()?,
            breaking_count: u("endpoints.breaking_count", self.breaking_count)?,
            warning_count: u("endpoints.warning_count", self.warning_count)?,
            created_at: required("endpoints.created_at", self.created_at)?,
            updated_at: required("endpoints.updated_at", self.updated_at)?,
            paused,
            version: required("endpoints.version", self.version)?,
            uptime: None,
            next_run_at,
        };
        let recent = self
            .points_at
            .unwrap_or_default()
            .into_iter()
            .zip(self.points_ms.unwrap_or_default())
            .map(|(started_at, ms)| {
                Ok(ResponsePoint {
                    started_at,
                    response_time: ms
                        .map(|v| to_u32("checks.response_time", v.into()))
                        .transpose()?,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Some(ListedEndpoint {
            endpoint,
            has_response_contract: self.has_contract.unwrap_or(false),
            uptime_counts: UptimeCounts {
                day: window(self.day_n, self.day_up),
                week: window(self.week_n, self.week_up),
                month: window(self.month_n, self.month_up),
            },
            recent,
        }))
    }
}

/// One page of endpoints as the lists show them, in ONE statement (see [`page_sql!`]).
pub(crate) async fn endpoint_page(
    c: &mut Conn,
    ws: Uuid,
    filter: &EndpointFilter,
    page: PageRequest,
    now: OffsetDateTime,
    points: u32,
) -> Result<Page<ListedEndpoint>> {
    /// The binds every variant shares, `$1` to `$7`.
    macro_rules! common {
        ($sql:expr) => {
            cached($sql)
                .bind::<SqlUuid, _>(ws)
                .bind::<BigInt, _>(i64::from(page.limit.min(ENDPOINT_PAGE_ROWS)))
                .bind::<BigInt, _>(i64_of(page.offset))
                .bind::<Timestamptz, _>(now - UPTIME_DAY)
                .bind::<Timestamptz, _>(now - UPTIME_WEEK)
                .bind::<Timestamptz, _>(now - UPTIME_MONTH)
                .bind::<BigInt, _>(i64::from(points.min(MAX_POINTS)))
        };
    }
    let mut q: &Conn = c;
    let page = match (filter.health, filter.environment.as_deref()) {
        (None, None) => common!(PAGE_ALL).load::<PageRow>(&mut q),
        (Some(h), None) => common!(PAGE_HEALTH)
            .bind::<Text, _>(h.as_str())
            .load::<PageRow>(&mut q),
        (None, Some(env)) => common!(PAGE_ENVIRONMENT)
            .bind::<Text, _>(env)
            .load::<PageRow>(&mut q),
        (Some(h), Some(env)) => common!(PAGE_BOTH)
            .bind::<Text, _>(h.as_str())
            .bind::<Text, _>(env)
            .load::<PageRow>(&mut q),
    };
    // The page under a generic plan (see `page_sql!`): the setting, the page and the reset leave
    // together and run in this order, in one round trip.
    let (mut set, mut reset): (&Conn, &Conn) = (c, c);
    let set = cached("SET plan_cache_mode = force_generic_plan").execute(&mut set);
    let reset = cached("RESET plan_cache_mode").execute(&mut reset);
    let (set, (rows, reset)) = join2(set, join2(page, reset)).await;
    let rows = rows?;
    set?;
    reset?;
    let total = <[PageRow]>::first(&rows).map_or(0, |r| count(r.total));
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(listed) = row.into_listed(ws)? {
            items.push(listed);
        }
    }
    Ok(Page { items, total })
}

/// The most response times a page reads per endpoint.
const MAX_POINTS: u32 = 100;
