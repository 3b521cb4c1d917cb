//! The limiters: the in-memory one, and the leased one against a fake shared database on a clock
//! driven by hand, as one instance and as several instances sharing the database.

use super::*;
use apidrift_app::ratelimit::RateLimitRow;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize};

const SEC: i64 = 1_000_000_000;
/// The fake database's clock runs on the Unix epoch, the instances' on their own start.
const DB_EPOCH: i64 = 1_790_000_000 * SEC;

#[derive(Debug, Default)]
struct ManualClock(AtomicI64);

impl ManualClock {
    fn advance(&self, nanos: i64) {
        self.0.fetch_add(nanos, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn nanos(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// `rate_limits` in memory, with counters of what the limiters asked.
#[derive(Debug)]
struct FakeDb {
    clock: Arc<ManualClock>,
    tats: Mutex<HashMap<String, i64>>,
    reads: AtomicUsize,
    writes: AtomicUsize,
    lost_swaps: AtomicUsize,
    /// Every swap loses, as if another instance always moved the TAT first.
    always_lose: AtomicBool,
}

impl FakeDb {
    fn new(clock: Arc<ManualClock>) -> Arc<Self> {
        Arc::new(FakeDb {
            clock,
            tats: Mutex::new(HashMap::new()),
            reads: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
            lost_swaps: AtomicUsize::new(0),
            always_lose: AtomicBool::new(false),
        })
    }

    fn tat(&self, key: &str) -> Option<i64> {
        lock(&self.tats).get(key).copied()
    }

    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl SharedTats for FakeDb {
    async fn read(&self, key: &str) -> Result<Option<RateLimitRow>, ServiceError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        // A round trip: other requests run meanwhile.
        tokio::task::yield_now().await;
        Ok(Some(RateLimitRow {
            now_nanos: DB_EPOCH + self.clock.nanos(),
            tat: self.tat(key),
        }))
    }
    async fn swap(&self, key: &str, old: Option<i64>, new: i64) -> Result<bool, ServiceError> {
        tokio::task::yield_now().await;
        let mut tats = lock(&self.tats);
        if self.always_lose.load(Ordering::SeqCst) || tats.get(key).copied() != old {
            self.lost_swaps.fetch_add(1, Ordering::SeqCst);
            return Ok(false);
        }
        tats.insert(key.to_owned(), new);
        self.writes.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }
    async fn give_back(&self, key: &str, nanos: i64) -> Result<(), ServiceError> {
        if let Some(tat) = lock(&self.tats).get_mut(key) {
            *tat -= nanos;
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// A [`SharedTats`] that answers "no shared state", as SQLite does.
#[derive(Debug)]
struct NoSharedState;

#[async_trait]
impl SharedTats for NoSharedState {
    async fn read(&self, _: &str) -> Result<Option<RateLimitRow>, ServiceError> {
        Ok(None)
    }
    async fn swap(&self, _: &str, _: Option<i64>, _: i64) -> Result<bool, ServiceError> {
        Ok(false)
    }
    async fn give_back(&self, _: &str, _: i64) -> Result<(), ServiceError> {
        Ok(())
    }
}

fn instance(db: &Arc<FakeDb>) -> Arc<StoreLimiter> {
    Arc::new(StoreLimiter::with_parts(db.clone(), db.clock.clone()))
}

fn per_hour(count: u32) -> Quota {
    Quota {
        count,
        window_secs: 3600,
    }
}

const KEY: &str = "ws:reads";

/// `n` requests at once on one instance (tasks interleaving at every await).
async fn burst(limiter: &Arc<StoreLimiter>, quota: Quota, n: usize) -> Vec<Result<RateInfo, u64>> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let limiter = limiter.clone();
        tasks.spawn(async move {
            match limiter.take(KEY, Class::Reads, quota).await {
                Ok(info) => Ok(info),
                Err(ApiError::RateLimited(info)) => Err(info.retry_after),
                Err(other) => panic!("unexpected error {other}"),
            }
        });
    }
    let mut out = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        out.push(joined.unwrap_or_else(|e| panic!("task failed: {e}")));
    }
    out
}

fn allowed(results: &[Result<RateInfo, u64>]) -> usize {
    results.iter().filter(|r| r.is_ok()).count()
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
fn a_lease_of_one_is_the_gcra_step() {
    let q = Quota::per_minute(3);
    let mut tat = None;
    for now in [0, 0, 0, 0, 5 * SEC, 25 * SEC, 25 * SEC, 100 * SEC] {
        let step = gcra(tat, now, q);
        let (lease, new) = lease_step(tat, now, 1, q);
        assert_eq!(lease.granted == 1, step.allowed, "at {now}");
        if step.allowed {
            assert_eq!(new, Some(step.tat));
            assert_eq!(lease.ahead, step.reset_nanos);
            tat = new;
        } else {
            assert_eq!(new, None);
            assert_eq!(lease.retry, step.retry_nanos);
            assert_eq!(lease.ahead, step.reset_nanos);
        }
    }
}

#[test]
fn a_lease_takes_what_fits_and_no_more() {
    let q = Quota::per_minute(120);
    let t = q.interval_nanos();
    // A fresh budget: the whole want.
    let (lease, new) = lease_step(None, 0, 20, q);
    assert_eq!((lease.granted, new), (20, Some(20 * t)));
    // Five left: five.
    let (lease, new) = lease_step(Some(115 * t), 0, 20, q);
    assert_eq!((lease.granted, new), (5, Some(120 * t)));
    // None left: refused, with the GCRA's wait.
    let (lease, new) = lease_step(Some(120 * t), 0, 20, q);
    assert_eq!((lease.granted, new, lease.retry), (0, None, t));
    // An idle budget does not accumulate past the burst, and a TAT from before now counts as now.
    let (lease, new) = lease_step(Some(-3600 * SEC), 0, 500, q);
    assert_eq!((lease.granted, new), (120, Some(120 * t)));
    // A TAT beyond the burst (a smaller quota than when it was written) refuses, never panics.
    let (lease, _) = lease_step(Some(i64::MAX), 0, 5, q);
    assert_eq!(lease.granted, 0);
    assert!(lease.retry > 0);
}

#[test]
fn the_lease_cap_is_an_eighth_of_the_burst() {
    assert_eq!(lease_cap(per_hour(1)), 1);
    assert_eq!(lease_cap(per_hour(12)), 1);
    assert_eq!(lease_cap(Quota::per_minute(30)), 3);
    assert_eq!(lease_cap(Quota::per_minute(120)), 15);
}

#[tokio::test]
async fn one_instance_passes_exactly_the_burst_with_few_writes() {
    let db = FakeDb::new(Arc::default());
    let limiter = instance(&db);
    let q = per_hour(120);
    let results = burst(&limiter, q, 500).await;
    assert_eq!(allowed(&results), 120, "exactly the burst passes");
    assert!(
        results
            .iter()
            .all(|r| r.as_ref().err().is_none_or(|&w| w >= 1))
    );
    // Batches of at most 15 units: at least 8 writes; the doubling start costs a few more.
    let writes = db.writes();
    assert!((8..=14).contains(&writes), "{writes} writes for 120 units");
    // The refusal is remembered: 380 refused requests cost one read, not 380.
    assert!(db.reads() <= writes + 2, "{} reads", db.reads());
    // Every unit was spent: nothing to hand back.
    let tat = db.tat(KEY);
    limiter.give_back_all().await;
    assert_eq!(db.tat(KEY), tat);
}

#[tokio::test]
async fn requests_one_after_another_lease_in_doubling_batches() {
    let db = FakeDb::new(Arc::default());
    let limiter = instance(&db);
    let q = Quota::per_minute(120);
    // A client reading every 40 ms: batches of 1, 2, 4, 8, then 15 (the cap), whatever the
    // quarter-second demand says.
    for i in 0..61 {
        assert!(
            limiter.take(KEY, Class::Reads, q).await.is_ok(),
            "request {i}"
        );
        db.clock.advance(40_000_000);
    }
    assert_eq!(db.writes(), 4 + 46usize.div_ceil(15));
    // Slower than the hold: one unit at a time, nothing parked.
    let writes = db.writes();
    db.clock.advance(HOLD_NANOS);
    limiter.give_back_expired().await;
    let gave_back = db.writes() - writes;
    assert!(gave_back <= 1);
    for _ in 0..5 {
        db.clock.advance(2 * HOLD_NANOS);
        assert!(limiter.take(KEY, Class::Reads, q).await.is_ok());
        limiter.give_back_expired().await;
    }
    assert_eq!(db.writes(), writes + gave_back + 5);
}

#[tokio::test]
async fn alone_the_figures_are_those_of_one_gcra() {
    let db = FakeDb::new(Arc::default());
    let limiter = instance(&db);
    let q = Quota::per_minute(30);
    let mut tat = None;
    for i in 0..40 {
        let step = gcra(tat, 0, q);
        let expected = RateInfo::from_step(Class::Checks, q, &step);
        match limiter.take("ws:checks", Class::Checks, q).await {
            Ok(info) => {
                assert!(step.allowed, "request {i} passed, one GCRA refuses it");
                assert_eq!(info, expected, "request {i}");
                tat = Some(step.tat);
            }
            Err(ApiError::RateLimited(info)) => {
                assert!(!step.allowed, "request {i} refused, one GCRA passes it");
                assert_eq!(info, expected, "request {i}");
            }
            Err(other) => panic!("{other}"),
        }
    }
}

#[tokio::test]
async fn a_refusal_is_remembered_until_its_retry_time() {
    let db = FakeDb::new(Arc::default());
    let limiter = instance(&db);
    let q = Quota::per_minute(2);
    assert_eq!(allowed(&burst(&limiter, q, 2).await), 2);
    let refused = burst(&limiter, q, 1).await;
    assert_eq!(refused, vec![Err(30)]);
    let reads = db.reads();
    // Hammering does not reach the database, and the wait counts down.
    db.clock.advance(10 * SEC);
    assert_eq!(burst(&limiter, q, 50).await.first(), Some(&Err(20)));
    assert_eq!(db.reads(), reads);
    // At the retry time, one more fits.
    db.clock.advance(20 * SEC);
    assert_eq!(allowed(&burst(&limiter, q, 3).await), 1);
    assert!(db.reads() > reads);
}

#[tokio::test]
async fn two_instances_share_the_budget_within_the_tolerance() {
    let clock: Arc<ManualClock> = Arc::default();
    let db = FakeDb::new(clock);
    let (a, b) = (instance(&db), instance(&db));
    let q = per_hour(120);
    // Both instances see more demand than the budget, at the same moment.
    let (ra, rb) = tokio::join!(burst(&a, q, 150), burst(&b, q, 150));
    let passed = allowed(&ra) + allowed(&rb);
    assert!(
        allowed(&ra) > 0 && allowed(&rb) > 0,
        "both instances served requests"
    );
    // The requests that lost a race to the other instance read again.
    assert!(db.lost_swaps.load(Ordering::SeqCst) > 0);
    // Never more than the budget; fewer by at most what one instance leased and did not spend.
    let cap = lease_cap(q) as usize;
    assert!(passed <= 120, "{passed} passed");
    assert!(passed > 120 - cap, "{passed} passed");
    // Nothing was double-spent: the passed requests plus the units held add up to the budget.
    a.give_back_all().await;
    b.give_back_all().await;
    let tat = db.tat(KEY).unwrap_or(DB_EPOCH) - DB_EPOCH;
    assert_eq!(tat, passed as i64 * q.interval_nanos());
}

#[tokio::test]
async fn unspent_units_go_back_after_the_hold_and_are_not_spent_after_it() {
    let db = FakeDb::new(Arc::default());
    let (a, b) = (instance(&db), instance(&db));
    let q = per_hour(120);
    let t = q.interval_nanos();
    // Eight requests one after the other on A lease 1, 2, 4 and then 8 units: 7 left over.
    for _ in 0..8 {
        assert!(a.take(KEY, Class::Reads, q).await.is_ok());
    }
    assert_eq!(db.tat(KEY), Some(DB_EPOCH + 15 * t));
    // B sees the budget without A's leased units.
    let info = b.take(KEY, Class::Reads, q).await.ok();
    assert_eq!(info.map(|i| i.remaining), Some(104));
    // Before the hold passes nothing goes back.
    db.clock.advance(HOLD_NANOS - 1);
    a.give_back_expired().await;
    assert_eq!(db.tat(KEY), Some(DB_EPOCH + 16 * t));
    // After it, A's seven units go back...
    db.clock.advance(1);
    a.give_back_expired().await;
    assert_eq!(db.tat(KEY), Some(DB_EPOCH + 9 * t));
    // ...once.
    a.give_back_expired().await;
    assert_eq!(db.tat(KEY), Some(DB_EPOCH + 9 * t));
    // And A does not spend them: its next request leases anew.
    let writes = db.writes();
    assert!(a.take(KEY, Class::Reads, q).await.is_ok());
    assert_eq!(db.writes(), writes + 1);
}

#[tokio::test]
async fn an_expired_lease_is_handed_back_even_when_the_request_finds_it_first() {
    let db = FakeDb::new(Arc::default());
    let a = instance(&db);
    let q = per_hour(120);
    let t = q.interval_nanos();
    for _ in 0..4 {
        assert!(a.take(KEY, Class::Reads, q).await.is_ok());
    }
    // 1 + 2 + 4 leased, 4 spent.
    assert_eq!(db.tat(KEY), Some(DB_EPOCH + 7 * t));
    // Three units held, then the hold passes: the next request finds them expired and leases
    // one anew; the three still go back.
    db.clock.advance(2 * HOLD_NANOS);
    assert!(a.take(KEY, Class::Reads, q).await.is_ok());
    assert_eq!(db.tat(KEY), Some(DB_EPOCH + 8 * t));
    a.give_back_expired().await;
    assert_eq!(db.tat(KEY), Some(DB_EPOCH + 5 * t));
}

#[tokio::test]
async fn shutdown_hands_back_everything_unspent() {
    let db = FakeDb::new(Arc::default());
    let a = instance(&db);
    let q = per_hour(120);
    let t = q.interval_nanos();
    // 1 + 2 + 4 units leased, 5 spent.
    for _ in 0..5 {
        assert!(a.take(KEY, Class::Reads, q).await.is_ok());
    }
    assert_eq!(db.tat(KEY), Some(DB_EPOCH + 7 * t));
    a.give_back_all().await;
    assert_eq!(db.tat(KEY), Some(DB_EPOCH + 5 * t));
    // Handed back means gone from this instance too.
    let writes = db.writes();
    assert!(a.take(KEY, Class::Reads, q).await.is_ok());
    assert!(db.writes() > writes);
}

#[tokio::test]
async fn a_contended_lease_refuses_without_remembering() {
    let db = FakeDb::new(Arc::default());
    let a = instance(&db);
    let q = per_hour(120);
    db.always_lose.store(true, Ordering::SeqCst);
    let refused = burst(&a, q, 1).await;
    assert_eq!(refused, vec![Err(1)]);
    assert_eq!(db.lost_swaps.load(Ordering::SeqCst), SWAP_ATTEMPTS);
    db.always_lose.store(false, Ordering::SeqCst);
    assert_eq!(allowed(&burst(&a, q, 1).await), 1, "not remembered");
}

#[tokio::test]
async fn without_shared_state_the_budget_lives_in_memory() {
    let clock: Arc<ManualClock> = Arc::default();
    let limiter = StoreLimiter::with_parts(Arc::new(NoSharedState), clock);
    let q = Quota::per_minute(3);
    let mut passed = 0;
    for _ in 0..5 {
        if limiter.take(KEY, Class::Reads, q).await.is_ok() {
            passed += 1;
        }
    }
    assert_eq!(passed, 3);
}

/// A small deterministic generator for the simulation.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        // The top 53 bits scaled to [0, below).
        let scaled = (u128::from(self.0 >> 11) * u128::from(below)) >> 53;
        u64::try_from(scaled).unwrap_or(0)
    }
}

/// Several instances, requests arriving at random moments on random instances, the give-back task
/// running every quarter second: in every span of `d` the requests passed stay within
/// `q + (d + hold) / T` (one GCRA alone allows `q + d / T`).
#[tokio::test]
async fn over_time_the_instances_stay_within_one_second_of_rate() {
    for seed in 1..=24u64 {
        let db = FakeDb::new(Arc::default());
        let n = 1 + (seed % 4) as usize;
        let instances: Vec<_> = (0..n).map(|_| instance(&db)).collect();
        let q = Quota::per_minute(if seed % 2 == 0 { 120 } else { 40 });
        let t = q.interval_nanos();
        let mut rng = Lcg(seed);
        let mut passed_at = Vec::new();
        let mut next_sweep = 0;
        let mut next_shuffle = 0;
        let mut active: Vec<usize> = Vec::new();
        let mut mean_gap = 5_000_000u64;
        let end = 1200 * SEC;
        while db.clock.nanos() < end {
            // Phases of heavy traffic, of about the sustained rate and of a trickle, now and then
            // a long quiet in which every budget fills up again.
            let gap = match rng.next(200) {
                0 => rng.next(90 * SEC as u64),
                _ => rng.next(mean_gap * 2),
            };
            db.clock.advance(i64::try_from(gap).unwrap_or(0));
            let now = db.clock.nanos();
            if now >= next_sweep {
                for i in &instances {
                    i.give_back_expired().await;
                }
                next_sweep = now + HOLD_NANOS / 4;
            }
            // Every second or so the instances taking traffic change (a load balancer moving
            // clients), so an instance holding leased units may go quiet and come back.
            if now >= next_shuffle {
                active = (0..n).filter(|_| rng.next(2) == 0).collect();
                if active.is_empty() {
                    active.push(rng.next(n as u64) as usize);
                }
                next_shuffle = now + i64::try_from(rng.next(2 * SEC as u64)).unwrap_or(0);
                // Heavy traffic, about the sustained rate, or a trickle.
                mean_gap = [5_000_000, 400_000_000, 2 * SEC as u64][rng.next(3) as usize];
            }
            let who = &instances[active[rng.next(active.len() as u64) as usize]];
            // Now and then a client sends a burst at once.
            let requests = if rng.next(20) == 0 { rng.next(40) } else { 1 };
            for _ in 0..requests {
                if who.take(KEY, Class::Reads, q).await.is_ok() {
                    passed_at.push(now);
                }
            }
        }
        assert!(passed_at.len() > 100, "seed {seed}: too few passed");
        for (i, &start) in passed_at.iter().enumerate() {
            for (j, &stop) in passed_at.iter().enumerate().skip(i) {
                let span = stop - start;
                let bound = i64::from(q.count) + (span + HOLD_NANOS) / t + 1;
                let count = (j - i + 1) as i64;
                assert!(
                    count <= bound,
                    "seed {seed}, {n} instances: {count} passed in {span} ns (bound {bound})"
                );
            }
        }
    }
}
