//! Configuration (decision D2), layered with the `config` crate, lowest first:
//!
//! 1. built-in defaults (`server.bind = 127.0.0.1:3000`, `database_url = sqlite://apidrift.db`);
//! 2. the TOML file named by `--config FILE` (or `APIDRIFT_CONFIG`), when given;
//! 3. the environment: `APIDRIFT_<KEY>` for top-level keys and `APIDRIFT_<SECTION>__<KEY>` for the
//!    rest (e.g. `APIDRIFT_SERVER__BIND`, `APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.0/8,10.0.0.0/8`),
//!    then the well-known names `DATABASE_URL`, `ENDPOINT_SECRET_KEY` and
//!    `ENDPOINT_SECRET_KEY_PREVIOUS`, which win over their `APIDRIFT_` spellings;
//! 4. flags: `--database-url` (every command) and `--bind` (`serve`).
//!
//! The environment is passed in as a map so tests never touch the process environment.
//! `docs/configuration.md` lists every key.

use crate::error::CliError;
use apidrift_model::SecretString;
use apidrift_monitor::{KeepAlive, WorkerConfig};
use apidrift_seal::{KeyRing, SecretKey};
use config::{Config, Environment, File, FileFormat};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Default listen address (D2).
pub const DEFAULT_BIND: &str = "127.0.0.1:3000";
/// Default database (D2).
pub const DEFAULT_DATABASE_URL: &str = "sqlite://apidrift.db";
/// Name of the key file created beside the SQLite database on first start (D2).
pub const KEY_FILE_NAME: &str = "apidrift.key";

/// Environment variables holding comma-separated lists, with the key each one sets. They are
/// split here rather than by `config`'s `try_parsing`, which would also turn numeric-looking
/// strings into numbers.
const LIST_VARIABLES: &[(&str, &str)] =
    &[("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "outbound.allow_cidrs")];

/// Variables with a name of their own for a key of `[log]`: `APIDRIFT_LOG` (the filter) and
/// `APIDRIFT_LOG_FORMAT`. Without this mapping `APIDRIFT_LOG` would land on the `log` section
/// itself.
const LOG_VARIABLES: &[(&str, &str)] = &[
    ("APIDRIFT_LOG", "log.filter"),
    ("APIDRIFT_LOG_FORMAT", "log.format"),
];

/// `APIDRIFT_` variables of command-line flags (clap's `env`): they are not settings.
pub const FLAG_VARIABLES: &[&str] = &["APIDRIFT_CONFIG", "APIDRIFT_WORKSPACE", "APIDRIFT_ROLE"];

/// `APIDRIFT_` variables that the project's own tests, benchmarks and scripts read (a test may
/// leave them set in the environment of the binary it starts): never settings, never refused.
const HARNESS_PREFIXES: &[&str] = &[
    "APIDRIFT_TEST_",
    "APIDRIFT_SKIP_",
    "APIDRIFT_BENCH_",
    "APIDRIFT_UPDATE_",
    "APIDRIFT_FUZZ_",
    "APIDRIFT_E2E_",
    "APIDRIFT_PG_",
];
const HARNESS_VARIABLES: &[&str] = &["APIDRIFT_BIN", "APIDRIFT_PROXY_CHILD"];

/// `APIDRIFT_` variables of `apidrift apply`: the token of `--server`, never a setting.
const APPLY_VARIABLES: &[&str] = &["APIDRIFT_TOKEN"];

/// Whether `name` is a secret placeholder of an exported monitors file
/// (`APIDRIFT_SECRET_<KEY>_<FIELD>`, see `apidrift export`): read by `apidrift apply`, never a
/// setting. Only the field endings export writes count, so a misspelt setting still stops.
fn is_monitors_secret(name: &str) -> bool {
    const FIELDS: &[&str] = &[
        "_AUTH_TOKEN",
        "_AUTH_KEY",
        "_AUTH_USERNAME",
        "_AUTH_PASSWORD",
        "_AUTH_VALUE",
        "_REQUEST_BODY",
    ];
    name.strip_prefix("APIDRIFT_SECRET_")
        .is_some_and(|rest| rest.contains("_HEADER_") || FIELDS.iter().any(|f| rest.ends_with(f)))
}

/// Whether the `APIDRIFT_` variable `name` is read as a setting through `config`'s environment
/// source (every other one is a flag's, a list's, a log's or the test harness's).
fn is_setting_variable(name: &str) -> bool {
    name.starts_with("APIDRIFT_")
        && !FLAG_VARIABLES.contains(&name)
        && !HARNESS_VARIABLES.contains(&name)
        && !APPLY_VARIABLES.contains(&name)
        && !is_monitors_secret(name)
        && !HARNESS_PREFIXES.iter().any(|p| name.starts_with(p))
        && LIST_VARIABLES.iter().all(|(n, _)| *n != name)
        && LOG_VARIABLES.iter().all(|(n, _)| *n != name)
}

/// The database flags of every command that uses a database; `global` within that
/// command, so they may follow any of its subcommands.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GlobalArgs {
    /// Database URL: postgres://…, postgresql://…, sqlite://PATH, sqlite::memory: or a file
    /// path. Overrides DATABASE_URL and the configuration file.
    #[arg(long, global = true, value_name = "URL")]
    pub database_url: Option<String>,

    /// Configuration file (TOML). Values in it are overridden by the environment and flags.
    #[arg(long, global = true, value_name = "FILE", env = "APIDRIFT_CONFIG")]
    pub config: Option<PathBuf>,
}

/// Flag values that override every other layer.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub database_url: Option<String>,
    pub bind: Option<String>,
}

