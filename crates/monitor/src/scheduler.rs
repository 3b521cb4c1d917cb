//! Scheduled checks (D17, D18). Each loop turn: create schedule rows for endpoints that got a
//! `schedule` (first run spread over one period: jitter), claim due schedules with a lease, run
//! them, and set the next run one period after the slot that was due — or, after downtime, the
//! first slot after now, so missed slots collapse into one catch-up run.
//!
//! A run: the workspace must be on Starter or above (else skipped), the endpoint not paused (else
//! skipped, no quota used, D19); without a baseline the run
//! captures it; otherwise it is a check. Every run consumes one quota unit; with the quota
//! exhausted the run is recorded as skipped and the schedule moves on to its next slot.

use crate::loops::{Ctx, Room, RunSlot, WorkerStats, claim_loop, random_below};
use crate::monitor::LockedRead;
use crate::{MonitorError, ScheduledSlot};
use apidrift_model::{Cadence, Plan};
use apidrift_store::{ClaimedSchedule, NewSchedule};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::OffsetDateTime;
use tokio::sync::watch;
use uuid::Uuid;

pub use crate::cadence::{next_run, period_of};

fn period(ctx: &Ctx, c: Cadence) -> Duration {
    ctx.config.period_override.unwrap_or_else(|| period_of(c))
}

/// The most often [`sync`] runs: 25 polls, at most 5 s (so at least once a poll when polls are
/// longer). Each sync scans every endpoint against the schedules (an anti-join: about 50 ms at
/// 20,000 endpoints on a loaded 2-core machine), so once a poll (200 ms in the scheduler
/// benchmark) it took more of the database's time than the statements of the runs it claimed
/// (pg_stat_statements; docs/checks.md, "A new fleet, measured"). A new schedule's row appears
/// within this bound; its first run is spread over one period after that anyway (jitter).
fn sync_every(poll: Duration) -> Duration {
    (poll * 25).min(Duration::from_secs(5)).max(poll)
}

/// Creates schedule rows for endpoints that have none.
async fn sync(ctx: &Ctx) {
    let store = ctx.monitor.store();
    loop {
        let found = match store.unscheduled_endpoints(1000).await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "scheduler: listing new schedules failed");
                return;
            }
        };
        if found.is_empty() {
            return;
        }
        let now = OffsetDateTime::now_utc();
        let n = found.len();
        let rows = found
            .into_iter()
            .map(|(workspace_id, endpoint_id, cadence)| {
                let p = period(ctx, cadence).as_micros();
                let jitter = if ctx.config.first_run_jitter {
                    random_below(u64::try_from(p).unwrap_or(u64::MAX))
                } else {
                    0
                };
                NewSchedule {
                    workspace_id,
                    endpoint_id,
                    cadence,
                    next_run_at: now
                        + time::Duration::microseconds(i64::try_from(jitter).unwrap_or(0)),
                }
            })
            .collect();
        if let Err(e) = store.insert_schedules(rows).await {
            tracing::warn!(error = %e, "scheduler: creating schedules failed");
            return;
        }
        if n < 1000 {
            return;
        }
    }
}

/// The schedules this process is running, whose leases the heartbeat renews.
type InFlight = Arc<Mutex<HashSet<Uuid>>>;

/// Removes a run from [`InFlight`] when it ends, however it ends (an aborted task included).
struct Running(InFlight, Uuid);

impl Drop for Running {
    fn drop(&mut self) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.1);
    }
}

/// Every third of a lease, moves the leases of the runs in flight one lease ahead (and their
/// `checking` marks): a run slower than its lease (a slow upstream with retries, a loaded host,
/// a multi-sample first capture) is not claimed again by another worker while this one lives.
/// A run is in flight from its claim to its end, whether it holds a run slot or waits outside one
/// between samples ([`RunSlot::pause`]): its task holds its [`Running`] mark throughout.
/// A process that dies stops renewing, so its claims still pass to others after one lease.
async fn heartbeat(ctx: Ctx, in_flight: InFlight, mut stop: watch::Receiver<bool>) {
    let every = (ctx.config.lease / 3).max(Duration::from_millis(10));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
        let ids: Vec<Uuid> = in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        if ids.is_empty() {
            continue;
        }
        let lease = time::Duration::try_from(ctx.config.lease).unwrap_or(time::Duration::MINUTE);
        let until = OffsetDateTime::now_utc() + lease;
        if let Err(e) = ctx
            .monitor
            .store()
            .extend_schedule_leases(&ctx.owner, &ids, until)
            .await
        {
            tracing::warn!(error = %e, "scheduler: renewing leases failed");
        }
    }
}

