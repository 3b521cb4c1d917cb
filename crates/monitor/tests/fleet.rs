//! A new fleet's first runs on the worker (issue 29 item 4), on SQLite and PostgreSQL: each new
//! scheduled endpoint's first run captures its baseline from `first_samples` samples a sample
//! interval apart, and waits between them outside its run slot, so a few slots serve many first
//! runs at once.
//!
//! * Two slots, six new endpoints, three samples a second apart: every first run starts before the
//!   first one ends, all six baselines are captured in less than the six seconds slot-holding
//!   would need, each from three fetches, each with the volatile path learned.
//! * A waiting room with no space (`max_waiting_bytes` 0): the runs pause in their slot, as they
//!   did before, and still capture from three samples.
//! * Two workers, a lease shorter than a pause: a waiting capture keeps its lease (the heartbeat
//!   counts it in flight), so the other worker never runs it again.
//! * Graceful shutdown while a capture waits: within the grace period it finishes; past it, it is
//!   aborted and its lease released, so another worker captures the endpoint at once.

mod support;

use apidrift_model::{AuthType, Cadence, EndpointSettings, Frequency, Plan};
use apidrift_monitor::{Monitor, Worker, WorkerConfig};
use apidrift_seal::{KeyRing, SecretKey};
use apidrift_store::{NewEndpointRow, NewWorkspace, SealedSecrets, Store, new_id};
use apidrift_store_postgres::testdb::TestDb;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;
use time::OffsetDateTime;
use tokio::io::AsyncWriteExt;
use uuid::Uuid;

/// A loopback upstream answering `{"id": 7, "n": N}` with a new `n` on every call (a volatile
/// field), logging the path and time of each request.
struct Upstream {
    server: Server,
    log: Arc<Mutex<Vec<(String, Instant)>>>,
}

