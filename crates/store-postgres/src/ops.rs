//! [`OpsStore`] on PostgreSQL: the operator reads. Backups are made with PostgreSQL's own tools
//! (`pg_dump`), so `backup_to` keeps the trait's refusal.

use crate::cached::cached;
use crate::rows::WorkspaceRow;
use crate::schema::workspaces;
use crate::{Error, PgStore};
use apidrift_model::Health;
use apidrift_store::{
    EndpointSample, EndpointSeries, OperatorGauges, OpsStore, StoreError, Workspace, to_u32,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{Int4, Int8, Nullable, Text};
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

    async fn endpoint_series(&self, limit: u32) -> Result<EndpointSeries, StoreError> {
        let mut conn = self.conn().await?;
        if limit == 0 {
            let rows: Vec<KeyCount> =
                cached("SELECT 'endpoints' AS k, count(*)::int8 AS n FROM endpoints")
                    .load(&mut conn)
                    .await
                    .map_err(|e| StoreError::from(Error::Db(e)))?;
            return Ok(EndpointSeries {
                samples: Vec::new(),
                total: rows.iter().map(|r| u64::try_from(r.n).unwrap_or(0)).sum(),
            });
        }
        let rows: Vec<SampleRow> = cached(
            "SELECT w.name AS workspace, e.name AS endpoint, e.id AS endpoint_id, \
         (SELECT CASE WHEN c.http_status IS NOT NULL AND c.http_status < 500 THEN 1 ELSE 0 END \
          FROM checks c WHERE c.workspace_id = e.workspace_id AND c.endpoint_id = e.id \
          ORDER BY c.started_at DESC, c.id DESC LIMIT 1) AS up, \
         e.response_time AS response_time, \
         CASE WHEN (CASE WHEN e.health = 'checking' THEN e.prior_health ELSE e.health END) \
          IN ('warning', 'breaking') THEN 1 ELSE 0 END AS drift_open, \
         count(*) OVER ()::int8 AS total \
         FROM endpoints e JOIN workspaces w ON w.id = e.workspace_id \
         ORDER BY w.name, e.name, e.id LIMIT $1",
        )
        .bind::<Int8, _>(i64::from(limit))
        .load(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        let mut out = EndpointSeries::default();
        for r in rows {
            out.total = u64::try_from(r.total).unwrap_or(0);
            out.samples.push(EndpointSample {
                workspace: r.workspace,
                endpoint: r.endpoint,
                endpoint_id: r.endpoint_id,
                up: r.up.map(|u| u == 1),
                response_time_ms: r
                    .response_time
                    .map(|ms| to_u32("endpoints.response_time", ms.into()))
                    .transpose()?,
                drift_open: r.drift_open == 1,
            });
        }
        Ok(out)
    }
}

#[derive(QueryableByName)]
struct SampleRow {
    #[diesel(sql_type = Text)]
    workspace: String,
    #[diesel(sql_type = Text)]
    endpoint: String,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    endpoint_id: uuid::Uuid,
    #[diesel(sql_type = Nullable<Int4>)]
    up: Option<i32>,
    #[diesel(sql_type = Nullable<Int4>)]
    response_time: Option<i32>,
    #[diesel(sql_type = Int4)]
    drift_open: i32,
    #[diesel(sql_type = Int8)]
    total: i64,
}
