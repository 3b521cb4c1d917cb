//! Diffs: reads, lists and accepting.
//! Statements of the PostgreSQL adapter over one connection; the caller picks the transaction.

use crate::checks::record_baseline;
use crate::endpoints::set_health;
use crate::not_found;
use crate::rows::{DetailTuple, SummaryTuple, detail_from, int, summary_from};
use crate::schema::{diffs, endpoints};
use crate::totals::{count, counts, i64_of, known_total};
use crate::{Error, Result};
use apidrift_model::{DiffDetail, DiffSummary};
use apidrift_store::{
    AcceptOutcome, DiffFilter, NewBaseline, Page, PageRequest, StoreError, rules,
};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

type Conn = AsyncPgConnection;

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
    (diffs::first_seen_at, diffs::last_seen_at, diffs::seen_count),
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
    (diffs::first_seen_at, diffs::last_seen_at, diffs::seen_count),
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
    mut c: &Conn,
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
        .first(&mut c)
        .await
        .optional()?;
    Ok(row.map(detail_from).transpose()?)
}

pub async fn get_diff(c: &Conn, ws: Uuid, diff: Uuid) -> Result<Option<DiffDetail>> {
    detail_where(c, ws, Some(diff), None).await
}

pub async fn latest_diff(c: &Conn, ws: Uuid, endpoint: Uuid) -> Result<Option<DiffDetail>> {
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