/// The resolved configuration. Secret values are [`SecretString`]s: they print `***`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Which database to use (`DATABASE_URL`).
    #[serde(serialize_with = "redacted_url")]
    pub database_url: String,
    /// The active sealing key (`ENDPOINT_SECRET_KEY`): 32 bytes as standard base64 or 64 hex.
    #[serde(default, serialize_with = "redacted")]
    pub secret_key: Option<SecretString>,
    /// Previous keys, comma separated, that still open older values
    /// (`ENDPOINT_SECRET_KEY_PREVIOUS`).
    #[serde(default, serialize_with = "redacted")]
    pub secret_key_previous: Option<SecretString>,
    /// A file holding the active key on one line (`APIDRIFT_SECRET_KEY_FILE`). Without it, and
    /// without `secret_key`, the key file beside a SQLite database is used when it exists.
    #[serde(default)]
    pub secret_key_file: Option<PathBuf>,
    #[allow(dead_code, reason = "read by `serve`, which arrives with the API")]
    pub server: ServerSettings,
    #[allow(dead_code, reason = "read by `serve`, which arrives with the API")]
    #[serde(default)]
    pub outbound: OutboundSettings,
    /// `[limits]`: rate limits of `serve` (D17).
    #[serde(default)]
    pub limits: LimitSettings,
    /// `[worker]`: the background loops of `serve --role worker|all` (D18).
    #[serde(default)]
    pub worker: WorkerSettings,
    /// `[retention]`: how long history is kept.
    #[serde(default)]
    pub retention: RetentionSettings,
    /// `[baseline]`: multi-sample baseline captures.
    #[serde(default)]
    pub baseline: BaselineSettings,
    /// `[log]`: the log filter and line format of `serve`.
    #[serde(default)]
    pub log: LogSettings,
    /// `[metrics]`: `GET /metrics`.
    #[serde(default)]
    pub metrics: MetricsSettings,
}

/// `[log]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// `tracing` filter directives (`APIDRIFT_LOG`), e.g. `info` or
    /// `apidrift=debug,actix_web=warn`; unset means `info`.
    pub filter: Option<String>,
    /// `text` (default) or `json`: one JSON object per line (`APIDRIFT_LOG_FORMAT`).
    pub format: LogFormat,
}

/// The log line format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `[metrics]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// When set, `GET /metrics` requires `Authorization: Bearer TOKEN`
    /// (`APIDRIFT_METRICS__TOKEN`).
    #[serde(serialize_with = "redacted")]
    pub token: Option<SecretString>,
    /// Per-endpoint series (`apidrift_endpoint_up`, `apidrift_endpoint_response_seconds`,
    /// `apidrift_endpoint_drift_open`) labelled by workspace and endpoint
    /// (`APIDRIFT_METRICS__PER_ENDPOINT`); off by default.
    pub per_endpoint: bool,
    /// The most endpoints with per-endpoint series (default 10000); the rest are counted in
    /// `apidrift_metrics_series_dropped` (`APIDRIFT_METRICS__MAX_SERIES`).
    pub max_series: u32,
}

/// The default of `[metrics] max_series`.
pub const DEFAULT_MAX_SERIES: u32 = 10_000;

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            token: None,
            per_endpoint: false,
            max_series: DEFAULT_MAX_SERIES,
        }
    }
}

/// `[retention]` (`APIDRIFT_RETENTION__CHECK_DAYS=…`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionSettings {
    /// Check rows without a diff older than this many days are pruned by the worker with their
    /// sealed bodies (default 90; 0 keeps them forever). Checks that recorded a diff are kept.
    pub check_days: u32,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        RetentionSettings { check_days: 90 }
    }
}

/// `[baseline]` (`APIDRIFT_BASELINE__SAMPLE_INTERVAL_MS=…`, `APIDRIFT_BASELINE__FIRST_SAMPLES=…`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BaselineSettings {
    /// The pause between the samples of a capture with `samples` > 1, in milliseconds
    /// (default 1000).
    pub sample_interval_ms: u64,
    /// Samples of the first baseline a schedule captures (1 to 5, default 3): more than one
    /// learns the volatile paths.
    pub first_samples: u8,
}

