//! One check's transaction, written once: [`record_check`], [`record_check_alerting`] and
//! [`record_check_run`] drive the few primitives of [`CheckTx`] that each adapter implements on
//! the connection of its open transaction. The rules live here and in [`crate::rules`]: the
//! figures and health of a check, the alert plan (D11, [`crate::plan_alerts`]) and its
//! bookkeeping, the quota decision (the adapter only adds a unit *below a limit it is given*,
//! atomically) and the finish of a scheduled run. An adapter stores and fetches; it decides
//! nothing, so the two backends cannot disagree on a rule.
//!
//! The order of the steps is the one the PostgreSQL lock order needs (schedule row, then the
//! endpoint row, both taken first by [`CheckTx::prefetch`], the workspace's usage row last so
//! its lock is held only until the commit); a
//! refusal for want of a quota unit is an error of the transaction ([`QuotaRefused`]), so
//! everything written before it rolls back.

use crate::{AlertDraft, QuotaOutcome};
use crate::{
    AlertState, CheckRecording, DiffCounts, DiffSeen, NewCheck, NewDiff, OpenDiff, RecordedCheck,
    ScheduleFinish, StoreError, StoredCheck, StoredWebhook, checked_outcome, month_key,
    plan_alerts, plan_slow, rules,
};
use apidrift_model::Health;
use async_trait::async_trait;
use std::future::Future;
use std::task::{Context, Poll, Waker};
use time::OffsetDateTime;
use uuid::Uuid;

/// A check that found the month's quota used up when it came to take its unit. It is an error of
/// the transaction (the adapter's `From<QuotaRefused>` makes it one), so the transaction rolls
/// back; the adapter then answers [`CheckRecording::QuotaExhausted`] with these figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaRefused {
    pub used: u64,
    pub quota: u32,
}

/// An outbox event to write with its deliveries (the event of an [`crate::AlertPlan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboxEvent<'a> {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    /// `drift.detected`, `drift.resolved`, `latency.slow` or `latency.resolved`.
    pub kind: &'static str,
    /// The JSON body, kept byte for byte.
    pub payload: &'a str,
    pub created_at: OffsetDateTime,
}

/// The primitives of one check's transaction. Each adapter implements them on the connection of
/// a transaction it opened (SQLite: a write of its writer; PostgreSQL: a transaction retried
/// whole on a conflict); every method filters on the workspace id. None of them applies a rule:
/// the values to write come from the callers in this module.
#[async_trait]
pub trait CheckTx: Send {
    /// The adapter's error inside the transaction. Any `Err` rolls the transaction back.
    type Error: From<StoreError> + From<QuotaRefused> + Send;

    /// The first step of [`record_check_run`]: takes at once the locks of the steps to come, in
    /// their order (the schedule row while `owner` holds its lease, then the endpoint row), and
    /// may read ahead what they will ask (the open diff, the alert state, the webhooks, the
    /// quota, whether `baseline_id` is the endpoint's), so that an adapter answers those reads
    /// from memory and sends the writes together when the unit is taken (PostgreSQL: a few
    /// round trips instead of one per step). It decides nothing. The default does nothing: each
    /// step locks and reads for itself (SQLite, whose writer runs one write at a time).
    async fn prefetch(
        &mut self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        owner: Option<&str>,
        baseline_id: Option<Uuid>,
    ) -> Result<(), Self::Error> {
        let _ = (workspace_id, endpoint_id, owner, baseline_id);
        Ok(())
    }

    /// Whether `owner` holds the lease of the endpoint's schedule row, locking the row when it
    /// does (PostgreSQL: before any endpoint row, the order of a claim).
    async fn hold_schedule(
        &mut self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        owner: &str,
    ) -> Result<bool, Self::Error>;

