//! API tokens.
//! Statements of the PostgreSQL adapter over one connection; the caller picks the transaction.

use crate::Result;
use crate::not_found;
use crate::rows::{TokenRow, micros};
use crate::schema::tokens;
use crate::workspaces::get_workspace;
use apidrift_store::{NewToken, StoredToken, TOKEN_TOUCH_INTERVAL_SECS};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

type Conn = AsyncPgConnection;

pub async fn create_token(c: &mut Conn, new: &NewToken) -> Result<StoredToken> {
    get_workspace(c, new.workspace_id)
        .await?
        .ok_or_else(not_found)?;
    let row = diesel::insert_into(tokens::table)
        .values(&TokenRow::new(new))
        .returning(TokenRow::as_returning())
        .get_result(c)
        .await?;
    Ok(row.into_model()?)
}

pub async fn find_token_by_hash(c: &mut Conn, hash: &str) -> Result<Option<StoredToken>> {
    let row = tokens::table
        .filter(tokens::token_hash.eq(hash))
        .select(TokenRow::as_select())
        .first(c)
        .await
        .optional()?;
    Ok(row.map(TokenRow::into_model).transpose()?)
}

pub async fn get_token(c: &mut Conn, ws: Option<Uuid>, token: Uuid) -> Result<Option<StoredToken>> {
    let mut q = tokens::table
        .filter(tokens::id.eq(token))
        .into_boxed::<Pg>();
    if let Some(ws) = ws {
        q = q.filter(tokens::workspace_id.eq(ws));
    }
    let row = q.select(TokenRow::as_select()).first(c).await.optional()?;
    Ok(row.map(TokenRow::into_model).transpose()?)
}

pub async fn list_tokens(c: &mut Conn, ws: Uuid) -> Result<Vec<StoredToken>> {
    let rows = tokens::table
        .filter(tokens::workspace_id.eq(ws))
        .order((tokens::created_at.asc(), tokens::id.asc()))
        .select(TokenRow::as_select())
        .load(c)
        .await?;
    Ok(rows
        .into_iter()
        .map(TokenRow::into_model)
        .collect::<Result<_, _>>()?)
}

pub async fn revoke_token(
    c: &mut Conn,
    ws: Option<Uuid>,
    token: Uuid,
    now: OffsetDateTime,
) -> Result<StoredToken> {
    // One statement: set revoked_at only when unset, then read the row either way.
    let mut q = diesel::update(tokens::table)
        .filter(tokens::id.eq(token))
        .filter(tokens::revoked_at.is_null())
        .into_boxed();
    if let Some(ws) = ws {
        q = q.filter(tokens::workspace_id.eq(ws));
    }
    q.set(tokens::revoked_at.eq(Some(micros(now))))
        .execute(c)
        .await?;
    get_token(c, ws, token).await?.ok_or_else(not_found)
}

pub async fn touch_token(c: &mut Conn, ws: Uuid, token: Uuid, now: OffsetDateTime) -> Result<bool> {
    let now = micros(now);
    let threshold = now - time::Duration::seconds(TOKEN_TOUCH_INTERVAL_SECS);
    let n = diesel::update(
        tokens::table
            .filter(tokens::id.eq(token))
            .filter(tokens::workspace_id.eq(ws))
            .filter(
                tokens::last_used_at
                    .is_null()
                    .or(tokens::last_used_at.le(threshold)),
            ),
    )
    .set(tokens::last_used_at.eq(Some(now)))
    .execute(c)
    .await?;
    Ok(n > 0)
}
