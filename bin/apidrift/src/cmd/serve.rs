//! `apidrift serve` (D2): layered configuration, the store chosen by URL scheme, migrations at
//! start (`--no-migrate` skips them), first-run bootstrap (`--no-bootstrap` skips it), then the
//! REST API of `apidrift-api` until SIGTERM/SIGINT (in-flight requests finish).
//!
//! Output: structured logs (one line per request, never a token, credential or body) go to
//! stderr; stdout carries only what a person or a script must read: the first-run token and the
//! line `apidrift: listening on http://ADDR` once the port is bound (`--bind 127.0.0.1:0` picks a
//! free port; tests read this line).

use super::CliError;
use crate::config::{self, GlobalArgs, LimitSettings, Overrides, Settings};
use crate::db;
use apidrift_api::{AppState, Application, Quota, RateLimits, StoreLimiter};
use apidrift_model::net::AllowList;
use apidrift_model::{Plan, Role, Scope};
use apidrift_monitor::{Client, Monitor, Worker, WorkerConfig};
use apidrift_seal::{KeyRing, Token};
use apidrift_store::{Backend, NewToken, NewWorkspace, Store, new_id};
use std::collections::HashMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use time::OffsetDateTime;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Listen address (default 127.0.0.1:3000; port 0 picks a free port). Overrides
    /// APIDRIFT_SERVER__BIND and the configuration file.
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// Do not apply pending migrations at start-up.
    #[arg(long)]
    no_migrate: bool,
    /// Skip the first-run setup (key file, `default` workspace, owner token).
    #[arg(long)]
    no_bootstrap: bool,
    /// What this process does: `api` serves HTTP, `worker` runs due schedules and webhook
    /// deliveries, `all` both.
    #[arg(long, value_enum, default_value = "all", env = "APIDRIFT_ROLE")]
    role: Role18,
}

/// `serve --role` (D18).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role18 {
    Api,
    Worker,
    All,
}

/// `[worker]`: the background loops of `serve --role worker|all` (D11, D18). Durations in
/// milliseconds unless named otherwise (`APIDRIFT_WORKER__POLL_MS=…`, …).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default)]
pub struct WorkerSettings {
    /// Sleep between claims when nothing is due.
    pub poll_ms: u64,
    /// How long a claim is held before another process may take the work over.
    pub lease_ms: u64,
    /// Scheduled checks running at once per process.
    pub concurrency: usize,
    /// Webhook deliveries sent at once per process.
    pub delivery_concurrency: usize,
    /// How long a graceful shutdown waits for claimed work before releasing it.
    pub grace_ms: u64,
    /// Replace every schedule's period (tests and benchmarks only; unset in production).
    pub period_override_ms: Option<u64>,
    /// Spread a new schedule's first run over one period (D18 jitter).
    pub first_run_jitter: bool,
    /// One webhook attempt's timeout (D11: 5000).
    pub delivery_timeout_ms: u64,
    /// First retry delay, doubled per attempt with jitter, capped at `retry_max_ms`.
    pub retry_base_ms: u64,
    pub retry_max_ms: u64,
    /// Give up on a delivery this many seconds after its event (D11: 24 h).
    pub retry_window_secs: u64,
    /// Threads of the worker runtime.
    pub threads: usize,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        let d = WorkerConfig::default();
        let ms = |x: std::time::Duration| u64::try_from(x.as_millis()).unwrap_or(u64::MAX);
        WorkerSettings {
            poll_ms: ms(d.poll),
            lease_ms: ms(d.lease),
            concurrency: d.concurrency,
            delivery_concurrency: d.delivery_concurrency,
            grace_ms: ms(d.grace),
            period_override_ms: None,
            first_run_jitter: d.first_run_jitter,
            delivery_timeout_ms: ms(d.delivery_timeout),
            retry_base_ms: ms(d.retry_base),
            retry_max_ms: ms(d.retry_max),
            retry_window_secs: d.retry_window.as_secs(),
            threads: 2,
        }
    }
}

