//! Retrying a whole transaction that the database aborted for a transient conflict (issue 23):
//! a PostgreSQL deadlock (`40P01`) or serialization failure (`40001`) rolls the transaction back
//! entirely, so running it again from the start is safe and usually succeeds at once.
//!
//! The policy is the same for every adapter that needs it: at most [`MAX_ATTEMPTS`] runs, with a
//! jittered exponential pause between them ([`backoff`]), so two transactions that deadlocked do
//! not meet again in lock step. Only whole transactions (or single auto-committed statements) are
//! retried, never a part of one: a failure at any other point, or after the commit started, is
//! answered as it is.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// Most runs of one transaction (the first included).
pub const MAX_ATTEMPTS: u32 = 5;

/// The pause of the first retry before jitter; it doubles with every further retry.
const BASE: Duration = Duration::from_millis(10);

/// The longest pause before jitter.
const CAP: Duration = Duration::from_millis(160);

/// The pause after failed run `attempt` (1-based): half to all of `BASE * 2^(attempt - 1)`,
/// capped at [`CAP`], the fraction drawn at random.
pub fn backoff(attempt: u32) -> Duration {
    let ceiling = BASE
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(CAP);
    let half = ceiling / 2;
    // `RandomState` is seeded at random (per thread, then incremented): enough for jitter, and
    // no random-number crate in the store.
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(attempt);
    let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX).max(1);
    half + Duration::from_nanos(hasher.finish() % nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_stay_bounded_and_vary() {
        for attempt in 1..=MAX_ATTEMPTS + 3 {
            let ceiling = (BASE * 2u32.pow((attempt - 1).min(10))).min(CAP);
            for _ in 0..50 {
                let p = backoff(attempt);
                assert!(p >= ceiling / 2 && p <= ceiling, "{attempt}: {p:?}");
            }
        }
        let pauses: std::collections::BTreeSet<Duration> = (0..20).map(|_| backoff(3)).collect();
        assert!(pauses.len() > 1, "jittered: {pauses:?}");
        assert!(backoff(0) <= BASE);
    }
}