    /// The endpoint's open diff (not accepted, not closed), the newest when several are, with
    /// its fingerprint. Locks the endpoint row first (PostgreSQL: the lock that
    /// [`CheckTx::insert_check`] takes, so two checks of one endpoint decide one after the
    /// other).
    async fn open_diff(
        &mut self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<OpenDiff>, Self::Error>;

    /// Closes every open diff of the endpoint (`closed_at` = `at`): a clean check resolved the
    /// drift, or a different one replaced it.
    async fn close_diffs(
        &mut self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        at: OffsetDateTime,
    ) -> Result<(), Self::Error>;

    /// Links the check `check_id` to the diff `diff_id` (the check's `diff_id`) and counts it:
    /// the diff's `last_seen_at` = `at`, `seen_count` + 1. Returns the diff's figures after it.
    /// [`StoreError::NotFound`] when the diff is not the workspace's.
    async fn touch_diff(
        &mut self,
        workspace_id: Uuid,
        diff_id: Uuid,
        check_id: Uuid,
        at: OffsetDateTime,
    ) -> Result<DiffSeen, Self::Error>;

    /// Writes the check row, its diff (with `counts`, not accepted, first and last seen at its
    /// creation, seen once) and the endpoint's latest figures: `health`, the breaking and
    /// warning counts, `last_checked_at` = `finished_at` and `response_time`. Locks the endpoint row first. [`StoreError::NotFound`] when the endpoint,
    /// or the diff's baseline, is not the workspace's.
    async fn insert_check(
        &mut self,
        workspace_id: Uuid,
        check: &NewCheck,
        diff: Option<&NewDiff>,
        counts: DiffCounts,
        health: Health,
    ) -> Result<StoredCheck, Self::Error>;

    /// The endpoint's alert state (the default when it has none).
    async fn alert_state(
        &mut self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<AlertState, Self::Error>;

    /// Every webhook of the workspace, oldest first.
    async fn webhooks(&mut self, workspace_id: Uuid) -> Result<Vec<StoredWebhook>, Self::Error>;

    /// Writes `event` and one pending delivery to each of `webhook_ids`, due at the event's
    /// creation. Returns how many deliveries were queued.
    async fn queue_event(
        &mut self,
        workspace_id: Uuid,
        event: OutboxEvent<'_>,
        webhook_ids: &[Uuid],
    ) -> Result<u32, Self::Error>;

    /// Writes the endpoint's alert state (inserted or replaced), stamped `at`.
    async fn put_alert_state(
        &mut self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        state: &AlertState,
        at: OffsetDateTime,
    ) -> Result<(), Self::Error>;

    /// The workspace's monthly check quota (`None`: unlimited). [`StoreError::NotFound`] when the
    /// workspace is missing.
    async fn check_quota(&mut self, workspace_id: Uuid) -> Result<Option<u32>, Self::Error>;

    /// The atomic primitive of the quota: adds one unit to the usage of `month` only while it is
    /// below `limit` (always when `None`), in one statement, and returns the usage after it;
    /// `None` when the usage had reached the limit (nothing written). Exact under concurrency.
    async fn take_unit(
        &mut self,
        workspace_id: Uuid,
        month: &str,
        limit: Option<u32>,
    ) -> Result<Option<u64>, Self::Error>;

    /// Units used in `month`.
    async fn units_used(&mut self, workspace_id: Uuid, month: &str) -> Result<u64, Self::Error>;

    /// Ends a scheduled run that recorded its check, while `finish.owner` holds the lease: the
    /// next run, `last_run_at`, `outcome`, one run more, the lease released. The endpoint is not
    /// touched (the check set its health). Whether a row was written.
    async fn finish_recorded(
        &mut self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        finish: &ScheduleFinish,
        outcome: &str,
    ) -> Result<bool, Self::Error>;
}

/// The quota decision: the outcome of taking a unit below `limit`, `taken` being what the atomic
/// primitive answered ([`CheckTx::take_unit`], [`crate::Store::take_check_unit`]) and `used` the
/// usage read after a refusal (ignored when a unit was taken).
pub fn quota_outcome(
    limit: Option<u32>,
    taken: Option<u64>,
    used: u64,
) -> Result<QuotaOutcome, StoreError> {
    match (taken, limit) {
        (Some(used), quota) => Ok(QuotaOutcome::Consumed { used, quota }),
        (None, Some(quota)) => Ok(QuotaOutcome::Exhausted { used, quota }),
        (None, None) => Err(StoreError::Database(
            "an unlimited quota refused a unit".into(),
        )),
    }
}

/// Takes one unit of the quota of `at`'s month under the workspace's own quota, read in the same
/// transaction: [`QuotaRefused`] when none is left.
pub async fn take_check_unit<T: CheckTx + ?Sized>(
    tx: &mut T,
    workspace_id: Uuid,
    at: OffsetDateTime,
) -> Result<u64, T::Error> {
    let limit = tx.check_quota(workspace_id).await?;
    let month = month_key(at);
    if let Some(used) = tx.take_unit(workspace_id, &month, limit).await? {
        return Ok(used);
    }
    let used = tx.units_used(workspace_id, &month).await?;
    match quota_outcome(limit, None, used)? {
        QuotaOutcome::Exhausted { used, quota } => Err(QuotaRefused { used, quota }.into()),
        // `quota_outcome` answers `Consumed` only for a unit taken, and none was.
        QuotaOutcome::Consumed { .. } => {
            Err(StoreError::Database("no unit was taken".into()).into())
        }
    }
}

/// [`crate::Store::record_check`]: the check, its diff and the endpoint's figures, with the
/// counts and health of [`rules::check_figures`].
///
/// D26, one open drift per fingerprint: a diff whose fingerprint is the endpoint's open diff's
/// ([`rules::joins_open_diff`]) is not written; the check is linked to the open diff, whose
/// `last_seen_at` and `seen_count` move. Any other check closes the open diff first: a clean
/// one resolves it, a different drift replaces it with its new diff.
pub async fn record_check<T: CheckTx + ?Sized>(
    tx: &mut T,
    workspace_id: Uuid,
    check: &NewCheck,
    diff: Option<&NewDiff>,
) -> Result<RecordedCheck, T::Error> {
    let (counts, health) = rules::check_figures(diff);
    let endpoint_id = check.endpoint_id;
    let open = tx.open_diff(workspace_id, endpoint_id).await?;
    let joined = match (diff, open) {
        (Some(d), Some(o)) if rules::joins_open_diff(&o, d) => Some(o.id),
        (_, Some(_)) => {
            tx.close_diffs(workspace_id, endpoint_id, check.finished_at)
                .await?;
            None
        }
        (_, None) => None,
    };
    let written = diff.filter(|_| joined.is_none());
    let mut stored = tx
        .insert_check(workspace_id, check, written, counts, health)
        .await?;
    let seen = match joined {
        Some(diff_id) => {
            let seen = tx
                .touch_diff(workspace_id, diff_id, check.id, check.finished_at)
                .await?;
            stored.diff_id = Some(diff_id);
            Some(seen)
        }
        None => written.map(|d| DiffSeen {
            id: d.id,
            first_seen_at: d.created_at,
            last_seen_at: d.created_at,
            seen_count: 1,
        }),
    };
    Ok(RecordedCheck {
        check: stored,
        counts,
        health,
        diff: seen,
    })
}

/// [`crate::AlertStore::record_check_alerting`]: [`record_check`], then D11 on the endpoint's
/// alert state (read after the check locked the endpoint row, so alert decisions of one
/// endpoint are serialised): the planned event with its deliveries, and the new state when it
/// changed. Returns the deliveries queued.
pub async fn record_check_alerting<T: CheckTx + ?Sized>(
    tx: &mut T,
    workspace_id: Uuid,
    check: &NewCheck,
    diff: Option<&NewDiff>,
    draft: &AlertDraft,
) -> Result<(RecordedCheck, u32), T::Error> {
    let recorded = record_check(tx, workspace_id, check, diff).await?;
    // D26: a check linked to the open diff is that drift seen again; whether it alerts was
    // decided when the diff opened (and the draft's body names a diff that was not written).
    // Its latency still counts.
    let drift = recorded.diff.is_none_or(|d| d.seen_count <= 1);
    let queued = plan_check_alerts(tx, workspace_id, check.endpoint_id, draft, drift).await?;
    Ok((recorded, queued))
}

/// D11 on the endpoint's alert state (only when `drift`: the check wrote a diff or found
/// none), then the latency episode: the planned events with their deliveries, and the new
/// state when it changed. Returns the deliveries queued.
async fn plan_check_alerts<T: CheckTx + ?Sized>(
    tx: &mut T,
    workspace_id: Uuid,
    endpoint_id: Uuid,
    draft: &AlertDraft,
    drift: bool,
) -> Result<u32, T::Error> {
    if !drift && draft.latency.is_none() {
        return Ok(0);
    }
    let state = tx.alert_state(workspace_id, endpoint_id).await?;
    let webhooks = tx.webhooks(workspace_id).await?;
    let mut queued = 0;
    let mut next = state.clone();
    if drift {
        let plan = plan_alerts(&state, draft, &webhooks);
        if let Some((kind, payload)) = &plan.event {
            let event = OutboxEvent {
                id: draft.event_id,
                endpoint_id,
                kind,
                payload,
                created_at: draft.created_at,
            };
            queued = tx
                .queue_event(workspace_id, event, &plan.webhook_ids)
                .await?;
        }
        next = plan.state;
    }
    // D26: the latency episode, beside the drift (its own event id, its own state).
    if let Some(latency) = &draft.latency {
        let slow = plan_slow(&state.slow, latency, &webhooks);
        if let Some((kind, payload)) = &slow.event {
            let event = OutboxEvent {
                id: latency.event_id,
                endpoint_id,
                kind,
                payload,
                created_at: draft.created_at,
            };
            queued += tx
                .queue_event(workspace_id, event, &slow.webhook_ids)
                .await?;
        }
        next.slow = slow.state;
    }
    if next != state {
        tx.put_alert_state(workspace_id, endpoint_id, &next, draft.created_at)
            .await?;
    }
    Ok(queued)
}

/// [`crate::AlertStore::record_check_run`] inside the adapter's transaction: the locks and
/// reads ahead ([`CheckTx::prefetch`]), the schedule held (with `finish`),
/// [`record_check_alerting`], when the lease was held the finish of the run with
/// [`checked_outcome`], and last one unit of the quota of `check.finished_at`'s month
/// ([`take_check_unit`]: a refusal is the error [`QuotaRefused`], which rolls everything back,
/// the finish included). The unit comes last so that the usage row's lock is held only until
/// the commit, and so that an adapter can send every write queued before it along with it. The
/// adapter turns a [`QuotaRefused`] error into [`CheckRecording::QuotaExhausted`] after the
/// rollback.
pub async fn record_check_run<T: CheckTx + ?Sized>(
    tx: &mut T,
    workspace_id: Uuid,
    check: &NewCheck,
    diff: Option<&NewDiff>,
    draft: &AlertDraft,
    finish: Option<&ScheduleFinish>,
) -> Result<CheckRecording, T::Error> {
    let endpoint_id = check.endpoint_id;
    tx.prefetch(
        workspace_id,
        endpoint_id,
        finish.map(|f| f.owner.as_str()),
        diff.and_then(|d| d.baseline_id),
    )
    .await?;
    let held = match finish {
        Some(f) => {
            tx.hold_schedule(workspace_id, endpoint_id, &f.owner)
                .await?
        }
        None => false,
    };
    let (recorded, alerts_sent) =
        record_check_alerting(tx, workspace_id, check, diff, draft).await?;
    let schedule_finished = match finish.filter(|_| held) {
        Some(f) => {
            let outcome = checked_outcome(recorded.counts.changes, alerts_sent);
            tx.finish_recorded(workspace_id, endpoint_id, f, &outcome)
                .await?
        }
        None => false,
    };
    take_check_unit(tx, workspace_id, check.finished_at).await?;
    Ok(CheckRecording::Recorded {
        recorded: Box::new(recorded),
        alerts_sent,
        schedule_finished,
    })
}

/// The health columns of an endpoint that the in-flight mark of a run reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthMark {
    pub health: Health,
    /// The health kept to come back to (`prior_health`), while the endpoint is `checking`.
    pub prior: Option<Health>,
    pub paused: bool,
}

/// A health write of [`MarkTx::write_health`]: the endpoint's `health`, `prior_health` and
/// `checking_until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthWrite {
    pub endpoint_id: Uuid,
    pub health: Health,
    pub prior: Option<Health>,
    pub checking_until: Option<OffsetDateTime>,
}

