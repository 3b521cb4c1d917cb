//! Rate limits (D17): GCRA (the generic cell rate algorithm) per (workspace, class) with a burst
//! equal to the per-window figure, and per client address for requests without a valid token.
//!
//! * [`gcra`] is the pure step: given the stored theoretical arrival time (TAT) and `now`, it
//!   says whether one more request fits and what the new TAT is. A refused request leaves the
//!   TAT alone, so hammering during a lockout does not extend it.
//! * [`Limiter`] is where TATs live: [`MemoryLimiter`] in the process (SQLite, and the per-address
//!   limit everywhere); [`StoreLimiter`] in the database through `Store::rate_limit_take` (one
//!   statement per request), so every instance sharing a PostgreSQL database shares the budget.
//! * [`RateInfo`] carries the figures of the IETF draft-11 headers `RateLimit-Policy`
//!   (`"reads";q=120;w=60`) and `RateLimit` (`"reads";r=87;t=23`), and `Retry-After` on a 429.

use crate::error::ApiError;
use actix_web::http::header::{HeaderName, HeaderValue};
use apidrift_store::Store;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A limited class of requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Read routes: 120 per minute per workspace.
    Reads,
    /// Checks and baseline captures: 30 per minute per workspace.
    Checks,
    /// Creates (POST /endpoints, a bulk request counts once): 30 per minute per workspace.
    Creates,
    /// Requests without a valid token: 60 per minute per client address.
    Unauthenticated,
}

impl Class {
    /// The policy name in the headers.
    pub const fn as_str(self) -> &'static str {
        match self {
            Class::Reads => "reads",
            Class::Checks => "checks",
            Class::Creates => "creates",
            Class::Unauthenticated => "unauthenticated",
        }
    }
}

/// `count` requests per `window_secs`, with a burst of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub count: u32,
    pub window_secs: u32,
}

impl Quota {
    /// `count` per minute.
    pub const fn per_minute(count: u32) -> Self {
        Quota {
            count,
            window_secs: 60,
        }
    }

    /// Nanoseconds between two requests at the sustained rate (the emission interval).
    pub fn interval_nanos(self) -> i64 {
        let window = i64::from(self.window_secs.max(1)) * 1_000_000_000;
        (window / i64::from(self.count.max(1))).max(1)
    }

    /// How far ahead of `now` the TAT may run: the whole burst.
    pub fn tolerance_nanos(self) -> i64 {
        self.interval_nanos() * i64::from(self.count.max(1))
    }
}

/// The configured limits (D17 defaults: reads 120/min, checks 30/min, creates 30/min,
/// unauthenticated 60/min per address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    pub reads: Quota,
    pub checks: Quota,
    pub creates: Quota,
    pub unauthenticated: Quota,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            reads: Quota::per_minute(120),
            checks: Quota::per_minute(30),
            creates: Quota::per_minute(30),
            unauthenticated: Quota::per_minute(60),
        }
    }
}

impl RateLimits {
    pub fn quota(&self, class: Class) -> Quota {
        match class {
            Class::Reads => self.reads,
            Class::Checks => self.checks,
            Class::Creates => self.creates,
            Class::Unauthenticated => self.unauthenticated,
        }
    }
}

/// The outcome of one [`gcra`] step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub allowed: bool,
    /// The TAT to store (unchanged when refused).
    pub tat: i64,
    /// Requests still allowed right now.
    pub remaining: u32,
    /// Nanoseconds until the whole burst is available again.
    pub reset_nanos: i64,
    /// Nanoseconds until one request is allowed (0 when allowed).
    pub retry_nanos: i64,
}

/// One GCRA step for a request at `now` (nanoseconds on any clock) against the stored `tat`.
pub fn gcra(tat: Option<i64>, now: i64, quota: Quota) -> Step {
    let t = quota.interval_nanos();
    let tau = quota.tolerance_nanos();
    let base = tat.unwrap_or(now).max(now);
    let new_tat = base.saturating_add(t);
    if new_tat - now <= tau {
        let remaining = (tau - (new_tat - now)) / t;
        Step {
            allowed: true,
            tat: new_tat,
            remaining: u32::try_from(remaining).unwrap_or(0),
            reset_nanos: new_tat - now,
            retry_nanos: 0,
        }
    } else {
        Step {
            allowed: false,
            tat: base,
            remaining: 0,
            reset_nanos: base - now,
            retry_nanos: new_tat - now - tau,
        }
    }
}

/// The figures of one limited request, for the response headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateInfo {
    pub class: Class,
    pub quota: Quota,
    pub remaining: u32,
    /// Whole seconds until the burst is fully available again (`t`).
    pub reset_secs: u64,
    /// Whole seconds to wait before retrying (at least 1); meaningful on a 429.
    pub retry_after: u64,
}

fn ceil_secs(nanos: i64) -> u64 {
    u64::try_from(nanos.max(0))
        .unwrap_or(0)
        .div_ceil(1_000_000_000)
}

impl RateInfo {
    pub fn from_step(class: Class, quota: Quota, step: &Step) -> Self {
        RateInfo {
            class,
            quota,
            remaining: step.remaining,
            reset_secs: ceil_secs(step.reset_nanos),
            retry_after: ceil_secs(step.retry_nanos).max(1),
        }
    }