impl WorkerSettings {
    fn config(&self) -> Result<WorkerConfig, CliError> {
        use std::time::Duration;
        if self.poll_ms == 0 || self.lease_ms == 0 || self.concurrency == 0 {
            return Err(CliError(
                "worker.poll_ms, worker.lease_ms and worker.concurrency must be at least 1".into(),
            ));
        }
        Ok(WorkerConfig {
            schedules: true,
            deliveries: true,
            poll: Duration::from_millis(self.poll_ms),
            lease: Duration::from_millis(self.lease_ms),
            concurrency: self.concurrency,
            delivery_concurrency: self.delivery_concurrency.max(1),
            grace: Duration::from_millis(self.grace_ms),
            period_override: self.period_override_ms.map(Duration::from_millis),
            first_run_jitter: self.first_run_jitter,
            delivery_timeout: Duration::from_millis(self.delivery_timeout_ms.max(1)),
            retry_base: Duration::from_millis(self.retry_base_ms.max(1)),
            retry_max: Duration::from_millis(self.retry_max_ms.max(1)),
            retry_window: Duration::from_secs(self.retry_window_secs),
        })
    }
}

pub fn run(global: &GlobalArgs, args: ServeArgs) -> Result<ExitCode, CliError> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let overrides = Overrides {
        database_url: global.database_url.clone(),
        bind: args.bind.clone(),
    };
    let settings = config::load(global.config.as_deref(), &env, &overrides)?;
    crate::logging::init(&settings.log)?;
    let limits = rate_limits(&settings.limits)?;
    let allow = AllowList::parse(&settings.outbound.allow_cidrs.join(","))
        .map_err(|e| CliError(format!("outbound.allow_cidrs: {e}")))?;
    actix_web::rt::System::new().block_on(serve(settings, args, limits, allow))
}

