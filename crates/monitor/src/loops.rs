//! What the worker's loops share ([`crate::scheduler`], [`crate::outbox`] and
//! [`crate::worker`]): their settings, counters and context, the claim loop that runs claimed
//! items with bounded concurrency, and the jitter source. A leaf module: it names none of the
//! loops, so the loops and the [`crate::Worker`] that starts them depend on it, not on each other.

use crate::Monitor;
use apidrift_seal::KeyRing;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Settings of the worker loops (`[worker]` and `[alerts]` in the configuration).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerConfig {
    /// Run due schedules.
    pub schedules: bool,
    /// Send outbox deliveries.
    pub deliveries: bool,
    /// Sleep between claims when there was nothing to do.
    pub poll: Duration,
    /// How long a claim is held; a process that died is replaced after this.
    pub lease: Duration,
    /// Scheduled checks run at once per process.
    pub concurrency: usize,
    /// Deliveries sent at once per process.
    pub delivery_concurrency: usize,
    /// How long shutdown waits for claimed work before releasing it.
    pub grace: Duration,
    /// Replaces every frequency's period (tests and benchmarks only).
    pub period_override: Option<Duration>,
    /// Spread first runs over one period (jitter, so an hourly fleet does not fire at once). Off: a new schedule is due at once.
    pub first_run_jitter: bool,
    /// One delivery attempt's timeout (D11: 5 s).
    pub delivery_timeout: Duration,
    /// First retry delay; doubles per attempt (with jitter) up to `retry_max`.
    pub retry_base: Duration,
    pub retry_max: Duration,
    /// Give up on a delivery this long after its event (D11: 24 h).
    pub retry_window: Duration,
    /// Check rows without a diff older than this many days are pruned (`[retention]
    /// check_days`, D19); 0 keeps them forever.
    pub check_retention_days: u32,
    /// How often the upkeep loop runs (resetting `checking` left by dead runs, retention).
    pub upkeep_every: Duration,
    /// `[server] public_url`: the console's address as users reach it, for links in Slack,
    /// Discord and PagerDuty messages (none when unset).
    pub public_url: Option<String>,
    /// Samples of the baseline a schedule captures for an endpoint that has none (`[baseline]
    /// first_samples`, 1 to 5): more than one learns the volatile paths. When the samples
    /// disagree in shape the run keeps one sample instead of failing.
    pub first_baseline_samples: u8,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            schedules: true,
            deliveries: true,
            poll: Duration::from_millis(1000),
            lease: Duration::from_secs(120),
            concurrency: 64,
            delivery_concurrency: 16,
            grace: Duration::from_secs(20),
            period_override: None,
            first_run_jitter: true,
            delivery_timeout: Duration::from_secs(5),
            retry_base: Duration::from_secs(10),
            retry_max: Duration::from_secs(3600),
            retry_window: Duration::from_secs(24 * 3600),
            check_retention_days: 90,
            upkeep_every: Duration::from_secs(60),
            public_url: None,
            first_baseline_samples: 3,
        }
    }
}

/// Counters of one process, logged periodically and read by tests and the benchmark.
#[derive(Debug, Default)]
pub struct WorkerStats {
    pub schedules_claimed: AtomicU64,
    pub schedules_run: AtomicU64,
    pub schedules_skipped: AtomicU64,
    pub deliveries_sent: AtomicU64,
    pub deliveries_failed_attempts: AtomicU64,
    /// Lag between due time and start, milliseconds, of the runs since the last report.
    pub lags: std::sync::Mutex<Vec<u64>>,
}

impl WorkerStats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// (p50, p99, max) of the lags recorded since the last call, in ms, and how many.
    pub fn take_lag_percentiles(&self) -> Option<(u64, u64, u64, usize)> {
        let mut lags = std::mem::take(&mut *self.lags.lock().unwrap_or_else(|p| p.into_inner()));
        if lags.is_empty() {
            return None;
        }
        lags.sort_unstable();
        let at = |q: f64| {
            let i = ((lags.len() as f64 - 1.0) * q).round() as usize;
            lags.get(i).copied().unwrap_or(0)
        };
        Some((at(0.5), at(0.99), at(1.0), lags.len()))
    }
}

/// Everything a loop needs.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub monitor: Monitor,
    pub keys: Arc<KeyRing>,
    pub config: WorkerConfig,
    pub owner: String,
    pub stats: Arc<WorkerStats>,
}

/// Runs claimed items through `work`, at most `limit` at once, until `stop`; then waits up to
/// `grace` for the ones in flight and aborts the rest (their leases are released by
/// [`Worker::shutdown`]).
pub(crate) async fn claim_loop<T, C, CF, W, WF>(
    poll: Duration,
    grace: Duration,
    limit: usize,
    mut stop: watch::Receiver<bool>,
    mut claim: C,
    work: W,
) where
    T: Send + 'static,
    C: FnMut(usize) -> CF,
    CF: Future<Output = Vec<T>>,
    W: Fn(T) -> WF,
    WF: Future<Output = ()> + Send + 'static,
{
    let mut running: JoinSet<()> = JoinSet::new();
    loop {
        if *stop.borrow() {
            break;
        }
        while running.try_join_next().is_some() {}
        let free = limit.saturating_sub(running.len());
        let mut claimed = 0;
        if free > 0 {
            let items = claim(free).await;
            claimed = items.len();
            for item in items {
                running.spawn(work(item));
            }
        }
        if claimed == 0 || claimed < free {
            // Nothing (more) due: wait for the poll interval, a finished task or shutdown.
            tokio::select! {
                _ = tokio::time::sleep(poll) => {}
                Some(_) = running.join_next(), if !running.is_empty() && free == 0 => {}
                _ = stop.changed() => {}
            }
        } else if free == 0 {
            tokio::select! {
                Some(_) = running.join_next() => {}
                _ = stop.changed() => {}
            }
        }
    }
    let deadline = tokio::time::sleep(grace);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            next = running.join_next() => if next.is_none() { break },
            _ = &mut deadline => {
                running.abort_all();
                while running.join_next().await.is_some() {}
                break;
            }
        }
    }
}

/// A random number below `n` (0 when `n` is 0), from the system CSPRNG.
pub(crate) fn random_below(n: u64) -> u64 {
    use ring::rand::{SecureRandom, SystemRandom};
    if n == 0 {
        return 0;
    }
    let mut b = [0u8; 8];
    if SystemRandom::new().fill(&mut b).is_err() {
        return n / 2;
    }
    u64::from_le_bytes(b) % n
}
