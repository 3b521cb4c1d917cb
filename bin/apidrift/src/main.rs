//! # apidrift
//!
//! The one binary: the service (`serve`, arriving with the API) and the command-line tools. It only
//! wires: parsing arguments, reading configuration, picking the concrete storage adapter, and
//! calling into the library crates. Each subcommand lives in its own module under `cmd/`.
//!
//! Exit codes: 0 on success; 2 on bad input (one line on stderr); subcommands that gate CI (`diff`,
//! `validate`) use 1 for "a change reached the threshold".

mod cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// apidrift — API drift monitor.
#[derive(Debug, Parser)]
#[command(name = "apidrift", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a fresh ENDPOINT_SECRET_KEY value (32 random bytes, standard base64) on one line.
    Keygen,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Keygen => cmd::keygen::run(),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("apidrift: {e}");
            ExitCode::from(2)
        }
    }
}
