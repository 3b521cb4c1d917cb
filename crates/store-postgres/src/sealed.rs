//! Sealed values for `apidrift keys rotate`: batches and compare-and-swap.
//! Statements of the PostgreSQL adapter over one connection; the caller picks the transaction.

use crate::cached::cached;
use crate::schema::{baselines, checks, endpoints};
use crate::{Error, Result};
use apidrift_store::{SealedField, SealedValue, StoreError};
use diesel::prelude::*;
use diesel::sql_types::{Int8, Nullable, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

type Conn = AsyncPgConnection;

/// One batch of a sealed column.
macro_rules! sealed_batch {
    ($c:expr, $table:ident, $col:expr, $select:expr, $after:expr, $limit:expr) => {
        $table::table
            .filter($table::id.gt($after))
            .filter($col.is_not_null())
            .order($table::id.asc())
            .limit($limit)
            .select(($table::id, $table::workspace_id, $select))
            .load::<(Uuid, Uuid, Option<Vec<u8>>)>($c)
            .await?
    };
}

pub async fn sealed_values(
    c: &mut Conn,
    field: SealedField,
    after: Option<Uuid>,
    limit: u32,
) -> Result<Vec<SealedValue>> {
    let after = after.unwrap_or(Uuid::nil());
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
                #[diesel(sql_type = SqlUuid)]
                id: Uuid,
                #[diesel(sql_type = SqlUuid)]
                workspace_id: Uuid,
                #[diesel(sql_type = Nullable<diesel::sql_types::Bytea>)]
                blob: Option<Vec<u8>>,
            }
            cached(
                "SELECT id, workspace_id, sealed_secret AS blob FROM webhooks \
                 WHERE id > $1 ORDER BY id LIMIT $2",
            )
            .bind::<SqlUuid, _>(after)
            .bind::<Int8, _>(limit)
            .load::<Row>(c)
            .await?
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
    Ok(rows
        .into_iter()
        .filter_map(|(row_id, workspace_id, blob)| {
            blob.map(|blob| SealedValue {
                field,
                workspace_id,
                row_id,
                blob,
            })
        })
        .collect())
}

/// Compare-and-swap of one sealed column.
macro_rules! swap {
    ($c:expr, $table:ident, $col:expr, $ws:expr, $row:expr, $old:expr, $new:expr) => {
        diesel::update(
            $table::table
                .filter($table::id.eq($row))
                .filter($table::workspace_id.eq($ws))
                .filter($col.eq($old)),
        )
        .set($col.eq($new))
        .execute($c)
        .await?
    };
}

pub async fn replace_sealed_value(
    c: &mut Conn,
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
        SealedField::WebhookSecret => {
            cached(
                "UPDATE webhooks SET sealed_secret = $1 \
                 WHERE id = $2 AND workspace_id = $3 AND sealed_secret = $4",
            )
            .bind::<diesel::sql_types::Bytea, _>(new)
            .bind::<SqlUuid, _>(row)
            .bind::<SqlUuid, _>(ws)
            .bind::<diesel::sql_types::Bytea, _>(old)
            .execute(c)
            .await?
        }
        _ => {
            return Err(Error::Store(StoreError::InvalidInput(
                "unknown sealed field".into(),
            )));
        }
    };
    Ok(n > 0)
}
