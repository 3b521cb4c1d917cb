//! Baselines, checks, accepting diffs and response contracts (D7, D8, D10, D12, D13) through the
//! process's one [`crate::Monitor`].
//!
//! Without a sealing key the pipeline cannot open stored credentials: these use cases then answer
//! 404 for a row that does not exist and [`ServiceError::NoKey`] (503) otherwise, in that order
//! (D4). A fetch that fails is never a server error: a check records it as a `status_changed`
//! change, a capture answers [`ServiceError::Invalid`] naming the cause.

use super::actions::{Action, Actor};
use super::base::Service;
use super::error::ServiceError;
pub use apidrift_diff::{ChangeGroup, group_changes};
use apidrift_model::{DiffChange, DiffSummary};
use apidrift_monitor::MAX_SAMPLES;
use apidrift_monitor::contracts::contract_ref_from_openapi;
use apidrift_monitor::{CheckOutcome, Monitor};
use apidrift_store::{ResponseContract, StoreError};
use serde::Serialize;
use uuid::Uuid;

/// 201 body of `POST /v1/endpoints/{id}/baseline` (D13).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BaselineCaptured {
    /// 1 for the first capture, then + 1.
    pub baseline_version: u32,
    /// RFC 3339, milliseconds, `Z`.
    pub captured_at: String,
    /// The captured HTTP status.
    pub status: u16,
    /// How many samples were taken (the request's `samples`, default 1).
    pub samples: u8,
    /// Leaf paths whose values differed between the samples, ignored by full-mode checks until
    /// the next capture; always present (`[]` from one sample).
    pub volatile_paths: Vec<String>,
}

/// 200 body of an accept.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    /// The diff, now `accepted: true`.
    pub diff: DiffSummary,
    /// The endpoint's active baseline version after the accept (`null` when none exists).
    pub baseline_version: Option<u32>,
    /// True when this request accepted it (false: it was already accepted).
    pub newly_accepted: bool,
    /// True when the endpoint's health was set `healthy` (it was the latest diff).
    pub health_reset: bool,
}

