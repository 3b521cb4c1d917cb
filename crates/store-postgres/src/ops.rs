//! [`OpsStore`] on PostgreSQL: the operator reads. Backups are made with PostgreSQL's own tools
//! (`pg_dump`), so `backup_to` keeps the trait's refusal.

use crate::cached::cached;
use crate::rows::WorkspaceRow;
use crate::schema::workspaces;
use crate::{Error, PgStore};
use apidrift_model::Health;
use apidrift_store::{OperatorGauges, OpsStore, StoreError, Workspace};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{Int8, Text};
use diesel_async::RunQueryDsl;

#[derive(QueryableByName)]
struct KeyCount {
    #[diesel(sql_type = Text)]
    k: String,
    #[diesel(sql_type = Int8)]
    n: i64,
}

#[async_trait]
impl OpsStore for PgStore {
    async fn list_workspaces(&self) -> Result<Vec<Workspace>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<WorkspaceRow> = workspaces::table
            .order((workspaces::created_at.asc(), workspaces::id.asc()))
            .select(WorkspaceRow::as_select())
            .load(&mut conn)
            .await
            .map_err(|e| StoreError::from(Error::Db(e)))?;
        rows.into_iter().map(WorkspaceRow::into_model).collect()
    }

    /// One statement, so both figures come from the same snapshot.
    async fn operator_gauges(&self) -> Result<OperatorGauges, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<KeyCount> = cached(
            "SELECT 'health:' || health AS k, count(*)::int8 AS n FROM endpoints GROUP BY health \
             UNION ALL \
             SELECT 'outbox' AS k, count(*)::int8 AS n FROM deliveries WHERE state = 'pending'",
        )
        .load(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        let mut out = OperatorGauges::default();
        for r in rows {
            let n = u64::try_from(r.n).unwrap_or(0);
            if let Some(h) = r.k.strip_prefix("health:") {
                let health = h
                    .parse::<Health>()
                    .map_err(|e| StoreError::corrupt("endpoints.health", e))?;
                out.endpoints_by_health.push((health, n));
            } else {
                out.outbox_pending = n;
            }
        }
        Ok(out)
    }
}
