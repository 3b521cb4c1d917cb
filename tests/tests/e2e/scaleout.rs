//! Scale-out on PostgreSQL (D18): one `serve --role api` registers 2,000 scheduled endpoints, then
//! two and then four `serve --role worker` processes share the due work. The loopback upstream
//! counts requests per endpoint path: with two workers every due run (here the first run, which
//! captures the baseline) happens exactly once and none is missed; with four workers one is
//! killed with SIGKILL mid-run and the work it had claimed completes on the others after its
//! lease expires. Skipped without PostgreSQL (`APIDRIFT_TEST_PG_URL`, see `TestDb`).

use apidrift_e2e::binary;
use apidrift_e2e::server::{CLEARED, Server};
use apidrift_seal::SecretKey;
use apidrift_store_postgres::testdb::TestDb;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::error::Error;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn Error>>;

const ENDPOINTS: usize = 2_000;
const LEASE_MS: &str = "2000";
const ENV: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    ("APIDRIFT_WORKER__POLL_MS", "50"),
    ("APIDRIFT_WORKER__LEASE_MS", LEASE_MS),
    ("APIDRIFT_WORKER__CONCURRENCY", "16"),
    ("APIDRIFT_WORKER__FIRST_RUN_JITTER", "false"),
    // Each first run is one fetch, so that the upstream's counts are the runs.
    ("APIDRIFT_BASELINE__FIRST_SAMPLES", "1"),
    ("APIDRIFT_LOG", "warn"),
];

fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, Box<dyn Error>> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f))
}

/// Counts requests per path; answers after `delay` so work is in flight when a worker dies.
struct Upstream {
    port: u16,
    hits: Arc<Mutex<HashMap<String, u32>>>,
}

impl Upstream {
    fn start(delay: Duration) -> Result<Upstream, Box<dyn Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let h = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let h = h.clone();
                std::thread::spawn(move || answer(stream, &h, delay));
            }
        });
        Ok(Upstream { port, hits })
    }

    fn counts(&self) -> HashMap<String, u32> {
        self.hits.lock().map(|h| h.clone()).unwrap_or_default()
    }

    fn total(&self) -> u32 {
        self.counts().values().sum()
    }
}

fn answer(mut stream: TcpStream, hits: &Mutex<HashMap<String, u32>>, delay: Duration) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
    if let Ok(mut h) = hits.lock() {
        *h.entry(path).or_insert(0) += 1;
    }
    std::thread::sleep(delay);
    let body = r#"{"ok":true,"n":1}"#;
    let _ = stream.write_all(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
}

/// A `serve --role worker` process, killed when dropped.
struct WorkerProc(Child);

impl Drop for WorkerProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_worker(dir: &std::path::Path, url: &str, key: &str) -> Result<WorkerProc, Box<dyn Error>> {
    let mut cmd = Command::new(binary());
    cmd.args([
        "serve",
        "--role",
        "worker",
        "--no-bootstrap",
        "--database-url",
        url,
    ])
    .current_dir(dir)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    for name in CLEARED {
        cmd.env_remove(name);
    }
    cmd.envs(ENV.iter().copied())
        .env("ENDPOINT_SECRET_KEY", key);
    let mut child = cmd.spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let proc = WorkerProc(child);
    loop {
        let line = rx.recv_timeout(Duration::from_secs(60))?;
        if line.starts_with("apidrift: worker started") {
            return Ok(proc);
        }
    }
}

