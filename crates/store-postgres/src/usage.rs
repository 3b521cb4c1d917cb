//! The monthly check quota's usage, counted in 16 rows per workspace and month.
//!
//! One usage row per month made every check of a workspace wait for the one before it: the unit
//! is taken in the check's own transaction, so the row stayed locked until that check's commit
//! (its WAL flush included). `pg_stat_statements` showed the take costing 12.3 ms a call and
//! 95 % of the check pipeline's execution time (issue 29). The usage is therefore spread over
//! 16 rows, and a take locks one of them, skipping the rows other transactions hold: up
//! to 16 checks of one workspace commit side by side.
//!
//! The quota stays exact. Shard `i` may count at most `(limit + 15 - i) / 16` units, and the caps
//! of the shards add up to the limit. A take that finds no free row with room waits for the busy
//! ones, and only a month in which every row has reached its cap refuses a unit. A limit that
//! changes spreads the usage again within the new caps ([`respread`]), so the caps hold
//! whatever the limit was when the units were taken.

use crate::Result;
use crate::cached::{Binds, Cached, cached};
use crate::totals::count;
use diesel::prelude::*;
use diesel::sql_types::{Int8, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

type Conn = AsyncPgConnection;

/// The usage after a unit was taken.
#[derive(QueryableByName)]
pub(crate) struct Used {
    #[diesel(sql_type = Int8)]
    used: i64,
}

impl Used {
    pub(crate) fn count(self) -> u64 {
        count(self.used)
    }
}

/// The atomic primitive of the quota: one unit more for `month` while the usage is below `limit`
/// (always when `None`); the usage after it, `None` when the limit was reached (nothing written).
pub async fn take_unit(
    c: &mut Conn,
    ws: Uuid,
    month: &str,
    limit: Option<u32>,
) -> Result<Option<u64>> {
    let taken: Option<Used> = take_free_query(ws, month, limit)
        .get_result(c)
        .await
        .optional()?;
    match taken {
        Some(used) => Ok(Some(used.count())),
        None => take_waiting(c, ws, month, limit).await,
    }
}

/// The first try of [`take_unit`], for a caller that pipelines it: one row ([`Used`]) when a
/// unit was taken on a shard no other transaction holds, none otherwise, and then the caller
/// goes on with [`take_waiting`].
pub(crate) fn take_free_query(
    ws: Uuid,
    month: &str,
    limit: Option<u32>,
) -> Cached<impl Binds + Send + '_> {
    // A random free row with room, locked without waiting.
    take_query(TAKE_FREE, ws, month, limit)
}

/// The statement of a take: one unit more on the row `$pick` locks (a row with room under the
/// limit `$3`); the usage after it is this row's and the other rows' as the statement sees them
/// (exact when nothing runs beside it).
macro_rules! take_sql {
    ($pick:literal) => {
        concat!(
            "WITH pick AS (SELECT shard FROM check_usage \
             WHERE workspace_id = $1 AND month = $2 \
             AND ($3::int8 IS NULL OR used < ($3::int8 + 15 - shard) / 16) ",
            $pick,
            ") UPDATE check_usage u SET used = u.used + 1 FROM pick \
             WHERE u.workspace_id = $1 AND u.month = $2 AND u.shard = pick.shard \
             RETURNING u.used + COALESCE((SELECT sum(o.used) FROM check_usage o \
             WHERE o.workspace_id = $1 AND o.month = $2 AND o.shard <> u.shard), 0)::int8 AS used"
        )
    };
}

const TAKE_FREE: &str = take_sql!("ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED");
const TAKE_WAITING: &str = take_sql!("ORDER BY shard LIMIT 1 FOR UPDATE");

fn take_query<'a>(
    sql: &'static str,
    ws: Uuid,
    month: &'a str,
    limit: Option<u32>,
) -> Cached<impl Binds + Send + 'a> {
    cached(sql)
        .bind::<SqlUuid, _>(ws)
        .bind::<Text, _>(month)
        .bind::<Nullable<Int8>, _>(limit.map(i64::from))
}

