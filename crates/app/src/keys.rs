//! Key rotation (D3, security-tests.md "Rotation"): re-seals every stored secret under the active
//! key, opening old values with the previous keys of the ring.
//!
//! Each sealed column is walked in row-id order in batches of [`REWRAP_BATCH`]; each value that
//! names an older key is opened, sealed again and written with a compare-and-swap
//! (`… WHERE blob = old`), so a value the service rewrote meanwhile is left alone. Stopping loses
//! nothing and a re-run finishes the rest: values already on the active key are skipped.

use super::base::Service;
use super::error::ServiceError;
use apidrift_seal::{Binding, Field, KeyRing, SealError};
use apidrift_store::{REWRAP_BATCH, SealedField};
use serde::Serialize;
use std::collections::BTreeMap;

/// Counts of one column, or of all of them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub rewrapped: u64,
    pub already_current: u64,
    pub changed_meanwhile: u64,
    /// Values that do not open with the configured keys (damaged, or their key is missing).
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

/// What a rotation did: `{"activeKey","rewrapped","alreadyCurrent","changedMeanwhile","failed",
/// "fields":{…}}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rotation {
    pub active_key: String,
    #[serde(flatten)]
    pub total: Counts,
    pub fields: BTreeMap<&'static str, Counts>,
}

/// The seal-crate field a store column binds into its associated data.
fn field_of(column: SealedField) -> Result<Field, ServiceError> {
    match column {
        SealedField::EndpointAuth => Ok(Field::EndpointAuth),
        SealedField::EndpointHeaders => Ok(Field::EndpointHeaders),
        SealedField::BaselineBody => Ok(Field::BaselineBody),
        SealedField::CheckBody => Ok(Field::CheckBody),
        SealedField::EndpointRequestBody => Ok(Field::EndpointRequestBody),
        SealedField::WebhookSecret => Ok(Field::WebhookSecret),
        other => Err(ServiceError::Internal(format!(
            "keys rotate does not know the sealed column {}; upgrade apidrift",
            other.column()
        ))),
    }
}

impl Service {
    /// Re-seals every sealed value under the active key. Store failures stop the run (a re-run
    /// resumes); values that do not open are counted in `failed` and skipped.
    pub async fn rotate_keys(&self) -> Result<Rotation, ServiceError> {
        let ring = self.keys_or(", so there is no key to rotate to")?;
        let mut rotation = Rotation {
            active_key: ring.active_id().to_string(),
            total: Counts::default(),
            fields: BTreeMap::new(),
        };
        for &column in SealedField::ALL {
            let counts = self.rotate_column(ring, column).await?;
            rotation.total.add(counts);
            rotation.fields.insert(column.column(), counts);
        }
        Ok(rotation)
    }

    async fn rotate_column(
        &self,
        ring: &KeyRing,
        column: SealedField,
    ) -> Result<Counts, ServiceError> {
        let field = field_of(column)?;
        let mut counts = Counts::default();
        let mut after = None;
        loop {
            let batch = self
                .store
                .sealed_values(column, after, REWRAP_BATCH)
                .await?;
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
                        let swapped = self
                            .store
                            .replace_sealed_value(
                                column,
                                value.workspace_id,
                                value.row_id,
                                &value.blob,
                                &new,
                            )
                            .await?;
                        if swapped {
                            counts.rewrapped += 1;
                        } else {
                            counts.changed_meanwhile += 1;
                        }
                    }
                    Err(e @ SealError::UsageLimit { .. }) => {
                        return Err(ServiceError::Internal(e.to_string()));
                    }
                    Err(_) => counts.failed += 1,
                }
            }
        }
        Ok(counts)
    }
}
