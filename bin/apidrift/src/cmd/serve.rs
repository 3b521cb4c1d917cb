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
}

pub fn run(global: &GlobalArgs, args: ServeArgs) -> Result<ExitCode, CliError> {
    let env: HashMap<String, String> = std::env::vars().collect();
    init_logging(env.get("APIDRIFT_LOG").map(String::as_str));
    let overrides = Overrides {
        database_url: global.database_url.clone(),
        bind: args.bind.clone(),
    };
    let settings = config::load(global.config.as_deref(), &env, &overrides)?;
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
    let shared = store.backend() == Backend::Postgres;
    let mut state = AppState::new(store.clone(), keys, allow, limits);
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
    app.run()
        .await
        .map_err(|e| CliError(format!("server failed: {e}")))?;
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

/// Logs on stderr; `APIDRIFT_LOG` = error|warn|info|debug|trace (default info).
fn init_logging(level: Option<&str>) {
    use tracing_subscriber::filter::LevelFilter;
    let level = match level.map(str::trim).map(str::to_ascii_lowercase).as_deref() {
        Some("error") => LevelFilter::ERROR,
        Some("warn") => LevelFilter::WARN,
        Some("debug") => LevelFilter::DEBUG,
        Some("trace") => LevelFilter::TRACE,
        Some("off") => LevelFilter::OFF,
        _ => LevelFilter::INFO,
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
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
