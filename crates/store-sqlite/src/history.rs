//! The reads of an endpoint list over the checks history (D26): the uptime counts and the last
//! response times of a page of endpoints, each in one statement for the whole page (the ids
//! travel as one JSON array, read with `json_each`, so the statement text stays constant).

use crate::Result;
use crate::cached::cached;
use crate::rows::{from_ts, id, parse_id, ts};
use apidrift_store::{
    ResponsePoint, UPTIME_DAY, UPTIME_MONTH, UPTIME_WEEK, UptimeCounts, WindowCounts, to_u32,
};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use time::OffsetDateTime;
use uuid::Uuid;

fn ids_json(ids: &[Uuid]) -> String {
    serde_json::Value::Array(ids.iter().map(|u| id(*u).into()).collect()).to_string()
}

#[derive(QueryableByName)]
struct UptimeRow {
    #[diesel(sql_type = Text)]
    endpoint_id: String,
    #[diesel(sql_type = BigInt)]
    day_n: i64,
    #[diesel(sql_type = BigInt)]
    day_up: i64,
    #[diesel(sql_type = BigInt)]
    week_n: i64,
    #[diesel(sql_type = BigInt)]
    week_up: i64,
    #[diesel(sql_type = BigInt)]
    month_n: i64,
    #[diesel(sql_type = BigInt)]
    month_up: i64,
}

fn window(checks: i64, up: i64) -> WindowCounts {
    WindowCounts {
        checks: u64::try_from(checks).unwrap_or(0),
        up: u64::try_from(up).unwrap_or(0),
    }
}

pub(crate) fn uptime_counts(
    c: &mut SqliteConnection,
    ws: Uuid,
    endpoint_ids: &[Uuid],
    now: OffsetDateTime,
) -> Result<Vec<(Uuid, UptimeCounts)>> {
    if endpoint_ids.is_empty() {
        return Ok(Vec::new());
    }
    let (day, week, month) = (
        ts(now - UPTIME_DAY),
        ts(now - UPTIME_WEEK),
        ts(now - UPTIME_MONTH),
    );
    let rows: Vec<UptimeRow> = cached(
        "SELECT endpoint_id, \
         COALESCE(SUM(started_at >= ?), 0) AS day_n, \
         COALESCE(SUM(started_at >= ? AND COALESCE(http_status, 999) < 500), 0) AS day_up, \
         COALESCE(SUM(started_at >= ?), 0) AS week_n, \
         COALESCE(SUM(started_at >= ? AND COALESCE(http_status, 999) < 500), 0) AS week_up, \
         COUNT(*) AS month_n, \
         COALESCE(SUM(COALESCE(http_status, 999) < 500), 0) AS month_up \
         FROM checks WHERE workspace_id = ? \
         AND endpoint_id IN (SELECT value FROM json_each(?)) AND started_at >= ? \
         GROUP BY endpoint_id",
    )
    .bind::<BigInt, _>(day)
    .bind::<BigInt, _>(day)
    .bind::<BigInt, _>(week)
    .bind::<BigInt, _>(week)
    .bind::<Text, _>(id(ws))
    .bind::<Text, _>(ids_json(endpoint_ids))
    .bind::<BigInt, _>(month)
    .load(c)?;
    rows.into_iter()
        .map(|r| {
            Ok((
                parse_id("checks.endpoint_id", &r.endpoint_id)?,
                UptimeCounts {
                    day: window(r.day_n, r.day_up),
                    week: window(r.week_n, r.week_up),
                    month: window(r.month_n, r.month_up),
                },
            ))
        })
        .collect()
}

#[derive(QueryableByName)]
struct PointRow {
    #[diesel(sql_type = Text)]
    endpoint_id: String,
    #[diesel(sql_type = BigInt)]
    started_at: i64,
    #[diesel(sql_type = Nullable<diesel::sql_types::Integer>)]
    response_time: Option<i32>,
}

pub(crate) fn recent_response_times(
    c: &mut SqliteConnection,
    ws: Uuid,
    endpoint_ids: &[Uuid],
    limit: u32,
) -> Result<Vec<(Uuid, Vec<ResponsePoint>)>> {
    if endpoint_ids.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let rows: Vec<PointRow> = cached(
        "SELECT endpoint_id, started_at, response_time FROM (\
         SELECT endpoint_id, started_at, response_time, id, ROW_NUMBER() OVER (\
         PARTITION BY endpoint_id ORDER BY started_at DESC, id DESC) AS rn \
         FROM checks WHERE workspace_id = ? \
         AND endpoint_id IN (SELECT value FROM json_each(?))) \
         WHERE rn <= ? ORDER BY endpoint_id, started_at, id",
    )
    .bind::<Text, _>(id(ws))
    .bind::<Text, _>(ids_json(endpoint_ids))
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)?;
    let mut out: Vec<(Uuid, Vec<ResponsePoint>)> = Vec::new();
    for r in rows {
        let ep = parse_id("checks.endpoint_id", &r.endpoint_id)?;
        let point = ResponsePoint {
            started_at: from_ts("checks.started_at", r.started_at)?,
            response_time: r
                .response_time
                .map(|v| to_u32("checks.response_time", v.into()))
                .transpose()?,
        };
        match out.last_mut() {
            Some((last, points)) if *last == ep => points.push(point),
            _ => out.push((ep, vec![point])),
        }
    }
    Ok(out)
}