/// The schedule loop of one process.
pub(crate) async fn run(ctx: Ctx, stop: watch::Receiver<bool>) {
    let in_flight: InFlight = Arc::default();
    let beat = tokio::spawn(heartbeat(ctx.clone(), in_flight.clone(), stop.clone()));
    let claim_ctx = ctx.clone();
    let mut last_sync: Option<std::time::Instant> = None;
    let room = Room::new(
        ctx.config.concurrency,
        ctx.config.max_waiting,
        ctx.config.max_waiting_bytes,
        ctx.stats.clone(),
    );
    claim_loop(
        ctx.config.poll,
        ctx.config.grace,
        room,
        stop,
        move |free| {
            let ctx = claim_ctx.clone();
            let do_sync = last_sync.is_none_or(|t| t.elapsed() >= sync_every(ctx.config.poll));
            if do_sync {
                last_sync = Some(std::time::Instant::now());
            }
            async move {
                if do_sync {
                    sync(&ctx).await;
                }
                let now = OffsetDateTime::now_utc();
                let limit = u32::try_from(free.min(500)).unwrap_or(500);
                match ctx
                    .monitor
                    .store()
                    .claim_schedules(&ctx.owner, now, ctx.config.lease, limit)
                    .await
                {
                    Ok(items) => {
                        WorkerStats::add(&ctx.stats.schedules_claimed, items.len() as u64);
                        items
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "scheduler: claim failed");
                        Vec::new()
                    }
                }
            }
        },
        move |item: ClaimedSchedule, mut slot: RunSlot| {
            let ctx = ctx.clone();
            in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(item.endpoint_id);
            let running = Running(in_flight.clone(), item.endpoint_id);
            async move {
                run_one(&ctx, item, &mut slot).await;
                drop(slot);
                drop(running);
            }
        },
    )
    .await;
    beat.abort();
}

async fn run_one(ctx: &Ctx, item: ClaimedSchedule, slot: &mut RunSlot) {
    let started = OffsetDateTime::now_utc();
    let lag = (started - item.next_run_at).whole_milliseconds().max(0);
    crate::metrics::record_schedule_lag(std::time::Duration::from_millis(
        u64::try_from(lag).unwrap_or(0),
    ));
    ctx.stats
        .lags
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(u64::try_from(lag).unwrap_or(0));
    let (outcome, skipped) = match execute(ctx, &item, slot).await {
        // A recorded check finished its run in its own transaction (issue 23): a kill after
        // that commit can no longer leave the slot to run, and take a unit, a second time.
        Ran::Recorded { finished } => {
            WorkerStats::add(&ctx.stats.schedules_run, 1);
            if !finished {
                tracing::warn!(endpoint = %item.endpoint_id, "scheduler: lease lost");
            }
            return;
        }
        Ran::Other(outcome, skipped) => (outcome, skipped),
    };
    let now = OffsetDateTime::now_utc();
    if skipped {
        WorkerStats::add(&ctx.stats.schedules_skipped, 1);
    } else {
        WorkerStats::add(&ctx.stats.schedules_run, 1);
    }
    let next = next_run(item.next_run_at, now, period(ctx, item.cadence));
    match ctx
        .monitor
        .store()
        .finish_schedule(item.endpoint_id, &ctx.owner, next, &outcome, skipped, now)
        .await
    {
        Ok(true) => {}
        Ok(false) => tracing::warn!(endpoint = %item.endpoint_id, "scheduler: lease lost"),
        Err(e) => tracing::warn!(error = %e, "scheduler: finishing a run failed"),
    }
}

/// What [`execute`] did.
enum Ran {
    /// A check was recorded, and its transaction finished the run too (`false`: the lease had
    /// passed to another worker, nothing of the schedule was written).
    Recorded { finished: bool },
    /// Anything else, to be finished with `finish_schedule`: (outcome, skipped).
    Other(String, bool),
}

