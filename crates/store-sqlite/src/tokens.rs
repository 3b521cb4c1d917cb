//! API tokens.
//! Statements of the SQLite adapter over one connection; the caller picks the transaction.

use crate::rows::{TokenRow, id, ts};
use crate::schema::tokens;
use crate::workspaces::require_workspace;
use crate::{Error, Result};
use apidrift_store::{NewToken, StoreError, StoredToken, TOKEN_TOUCH_INTERVAL_SECS};
use diesel::prelude::*;
use time::OffsetDateTime;
use uuid::Uuid;

pub fn create_token(c: &mut SqliteConnection, new: &NewToken) -> Result<StoredToken> {
    require_workspace(c, new.workspace_id)?;
    let row = diesel::insert_into(tokens::table)
        .values(&TokenRow::new(new))
        .returning(TokenRow::as_returning())
        .get_result(c)?;
    Ok(row.into_model()?)
}

pub fn find_token_by_hash(c: &mut SqliteConnection, hash: &str) -> Result<Option<StoredToken>> {
    let row = tokens::table
        .filter(tokens::token_hash.eq(hash))
        .select(TokenRow::as_select())
        .first(c)
        .optional()?;
    Ok(row.map(TokenRow::into_model).transpose()?)
}

pub fn get_token(
    c: &mut SqliteConnection,
    ws: Option<Uuid>,
    token: Uuid,
) -> Result<Option<StoredToken>> {
    let mut q = tokens::table.filter(tokens::id.eq(id(token))).into_boxed();
    if let Some(ws) = ws {
        q = q.filter(tokens::workspace_id.eq(id(ws)));
    }
    let row = q.select(TokenRow::as_select()).first(c).optional()?;
    Ok(row.map(TokenRow::into_model).transpose()?)
}

pub fn list_tokens(c: &mut SqliteConnection, ws: Uuid) -> Result<Vec<StoredToken>> {
    let rows = tokens::table
        .filter(tokens::workspace_id.eq(id(ws)))
        .order((tokens::created_at.asc(), tokens::id.asc()))
        .select(TokenRow::as_select())
        .load(c)?;
    Ok(rows
        .into_iter()
        .map(TokenRow::into_model)
        .collect::<Result<_, _>>()?)
}

pub fn revoke_token(
    c: &mut SqliteConnection,
    ws: Option<Uuid>,
    token: Uuid,
    now: OffsetDateTime,
) -> Result<StoredToken> {
    let current = get_token(c, ws, token)?.ok_or(Error::Store(StoreError::NotFound))?;
    if current.revoked_at.is_some() {
        return Ok(current);
    }
    let row = diesel::update(tokens::table.find(id(token)))
        .set(tokens::revoked_at.eq(Some(ts(now))))
        .returning(TokenRow::as_returning())
        .get_result(c)?;
    Ok(row.into_model()?)
}

pub fn touch_token(
    c: &mut SqliteConnection,
    ws: Uuid,
    token: Uuid,
    now: OffsetDateTime,
) -> Result<bool> {
    let now = ts(now);
    let threshold = now - TOKEN_TOUCH_INTERVAL_SECS * 1_000_000;
    let n = diesel::update(
        tokens::table
            .filter(tokens::id.eq(id(token)))
            .filter(tokens::workspace_id.eq(id(ws)))
            .filter(
                tokens::last_used_at
                    .is_null()
                    .or(tokens::last_used_at.le(threshold)),
            ),
    )
    .set(tokens::last_used_at.eq(Some(now)))
    .execute(c)?;
    Ok(n > 0)
}
