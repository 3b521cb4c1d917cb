//! Resolving an endpoint's response contract for a check (issue 29): a contract stored as a
//! reference (`ResponseContract::set`) is rebuilt from the workspace's stored schema set and
//! compiled once, then kept in a bounded per-process cache of compiled validators.
//!
//! The cache ([`ValidatorCache`], one per process: [`validators`]) is keyed by (workspace, set
//! hash, operation, status, media type, schema pointer): the set hash names the schemas' content
//! and the pointer the schema the response is checked against within it, so an entry is valid
//! for as long as the key exists and a hit is never wrong. It holds at most
//! [`MAX_VALIDATORS`] validators and at most [`MAX_VALIDATOR_BYTES`] of the schema sets they were
//! compiled from (a set bigger than that is compiled for each check and not kept); past either
//! bound the least recently used entry is evicted, and is compiled again at its next use.
//!
//! A contract stored inline (before schema sets) is compiled for each check, as it was. A set
//! that the workspace no longer stores is a clear error on the check
//! ([`MonitorError::Contract`]), never a panic.

use crate::error::MonitorError;
use apidrift_diff::contract::{
    Contract, ContractValidator, OpenApiDocument, SchemaSet, parse_operation,
};
use apidrift_store::{NewContractSet, ResponseContract, Store};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use uuid::Uuid;

/// At most this many compiled validators are cached per process.
pub const MAX_VALIDATORS: usize = 256;

/// At most this many bytes of schema sets (as stored) stand behind the cached validators.
pub const MAX_VALIDATOR_BYTES: u64 = 256 * 1024 * 1024;

/// What a cached validator was compiled from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ValidatorKey {
    pub workspace: Uuid,
    /// The schema set's content hash.
    pub set: String,
    /// `GET /users/{id}`.
    pub operation: String,
    pub status: u16,
    /// The media type of the contract the response is checked against (`None`: the default).
    pub media_type: Option<String>,
    /// Where that media type's schema is in the set.
    pub pointer: String,
}

struct Entry {
    validator: Arc<ContractValidator>,
    bytes: u64,
    used: u64,
}

#[derive(Default)]
struct Inner {
    map: HashMap<ValidatorKey, Entry>,
    bytes: u64,
    clock: u64,
}

/// A bounded least-recently-used cache of compiled validators.
pub struct ValidatorCache {
    inner: Mutex<Inner>,
    max_entries: usize,
    max_bytes: u64,
}

impl std::fmt::Debug for ValidatorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (len, bytes) = self.usage();
        f.debug_struct("ValidatorCache")
            .field("len", &len)
            .field("bytes", &bytes)
            .field("max_entries", &self.max_entries)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

impl ValidatorCache {
    /// A cache of at most `max_entries` validators compiled from at most `max_bytes` of sets.
    pub fn new(max_entries: usize, max_bytes: u64) -> ValidatorCache {
        ValidatorCache {
            inner: Mutex::new(Inner::default()),
            max_entries,
            max_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves a consistent map: take it back.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The validator cached for `key`, marked as just used.
    pub fn get(&self, key: &ValidatorKey) -> Option<Arc<ContractValidator>> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        inner.map.get_mut(key).map(|e| {
            e.used = now;
            Arc::clone(&e.validator)
        })
    }

    /// Keeps `validator` (compiled from `bytes` of schema set), evicting the least recently used
    /// entries past the bounds; one bigger than the byte bound is not kept.
    pub fn insert(&self, key: ValidatorKey, validator: Arc<ContractValidator>, bytes: u64) {
        if bytes > self.max_bytes || self.max_entries == 0 {
            return;
        }
        let mut inner = self.lock();
        if let Some(old) = inner.map.remove(&key) {
            inner.bytes -= old.bytes;
        }
        while !inner.map.is_empty()
            && (inner.map.len() >= self.max_entries || inner.bytes + bytes > self.max_bytes)
        {
            let oldest = inner
                .map
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            let Some(oldest) = oldest else { break };
            if let Some(gone) = inner.map.remove(&oldest) {
                inner.bytes -= gone.bytes;
            }
        }
        inner.clock += 1;
        let used = inner.clock;
        inner.bytes += bytes;
        inner.map.insert(
            key,
            Entry {
                validator,
                bytes,
                used,
            },
        );
    }

    /// (entries, bytes of sets behind them).
    pub fn usage(&self) -> (usize, u64) {
        let inner = self.lock();
        (inner.map.len(), inner.bytes)
    }
}

/// The process's validator cache.
pub fn validators() -> &'static ValidatorCache {
    static CACHE: OnceLock<ValidatorCache> = OnceLock::new();
    CACHE.get_or_init(|| ValidatorCache::new(MAX_VALIDATORS, MAX_VALIDATOR_BYTES))
}

/// The contract as the diff crate reads it, with the stored schema (inline, or the root of a
/// reference).
fn as_contract(contract: &ResponseContract) -> Result<Contract, MonitorError> {
    let (method, path) =
        parse_operation(&contract.operation).map_err(|e| MonitorError::Contract(e.to_string()))?;
    Ok(Contract {
        method,
        path,
        status: contract.status.to_string(),
        schema: contract.schema.clone(),
    })
}

