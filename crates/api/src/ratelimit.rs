//! Rate limits (D17): where the GCRA state of each budget lives. The arithmetic and the figures of
//! the draft-11 headers are in [`crate::gcra`] (re-exported here).
//!
//! * [`MemoryLimiter`]: theoretical arrival times (TATs) in the process, on the monotonic clock
//!   (SQLite, and the per-address limit everywhere).
//! * [`StoreLimiter`]: budgets shared by every instance on a PostgreSQL database, without a
//!   database write per request. An instance **leases** units of a (workspace, class) budget in
//!   batches and spends them in memory: one read of the key's TAT in `rate_limits` and one
//!   compare-and-swap advancing it by the whole batch (see [`lease_step`]). The database TAT is
//!   therefore always at least what one GCRA over every instance's requests would hold, so the
//!   instances together never pass more than the limit allows at the moments of their leases.
//!   * A batch is sized to the demand the instance saw over the last quarter second, the requests
//!     queued behind the lease, and twice the last batch when that was spent out within its hold;
//!     at most an eighth of the burst ([`lease_cap`]), at least one unit.
//!   * Units not spent within [`LEASE_HOLD`] of their lease are never spent: a background task
//!     ([`StoreLimiter::spawn_give_backs`]) hands them back (moves the TAT back), and a graceful
//!     shutdown hands back everything ([`StoreLimiter::give_back_all`]).
//!   * A refusal from the database is remembered until its retry time, so a client hammering a
//!     spent budget costs no database round trip either.
//!
//! The tolerance this buys (docs/api.md): in any span of `d` seconds a budget of `q` per `w`
//! seconds passes at most `q + q·(d + 1)/w` requests over all instances (one second of the
//! sustained rate more than one process would: units are spent up to a second after their lease);
//! and a request may be refused early while other instances hold leased units they have not spent
//! yet (each at most `max(1, ⌊q/8⌋)`, for at most one second), or while its instance remembers a
//! refusal. With one instance the count of a burst is exact.

use crate::error::ApiError;
pub use crate::gcra::{Class, Quota, RateInfo, RateLimits, Step, gcra};
use apidrift_app::ServiceError;
use apidrift_app::ratelimit::SharedTats;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Where GCRA state lives.
#[async_trait]
pub trait Limiter: Send + Sync + std::fmt::Debug {
    /// Takes one request from `key`'s budget.
    async fn take(&self, key: &str, class: Class, quota: Quota) -> Result<RateInfo, ApiError>;
}

/// TATs in a process-local map, on the monotonic clock.
#[derive(Debug)]
pub struct MemoryLimiter {
    epoch: Instant,
    tats: Mutex<HashMap<String, i64>>,
}

/// Entries are pruned (those whose TAT has passed, i.e. full budgets) when the map grows past
/// this size, so per-address keys cannot grow without bound.
const PRUNE_AT: usize = 10_000;

impl Default for MemoryLimiter {
    fn default() -> Self {
        MemoryLimiter {
            epoch: Instant::now(),
            tats: Mutex::new(HashMap::new()),
        }
    }
}

impl MemoryLimiter {
    fn now(&self) -> i64 {
        i64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(i64::MAX)
    }

    /// One step, synchronously.
    pub fn step(&self, key: &str, quota: Quota) -> Step {
        let now = self.now();
        let mut tats = lock(&self.tats);
        if tats.len() >= PRUNE_AT {
            tats.retain(|_, tat| *tat > now);
        }
        let step = gcra(tats.get(key).copied(), now, quota);
        if step.allowed {
            tats.insert(key.to_owned(), step.tat);
        }
        step
    }

    /// Whether the next request on `key` would be refused, without taking anything; the wait in
    /// whole seconds when it would.
    pub fn blocked(&self, key: &str, quota: Quota) -> Option<Step> {
        let now = self.now();
        let tats = lock(&self.tats);
        let step = gcra(tats.get(key).copied(), now, quota);
        (!step.allowed).then_some(step)
    }
}