impl Service {
    /// The pipeline for endpoint `id`: 404 before 503 when no key is configured.
    async fn monitor_for_endpoint(&self, ws: Uuid, id: Uuid) -> Result<&Monitor, ServiceError> {
        match &self.monitor {
            Some(m) => Ok(m),
            None => {
                self.store
                    .get_endpoint(ws, id)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("endpoint", id))?;
                Err(ServiceError::NoKey(
                    ", so stored credentials cannot be opened",
                ))
            }
        }
    }

    /// Captures a baseline now from one sample (D8, D13): uses no quota.
    pub async fn capture_baseline(
        &self,
        actor: &Actor,
        id: Uuid,
    ) -> Result<BaselineCaptured, ServiceError> {
        self.capture_baseline_sampled(actor, id, 1).await
    }

    /// Captures a baseline now from `samples` responses (D20: 1 to [`MAX_SAMPLES`], the
    /// monitor's sample interval apart), learning the volatile leaf paths. Uses no quota,
    /// whatever the number of samples. Samples that differ in status or shape are
    /// [`ServiceError::Invalid`] naming the sample and the path.
    pub async fn capture_baseline_sampled(
        &self,
        actor: &Actor,
        id: Uuid,
        samples: u8,
    ) -> Result<BaselineCaptured, ServiceError> {
        actor.may(Action::CaptureBaselines)?;
        let ws = actor.workspace();
        if !(1..=MAX_SAMPLES).contains(&samples) {
            return Err(ServiceError::Invalid(format!(
                "samples: must be an integer from 1 to {MAX_SAMPLES}"
            )));
        }
        let baseline = self
            .monitor_for_endpoint(ws, id)
            .await?
            .capture_baseline_sampled(ws, id, samples)
            .await
            .map_err(|e| ServiceError::from_monitor(e, "endpoint", id))?;
        let captured_at = apidrift_model::timestamp::format(baseline.captured_at)
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        Ok(BaselineCaptured {
            baseline_version: baseline.version,
            captured_at,
            status: baseline.status,
            samples,
            volatile_paths: baseline.volatile_paths,
        })
    }

    /// Runs a check now (D7, D8): needs a baseline and one unit of the monthly quota.
    pub async fn run_check(&self, actor: &Actor, id: Uuid) -> Result<CheckOutcome, ServiceError> {
        actor.may(Action::RunChecks)?;
        let ws = actor.workspace();
        self.monitor_for_endpoint(ws, id)
            .await?
            .run_check(ws, id)
            .await
            .map_err(|e| ServiceError::from_monitor(e, "endpoint", id))
    }

    /// Accepts diff `id` (D12): promotes the response of the check that found it to a new
    /// baseline and resets health when it was the endpoint's latest diff. Idempotent.
    pub async fn accept_diff(&self, actor: &Actor, id: Uuid) -> Result<Accepted, ServiceError> {
        actor.may(Action::AcceptDiffs)?;
        let ws = actor.workspace();
        let Some(monitor) = &self.monitor else {
            self.store
                .get_diff(ws, id)
                .await?
                .ok_or_else(|| ServiceError::not_found("diff", id))?;
            return Err(ServiceError::NoKey(", so the response cannot be promoted"));
        };
        let (detail, outcome) = monitor
            .accept_diff(ws, id)
            .await
            .map_err(|e| ServiceError::from_monitor(e, "diff", id))?;
        let mut diff = detail.base;
        diff.accepted = true;
        let baseline_version = match &outcome.baseline {
            Some(b) => Some(b.version),
            None => match diff.endpoint_id {
                Some(ep) => self
                    .store
                    .get_endpoint(ws, ep)
                    .await?
                    .and_then(|e| e.baseline_version),
                None => None,
            },
        };
        Ok(Accepted {
            diff,
            baseline_version,
            newly_accepted: outcome.newly_accepted,
            health_reset: outcome.health_reset,
        })
    }

    /// Attaches a response contract (D10) built from an OpenAPI document (JSON or YAML): the
    /// operation's schema for `status`, or for its first 2xx. Needs no key.
    pub async fn attach_contract(
        &self,
        ws: Uuid,
        id: Uuid,
        document: &str,
        operation: &str,
        status: Option<u16>,
    ) -> Result<ResponseContract, ServiceError> {
        // A reference into the schemas the response reaches, stored once per content.
        let (contract, set) = contract_ref_from_openapi(document, operation, status)
            .map_err(|e| ServiceError::Invalid(e.to_string()))?;
        self.store
            .set_contract_in_set(ws, id, contract.clone(), set, self.now())
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found("endpoint", id),
                other => other.into(),
            })?;
        Ok(contract)
    }

    /// Removes the endpoint's response contract.
    pub async fn detach_contract(&self, ws: Uuid, id: Uuid) -> Result<(), ServiceError> {
        self.set_contract(ws, id, None).await
    }

    async fn set_contract(
        &self,
        ws: Uuid,
        id: Uuid,
        contract: Option<ResponseContract>,
    ) -> Result<(), ServiceError> {
        self.store
            .set_contract(ws, id, contract, self.now())
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found("endpoint", id),
                other => other.into(),
            })
    }

    /// The volatile leaf paths learned by the active baseline of endpoint `id` (empty without a
    /// baseline, or from a one-sample capture); 404 for an unknown endpoint.
    pub async fn volatile_paths(
        &self,
        actor: &Actor,
        id: Uuid,
    ) -> Result<Vec<String>, ServiceError> {
        actor.may(Action::ReadEndpoints)?;
        let ws = actor.workspace();
        self.endpoint(ws, id).await?;
        Ok(self
            .store
            .active_baseline(ws, id)
            .await?
            .map(|b| b.volatile_paths)
            .unwrap_or_default())
    }

    /// Changes that share a normalised path and a type, as one group each (for people: the
    /// console's diff page). The wire form stays one change per path.
    pub fn group_changes(&self, changes: &[DiffChange]) -> Vec<ChangeGroup> {
        apidrift_diff::group_changes(changes)
    }

    /// Operator: the workspace of endpoint `id`, for CLI commands that name only the endpoint.
    pub async fn endpoint_workspace(&self, id: Uuid) -> Result<Uuid, ServiceError> {
        self.store
            .endpoint_workspace(id)
            .await?
            .ok_or_else(|| ServiceError::not_found("endpoint", id))
    }
}
