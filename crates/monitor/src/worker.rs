//! Background work (D18): [`Worker`] runs the schedule loop ([`crate::scheduler`]), the
//! delivery loop ([`crate::outbox`]) and the upkeep loop (stale `checking`, retention, D19) of one
//! process until told to stop, then finishes what it
//! claimed (up to a grace period) and releases the leases of what it could not finish.

use crate::Monitor;
use crate::loops::Ctx;
pub use crate::loops::{WorkerConfig, WorkerStats};
use apidrift_seal::KeyRing;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The background work of one process.
pub struct Worker {
    shutdown: watch::Sender<bool>,
    tasks: JoinSet<()>,
    owner: String,
    monitor: Monitor,
    stats: Arc<WorkerStats>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// Starts the loops the configuration enables. `owner` names this process in leases.
    pub fn start(monitor: Monitor, keys: Arc<KeyRing>, config: WorkerConfig) -> Worker {
        let owner = format!("{}-{}", std::process::id(), apidrift_store::new_id());
        let (shutdown, rx) = watch::channel(false);
        let stats = Arc::new(WorkerStats::default());
        let ctx = Ctx {
            monitor: monitor.clone(),
            keys,
            config: config.clone(),
            owner: owner.clone(),
            stats: stats.clone(),
        };
        let mut tasks = JoinSet::new();
        if config.schedules {
            tasks.spawn(crate::scheduler::run(ctx.clone(), rx.clone()));
        }
        if config.deliveries {
            tasks.spawn(crate::outbox::run(ctx.clone(), rx.clone()));
        }
        tasks.spawn(upkeep(ctx.clone(), rx.clone()));
        tasks.spawn(report(ctx, rx));
        Worker {
            shutdown,
            tasks,
            owner,
            monitor,
            stats,
        }
    }

    /// This process's lease owner name.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub fn stats(&self) -> &Arc<WorkerStats> {
        &self.stats
    }

    /// Graceful shutdown: stop claiming, let claimed work finish (each loop waits up to the
    /// grace period), then release every lease still held so other processes take it at once.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        while self.tasks.join_next().await.is_some() {}
        match self.monitor.store().release_leases(&self.owner).await {
            Ok(n) if n > 0 => tracing::info!(released = n, "worker released unfinished claims"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "worker could not release its claims"),
        }
    }
}

/// At start and then every `upkeep_every`: endpoints left `checking` by a run that died (its
/// deadline passed) get back the health they had before it, and check rows without a diff older
/// than `check_retention_days` are pruned with their sealed bodies (D19).
async fn upkeep(ctx: Ctx, mut stop: watch::Receiver<bool>) {
    loop {
        let store = ctx.monitor.store();
        let now = time::OffsetDateTime::now_utc();
        match store.reset_stale_checking(now).await {
            Ok(n) if n > 0 => tracing::info!(
                endpoints = n,
                "reset health left checking by runs that died"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "upkeep: resetting stale checking failed"),
        }
        if ctx.config.check_retention_days > 0 {
            let before = now - time::Duration::days(i64::from(ctx.config.check_retention_days));
            let mut pruned = 0u64;
            loop {
                match store.prune_checks(before, 1_000).await {
                    Ok(n) => {
                        pruned += n;
                        if n < 1_000 {
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "upkeep: pruning checks failed");
                        break;
                    }
                }
            }
            if pruned > 0 {
                tracing::info!(checks = pruned, "pruned check rows past retention");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(ctx.config.upkeep_every.max(Duration::from_millis(10))) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Logs the figures every 10 s while there is activity.
async fn report(ctx: Ctx, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(10)) => {}
            _ = stop.changed() => return,
        }
        if let Some((p50, p99, max, n)) = ctx.stats.take_lag_percentiles() {
            tracing::info!(
                runs = n,
                lag_p50_ms = p50,
                lag_p99_ms = p99,
                lag_max_ms = max,
                total_claimed = ctx.stats.schedules_claimed.load(Ordering::Relaxed),
                "scheduler"
            );
        }
    }
}
