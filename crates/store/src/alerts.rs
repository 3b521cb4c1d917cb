//! Alerts, the delivery outbox and schedules (D11, D17, D18): the [`AlertStore`] trait that both
//! adapters implement (it is a supertrait of [`crate::Store`]), its row types, and
//! [`plan_alerts`], the pure D11 rule that [`crate::run::record_check_alerting`] applies inside
//! the check's transaction for every adapter.
//!
//! Work that several processes share (deliveries, due schedules) is *claimed* with a lease: a
//! claim marks rows with `lease_owner` and `lease_until`; a row whose lease expired is claimable
//! again, so work claimed by a process that died is picked up by another after the lease.
//! PostgreSQL claims with `FOR UPDATE SKIP LOCKED`; SQLite claims inside `BEGIN IMMEDIATE`.

use crate::{CheckRecording, NewCheck, NewDiff, RecordedCheck, StoreError};
use apidrift_model::{Cadence, Severity};
use async_trait::async_trait;
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

/// `drift.detected`.
pub const EVENT_DETECTED: &str = "drift.detected";
/// `drift.resolved`.
pub const EVENT_RESOLVED: &str = "drift.resolved";

/// `latency.slow`: an endpoint's checks exceeded its `maxResponseTimeMs` `slowAfter` times in a
/// row.
pub const EVENT_SLOW: &str = "latency.slow";
/// `latency.resolved`: the first fast check after a `latency.slow`.
pub const EVENT_FAST: &str = "latency.resolved";

/// What a webhook delivers to: the signed generic event, or a service's own message format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WebhookKind {
    /// The signed generic event (`Apidrift-Signature`).
    #[default]
    Generic,
    /// A Slack incoming webhook (its URL is the secret).
    Slack,
    /// A Discord webhook (its URL is the secret).
    Discord,
    /// PagerDuty Events API v2 (the secret is the routing key).
    Pagerduty,
}

impl WebhookKind {
    /// Every kind, in the order shown to users.
    pub const ALL: [WebhookKind; 4] = [
        WebhookKind::Generic,
        WebhookKind::Slack,
        WebhookKind::Discord,
        WebhookKind::Pagerduty,
    ];

    /// The stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookKind::Generic => "generic",
            WebhookKind::Slack => "slack",
            WebhookKind::Discord => "discord",
            WebhookKind::Pagerduty => "pagerduty",
        }
    }
}

impl std::fmt::Display for WebhookKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for WebhookKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WebhookKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown webhook kind {s:?}"))
    }
}

/// A webhook to create (its secret already sealed with `Field::WebhookSecret`, bound to `id`).
/// For `slack` and `discord` the sealed secret is the full URL and `url` a redacted form of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWebhook {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub kind: WebhookKind,
    pub url: String,
    pub min_severity: Severity,
    pub sealed_secret: Vec<u8>,
    pub created_at: OffsetDateTime,
}

/// A stored webhook (alert channel).
pub type StoredWebhook = NewWebhook;

/// What a check asks the store to alert about, decided against the endpoint's alert state in the
/// check's own transaction (see [`plan_alerts`]). Both bodies are complete JSON documents that
/// carry `event_id` as their `id`; the store keeps the one it needs, byte for byte.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertDraft {
    pub event_id: Uuid,
    pub created_at: OffsetDateTime,
    /// The fingerprint of this check's diff (its set of (path, type, severity)); `None` when the
    /// check found no change.
    pub fingerprint: Option<String>,
    /// The highest severity of the diff (`None` without a diff).
    pub max_severity: Option<Severity>,
    /// The `drift.detected` body (used when a new drift is alerted).
    pub detected_payload: String,
    /// The `drift.resolved` body (used when a return to baseline follows an alerted drift).
    pub resolved_payload: String,
    /// What the check says about latency (`None`: the endpoint's latency is not followed, as for
    /// a drift-only caller; the slow state is left as it is).
    pub latency: Option<LatencyDraft>,
}

/// The latency side of an [`AlertDraft`]: this check's response time against the endpoint's
/// threshold, and the two possible bodies (with their own event id).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyDraft {
    pub event_id: Uuid,
    /// The response time of a check that was up ([`crate::rules::is_up`]); `None` for a check
    /// without a response or with a 5xx, which neither counts as slow nor resolves.
    pub response_time: Option<u32>,
    /// The endpoint's `maxResponseTimeMs` (`None`: off, every response is fast).
    pub max_response_time_ms: Option<u32>,
    /// The endpoint's `slowAfter`.
    pub slow_after: u8,
    /// The `latency.slow` body.
    pub slow_payload: String,
    /// The `latency.resolved` body.
    pub fast_payload: String,
}

