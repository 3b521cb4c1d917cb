//! The per-process cache of bearer-token lookups (issue 29): [`Service::authenticate`] answers a
//! token that authenticated less than [`TOKEN_CACHE_SECS`] seconds ago from memory instead of a
//! store read per request.
//!
//! Bounds, each unit-tested below:
//! * **Staleness**: an entry is used for at most [`TOKEN_CACHE_SECS`] seconds after it was read
//!   from the store, so a token revoked through another process (or `apidrift token revoke`)
//!   stops authenticating here within that bound.
//! * **Revocation through this process** evicts the token's entry at once, and a lookup that was
//!   already in flight when the revoke happened does not put its (older) answer back: every
//!   eviction bumps an epoch, and an answer is stored only when the epoch did not move while it
//!   was read.
//! * **Expiry**: a cached token is checked against its `expires_at` on every use (the caller's
//!   [`StoredToken::is_active`]), so it is never served after it expired.
//! * **Memory**: at most [`TOKEN_CACHE_CAPACITY`] entries; when full, stale entries go first,
//!   then the oldest.
//!
//! Only tokens found active are cached: an unknown token is looked up every time (its callers are
//! held back by the unauthenticated rate limit instead).
//!
//! A leaf module: [`crate::base`] holds one [`TokenCache`] per [`Service`].
//!
//! [`Service`]: crate::Service
//! [`Service::authenticate`]: crate::Service::authenticate

use apidrift_store::StoredToken;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a token read from the store is answered from this process's cache, in seconds: the
/// longest a revocation made elsewhere (another instance, the CLI) takes to be seen here.
pub const TOKEN_CACHE_SECS: u64 = 5;

/// The most tokens the cache holds.
pub const TOKEN_CACHE_CAPACITY: usize = 10_000;

/// One cached lookup.
#[derive(Debug, Clone)]
struct Entry {
    token: StoredToken,
    read_at: Instant,
}

#[derive(Debug, Default)]
struct Inner {
    by_hash: HashMap<String, Entry>,
    /// Bumped by every eviction (see the module doc).
    epoch: u64,
}

/// Recently authenticated tokens by hash (see the module doc).
#[derive(Debug)]
pub(crate) struct TokenCache {
    inner: Mutex<Inner>,
    ttl: Duration,
    capacity: usize,
}

impl Default for TokenCache {
    fn default() -> Self {
        TokenCache::new(Duration::from_secs(TOKEN_CACHE_SECS), TOKEN_CACHE_CAPACITY)
    }
}

impl TokenCache {
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Self {
        TokenCache {
            inner: Mutex::new(Inner::default()),
            ttl,
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves a map that is still consistent (every change
        // is one insert or remove): keep using it.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The token stored under `hash` when it was read from the store less than the TTL before
    /// `at`; the caller still checks it is active now.
    pub(crate) fn get(&self, hash: &str, at: Instant) -> Option<StoredToken> {
        let inner = self.lock();
        let entry = inner.by_hash.get(hash)?;
        (at.saturating_duration_since(entry.read_at) < self.ttl).then(|| entry.token.clone())
    }

    /// The epoch to pass to [`TokenCache::put`] for a store read that starts now.
    pub(crate) fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// Stores `token`, read from the store at `read_at` by a lookup that began at `epoch`;
    /// nothing when an eviction happened since (its answer may predate a revoke).
    pub(crate) fn put(&self, token: StoredToken, read_at: Instant, epoch: u64) {
        let mut inner = self.lock();
        if inner.epoch != epoch {
            return;
        }
        if inner.by_hash.len() >= self.capacity && !inner.by_hash.contains_key(&token.token_hash) {
            let ttl = self.ttl;
            inner
                .by_hash
                .retain(|_, e| read_at.saturating_duration_since(e.read_at) < ttl);
            if inner.by_hash.len() >= self.capacity {
                let oldest = inner
                    .by_hash
                    .iter()
                    .min_by_key(|(_, e)| e.read_at)
                    .map(|(h, _)| h.clone());
                if let Some(h) = oldest {
                    inner.by_hash.remove(&h);
                }
            }
        }
        let hash = token.token_hash.clone();
        inner.by_hash.insert(hash, Entry { token, read_at });
    }

    /// Forgets the token stored under `hash` (a revoke through this process) and keeps any
    /// lookup in flight from storing its answer.
    pub(crate) fn evict(&self, hash: &str) {
        let mut inner = self.lock();
        inner.epoch = inner.epoch.wrapping_add(1);
        inner.by_hash.remove(hash);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().by_hash.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apidrift_model::Role;
    use time::OffsetDateTime;
    use uuid::Uuid;

    fn token(hash: &str) -> StoredToken {
        StoredToken {
            id: Uuid::new_v4(),
            workspace_id: Uuid::new_v4(),
            name: String::new(),
            token_hash: hash.to_owned(),
            hint: "abcd".into(),
            scopes: Vec::new(),
            role: Role::Viewer,
            created_at: OffsetDateTime::UNIX_EPOCH,
            expires_at: None,
            revoked_at: None,
            last_used_at: None,
        }
    }

    #[test]
    fn an_entry_is_used_within_the_bound_only() {
        let cache = TokenCache::new(Duration::from_secs(5), 10);
        let t0 = Instant::now();
        cache.put(token("a"), t0, cache.epoch());
        assert!(cache.get("a", t0).is_some());
        assert!(cache.get("a", t0 + Duration::from_millis(4_999)).is_some());
        assert!(cache.get("a", t0 + Duration::from_secs(5)).is_none());
        assert!(cache.get("b", t0).is_none());
    }

    #[test]
    fn a_revoke_evicts_at_once() {
        let cache = TokenCache::default();
        let t0 = Instant::now();
        cache.put(token("a"), t0, cache.epoch());
        cache.put(token("b"), t0, cache.epoch());
        cache.evict("a");
        assert!(cache.get("a", t0).is_none());
        assert!(cache.get("b", t0).is_some());
    }

    #[test]
    fn a_lookup_in_flight_during_a_revoke_is_not_cached() {
        let cache = TokenCache::default();
        let t0 = Instant::now();
        // The lookup starts, a revoke happens, then the lookup's (older) answer arrives.
        let epoch = cache.epoch();
        cache.evict("a");
        cache.put(token("a"), t0, epoch);
        assert!(cache.get("a", t0).is_none());
        // The next lookup caches again.
        cache.put(token("a"), t0, cache.epoch());
        assert!(cache.get("a", t0).is_some());
    }

    #[test]
    fn the_capacity_holds() {
        let cache = TokenCache::new(Duration::from_secs(5), 3);
        let t0 = Instant::now();
        for (i, h) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            let at = t0 + Duration::from_millis(i as u64);
            cache.put(token(h), at, cache.epoch());
            assert!(cache.len() <= 3);
        }
        // The oldest went first.
        let at = t0 + Duration::from_millis(10);
        assert!(cache.get("a", at).is_none());
        assert!(cache.get("b", at).is_none());
        assert!(cache.get("e", at).is_some());
        // Stale entries go before live ones.
        let later = t0 + Duration::from_secs(6);
        cache.put(token("f"), later, cache.epoch());
        assert_eq!(cache.len(), 1);
        // Replacing an entry does not evict another.
        let cache = TokenCache::new(Duration::from_secs(5), 2);
        cache.put(token("a"), t0, cache.epoch());
        cache.put(token("b"), t0, cache.epoch());
        cache.put(token("b"), t0, cache.epoch());
        assert!(cache.get("a", t0).is_some());
    }
}