fn cli(
    dir: &std::path::Path,
    url: &str,
    key: &str,
    args: &[&str],
) -> Result<Value, Box<dyn Error>> {
    let mut cmd = Command::new(binary());
    cmd.args(args)
        .args(apidrift_e2e::database_args(args, url))
        .current_dir(dir);
    for name in CLEARED {
        cmd.env_remove(name);
    }
    cmd.env("ENDPOINT_SECRET_KEY", key);
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(format!("{args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// A workspace with `ENDPOINTS` hourly endpoints on `up`, paths `/{tag}/{i}`.
fn seed(
    api: &Server,
    dir: &std::path::Path,
    url: &str,
    key: &str,
    up: &Upstream,
    tag: &str,
) -> Result<(), Box<dyn Error>> {
    let ws = cli(dir, url, key, &["workspace", "create", "--name", tag])?["id"]
        .as_str()
        .ok_or("no id")?
        .to_owned();
    let token = cli(
        dir,
        url,
        key,
        &[
            "token",
            "create",
            "--workspace",
            &ws,
            "--scopes",
            "endpoints:write",
            "--role",
            "admin",
        ],
    )?["token"]
        .as_str()
        .ok_or("no token")?
        .to_owned();
    for chunk in 0..ENDPOINTS / 200 {
        let entries: Vec<Value> = (0..200)
            .map(|i| {
                let n = chunk * 200 + i;
                json!({"name": format!("{tag}-{n}"), "url": format!("http://127.0.0.1:{}/{tag}/{n}", up.port),
                       "schedule": {"frequency": "HOURLY"}, "timeoutMs": 5000})
            })
            .collect();
        let res = api
            .request("POST", "/api/v1/endpoints")
            .bearer(&token)
            .json(&json!({ "endpoints": entries }))
            .send()?;
        assert_eq!(res.status, 201, "{}", res.text());
        assert_eq!(res.json()["created"].as_u64(), Some(200));
    }
    Ok(())
}

fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("timed out waiting for {what}").into())
}

fn tagged(counts: &HashMap<String, u32>, tag: &str) -> Vec<u32> {
    counts
        .iter()
        .filter(|(p, _)| p.starts_with(&format!("/{tag}/")))
        .map(|(_, n)| *n)
        .collect()
}

#[test]
fn workers_share_due_schedules_without_double_runs() -> TestResult {
    let Some(pg) = block_on(TestDb::create())?.map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let url = pg.url.clone();
    let result = run(&url);
    let _ = block_on(pg.drop_db());
    result
}

fn run(url: &str) -> TestResult {
    let dir = tempfile::tempdir()?;
    let key = SecretKey::generate()?.to_base64().to_string();
    let up = Upstream::start(Duration::from_millis(40))?;
    let mut env: Vec<(&str, &str)> = ENV.to_vec();
    env.push(("ENDPOINT_SECRET_KEY", &key));
    let api = Server::start(dir.path(), url, &["--no-bootstrap", "--role", "api"], &env)?;

    // Two workers: every due run exactly once, none missed.
    seed(&api, dir.path(), url, &key, &up, "two")?;
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(up.total(), 0, "the api role runs no schedules");
    let started = Instant::now();
    let workers: Vec<WorkerProc> = (0..2)
        .map(|_| start_worker(dir.path(), url, &key))
        .collect::<Result<_, _>>()?;
    wait_for(60, "2,000 runs on two workers", || {
        tagged(&up.counts(), "two").len() == ENDPOINTS
    })?;
    let two_secs = started.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(1000));
    let counts = tagged(&up.counts(), "two");
    assert_eq!(counts.len(), ENDPOINTS, "every due schedule ran");
    assert!(counts.iter().all(|n| *n == 1), "a schedule ran twice");
    drop(workers);

    // Four workers, one killed with SIGKILL mid-run: its claims complete elsewhere after the lease.
    seed(&api, dir.path(), url, &key, &up, "four")?;
    let started = Instant::now();
    let mut workers: Vec<WorkerProc> = (0..4)
        .map(|_| start_worker(dir.path(), url, &key))
        .collect::<Result<_, _>>()?;
    wait_for(60, "some runs", || {
        tagged(&up.counts(), "four").len() >= 300
    })?;
    let mut victim = workers.remove(0);
    victim.0.kill()?; // SIGKILL on Unix
    let _ = victim.0.wait();
    let at_kill = tagged(&up.counts(), "four").len();
    assert!(at_kill < ENDPOINTS, "the kill must land mid-run");
    wait_for(60, "2,000 runs after the kill", || {
        tagged(&up.counts(), "four").len() == ENDPOINTS
    })?;
    let four_secs = started.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(1000));
    let counts = tagged(&up.counts(), "four");
    assert_eq!(
        counts.len(),
        ENDPOINTS,
        "no schedule was lost with the killed worker"
    );
    let doubles = counts.iter().filter(|n| **n > 1).count();
    // Only requests the killed worker had in flight may be repeated (at most its concurrency).
    assert!(doubles <= 16, "{doubles} schedules ran twice");
    eprintln!(
        "scaleout: two workers {two_secs:.1}s, four workers with a kill {four_secs:.1}s, \
         {doubles} repeated after the kill"
    );
    drop(workers);
    drop(api);
    Ok(())
}
