//! Check-pipeline benchmark (issue 6 "Performance"); run through `bench/checks.sh`.
//!
//! A loopback upstream serves a ~20 KB JSON document; N endpoints point at it. The run measures,
//! with `--inflight` requests in flight for `--seconds` each:
//! 1. the ceiling: the same outbound client fetching and parsing the document, nothing else;
//! 2. the pipeline: `Monitor::run_check` over the chosen store (capture done beforehand);
//!
//! and prints checks/s, the ratio to the ceiling, and the process RSS sampled every second
//! during the pipeline phase (flat memory = no growth after warm-up).
//!
//! Usage: `checks_bench [sqlite|postgres URL] [--endpoints N] [--inflight N] [--seconds N]
//! [--keep-alive]`. With `--keep-alive` the upstream keeps its connections open, so both phases
//! reuse them (the client's keep-alive); without, it closes each one and every fetch dials.
//!
//! The example runs on jemalloc, the allocator of the `apidrift` binary, so that the allocator's
//! share of the profile is the one the service has.

use apidrift_model::net::AllowList;
use apidrift_model::{DiffMode, EndpointSettings, Plan};
use apidrift_monitor::{Client, FetchRequest, Monitor};
use apidrift_seal::{KeyRing, SecretKey};
use apidrift_store::{NewEndpointRow, NewWorkspace, SealedSecrets, Store, new_id};
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

type Res<T> = Result<T, Box<dyn Error + Send + Sync>>;

fn document() -> String {
    let mut items = Vec::new();
    let mut i = 0;
    loop {
        let item = format!(
            r#"{{"id":{i},"name":"user-{i}","email":"user{i}@example.com","active":true,"score":{}.5,"tags":["a","b"]}}"#,
            i * 7
        );
        items.push(item);
        i += 1;
        if items.iter().map(String::len).sum::<usize>() > 20_000 {
            break;
        }
    }
    format!(r#"{{"users":[{}],"total":{i}}}"#, items.join(","))
}

/// A loopback upstream answering every request with `body`. With `keep_alive`, a connection
/// serves request after request (GET only: no request body); without, it answers once with
/// `connection: close`.
async fn upstream(body: String, keep_alive: bool) -> Res<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let close = if keep_alive {
        ""
    } else {
        "connection: close\r\n"
    };
    let response = Arc::new(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{close}\r\n{body}",
            body.len()
        )
        .into_bytes(),
    );
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let response = response.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let mut seen = Vec::new();
                loop {
                    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => seen.extend_from_slice(&buf[..n]),
                        }
                    }
                    if s.write_all(&response).await.is_err() || !keep_alive {
                        break;
                    }
                    // Drop this request's head; keep what followed it.
                    let end = seen
                        .windows(4)
                        .position(|w| w == b"\r\n\r\n")
                        .map_or(seen.len(), |at| at + 4);
                    seen.drain(..end);
                }
                let _ = s.shutdown().await;
            });
        }
    });
    Ok(addr)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Runs `job(i)` with `inflight` in flight for `seconds`; returns completions per second.
