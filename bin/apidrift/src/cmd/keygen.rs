//! `apidrift keygen` (D3): prints a fresh `ENDPOINT_SECRET_KEY` value, 32 bytes from the operating
//! system's CSPRNG, as standard base64 on one line.

use super::CliError;
use base64::Engine as _;
use ring::rand::{SecureRandom, SystemRandom};
use std::process::ExitCode;

pub fn run() -> Result<ExitCode, CliError> {
    let mut key = [0u8; 32];
    SystemRandom::new()
        .fill(&mut key)
        .map_err(|_| CliError("the system random number generator failed".into()))?;
    println!("{}", base64::engine::general_purpose::STANDARD.encode(key));
    Ok(ExitCode::SUCCESS)
}
