//! `apidrift keys rotate` (D3, security-tests.md "Rotation"): re-seals every stored secret under
//! the active key (`ENDPOINT_SECRET_KEY`, or the key file), opening old values with the keys in
//! `ENDPOINT_SECRET_KEY_PREVIOUS`.
//! The rotation itself is the service's (`Service::rotate_keys`): each sealed column in batches,
//! each value re-sealed with a compare-and-swap, so killing the command loses nothing and a re-run
//! finishes the rest.
//!
//! Prints `{"activeKey","rewrapped","alreadyCurrent","changedMeanwhile","failed","fields":{…}}`.
//! Exit 0 when every value is on the active key, 1 when some could not be opened (their key is
//! not configured, or they are damaged), 2 on bad input.

use super::CliError;
use crate::config::{self, GlobalArgs};
use crate::db;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// Re-seal every stored secret under the current key; safe to interrupt and re-run.
    Rotate,
}

pub fn run(global: &GlobalArgs, command: KeysCommand) -> Result<ExitCode, CliError> {
    let KeysCommand::Rotate = command;
    let settings = config::load_from_process(global)?;
    let Some(ring) = settings.key_ring()? else {
        return Err(CliError(
            "no secret key configured: set ENDPOINT_SECRET_KEY (old keys in \
             ENDPOINT_SECRET_KEY_PREVIOUS) or secret_key_file"
                .into(),
        ));
    };
    let ring = ring.with_warn_hook(Box::new(|key, count| {
        eprintln!("apidrift: warning: key {key} has sealed {count} values; rotate it soon");
    }));
    let rotation = db::block_on(async {
        let store = db::open(&settings, true).await?;
        let service = db::new_service(&settings, store, Some(ring), db::allow_list(&settings)?)?;
        Ok::<_, CliError>(service.rotate_keys().await?)
    })??;
    super::print_json(&rotation)?;
    if rotation.total.failed > 0 {
        eprintln!(
            "apidrift: {} sealed values do not open with the configured keys; add their key to \
             ENDPOINT_SECRET_KEY_PREVIOUS and run `apidrift keys rotate` again",
            rotation.total.failed
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