impl Default for BaselineSettings {
    fn default() -> Self {
        BaselineSettings {
            sample_interval_ms: 1000,
            first_samples: 3,
        }
    }
}

impl BaselineSettings {
    /// `first_samples`, checked against the capture's range.
    pub fn first_samples(&self) -> Result<u8, CliError> {
        if (1..=apidrift_monitor::MAX_SAMPLES).contains(&self.first_samples) {
            Ok(self.first_samples)
        } else {
            Err(CliError(format!(
                "baseline.first_samples must be between 1 and {} (got {})",
                apidrift_monitor::MAX_SAMPLES,
                self.first_samples
            )))
        }
    }

    pub fn sample_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.sample_interval_ms)
    }
}

/// `[limits]`: requests per window (`window_secs`, default 60) per workspace and class, with a
/// burst of the same figure (GCRA), and per client address for requests without a valid token
/// (`APIDRIFT_LIMITS__READS_PER_MINUTE=…`, …).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitSettings {
    pub reads_per_minute: u32,
    pub checks_per_minute: u32,
    pub creates_per_minute: u32,
    pub unauthenticated_per_minute: u32,
    /// The window the figures above apply to, in seconds (60; tests lengthen it so that a burst
    /// is not topped up while it is being measured).
    pub window_secs: u32,
    /// The largest `POST /api/openapi/parse` body (and document), in bytes (32 MiB;
    /// `APIDRIFT_LIMITS__IMPORT_MAX_BYTES`).
    pub import_max_bytes: usize,
    /// How long reading an OpenAPI document for a parse or an import may take, in seconds (30;
    /// `APIDRIFT_LIMITS__IMPORT_PARSE_SECS`).
    pub import_parse_secs: u64,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            reads_per_minute: 120,
            checks_per_minute: 30,
            creates_per_minute: 30,
            unauthenticated_per_minute: 60,
            window_secs: 60,
            import_max_bytes: apidrift_app::DEFAULT_IMPORT_MAX_BYTES,
            import_parse_secs: apidrift_app::DEFAULT_IMPORT_PARSE_BUDGET.as_secs(),
        }
    }
}

/// `[worker]`: the background loops of `serve --role worker|all`. Durations in
/// milliseconds unless named otherwise (`APIDRIFT_WORKER__POLL_MS=…`, …).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
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
    /// Spread a new schedule's first run over one period (jitter, so an hourly fleet does not fire at once).
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
    pub fn config(&self) -> Result<WorkerConfig, CliError> {
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
            ..WorkerConfig::default()
        })
    }
}

/// `[server]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// Listen address (`APIDRIFT_SERVER__BIND`, `--bind`).
    #[allow(dead_code, reason = "read by `serve`, which arrives with the API")]
    pub bind: String,
    /// Worker threads of `serve` (`APIDRIFT_SERVER__WORKERS`); 0 or unset = one per core.
    #[serde(default)]
    pub workers: usize,
    /// The address users reach the service at, e.g. `https://drift.example.com`
    /// (`APIDRIFT_SERVER__PUBLIC_URL`): Slack, Discord and PagerDuty messages link to the
    /// console's diff page under it. Unset: no links.
    #[serde(default)]
    pub public_url: Option<String>,
}

/// `[outbound]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutboundSettings {
    /// Address ranges outbound requests may reach despite the SSRF rules (D14), e.g.
    /// `127.0.0.0/8` (`APIDRIFT_OUTBOUND__ALLOW_CIDRS`, comma separated).
    #[allow(dead_code, reason = "read by `serve`, which arrives with the API")]
    pub allow_cidrs: Vec<String>,
    /// Whether GET and HEAD requests may reuse an idle connection to an address they checked
    /// (`APIDRIFT_OUTBOUND__KEEP_ALIVE`, default true).
    pub keep_alive: bool,
    /// How long an idle connection is kept, in seconds (`APIDRIFT_OUTBOUND__IDLE_TIMEOUT_SECS`,
    /// default 30); 0 keeps none, like `keep_alive = false`.
    pub idle_timeout_secs: u64,
}

impl Default for OutboundSettings {
    fn default() -> Self {
        OutboundSettings {
            allow_cidrs: Vec::new(),
            keep_alive: true,
            idle_timeout_secs: apidrift_monitor::IDLE_TIMEOUT.as_secs(),
        }
    }
}

impl OutboundSettings {
    /// The outbound client's connection reuse.
    pub fn keep_alive(&self) -> KeepAlive {
        KeepAlive {
            enabled: self.keep_alive && self.idle_timeout_secs > 0,
            idle_timeout: std::time::Duration::from_secs(self.idle_timeout_secs),
            ..KeepAlive::default()
        }
    }
}

fn config_error(e: config::ConfigError) -> CliError {
    CliError(format!("configuration: {e}"))
}