/// The latency episode of an endpoint: how many checks in a row were slow, and, while a
/// `latency.slow` is in force, the channels told (an empty list when none met their
/// `minSeverity`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlowState {
    pub streak: u32,
    pub alerted: Option<Vec<Uuid>>,
}

/// What [`plan_slow`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlowPlan {
    /// The event to queue (`kind`, body) and the channels to deliver it to (never empty).
    pub event: Option<(&'static str, String)>,
    pub webhook_ids: Vec<Uuid>,
    pub state: SlowState,
}

/// D26: the `slow` rule. A slow response (over `maxResponseTimeMs`) adds one to the streak; the
/// check that brings it to `slowAfter` opens an episode and sends `latency.slow` (severity
/// warning) to the channels whose `minSeverity` is at most warning; further slow checks send
/// nothing (once per episode). The first fast response ends the streak, and when an episode is
/// open sends `latency.resolved` to the channels that got the `latency.slow` and closes it. A
/// check without a response (or with a 5xx) changes nothing.
pub fn plan_slow(state: &SlowState, draft: &LatencyDraft, webhooks: &[StoredWebhook]) -> SlowPlan {
    let quiet = |state: SlowState| SlowPlan {
        event: None,
        webhook_ids: Vec::new(),
        state,
    };
    let Some(ms) = draft.response_time else {
        return quiet(state.clone());
    };
    let slow = draft.max_response_time_ms.is_some_and(|max| ms > max);
    if slow {
        let streak = state.streak.saturating_add(1);
        if state.alerted.is_some() || streak < u32::from(draft.slow_after.max(1)) {
            return quiet(SlowState {
                streak,
                alerted: state.alerted.clone(),
            });
        }
        let targets: Vec<Uuid> = webhooks
            .iter()
            .filter(|w| Severity::Warning >= w.min_severity)
            .map(|w| w.id)
            .collect();
        return SlowPlan {
            event: (!targets.is_empty()).then(|| (EVENT_SLOW, draft.slow_payload.clone())),
            webhook_ids: targets.clone(),
            state: SlowState {
                streak,
                alerted: Some(targets),
            },
        };
    }
    let Some(told) = &state.alerted else {
        return quiet(SlowState::default());
    };
    let targets: Vec<Uuid> = told
        .iter()
        .copied()
        .filter(|id| webhooks.iter().any(|w| w.id == *id))
        .collect();
    SlowPlan {
        event: (!targets.is_empty()).then(|| (EVENT_FAST, draft.fast_payload.clone())),
        webhook_ids: targets,
        state: SlowState::default(),
    }
}

/// The alert state of one endpoint: the drift in force and who was told, and its latency
/// episode ([`plan_slow`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlertState {
    pub fingerprint: Option<String>,
    pub webhook_ids: Vec<Uuid>,
    pub slow: SlowState,
}

/// What [`plan_alerts`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertPlan {
    /// The event to queue (`kind`, body) and the channels to deliver it to (never empty).
    pub event: Option<(&'static str, String)>,
    pub webhook_ids: Vec<Uuid>,
    /// The endpoint's state after this check.
    pub state: AlertState,
}

/// D11 (the latency episode in `state.slow` is kept as it is; [`plan_slow`] decides it): a diff
/// alerts the channels whose `minSeverity` it meets, only when its fingerprint
/// differs from the drift already alerted; a check without changes after an alerted drift sends
/// `drift.resolved` to the channels that got the drift (whatever their `minSeverity`) and clears
/// the state, so a later drift is new.
pub fn plan_alerts(
    state: &AlertState,
    draft: &AlertDraft,
    webhooks: &[StoredWebhook],
) -> AlertPlan {
    match &draft.fingerprint {
        Some(fp) => {
            if state.fingerprint.as_deref() == Some(fp.as_str()) {
                return AlertPlan {
                    event: None,
                    webhook_ids: Vec::new(),
                    state: state.clone(),
                };
            }
            let targets: Vec<Uuid> = webhooks
                .iter()
                .filter(|w| draft.max_severity.is_some_and(|s| s >= w.min_severity))
                .map(|w| w.id)
                .collect();
            let mut told = if state.fingerprint.is_some() {
                state.webhook_ids.clone()
            } else {
                Vec::new()
            };
            for id in &targets {
                if !told.contains(id) {
                    told.push(*id);
                }
            }
            AlertPlan {
                event: (!targets.is_empty())
                    .then(|| (EVENT_DETECTED, draft.detected_payload.clone())),
                webhook_ids: targets,
                state: AlertState {
                    fingerprint: Some(fp.clone()),
                    webhook_ids: told,
                    slow: state.slow.clone(),
                },
            }
        }
        None => {
            let cleared = AlertState {
                slow: state.slow.clone(),
                ..AlertState::default()
            };
            if state.fingerprint.is_none() {
                return AlertPlan {
                    event: None,
                    webhook_ids: Vec::new(),
                    state: cleared,
                };
            }
            let targets: Vec<Uuid> = state
                .webhook_ids
                .iter()
                .copied()
                .filter(|id| webhooks.iter().any(|w| w.id == *id))
                .collect();
            AlertPlan {
                event: (!targets.is_empty())
                    .then(|| (EVENT_RESOLVED, draft.resolved_payload.clone())),
                webhook_ids: targets,
                state: cleared,
            }
        }
    }
}