/// Runs one due schedule, from one read ([`crate::Monitor`]'s `read_scheduled`: the endpoint,
/// its baseline, the quota, the newest diff and the workspace's plan, under the endpoint's lock)
/// that both the decision and the check use.
async fn execute(ctx: &Ctx, item: &ClaimedSchedule, slot: &mut RunSlot) -> Ran {
    let (ws, ep) = (item.workspace_id, item.endpoint_id);
    let read = match ctx.monitor.read_scheduled(ws, ep).await {
        Ok(Some(r)) => r,
        Ok(None) => return Ran::Other("skipped: endpoint not found".into(), true),
        Err(e) => return Ran::Other(format!("failed: {e}"), false),
    };
    let context = &read.context;
    if matches!(context.plan, Plan::Free) {
        return Ran::Other(
            "skipped: schedules require the Starter plan or above".into(),
            true,
        );
    }
    if context.endpoint.paused {
        return Ran::Other("skipped: endpoint paused".into(), true);
    }
    // The run was claimed, then its schedule was removed (a PATCH or an edit in between): the
    // user no longer asked for it.
    if context.endpoint.settings.schedule.is_none() {
        return Ran::Other("skipped: schedule removed".into(), true);
    }
    if context.baseline.is_some() {
        let slot = ScheduledSlot {
            owner: ctx.owner.clone(),
            due: item.next_run_at,
            period: period(ctx, item.cadence),
        };
        return match ctx.monitor.run_scheduled_check(read, &slot).await {
            Ok(o) => Ran::Recorded {
                finished: o.schedule_finished,
            },
            Err(MonitorError::QuotaExhausted { .. }) => {
                Ran::Other("skipped: monthly check quota exhausted".into(), true)
            }
            Err(MonitorError::NotFound) => Ran::Other("skipped: endpoint not found".into(), true),
            Err(e) => Ran::Other(format!("failed: {e}"), false),
        };
    }
    // The first run takes its unit before it fetches, under the quota the read found (no
    // second read of the workspace): refused without a write when the read found none left,
    // and by the atomic take when the last one went meanwhile.
    let exhausted = Ran::Other("skipped: monthly check quota exhausted".into(), true);
    if context.usage.exhausted().is_some() {
        return exhausted;
    }
    match ctx
        .monitor
        .store()
        .take_check_unit(ws, OffsetDateTime::now_utc(), context.usage.quota)
        .await
    {
        Ok(Some(_)) => {}
        Ok(None) => return exhausted,
        Err(e) => return Ran::Other(format!("failed: {e}"), false),
    }
    let (outcome, skipped) = first_baseline(ctx, &read, slot).await;
    Ran::Other(outcome, skipped)
}

/// The first baseline of a scheduled endpoint: `first_baseline_samples` samples, so that the
/// following full-mode checks ignore the fields that change on every call (timestamps, request
/// ids). Between the samples the run waits outside its run slot when the worker's waiting room
/// has space ([`RunSlot::pause`]): the pauses cost neither CPU nor a slot, so a new fleet is
/// claimed at the rate of a settled one. Samples that disagree in shape (a list whose items vary,
/// say) would leave the endpoint without a baseline run after run: the run then keeps a single
/// sample and says so.
async fn first_baseline(ctx: &Ctx, read: &LockedRead, slot: &mut RunSlot) -> (String, bool) {
    let samples = ctx.config.first_baseline_samples.max(1);
    let captured = match ctx.monitor.capture_scheduled(read, samples, slot).await {
        Err(MonitorError::Unstable(why)) if samples > 1 => {
            tracing::info!(
                endpoint = %read.context.endpoint.id,
                reason = %why,
                "scheduler: samples disagree, keeping one"
            );
            ctx.monitor
                .capture_scheduled(read, 1, slot)
                .await
                .map(|b| (b, " (one sample: the samples differed in shape)"))
        }
        other => other.map(|b| (b, "")),
    };
    match captured {
        Ok((b, note)) => (
            format!(
                "baseline captured: version {}, {} volatile paths{note}",
                b.version,
                b.volatile_paths.len()
            ),
            false,
        ),
        Err(e) => (format!("failed: {e}"), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_run_keeps_the_phase_and_collapses_missed_slots() {
        let h = Duration::from_secs(3600);
        let due = OffsetDateTime::UNIX_EPOCH + time::Duration::minutes(17);
        // On time: one period later.
        assert_eq!(
            next_run(due, due + time::Duration::seconds(3), h),
            due + time::Duration::HOUR
        );
        // Five and a half hours of downtime: the next slot after now, same minute.
        let now = due + time::Duration::minutes(330);
        let next = next_run(due, now, h);
        assert!(next > now && next - now <= time::Duration::HOUR);
        assert_eq!((next - due).whole_minutes() % 60, 0);
    }

    #[test]
    fn syncs_at_most_every_five_seconds_and_at_least_every_poll() {
        let ms = Duration::from_millis;
        assert_eq!(sync_every(ms(20)), ms(500));
        assert_eq!(sync_every(ms(200)), ms(5000));
        assert_eq!(sync_every(ms(1000)), ms(5000));
        assert_eq!(sync_every(ms(9000)), ms(9000));
    }

    #[test]
    fn periods() {
        use apidrift_model::Frequency;
        assert_eq!(
            period_of(Cadence::Every(Frequency::Hourly)),
            Duration::from_secs(3600)
        );
        assert_eq!(
            period_of(Cadence::Every(Frequency::Daily)),
            Duration::from_secs(86_400)
        );
        assert_eq!(period_of(Cadence::Interval(300)), Duration::from_secs(300));
    }
}
