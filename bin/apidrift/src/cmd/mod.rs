//! One module per subcommand. Each exposes `run(...) -> Result<ExitCode, CliError>`.

pub mod apply;
pub mod backup;
pub mod baseline;
pub mod bundle;
pub mod contract;
pub mod demo;
pub mod diff;
pub mod endpoint;
pub mod gate;
pub mod keygen;
pub mod keys;
pub mod migrate;
pub mod serve;
pub mod settings;
pub mod snapshot;
pub mod token;
pub mod user;
pub mod validate;
pub mod webhook;
pub mod workspace;

pub use crate::error::CliError;

/// Prints one JSON document on stdout (the admin commands' output, D3).
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string(value)
        .map_err(|e| CliError(format!("cannot encode the output: {e}")))?;
    println!("{text}");
    Ok(())
}