async fn drive<F, Fut>(
    inflight: usize,
    seconds: u64,
    job: F,
    sample_rss: bool,
) -> Res<(f64, u64, Vec<u64>)>
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let job = Arc::new(job);
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let counter = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..inflight {
        let (job, done, failed, stop, counter) = (
            job.clone(),
            done.clone(),
            failed.clone(),
            stop.clone(),
            counter.clone(),
        );
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let i = counter.fetch_add(1, Ordering::Relaxed);
                if job(i).await {
                    done.fetch_add(1, Ordering::Relaxed);
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let mut samples = Vec::new();
    for _ in 0..seconds {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if sample_rss {
            samples.push(rss_kib());
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await?;
    }
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    Ok((rate, failed.load(Ordering::Relaxed), samples))
}

#[tokio::main]
async fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let endpoints = flag("--endpoints", 1000) as usize;
    let inflight = flag("--inflight", 64) as usize;
    let seconds = flag("--seconds", 10);
    let backend = args.first().cloned().unwrap_or_else(|| "sqlite".into());
    let keep_alive = args.iter().any(|a| a == "--keep-alive");

    let body = document();
    let addr = upstream(body.clone(), keep_alive).await?;
    let url = format!("http://{addr}/users");
    let allow = AllowList::parse("127.0.0.0/8").map_err(|e| e.to_string())?;
    let client = Client::new(allow)?;

    // 1. The ceiling: fetch + parse, nothing else.
    let c = client.clone();
    let u = url::Url::parse(&url)?;
    let (ceiling, ceiling_failed, _) = drive(
        inflight,
        seconds,
        move |_| {
            let (c, u) = (c.clone(), u.clone());
            async move {
                match c.fetch(&FetchRequest::get(u)).await {
                    Ok(r) => serde_json::from_slice::<serde_json::Value>(&r.body).is_ok(),
                    Err(_) => false,
                }
            }
        },
        false,
    )
    .await?;

    // 2. The pipeline.
    let _dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = if backend == "sqlite" {
        let path = _dir.path().join("bench.db");
        Arc::new(
            apidrift_store_sqlite::SqliteStore::connect(path.to_str().unwrap_or("bench.db"))
                .await?,
        )
    } else {
        let url = args.get(1).cloned().ok_or("postgres needs a URL")?;
        Arc::new(apidrift_store_postgres::PgStore::connect(&url).await?)
    };
    let keys = Arc::new(KeyRing::new(SecretKey::generate()?, Vec::new())?);
    let ws = new_id();
    store
        .create_workspace(NewWorkspace {
            id: ws,
            name: "bench".into(),
            plan: Plan::Enterprise,
            endpoint_limit: None,
            check_quota: None,
            created_at: OffsetDateTime::now_utc(),
        })
        .await?;
    let mut ids = Vec::new();
    for chunk in 0..endpoints.div_ceil(200) {
        let rows: Vec<NewEndpointRow> = (0..200.min(endpoints - chunk * 200))
            .map(|_| NewEndpointRow {
                id: new_id(),
                settings: EndpointSettings {
                    diff_mode: DiffMode::Full,
                    ..EndpointSettings::new("e", url.clone())
                },
                secrets: SealedSecrets::none(),
                response_contract: None,
                created_at: OffsetDateTime::now_utc(),
            })
            .collect();
        ids.extend(
            store
                .create_endpoints(ws, rows)
                .await?
                .created
                .into_iter()
                .map(|e| e.id),
        );
    }
    let monitor = Monitor::new(store.clone(), keys, client);
    for id in &ids {
        monitor.capture_baseline(ws, *id).await?;
    }
    let ids = Arc::new(ids);
    let m = monitor.clone();
    let rss_before = rss_kib();
    let (rate, failed, samples) = drive(
        inflight,
        seconds,
        move |i| {
            let (m, ids) = (m.clone(), ids.clone());
            async move {
                let id = ids[(i as usize) % ids.len()];
                m.run_check(ws, id).await.is_ok_and(|o| o.diff_id.is_none())
            }
        },
        true,
    )
    .await?;
    println!("backend            {backend}");
    println!("document           {} bytes", body.len());
    println!("endpoints          {endpoints}, in flight {inflight}, {seconds} s per phase");
    println!(
        "upstream           {}",
        if keep_alive {
            "keep-alive (connections reused)"
        } else {
            "connection: close (a new connection per fetch)"
        }
    );
    println!("ceiling            {ceiling:.0} fetch+parse/s ({ceiling_failed} failed)");
    println!("pipeline           {rate:.0} checks/s ({failed} failed or not clean)");
    println!("ratio              {:.2}", rate / ceiling);
    println!("rss KiB            before {rss_before}, per second {samples:?}");
    Ok(())
}
