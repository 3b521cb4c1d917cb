//! The shared state of the rate limits: the theoretical arrival time (TAT) of each budget, kept
//! in the database so that every instance on it spends one budget. The API's leased limiter reads,
//! swaps and gives back TATs through [`SharedTats`]; [`Service::shared_tats`] hands out the one
//! over the service's store.

use super::base::Service;
use super::error::ServiceError;
use apidrift_store::Store;
use std::sync::Arc;

/// A budget's TAT as the database read it, with the database's clock.
pub use apidrift_store::RateLimitRow;

/// Reads, swaps and gives back the TAT of a budget (`key`). A trait so that tests share one fake
/// database between several limiters.
#[async_trait::async_trait]
pub trait SharedTats: Send + Sync + std::fmt::Debug {
    /// The TAT of `key` and the database's clock; `None` when the store keeps no shared state
    /// (SQLite): the caller then limits in memory.
    async fn read(&self, key: &str) -> Result<Option<RateLimitRow>, ServiceError>;
    /// Moves the TAT of `key` from `old` to `new` if it is still `old`; `false` when another
    /// instance moved it first.
    async fn swap(&self, key: &str, old: Option<i64>, new: i64) -> Result<bool, ServiceError>;
    /// Moves the TAT of `key` back by `nanos` (units leased and never spent).
    async fn give_back(&self, key: &str, nanos: i64) -> Result<(), ServiceError>;
}

/// [`SharedTats`] over the store's `rate_limits`.
#[derive(Debug)]
struct StoreTats(Arc<dyn Store>);

#[async_trait::async_trait]
impl SharedTats for StoreTats {
    async fn read(&self, key: &str) -> Result<Option<RateLimitRow>, ServiceError> {
        Ok(self.0.rate_limit_read(key).await?)
    }
    async fn swap(&self, key: &str, old: Option<i64>, new: i64) -> Result<bool, ServiceError> {
        Ok(self.0.rate_limit_swap(key, old, new).await?)
    }
    async fn give_back(&self, key: &str, nanos: i64) -> Result<(), ServiceError> {
        Ok(self.0.rate_limit_give_back(key, nanos).await?)
    }
}

impl Service {
    /// The shared rate-limit state over this service's store, for the API's leased limiter.
    pub fn shared_tats(&self) -> Arc<dyn SharedTats> {
        Arc::new(StoreTats(self.store.clone()))
    }
}
