//! The reads of an endpoint list over the checks history (D26): the uptime counts and the last
//! response times of a page of endpoints, each in one statement for the whole page (the ids
//! travel as one `uuid[]`).

use crate::Result;
use crate::cached::cached;
use apidrift_store::{
    ResponsePoint, UPTIME_DAY, UPTIME_MONTH, UPTIME_WEEK, UptimeCounts, WindowCounts, to_u32,
};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Integer, Nullable, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

type Conn = AsyncPgConnection;

#[derive(QueryableByName)]
struct UptimeRow {
    #[diesel(sql_type = SqlUuid)]
    endpoint_id: Uuid,
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

pub(crate) async fn uptime_counts(
    c: &mut Conn,
    ws: Uuid,
    endpoint_ids: &[Uuid],
    now: OffsetDateTime,
) -> Result<Vec<(Uuid, UptimeCounts)>> {
    if endpoint_ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<UptimeRow> = cached(
        "SELECT endpoint_id, \
         COUNT(*) FILTER (WHERE started_at >= $3) AS day_n, \
         COUNT(*) FILTER (WHERE started_at >= $3 AND http_status < 500) AS day_up, \
         COUNT(*) FILTER (WHERE started_at >= $4) AS week_n, \
         COUNT(*) FILTER (WHERE started_at >= $4 AND http_status < 500) AS week_up, \
         COUNT(*) AS month_n, \
         COUNT(*) FILTER (WHERE http_status < 500) AS month_up \
         FROM checks WHERE workspace_id = $1 AND endpoint_id = ANY($2) AND started_at >= $5 \
         GROUP BY endpoint_id",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<Array<SqlUuid>, _>(endpoint_ids)
    .bind::<Timestamptz, _>(now - UPTIME_DAY)
    .bind::<Timestamptz, _>(now - UPTIME_WEEK)
    .bind::<Timestamptz, _>(now - UPTIME_MONTH)
    .load(c)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                r.endpoint_id,
                UptimeCounts {
                    day: window(r.day_n, r.day_up),
                    week: window(r.week_n, r.week_up),
                    month: window(r.month_n, r.month_up),
                },
            )
        })
        .collect())
}

#[derive(QueryableByName)]
struct PointRow {
    #[diesel(sql_type = SqlUuid)]
    endpoint_id: Uuid,
    #[diesel(sql_type = Timestamptz)]
    started_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Integer>)]
    response_time: Option<i32>,
}

pub(crate) async fn recent_response_times(
    c: &mut Conn,
    ws: Uuid,
    endpoint_ids: &[Uuid],
    limit: u32,
) -> Result<Vec<(Uuid, Vec<ResponsePoint>)>> {
    if endpoint_ids.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let rows: Vec<PointRow> = cached(
        "SELECT e.id AS endpoint_id, r.started_at, r.response_time \
         FROM unnest($2::uuid[]) AS e(id) CROSS JOIN LATERAL (\
         SELECT started_at, response_time, id FROM checks \
         WHERE workspace_id = $1 AND endpoint_id = e.id \
         ORDER BY started_at DESC, id DESC LIMIT $3) r \
         ORDER BY e.id, r.started_at, r.id",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<Array<SqlUuid>, _>(endpoint_ids)
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)
    .await?;
    let mut out: Vec<(Uuid, Vec<ResponsePoint>)> = Vec::new();
    for r in rows {
        let point = ResponsePoint {
            started_at: r.started_at,
            response_time: r
                .response_time
                .map(|v| to_u32("checks.response_time", v.into()))
                .transpose()?,
        };
        match out.last_mut() {
            Some((last, points)) if *last == r.endpoint_id => points.push(point),
            _ => out.push((r.endpoint_id, vec![point])),
        }
    }
    Ok(out)
}
