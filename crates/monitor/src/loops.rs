//! What the worker's loops share ([`crate::scheduler`], [`crate::outbox`] and
//! [`crate::worker`]): their settings, counters and context, the claim loop that runs claimed
//! items with bounded concurrency (run slots, and a bounded room where a run waits outside its
//! slot), and the jitter source. A leaf module: it names none of the loops, so the loops and the
//! [`crate::Worker`] that starts them depend on it, not on each other.

use crate::Monitor;
use apidrift_seal::KeyRing;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;

/// Most scheduled runs of one process that wait outside their run slot at once (a first capture
/// between its samples, [`RunSlot::pause`]), by default. The pauses cost no CPU; a waiting run
/// holds its task, its endpoint row and the samples taken so far.
pub const DEFAULT_MAX_WAITING: usize = 4096;

/// Most bytes of samples those waiting runs may hold at once, by default (64 MiB). A run whose
/// samples do not fit waits in its slot, as every run did before.
pub const DEFAULT_MAX_WAITING_BYTES: usize = 64 * 1024 * 1024;

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
    /// Scheduled runs active at once per process (fetching, diffing, recording). A first capture
    /// waiting between its samples leaves its slot to another run (see `max_waiting`).
    pub concurrency: usize,
    /// Most scheduled runs waiting outside a slot at once per process ([`DEFAULT_MAX_WAITING`]).
    pub max_waiting: usize,
    /// Most bytes of samples the waiting runs hold at once ([`DEFAULT_MAX_WAITING_BYTES`]);
    /// beyond either bound a run waits in its slot.
    pub max_waiting_bytes: usize,
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
            max_waiting: DEFAULT_MAX_WAITING,
            max_waiting_bytes: DEFAULT_MAX_WAITING_BYTES,
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
    /// Pauses of scheduled runs (between the samples of a first capture) spent outside a run
    /// slot, and spent in one because the waiting room was full.
    pub pauses_outside: AtomicU64,
    pub pauses_in_slot: AtomicU64,
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

/// The run slots of one claim loop, and the room where its runs may wait outside them.
///
/// A claimed item runs holding a slot (a permit of `slots`), so at most that many run at once. A
/// run that must pause (a first capture between its samples) leaves its slot for the pause
/// ([`RunSlot::pause`]) when the room has space for it and the bytes it holds: at most
/// `max_waiting` runs and `max_waiting_bytes` wait at once, so the tasks of a loop number at most
/// slots + `max_waiting`. A run back from its pause queues for a slot, and is served before any
/// new claim: the semaphore hands a released permit to its queue first, and the claim loop only
/// takes permits nobody queues for.
pub(crate) struct Room {
    slots: Arc<Semaphore>,
    waiting: Arc<Semaphore>,
    /// In KiB, one permit each.
    waiting_kib: Arc<Semaphore>,
    stats: Arc<WorkerStats>,
}

impl Room {
    pub(crate) fn new(
        slots: usize,
        max_waiting: usize,
        max_waiting_bytes: usize,
        stats: Arc<WorkerStats>,
    ) -> Arc<Room> {
        let cap = |n: usize| n.min(Semaphore::MAX_PERMITS);
        Arc::new(Room {
            slots: Arc::new(Semaphore::new(cap(slots.max(1)))),
            waiting: Arc::new(Semaphore::new(cap(max_waiting))),
            waiting_kib: Arc::new(Semaphore::new(cap(max_waiting_bytes / 1024))),
            stats,
        })
    }

    /// A room whose runs never leave their slot (the delivery loop).
    pub(crate) fn slots_only(slots: usize, stats: Arc<WorkerStats>) -> Arc<Room> {
        Room::new(slots, 0, 0, stats)
    }

    /// Every slot free now that nobody queues for.
    fn free_slots(self: &Arc<Room>) -> Vec<OwnedSemaphorePermit> {
        let mut permits = Vec::new();
        while let Ok(p) = self.slots.clone().try_acquire_owned() {
            permits.push(p);
        }
        permits
    }

    /// A place in the room for a run holding `held` bytes, when there is one.
    fn enter(&self, held: usize) -> Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)> {
        let kib = u32::try_from(held.div_ceil(1024)).unwrap_or(u32::MAX);
        let place = self.waiting.clone().try_acquire_owned().ok()?;
        let bytes = self.waiting_kib.clone().try_acquire_many_owned(kib).ok()?;
        Some((place, bytes))
    }
}

/// The slot a claimed item runs in, handed to its work. Dropping it (the run ends, or its task is
/// aborted) frees the slot.
pub(crate) struct RunSlot {
    permit: Option<OwnedSemaphorePermit>,
    room: Arc<Room>,
}

impl RunSlot {
    /// Waits `pause` while the run holds `held` bytes (its samples so far): outside the slot when
    /// the room takes it — the slot runs another claim meanwhile, and is taken back (ahead of new
    /// claims) before this returns — else in the slot. True when it waited outside.
    pub(crate) async fn pause(&mut self, pause: Duration, held: usize) -> bool {
        let Some(place) = self.room.enter(held) else {
            WorkerStats::add(&self.room.stats.pauses_in_slot, 1);
            tokio::time::sleep(pause).await;
            return false;
        };
        WorkerStats::add(&self.room.stats.pauses_outside, 1);
        self.permit = None;
        tokio::time::sleep(pause).await;
        // The semaphore is never closed, so this is always a permit; were it closed, the run
        // would go on without a slot rather than fail.
        self.permit = self.room.slots.clone().acquire_owned().await.ok();
        // The room is left only with a slot in hand: a run queued for its slot still holds its
        // samples, and counts against the room's bounds.
        drop(place);
        true
    }
}

impl crate::monitor::SamplePause for RunSlot {
    async fn pause(&mut self, pause: Duration, held: usize) {
        RunSlot::pause(self, pause, held).await;
    }
}

/// Runs claimed items through `work`, each in a slot of `room` (at most its slots at once, runs
/// that pause outside their slot not counted, [`RunSlot::pause`]), until `stop`; then waits up to
/// `grace` for the ones in flight, waiting ones included, and aborts the rest (their leases are
/// released by [`Worker::shutdown`]).
pub(crate) async fn claim_loop<T, C, CF, W, WF>(
    poll: Duration,
    grace: Duration,
    room: Arc<Room>,
    mut stop: watch::Receiver<bool>,
    mut claim: C,
    work: W,
) where
    T: Send + 'static,
    C: FnMut(usize) -> CF,
    CF: Future<Output = Vec<T>>,
    W: Fn(T, RunSlot) -> WF,
    WF: Future<Output = ()> + Send + 'static,
{
    let mut running: JoinSet<()> = JoinSet::new();
    loop {
        if *stop.borrow() {
            break;
        }
        while running.try_join_next().is_some() {}
        let mut permits = room.free_slots();
        let free = permits.len();
        let mut claimed = 0;
        if free > 0 {
            let items = claim(free).await;
            claimed = items.len();
            for item in items {
                let slot = RunSlot {
                    permit: permits.pop(),
                    room: room.clone(),
                };
                running.spawn(work(item, slot));
            }
            // The slots no item took are free again.
            drop(permits);
        }
        if free > 0 && claimed < free {
            // Nothing (more) due: wait for the poll interval or shutdown.
            tokio::select! {
                _ = tokio::time::sleep(poll) => {}
                _ = stop.changed() => {}
            }
        } else {
            // Every slot taken: wait for one to free (a run ends or pauses outside it) or
            // shutdown. The permit goes back at once; the next turn takes every free one.
            tokio::select! {
                p = room.slots.clone().acquire_owned() => drop(p),
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
