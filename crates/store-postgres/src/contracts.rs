//! Contract schema sets ([`ContractStore`]): written once per workspace and hash, freed in the
//! transaction that drops their last reference (`endpoints.response_contract ->> 'set'`, found
//! through the expression index `endpoints_contract_set`). Every write that adds or drops a
//! reference holds the workspace row (`FOR NO KEY UPDATE`, as creating and deleting endpoints
//! do), so a set is never freed while another transaction adds a reference to it.

use crate::cached::cached;
use crate::endpoints;
use crate::rows::micros;
use crate::workspaces::lock_workspace;
use crate::{Error, PgStore, Result};
use apidrift_store::{
    BulkCreated, ContractStore, NewContractSet, NewEndpointRow, ResponseContract, StoreError,
    StoredContractSet, check_contract_sets,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

type Conn = AsyncPgConnection;

/// Writes `sets` for workspace `ws`; a hash it already stores is kept as it is.
pub(crate) async fn insert_sets(
    c: &mut Conn,
    ws: Uuid,
    sets: &[NewContractSet],
    now: OffsetDateTime,
) -> Result<()> {
    for set in sets {
        cached(
            "INSERT INTO contract_sets (workspace_id, hash, document, size_bytes, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workspace_id, hash) DO NOTHING",
        )
        .bind::<SqlUuid, _>(ws)
        .bind::<Text, _>(set.hash.as_str())
        .bind::<Text, _>(&*set.document)
        .bind::<BigInt, _>(i64::try_from(set.document.len()).unwrap_or(i64::MAX))
        .bind::<Timestamptz, _>(micros(now))
        .execute(c)
        .await?;
    }
    Ok(())
}

/// Deletes each of the sets `hashes` of workspace `ws` that no endpoint of it refers to.
pub(crate) async fn free_sets(c: &mut Conn, ws: Uuid, hashes: &[&str]) -> Result<()> {
    for hash in hashes {
        cached(
            "DELETE FROM contract_sets WHERE workspace_id = $1 AND hash = $2 AND NOT EXISTS \
             (SELECT 1 FROM endpoints WHERE workspace_id = $1 \
              AND (response_contract ->> 'set') = $2)",
        )
        .bind::<SqlUuid, _>(ws)
        .bind::<Text, _>(*hash)
        .execute(c)
        .await?;
    }
    Ok(())
}

#[derive(QueryableByName)]
struct SetOf {
    #[diesel(sql_type = Nullable<Text>)]
    set: Option<String>,
}

/// The set the endpoint's contract refers to (`None` without one, or for an inline contract or
/// a missing endpoint).
pub(crate) async fn set_of(c: &mut Conn, ws: Uuid, ep: Uuid) -> Result<Option<String>> {
    let row: Option<SetOf> = cached(
        "SELECT response_contract ->> 'set' AS \"set\" FROM endpoints \
         WHERE workspace_id = $1 AND id = $2",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<SqlUuid, _>(ep)
    .get_result(c)
    .await
    .optional()?;
    Ok(row.and_then(|r| r.set))
}

/// Whether workspace `ws` stores the set `hash`.
pub(crate) async fn has_set(c: &mut Conn, ws: Uuid, hash: &str) -> Result<bool> {
    let row: Option<Usage> = cached(
        "SELECT 1::bigint AS n, 0::bigint AS bytes FROM contract_sets \
         WHERE workspace_id = $1 AND hash = $2",
    )
    .bind::<SqlUuid, _>(ws)
    .bind::<Text, _>(hash)
    .get_result(c)
    .await
    .optional()?;
    Ok(row.is_some())
}

#[derive(QueryableByName)]
struct SetRow {
    #[diesel(sql_type = Text)]
    document: String,
    #[diesel(sql_type = BigInt)]
    size_bytes: i64,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
}

#[derive(QueryableByName)]
struct Usage {
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = BigInt)]
    bytes: i64,
}

fn bulk_limit(rows: &[NewEndpointRow]) -> Result<(), StoreError> {
    rows.iter().try_for_each(NewEndpointRow::check_text)?;
    if rows.len() > apidrift_store::MAX_BULK_ENDPOINTS {
        return Err(StoreError::InvalidInput(format!(
            "at most {} endpoints per call",
            apidrift_store::MAX_BULK_ENDPOINTS
        )));
    }
    Ok(())
}