/// [`take_unit`] when no free row had room: the month's rows made if missing, then a row with
/// room taken, waiting for the rows other transactions hold. A held row that has reached its cap
/// when its transaction commits is passed over, so `None` means that every row is full.
pub(crate) async fn take_waiting(
    c: &mut Conn,
    ws: Uuid,
    month: &str,
    limit: Option<u32>,
) -> Result<Option<u64>> {
    // The rows are made in shard order, so two transactions that make them wait in one order.
    cached(
        "INSERT INTO check_usage (workspace_id, month, shard, used) \
         SELECT $1, $2, s::int2, 0 FROM generate_series(0, 15) AS s \
         ON CONFLICT (workspace_id, month, shard) DO NOTHING",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<Text, _>(month)
    .execute(c)
    .await?;
    let taken: Option<Used> = take_query(TAKE_WAITING, ws, month, limit)
        .get_result(c)
        .await
        .optional()?;
    Ok(taken.map(Used::count))
}

/// Units used in `month`.
pub async fn units_used(c: &mut Conn, ws: Uuid, month: &str) -> Result<u64> {
    let used: Used = cached(
        "SELECT COALESCE(sum(used), 0)::int8 AS used FROM check_usage \
         WHERE workspace_id = $1 AND month = $2",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<Text, _>(month)
    .get_result(c)
    .await?;
    Ok(used.count())
}

/// Spreads each month's usage again within the caps of `limit`, in the caller's transaction:
/// after a change of the limit, before which units may have been taken under other caps (or
/// none, when unlimited). Each shard is filled up to its cap in order and what exceeds the limit
/// (a limit lowered below the usage) stays on shard 0, so the totals stay and no shard has room
/// while a month is at its limit. The rows stay locked until the caller commits.
pub(crate) async fn respread(c: &mut Conn, ws: Uuid, limit: u32) -> Result<()> {
    // Every month's rows first: a month whose rows another transaction is making is waited for
    // here, so the spread below (a statement of its own, with a later snapshot) sees them all.
    cached(
        "INSERT INTO check_usage (workspace_id, month, shard, used) \
         SELECT $1, m.month, s::int2, 0 \
         FROM (SELECT DISTINCT month FROM check_usage WHERE workspace_id = $1) AS m \
         CROSS JOIN generate_series(0, 15) AS s \
         ON CONFLICT (workspace_id, month, shard) DO NOTHING",
    )
    .bind::<SqlUuid, _>(ws)
    .execute(c)
    .await?;
    cached(
        "WITH locked AS (SELECT month, used FROM check_usage WHERE workspace_id = $1 FOR UPDATE), \
         totals AS (SELECT month, sum(used)::int8 AS total FROM locked GROUP BY month), \
         caps AS (SELECT t.month, t.total, s::int2 AS shard, ($2::int8 + 15 - s) / 16 AS cap \
         FROM totals t CROSS JOIN generate_series(0, 15) AS s), \
         filled AS (SELECT *, COALESCE(sum(cap) OVER (PARTITION BY month ORDER BY shard \
         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before FROM caps) \
         UPDATE check_usage u SET used = CASE WHEN f.shard = 0 \
         THEN LEAST(f.cap, f.total) + GREATEST(f.total - $2::int8, 0) \
         ELSE LEAST(f.cap, GREATEST(f.total - f.before, 0)) END \
         FROM filled f WHERE u.workspace_id = $1 AND u.month = f.month AND u.shard = f.shard",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<Int8, _>(i64::from(limit))
    .execute(c)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Usage rows per workspace and month. The SQL below and the migration that made the rows
    /// spell it out (`16`, `15`, `(limit + 15 - shard) / 16`): keep them equal.
    const SHARDS: u16 = 16;

    /// The most units shard `shard` may count under `limit`, as the SQL computes it: the limit
    /// split as evenly as it goes, the lower shards taking the remainder.
    fn cap(limit: u64, shard: u16) -> u64 {
        (limit + u64::from(SHARDS) - 1 - u64::from(shard)) / u64::from(SHARDS)
    }

    #[test]
    fn caps_add_up_to_the_limit() {
        for limit in [0, 1, 5, 15, 16, 17, 100, 1_000, 999_999] {
            let sum: u64 = (0..SHARDS).map(|i| cap(limit, i)).sum();
            assert_eq!(sum, limit, "limit {limit}");
        }
        assert_eq!(cap(5, 4), 1);
        assert_eq!(cap(5, 5), 0);
    }
}
