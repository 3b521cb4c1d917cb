//! Passwords (argon2id), server-side sessions, the [`Session`] extractor, and CSRF checks.
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
use apidrift_model::Role;
use apidrift_seal::token;
use apidrift_store::{NewSession, StoredSession};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use time::OffsetDateTime;

/// The session cookie's name.
pub const COOKIE: &str = "apidrift_session";
/// Idle expiry: 2 hours without a request.
pub const IDLE_SECS: i64 = 2 * 3600;
/// Absolute expiry: 12 hours after login.
pub const ABSOLUTE_SECS: i64 = 12 * 3600;

/// Random bytes from the operating system's CSPRNG.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], ApiError> {
    use ring::rand::SecureRandom as _;
    let mut out = [0u8; N];
    ring::rand::SystemRandom::new()
        .fill(&mut out)
        .map_err(|_| ApiError::Internal("the system random generator failed".into()))?;
    Ok(out)
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn argon() -> Argon2<'static> {
    // OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane.
    let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// An argon2id PHC string of `password` with a fresh random salt.
pub fn hash_password(password: &str) -> Result<String, ApiError> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()?)
        .map_err(|e| ApiError::Internal(format!("salt: {e}")))?;
    argon()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| ApiError::Internal(format!("password hashing: {e}")))
}

/// Whether `password` matches the PHC string (false for a malformed string).
pub fn verify_password(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => argon()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A PHC string no password matches, verified against when the e-mail is unknown so that a
/// login takes as long for an unknown account as for a wrong password.
pub fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_password("apidrift-dummy-password").unwrap_or_default())
}

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
/// the browser) and the CSRF token.
pub async fn start(
    state: &AppState,
    user_id: uuid::Uuid,
    workspace_id: uuid::Uuid,
) -> Result<String, ApiError> {
    let value = b64(&random_bytes::<32>()?);
    let csrf = b64(&random_bytes::<32>()?);
    let now = OffsetDateTime::now_utc();
    state
        .store
        .create_session(NewSession {
            id_hash: token::hash(&value),
            user_id,
            workspace_id,
            csrf_token: csrf,
            created_at: now,
            expires_at: now + time::Duration::seconds(ABSOLUTE_SECS),
        })
        .await
        .map_err(ApiError::store)?;
    Ok(value)
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

    /// Refuses a role weaker than `min` with a 403 naming it (D4 wording).
    pub fn require(&self, min: Role, action: &str) -> Result<(), ApiError> {
        if self.role() < min {
            return Err(ApiError::Forbidden(format!(
                "role {} cannot {action}",
                self.role()
            )));
        }
        Ok(())
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
        if presented.is_empty()
            || !token::ct_eq(presented.as_bytes(), self.stored.csrf_token.as_bytes())
        {
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
    let hash = token::hash(&value);
    let Some(stored) = state
        .store
        .find_session(&hash)
        .await
        .map_err(ApiError::store)?
    else {
        return Ok(None);
    };
    let now = OffsetDateTime::now_utc();
    if !token::ct_eq(stored.id_hash.as_bytes(), hash.as_bytes())
        || !stored.is_active(now, IDLE_SECS)
    {
        return Ok(None);
    }
    // Move the idle clock at most once a minute.
    if now - stored.last_seen_at > time::Duration::seconds(60) {
        state
            .store
            .touch_session(&hash, now)
            .await
            .map_err(ApiError::store)?;
    }
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
    fn passwords_hash_with_argon2id_and_verify() -> Result<(), ApiError> {
        let phc = hash_password("correct horse")?;
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(verify_password("correct horse", &phc));
        assert!(!verify_password("correct horsE", &phc));
        assert!(!verify_password("correct horse", "not a phc string"));
        assert_ne!(phc, hash_password("correct horse")?, "salted");
        Ok(())
    }

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
