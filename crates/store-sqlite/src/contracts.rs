//! Contract schema sets ([`ContractStore`]): written once per workspace and hash, freed in the
//! transaction that drops their last reference (`endpoints.response_contract` → `$.set`, found
//! through the expression index `endpoints_contract_set`).

use crate::cached::cached;
use crate::endpoints;
use crate::rows::{from_ts, id, ts};
use crate::{Error, Result, SqliteStore};
use apidrift_store::{
    BulkCreated, ContractStore, NewContractSet, NewEndpointRow, ResponseContract, StoreError,
    StoredContractSet, check_contract_sets,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use time::OffsetDateTime;
use uuid::Uuid;

/// Writes `sets` for workspace `ws`; a hash it already stores is kept as it is.
pub(crate) fn insert_sets(
    c: &mut SqliteConnection,
    ws: Uuid,
    sets: &[NewContractSet],
    now: OffsetDateTime,
) -> Result<()> {
    for set in sets {
        cached(
            "INSERT INTO contract_sets (workspace_id, hash, document, size_bytes, created_at) \
             VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace_id, hash) DO NOTHING",
        )
        .bind::<Text, _>(id(ws))
        .bind::<Text, _>(set.hash.as_str())
        .bind::<Text, _>(&*set.document)
        .bind::<BigInt, _>(i64::try_from(set.document.len()).unwrap_or(i64::MAX))
        .bind::<BigInt, _>(ts(now))
        .execute(c)?;
    }
    Ok(())
}

/// Deletes each of the sets `hashes` of workspace `ws` that no endpoint of it refers to.
pub(crate) fn free_sets<'a>(
    c: &mut SqliteConnection,
    ws: Uuid,
    hashes: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    let w = id(ws);
    for hash in hashes {
        cached(
            "DELETE FROM contract_sets WHERE workspace_id = ? AND hash = ? AND NOT EXISTS \
             (SELECT 1 FROM endpoints WHERE workspace_id = ? \
              AND json_extract(response_contract, '$.set') = ?)",
        )
        .bind::<Text, _>(&w)
        .bind::<Text, _>(hash)
        .bind::<Text, _>(&w)
        .bind::<Text, _>(hash)
        .execute(c)?;
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
pub(crate) fn set_of(c: &mut SqliteConnection, ws: Uuid, ep: Uuid) -> Result<Option<String>> {
    let row: Option<SetOf> = cached(
        "SELECT json_extract(response_contract, '$.set') AS \"set\" FROM endpoints \
         WHERE workspace_id = ? AND id = ?",
    )
    .bind::<Text, _>(id(ws))
    .bind::<Text, _>(id(ep))
    .get_result(c)
    .optional()?;
    Ok(row.and_then(|r| r.set))
}

/// Whether workspace `ws` stores the set `hash`.
pub(crate) fn has_set(c: &mut SqliteConnection, ws: Uuid, hash: &str) -> Result<bool> {
    let row: Option<Usage> =
        cached("SELECT 1 AS n, 0 AS bytes FROM contract_sets WHERE workspace_id = ? AND hash = ?")
            .bind::<Text, _>(id(ws))
            .bind::<Text, _>(hash)
            .get_result(c)
            .optional()?;
    Ok(row.is_some())
}

#[derive(QueryableByName)]
struct SetRow {
    #[diesel(sql_type = Text)]
    document: String,
    #[diesel(sql_type = BigInt)]
    size_bytes: i64,
    #[diesel(sql_type = BigInt)]
    created_at: i64,
}

#[derive(QueryableByName)]
struct Usage {
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = BigInt)]
    bytes: i64,
}

fn get_set(c: &mut SqliteConnection, ws: Uuid, hash: &str) -> Result<Option<StoredContractSet>> {
    let row: Option<SetRow> = cached(
        "SELECT document, size_bytes, created_at FROM contract_sets \
         WHERE workspace_id = ? AND hash = ?",
    )
    .bind::<Text, _>(id(ws))
    .bind::<Text, _>(hash)
    .get_result(c)
    .optional()?;
    row.map(|r| {
        Ok(StoredContractSet {
            hash: hash.to_owned(),
            document: r.document,
            size_bytes: u64::try_from(r.size_bytes).unwrap_or_default(),
            created_at: from_ts("contract_sets.created_at", r.created_at)?,
        })
    })
    .transpose()
}

fn usage(c: &mut SqliteConnection, ws: Uuid) -> Result<(u64, u64)> {
    let u: Usage = cached(
        "SELECT count(*) AS n, coalesce(sum(size_bytes), 0) AS bytes FROM contract_sets \
         WHERE workspace_id = ?",
    )
    .bind::<Text, _>(id(ws))
    .get_result(c)?;
    Ok((
        u64::try_from(u.n).unwrap_or_default(),
        u64::try_from(u.bytes).unwrap_or_default(),
    ))
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
impl ContractStore for SqliteStore {
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
        let now = rows
            .first()
            .map_or_else(OffsetDateTime::now_utc, |r| r.created_at);
        self.write(move |c| {
            let out = endpoints::create_endpoints(c, workspace_id, &rows)?;
            insert_sets(c, workspace_id, &sets, now)?;
            free_sets(c, workspace_id, sets.iter().map(|s| s.hash.as_str()))?;
            Ok(out)
        })
        .await
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
        self.write(move |c| {
            // The endpoint first: a missing one is NotFound before any set is written.
            if endpoints::get_endpoint(c, workspace_id, endpoint_id)?.is_none() {
                return Err(Error::Store(StoreError::NotFound));
            }
            insert_sets(c, workspace_id, &sets, now)?;
            set_contract(c, workspace_id, endpoint_id, Some(&contract), now)
        })
        .await
    }

    async fn contract_set(
        &self,
        workspace_id: Uuid,
        hash: &str,
    ) -> Result<Option<StoredContractSet>, StoreError> {
        let hash = hash.to_owned();
        self.run(move |c| get_set(c, workspace_id, &hash)).await
    }

    async fn contract_set_usage(&self, workspace_id: Uuid) -> Result<(u64, u64), StoreError> {
        self.run(move |c| usage(c, workspace_id)).await
    }
}

/// Sets or removes an endpoint's response contract; a set no longer referred to is freed.
pub fn set_contract(
    c: &mut diesel::SqliteConnection,
    ws: Uuid,
    endpoint: Uuid,
    contract: Option<&ResponseContract>,
    now: OffsetDateTime,
) -> Result<()> {
    // A reference must name a set the workspace stores; the set referred to before is freed
    // when nothing else refers to it.
    if let Some(set) = contract.and_then(|c| c.set.as_deref())
        && !has_set(c, ws, set)?
    {
        return Err(Error::Store(apidrift_store::StoreError::InvalidInput(
            format!(
                "response contract refers to schema set {set}, which the workspace does not store"
            ),
        )));
    }
    let before = set_of(c, ws, endpoint)?;
    let text = contract.map(crate::rows::contract_to_text).transpose()?;
    let n = diesel::update(
        crate::schema::endpoints::table
            .filter(crate::schema::endpoints::workspace_id.eq(id(ws)))
            .filter(crate::schema::endpoints::id.eq(id(endpoint))),
    )
    .set((
        crate::schema::endpoints::response_contract.eq(text),
        crate::schema::endpoints::updated_at.eq(ts(now)),
    ))
    .execute(c)?;
    if n == 0 {
        return Err(Error::Store(apidrift_store::StoreError::NotFound));
    }
    free_sets(c, ws, before.as_deref())
}
