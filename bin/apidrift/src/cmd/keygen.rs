//! `apidrift keygen` (D3): prints a fresh `ENDPOINT_SECRET_KEY` value, 32 bytes from the operating
//! system's CSPRNG, as standard base64 on one line.

use super::CliError;
use std::process::ExitCode;

pub fn run() -> Result<ExitCode, CliError> {
    let key = apidrift_seal::generate_key().map_err(|e| CliError(e.to_string()))?;
    println!("{}", key.to_base64().as_str());
    Ok(ExitCode::SUCCESS)
}
