//! Reads as use cases: the lists and pages the API and the console show, each scoped to one
//! workspace, with typed filters and pages. A front door never reads the store itself, so "a
//! caller sees only its workspace" and the shape of each answer are written here, once.

use super::base::Service;
use super::error::ServiceError;
use apidrift_model::{DiffDetail, DiffSummary};
use apidrift_store::{
    DiffFilter, EndpointFilter, OperatorGauges, Page, PageRequest, StoredEndpoint,
};
use uuid::Uuid;

impl Service {
    /// The workspace's endpoints matching `filter`, newest first, one page with the total.
    pub async fn list_endpoints(
        &self,
        ws: Uuid,
        filter: &EndpointFilter,
        page: PageRequest,
    ) -> Result<Page<StoredEndpoint>, ServiceError> {
        Ok(self.store.list_endpoints(ws, filter, page).await?)
    }

    /// Endpoint `id` of workspace `ws`, or `None` (unknown, or another workspace's).
    pub async fn find_endpoint(
        &self,
        ws: Uuid,
        id: Uuid,
    ) -> Result<Option<StoredEndpoint>, ServiceError> {
        Ok(self.store.get_endpoint(ws, id).await?)
    }

    /// Diff `id` of workspace `ws`, or `None` (unknown, or another workspace's).
    pub async fn find_diff(&self, ws: Uuid, id: Uuid) -> Result<Option<DiffDetail>, ServiceError> {
        Ok(self.store.get_diff(ws, id).await?)
    }

    /// The newest diff of endpoint `id` of workspace `ws`, with its changes; `None` when it
    /// never produced one (or is not the workspace's).
    pub async fn latest_diff(
        &self,
        ws: Uuid,
        id: Uuid,
    ) -> Result<Option<DiffDetail>, ServiceError> {
        Ok(self.store.latest_diff(ws, id).await?)
    }

    /// Diff `id` of workspace `ws` with its changes; not found for another workspace's.
    pub async fn get_diff(&self, ws: Uuid, id: Uuid) -> Result<DiffDetail, ServiceError> {
        self.store
            .get_diff(ws, id)
            .await?
            .ok_or_else(|| ServiceError::not_found("diff", id))
    }

    /// The workspace's diffs matching `filter`, newest first, one page with the total.
    pub async fn list_diffs(
        &self,
        ws: Uuid,
        filter: &DiffFilter,
        page: PageRequest,
    ) -> Result<Page<DiffSummary>, ServiceError> {
        Ok(self.store.list_diffs(ws, filter, page).await?)
    }

    /// Whether the store answers (`GET /healthz`).
    pub async fn ping(&self) -> Result<(), ServiceError> {
        Ok(self.store.ping().await?)
    }

    /// The operator's gauges of `GET /metrics` (workspaces, endpoints by health, the backlog).
    pub async fn operator_gauges(&self) -> Result<OperatorGauges, ServiceError> {
        Ok(self.store.operator_gauges().await?)
    }
}