async fn serve(
    settings: Settings,
    args: ServeArgs,
    limits: RateLimits,
    allow: AllowList,
) -> Result<ExitCode, CliError> {
    let store = db::open(&settings, !args.no_migrate).await?;
    let keys = if args.no_bootstrap {
        settings.key_ring()?
    } else {
        bootstrap(&settings, store.as_ref()).await?
    };
    if keys.is_none() {
        tracing::warn!(
            "no sealing key: set ENDPOINT_SECRET_KEY (see `apidrift keygen`); \
             POST /endpoints answers 503 until one is configured"
        );
    }
    let keys: Option<Arc<KeyRing>> = keys.map(Arc::new);
    let worker = match (args.role, &keys) {
        (Role18::Api, _) => None,
        (_, None) => {
            tracing::warn!("no sealing key: the worker cannot open credentials and does not start");
            None
        }
        (_, Some(keys)) => Some(start_worker(
            store.clone(),
            keys.clone(),
            &allow,
            &settings.worker,
        )?),
    };
    if args.role == Role18::Worker {
        say("apidrift: worker started");
        wait_for_signal().await;
        if let Some(w) = worker {
            w.stop().await;
        }
        tracing::info!("stopped");
        return Ok(ExitCode::SUCCESS);
    }
    let shared = store.backend() == Backend::Postgres;
    let mut state = AppState::new(store.clone(), None, allow, limits)
        .with_metrics_token(settings.metrics.token.as_ref().map(|t| t.expose()));
    state.keys = keys;
    if shared {
        // Every instance on the database shares the per-workspace budgets (D17).
        state = state.with_limiter(Arc::new(StoreLimiter::new(store)));
    }
    let app = Application::build(state, &settings.server.bind, settings.server.workers)
        .map_err(|e| CliError(format!("cannot listen on {}: {e}", settings.server.bind)))?;
    let addr = app.addr();
    tracing::info!(address = %addr, "listening");
    say(&format!("apidrift: listening on http://{addr}"));
    say(&format!("apidrift: console at http://{addr}/console"));
    let served = app.run().await;
    if let Some(w) = worker {
        w.stop().await;
    }
    served.map_err(|e| CliError(format!("server failed: {e}")))?;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// First start on an empty database (D2): a key file beside the SQLite database when no key is
/// configured, the workspace `default`, and an owner token with every scope, printed once.
/// Returns the key ring to serve with.
async fn bootstrap(settings: &Settings, store: &dyn Store) -> Result<Option<KeyRing>, CliError> {
    let keys = settings.key_ring()?;
    let empty = store.count_workspaces().await.map_err(db::store_error)? == 0;
    if !empty {
        return Ok(keys);
    }
    let keys = match keys {
        Some(keys) => Some(keys),
        None => match settings.key_file_path() {
            Some(path) if !path.exists() => {
                apidrift_seal::create_key_file(&path).map_err(|e| {
                    CliError(format!("cannot create key file {}: {e}", path.display()))
                })?;
                tracing::info!(path = %path.display(), "created the sealing key file (mode 0600)");
                settings.key_ring()?
            }
            _ => None,
        },
    };
    let now = OffsetDateTime::now_utc();
    let workspace = store
        .create_workspace(NewWorkspace {
            id: new_id(),
            name: "default".into(),
            plan: Plan::Enterprise,
            endpoint_limit: Plan::Enterprise.endpoint_limit(),
            check_quota: Plan::Enterprise.check_quota(),
            created_at: now,
        })
        .await
        .map_err(db::store_error)?;
    let token = Token::mint().map_err(|e| CliError(e.to_string()))?;
    let stored = store
        .create_token(NewToken {
            id: new_id(),
            workspace_id: workspace.id,
            name: "bootstrap owner".into(),
            token_hash: token.hash(),
            hint: token.hint(),
            scopes: Scope::ALL.to_vec(),
            role: Role::Owner,
            created_at: now,
            expires_at: None,
        })
        .await
        .map_err(db::store_error)?;
    tracing::info!(workspace = %workspace.id, token_id = %stored.id, "first start: created workspace `default` and an owner token");
    say(&format!(
        "apidrift: first start: created workspace \"default\" ({})\n\
         apidrift: owner token with every scope (shown only now, keep it safe):\n\
         {}",
        workspace.id,
        token.expose()
    ));
    // The console's first user (D2, D15): admin@localhost, owner, a one-time password printed
    // beside the token.
    let password = base64_url(
        &apidrift_api::console::session::random_bytes::<18>()
            .map_err(|e| CliError(e.to_string()))?,
    );
    let hash = apidrift_api::console::session::hash_password(&password)
        .map_err(|e| CliError(e.to_string()))?;
    store
        .create_user(apidrift_store::NewUser {
            id: new_id(),
            email: "admin@localhost".into(),
            password_hash: hash,
            workspace_id: workspace.id,
            role: Role::Owner,
            created_at: now,
        })
        .await
        .map_err(db::store_error)?;
    say(&format!(
        "apidrift: console user admin@localhost (owner), one-time password (shown only now):\n\
         {password}\n\
         apidrift: console at http://{}/console",
        settings.server.bind
    ));
    Ok(keys)
}

/// URL-safe base64 without padding (the bootstrap password's alphabet).
fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// The worker loops on their own multi-threaded runtime (the HTTP server keeps its own threads).
struct RunningWorker {
    runtime: tokio::runtime::Runtime,
    worker: Worker,
}

impl RunningWorker {
    /// Graceful shutdown: finish or release claimed work, then drop the runtime.
    async fn stop(self) {
        let RunningWorker { runtime, worker } = self;
        let done = runtime.spawn(worker.shutdown());
        let _ = done.await;
        runtime.shutdown_background();
    }
}

fn start_worker(
    store: Arc<dyn Store>,
    keys: Arc<KeyRing>,
    allow: &AllowList,
    settings: &WorkerSettings,
) -> Result<RunningWorker, CliError> {
    let config = settings.config()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.threads.max(1))
        .thread_name("apidrift-worker")
        .enable_all()
        .build()
        .map_err(|e| CliError(format!("cannot start the worker runtime: {e}")))?;
    let client =
        Client::new(allow.clone()).map_err(|e| CliError(format!("outbound client: {e}")))?;
    let monitor = Monitor::new(store, keys.clone(), client);
    let worker = {
        let _enter = runtime.enter();
        Worker::start(monitor, keys, config)
    };
    tracing::info!(owner = worker.owner(), "worker started");
    Ok(RunningWorker { runtime, worker })
}

/// Waits for SIGTERM or SIGINT (`serve --role worker` has no HTTP server to do it).
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A line on stdout, flushed at once (scripts wait for it).
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

fn rate_limits(s: &LimitSettings) -> Result<RateLimits, CliError> {
    let quota = |name: &str, count: u32| {
        if count == 0 || s.window_secs == 0 {
            Err(CliError(format!("limits.{name}: must be at least 1")))
        } else {
            Ok(Quota {
                count,
                window_secs: s.window_secs,
            })
        }
    };
    Ok(RateLimits {
        reads: quota("reads_per_minute", s.reads_per_minute)?,
        checks: quota("checks_per_minute", s.checks_per_minute)?,
        creates: quota("creates_per_minute", s.creates_per_minute)?,
        unauthenticated: quota("unauthenticated_per_minute", s.unauthenticated_per_minute)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_from_settings() -> Result<(), CliError> {
        let l = rate_limits(&LimitSettings::default())?;
        assert_eq!(l, RateLimits::default());
        let zero = LimitSettings {
            reads_per_minute: 0,
            ..LimitSettings::default()
        };
        assert!(rate_limits(&zero).is_err());
        Ok(())
    }
}
