//! Authentication, scopes, roles and the per-workspace rate limit as one typed extractor (D4,
//! D17), in the style of meilisearch's `GuardedData<Policy, Data>`: a handler that takes
//! `Authed<act::ReadEndpoints>` states its action in its signature, and the action's scope, role
//! rule and rate-limit class are read from the application's one table
//! ([`apidrift_app::actions`]).
//!
//! Order of checks (D4): the `Authorization` header's form and checksum (no database lookup for a
//! malformed or mistyped token; such requests spend the client address's budget, and a client
//! over that budget gets 429 before any lookup) → lookup by hash, revoked or expired → 401 →
//! scope → role → 403 → the workspace's budget for the class → 429. The handler then validates
//! the request (400) and looks at resources (404, 503, 402).

use crate::error::ApiError;
use crate::ratelimit::{Class, RateInfo};
use crate::state::AppState;
use actix_web::{FromRequest, HttpMessage, HttpRequest, dev::Payload, web};
use apidrift_app::{Act, Actor};
use std::future::Future;
use std::marker::PhantomData;
use std::net::IpAddr;
use std::pin::Pin;
use uuid::Uuid;

/// The authenticated caller of a route that performs the action `A` (a marker type of
/// [`apidrift_app::act`]): its scope, weakest role and rate-limit class are the action's rule in
/// the application's one table ([`apidrift_app::Action::rule`]).
#[derive(Debug)]
pub struct Authed<A: Act> {
    /// The token's holder, as the use cases take it.
    pub actor: Actor,
    pub token_id: Uuid,
    _action: PhantomData<A>,
}

impl<A: Act> Authed<A> {
    /// The workspace of the token.
    pub fn workspace_id(&self) -> Uuid {
        self.actor.workspace()
    }
}

/// The workspace of an authenticated request, for the request log.
#[derive(Debug, Clone, Copy)]
pub struct WorkspaceTag(pub Uuid);

impl<A: Act> FromRequest for Authed<A> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { authenticate::<A>(&req).await })
    }
}

/// The bearer token of the request when the header is well formed ([`bearer_credentials`](crate::bearer::bearer_credentials)) and
/// the token passes the format and checksum test.
fn bearer(req: &HttpRequest) -> Option<&str> {
    let candidate = crate::bearer::bearer_credentials(req)?;
    apidrift_app::token_well_formed(candidate).then_some(candidate)
}

/// The client address used for the unauthenticated budget: the peer address (forwarding headers
/// are not trusted).
fn client_ip(req: &HttpRequest) -> IpAddr {
    req.peer_addr()
        .map(|a| a.ip())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

/// A request without a valid token: spend the address's budget, then 401 (or 429 when spent).
fn refuse(state: &AppState, ip: IpAddr) -> ApiError {
    let quota = state.limits.unauthenticated;
    let step = state.ip_limiter.step(&ip.to_string(), quota);
    if step.allowed {
        ApiError::Unauthorized
    } else {
        ApiError::RateLimited(RateInfo::from_step(Class::Unauthenticated, quota, &step))
    }
}

async fn authenticate<A: Act>(req: &HttpRequest) -> Result<Authed<A>, ApiError> {
    let Some(state) = req.app_data::<web::Data<AppState>>() else {
        return Err(ApiError::Internal("application state missing".into()));
    };
    let ip = client_ip(req);
    let Some(text) = bearer(req) else {
        return Err(refuse(state, ip));
    };
    // A client over its unauthenticated budget is refused before any lookup.
    let quota = state.limits.unauthenticated;
    if let Some(step) = state.ip_limiter.blocked(&ip.to_string(), quota) {
        return Err(ApiError::RateLimited(RateInfo::from_step(
            Class::Unauthenticated,
            quota,
            &step,
        )));
    }
    let Some(stored) = state.service.authenticate(text).await? else {
        return Err(refuse(state, ip));
    };
    req.extensions_mut()
        .insert(WorkspaceTag(stored.workspace_id));
    // The token authenticated: record its use (at most once a minute), whatever follows.
    state
        .service
        .record_token_use(stored.workspace_id, stored.id)
        .await;
    let actor = Actor::token(stored.workspace_id, stored.role, stored.scopes);
    // Scope, then role (403), then the action's budget (429).
    state.allow(req, &actor, A::ACTION).await?;
    Ok(Authed {
        actor,
        token_id: stored.id,
        _action: PhantomData,
    })
}
