//! # apidrift
//!
//! The one binary: the service (`serve`) and the command-line tools. It only wires: parsing
//! arguments, reading configuration, picking the concrete storage adapter, building the
//! application service (`apidrift_monitor::Service`, once per process) and calling it. Each
//! subcommand lives in its own module under `cmd/`; the offline tools (`diff`, `validate`,
//! `snapshot`) call the diff engine directly, having no stored state.
//!
//! Exit codes: 0 on success; 2 on bad input or a refused use case (one line on stderr; a
//! `ServiceError` becomes that line in `error.rs`); subcommands that gate CI (`diff`, `validate`)
//! use 1 for "a change reached the threshold", `keys rotate` for values that did not open.

mod cmd;
mod config;
mod db;
mod error;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// apidrift — API drift monitor.
#[derive(Debug, Parser)]
#[command(name = "apidrift", version, about, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    global: config::GlobalArgs,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a fresh ENDPOINT_SECRET_KEY value (32 random bytes, standard base64) on one line.
    Keygen,
    /// Run the service: the REST API on --bind (default 127.0.0.1:3000).
    Serve(cmd::serve::ServeArgs),
    /// Apply pending database migrations and exit.
    Migrate,
    /// Create or change workspaces (plan, endpoint limit, check quota).
    #[command(subcommand)]
    Workspace(cmd::workspace::WorkspaceCommand),
    /// Create, list and revoke API tokens.
    #[command(subcommand)]
    Token(cmd::token::TokenCommand),
    /// Create, list and remove console users (D15).
    #[command(subcommand)]
    User(cmd::user::UserCommand),
    /// Sealing-key maintenance: `keys rotate` re-seals stored secrets under the current key.
    #[command(subcommand)]
    Keys(cmd::keys::KeysCommand),
    /// Compare two responses (snapshot or JSON files, `-` for stdin); exit 1 when a change
    /// reaches --fail-on (the offline CI gate).
    Diff(cmd::diff::DiffArgs),
    /// Check a response against an OpenAPI response contract; exit 1 on a violation.
    Validate(cmd::validate::ValidateArgs),
    /// Capture an endpoint's baseline now (fetches it through the SSRF-safe client).
    #[command(subcommand)]
    Baseline(cmd::baseline::BaselineCommand),
    /// Attach or detach an endpoint's OpenAPI response contract.
    #[command(subcommand)]
    Contract(cmd::contract::ContractCommand),
    /// List, show, change, pause, resume and delete endpoints.
    #[command(subcommand)]
    Endpoint(cmd::endpoint::EndpointCommand),
    /// Register, list and remove alert webhooks (D11).
    #[command(subcommand)]
    Webhook(cmd::webhook::WebhookCommand),
    /// Save a live response (status, headers, body) as a snapshot file for `apidrift diff`.
    Snapshot(cmd::snapshot::SnapshotArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let result = match cli.command {
        Command::Keygen => cmd::keygen::run(),
        Command::Serve(args) => cmd::serve::run(&cli.global, args),
        Command::Migrate => cmd::migrate::run(&cli.global),
        Command::Workspace(c) => cmd::workspace::run(&cli.global, c),
        Command::Token(c) => cmd::token::run(&cli.global, c),
        Command::User(c) => cmd::user::run(&cli.global, c),
        Command::Keys(c) => cmd::keys::run(&cli.global, c),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Validate(args) => cmd::validate::run(args),
        Command::Baseline(c) => cmd::baseline::run(&cli.global, c),
        Command::Contract(c) => cmd::contract::run(&cli.global, c),
        Command::Snapshot(args) => cmd::snapshot::run(&cli.global, args),
        Command::Webhook(c) => cmd::webhook::run(&cli.global, c),
        Command::Endpoint(c) => cmd::endpoint::run(&cli.global, c),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("apidrift: {e}");
            ExitCode::from(2)
        }
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
    let line = first.join(" ");
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
