//! The application state handed to every handler: one cloneable context of `Arc`s.

use crate::bearer::TokenDigest;
use crate::error::ApiError;
use crate::ratelimit::{Class, Limiter, MemoryLimiter, RateLimits};
use actix_web::{HttpMessage, HttpRequest};
use apidrift_app::{Action, Actor, Service};
use std::sync::Arc;

/// Largest request body (D5): 2 MiB.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// The actions a request was let through for (in a request's extensions, once the action
/// table's check passed): one for every route and form of the action table, so a test can
/// see which action a route checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Performed(pub Vec<Action>);

/// Everything the routes need. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The use cases (built once by `serve`): every read, write and rule goes through it.
    pub service: Arc<Service>,
    pub limits: RateLimits,
    /// Per-(workspace, class) budgets: in the process, or in the database.
    pub limiter: Arc<dyn Limiter>,
    /// Per-address budgets of requests without a valid token: always in the process, because
    /// they are checked before any database lookup.
    pub ip_limiter: Arc<MemoryLimiter>,
    /// SHA-256 of the bearer token `GET /metrics` requires (`[metrics] token`); `None` leaves
    /// the route open.
    pub metrics_token: Option<TokenDigest>,
    /// `[metrics] per_endpoint`: the most endpoints with their own series (`[metrics]
    /// max_series`); `None` (the default) leaves the per-endpoint series out.
    pub endpoint_series: Option<u32>,
}

impl AppState {
    /// State over `service` with in-process rate limits.
    pub fn new(service: Arc<Service>, limits: RateLimits) -> Self {
        AppState {
            service,
            limits,
            limiter: Arc::new(MemoryLimiter::default()),
            ip_limiter: Arc::new(MemoryLimiter::default()),
            metrics_token: None,
            endpoint_series: None,
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
            .map(crate::bearer::digest);
        self
    }

    /// Adds the per-endpoint series to `GET /metrics` for at most `max_series` endpoints
    /// (`[metrics] per_endpoint`, `[metrics] max_series`); the rest are counted in
    /// `apidrift_metrics_series_dropped`.
    pub fn with_endpoint_series(mut self, per_endpoint: bool, max_series: u32) -> Self {
        self.endpoint_series = per_endpoint.then_some(max_series);
        self
    }

    /// Spends one unit of `workspace`'s budget of `class`; the figures go to the response's
    /// rate-limit headers.
    pub(crate) async fn spend(
        &self,
        req: &HttpRequest,
        workspace: uuid::Uuid,
        class: Class,
    ) -> Result<(), ApiError> {
        let key = format!("{workspace}:{}", class.as_str());
        let info = self
            .limiter
            .take(&key, class, self.limits.quota(class))
            .await?;
        req.extensions_mut().insert(info);
        Ok(())
    }

    /// Lets `actor` perform `action`: the scope and the role of the action's rule (403), then one
    /// unit of the workspace's budget of the action's class (429). The action is noted in the
    /// request's extensions ([`Performed`]).
    pub(crate) async fn allow(
        &self,
        req: &HttpRequest,
        actor: &Actor,
        action: Action,
    ) -> Result<(), ApiError> {
        actor.may(action)?;
        {
            let mut extensions = req.extensions_mut();
            match extensions.get_mut::<Performed>() {
                Some(performed) => performed.0.push(action),
                None => {
                    extensions.insert(Performed(vec![action]));
                }
            }
        }
        self.spend(req, actor.workspace(), action.rule().class)
            .await
    }
}
