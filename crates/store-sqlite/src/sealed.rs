//! Sealed values for `apidrift keys rotate`: batches and compare-and-swap.
//! Statements of the SQLite adapter over one connection; the caller picks the transaction.

use crate::cached::cached;
use crate::rows::{id, parse_id};
use crate::schema::{baselines, checks, endpoints};
use crate::{Error, Result};
use apidrift_store::{SealedField, SealedValue, StoreError};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use uuid::Uuid;

/// One batch of a nullable sealed column.
macro_rules! sealed_batch {
    ($c:expr, $table:ident, $col:expr, $select:expr, $after:expr, $limit:expr) => {
        $table::table
            .filter($table::id.gt($after))
            .filter($col.is_not_null())
            .order($table::id.asc())
            .limit($limit)
            .select(($table::id, $table::workspace_id, $select))
            .load::<(String, String, Option<Vec<u8>>)>($c)?
    };
}

pub fn sealed_values(
    c: &mut SqliteConnection,
    field: SealedField,
    after: Option<Uuid>,
    limit: u32,
) -> Result<Vec<SealedValue>> {
    let after = after.map(id).unwrap_or_default();
    let limit = i64::from(limit);
    let rows = match field {
        SealedField::EndpointAuth => {
            sealed_batch!(
                c,
                endpoints,
                endpoints::sealed_auth,
                endpoints::sealed_auth,
                after,
                limit
            )
        }
        SealedField::EndpointHeaders => sealed_batch!(
            c,
            endpoints,
            endpoints::sealed_headers,
            endpoints::sealed_headers,
            after,
            limit
        ),
        SealedField::EndpointRequestBody => sealed_batch!(
            c,
            endpoints,
            endpoints::sealed_request_body,
            endpoints::sealed_request_body,
            after,
            limit
        ),
        SealedField::BaselineBody => sealed_batch!(
            c,
            baselines,
            baselines::sealed_body,
            baselines::sealed_body.nullable(),
            after,
            limit
        ),
        SealedField::CheckBody => {
            sealed_batch!(
                c,
                checks,
                checks::sealed_body,
                checks::sealed_body,
                after,
                limit
            )
        }
        SealedField::WebhookSecret => {
            #[derive(QueryableByName)]
            struct Row {
                #[diesel(sql_type = Text)]
                id: String,
                #[diesel(sql_type = Text)]
                workspace_id: String,
                #[diesel(sql_type = Nullable<diesel::sql_types::Binary>)]
                blob: Option<Vec<u8>>,
            }
            cached(
                "SELECT id, workspace_id, sealed_secret AS blob FROM webhooks \
                 WHERE id > ? ORDER BY id LIMIT ?",
            )
            .bind::<Text, _>(after)
            .bind::<BigInt, _>(limit)
            .load::<Row>(c)?
            .into_iter()
            .map(|r| (r.id, r.workspace_id, r.blob))
            .collect::<Vec<_>>()
        }
        _ => {
            return Err(Error::Store(StoreError::InvalidInput(
                "unknown sealed field".into(),
            )));
        }
    };
    rows.into_iter()
        .filter_map(|(row, ws, blob)| blob.map(|b| (row, ws, b)))
        .map(|(row, ws, blob)| {
            Ok(SealedValue {
                field,
                workspace_id: parse_id("workspace_id", &ws)?,
                row_id: parse_id("id", &row)?,
                blob,
            })
        })
        .collect()
}

/// Compare-and-swap of one sealed column.
macro_rules! swap {
    ($c:expr, $table:ident, $col:expr, $ws:expr, $row:expr, $old:expr, $new:expr) => {
        diesel::update(
            $table::table
                .filter($table::id.eq(id($row)))
                .filter($table::workspace_id.eq(id($ws)))
                .filter($col.eq($old)),
        )
        .set($col.eq($new))
        .execute($c)?
    };
}

pub fn replace_sealed_value(
    c: &mut SqliteConnection,
    field: SealedField,
    ws: Uuid,
    row: Uuid,
    old: &[u8],
    new: &[u8],
) -> Result<bool> {
    let n = match field {
        SealedField::EndpointAuth => swap!(c, endpoints, endpoints::sealed_auth, ws, row, old, new),
        SealedField::EndpointHeaders => {
            swap!(c, endpoints, endpoints::sealed_headers, ws, row, old, new)
        }
        SealedField::EndpointRequestBody => {
            swap!(
                c,
                endpoints,
                endpoints::sealed_request_body,
                ws,
                row,
                old,
                new
            )
        }
        SealedField::BaselineBody => swap!(c, baselines, baselines::sealed_body, ws, row, old, new),
        SealedField::CheckBody => swap!(c, checks, checks::sealed_body, ws, row, old, new),
        SealedField::WebhookSecret => cached(
            "UPDATE webhooks SET sealed_secret = ? \
             WHERE id = ? AND workspace_id = ? AND sealed_secret = ?",
        )
        .bind::<diesel::sql_types::Binary, _>(new)
        .bind::<Text, _>(id(row))
        .bind::<Text, _>(id(ws))
        .bind::<diesel::sql_types::Binary, _>(old)
        .execute(c)?,
        _ => {
            return Err(Error::Store(StoreError::InvalidInput(
                "unknown sealed field".into(),
            )));
        }
    };
    Ok(n > 0)
}
