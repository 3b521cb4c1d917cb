//! Process-wide counters of the check pipeline and the worker loops, rendered in the Prometheus
//! text exposition format (0.0.4) by `GET /metrics` (crate `apidrift-api`).
//!
//! A small hand-written registry: fixed label sets, one atomic per series, no allocation on the
//! hot path. Families:
//!
//! * `apidrift_checks_total{trigger,result}` — checks that ran. `trigger` is `manual` (API,
//!   console) or `scheduled` (the worker); `result` is `clean` (no change), `drift` (a diff was
//!   recorded) or `error` (the fetch produced no response, or the pipeline failed). A check
//!   refused before it ran (unknown endpoint, no baseline, quota exhausted) is not counted.
//! * `apidrift_check_duration_seconds` — histogram of those checks' wall time.
//! * `apidrift_schedule_lag_seconds` — histogram of how late each scheduled run started after
//!   its slot was due.
//! * `apidrift_deliveries_total{result}` — webhook delivery attempts: `delivered` (2xx),
//!   `retry` (failed, tried again later) or `failed` (failed and given up).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What started a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `POST …/check` or the console's "Check now".
    Manual,
    /// The worker's schedule loop.
    Scheduled,
}

impl Trigger {
    pub const ALL: [Trigger; 2] = [Trigger::Manual, Trigger::Scheduled];

    pub const fn as_str(self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            Trigger::Scheduled => "scheduled",
        }
    }
}

/// How a check that ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckResult {
    Clean,
    Drift,
    Error,
}

impl CheckResult {
    pub const ALL: [CheckResult; 3] = [CheckResult::Clean, CheckResult::Drift, CheckResult::Error];

    pub const fn as_str(self) -> &'static str {
        match self {
            CheckResult::Clean => "clean",
            CheckResult::Drift => "drift",
            CheckResult::Error => "error",
        }
    }
}

/// How one delivery attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryResult {
    Delivered,
    Retry,
    Failed,
}

impl DeliveryResult {
    pub const ALL: [DeliveryResult; 3] = [
        DeliveryResult::Delivered,
        DeliveryResult::Retry,
        DeliveryResult::Failed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryResult::Delivered => "delivered",
            DeliveryResult::Retry => "retry",
            DeliveryResult::Failed => "failed",
        }
    }
}

