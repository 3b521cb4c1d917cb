//! Operator operations (issue 17): what `apidrift workspace list`, `apidrift backup` and the
//! `/metrics` gauges read. The [`OpsStore`] trait is a supertrait of [`crate::Store`]; every
//! method here is "operator": it reads across workspaces, and is never reachable with a
//! workspace token.

use crate::{StoreError, Workspace};
use apidrift_model::Health;
use async_trait::async_trait;
use std::path::Path;

/// Figures read at scrape time by `GET /metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorGauges {
    /// Endpoints per health, across every workspace; a health no endpoint has is absent.
    pub endpoints_by_health: Vec<(Health, u64)>,
    /// Webhook deliveries waiting to be sent (state `pending`, including retries), across every
    /// workspace.
    pub outbox_pending: u64,
}

impl OperatorGauges {
    /// The number of endpoints with `health` (0 when none).
    pub fn endpoints(&self, health: Health) -> u64 {
        self.endpoints_by_health
            .iter()
            .filter(|(h, _)| *h == health)
            .map(|(_, n)| n)
            .sum()
    }
}

/// One endpoint's figures for the per-endpoint `/metrics` series
/// ([`OpsStore::endpoint_series`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSample {
    /// The workspace's name.
    pub workspace: String,
    /// The endpoint's name.
    pub endpoint: String,
    /// The endpoint's id (names are not unique).
    pub endpoint_id: uuid::Uuid,
    /// Whether the endpoint's last check got a response with a status below 500; `None`
    /// before its first check.
    pub up: Option<bool>,
    /// The response time of the last check, in milliseconds; `None` without a response.
    pub response_time_ms: Option<u32>,
    /// Whether drift is open: the endpoint's health (the one before a running check) is
    /// `warning` or `breaking`, so its last check found changes that were not accepted.
    pub drift_open: bool,
}

/// What [`OpsStore::endpoint_series`] read: at most `limit` endpoints and how many exist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointSeries {
    /// The first endpoints by workspace name, endpoint name and id.
    pub samples: Vec<EndpointSample>,
    /// Every endpoint of every workspace (so `total - samples.len()` were left out).
    pub total: u64,
}

/// Operator reads and the online backup. Implemented by both adapters.
#[async_trait]
pub trait OpsStore: Send + Sync {
    /// Operator (`apidrift workspace list`): every workspace, oldest first (then by id).
    async fn list_workspaces(&self) -> Result<Vec<Workspace>, StoreError>;

    /// Operator (`GET /metrics`): endpoint counts per health and the pending outbox, read in
    /// one snapshot.
    async fn operator_gauges(&self) -> Result<OperatorGauges, StoreError>;

    /// Operator (`GET /metrics` with `[metrics] per_endpoint`): the figures of the first
    /// `limit` endpoints across every workspace, ordered by workspace name, endpoint name and
    /// id, and the number of endpoints, in one statement.
    async fn endpoint_series(&self, limit: u32) -> Result<EndpointSeries, StoreError>;

    /// Operator (`apidrift backup --to FILE`): writes a consistent copy of the whole database to
    /// `target`, which must not exist yet, while other connections keep reading and writing.
    /// The copy holds every transaction committed before the backup began. The default answers
    /// [`StoreError::Unsupported`]: only adapters that can copy themselves implement it
    /// (SQLite); PostgreSQL is backed up with its own tools (`pg_dump`).
    async fn backup_to(&self, target: &Path) -> Result<(), StoreError> {
        let _ = target;
        Err(StoreError::Unsupported(
            "this database is not backed up by apidrift: use the database's own tools".into(),
        ))
    }
}
