//! `apidrift serve` (D2): layered configuration, the store chosen by URL scheme, migrations at
//! start (`--no-migrate` skips them), first-run bootstrap (`--no-bootstrap` skips it), then the
//! REST API of `apidrift-api` until SIGTERM/SIGINT (in-flight requests finish).
//!
//! Output: structured logs (one line per request, never a token, credential or body) go to
//! stderr; stdout carries only what a person or a script must read: the first-run token and the
//! line `apidrift: listening on http://ADDR` once the port is bound (`--bind 127.0.0.1:0` picks a
//! free port; tests read this line).

use super::CliError;
use crate::config::{
    self, BaselineSettings, GlobalArgs, LimitSettings, Overrides, RetentionSettings, Settings,
    WorkerSettings,
};
use crate::db;
use apidrift_api::{AppState, Application, Quota, RateLimits, StoreLimiter};
use apidrift_app::FirstRun;
use apidrift_app::Service;
use apidrift_model::net::AllowList;
use apidrift_monitor::{Monitor, Worker};
use apidrift_seal::KeyRing;
use apidrift_store::{Backend, Store};
use std::collections::HashMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

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

impl ServeArgs {
    /// `serve` with every default: migrations, first-run setup, both roles.
    pub fn defaults() -> ServeArgs {
        ServeArgs {
            bind: None,
            no_migrate: false,
            no_bootstrap: false,
            role: Role18::All,
        }
    }
}

/// What the command running the service does at two moments of its start: `serve` announces
/// them on stdout ([`Announce`]); `demo` registers its endpoints and prints a tour instead.
pub trait Startup {
    /// The first start against an empty database created the workspace `default`, an owner
    /// token and the console's first user (shown only now).
    fn first_run(&mut self, settings: &Settings, first: FirstRun);

    /// The port is bound and the worker runs; the server answers once this returns. An error
    /// stops the start.
    async fn listening(&mut self, service: &Arc<Service>, addr: SocketAddr)
    -> Result<(), CliError>;
}

/// `serve`'s [`Startup`]: prints the first-run secrets and the `listening on` line.
struct Announce;

impl Startup for Announce {
    fn first_run(&mut self, _: &Settings, first: FirstRun) {
        announce(&first);
    }