/// A histogram with fixed upper bounds (seconds). Observations are counted in the first bucket
/// whose bound they do not exceed (the `+Inf` bucket is the total count); the sum is kept in
/// microseconds.
#[derive(Debug)]
pub struct Histogram<const N: usize> {
    bounds: [f64; N],
    buckets: [AtomicU64; N],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl<const N: usize> Histogram<N> {
    /// `bounds` must be strictly increasing.
    pub const fn new(bounds: [f64; N]) -> Self {
        Histogram {
            bounds,
            buckets: [const { AtomicU64::new(0) }; N],
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: Duration) {
        let secs = value.as_secs_f64();
        if let Some(i) = self.bounds.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        let micros = u64::try_from(value.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Writes the `_bucket`, `_sum` and `_count` samples of `name`; `labels` are extra
    /// `key="value"` pairs (already escaped, comma separated) or empty.
    pub fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        // Read the count first: buckets observed after it can only make `+Inf` look smaller
        // than a bucket for one scrape, so take the larger of the two for `+Inf`.
        let count = self.count();
        let mut cumulative = 0u64;
        for (bound, bucket) in self.bounds.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{}\"}} {cumulative}",
                format_float(*bound)
            );
        }
        let total = count.max(cumulative);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {total}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        if labels.is_empty() {
            let _ = writeln!(out, "{name}_sum {}", format_float(sum));
            let _ = writeln!(out, "{name}_count {total}");
        } else {
            let _ = writeln!(out, "{name}_sum{{{labels}}} {}", format_float(sum));
            let _ = writeln!(out, "{name}_count{{{labels}}} {total}");
        }
    }
}

/// A float as Prometheus writes it (`0.5`, `10`, `1e-06` is fine but we never need it).
pub fn format_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Writes the `# HELP` and `# TYPE` lines of a family.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Buckets of check durations: a check is one HTTP exchange (timeout up to 60 s) plus a diff.
const CHECK_BOUNDS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Buckets of schedule lag: from on time to an hour late (downtime).
const LAG_BOUNDS: [f64; 11] = [
    0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

static CHECKS: [[AtomicU64; 3]; 2] = [const { [const { AtomicU64::new(0) }; 3] }; 2];
static CHECK_DURATION: Histogram<12> = Histogram::new(CHECK_BOUNDS);
static SCHEDULE_LAG: Histogram<11> = Histogram::new(LAG_BOUNDS);
static DELIVERIES: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];

fn trigger_index(t: Trigger) -> usize {
    match t {
        Trigger::Manual => 0,
        Trigger::Scheduled => 1,
    }
}

fn result_index(r: CheckResult) -> usize {
    match r {
        CheckResult::Clean => 0,
        CheckResult::Drift => 1,
        CheckResult::Error => 2,
    }
}

fn delivery_index(r: DeliveryResult) -> usize {
    match r {
        DeliveryResult::Delivered => 0,
        DeliveryResult::Retry => 1,
        DeliveryResult::Failed => 2,
    }
}

/// Counts a check that ran and observes its duration.
pub fn record_check(trigger: Trigger, result: CheckResult, took: Duration) {
    CHECKS[trigger_index(trigger)][result_index(result)].fetch_add(1, Ordering::Relaxed);
    CHECK_DURATION.observe(took);
}

/// Observes how late a scheduled run started.
pub fn record_schedule_lag(lag: Duration) {
    SCHEDULE_LAG.observe(lag);
}

/// Counts one delivery attempt.
pub fn record_delivery(result: DeliveryResult) {
    DELIVERIES[delivery_index(result)].fetch_add(1, Ordering::Relaxed);
}

/// Checks counted so far with these labels.
pub fn checks_total(trigger: Trigger, result: CheckResult) -> u64 {
    CHECKS[trigger_index(trigger)][result_index(result)].load(Ordering::Relaxed)
}

/// Delivery attempts counted so far with this result.
pub fn deliveries_total(result: DeliveryResult) -> u64 {
    DELIVERIES[delivery_index(result)].load(Ordering::Relaxed)
}

/// Writes this module's four families, every series present (zeros included).
pub fn render(out: &mut String) {
    family(
        out,
        "apidrift_checks_total",
        "counter",
        "Checks that ran, by what started them and how they ended.",
    );
    for t in Trigger::ALL {
        for r in CheckResult::ALL {
            let _ = writeln!(
                out,
                "apidrift_checks_total{{trigger=\"{}\",result=\"{}\"}} {}",
                t.as_str(),
                r.as_str(),
                checks_total(t, r)
            );
        }
    }
    family(
        out,
        "apidrift_check_duration_seconds",
        "histogram",
        "Wall time of the checks that ran.",
    );
    CHECK_DURATION.render(out, "apidrift_check_duration_seconds", "");
    family(
        out,
        "apidrift_schedule_lag_seconds",
        "histogram",
        "How late scheduled runs started after their slot was due.",
    );
    SCHEDULE_LAG.render(out, "apidrift_schedule_lag_seconds", "");
    family(
        out,
        "apidrift_deliveries_total",
        "counter",
        "Webhook delivery attempts by outcome.",
    );
    for r in DeliveryResult::ALL {
        let _ = writeln!(
            out,
            "apidrift_deliveries_total{{result=\"{}\"}} {}",
            r.as_str(),
            deliveries_total(r)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_with_sum_and_count() {
        let h = Histogram::new([0.1, 1.0]);
        h.observe(Duration::from_millis(50));
        h.observe(Duration::from_millis(100));
        h.observe(Duration::from_millis(500));
        h.observe(Duration::from_secs(3));
        let mut out = String::new();
        h.render(&mut out, "x", "route=\"/a\"");
        assert_eq!(
            out,
            "x_bucket{route=\"/a\",le=\"0.1\"} 2\n\
             x_bucket{route=\"/a\",le=\"1\"} 3\n\
             x_bucket{route=\"/a\",le=\"+Inf\"} 4\n\
             x_sum{route=\"/a\"} 3.65\n\
             x_count{route=\"/a\"} 4\n"
        );
        let mut bare = String::new();
        Histogram::new([1.0]).render(&mut bare, "y", "");
        assert_eq!(
            bare,
            "y_bucket{le=\"1\"} 0\ny_bucket{le=\"+Inf\"} 0\ny_sum 0\ny_count 0\n"
        );
    }

    #[test]
    fn counters_move_and_every_series_is_rendered() {
        let before = checks_total(Trigger::Scheduled, CheckResult::Drift);
        record_check(
            Trigger::Scheduled,
            CheckResult::Drift,
            Duration::from_millis(20),
        );
        assert_eq!(
            checks_total(Trigger::Scheduled, CheckResult::Drift),
            before + 1
        );
        let d = deliveries_total(DeliveryResult::Retry);
        record_delivery(DeliveryResult::Retry);
        assert_eq!(deliveries_total(DeliveryResult::Retry), d + 1);
        record_schedule_lag(Duration::from_secs(2));
        let mut out = String::new();
        render(&mut out);
        for t in Trigger::ALL {
            for r in CheckResult::ALL {
                let series = format!(
                    "apidrift_checks_total{{trigger=\"{}\",result=\"{}\"}} ",
                    t.as_str(),
                    r.as_str()
                );
                assert!(out.contains(&series), "{series} missing");
            }
        }
        for name in [
            "apidrift_check_duration_seconds_count ",
            "apidrift_schedule_lag_seconds_bucket{le=\"+Inf\"} ",
            "apidrift_deliveries_total{result=\"failed\"} ",
        ] {
            assert!(out.contains(name), "{name} missing");
        }
    }
}
