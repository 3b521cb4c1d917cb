//! Reads as use cases: the lists and pages the API and the console show, each scoped to the
//! caller's workspace, with typed filters and pages. A front door never reads the store itself, so
//! "a caller sees only its workspace" and the shape of each answer are written here, once. Every
//! read of a caller's data is [`Action::ReadEndpoints`].

use super::actions::{Action, Actor};
use super::base::Service;
use super::error::ServiceError;
use apidrift_model::{DiffDetail, DiffSummary};
use apidrift_store::{
    DiffFilter, EndpointFilter, EndpointSeries, ListedEndpoint, OperatorGauges, Page, PageRequest,
    ResponsePoint, StoredEndpoint, WorkspaceOverview, rules,
};

/// The console's landing page: the workspace at a glance.
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    /// Endpoints by health, failing endpoints and next runs (at most [`OVERVIEW_ROWS`] each).
    pub workspace: WorkspaceOverview,
    /// The newest drifts (diffs) across the workspace, newest first.
    pub drifts: Vec<DiffSummary>,
    /// All endpoints of the workspace.
    pub endpoints: u64,
}

/// Rows of each list of the overview.
pub const OVERVIEW_ROWS: u32 = 10;
use uuid::Uuid;

impl Service {
    /// The actor's endpoints matching `filter`, newest first, one page with the total, as the
    /// lists show them ([`ListedEndpoint`]: no sealed value, no contract body), each with its
    /// uptime (D26) and its last `points` response times (at most 100; the API asks none, the
    /// console's sparklines some). ONE store call for all of it (one statement on PostgreSQL).
    pub async fn list_endpoints(
        &self,
        actor: &Actor,
        filter: &EndpointFilter,
        page: PageRequest,
        points: u32,
    ) -> Result<Page<ListedEndpoint>, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        let mut found = self
            .store
            .endpoint_page(actor.workspace(), filter, page, self.now(), points.min(100))
            .await?;
        for listed in &mut found.items {
            listed.endpoint.uptime = Some(rules::uptime(&listed.uptime_counts));
        }
        Ok(found)
    }

    /// Fills `uptime` on `endpoints` (D26) from the checks history: one read for the whole list;
    /// an endpoint without checks in the last 30 days gets every window `null`.
    pub(crate) async fn with_uptime(
        &self,
        ws: Uuid,
        endpoints: &mut [StoredEndpoint],
    ) -> Result<(), ServiceError> {
        if endpoints.is_empty() {
            return Ok(());
        }
        let ids: Vec<Uuid> = endpoints.iter().map(|e| e.id).collect();
        let counts = self.store.uptime_counts(ws, &ids, self.now()).await?;
        for e in endpoints.iter_mut() {
            let c = counts
                .iter()
                .find(|(id, _)| *id == e.id)
                .map(|(_, c)| *c)
                .unwrap_or_default();
            e.uptime = Some(rules::uptime(&c));
        }
        Ok(())
    }

    /// The last `limit` response times (at most 100) of each of `ids` of the actor's workspace,
    /// oldest first (the console's sparklines): one read for the whole list; an endpoint without
    /// checks is left out.
    pub async fn response_series(
        &self,
        actor: &Actor,
        ids: &[Uuid],
        limit: u32,
    ) -> Result<Vec<(Uuid, Vec<ResponsePoint>)>, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        Ok(self
            .store
            .recent_response_times(actor.workspace(), ids, limit.min(100))
            .await?)
    }

    /// Endpoint `id` of the actor's workspace with its uptime, or 404.
    pub async fn get_endpoint(
        &self,
        actor: &Actor,
        id: Uuid,
    ) -> Result<StoredEndpoint, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        let mut e = self.endpoint(actor.workspace(), id).await?;
        self.with_uptime(actor.workspace(), std::slice::from_mut(&mut e))
            .await?;
        Ok(e)
    }

    /// Endpoint `id` of workspace `ws`, or 404 (for the use cases, which checked their caller).
    pub(crate) async fn endpoint(
        &self,
        ws: Uuid,
        id: Uuid,
    ) -> Result<StoredEndpoint, ServiceError> {
        self.store
            .get_endpoint(ws, id)
            .await?
            .ok_or_else(|| ServiceError::not_found("endpoint", id))
    }

    /// The current version of endpoint `id` (404 when missing), for a caller about to change it
    /// who named several versions it may have read (`If-Match: "3", "4"`).
    pub async fn endpoint_version(&self, actor: &Actor, id: Uuid) -> Result<i64, ServiceError> {
        actor.may(Action::UpdateEndpoints)?;
        Ok(self.endpoint(actor.workspace(), id).await?.version)
    }

    /// Endpoint `id` of the actor's workspace, or `None` (unknown, or another workspace's).
    pub async fn find_endpoint(
        &self,
        actor: &Actor,
        id: Uuid,
    ) -> Result<Option<StoredEndpoint>, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        Ok(self.store.get_endpoint(actor.workspace(), id).await?)
    }

    /// Diff `id` of the actor's workspace, or `None` (unknown, or another workspace's).
    pub async fn find_diff(
        &self,
        actor: &Actor,
        id: Uuid,
    ) -> Result<Option<DiffDetail>, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        Ok(self.store.get_diff(actor.workspace(), id).await?)
    }

    /// The newest diff of endpoint `id` of the actor's workspace, with its changes; `None` when
    /// it never produced one (or is not the workspace's).
    pub async fn latest_diff(
        &self,
        actor: &Actor,
        id: Uuid,
    ) -> Result<Option<DiffDetail>, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        Ok(self.store.latest_diff(actor.workspace(), id).await?)
    }

    /// Diff `id` of the actor's workspace with its changes; not found for another workspace's.
    pub async fn get_diff(&self, actor: &Actor, id: Uuid) -> Result<DiffDetail, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        self.store
            .get_diff(actor.workspace(), id)
            .await?
            .ok_or_else(|| ServiceError::not_found("diff", id))
    }

    /// The actor's diffs matching `filter`, newest first, one page with the total.
    pub async fn list_diffs(
        &self,
        actor: &Actor,
        filter: &DiffFilter,
        page: PageRequest,
    ) -> Result<Page<DiffSummary>, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        Ok(self
            .store
            .list_diffs(actor.workspace(), filter, page)
            .await?)
    }

    /// The actor's workspace at a glance (the console's landing page): endpoints by health, the
    /// newest drifts, the endpoints whose latest check failed to fetch and the next scheduled
    /// runs. Two store reads.
    pub async fn overview(&self, actor: &Actor) -> Result<Overview, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        let ws = actor.workspace();
        let workspace = self.store.workspace_overview(ws, OVERVIEW_ROWS).await?;
        let drifts = self
            .store
            .list_diffs(
                ws,
                &DiffFilter::default(),
                PageRequest {
                    limit: OVERVIEW_ROWS,
                    offset: 0,
                },
            )
            .await?
            .items;
        let endpoints = workspace.by_health.iter().map(|(_, n)| n).sum();
        Ok(Overview {
            workspace,
            drifts,
            endpoints,
        })
    }

    /// Whether the store answers (`GET /healthz`).
    pub async fn ping(&self) -> Result<(), ServiceError> {
        Ok(self.store.ping().await?)
    }

    /// The operator's gauges of `GET /metrics` (workspaces, endpoints by health, the backlog).
    pub async fn operator_gauges(&self) -> Result<OperatorGauges, ServiceError> {
        Ok(self.store.operator_gauges().await?)
    }

    /// The per-endpoint figures of `GET /metrics` (`[metrics] per_endpoint`): the first `limit`
    /// endpoints across every workspace and the number of endpoints, in one store read.
    pub async fn endpoint_series(&self, limit: u32) -> Result<EndpointSeries, ServiceError> {
        Ok(self.store.endpoint_series(limit).await?)
    }
}