    async fn listening(&mut self, _: &Arc<Service>, addr: SocketAddr) -> Result<(), CliError> {
        say(&format!("apidrift: listening on http://{addr}"));
        say(&format!("apidrift: console at http://{addr}/console"));
        Ok(())
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
    let allow = db::allow_list(&settings)?;
    actix_web::rt::System::new().block_on(serve(settings, args, limits, allow, &mut Announce))
}

/// Runs the service until SIGTERM or SIGINT: opens (and migrates) the store, sets up the first
/// start, builds the one [`Service`], starts the worker and serves the API and the console on
/// `settings.server.bind`. Must run inside an actix system.
pub async fn serve(
    settings: Settings,
    args: ServeArgs,
    limits: RateLimits,
    allow: AllowList,
    startup: &mut impl Startup,
) -> Result<ExitCode, CliError> {
    let store = db::open(&settings, !args.no_migrate).await?;
    if let Some(warning) = apidrift_store_sqlite::loose_permissions(settings.database_url.trim()) {
        tracing::warn!("{warning}");
    }
    // The port first: a start that cannot listen creates nothing (no key file, no workspace),
    // so the next start is still the first and prints the one-time secrets.
    let listener = if args.role == Role18::Worker {
        None
    } else {
        let bind = &settings.server.bind;
        Some(
            std::net::TcpListener::bind(bind)
                .map_err(|e| CliError(format!("cannot listen on {bind}: {e}")))?,
        )
    };
    let keys = if args.no_bootstrap {
        settings.key_ring()?
    } else {
        first_start_key(&settings, store.as_ref()).await?
    };
    // The one service of the process: the API, the console and the worker share it.
    let service = Arc::new(
        db::new_service(&settings, store.clone(), keys, allow)?
            .with_sample_interval(settings.baseline.sample_interval())
            .with_import_max_bytes(settings.limits.import_max_bytes)
            .with_import_parse_budget(std::time::Duration::from_secs(
                settings.limits.import_parse_secs,
            )),
    );
    if !args.no_bootstrap
        && let Some(first) = service.bootstrap().await?
    {
        startup.first_run(&settings, first);
    }
    // A run that died with its process (kill -9) left its endpoint `checking`: give back the
    // health it had before, once the run's deadline has passed (the worker repeats this).
    match service.reset_stale_checking().await {
        Ok(n) if n > 0 => tracing::info!(
            endpoints = n,
            "reset health left checking by runs that died"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "resetting stale checking failed"),
    }
    if !service.has_key() {
        tracing::warn!(
            "no sealing key: set ENDPOINT_SECRET_KEY (see `apidrift keygen`); \
             POST /endpoints answers 503 until one is configured"
        );
    }
    let worker = match (args.role, service.monitor(), service.keys()) {
        (Role18::Api, _, _) => None,
        (_, Some(monitor), Some(keys)) => Some(start_worker(
            monitor.clone(),
            keys.clone(),
            &settings.worker,
            &settings.retention,
            &settings.baseline,
            settings.server.public_url.as_deref(),
        )?),
        _ => {
            tracing::warn!("no sealing key: the worker cannot open credentials and does not start");
            None
        }
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
    let mut state = AppState::new(service.clone(), limits)
        .with_metrics_token(settings.metrics.token.as_ref().map(|t| t.expose()))
        .with_endpoint_series(settings.metrics.per_endpoint, settings.metrics.max_series);
    let mut leased = None;
    if shared {
        // Every instance on the database shares the per-workspace budgets, leased in
        // batches; unspent units go back after a second, and all of them at shutdown.
        let limiter = Arc::new(StoreLimiter::new(service.shared_tats()));
        limiter.spawn_give_backs();
        state = state.with_limiter(limiter.clone());
        leased = Some(limiter);
    }
    let built = match listener {
        Some(listener) => Application::build_on(state, listener, settings.server.workers),
        None => Err(std::io::Error::other("no listener")),
    };
    let app = match built {
        Ok(app) => app,
        Err(e) => {
            // The worker's runtime must be shut down here, not dropped in this async context
            // (which panics).
            if let Some(w) = worker {
                w.stop().await;
            }
            return Err(CliError(format!(
                "cannot listen on {}: {e}",
                settings.server.bind
            )));
        }
    };
    let addr = app.addr();
    tracing::info!(address = %addr, "listening");
    let ready = startup.listening(&service, addr).await;
    // The server starts when it is first polled: after a failed start it is dropped unstarted,
    // and the worker is still stopped below before the failure is reported.
    let served = match ready {
        Ok(()) => app.run().await,
        Err(_) => Ok(()),
    };
    if let Some(limiter) = leased {
        limiter.give_back_all().await;
    }
    if let Some(w) = worker {
        w.stop().await;
    }
    ready?;
    served.map_err(|e| CliError(format!("server failed: {e}")))?;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The key to serve with. On the first start against an empty database with no key configured
/// creates the key file beside the SQLite database first.
async fn first_start_key(
    settings: &Settings,
    store: &dyn Store,
) -> Result<Option<KeyRing>, CliError> {
    let keys = settings.key_ring()?;
    if keys.is_some() || store.count_workspaces().await.map_err(db::store_error)? > 0 {
        return Ok(keys);
    }
    match settings.key_file_path() {
        Some(path) if !path.exists() => {
            apidrift_seal::create_key_file(&path)
                .map_err(|e| CliError(format!("cannot create key file {}: {e}", path.display())))?;
            tracing::info!(path = %path.display(), "created the sealing key file (mode 0600)");
            settings.key_ring()
        }
        _ => Ok(None),
    }
}

/// Prints what the first start created: the owner token and the console user's one-time
/// password, shown only now.
fn announce(first: &FirstRun) {
    tracing::info!(workspace = %first.workspace_id, token_id = %first.token.token.id, "first start: created workspace `default` and an owner token");
    say(&format!(
        "apidrift: first start: created workspace \"default\" ({})\n\
         apidrift: owner token with every scope (shown only now, keep it safe):\n\
         {}",
        first.workspace_id,
        first.token.expose()
    ));
    // The console's address follows once the port is bound (`listening`): the configured bind
    // address may name port 0 or every interface.
    say(&format!(
        "apidrift: console user {} (owner), one-time password (shown only now):\n\
         {}",
        first.admin_email, first.admin_password
    ));
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
    monitor: Monitor,
    keys: Arc<KeyRing>,
    settings: &WorkerSettings,
    retention: &RetentionSettings,
    baseline: &BaselineSettings,
    public_url: Option<&str>,
) -> Result<RunningWorker, CliError> {
    let mut config = settings.config()?;
    config.check_retention_days = retention.check_days;
    config.first_baseline_samples = baseline.first_samples()?;
    config.public_url = public_url.map(|u| u.trim().to_owned());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.threads.max(1))
        .thread_name("apidrift-worker")
        .enable_all()
        .build()
        .map_err(|e| CliError(format!("cannot start the worker runtime: {e}")))?;
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
pub fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

pub fn rate_limits(s: &LimitSettings) -> Result<RateLimits, CliError> {
    if s.import_max_bytes == 0 {
        return Err(CliError(
            "limits.import_max_bytes: must be at least 1 (default 33554432, 32 MiB)".into(),
        ));
    }
    if s.import_parse_secs == 0 {
        return Err(CliError(
            "limits.import_parse_secs: must be at least 1 (default 30)".into(),
        ));
    }
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
        let no_import = LimitSettings {
            import_max_bytes: 0,
            ..LimitSettings::default()
        };
        assert!(rate_limits(&no_import).is_err());
        Ok(())
    }
}
