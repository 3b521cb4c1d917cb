//! # apidrift
//!
//! The one binary: the service (`serve`) and the command-line tools. It only wires: parsing
//! arguments, reading configuration, picking the concrete storage adapter, building the
//! application service (`apidrift_app::Service`, once per process) and calling it. Each
//! subcommand lives in its own module under `cmd/`; the offline tools (`diff`, `validate`,
//! `snapshot`) call the diff engine directly, having no stored state.
//!
//! Exit codes: 0 on success; 2 on bad input or a refused use case (one line on stderr; a
//! `ServiceError` becomes that line in `error.rs`); subcommands that gate CI (`diff`, `validate`)
//! use 1 for "a change reached the threshold", `keys rotate` for values that did not open.

mod cmd;
mod color;
mod config;
mod db;
mod dburl;
mod error;
mod logging;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

/// jemalloc, not the system allocator: glibc's malloc keeps the memory a request freed (an
/// OpenAPI import parses a document of a few MB into tens of MB of trees, for a moment) in its
/// arenas for good, so the process stayed near its peak. jemalloc's background thread returns
/// pages that stay unused for a few seconds to the system.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
use config::GlobalArgs;
use std::process::ExitCode;

/// apidrift — API drift monitor.
#[derive(Debug, Parser)]
#[command(name = "apidrift", version, about, propagate_version = true)]
struct Cli {
    /// When to colour output: `auto` colours a terminal unless NO_COLOR is set; `always` wins
    /// over NO_COLOR and pipes; `never` never colours.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    color: color::ColorChoice,

    /// The database flags also accepted before the subcommand (`apidrift --database-url X
    /// token list …`); the subcommand's own flags win.
    #[command(flatten)]
    legacy: LegacyDbArgs,

    #[command(subcommand)]
    command: Command,
}

/// `--database-url`/`--config` given before the subcommand: accepted for compatibility, shown
/// only on the commands that use a database.
#[derive(Debug, Clone, Default, clap::Args)]
struct LegacyDbArgs {
    #[arg(long = "database-url", hide = true, value_name = "URL")]
    database_url: Option<String>,
    #[arg(long = "config", hide = true, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
}

/// `--create` of the admin commands that may start from nothing.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
struct CreateFlag {
    /// Create the database when it does not exist yet (a new SQLite file). Without it, a
    /// missing database is an error, so a typo or another working directory never starts an
    /// empty one.
    #[arg(long, global = true)]
    create: bool,
}

/// A command with arguments of its own that uses a database.
#[derive(Debug, clap::Args)]
struct WithDb<T: clap::Args> {
    #[command(flatten)]
    db: GlobalArgs,
    #[command(flatten)]
    args: T,
}

/// A group of admin subcommands that use a database.
#[derive(Debug, clap::Args)]
struct DbGroup<T: clap::Subcommand> {
    #[command(flatten)]
    db: GlobalArgs,
    #[command(subcommand)]
    command: T,
}

/// A group of admin subcommands that may create the database (`--create`).
#[derive(Debug, clap::Args)]
struct CreatingGroup<T: clap::Subcommand> {
    #[command(flatten)]
    db: GlobalArgs,
    #[command(flatten)]
    create: CreateFlag,
    #[command(subcommand)]
    command: T,
}

/// `migrate`: the database flags and `--create`.
#[derive(Debug, clap::Args)]
struct MigrateArgs {
    #[command(flatten)]
    db: GlobalArgs,
    #[command(flatten)]
    create: CreateFlag,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a fresh ENDPOINT_SECRET_KEY value (32 random bytes, standard base64) on one line.
    Keygen,
    /// Run the service: the REST API on --bind (default 127.0.0.1:3000).
    Serve(WithDb<cmd::serve::ServeArgs>),
    /// Apply pending database migrations and exit.
    Migrate(MigrateArgs),
    /// Create, change or list workspaces (plan, endpoint limit, check quota).
    Workspace(CreatingGroup<cmd::workspace::WorkspaceCommand>),
    /// Create, list and revoke API tokens.
    Token(DbGroup<cmd::token::TokenCommand>),
    /// Create, list and remove console users.
    User(DbGroup<cmd::user::UserCommand>),
    /// Sealing-key maintenance: `keys rotate` re-seals stored secrets under the current key.
    Keys(DbGroup<cmd::keys::KeysCommand>),
    /// Write a consistent copy of a SQLite database while the service runs (PostgreSQL: use
    /// pg_dump).
    Backup(WithDb<cmd::backup::BackupArgs>),
    /// Compare two responses (snapshot or JSON files, `-` for stdin); exit 1 when a change
    /// reaches --fail-on (the offline CI gate).
    Diff(cmd::diff::DiffArgs),
    /// Check responses against an OpenAPI response contract (one parse of the document for
    /// all of them); exit 1 on a violation.
    Validate(cmd::validate::ValidateArgs),
    /// Capture an endpoint's baseline now (fetches it through the SSRF-safe client).
    Baseline(DbGroup<cmd::baseline::BaselineCommand>),
    /// Attach or detach an endpoint's OpenAPI response contract.
    Contract(DbGroup<cmd::contract::ContractCommand>),
    /// List, show, change, pause, resume and delete endpoints.
    Endpoint(DbGroup<cmd::endpoint::EndpointCommand>),
    /// Register, list and remove alert webhooks.
    Webhook(DbGroup<cmd::webhook::WebhookCommand>),
    /// Make a workspace's keyed endpoints match a monitors file (YAML or JSON): create, update
    /// and, with --prune, delete; --dry-run prints the plan only.
    Apply(WithDb<cmd::apply::ApplyArgs>),
    /// Write a workspace's keyed endpoints as a monitors file (secrets as ${…} placeholders).
    Export(WithDb<cmd::apply::ExportArgs>),
    /// Save a live response (status, headers, body) as a snapshot file for `apidrift diff`.
    Snapshot(cmd::snapshot::SnapshotArgs),
    /// Try apidrift offline in one command: a throwaway service on a temporary database, a
    /// sample upstream that drifts, a diff on screen and the console to look at it; Ctrl-C ends
    /// it and deletes everything it created.
    Demo(cmd::demo::DemoArgs),
    /// Check the configuration: print the effective settings (secrets redacted), or name what
    /// is wrong (an unknown key, a bad value) and exit 2.
    Config(DbGroup<cmd::settings::ConfigCommand>),
}

