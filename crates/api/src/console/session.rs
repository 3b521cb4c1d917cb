//! The session cookie, the [`Session`] extractor, and CSRF checks. Passwords and the sessions
//! themselves (argon2id, hashed cookie values, expiry) are the service's
//! (`apidrift_app::users`).
//!
//! * The cookie `apidrift_session` holds 32 random bytes (base64url); the database keeps only
//!   their SHA-256. `HttpOnly`, `SameSite=Lax`, `Path=/`, and `Secure` when the request came over
//!   TLS (directly or as told by `Forwarded`/`X-Forwarded-Proto`) or when
//!   `APIDRIFT_CONSOLE__SECURE_COOKIES=true`.
//! * A fresh id is minted at every login (and any session the browser presented is revoked), so
//!   an id planted before login is worthless (fixation).
//! * Sessions end after [`IDLE_SECS`] without a request or [`ABSOLUTE_SECS`] after login, at
//!   logout, or when the user or membership is removed.
//! * CSRF: every state-changing request with a session must carry an `Origin` (or, without it, a
//!   `Referer`) of this very host, and the session's token in the `_csrf` form field or the
//!   `X-CSRF-Token` header (compared in constant time).

use crate::error::ApiError;
use crate::state::AppState;
use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, dev::Payload, web};
use apidrift_app::read::StoredSession;
pub use apidrift_app::users::{ABSOLUTE_SECS, IDLE_SECS};
use apidrift_app::{Action, Actor};
use apidrift_model::Role;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;

/// The session cookie's name.
pub const COOKIE: &str = "apidrift_session";

/// Whether session cookies get `Secure` regardless of the request (env
/// `APIDRIFT_CONSOLE__SECURE_COOKIES=true`).
fn force_secure() -> bool {
    static FORCE: OnceLock<bool> = OnceLock::new();
    *FORCE.get_or_init(|| {
        std::env::var("APIDRIFT_CONSOLE__SECURE_COOKIES")
            .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
            .unwrap_or(false)
    })
}

fn secure(req: &HttpRequest) -> bool {
    force_secure() || req.connection_info().scheme() == "https"
}

/// The `Set-Cookie` of a new session.
pub fn session_cookie(req: &HttpRequest, value: String) -> Cookie<'static> {
    Cookie::build(COOKIE, value)
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure(req))
        .max_age(actix_web::cookie::time::Duration::seconds(ABSOLUTE_SECS))
        .finish()
}

/// The `Set-Cookie` that removes the session cookie.
pub fn removal_cookie(req: &HttpRequest) -> Cookie<'static> {
    let mut c = session_cookie(req, String::new());
    c.make_removal();
    c
}

/// Creates a session for a user in a workspace; returns the cookie value (only ever sent to
/// the browser).
pub async fn start(
    state: &AppState,
    user_id: uuid::Uuid,
    workspace_id: uuid::Uuid,
) -> Result<String, ApiError> {
    Ok(state.service.start_session(user_id, workspace_id).await?)
}

/// The cookie value the request carries, if any.
pub fn cookie_value(req: &HttpRequest) -> Option<String> {
    req.cookie(COOKIE)
        .map(|c| c.value().to_owned())
        .filter(|v| !v.is_empty() && v.len() <= 128)
}

/// A signed-in console user (an active session).
#[derive(Clone)]
pub struct Session {
    pub stored: StoredSession,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("user", &self.stored.user_id)
            .field("workspace", &self.stored.workspace_id)
            .finish_non_exhaustive()
    }
}

impl Session {
    pub fn workspace_id(&self) -> uuid::Uuid {
        self.stored.workspace_id
    }
    pub fn role(&self) -> Role {
        self.stored.role
    }
    pub fn csrf(&self) -> &str {
        &self.stored.csrf_token
    }
    pub fn email(&self) -> &str {
        &self.stored.email
    }

    /// The signed-in user as the use cases take it: every scope, the membership's role.
    pub fn actor(&self) -> Actor {
        Actor::session(self.workspace_id(), self.role())
    }

    /// Whether the user may perform `action` (to offer its button on a page).
    pub fn can(&self, action: Action) -> bool {
        self.actor().may(action).is_ok()
    }

    /// The CSRF check of a state-changing request: same-origin `Origin` (or `Referer`) and the
    /// session's token.
    pub fn check_csrf(&self, req: &HttpRequest, presented: Option<&str>) -> Result<(), ApiError> {
        check_origin(req)?;
        let presented = presented
            .map(str::to_owned)
            .or_else(|| {
                req.headers()
                    .get("x-csrf-token")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        if !apidrift_app::csrf_matches(&presented, &self.stored) {
            return Err(ApiError::Forbidden("CSRF token missing or invalid".into()));
        }
        Ok(())
    }
}

/// The origin of this request as the browser sees it: `scheme://host[:port]`.
fn own_origin(req: &HttpRequest) -> String {
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host()).to_ascii_lowercase()
}

fn origin_of_url(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    let origin = url.origin();
    origin
        .is_tuple()
        .then(|| origin.ascii_serialization().to_ascii_lowercase())
}

/// A state-changing request must come from a page of this host: its `Origin` (or, when a browser
/// sends none, its `Referer`) must be this host's origin.
pub fn check_origin(req: &HttpRequest) -> Result<(), ApiError> {
    let own = own_origin(req);
    let own_canonical = origin_of_url(&own).unwrap_or(own);
    let from = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|v| *v != "null")
        .map(str::to_owned)
        .or_else(|| {
            req.headers()
                .get(header::REFERER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        });
    match from.and_then(|f| origin_of_url(&f)) {
        Some(origin) if origin == own_canonical => Ok(()),
        _ => Err(ApiError::Forbidden(
            "cross-origin request refused (Origin does not match this host)".into(),
        )),
    }
}

/// Looks up the request's session: `Ok(None)` when there is no active one.
pub async fn current(state: &AppState, req: &HttpRequest) -> Result<Option<Session>, ApiError> {
    let Some(value) = cookie_value(req) else {
        return Ok(None);
    };
    let Some(stored) = state.service.find_session(&value).await? else {
        return Ok(None);
    };
    {
        use actix_web::HttpMessage as _;
        req.extensions_mut()
            .insert(crate::auth::WorkspaceTag(stored.workspace_id));
    }
    Ok(Some(Session { stored }))
}

/// The extractor of the JSON session routes: no active session → 401 `{error}`.
#[derive(Debug)]
pub struct ApiSession(pub Session);

impl FromRequest for ApiSession {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let Some(state) = req.app_data::<web::Data<AppState>>() else {
                return Err(ApiError::Internal("application state missing".into()));
            };
            match current(state, &req).await? {
                Some(s) => Ok(ApiSession(s)),
                None => Err(ApiError::Unauthorized),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_by_scheme_host_and_port() {
        assert_eq!(
            origin_of_url("http://127.0.0.1:3000/console/x?y").as_deref(),
            Some("http://127.0.0.1:3000")
        );
        assert_eq!(
            origin_of_url("https://Example.com:443/").as_deref(),
            Some("https://example.com")
        );
        assert_eq!(origin_of_url("null"), None);
    }
}