#[async_trait]
impl ContractStore for PgStore {
    async fn create_endpoints_with_sets(
        &self,
        workspace_id: Uuid,
        rows: Vec<NewEndpointRow>,
        sets: Vec<NewContractSet>,
    ) -> Result<BulkCreated, StoreError> {
        bulk_limit(&rows)?;
        check_contract_sets(
            &sets,
            rows.iter()
                .map(|r| r.response_contract.as_ref().and_then(|c| c.set.clone())),
        )?;
        let now =
            <[NewEndpointRow]>::first(&rows).map_or_else(OffsetDateTime::now_utc, |r| r.created_at);
        let hashes: Vec<&str> = sets.iter().map(|s| s.hash.as_str()).collect();
        tx!(self, |c| {
            // Locks the workspace row first (NotFound before any set is written).
            let out = endpoints::create_endpoints(c, workspace_id, &rows).await?;
            insert_sets(c, workspace_id, &sets, now).await?;
            free_sets(c, workspace_id, &hashes).await?;
            Ok(out)
        })
    }

    async fn set_contract_in_set(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        contract: ResponseContract,
        set: NewContractSet,
        now: OffsetDateTime,
    ) -> Result<(), StoreError> {
        let sets = [set];
        check_contract_sets(&sets, [contract.set.clone()])?;
        if contract.set.is_none() {
            return Err(StoreError::InvalidInput(
                "the contract does not refer to the schema set given".into(),
            ));
        }
        tx!(self, |c| {
            lock_workspace(c, workspace_id).await?;
            if endpoints::get_endpoint(c, workspace_id, endpoint_id)
                .await?
                .is_none()
            {
                return Err(Error::Store(StoreError::NotFound));
            }
            insert_sets(c, workspace_id, &sets, now).await?;
            set_contract(c, workspace_id, endpoint_id, Some(&contract), now).await
        })
    }

    async fn contract_set(
        &self,
        workspace_id: Uuid,
        hash: &str,
    ) -> Result<Option<StoredContractSet>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<SetRow> = cached(
            "SELECT document, size_bytes, created_at FROM contract_sets \
             WHERE workspace_id = $1 AND hash = $2",
        )
        .bind::<SqlUuid, _>(workspace_id)
        .bind::<Text, _>(hash)
        .get_result(&mut *conn)
        .await
        .optional()
        .map_err(Error::from)?;
        Ok(row.map(|r| StoredContractSet {
            hash: hash.to_owned(),
            document: r.document,
            size_bytes: u64::try_from(r.size_bytes).unwrap_or_default(),
            created_at: r.created_at,
        }))
    }

    async fn contract_set_usage(&self, workspace_id: Uuid) -> Result<(u64, u64), StoreError> {
        let mut conn = self.conn().await?;
        let u: Usage = cached(
            "SELECT count(*) AS n, coalesce(sum(size_bytes), 0)::bigint AS bytes \
             FROM contract_sets WHERE workspace_id = $1",
        )
        .bind::<SqlUuid, _>(workspace_id)
        .get_result(&mut *conn)
        .await
        .map_err(Error::from)?;
        Ok((
            u64::try_from(u.n).unwrap_or_default(),
            u64::try_from(u.bytes).unwrap_or_default(),
        ))
    }
}

/// Sets or removes an endpoint's response contract; a set no longer referred to is freed.
pub async fn set_contract(
    c: &mut AsyncPgConnection,
    ws: Uuid,
    endpoint: Uuid,
    contract: Option<&ResponseContract>,
    now: OffsetDateTime,
) -> Result<()> {
    // The workspace row first, as every write that adds or drops a set reference holds it.
    lock_workspace(c, ws).await?;
    // A reference must name a set the workspace stores; the set referred to before is freed
    // when nothing else refers to it.
    if let Some(set) = contract.and_then(|c| c.set.as_deref())
        && !has_set(c, ws, set).await?
    {
        return Err(Error::Store(apidrift_store::StoreError::InvalidInput(
            format!(
                "response contract refers to schema set {set}, which the workspace does not store"
            ),
        )));
    }
    let before = set_of(c, ws, endpoint).await?;
    let value = contract.map(crate::rows::contract_to_json).transpose()?;
    let n = diesel::update(
        crate::schema::endpoints::table
            .filter(crate::schema::endpoints::workspace_id.eq(ws))
            .filter(crate::schema::endpoints::id.eq(endpoint)),
    )
    .set((
        crate::schema::endpoints::response_contract.eq(value),
        crate::schema::endpoints::updated_at.eq(micros(now)),
    ))
    .execute(c)
    .await?;
    if n == 0 {
        return Err(crate::not_found());
    }
    let before: Vec<&str> = before.as_deref().into_iter().collect();
    free_sets(c, ws, &before).await
}
