//! Contract schema sets (issue 29): the schemas an OpenAPI import's contracts reach, stored ONCE
//! per workspace and content, each endpoint's [`ResponseContract`] referring into one by hash.
//!
//! The rules every adapter keeps (the conformance cases in `testkit_contracts` pin them):
//! * **Scope.** A set belongs to one workspace: key (`workspace_id`, `hash`). The same content in
//!   two workspaces is stored twice, so that no workspace learns what another stores.
//! * **Dedup.** Writing a set whose hash the workspace already stores writes nothing (the hash is
//!   the SHA-256 of the canonical text, computed above the store).
//! * **Lifetime.** A set lives while an endpoint of its workspace refers to it
//!   (`response_contract.set`). Every write that drops a reference (deleting an endpoint, an
//!   apply's deletes, replacing or removing a contract) frees the sets it left unreferenced, and a
//!   write of sets frees those that none of its rows ended up referring to (rows past the plan
//!   limit), in the same transaction as the change.

use crate::{BulkCreated, NewEndpointRow, ResponseContract, StoreError};
use async_trait::async_trait;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// A schema set to store: its content hash and canonical JSON text.
#[derive(Clone, PartialEq, Eq)]
pub struct NewContractSet {
    /// Lower-case hex SHA-256 of `document`.
    pub hash: String,
    /// The canonical JSON text (shared: an import passes it to each of its store calls).
    pub document: Arc<str>,
}

impl std::fmt::Debug for NewContractSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewContractSet")
            .field("hash", &self.hash)
            .field("bytes", &self.document.len())
            .finish()
    }
}

/// A stored schema set.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredContractSet {
    pub hash: String,
    /// The canonical JSON text as written.
    pub document: String,
    /// The document's size in bytes, as stored in its `size_bytes` column.
    pub size_bytes: u64,
    pub created_at: OffsetDateTime,
}

impl std::fmt::Debug for StoredContractSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredContractSet")
            .field("hash", &self.hash)
            .field("size_bytes", &self.size_bytes)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// Whether a hash is one the store accepts: 64 lower-case hex digits.
pub fn valid_set_hash(hash: &str) -> bool {
    hash.len() == 64
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks the sets and references of a write: well-formed hashes, and each row's `set` among
/// `sets` (a reference to a set the write does not carry could dangle).
pub fn check_contract_sets(
    sets: &[NewContractSet],
    contracts: impl IntoIterator<Item = Option<String>>,
) -> Result<(), StoreError> {
    if let Some(bad) = sets.iter().find(|s| !valid_set_hash(&s.hash)) {
        return Err(StoreError::InvalidInput(format!(
            "contract set hash {:?}: expected 64 lower-case hex digits",
            bad.hash
        )));
    }
    for set in contracts.into_iter().flatten() {
        if !sets.iter().any(|s| s.hash == set) {
            return Err(StoreError::InvalidInput(format!(
                "response contract refers to schema set {set}, which the write does not carry"
            )));
        }
    }
    Ok(())
}

/// Stored schema sets. Implemented by both adapters.
#[async_trait]
pub trait ContractStore: Send + Sync {
    /// As [`crate::Store::create_endpoints`], writing `sets` in the same transaction: a set the
    /// workspace already stores is kept as it is, and a set that no endpoint refers to after the
    /// write (its rows were past the plan limit) is not kept. Every row's
    /// `response_contract.set` must be the hash of one of `sets`
    /// ([`StoreError::InvalidInput`] otherwise).
    async fn create_endpoints_with_sets(
        &self,
        workspace_id: Uuid,
        rows: Vec<NewEndpointRow>,
        sets: Vec<NewContractSet>,
    ) -> Result<BulkCreated, StoreError>;

    /// Attaches a contract that refers into `set` (written as in
    /// [`ContractStore::create_endpoints_with_sets`]), in one transaction that frees the set the
    /// endpoint referred to before when nothing else refers to it. `contract.set` must be
    /// `set.hash`. [`StoreError::NotFound`] when the endpoint is missing (nothing written).
    async fn set_contract_in_set(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        contract: ResponseContract,
        set: NewContractSet,
        now: OffsetDateTime,
    ) -> Result<(), StoreError>;

    /// The workspace's set with that hash, `None` when it has none (never another workspace's).
    async fn contract_set(
        &self,
        workspace_id: Uuid,
        hash: &str,
    ) -> Result<Option<StoredContractSet>, StoreError>;

    /// How many sets the workspace stores and their total size in bytes.
    async fn contract_set_usage(&self, workspace_id: Uuid) -> Result<(u64, u64), StoreError>;
}
