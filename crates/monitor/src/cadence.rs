//! The arithmetic of schedules: a cadence's period and the next run of a slot. Used by the
//! scheduler and by a scheduled check's finish (the monitor), so it depends on neither.

use apidrift_model::Cadence;
use std::time::Duration;
use time::OffsetDateTime;

/// The period of a cadence (a month is 30 days).
pub fn period_of(cadence: Cadence) -> Duration {
    Duration::from_secs(cadence.seconds())
}

/// The next run after a run of the slot `due` that happened at `now`: `due + period`, or when
/// that is already past (downtime), the first slot of the same phase after `now`.
pub fn next_run(due: OffsetDateTime, now: OffsetDateTime, period: Duration) -> OffsetDateTime {
    let p = time::Duration::try_from(period).unwrap_or(time::Duration::HOUR);
    let next = due + p;
    if next > now || p <= time::Duration::ZERO {
        return next;
    }
    let p_us = p.whole_microseconds().max(1);
    let behind = (now - due).whole_microseconds();
    let slots = behind / p_us + 1;
    due + time::Duration::microseconds(i64::try_from(slots * p_us).unwrap_or(i64::MAX))
}
