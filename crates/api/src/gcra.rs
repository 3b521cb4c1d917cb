//! The pure arithmetic of the rate limits (D17) and the figures they answer with: the limited
//! [`Class`]es, a [`Quota`], one [`gcra`] step (the generic cell rate algorithm, with a burst equal
//! to the per-window figure), and [`RateInfo`], which renders the IETF draft-11 headers
//! `RateLimit-Policy` (`"reads";q=120;w=60`) and `RateLimit` (`"reads";r=87;t=23`) and the wait
//! of a 429. No I/O and no error type: [`crate::error`] and [`crate::ratelimit`] both build on it.

use actix_web::http::header::{HeaderName, HeaderValue};

/// A limited class of requests: the application's [`RateClass`](apidrift_app::RateClass), whose
/// action table names the class of every route and form.
pub use apidrift_app::RateClass as Class;

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

pub(crate) fn ceil_secs(nanos: i64) -> u64 {
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

    /// The wait of a 429 in words: `1 second`, `2 seconds`.
    pub fn wait_text(&self) -> String {
        match self.retry_after {
            1 => "1 second".to_owned(),
            n => format!("{n} seconds"),
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
        assert_eq!(info.wait_text(), "1 second");
    }

    #[test]
    fn the_wait_reads_as_english() {
        let info = |retry_after| RateInfo {
            class: Class::Checks,
            quota: Quota::per_minute(30),
            remaining: 0,
            reset_secs: 60,
            retry_after,
        };
        assert_eq!(info(1).wait_text(), "1 second");
        assert_eq!(info(2).wait_text(), "2 seconds");
        assert_eq!(info(30).wait_text(), "30 seconds");
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