#[async_trait]
impl Limiter for MemoryLimiter {
    async fn take(&self, key: &str, class: Class, quota: Quota) -> Result<RateInfo, ApiError> {
        let step = self.step(key, quota);
        let info = RateInfo::from_step(class, quota, &step);
        if step.allowed {
            Ok(info)
        } else {
            Err(ApiError::RateLimited(info))
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

// ------------------------------------------------------------------------ leased budgets

/// How long leased units stay spendable. Units not spent within this time after their lease go
/// back to the database.
pub const LEASE_HOLD: Duration = Duration::from_secs(1);
const HOLD_NANOS: i64 = 1_000_000_000;
/// A lease covers the demand the instance saw over the last period of this length.
const DEMAND_PERIOD_NANOS: i64 = 250_000_000;
/// Compare-and-swap attempts on one lease before the request is refused as contended (each lost
/// attempt means another instance leased in between).
const SWAP_ATTEMPTS: usize = 8;
/// The wait answered when every swap attempt lost (not remembered as a refusal).
const CONTENDED_RETRY_NANOS: i64 = 1_000_000_000;

/// The largest batch an instance leases at once: an eighth of the burst, at least one unit.
pub fn lease_cap(quota: Quota) -> u32 {
    (quota.count / 8).max(1)
}

/// What one database round gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lease {
    /// Units leased (0: refused).
    granted: u32,
    /// How far the shared TAT runs ahead of the database's clock afterwards.
    ahead: i64,
    /// When refused: nanoseconds until one unit fits.
    retry: i64,
    /// Refused because every swap attempt lost to another instance, not for want of budget.
    contended: bool,
}

/// The GCRA step for up to `want` units at once against the stored `tat` at `now`: as many as
/// fit (at most `want`), and the TAT to store when any did. With `want` = 1 it is [`gcra`].
fn lease_step(tat: Option<i64>, now: i64, want: u32, quota: Quota) -> (Lease, Option<i64>) {
    let t = quota.interval_nanos();
    let tau = quota.tolerance_nanos();
    let base = tat.unwrap_or(now).max(now);
    let ahead = base.saturating_sub(now);
    let fit = (tau.saturating_sub(ahead) / t).max(0);
    let granted = u32::try_from(fit.min(i64::from(want))).unwrap_or(0);
    if granted == 0 {
        let retry = ahead.saturating_add(t).saturating_sub(tau).max(0);
        let lease = Lease {
            granted: 0,
            ahead,
            retry,
            contended: false,
        };
        return (lease, None);
    }
    let new = base.saturating_add(i64::from(granted).saturating_mul(t));
    let lease = Lease {
        granted,
        ahead: new.saturating_sub(now),
        retry: 0,
        contended: false,
    };
    (lease, Some(new))
}

/// Local monotonic nanoseconds (a trait so that tests drive time by hand).
trait Clock: Send + Sync + std::fmt::Debug {
    fn nanos(&self) -> i64;
}

#[derive(Debug)]
struct Monotonic(Instant);

impl Clock for Monotonic {
    fn nanos(&self) -> i64 {
        i64::try_from(self.0.elapsed().as_nanos()).unwrap_or(i64::MAX)
    }
}

/// One budget (key) on this instance.
#[derive(Debug, Default)]
struct Slot {
    state: Mutex<SlotState>,
    /// Held while leasing, so an instance has at most one lease of a key in flight; requests
    /// that find no unit wait here and mostly find one when the lease lands.
    gate: tokio::sync::Mutex<()>,
    /// Requests waiting on `gate` (they size the next lease).
    waiting: AtomicU32,
}

#[derive(Debug, Default)]
struct SlotState {
    /// Leased units not spent yet, spendable until `leased_at + LEASE_HOLD`.
    units: u32,
    leased_at: i64,
    /// The interval of the units held: what each is worth when handed back.
    interval: i64,
    /// Nanoseconds of expired units still to hand back.
    owed: i64,
    /// How far the shared TAT ran ahead of the database's clock, as seen at `seen_at`.
    ahead: i64,
    seen_at: i64,
    /// The database refused: refuse here, without asking it, until this time.
    blocked_until: Option<i64>,
    /// The size of the last lease, and whether all of it was spent within its hold: then the
    /// next lease may be twice as large, whatever the timing of the requests.
    last_granted: u32,
    spent_out: bool,
    /// Requests seen in the current and in the previous demand period.
    period_start: i64,
    this_period: u32,
    last_period: u32,
}

/// What a slot can answer without the database.
enum Local {
    Allowed(RateInfo),
    Refused(RateInfo),
    Lease,
}

impl SlotState {
    fn count_request(&mut self, now: i64) {
        let since = now.saturating_sub(self.period_start);
        if since >= DEMAND_PERIOD_NANOS {
            self.last_period = if since >= 2 * DEMAND_PERIOD_NANOS {
                0
            } else {
                self.this_period
            };
            self.this_period = 0;
            self.period_start = now;
        }
        self.this_period = self.this_period.saturating_add(1);
    }

    /// Units past their hold become owed to the database.
    fn expire(&mut self, now: i64) {
        if self.units > 0 && now.saturating_sub(self.leased_at) >= HOLD_NANOS {
            self.surrender();
        }
    }

    fn surrender(&mut self) {
        let worth = i64::from(self.units).saturating_mul(self.interval);
        self.owed = self.owed.saturating_add(worth);
        self.units = 0;
        self.spent_out = false;
    }

    /// The shared TAT's lead over now, as last seen and aged by the local clock.
    fn shared_ahead(&self, now: i64) -> i64 {
        self.ahead
            .saturating_sub(now.saturating_sub(self.seen_at))
            .max(0)
    }

    /// The figures of an allowed request: the TAT as if this instance's leased units were
    /// spent (exact with one instance).
    fn allowed_info(&self, class: Class, quota: Quota, now: i64) -> RateInfo {
        let t = quota.interval_nanos();
        let held = i64::from(self.units).saturating_mul(t);
        let pending = self.shared_ahead(now).saturating_sub(held).max(0);
        let remaining =
            (quota.tolerance_nanos().saturating_sub(pending) / t).clamp(0, i64::from(quota.count));
        let step = Step {
            allowed: true,
            tat: 0,
            remaining: u32::try_from(remaining).unwrap_or(0),
            reset_nanos: pending,
            retry_nanos: 0,
        };
        RateInfo::from_step(class, quota, &step)
    }

    fn refused_info(&self, class: Class, quota: Quota, now: i64, until: i64) -> RateInfo {
        let step = Step {
            allowed: false,
            tat: 0,
            remaining: 0,
            reset_nanos: self.shared_ahead(now),
            retry_nanos: until.saturating_sub(now),
        };
        RateInfo::from_step(class, quota, &step)
    }

    fn local(&mut self, class: Class, quota: Quota, now: i64) -> Local {
        self.expire(now);
        if self.units > 0 {
            self.units -= 1;
            self.spent_out = self.units == 0;
            return Local::Allowed(self.allowed_info(class, quota, now));
        }
        if let Some(until) = self.blocked_until {
            if now < until {
                return Local::Refused(self.refused_info(class, quota, now, until));
            }
            self.blocked_until = None;
        }
        Local::Lease
    }

    /// How many units to lease: this request and those queued behind it, the demand of the last
    /// demand period, and twice the last lease when it was spent out within its hold; at most
    /// [`lease_cap`].
    fn want(&self, queued: u32, quota: Quota, now: i64) -> u32 {
        let demand = self.this_period.max(self.last_period);
        let recent = now.saturating_sub(self.leased_at) < HOLD_NANOS;
        let grown = if self.spent_out && recent {
            self.last_granted.saturating_mul(2)
        } else {
            0
        };
        queued.max(demand).max(grown).clamp(1, lease_cap(quota))
    }

    fn idle(&self, now: i64) -> bool {
        self.units == 0
            && self.owed == 0
            && self.blocked_until.is_none_or(|until| until <= now)
            && now.saturating_sub(self.period_start) >= 2 * DEMAND_PERIOD_NANOS
    }
}

/// Budgets shared by every instance on the database, leased in batches (see the module
/// documentation); falls back to memory when the store keeps no shared state (SQLite).
#[derive(Debug)]
pub struct StoreLimiter {
    tats: Arc<dyn SharedTats>,
    clock: Arc<dyn Clock>,
    fallback: MemoryLimiter,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

impl StoreLimiter {
    /// The limiter over the shared TATs of the database (`Service::shared_tats`).
    pub fn new(tats: Arc<dyn SharedTats>) -> Self {
        Self::with_parts(tats, Arc::new(Monotonic(Instant::now())))
    }

    fn with_parts(tats: Arc<dyn SharedTats>, clock: Arc<dyn Clock>) -> Self {
        StoreLimiter {
            tats,
            clock,
            fallback: MemoryLimiter::default(),
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Starts the task that hands expired leases back to the database four times per
    /// [`LEASE_HOLD`]. It ends when the limiter is dropped. Call inside a tokio runtime.
    pub fn spawn_give_backs(self: &Arc<Self>) {
        let limiter = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(LEASE_HOLD / 4);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(limiter) = limiter.upgrade() else {
                    break;
                };
                limiter.give_back_expired().await;
            }
        });
    }

    /// Hands back the units whose hold has passed.
    pub async fn give_back_expired(&self) {
        self.give_back(false).await;
    }

    /// Hands back every unit not spent yet (graceful shutdown); they are not spent afterwards.
    pub async fn give_back_all(&self) {
        self.give_back(true).await;
    }

    async fn give_back(&self, all: bool) {
        let now = self.clock.nanos();
        // Collected under the map's lock (then each slot's: the only order both are taken in),
        // handed back without it.
        let owed: Vec<(String, i64)> = {
            let mut slots = lock(&self.slots);
            if slots.len() >= PRUNE_AT {
                // Only this map holds a pruned slot, so no request can be using it.
                slots.retain(|_, slot| Arc::strong_count(slot) > 1 || !lock(&slot.state).idle(now));
            }
            slots
                .iter()
                .filter_map(|(key, slot)| {
                    let mut state = lock(&slot.state);
                    if all {
                        state.surrender();
                    } else {
                        state.expire(now);
                    }
                    let owed = std::mem::take(&mut state.owed);
                    (owed > 0).then(|| (key.clone(), owed))
                })
                .collect()
        };
        for (key, nanos) in owed {
            if let Err(e) = self.tats.give_back(&key, nanos).await {
                // The units stay spent in the database: the budget is only the smaller for it.
                tracing::warn!(error = %e, "could not hand back unspent rate-limit units");
            }
        }
    }

    fn slot(&self, key: &str) -> Arc<Slot> {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(key) {
            return slot.clone();
        }
        let slot = Arc::new(Slot::default());
        slots.insert(key.to_owned(), slot.clone());
        slot
    }

    /// Leases up to `want` units of `key`: read the TAT, advance it by the batch with a
    /// compare-and-swap, and read again when another instance moved it first. `None` when the
    /// store keeps no shared state.
    async fn lease(
        &self,
        key: &str,
        want: u32,
        quota: Quota,
    ) -> Result<Option<Lease>, ServiceError> {
        let mut ahead = 0;
        for _ in 0..SWAP_ATTEMPTS {
            let Some(row) = self.tats.read(key).await? else {
                return Ok(None);
            };
            let (lease, new) = lease_step(row.tat, row.now_nanos, want, quota);
            let Some(new) = new else {
                return Ok(Some(lease));
            };
            if self.tats.swap(key, row.tat, new).await? {
                return Ok(Some(lease));
            }
            ahead = lease.ahead;
        }
        Ok(Some(Lease {
            granted: 0,
            ahead,
            retry: CONTENDED_RETRY_NANOS,
            contended: true,
        }))
    }
}

#[async_trait]
impl Limiter for StoreLimiter {
    async fn take(&self, key: &str, class: Class, quota: Quota) -> Result<RateInfo, ApiError> {
        let slot = self.slot(key);
        {
            let mut state = lock(&slot.state);
            let now = self.clock.nanos();
            state.count_request(now);
            match state.local(class, quota, now) {
                Local::Allowed(info) => return Ok(info),
                Local::Refused(info) => return Err(ApiError::RateLimited(info)),
                Local::Lease => {}
            }
        }
        slot.waiting.fetch_add(1, Ordering::Relaxed);
        let _gate = slot.gate.lock().await;
        slot.waiting.fetch_sub(1, Ordering::Relaxed);
        let want = {
            let mut state = lock(&slot.state);
            let now = self.clock.nanos();
            match state.local(class, quota, now) {
                Local::Allowed(info) => return Ok(info),
                Local::Refused(info) => return Err(ApiError::RateLimited(info)),
                Local::Lease => {}
            }
            let queued = slot.waiting.load(Ordering::Relaxed).saturating_add(1);
            state.want(queued, quota, now)
        };
        let Some(lease) = self.lease(key, want, quota).await.map_err(ApiError::from)? else {
            return self.fallback.take(key, class, quota).await;
        };
        let mut state = lock(&slot.state);
        let now = self.clock.nanos();
        state.ahead = lease.ahead;
        state.seen_at = now;
        if lease.granted > 0 {
            state.units = state.units.saturating_add(lease.granted - 1);
            state.last_granted = lease.granted;
            state.spent_out = state.units == 0;
            state.leased_at = now;
            state.interval = quota.interval_nanos();
            state.blocked_until = None;
            return Ok(state.allowed_info(class, quota, now));
        }
        let until = now.saturating_add(lease.retry);
        if !lease.contended {
            state.blocked_until = Some(until);
        }
        Err(ApiError::RateLimited(
            state.refused_info(class, quota, now, until),
        ))
    }
}

#[cfg(test)]
mod tests;
