//! `apidrift keys rotate` (D3, security-tests.md "Rotation"): re-seals every stored secret under
//! the active key (`ENDPOINT_SECRET_KEY`, or the key file), opening old values with the keys in
//! `ENDPOINT_SECRET_KEY_PREVIOUS`.
//!
//! Each sealed column is walked in row-id order in batches of 500; each value that names an older
//! key is opened, sealed again and written with a compare-and-swap (`… WHERE blob = old`), so a
//! value the service rewrote meanwhile is left alone. Killing the command loses nothing and a
//! re-run finishes the rest: values already on the active key are skipped.
//!
//! Prints `{"activeKey","rewrapped","alreadyCurrent","changedMeanwhile","failed","fields":{…}}`.
//! Exit 0 when every value is on the active key, 1 when some could not be opened (their key is
//! not configured, or they are damaged), 2 on bad input.

use super::CliError;
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_seal::{Binding, Field, KeyRing, SealError};
use apidrift_store::{REWRAP_BATCH, SealedField, Store};
use serde::Serialize;
use std::collections::BTreeMap;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// Re-seal every stored secret under the current key; safe to interrupt and re-run.
    Rotate,
}

/// Counts of one column, or of all of them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub rewrapped: u64,
    pub already_current: u64,
    pub changed_meanwhile: u64,
    pub failed: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.rewrapped += other.rewrapped;
        self.already_current += other.already_current;
        self.changed_meanwhile += other.changed_meanwhile;
        self.failed += other.failed;
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output {
    active_key: String,
    #[serde(flatten)]
    total: Counts,
    fields: BTreeMap<&'static str, Counts>,
}

/// The seal-crate field a store column binds into its associated data.
pub fn field_of(column: SealedField) -> Result<Field, CliError> {
    match column {
        SealedField::EndpointAuth => Ok(Field::EndpointAuth),
        SealedField::EndpointHeaders => Ok(Field::EndpointHeaders),
        SealedField::BaselineBody => Ok(Field::BaselineBody),
        SealedField::CheckBody => Ok(Field::CheckBody),
        SealedField::EndpointRequestBody => Ok(Field::EndpointRequestBody),
        SealedField::WebhookSecret => Ok(Field::WebhookSecret),
        other => Err(CliError(format!(
            "keys rotate does not know the sealed column {}; upgrade apidrift",
            other.column()
        ))),
    }
}

/// Rewraps one column. Store failures stop the run (a re-run resumes); values that do not open
/// are counted and skipped.
pub async fn rotate_column(
    store: &dyn Store,
    ring: &KeyRing,
    column: SealedField,
) -> Result<Counts, CliError> {
    let field = field_of(column)?;
    let mut counts = Counts::default();
    let mut after = None;
    loop {
        let batch = store
            .sealed_values(column, after, REWRAP_BATCH)
            .await
            .map_err(db::store_error)?;
        let Some(last) = batch.last() else { break };
        after = Some(last.row_id);
        for value in batch {
            let binding = Binding::new(
                value.workspace_id.into_bytes(),
                value.row_id.into_bytes(),
                field,
            );
            match ring.rewrap(&value.blob, &binding) {
                Ok(None) => counts.already_current += 1,
                Ok(Some(new)) => {
                    let swapped = store
                        .replace_sealed_value(
                            column,
                            value.workspace_id,
                            value.row_id,
                            &value.blob,
                            &new,
                        )
                        .await
                        .map_err(db::store_error)?;
                    if swapped {
                        counts.rewrapped += 1;
                    } else {
                        counts.changed_meanwhile += 1;
                    }
                }
                Err(e @ SealError::UsageLimit { .. }) => return Err(CliError(e.to_string())),
                Err(_) => counts.failed += 1,
            }
        }
    }
    Ok(counts)
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
    let output = db::block_on(async {
        let store = db::open(&settings, true).await?;
        let mut output = Output {
            active_key: ring.active_id().to_string(),
            total: Counts::default(),
            fields: BTreeMap::new(),
        };
        for &column in SealedField::ALL {
            let counts = rotate_column(store.as_ref(), &ring, column).await?;
            output.total.add(counts);
            output.fields.insert(column.column(), counts);
        }
        Ok::<_, CliError>(output)
    })??;
    super::print_json(&output)?;
    if output.total.failed > 0 {
        eprintln!(
            "apidrift: {} sealed values do not open with the configured keys; add their key to \
             ENDPOINT_SECRET_KEY_PREVIOUS and run `apidrift keys rotate` again",
            output.total.failed
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