/// The primitives of the in-flight mark of a run (D7, D19), on the connection of an open
/// transaction. [`begin_checking`], [`mark_claimed`], [`restore_after_run`] and
/// [`reset_stale_checking`] decide the values ([`rules::prior_for_mark`],
/// [`rules::health_after_mark`]); the adapter writes them. Batches keep a claim of many
/// schedules at a few statements.
#[async_trait]
pub trait MarkTx: Send {
    /// The adapter's error inside the transaction. Any `Err` rolls the transaction back.
    type Error: From<StoreError> + Send;

    /// The [`HealthMark`] of each of `endpoint_ids` that exists (and is `workspace_id`'s when
    /// given), their rows locked until the end of the transaction in id order (PostgreSQL).
    async fn health_of(
        &mut self,
        workspace_id: Option<Uuid>,
        endpoint_ids: &[Uuid],
    ) -> Result<Vec<(Uuid, HealthMark)>, Self::Error>;

    /// Writes each endpoint's health columns as given, and `updated_at = now`.
    async fn write_health(
        &mut self,
        writes: &[HealthWrite],
        now: OffsetDateTime,
    ) -> Result<(), Self::Error>;

    /// The endpoints still `checking` whose mark ended before `now` (or has no end), with the
    /// health they kept, their rows locked until the end of the transaction (PostgreSQL).
    async fn stale_marks(
        &mut self,
        now: OffsetDateTime,
    ) -> Result<Vec<(Uuid, Option<Health>)>, Self::Error>;
}