/// The compiled validator of workspace `workspace`'s `contract` for a response of
/// `content_type`: compiled from the inline schema, or taken from `cache`, else rebuilt from the
/// stored set, compiled and kept.
pub async fn validator_for(
    store: &dyn Store,
    cache: &ValidatorCache,
    workspace: Uuid,
    contract: &ResponseContract,
    content_type: Option<&str>,
) -> Result<Arc<ContractValidator>, MonitorError> {
    let root = as_contract(contract)?;
    let compile_error =
        |e: apidrift_diff::contract::ContractError| MonitorError::Contract(e.to_string());
    let Some(set) = &contract.set else {
        return root
            .validator_for(content_type)
            .map(Arc::new)
            .map_err(compile_error);
    };
    let media_type = content_type.and_then(|ct| root.select_media_type(ct));
    let pointer = media_type
        .as_deref()
        .and_then(|m| media_pointer(&contract.schema, m))
        .or_else(|| {
            contract
                .schema
                .get("$ref")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let key = ValidatorKey {
        workspace,
        set: set.clone(),
        operation: contract.operation.clone(),
        status: contract.status,
        media_type,
        pointer,
    };
    if let Some(hit) = cache.get(&key) {
        return Ok(hit);
    }
    let stored = store.contract_set(workspace, set).await?.ok_or_else(|| {
        MonitorError::Contract(format!(
            "the response contract of {} refers to schema set {set}, which the workspace no \
             longer stores; attach the contract again (import the document or `apidrift \
             contract attach`)",
            contract.operation
        ))
    })?;
    let document: Value = serde_json::from_str(&stored.document).map_err(|e| {
        MonitorError::Contract(format!(
            "the stored schema set {set} is not valid JSON ({e}); attach the contract again"
        ))
    })?;
    let validator = Arc::new(
        root.resolve(document)
            .and_then(|c| c.validator_for(content_type))
            .map_err(compile_error)?,
    );
    cache.insert(key, Arc::clone(&validator), stored.size_bytes);
    Ok(validator)
}

/// The stored form of a contract built as a reference into the set `set`
/// ([`apidrift_diff::contract::ContractRef::contract`]): a range key (`2XX`) or `default` is
/// checked as 200, like a contract attached by hand.
pub fn stored_reference(contract: Contract, set: &SchemaSet) -> ResponseContract {
    ResponseContract {
        operation: contract.operation(),
        status: contract.status.parse::<u16>().unwrap_or(200),
        schema: contract.schema,
        set: Some(set.hash.clone()),
    }
}

/// The store's input for a schema set.
pub fn new_set(set: SchemaSet) -> NewContractSet {
    NewContractSet {
        hash: set.hash,
        document: Arc::from(set.document),
    }
}

/// Builds the contract of `operation` for `status` (`None`: the document's first 2xx) as a
/// reference, and the schema set it refers into (the schemas its response reaches), proven to
/// compile: what `apidrift contract attach` stores.
pub fn contract_ref_from_openapi(
    document: &str,
    operation: &str,
    status: Option<u16>,
) -> Result<(ResponseContract, NewContractSet), MonitorError> {
    let to_error =
        |e: apidrift_diff::contract::ContractError| MonitorError::Contract(e.to_string());
    let doc = OpenApiDocument::parse(document.as_bytes()).map_err(to_error)?;
    let r = doc
        .contract_ref(operation, status, None)
        .map_err(to_error)?;
    let set = doc.schema_set(&[&r]).map_err(to_error)?;
    let mut stored = stored_reference(r.contract, &set);
    if let Some(s) = status {
        stored.status = s;
    }
    Ok((stored, new_set(set)))
}

/// Where the contract root `schema` says media type `name`'s schema is.
fn media_pointer(schema: &Value, name: &str) -> Option<String> {
    schema
        .get("x-apidrift")?
        .get("mediaTypes")?
        .get(name)?
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use apidrift_diff::contract::OpenApiDocument;

    fn key(n: u16) -> ValidatorKey {
        ValidatorKey {
            workspace: Uuid::nil(),
            set: "ab".repeat(32),
            operation: "GET /x".into(),
            status: n,
            media_type: None,
            pointer: "#/components/schemas/X".into(),
        }
    }

    type R = Result<(), Box<dyn std::error::Error>>;

    fn validator() -> Result<Arc<ContractValidator>, apidrift_diff::contract::ContractError> {
        let doc = OpenApiDocument::parse(
            br#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
              "paths": {"/x": {"get": {"responses": {"200": {"description": "ok",
                "content": {"application/json": {"schema": {"type": "object"}}}}}}}}}"#,
        )?;
        Ok(Arc::new(doc.contract("GET /x", None, None)?.validator()?))
    }

    /// The cache never holds more than its bounds: the least recently used entry goes first,
    /// and an evicted key is a miss (compiled again by the caller).
    #[test]
    fn cache_keeps_its_bounds() -> R {
        let cache = ValidatorCache::new(3, 100);
        let v = validator()?;
        for n in 0..3 {
            cache.insert(key(n), Arc::clone(&v), 10);
        }
        assert!(cache.get(&key(0)).is_some()); // 0 is now the most recently used
        cache.insert(key(3), Arc::clone(&v), 10);
        assert_eq!(cache.usage(), (3, 30));
        assert!(cache.get(&key(1)).is_none(), "the least recently used went");
        assert!(cache.get(&key(0)).is_some() && cache.get(&key(3)).is_some());
        // The byte bound: 60 bytes need two of the three to go.
        cache.insert(key(4), Arc::clone(&v), 60);
        assert!(cache.usage().1 <= 100 && cache.usage().0 <= 3);
        assert!(cache.get(&key(4)).is_some());
        // Bigger than the byte bound: not kept, nothing evicted for it.
        let before = cache.usage();
        cache.insert(key(5), Arc::clone(&v), 101);
        assert!(cache.get(&key(5)).is_none());
        assert_eq!(cache.usage(), before);
        // Inserting a key again replaces it without counting it twice.
        cache.insert(key(4), v, 60);
        assert!(cache.usage().1 <= 100);
        Ok(())
    }
}