/// How to create a database on purpose, for commands without `--create`.
const CREATE_HINT: &str = "create one with `apidrift migrate --create` (or start `apidrift serve`)";

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let choice = color::scan_args(&args);
    let parsed = Cli::command()
        .color(choice.for_clap())
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    color::set(cli.color);
    let legacy = cli.legacy;
    let merge = |db: GlobalArgs| GlobalArgs {
        database_url: db.database_url.or_else(|| legacy.database_url.clone()),
        config: db.config.or_else(|| legacy.config.clone()),
    };
    let result = match cli.command {
        Command::Keygen => cmd::keygen::run(),
        Command::Serve(c) => cmd::serve::run(&merge(c.db), c.args),
        Command::Migrate(c) => admin(&merge(c.db), c.create.create, "pass --create", |g| {
            cmd::migrate::run(g)
        }),
        Command::Workspace(c) => admin(&merge(c.db), c.create.create, "pass --create", |g| {
            cmd::workspace::run(g, c.command)
        }),
        Command::Token(c) => admin(&merge(c.db), false, CREATE_HINT, |g| {
            cmd::token::run(g, c.command)
        }),
        Command::User(c) => admin(&merge(c.db), false, CREATE_HINT, |g| {
            cmd::user::run(g, c.command)
        }),
        Command::Keys(c) => admin(&merge(c.db), false, CREATE_HINT, |g| {
            cmd::keys::run(g, c.command)
        }),
        Command::Backup(c) => admin(&merge(c.db), false, "there is nothing to back up", |g| {
            cmd::backup::run(g, c.args)
        }),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Validate(args) => cmd::validate::run(args),
        Command::Baseline(c) => admin(&merge(c.db), false, CREATE_HINT, |g| {
            cmd::baseline::run(g, c.command)
        }),
        Command::Contract(c) => admin(&merge(c.db), false, CREATE_HINT, |g| {
            cmd::contract::run(g, c.command)
        }),
        Command::Webhook(c) => admin(&merge(c.db), false, CREATE_HINT, |g| {
            cmd::webhook::run(g, c.command)
        }),
        Command::Endpoint(c) => admin(&merge(c.db), false, CREATE_HINT, |g| {
            cmd::endpoint::run(g, c.command)
        }),
        // With --server it talks to the server only: no database.
        Command::Apply(c) if c.args.remote() => cmd::apply::run(&merge(c.db), c.args),
        Command::Apply(c) => admin(&merge(c.db), false, CREATE_HINT, |g| {
            cmd::apply::run(g, c.args)
        }),
        Command::Export(c) => admin(&merge(c.db), false, CREATE_HINT, |g| {
            cmd::apply::export(g, c.args)
        }),
        // Offline: the outbound allow-list comes from the environment alone.
        Command::Snapshot(args) => cmd::snapshot::run(&GlobalArgs::default(), args),
        // Its own temporary database and allow-list; no database flags.
        Command::Demo(args) => cmd::demo::run(args),
        Command::Config(c) => cmd::settings::run(&merge(c.db), c.command),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("apidrift: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs an admin command against the configured database: refuses a database that does not
/// exist yet unless `create` (saying `hint`), and names the database it used on stderr, in one
/// line: `apidrift: database URL` after success, or appended to the error.
fn admin(
    global: &GlobalArgs,
    create: bool,
    hint: &str,
    run: impl FnOnce(&GlobalArgs) -> Result<ExitCode, cmd::CliError>,
) -> Result<ExitCode, cmd::CliError> {
    let settings = config::load_from_process(global)?;
    let shown = db::describe(&settings.database_url);
    if !create {
        db::require_existing(&settings.database_url, hint)?;
    }
    match run(global) {
        Ok(code) => {
            eprintln!("apidrift: database {shown}");
            Ok(code)
        }
        Err(e) => Err(cmd::CliError(format!("{e} (database {shown})"))),
    }
}

/// Bad arguments: one line on stderr and exit 2 (D3). `--help`, `--version` and a bare `apidrift`
/// keep clap's full output.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if !e.use_stderr() || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        e.exit();
    }
    // clap's first paragraph, on one line (it lists missing arguments on indented lines).
    let text = e.to_string();
    let first: Vec<&str> = text
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    let mut line = first.join(" ");
    // clap's suggestions ("tip: a similar subcommand exists: 'diff'") follow on lines of their
    // own: keep them on the one line.
    for tip in text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tip: "))
    {
        line.push_str(" (");
        line.push_str(tip.trim_start_matches("tip: "));
        line.push(')');
    }
    let line = line.trim_start_matches("error: ");
    eprintln!(
        "apidrift: {}",
        if line.is_empty() {
            "invalid arguments"
        } else {
            line
        }
    );
    ExitCode::from(2)
}
