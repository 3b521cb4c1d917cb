//! `apidrift config check`: loads the configuration as `serve` would (file, environment, flags,
//! with every unknown key refused) and prints the effective settings as JSON, each secret as
//! `<redacted>` and a password in the database URL too. Exit 0 when it loads, 2 (with the
//! reason) when it does not.

use super::CliError;
use crate::config::{GlobalArgs, load_from_process};
use std::process::ExitCode;

/// The subcommands of `apidrift config`.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Load the configuration (file, environment, flags) and print the effective settings,
    /// secrets redacted; exit 2 naming any unknown key or invalid value.
    Check,
}

pub fn run(global: &GlobalArgs, command: ConfigCommand) -> Result<ExitCode, CliError> {
    match command {
        ConfigCommand::Check => {
            let settings = load_from_process(global)?;
            let text = serde_json::to_string_pretty(&settings)
                .map_err(|e| CliError(format!("cannot print the configuration: {e}")))?;
            println!("{text}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
