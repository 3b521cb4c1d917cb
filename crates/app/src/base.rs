//! [`Service`]: what every use case holds (store, key ring, allow-list, the one outbound client and
//! monitor, clock, the token-use throttle, the token cache), and the helpers the use-case modules share. A leaf of
//! the `service` module tree: the use-case modules add `impl Service` blocks and depend on it, it
//! depends on none of them.

use super::error::ServiceError;
use apidrift_model::net::AllowList;
use apidrift_monitor::{Client, Monitor};
use apidrift_seal::KeyRing;
use apidrift_store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use time::OffsetDateTime;
use uuid::Uuid;

/// Largest request body (and document) an OpenAPI import accepts by default: 32 MiB
/// (`[limits] import_max_bytes`).
pub const DEFAULT_IMPORT_MAX_BYTES: usize = 32 * 1024 * 1024;

/// How long reading an OpenAPI document (its parse and the list of its operations) may take
/// unless `[limits] import_parse_secs` says otherwise: past it the request answers 400 naming
/// the budget, and the work still running stops at its next step.
pub const DEFAULT_IMPORT_PARSE_BUDGET: std::time::Duration = std::time::Duration::from_secs(30);

/// Where the service reads the time (tests may fix it).
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> OffsetDateTime;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// The application service. Build it once per process and share it as `Arc<Service>`.
pub struct Service {
    pub(super) store: Arc<dyn Store>,
    pub(super) keys: Option<Arc<KeyRing>>,
    pub(super) allow: Arc<AllowList>,
    pub(super) client: Client,
    /// Present when a key is configured: the one pipeline of the process.
    pub(super) monitor: Option<Monitor>,
    pub(super) clock: Arc<dyn Clock>,
    /// When this process last recorded each token's use (`lastUsedAt` is written at most once a
    /// minute per token).
    pub(super) touched: Mutex<HashMap<Uuid, Instant>>,
    /// Tokens that authenticated lately, by hash, for
    /// [`TOKEN_CACHE_SECS`](crate::token_cache::TOKEN_CACHE_SECS) (see [`Service::authenticate`]).
    pub(super) token_cache: crate::token_cache::TokenCache,
    /// The largest OpenAPI import request body (and document), in bytes.
    pub(super) import_max_bytes: usize,
    /// How long reading an OpenAPI document (parse and operation list) may take.
    pub(super) import_parse_budget: std::time::Duration,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("store", &self.store)
            .field("sealing_key", &self.keys.is_some())
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// The service over `store`, sealing with `keys` (`None`: use cases that seal or open answer
    /// [`ServiceError::NoKey`]) and fetching through one SSRF-safe client that applies `allow`.
    pub fn new(
        store: Arc<dyn Store>,
        keys: Option<KeyRing>,
        allow: AllowList,
    ) -> Result<Service, ServiceError> {
        let client = Client::new(allow.clone())
            .map_err(|e| ServiceError::Internal(format!("outbound client: {e}")))?;
        Ok(Service::with_client(
            store,
            keys.map(Arc::new),
            allow,
            client,
        ))
    }

    /// The same with a client built by the caller (tests inject resolvers and dialers).
    pub fn with_client(
        store: Arc<dyn Store>,
        keys: Option<Arc<KeyRing>>,
        allow: AllowList,
        client: Client,
    ) -> Service {
        let monitor = keys
            .as_ref()
            .map(|k| Monitor::new(store.clone(), k.clone(), client.clone()));
        Service {
            store,
            keys,
            allow: Arc::new(allow),
            client,
            monitor,
            clock: Arc::new(SystemClock),
            touched: Mutex::new(HashMap::new()),
            token_cache: crate::token_cache::TokenCache::default(),
            import_max_bytes: DEFAULT_IMPORT_MAX_BYTES,
            import_parse_budget: DEFAULT_IMPORT_PARSE_BUDGET,
        }
    }

    /// Sets the pause between the samples of a multi-sample baseline capture
    /// (`[baseline] sample_interval_ms`; tests use a short one).
    pub fn with_sample_interval(mut self, interval: std::time::Duration) -> Service {
        self.monitor = self.monitor.map(|m| m.with_sample_interval(interval));
        self
    }

    /// Replaces the clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Service {
        self.clock = clock;
        self
    }

    /// Whether a sealing key is configured.
    pub fn has_key(&self) -> bool {
        self.keys.is_some()
    }

    /// The key ring, for the background worker (webhook secrets).
    pub fn keys(&self) -> Option<&Arc<KeyRing>> {
        self.keys.as_ref()
    }

    /// The check pipeline, for the background worker; `None` without a key.
    pub fn monitor(&self) -> Option<&Monitor> {
        self.monitor.as_ref()
    }

    /// The operator's outbound allow-list.
    pub fn allow_list(&self) -> &AllowList {
        &self.allow
    }

    /// Now, from the service's clock.
    pub fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    /// Now truncated to milliseconds (what the API writes and answers).
    pub(crate) fn now_millis(&self) -> OffsetDateTime {
        apidrift_model::timestamp::truncate_to_millis(self.clock.now())
    }

    /// The key ring, or [`ServiceError::NoKey`] with `why` (", so …").
    pub(crate) fn keys_or(&self, why: &'static str) -> Result<&Arc<KeyRing>, ServiceError> {
        self.keys.as_ref().ok_or(ServiceError::NoKey(why))
    }
}

/// Random bytes from the operating system's CSPRNG.
pub(crate) fn random_bytes<const N: usize>() -> Result<[u8; N], ServiceError> {
    use ring::rand::SecureRandom as _;
    let mut out = [0u8; N];
    ring::rand::SystemRandom::new()
        .fill(&mut out)
        .map_err(|_| ServiceError::Internal("the system random generator failed".into()))?;
    Ok(out)
}

/// URL-safe base64 without padding.
pub(crate) fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