/// Builds the settings from the layers above. `env` is the process environment (or a test's).
pub fn load(
    file: Option<&Path>,
    env: &HashMap<String, String>,
    overrides: &Overrides,
) -> Result<Settings, CliError> {
    let mut builder = Config::builder()
        .set_default("database_url", DEFAULT_DATABASE_URL)
        .and_then(|b| b.set_default("server.bind", DEFAULT_BIND))
        .map_err(config_error)?;
    if let Some(path) = file {
        if !path.is_file() {
            return Err(CliError(format!(
                "configuration file {} not found",
                path.display()
            )));
        }
        builder = builder.add_source(File::from(path).format(FileFormat::Toml).required(true));
    }
    let apidrift_env: config::Map<String, String> = env
        .iter()
        .filter(|(k, _)| is_setting_variable(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    builder = builder.add_source(
        Environment::with_prefix("APIDRIFT")
            .prefix_separator("_")
            .separator("__")
            .ignore_empty(true)
            .source(Some(apidrift_env)),
    );
    for (name, key) in LIST_VARIABLES {
        let items = env.get(*name).filter(|v| !v.trim().is_empty()).map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|i| !i.is_empty())
                .map(String::from)
                .collect()
        });
        builder = builder
            .set_override_option::<_, Vec<String>>(*key, items)
            .map_err(config_error)?;
    }
    for (name, key) in LOG_VARIABLES {
        let value = env.get(*name).filter(|v| !v.trim().is_empty()).cloned();
        builder = builder
            .set_override_option(*key, value)
            .map_err(config_error)?;
    }
    let well_known = |name: &str| env.get(name).filter(|v| !v.trim().is_empty()).cloned();
    builder = builder
        .set_override_option("database_url", well_known("DATABASE_URL"))
        .and_then(|b| b.set_override_option("secret_key", well_known("ENDPOINT_SECRET_KEY")))
        .and_then(|b| {
            b.set_override_option(
                "secret_key_previous",
                well_known("ENDPOINT_SECRET_KEY_PREVIOUS"),
            )
        })
        .and_then(|b| b.set_override_option("database_url", overrides.database_url.clone()))
        .and_then(|b| b.set_override_option("server.bind", overrides.bind.clone()))
        .map_err(config_error)?;
    let settings: Settings = builder
        .build()
        .and_then(Config::try_deserialize)
        .map_err(|e| match unknown_key(&e.to_string(), file, env) {
            Some(text) => CliError(text),
            None => config_error(e),
        })?;
    if settings.database_url.trim().is_empty() {
        return Err(CliError("database URL is empty".into()));
    }
    if let Some(public) = &settings.server.public_url {
        let ok = url::Url::parse(public.trim())
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if !ok {
            return Err(CliError(format!(
                "server.public_url must be an absolute http or https URL such as \
                 https://drift.example.com, not {public:?}"
            )));
        }
    }
    Ok(settings)
}

/// A secret as `config check` shows it: `<redacted>` when set.
fn redacted<S: serde::Serializer>(value: &Option<SecretString>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(_) => s.serialize_str("<redacted>"),
        None => s.serialize_none(),
    }
}

/// A database URL as `config check` shows it: a password in it as `<redacted>`.
fn redacted_url<S: serde::Serializer>(value: &str, s: S) -> Result<S::Ok, S::Error> {
    match url::Url::parse(value) {
        Ok(mut url) if url.password().is_some() => {
            // `<` and `>` would be percent-encoded in the URL: put them in after.
            let _ = url.set_password(Some("REDACTED"));
            s.serialize_str(&url.as_str().replacen(":REDACTED@", ":<redacted>@", 1))
        }
        _ => s.serialize_str(value),
    }
}

/// The message for a key that names no setting, from serde's `unknown field `X`, expected one
/// of `a`, `b` for key `section`` (every struct of [`Settings`] denies unknown fields): where
/// it came from (an `APIDRIFT_` variable, else the file) and the nearest valid key.
fn unknown_key(text: &str, file: Option<&Path>, env: &HashMap<String, String>) -> Option<String> {
    let rest = text.split_once("unknown field `")?.1;
    let (field, rest) = rest.split_once('`')?;
    let (expected, section) = match rest.split_once(" for key `") {
        Some((expected, section)) => (expected, Some(section.trim_end_matches('`'))),
        None => (rest, None),
    };
    let expected: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let key = |name: &str| match section {
        Some(s) => format!("{s}.{name}"),
        None => name.to_owned(),
    };
    let variable = |key: &str| format!("APIDRIFT_{}", key.to_ascii_uppercase().replace('.', "__"));
    let wrong = variable(&key(field));
    let from_env = env
        .keys()
        .filter(|k| is_setting_variable(k))
        .filter(|k| *k == &wrong || k.starts_with(&format!("{wrong}__")))
        .min();
    if let Some(name) = from_env {
        // The variables that are valid at that place, and the ones with names of their own.
        let rest = &name[wrong.len()..];
        let mut valid: Vec<String> = expected
            .iter()
            .map(|e| format!("{}{rest}", variable(&key(e))))
            .collect();
        valid.extend(FLAG_VARIABLES.iter().map(|v| (*v).to_owned()));
        valid.extend(LIST_VARIABLES.iter().map(|(v, _)| (*v).to_owned()));
        valid.extend(LOG_VARIABLES.iter().map(|(v, _)| (*v).to_owned()));
        let hint = nearest(name, valid.iter().map(String::as_str))
            .map_or_else(|| ".".to_owned(), |n| format!("; did you mean {n}?"));
        return Some(format!(
            "the environment variable {name} names no setting{hint} Unset or rename it (docs/configuration.md lists every variable)"
        ));
    }
    let place = match file {
        Some(path) => format!("configuration file {}", path.display()),
        None => "configuration".to_owned(),
    };
    let hint = nearest(field, expected.iter().copied()).map_or_else(
        || ".".to_owned(),
        |n| format!("; did you mean `{}`?", key(n)),
    );
    Some(format!(
        "{place}: unknown key `{}`{hint} Remove or rename it (docs/configuration.md lists every key)",
        key(field)
    ))
}

