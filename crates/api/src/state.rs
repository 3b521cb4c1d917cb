//! The application state handed to every handler: one cloneable context of `Arc`s.

use crate::ratelimit::{Limiter, MemoryLimiter, RateLimits};
use apidrift_model::net::AllowList;
use apidrift_seal::KeyRing;
use apidrift_store::{Store, TOKEN_TOUCH_INTERVAL_SECS};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use uuid::Uuid;

/// Largest request body (D5): 2 MiB.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Everything the routes need. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    /// The sealing keys; `None` when no `ENDPOINT_SECRET_KEY` is available (then
    /// `POST /endpoints` answers 503).
    pub keys: Option<Arc<KeyRing>>,
    /// The operator's outbound allow-list (D14), applied to endpoint URLs at creation.
    pub allow: Arc<AllowList>,
    pub limits: RateLimits,
    /// Per-(workspace, class) budgets: in the process, or in the database.
    pub limiter: Arc<dyn Limiter>,
    /// Per-address budgets of requests without a valid token: always in the process, because
    /// they are checked before any database lookup.
    pub ip_limiter: Arc<MemoryLimiter>,
    /// SHA-256 of the bearer token `GET /metrics` requires (`[metrics] token`); `None` leaves
    /// the route open.
    pub metrics_token: Option<crate::metrics::TokenDigest>,
    /// When this process last wrote each token's `lastUsedAt`, so the store is asked at most
    /// once a minute per token.
    touched: Arc<Mutex<HashMap<Uuid, Instant>>>,
}

impl AppState {
    /// State with in-process rate limits.
    pub fn new(
        store: Arc<dyn Store>,
        keys: Option<KeyRing>,
        allow: AllowList,
        limits: RateLimits,
    ) -> Self {
        AppState {
            store,
            keys: keys.map(Arc::new),
            allow: Arc::new(allow),
            limits,
            limiter: Arc::new(MemoryLimiter::default()),
            ip_limiter: Arc::new(MemoryLimiter::default()),
            metrics_token: None,
            touched: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Replaces where per-workspace budgets live (e.g. the database, shared by instances).
    pub fn with_limiter(mut self, limiter: Arc<dyn Limiter>) -> Self {
        self.limiter = limiter;
        self
    }

    /// Requires `Authorization: Bearer TOKEN` on `GET /metrics` (an empty token leaves it open).
    pub fn with_metrics_token(mut self, token: Option<&str>) -> Self {
        self.metrics_token = token
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(crate::metrics::digest);
        self
    }

    /// Records the token's use (`lastUsedAt`, at most once a minute). A failure is logged, not
    /// fatal to the request.
    pub(crate) async fn touch(&self, workspace_id: Uuid, token_id: Uuid, now: OffsetDateTime) {
        let interval = Duration::from_secs(TOKEN_TOUCH_INTERVAL_SECS.unsigned_abs());
        {
            let mut touched = self.touched.lock().unwrap_or_else(|p| p.into_inner());
            match touched.get(&token_id) {
                Some(at) if at.elapsed() < interval => return,
                _ => {}
            }
            if touched.len() > 100_000 {
                touched.clear();
            }
            touched.insert(token_id, Instant::now());
        }
        if let Err(e) = self.store.touch_token(workspace_id, token_id, now).await {
            tracing::warn!(error = %e, "could not record token use");
        }
    }
}