fn mark(endpoint_id: Uuid, current: HealthMark, until: OffsetDateTime) -> HealthWrite {
    HealthWrite {
        endpoint_id,
        health: Health::Checking,
        prior: rules::prior_for_mark(current.health, current.prior),
        checking_until: Some(until),
    }
}

fn restore(endpoint_id: Uuid, prior: Option<Health>) -> HealthWrite {
    HealthWrite {
        endpoint_id,
        health: rules::health_after_mark(prior),
        prior: None,
        checking_until: None,
    }
}

/// [`crate::LifecycleStore::begin_checking`]: health `checking` until `until`, the health before
/// kept (a second mark keeps the first one's). [`StoreError::NotFound`] when missing.
pub async fn begin_checking<T: MarkTx + ?Sized>(
    tx: &mut T,
    workspace_id: Uuid,
    endpoint_id: Uuid,
    now: OffsetDateTime,
    until: OffsetDateTime,
) -> Result<(), T::Error> {
    let (_, current) = tx
        .health_of(Some(workspace_id), &[endpoint_id])
        .await?
        .into_iter()
        .next()
        .ok_or(StoreError::NotFound)?;
    tx.write_health(&[mark(endpoint_id, current, until)], now)
        .await
}

/// The marks a claim of [`crate::AlertStore::claim_schedules`] puts on its endpoints, in the
/// claim's transaction, until the lease ends: as [`begin_checking`], except that a paused
/// endpoint is left alone (its run is skipped, not run). Returns how many were marked.
pub async fn mark_claimed<T: MarkTx + ?Sized>(
    tx: &mut T,
    endpoint_ids: &[Uuid],
    now: OffsetDateTime,
    until: OffsetDateTime,
) -> Result<usize, T::Error> {
    if endpoint_ids.is_empty() {
        return Ok(0);
    }
    let writes: Vec<HealthWrite> = tx
        .health_of(None, endpoint_ids)
        .await?
        .into_iter()
        .filter(|(_, current)| !current.paused)
        .map(|(id, current)| mark(id, current, until))
        .collect();
    if !writes.is_empty() {
        tx.write_health(&writes, now).await?;
    }
    Ok(writes.len())
}