/// Comma-separated ids (the `alert_state.webhook_ids` column).
pub fn ids_to_text(ids: &[Uuid]) -> String {
    ids.iter()
        .map(Uuid::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The inverse of [`ids_to_text`].
pub fn ids_from_text(text: &str) -> Result<Vec<Uuid>, StoreError> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| Uuid::parse_str(s).map_err(|e| StoreError::corrupt("alert_state.webhook_ids", e)))
        .collect()
}

/// A delivery claimed by a worker, with what it needs to send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub event_id: Uuid,
    pub webhook_id: Uuid,
    pub kind: WebhookKind,
    pub url: String,
    pub sealed_secret: Vec<u8>,
    pub payload: String,
    /// Attempts made before this one.
    pub attempts: u32,
    pub created_at: OffsetDateTime,
}

/// One recorded delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryAttempt {
    pub id: Uuid,
    pub attempted_at: OffsetDateTime,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u32,
}

/// What happens to a delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// A 2xx answer: done.
    Delivered,
    /// Try again at this time.
    Retry(OffsetDateTime),
    /// Retries exhausted (24 h): given up.
    Failed,
}

/// Deliveries per state, for operations and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryCounts {
    pub pending: u64,
    pub delivered: u64,
    pub failed: u64,
    pub attempts: u64,
}

/// A schedule row to create (see [`AlertStore::unscheduled_endpoints`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    pub workspace_id: Uuid,
    pub endpoint_id: Uuid,
    pub cadence: Cadence,
    pub next_run_at: OffsetDateTime,
}

/// A due schedule claimed by a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedSchedule {
    pub workspace_id: Uuid,
    pub endpoint_id: Uuid,
    pub cadence: Cadence,
    /// When it was due (the lag is `started - next_run_at`).
    pub next_run_at: OffsetDateTime,
}

/// The end of a scheduled run that records a check, computed above the store (the next slot,
/// D17) and written by [`AlertStore::record_check_run`] in the check's own transaction: the
/// schedule moves to `next_run_at`, counts the run, keeps [`checked_outcome`] as its last outcome
/// and releases the lease. Check and finish commit together or not at all, so a process killed
/// in between can no longer leave a recorded check whose slot runs (and takes a quota unit)
/// again after the lease (issue 23).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleFinish {
    /// The lease owner of the claim: when another owner holds the lease (this one's expired and
    /// was claimed again), the check is still recorded and the schedule is left alone.
    pub owner: String,
    pub next_run_at: OffsetDateTime,
    /// The finish time (`last_run_at`).
    pub now: OffsetDateTime,
}

/// `last_outcome` of a scheduled run that recorded its check.
pub fn checked_outcome(changes: u32, alerts_sent: u32) -> String {
    format!("checked: {changes} changes, {alerts_sent} alerts queued")
}

/// Alerts, outbox and schedules. Implemented by both adapters; a supertrait of [`crate::Store`].
#[async_trait]
pub trait AlertStore: Send + Sync {
    // ---------------------------------------------------------------- webhooks

    /// Stores a webhook. [`StoreError::NotFound`] when the workspace does not exist.
    async fn create_webhook(&self, new: NewWebhook) -> Result<StoredWebhook, StoreError>;

    /// Every webhook of a workspace, oldest first.
    async fn list_webhooks(&self, workspace_id: Uuid) -> Result<Vec<StoredWebhook>, StoreError>;