    /// `RateLimit-Policy` and `RateLimit` (IETF draft-11).
    pub fn headers(&self) -> [(HeaderName, HeaderValue); 2] {
        let name = self.class.as_str();
        let policy = format!(
            "\"{name}\";q={};w={}",
            self.quota.count, self.quota.window_secs
        );
        let state = format!("\"{name}\";r={};t={}", self.remaining, self.reset_secs);
        [
            (
                HeaderName::from_static("ratelimit-policy"),
                HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static("")),
            ),
            (
                HeaderName::from_static("ratelimit"),
                HeaderValue::from_str(&state).unwrap_or(HeaderValue::from_static("")),
            ),
        ]
    }
}

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
        let mut tats = self.tats.lock().unwrap_or_else(|p| p.into_inner());
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
        let tats = self.tats.lock().unwrap_or_else(|p| p.into_inner());
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

/// TATs in the database, shared by every instance; falls back to memory when the store keeps
/// no shared state (SQLite).
#[derive(Debug)]
pub struct StoreLimiter {
    store: Arc<dyn Store>,
    fallback: MemoryLimiter,
}

impl StoreLimiter {
    pub fn new(store: Arc<dyn Store>) -> Self {
        StoreLimiter {
            store,
            fallback: MemoryLimiter::default(),
        }
    }
}

#[async_trait]
impl Limiter for StoreLimiter {
    async fn take(&self, key: &str, class: Class, quota: Quota) -> Result<RateInfo, ApiError> {
        let outcome = self
            .store
            .rate_limit_take(key, quota.interval_nanos(), quota.tolerance_nanos())
            .await
            .map_err(ApiError::store)?;
        let Some(outcome) = outcome else {
            return self.fallback.take(key, class, quota).await;
        };
        let step = Step {
            allowed: outcome.allowed,
            tat: 0,
            remaining: outcome.remaining,
            reset_nanos: outcome.reset_nanos,
            retry_nanos: outcome.retry_nanos,
        };
        let info = RateInfo::from_step(class, quota, &step);
        if step.allowed {
            Ok(info)
        } else {
            Err(ApiError::RateLimited(info))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: i64 = 1_000_000_000;

    #[test]
    fn burst_then_refusal_then_one_after_retry() {
        let q = Quota::per_minute(120);
        let mut tat = None;
        for i in 0..120 {
            let s = gcra(tat, 0, q);
            assert!(s.allowed, "request {i}");
            assert_eq!(s.remaining, 119 - i);
            tat = Some(s.tat);
        }
        let refused = gcra(tat, 0, q);
        assert!(!refused.allowed);
        assert_eq!(refused.tat, 60 * SEC, "a refusal leaves the TAT alone");
        assert_eq!(ceil_secs(refused.retry_nanos), 1);
        assert_eq!(ceil_secs(refused.reset_nanos), 60);
        // A refusal does not extend the lockout: still one allowed after the retry delay.
        let again = gcra(Some(refused.tat), 0, q);
        assert_eq!(again, refused);
        let later = gcra(Some(refused.tat), refused.retry_nanos, q);
        assert!(later.allowed);
        assert!(!gcra(Some(later.tat), refused.retry_nanos, q).allowed);
    }

    #[test]
    fn idle_budget_does_not_accumulate_past_the_burst() {
        let q = Quota::per_minute(3);
        let s = gcra(Some(0), 3600 * SEC, q);
        assert!(s.allowed);
        assert_eq!(s.remaining, 2);
    }

    #[test]
    fn retry_after_is_at_least_one_second() {
        let q = Quota {
            count: 1000,
            window_secs: 1,
        };
        let mut tat = None;
        for _ in 0..1000 {
            tat = Some(gcra(tat, 0, q).tat);
        }
        let refused = gcra(tat, 0, q);
        let info = RateInfo::from_step(Class::Reads, q, &refused);
        assert!(!refused.allowed);
        assert_eq!(info.retry_after, 1);
    }

    #[test]
    fn memory_limiter_keys_are_independent() {
        let l = MemoryLimiter::default();
        let q = Quota::per_minute(2);
        assert!(l.step("a", q).allowed && l.step("a", q).allowed);
        assert!(!l.step("a", q).allowed);
        assert!(l.blocked("a", q).is_some());
        assert!(l.step("b", q).allowed);
        assert!(l.blocked("b", q).is_none());
    }

    #[test]
    fn store_formula_matches_the_memory_step() {
        let q = Quota::per_minute(3);
        let (t, tau) = (q.interval_nanos(), q.tolerance_nanos());
        let mut tat = None;
        for now in [0, 0, 0, 0, 5 * SEC, 25 * SEC] {
            let step = gcra(tat, now, q);
            let written = step.allowed.then_some(step.tat);
            let o = apidrift_store::RateLimitOutcome::from_tats(now, tat, written, t, tau);
            assert_eq!(
                (o.allowed, o.remaining, o.reset_nanos, o.retry_nanos),
                (
                    step.allowed,
                    step.remaining,
                    step.reset_nanos,
                    step.retry_nanos
                ),
                "at {now}"
            );
            if step.allowed {
                tat = Some(step.tat);
            }
        }
    }

    #[test]
    fn headers_follow_draft_11() {
        let info = RateInfo {
            class: Class::Reads,
            quota: Quota::per_minute(120),
            remaining: 87,
            reset_secs: 23,
            retry_after: 1,
        };
        let [(p, pv), (s, sv)] = info.headers();
        assert_eq!(p.as_str(), "ratelimit-policy");
        assert_eq!(pv.to_str().ok(), Some("\"reads\";q=120;w=60"));
        assert_eq!(s.as_str(), "ratelimit");
        assert_eq!(sv.to_str().ok(), Some("\"reads\";r=87;t=23"));
    }
}
