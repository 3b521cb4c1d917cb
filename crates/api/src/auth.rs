//! Authentication, scopes, roles and the per-workspace rate limit as one typed extractor (D4,
//! D17), in the style of meilisearch's `GuardedData<Policy, Data>`: a handler that takes
//! `Authed<ReadEndpoints>` states its scope, role rule and rate-limit class in its signature.
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
use apidrift_model::{Role, Scope};
use std::future::Future;
use std::marker::PhantomData;
use std::net::IpAddr;
use std::pin::Pin;
use uuid::Uuid;

/// What a route requires.
pub trait Policy: 'static {
    /// The scope the token must carry.
    const SCOPE: Scope;
    /// The weakest role allowed.
    const MIN_ROLE: Role;
    /// What the role may not do, for the 403 text: `role viewer cannot <ACTION>`.
    const ACTION: &'static str;
    /// The rate-limit class.
    const CLASS: Class;
}

/// `endpoints:read`, any role, reads class.
#[derive(Debug)]
pub enum ReadEndpoints {}
impl Policy for ReadEndpoints {
    const SCOPE: Scope = Scope::EndpointsRead;
    const MIN_ROLE: Role = Role::Viewer;
    const ACTION: &'static str = "read endpoints";
    const CLASS: Class = Class::Reads;
}

/// `endpoints:write`, member or above, creates class.
#[derive(Debug)]
pub enum WriteEndpoints {}
impl Policy for WriteEndpoints {
    const SCOPE: Scope = Scope::EndpointsWrite;
    const MIN_ROLE: Role = Role::Member;
    const ACTION: &'static str = "create endpoints";
    const CLASS: Class = Class::Creates;
}

/// `checks:run`, member or above, checks class.
#[derive(Debug)]
pub enum RunChecks {}
impl Policy for RunChecks {
    const SCOPE: Scope = Scope::ChecksRun;
    const MIN_ROLE: Role = Role::Member;
    const ACTION: &'static str = "run checks";
    const CLASS: Class = Class::Checks;
}

/// `baselines:write`, member or above, checks class (D13).
#[derive(Debug)]
pub enum CaptureBaselines {}
impl Policy for CaptureBaselines {
    const SCOPE: Scope = Scope::BaselinesWrite;
    const MIN_ROLE: Role = Role::Member;
    const ACTION: &'static str = "capture baselines";
    const CLASS: Class = Class::Checks;
}

/// The authenticated caller of a route guarded by `P`.
#[derive(Debug)]
pub struct Authed<P: Policy> {
    pub workspace_id: Uuid,
    pub token_id: Uuid,
    pub role: Role,
    _policy: PhantomData<P>,
}

/// The workspace of an authenticated request, for the request log.
#[derive(Debug, Clone, Copy)]
pub struct WorkspaceTag(pub Uuid);

impl<P: Policy> FromRequest for Authed<P> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { authenticate::<P>(&req).await })
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

async fn authenticate<P: Policy>(req: &HttpRequest) -> Result<Authed<P>, ApiError> {
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
    if !stored.scopes.contains(&P::SCOPE) {
        return Err(ApiError::Forbidden(format!(
            "token lacks scope {}",
            P::SCOPE
        )));
    }
    if stored.role < P::MIN_ROLE {
        return Err(ApiError::Forbidden(format!(
            "role {} cannot {}",
            stored.role,
            P::ACTION
        )));
    }
    let key = format!("{}:{}", stored.workspace_id, P::CLASS.as_str());
    let info = state
        .limiter
        .take(&key, P::CLASS, state.limits.quota(P::CLASS))
        .await?;
    req.extensions_mut().insert(info);
    Ok(Authed {
        workspace_id: stored.workspace_id,
        token_id: stored.id,
        role: stored.role,
        _policy: PhantomData,
    })
}