    /// Removes a webhook and its pending deliveries. [`StoreError::NotFound`] when missing.
    async fn delete_webhook(&self, workspace_id: Uuid, webhook_id: Uuid) -> Result<(), StoreError>;

    // ---------------------------------------------------------------- checks with alerts

    /// [`crate::Store::record_check`] plus D11 in the SAME transaction: reads the endpoint's
    /// alert state and webhooks, applies [`plan_alerts`], writes the event and one delivery per
    /// channel, and the new state. Returns the recorded check and the deliveries queued.
    async fn record_check_alerting(
        &self,
        workspace_id: Uuid,
        check: NewCheck,
        diff: Option<NewDiff>,
        draft: AlertDraft,
    ) -> Result<(RecordedCheck, u32), StoreError>;

    /// A whole check in ONE transaction: [`AlertStore::record_check_alerting`] plus one unit of
    /// the monthly quota of `check.finished_at`'s month (as [`crate::Store::consume_check_unit`]
    /// takes it). When the quota is used up by then, nothing at all is written and the answer is
    /// [`CheckRecording::QuotaExhausted`]. The check's claim mark (health `checking`, set by
    /// [`AlertStore::claim_schedules`]) is replaced by the health the check derives.
    ///
    /// With `finish` (a scheduled run), the same transaction also ends the run as
    /// [`AlertStore::finish_schedule`] would (`runs + 1`, outcome [`checked_outcome`], lease
    /// released) when `finish.owner` still holds the lease; the answer says whether it did
    /// (`schedule_finished`). A refusal writes neither; the caller then finishes the run as
    /// skipped with [`AlertStore::finish_schedule`], as it does every run that records nothing.
    ///
    /// Adapters open the transaction and run [`crate::run::record_check_run`] in it: the steps
    /// and their rules are written once.
    async fn record_check_run(
        &self,
        workspace_id: Uuid,
        check: NewCheck,
        diff: Option<NewDiff>,
        draft: AlertDraft,
        finish: Option<ScheduleFinish>,
    ) -> Result<CheckRecording, StoreError>;

    // ---------------------------------------------------------------- deliveries