impl Upstream {
    async fn start() -> std::io::Result<Upstream> {
        let log: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
        let calls = Arc::new(AtomicU64::new(0));
        let l = log.clone();
        let server = Server::start(move |mut s| {
            let (l, calls) = (l.clone(), calls.clone());
            async move {
                let Ok(head) = read_request(&mut s).await else {
                    return;
                };
                let path = head
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                if let Ok(mut g) = l.lock() {
                    g.push((path, Instant::now()));
                }
                let n = calls.fetch_add(1, Ordering::SeqCst);
                let body = format!(r#"{{"id":7,"n":{n}}}"#);
                let _ = s
                    .write_all(&response(
                        "200 OK",
                        &[("content-type", "application/json")],
                        body.as_bytes(),
                    ))
                    .await;
                let _ = s.shutdown().await;
            }
        })
        .await?;
        Ok(Upstream { server, log })
    }

    fn log(&self) -> Vec<(String, Instant)> {
        self.log.lock().map(|g| g.clone()).unwrap_or_default()
    }

    fn hits_per_path(&self) -> HashMap<String, usize> {
        let mut out = HashMap::new();
        for (p, _) in self.log() {
            *out.entry(p).or_insert(0) += 1;
        }
        out
    }
}

struct World {
    store: Arc<dyn Store>,
    keys: Arc<KeyRing>,
    ws: Uuid,
    _guard: Option<tempfile::TempDir>,
    pg: Option<TestDb>,
}

impl World {
    async fn finish(self) -> TestResult {
        if let Some(db) = self.pg {
            drop(self.store);
            db.drop_db().await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn monitor(&self, sample_interval: Duration) -> Result<Monitor, Box<dyn std::error::Error>> {
        let client = builder(loopback(), StubResolver::new(&[])).build()?;
        Ok(Monitor::new(self.store.clone(), self.keys.clone(), client)
            .with_sample_interval(sample_interval))
    }

    /// `n` new hourly endpoints at `/e/0` … `/e/{n-1}` of `up`, without a baseline.
    async fn fleet(
        &self,
        up: &Upstream,
        n: usize,
    ) -> Result<Vec<Uuid>, Box<dyn std::error::Error>> {
        let rows: Vec<NewEndpointRow> = (0..n)
            .map(|i| NewEndpointRow {
                id: new_id(),
                settings: EndpointSettings {
                    schedule: Some(Cadence::Every(Frequency::Hourly)),
                    timeout_ms: 5000,
                    ..EndpointSettings::new(format!("e{i}"), up.server.url(&format!("/e/{i}")))
                },
                secrets: SealedSecrets {
                    auth_type: AuthType::None,
                    sealed_auth: None,
                    sealed_headers: None,
                    sealed_request_body: None,
                },
                response_contract: None,
                created_at: OffsetDateTime::now_utc(),
            })
            .collect();
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let created = self.store.create_endpoints(self.ws, rows).await?;
        assert_eq!(created.created.len(), n);
        Ok(ids)
    }

    /// How many of `ids` have a baseline.
    async fn captured(&self, ids: &[Uuid]) -> Result<usize, Box<dyn std::error::Error>> {
        let mut n = 0;
        for id in ids {
            if self.store.active_baseline(self.ws, *id).await?.is_some() {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Waits until every one of `ids` has a baseline; the time it took.
    async fn wait_captured(
        &self,
        ids: &[Uuid],
        within: Duration,
    ) -> Result<Duration, Box<dyn std::error::Error>> {
        let started = Instant::now();
        while self.captured(ids).await? < ids.len() {
            if started.elapsed() > within {
                return Err(format!(
                    "{} of {} baselines captured in {within:?}",
                    self.captured(ids).await?,
                    ids.len()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(started.elapsed())
    }

    /// Every endpoint of `ids`: baseline version 1 learned `$.n`, one run recorded.
    async fn assert_first_runs(&self, ids: &[Uuid]) -> TestResult {
        for id in ids {
            let b = self
                .store
                .active_baseline(self.ws, *id)
                .await?
                .ok_or("no baseline")?;
            assert_eq!(b.version, 1);
            assert_eq!(b.volatile_paths, vec!["$.n".to_owned()], "three samples");
            let s = self
                .store
                .schedule_of(self.ws, *id)
                .await?
                .ok_or("no schedule")?;
            assert_eq!((s.runs, s.skipped), (1, 0));
            assert_eq!(
                s.last_outcome.as_deref(),
                Some("baseline captured: version 1, 1 volatile paths")
            );
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

async fn world(backend: Backend) -> Result<Option<World>, Box<dyn std::error::Error>> {
    let (store, guard, pg): (Arc<dyn Store>, _, _) = match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("t.db");
            let store =
                apidrift_store_sqlite::SqliteStore::connect(path.to_str().unwrap_or("t.db"))
                    .await?;
            (Arc::new(store), Some(dir), None)
        }
        Backend::Postgres => {
            let Some(db) = TestDb::create().await.map_err(|e| e.to_string())? else {
                return Ok(None);
            };
            let store = apidrift_store_postgres::PgStore::connect(&db.url).await?;
            (Arc::new(store), None, Some(db))
        }
    };
    let keys = Arc::new(KeyRing::new(SecretKey::generate()?, Vec::new())?);
    let ws = new_id();
    store
        .create_workspace(NewWorkspace {
            id: ws,
            name: "w".into(),
            plan: Plan::Enterprise,
            endpoint_limit: None,
            check_quota: None,
            created_at: OffsetDateTime::now_utc(),
        })
        .await?;
    Ok(Some(World {
        store,
        keys,
        ws,
        _guard: guard,
        pg,
    }))
}

/// A worker running schedules only, polling often, every new schedule due at once.
fn config(concurrency: usize) -> WorkerConfig {
    WorkerConfig {
        deliveries: false,
        poll: Duration::from_millis(20),
        concurrency,
        first_run_jitter: false,
        first_baseline_samples: 3,
        ..WorkerConfig::default()
    }
}

macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> super::TestResult {
                    super::$name(super::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> super::TestResult {
                    super::$name(super::Backend::Postgres).await
                }
            )*
        }
    };
}

both_backends!(
    first_runs_wait_outside_their_slot,
    a_full_waiting_room_keeps_the_slot,
    waiting_captures_keep_their_lease,
    shutdown_finishes_or_releases_a_waiting_capture,
);

/// Two slots, six new endpoints, three samples a second apart. Holding a slot through its pauses,
/// a first run would take two seconds of one, so six would need three rounds: six seconds, and
/// the first run's third sample would come before the fifth endpoint's first. Waiting outside,
/// every first run starts within the first run's pauses.
async fn first_runs_wait_outside_their_slot(b: Backend) -> TestResult {
    let Some(w) = world(b).await? else {
        return Ok(());
    };
    let up = Upstream::start().await?;
    let ids = w.fleet(&up, 6).await?;
    let worker = Worker::start(
        w.monitor(Duration::from_secs(1))?,
        w.keys.clone(),
        config(2),
    );
    let took = w.wait_captured(&ids, Duration::from_secs(30)).await?;
    let stats = worker.stats().clone();
    worker.shutdown().await;

    let hits = up.hits_per_path();
    assert_eq!(hits.len(), 6, "{hits:?}");
    assert!(
        hits.values().all(|n| *n == 3),
        "three fetches each: {hits:?}"
    );
    // The first third sample of any endpoint came after every endpoint's first sample.
    let log = up.log();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut started_before_first_end = 0;
    for (path, _) in &log {
        let n = seen.entry(path.as_str()).or_insert(0);
        *n += 1;
        if *n == 1 {
            started_before_first_end += 1;
        }
        if *n == 3 {
            break;
        }
    }
    assert_eq!(
        started_before_first_end, 6,
        "every first run started while the first one waited between its samples"
    );
    assert!(
        took < Duration::from_secs(6),
        "six first runs on two slots took {took:?}, as long as holding the slots would"
    );
    assert_eq!(stats.pauses_outside.load(Ordering::Relaxed), 12);
    assert_eq!(stats.pauses_in_slot.load(Ordering::Relaxed), 0);
    w.assert_first_runs(&ids).await?;
    w.finish().await
}

/// No room for the samples a waiting run holds: it pauses in its slot, as every run did before,
/// and its capture still takes its three samples.
async fn a_full_waiting_room_keeps_the_slot(b: Backend) -> TestResult {
    let Some(w) = world(b).await? else {
        return Ok(());
    };
    let up = Upstream::start().await?;
    let ids = w.fleet(&up, 2).await?;
    let worker = Worker::start(
        w.monitor(Duration::from_millis(200))?,
        w.keys.clone(),
        WorkerConfig {
            max_waiting_bytes: 0,
            ..config(2)
        },
    );
    w.wait_captured(&ids, Duration::from_secs(30)).await?;
    let stats = worker.stats().clone();
    worker.shutdown().await;
    assert_eq!(stats.pauses_outside.load(Ordering::Relaxed), 0);
    assert_eq!(stats.pauses_in_slot.load(Ordering::Relaxed), 4);
    assert!(up.hits_per_path().values().all(|n| *n == 3));
    w.assert_first_runs(&ids).await?;
    w.finish().await
}

/// Two workers of one slot each, leases of 300 ms, pauses of a second: the heartbeat renews the
/// lease of a capture waiting outside its slot, so the other worker never claims it again: three
/// fetches per endpoint, one run each.
async fn waiting_captures_keep_their_lease(b: Backend) -> TestResult {
    let Some(w) = world(b).await? else {
        return Ok(());
    };
    let up = Upstream::start().await?;
    let ids = w.fleet(&up, 3).await?;
    let monitor = w.monitor(Duration::from_secs(1))?;
    let config = WorkerConfig {
        lease: Duration::from_millis(300),
        ..config(1)
    };
    let workers = [
        Worker::start(monitor.clone(), w.keys.clone(), config.clone()),
        Worker::start(monitor, w.keys.clone(), config),
    ];
    w.wait_captured(&ids, Duration::from_secs(30)).await?;
    // Some leases more, for a double claim to show.
    tokio::time::sleep(Duration::from_millis(700)).await;
    for worker in workers {
        worker.shutdown().await;
    }
    let hits = up.hits_per_path();
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert!(hits.values().all(|n| *n == 3), "claimed twice: {hits:?}");
    w.assert_first_runs(&ids).await?;
    w.finish().await
}

/// Waits until the upstream has answered more than `seen` requests.
async fn fetched_after(up: &Upstream, seen: usize) -> TestResult {
    let target = seen + 1;
    let deadline = Instant::now() + Duration::from_secs(20);
    while up.log().len() < target {
        if Instant::now() > deadline {
            return Err("no fetch".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Shutdown while a capture waits between its samples: within the grace period it finishes;
/// past the grace period it is aborted and its lease released, so a new worker captures the
/// endpoint at once (not after the two-minute lease).
async fn shutdown_finishes_or_releases_a_waiting_capture(b: Backend) -> TestResult {
    let Some(w) = world(b).await? else {
        return Ok(());
    };
    let up = Upstream::start().await?;
    let monitor = w.monitor(Duration::from_millis(500))?;
    // Within the grace period: the capture ends during the shutdown.
    let finished = w.fleet(&up, 1).await?;
    let worker = Worker::start(monitor.clone(), w.keys.clone(), config(1));
    fetched_after(&up, 0).await?;
    worker.shutdown().await;
    assert_eq!(
        w.captured(&finished).await?,
        1,
        "finished within the grace period"
    );
    w.assert_first_runs(&finished).await?;

    // Past it: aborted, its lease released; the next worker takes the run at once.
    let aborted = w.fleet(&up, 1).await?;
    let before = up.log().len();
    let worker = Worker::start(
        monitor.clone(),
        w.keys.clone(),
        WorkerConfig {
            grace: Duration::from_millis(50),
            ..config(1)
        },
    );
    fetched_after(&up, before).await?;
    worker.shutdown().await;
    assert_eq!(
        w.captured(&aborted).await?,
        0,
        "aborted past the grace period"
    );
    let worker = Worker::start(monitor, w.keys.clone(), config(1));
    w.wait_captured(&aborted, Duration::from_secs(20)).await?;
    worker.shutdown().await;
    let b = w
        .store
        .active_baseline(w.ws, aborted[0])
        .await?
        .ok_or("no baseline")?;
    assert_eq!(b.volatile_paths, vec!["$.n".to_owned()]);
    assert!(
        up.log().len() - before >= 4,
        "the aborted run's samples and the new run's three"
    );
    w.finish().await
}