/// The end of a run that recorded nothing (skipped, failed; [`crate::AlertStore::finish_schedule`]):
/// an endpoint still `checking` gets back the health before the mark.
pub async fn restore_after_run<T: MarkTx + ?Sized>(
    tx: &mut T,
    endpoint_id: Uuid,
    now: OffsetDateTime,
) -> Result<(), T::Error> {
    let writes: Vec<HealthWrite> = tx
        .health_of(None, &[endpoint_id])
        .await?
        .into_iter()
        .filter(|(_, current)| current.health == Health::Checking)
        .map(|(id, current)| restore(id, current.prior))
        .collect();
    if !writes.is_empty() {
        tx.write_health(&writes, now).await?;
    }
    Ok(())
}

/// [`crate::LifecycleStore::reset_stale_checking`]: every endpoint whose mark outlived its run
/// gets back the health before it. Returns how many.
pub async fn reset_stale_checking<T: MarkTx + ?Sized>(
    tx: &mut T,
    now: OffsetDateTime,
) -> Result<u64, T::Error> {
    let writes: Vec<HealthWrite> = tx
        .stale_marks(now)
        .await?
        .into_iter()
        .map(|(id, prior)| restore(id, prior))
        .collect();
    if !writes.is_empty() {
        tx.write_health(&writes, now).await?;
    }
    Ok(writes.len() as u64)
}

/// Runs to its end, on this thread, a future whose every step is synchronous (the steps of a
/// [`CheckTx`] over a blocking connection, as SQLite's inside its writer): it is polled once and
/// must be ready then. A step that waits is [`StoreError::Database`], never a hang.
pub fn run_now<F: Future>(future: F) -> Result<F::Output, StoreError> {
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => Ok(out),
        Poll::Pending => Err(StoreError::Database(
            "a synchronous transaction step waited".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_decisions() {
        assert_eq!(
            quota_outcome(Some(3), Some(2), 9).ok(),
            Some(QuotaOutcome::Consumed {
                used: 2,
                quota: Some(3)
            })
        );
        assert_eq!(
            quota_outcome(None, Some(7), 9).ok(),
            Some(QuotaOutcome::Consumed {
                used: 7,
                quota: None
            })
        );
        assert_eq!(
            quota_outcome(Some(3), None, 3).ok(),
            Some(QuotaOutcome::Exhausted { used: 3, quota: 3 })
        );
        assert!(quota_outcome(None, None, 0).is_err());
    }

    #[test]
    fn run_now_finishes_ready_futures_and_refuses_waiting_ones() {
        assert_eq!(run_now(async { 7 }).ok(), Some(7));
        let waits = std::future::pending::<()>();
        assert!(matches!(run_now(waits), Err(StoreError::Database(_))));
    }
}