    /// Claims up to `limit` pending deliveries due at `now` whose lease is free or expired,
    /// leasing them to `owner` until `now + lease`.
    async fn claim_deliveries(
        &self,
        owner: &str,
        now: OffsetDateTime,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError>;

    /// Records an attempt and the delivery's new state in one transaction, releasing the lease.
    /// Returns false when `owner` no longer holds the lease (nothing written).
    async fn finish_delivery(
        &self,
        delivery_id: Uuid,
        owner: &str,
        attempt: DeliveryAttempt,
        outcome: DeliveryOutcome,
    ) -> Result<bool, StoreError>;

    /// Deliveries per state and attempts recorded, in a workspace.
    async fn delivery_counts(&self, workspace_id: Uuid) -> Result<DeliveryCounts, StoreError>;

    // ---------------------------------------------------------------- schedules

    /// Endpoints with a `schedule` but no schedule row (new ones), at most `limit`; schedule rows
    /// whose endpoint no longer has a schedule are deleted on the way.
    async fn unscheduled_endpoints(
        &self,
        limit: u32,
    ) -> Result<Vec<(Uuid, Uuid, Cadence)>, StoreError>;

    /// Creates schedule rows (an existing row is kept).
    async fn insert_schedules(&self, rows: Vec<NewSchedule>) -> Result<u64, StoreError>;

    /// Claims up to `limit` schedules due at `now` (lease free or expired), leasing them to
    /// `owner` until `now + lease`, in one statement (PostgreSQL: `FOR UPDATE SKIP LOCKED`). The
    /// same transaction marks the claimed endpoints that are not paused as in flight (D7, D19):
    /// health `checking` until the lease ends, the health before it kept (as
    /// [`crate::LifecycleStore::begin_checking`] does), so the run itself writes no mark.
    async fn claim_schedules(
        &self,
        owner: &str,
        now: OffsetDateTime,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedSchedule>, StoreError>;

    /// Ends a claimed run: sets the next run, the outcome (`skipped` counts a run that did not
    /// check, e.g. quota exhausted), releases the lease, and gives the endpoint back the health
    /// it had before the claim when it is still `checking` (a run that recorded nothing). False
    /// when `owner` lost the lease (nothing written).
    async fn finish_schedule(
        &self,
        endpoint_id: Uuid,
        owner: &str,
        next_run_at: OffsetDateTime,
        outcome: &str,
        skipped: bool,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError>;

    /// The heartbeat of runs in flight: moves the leases `owner` still holds on the schedules of
    /// `endpoint_ids` to `until` (never earlier), and the `checking` marks of those endpoints with
    /// them, so a run that outlives its first lease is not claimed again by another worker while
    /// its own is alive. A lease another owner took is left alone. Returns how many were
    /// extended.
    async fn extend_schedule_leases(
        &self,
        owner: &str,
        endpoint_ids: &[Uuid],
        until: OffsetDateTime,
    ) -> Result<u64, StoreError>;

    /// Releases every lease `owner` holds (graceful shutdown): the work is claimable at once.
    async fn release_leases(&self, owner: &str) -> Result<u64, StoreError>;

    /// One schedule's figures: (next run, runs, skipped, last outcome).
    async fn schedule_of(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<ScheduleInfo>, StoreError>;
}

/// A schedule's state, for the API and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleInfo {
    pub cadence: Cadence,
    pub next_run_at: OffsetDateTime,
    pub last_run_at: Option<OffsetDateTime>,
    pub last_outcome: Option<String>,
    pub runs: u64,
    pub skipped: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(min: Severity) -> StoredWebhook {
        NewWebhook {
            kind: crate::WebhookKind::Generic,
            id: Uuid::now_v7(),
            workspace_id: Uuid::nil(),
            url: "https://example.com/h".into(),
            min_severity: min,
            sealed_secret: vec![1],
            created_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn draft(fp: Option<&str>, sev: Option<Severity>) -> AlertDraft {
        AlertDraft {
            event_id: Uuid::now_v7(),
            created_at: OffsetDateTime::UNIX_EPOCH,
            fingerprint: fp.map(str::to_owned),
            max_severity: sev,
            detected_payload: "D".into(),
            resolved_payload: "R".into(),
            latency: None,
        }
    }

    fn latency(ms: Option<u32>) -> LatencyDraft {
        LatencyDraft {
            event_id: Uuid::now_v7(),
            response_time: ms,
            max_response_time_ms: Some(500),
            slow_after: 3,
            slow_payload: "S".into(),
            fast_payload: "F".into(),
        }
    }

    #[test]
    fn slow_alerts_once_per_episode_and_resolves_at_the_first_fast_check() {
        let hooks = vec![hook(Severity::Warning), hook(Severity::Breaking)];
        let mut state = SlowState::default();
        // Two slow checks: counted, nothing sent.
        for n in 1..=2 {
            let p = plan_slow(&state, &latency(Some(900)), &hooks);
            assert_eq!(p.event, None);
            assert_eq!(p.state.streak, n);
            state = p.state;
        }
        // The third: `latency.slow` to the channels that take warnings.
        let p = plan_slow(&state, &latency(Some(501)), &hooks);
        assert_eq!(p.event, Some((EVENT_SLOW, "S".to_owned())));
        assert_eq!(p.webhook_ids, vec![hooks[0].id]);
        state = p.state;
        // Still slow: once per episode.
        let p = plan_slow(&state, &latency(Some(900)), &hooks);
        assert_eq!(p.event, None);
        state = p.state;
        // No response (or a 5xx): neither slow nor fast.
        let p = plan_slow(&state, &latency(None), &hooks);
        assert_eq!((p.event.clone(), &p.state), (None, &state));
        // The threshold itself is fast: resolved, to those told.
        let p = plan_slow(&state, &latency(Some(500)), &hooks);
        assert_eq!(p.event, Some((EVENT_FAST, "F".to_owned())));
        assert_eq!(p.webhook_ids, vec![hooks[0].id]);
        assert_eq!(p.state, SlowState::default());
        // Fast again: nothing.
        let p = plan_slow(&p.state, &latency(Some(10)), &hooks);
        assert_eq!(p.event, None);
    }

    #[test]
    fn a_fast_check_breaks_the_streak_and_no_threshold_is_never_slow() {
        let hooks = vec![hook(Severity::Info)];
        let mut state = SlowState::default();
        for ms in [900, 900, 100, 900, 900] {
            let p = plan_slow(&state, &latency(Some(ms)), &hooks);
            assert_eq!(p.event, None, "{ms}");
            state = p.state;
        }
        assert_eq!(state.streak, 2);
        let mut off = latency(Some(60_000));
        off.max_response_time_ms = None;
        let p = plan_slow(&SlowState::default(), &off, &hooks);
        assert_eq!((p.event, p.state), (None, SlowState::default()));
        // slowAfter 1: the first slow check alerts.
        let mut one = latency(Some(900));
        one.slow_after = 1;
        let p = plan_slow(&SlowState::default(), &one, &hooks);
        assert_eq!(p.event, Some((EVENT_SLOW, "S".to_owned())));
    }

    #[test]
    fn slow_episode_without_warning_channels_sends_no_resolve() {
        let hooks = vec![hook(Severity::Breaking)];
        let mut state = SlowState::default();
        for _ in 0..3 {
            let p = plan_slow(&state, &latency(Some(900)), &hooks);
            assert_eq!(p.event, None);
            state = p.state;
        }
        assert_eq!(state.alerted, Some(Vec::new()));
        let p = plan_slow(&state, &latency(Some(1)), &hooks);
        assert_eq!((p.event, p.state), (None, SlowState::default()));
    }

    #[test]
    fn drift_rules_keep_the_latency_episode() {
        let slow = SlowState {
            streak: 4,
            alerted: Some(vec![Uuid::nil()]),
        };
        let state = AlertState {
            slow: slow.clone(),
            ..AlertState::default()
        };
        let hooks = vec![hook(Severity::Info)];
        let p = plan_alerts(&state, &draft(Some("a"), Some(Severity::Info)), &hooks);
        assert_eq!(p.state.slow, slow);
        let r = plan_alerts(&p.state, &draft(None, None), &hooks);
        assert_eq!(r.state.slow, slow);
    }

    #[test]
    fn drift_alerts_once_then_resolves_then_alerts_again() {
        let hooks = vec![hook(Severity::Warning), hook(Severity::Breaking)];
        let s0 = AlertState::default();
        let p1 = plan_alerts(&s0, &draft(Some("a"), Some(Severity::Warning)), &hooks);
        assert_eq!(p1.event, Some((EVENT_DETECTED, "D".to_owned())));
        assert_eq!(p1.webhook_ids, vec![hooks[0].id]);
        // Same drift again: nothing.
        let p2 = plan_alerts(
            &p1.state,
            &draft(Some("a"), Some(Severity::Warning)),
            &hooks,
        );
        assert_eq!(p2.event, None);
        assert_eq!(p2.state, p1.state);
        // A different drift reaching breaking: both channels, state remembers both.
        let p3 = plan_alerts(
            &p2.state,
            &draft(Some("b"), Some(Severity::Breaking)),
            &hooks,
        );
        assert_eq!(p3.webhook_ids.len(), 2);
        // Back to baseline: resolved to the channels that got the drift.
        let p4 = plan_alerts(&p3.state, &draft(None, None), &hooks);
        assert_eq!(p4.event, Some((EVENT_RESOLVED, "R".to_owned())));
        assert_eq!(p4.webhook_ids.len(), 2);
        assert_eq!(p4.state, AlertState::default());
        // Clean again: nothing. Then the first drift is new again.
        let p5 = plan_alerts(&p4.state, &draft(None, None), &hooks);
        assert_eq!(p5.event, None);
        let p6 = plan_alerts(
            &p5.state,
            &draft(Some("a"), Some(Severity::Warning)),
            &hooks,
        );
        assert_eq!(p6.event, Some((EVENT_DETECTED, "D".to_owned())));
    }

    #[test]
    fn below_min_severity_tracks_drift_without_alerting() {
        let hooks = vec![hook(Severity::Breaking)];
        let p = plan_alerts(
            &AlertState::default(),
            &draft(Some("a"), Some(Severity::Info)),
            &hooks,
        );
        assert_eq!(p.event, None);
        assert_eq!(p.state.fingerprint.as_deref(), Some("a"));
        // Nobody was told, so recovery tells nobody.
        let r = plan_alerts(&p.state, &draft(None, None), &hooks);
        assert_eq!(r.event, None);
    }

    #[test]
    fn deleted_channel_gets_no_resolution() {
        let hooks = vec![hook(Severity::Info)];
        let p = plan_alerts(
            &AlertState::default(),
            &draft(Some("a"), Some(Severity::Info)),
            &hooks,
        );
        let r = plan_alerts(&p.state, &draft(None, None), &[]);
        assert_eq!(r.event, None);
    }

    #[test]
    fn ids_round_trip() -> Result<(), Box<dyn std::error::Error>> {
        let ids = vec![Uuid::now_v7(), Uuid::now_v7()];
        assert_eq!(ids_from_text(&ids_to_text(&ids))?, ids);
        assert!(ids_from_text("")?.is_empty());
        assert!(ids_from_text("nope").is_err());
        Ok(())
    }
}
