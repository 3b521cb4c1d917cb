//! Diffs: reads, lists and accepting.
//! Statements of the SQLite adapter over one connection; the caller picks the transaction.

use crate::checks::record_baseline;
use crate::endpoints::set_health;
use crate::rows::{DetailTuple, SummaryTuple, detail_from, id, int, parse_id, summary_from, ts};
use crate::schema::{diffs, endpoints};
use crate::totals::{count, counts, i64_of, known_total};
use crate::{Error, Result};
use apidrift_model::{DiffDetail, DiffSummary};
use apidrift_store::{
    AcceptOutcome, DiffFilter, NewBaseline, Page, PageRequest, StoreError, rules,
};
use diesel::prelude::*;
use time::OffsetDateTime;
use uuid::Uuid;

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