/// The candidate closest to `word` by edit distance, when it is close enough to be a typo.
fn nearest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    candidates
        .map(|c| (edit_distance(&word, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= 3.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over bytes (keys and variable names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// [`load`] with the process environment and the global flags.
pub fn load_from_process(global: &GlobalArgs) -> Result<Settings, CliError> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let overrides = Overrides {
        database_url: global.database_url.clone(),
        bind: None,
    };
    load(global.config.as_deref(), &env, &overrides)
}

impl Settings {
    /// Where the key file is: `secret_key_file` when configured, else `apidrift.key` beside a
    /// SQLite database file (where the first start creates it, D2); `None` for PostgreSQL and
    /// in-memory SQLite without a configured file.
    pub fn key_file_path(&self) -> Option<PathBuf> {
        if let Some(path) = &self.secret_key_file {
            return Some(path.clone());
        }
        let db = crate::dburl::sqlite_file(&self.database_url)?;
        Some(db.parent().unwrap_or(Path::new("")).join(KEY_FILE_NAME))
    }

    /// The key ring: the active key from `secret_key`, else from the key file; previous keys
    /// from `secret_key_previous`. `Ok(None)` when no key is configured and the default key
    /// file does not exist; an error when a configured key or file is unusable.
    pub fn key_ring(&self) -> Result<Option<KeyRing>, CliError> {
        let seal_err = |e: apidrift_seal::SealError| CliError(e.to_string());
        let active = if let Some(text) = &self.secret_key {
            SecretKey::parse(text.expose(), "ENDPOINT_SECRET_KEY").map_err(seal_err)?
        } else if let Some(path) = self.key_file_path() {
            if self.secret_key_file.is_none() && !path.exists() {
                return Ok(None);
            }
            SecretKey::read_file(&path).map_err(seal_err)?
        } else {
            return Ok(None);
        };
        let previous = match &self.secret_key_previous {
            Some(list) => SecretKey::parse_list(list.expose(), "ENDPOINT_SECRET_KEY_PREVIOUS")
                .map_err(seal_err)?,
            None => Vec::new(),
        };
        KeyRing::new(active, previous).map(Some).map_err(seal_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    type TestResult = Result<(), Box<dyn Error>>;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults() -> TestResult {
        let s = load(None, &env(&[]), &Overrides::default())?;
        assert_eq!(s.database_url, "sqlite://apidrift.db");
        assert_eq!(s.server.bind, "127.0.0.1:3000");
        assert!(s.secret_key.is_none() && s.secret_key_file.is_none());
        assert!(s.outbound.allow_cidrs.is_empty());
        assert_eq!(s.key_file_path(), Some(PathBuf::from("apidrift.key")));
        Ok(())
    }

    #[test]
    fn layers_override_in_order() -> TestResult {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("apidrift.toml");
        std::fs::write(
            &file,
            "database_url = \"sqlite://from-file.db\"\n\
             [server]\nbind = \"0.0.0.0:1111\"\n\
             [outbound]\nallow_cidrs = [\"10.0.0.0/8\"]\n",
        )?;
        let s = load(Some(&file), &env(&[]), &Overrides::default())?;
        assert_eq!(s.database_url, "sqlite://from-file.db");
        assert_eq!(s.server.bind, "0.0.0.0:1111");
        assert_eq!(s.outbound.allow_cidrs, vec!["10.0.0.0/8"]);

        let e = env(&[
            ("APIDRIFT_SERVER__BIND", "0.0.0.0:2222"),
            ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8, 10.0.0.0/8"),
            ("APIDRIFT_SECRET_KEY_FILE", "1234"),
            ("APIDRIFT_DATABASE_URL", "sqlite://apidrift-env.db"),
        ]);
        let s = load(Some(&file), &e, &Overrides::default())?;
        assert_eq!(s.server.bind, "0.0.0.0:2222");
        assert_eq!(s.outbound.allow_cidrs, vec!["127.0.0.0/8", "10.0.0.0/8"]);
        assert_eq!(s.database_url, "sqlite://apidrift-env.db");
        assert_eq!(
            s.secret_key_file,
            Some(PathBuf::from("1234")),
            "numeric text stays text"
        );

        let mut e = e;
        e.insert("DATABASE_URL".into(), "postgres://db/x".into());
        let s = load(Some(&file), &e, &Overrides::default())?;
        assert_eq!(
            s.database_url, "postgres://db/x",
            "DATABASE_URL beats APIDRIFT_DATABASE_URL"
        );

        let flags = Overrides {
            database_url: Some("sqlite://flag.db".into()),
            bind: Some("127.0.0.1:3333".into()),
        };
        let s = load(Some(&file), &e, &flags)?;
        assert_eq!(s.database_url, "sqlite://flag.db");
        assert_eq!(s.server.bind, "127.0.0.1:3333");
        Ok(())
    }

    #[test]
    fn log_and_metrics_sections() -> TestResult {
        let s = load(None, &env(&[]), &Overrides::default())?;
        assert_eq!(s.log.format, LogFormat::Text);
        assert!(s.log.filter.is_none() && s.metrics.token.is_none());

        let dir = tempfile::tempdir()?;
        let file = dir.path().join("apidrift.toml");
        std::fs::write(
            &file,
            "[log]\nformat = \"json\"\nfilter = \"warn\"\n[metrics]\ntoken = \"from-file\"\n",
        )?;
        let s = load(Some(&file), &env(&[]), &Overrides::default())?;
        assert_eq!(s.log.format, LogFormat::Json);
        assert_eq!(s.log.filter.as_deref(), Some("warn"));
        assert_eq!(
            s.metrics.token.as_ref().map(|t| t.expose()),
            Some("from-file")
        );

        // APIDRIFT_LOG is the filter (not the whole section), APIDRIFT_LOG_FORMAT the format.
        let e = env(&[
            ("APIDRIFT_LOG", "apidrift=debug,actix_web=warn"),
            ("APIDRIFT_LOG_FORMAT", "text"),
            ("APIDRIFT_METRICS__TOKEN", "from-env"),
        ]);
        let s = load(Some(&file), &e, &Overrides::default())?;
        assert_eq!(
            s.log.filter.as_deref(),
            Some("apidrift=debug,actix_web=warn")
        );
        assert_eq!(s.log.format, LogFormat::Text);
        assert_eq!(
            s.metrics.token.as_ref().map(|t| t.expose()),
            Some("from-env")
        );
        assert!(!format!("{s:?}").contains("from-env"));

        let bad = env(&[("APIDRIFT_LOG_FORMAT", "xml")]);
        assert!(load(None, &bad, &Overrides::default()).is_err());
        Ok(())
    }

    #[test]
    fn per_endpoint_metrics_from_file_and_environment() -> TestResult {
        let s = load(None, &env(&[]), &Overrides::default())?;
        assert!(!s.metrics.per_endpoint);
        assert_eq!(s.metrics.max_series, DEFAULT_MAX_SERIES);
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("apidrift.toml");
        std::fs::write(&file, "[metrics]\nper_endpoint = true\nmax_series = 2\n")?;
        let s = load(Some(&file), &env(&[]), &Overrides::default())?;
        assert!(s.metrics.per_endpoint);
        assert_eq!(s.metrics.max_series, 2);
        let e = env(&[
            ("APIDRIFT_METRICS__PER_ENDPOINT", "true"),
            ("APIDRIFT_METRICS__MAX_SERIES", "7"),
        ]);
        let s = load(None, &e, &Overrides::default())?;
        assert!(s.metrics.per_endpoint);
        assert_eq!(s.metrics.max_series, 7);
        std::fs::write(&file, "[metrics]\nper_endpoints = true\n")?;
        let err = load(Some(&file), &env(&[]), &Overrides::default()).err();
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains(
                "unknown key `metrics.per_endpoints`; did you mean `metrics.per_endpoint`?"
            ),
            "{text}"
        );
        Ok(())
    }

    #[test]
    fn outbound_keep_alive_from_file_and_environment() -> TestResult {
        let s = load(None, &env(&[]), &Overrides::default())?;
        assert!(s.outbound.keep_alive);
        assert_eq!(s.outbound.idle_timeout_secs, 30);
        assert_eq!(s.outbound.keep_alive(), KeepAlive::default());

        let dir = tempfile::tempdir()?;
        let file = dir.path().join("apidrift.toml");
        std::fs::write(
            &file,
            "[outbound]\nkeep_alive = false\nidle_timeout_secs = 5\n",
        )?;
        let s = load(Some(&file), &env(&[]), &Overrides::default())?;
        assert!(!s.outbound.keep_alive && !s.outbound.keep_alive().enabled);
        assert_eq!(s.outbound.idle_timeout_secs, 5);
        assert!(s.outbound.allow_cidrs.is_empty());

        let e = env(&[
            ("APIDRIFT_OUTBOUND__KEEP_ALIVE", "true"),
            ("APIDRIFT_OUTBOUND__IDLE_TIMEOUT_SECS", "90"),
            ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
        ]);
        let s = load(Some(&file), &e, &Overrides::default())?;
        let keep_alive = s.outbound.keep_alive();
        assert!(keep_alive.enabled);
        assert_eq!(keep_alive.idle_timeout, std::time::Duration::from_secs(90));
        assert_eq!(s.outbound.allow_cidrs, vec!["127.0.0.0/8"]);

        let e = env(&[("APIDRIFT_OUTBOUND__KEEP_ALIVE", "false")]);
        assert!(!load(None, &e, &Overrides::default())?.outbound.keep_alive);
        // 0 seconds keeps no idle connection: reuse is off.
        let e = env(&[("APIDRIFT_OUTBOUND__IDLE_TIMEOUT_SECS", "0")]);
        let s = load(None, &e, &Overrides::default())?;
        assert!(s.outbound.keep_alive && !s.outbound.keep_alive().enabled);

        let bad = env(&[("APIDRIFT_OUTBOUND__KEEP_ALIVE", "maybe")]);
        assert!(load(None, &bad, &Overrides::default()).is_err());
        let bad = env(&[("APIDRIFT_OUTBOUND__IDLE_TIMEOUT_SECS", "-1")]);
        assert!(load(None, &bad, &Overrides::default()).is_err());
        Ok(())
    }

    /// An unknown key stops the load, naming where it came from and the nearest valid key;
    /// the variables of flags and of the test harness are not settings and pass.
    #[test]
    fn unknown_keys_are_refused_with_the_nearest_valid_one() -> TestResult {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("apidrift.toml");
        let refused = |file: Option<&Path>, e: &HashMap<String, String>| {
            load(file, e, &Overrides::default())
                .err()
                .map(|e| e.0)
                .unwrap_or_default()
        };
        std::fs::write(&file, "[servr]\nbind = \"127.0.0.1:1\"\n")?;
        let text = refused(Some(&file), &env(&[]));
        assert!(
            text.contains("apidrift.toml: unknown key `servr`; did you mean `server`?"),
            "{text}"
        );
        std::fs::write(&file, "[limits]\nreads_per_minut = 5\n")?;
        let text = refused(Some(&file), &env(&[]));
        assert!(
            text.contains(
                "unknown key `limits.reads_per_minut`; did you mean `limits.reads_per_minute`?"
            ),
            "{text}"
        );
        std::fs::write(&file, "colour = true\n")?;
        let text = refused(Some(&file), &env(&[]));
        assert!(
            text.contains("unknown key `colour`") && !text.contains("did you mean"),
            "{text}"
        );

        let text = refused(None, &env(&[("APIDRIFT_SERVR__BIND", "127.0.0.1:1")]));
        assert!(
            text.contains("variable APIDRIFT_SERVR__BIND names no setting; did you mean APIDRIFT_SERVER__BIND?"),
            "{text}"
        );
        let text = refused(None, &env(&[("APIDRIFT_WORKER__POL_MS", "5")]));
        assert!(
            text.contains("did you mean APIDRIFT_WORKER__POLL_MS?"),
            "{text}"
        );
        let text = refused(None, &env(&[("APIDRIFT_LOG_FORMT", "json")]));
        assert!(text.contains("did you mean APIDRIFT_LOG_FORMAT?"), "{text}");
        let text = refused(None, &env(&[("APIDRIFT_BIND", "127.0.0.1:1")]));
        assert!(text.contains("APIDRIFT_BIND names no setting"), "{text}");

        let fine = env(&[
            ("APIDRIFT_WORKSPACE", "x"),
            ("APIDRIFT_ROLE", "api"),
            ("APIDRIFT_TEST_DATABASE_URL", "postgres://x"),
            ("APIDRIFT_SKIP_POSTGRES", "1"),
            ("APIDRIFT_BIN", "/tmp/x"),
            ("APIDRIFT_E2E_RACE_SECS", "1"),
            ("APIDRIFT_LOG", "debug"),
        ]);
        load(None, &fine, &Overrides::default())?;
        Ok(())
    }

    /// Every `APIDRIFT_` variable a command-line flag reads is in [`FLAG_VARIABLES`], so that
    /// strict loading never refuses it.
    #[test]
    fn flag_variables_are_listed() {
        use clap::CommandFactory as _;
        fn walk(cmd: &clap::Command, found: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                if let Some(name) = arg.get_env().and_then(|n| n.to_str()) {
                    found.push(name.to_owned());
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, found);
            }
        }
        let mut found = Vec::new();
        walk(&crate::Cli::command(), &mut found);
        let missing: Vec<&String> = found
            .iter()
            .filter(|n| n.starts_with("APIDRIFT_") && !FLAG_VARIABLES.contains(&n.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "flag variables missing from FLAG_VARIABLES: {missing:?}"
        );
        assert!(found.iter().any(|n| n == "APIDRIFT_WORKSPACE"), "{found:?}");
    }

    #[test]
    fn apply_variables_are_not_settings() {
        for name in [
            "APIDRIFT_TOKEN",
            "APIDRIFT_SECRET_SVC_07_AUTH_TOKEN",
            "APIDRIFT_SECRET_USERS_V2_HEADER_X_API_KEY",
            "APIDRIFT_SECRET_ORDERS_REQUEST_BODY",
        ] {
            assert!(!is_setting_variable(name), "{name}");
        }
        for name in ["APIDRIFT_SECRET_KEY_FILE", "APIDRIFT_SECRET_KEY_FIEL"] {
            assert!(is_setting_variable(name), "{name}");
        }
    }

    #[test]
    fn import_limit_from_file_and_environment() -> TestResult {
        let s = load(None, &env(&[]), &Overrides::default())?;
        assert_eq!(s.limits.import_max_bytes, 32 * 1024 * 1024);
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("apidrift.toml");
        std::fs::write(&file, "[limits]\nimport_max_bytes = 1000\n")?;
        let s = load(Some(&file), &env(&[]), &Overrides::default())?;
        assert_eq!(s.limits.import_max_bytes, 1000);
        assert_eq!(s.limits.reads_per_minute, 120);
        let e = env(&[("APIDRIFT_LIMITS__IMPORT_MAX_BYTES", "67108864")]);
        let s = load(Some(&file), &e, &Overrides::default())?;
        assert_eq!(s.limits.import_max_bytes, 64 * 1024 * 1024);
        assert_eq!(s.limits.import_parse_secs, 30);
        let e = env(&[("APIDRIFT_LIMITS__IMPORT_PARSE_SECS", "5")]);
        let s = load(Some(&file), &e, &Overrides::default())?;
        assert_eq!(s.limits.import_parse_secs, 5);
        Ok(())
    }

    #[test]
    fn missing_or_malformed_file_is_an_error() -> TestResult {
        let dir = tempfile::tempdir()?;
        let missing = dir.path().join("nope.toml");
        let err = load(Some(&missing), &env(&[]), &Overrides::default()).err();
        assert!(err.is_some_and(|e| e.0.contains("nope.toml") && e.0.contains("not found")));
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "server = [\n")?;
        assert!(load(Some(&bad), &env(&[]), &Overrides::default()).is_err());
        Ok(())
    }

    #[test]
    fn secrets_come_from_the_environment_and_never_print() -> TestResult {
        let key = SecretKey::generate()?;
        let old = SecretKey::generate()?;
        let e = env(&[
            ("ENDPOINT_SECRET_KEY", key.to_base64().as_str()),
            ("ENDPOINT_SECRET_KEY_PREVIOUS", old.to_base64().as_str()),
        ]);
        let s = load(None, &e, &Overrides::default())?;
        let printed = format!("{s:?}");
        assert!(!printed.contains(key.to_base64().as_str()) && printed.contains("***"));
        let ring = s.key_ring()?.ok_or("no key ring")?;
        assert_eq!(ring.key_ids(), vec![key.id(), old.id()]);

        // An empty variable counts as unset.
        let s = load(
            None,
            &env(&[("ENDPOINT_SECRET_KEY", "")]),
            &Overrides::default(),
        )?;
        assert!(s.secret_key.is_none());

        let e = env(&[("ENDPOINT_SECRET_KEY", "CANARY-short")]);
        let err = load(None, &e, &Overrides::default())?
            .key_ring()
            .err()
            .ok_or("accepted")?;
        assert!(err.0.starts_with("ENDPOINT_SECRET_KEY: ") && !err.0.contains("CANARY"));
        Ok(())
    }

    #[test]
    fn key_file_beside_the_sqlite_database() -> TestResult {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("data.db");
        let url = format!("sqlite://{}", db.display());
        let flags = Overrides {
            database_url: Some(url),
            bind: None,
        };
        let s = load(None, &env(&[]), &flags)?;
        let path = s.key_file_path().ok_or("no key file path")?;
        assert_eq!(path, dir.path().join("apidrift.key"));
        assert!(
            s.key_ring()?.is_none(),
            "missing default key file means no key"
        );
        let key = apidrift_seal::create_key_file(&path)?;
        assert_eq!(s.key_ring()?.map(|r| r.active_id()), Some(key.id()));

        // A configured key file that is missing is an error, not "no key".
        let e = env(&[("APIDRIFT_SECRET_KEY_FILE", "/nonexistent/apidrift.key")]);
        let s = load(None, &e, &Overrides::default())?;
        assert!(s.key_ring().is_err());
        // PostgreSQL has no default key file.
        let e = env(&[("DATABASE_URL", "postgres://localhost/db")]);
        assert_eq!(load(None, &e, &Overrides::default())?.key_file_path(), None);
        Ok(())
    }
}
