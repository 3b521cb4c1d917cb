//! Rate limits shared by every instance on the database.
//! Statements of the PostgreSQL adapter over one connection; the caller picks the transaction.

use crate::Result;
use crate::cached::cached;
use diesel::prelude::*;
use diesel::sql_types::{Int8, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

type Conn = AsyncPgConnection;

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
