//! Console users and sessions (D15): argon2id passwords, users and their memberships, login, and
//! server-side sessions. A session cookie holds 32 random bytes (base64url); the store keeps only
//! their SHA-256. Sessions end after [`IDLE_SECS`] without a request or [`ABSOLUTE_SECS`] after
//! login, at logout, or when the user or membership is removed.

use super::base::{Service, b64, random_bytes};
use super::error::ServiceError;
use apidrift_model::Role;
use apidrift_seal::token;
use apidrift_store::{
    Membership, NewSession, NewUser, StoreError, StoredSession, StoredUser, new_id,
};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use std::sync::OnceLock;
use uuid::Uuid;

/// Idle expiry of a session: 2 hours without a request.
pub const IDLE_SECS: i64 = 2 * 3600;
/// Absolute expiry of a session: 12 hours after login.
pub const ABSOLUTE_SECS: i64 = 12 * 3600;
/// Shortest password accepted.
pub const MIN_PASSWORD: usize = 12;
/// Longest password accepted.
pub const MAX_PASSWORD: usize = 1024;

fn argon() -> Argon2<'static> {
    // OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane.
    let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// An argon2id PHC string of `password` with a fresh random salt.
pub fn hash_password(password: &str) -> Result<String, ServiceError> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()?)
        .map_err(|e| ServiceError::Internal(format!("salt: {e}")))?;
    argon()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| ServiceError::Internal(format!("password hashing: {e}")))
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
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_password("apidrift-dummy-password").unwrap_or_default())
}

/// Checks a password's length ([`MIN_PASSWORD`] to [`MAX_PASSWORD`] characters).
pub fn check_password(password: &str) -> Result<(), ServiceError> {
    let n = password.chars().count();
    if n < MIN_PASSWORD {
        return Err(ServiceError::Invalid(format!(
            "the password must have at least {MIN_PASSWORD} characters"
        )));
    }
    if n > MAX_PASSWORD {
        return Err(ServiceError::Invalid(format!(
            "the password is longer than {MAX_PASSWORD} characters"
        )));
    }
    Ok(())
}

/// An e-mail address as stored (trimmed, lower-cased), or why it is not one.
pub fn check_email(text: &str) -> Result<String, ServiceError> {
    let t = text.trim();
    let ok = t.len() <= 254
        && !t.contains(|c: char| c.is_control())
        && t.split_once('@').is_some_and(|(l, d)| {
            !l.is_empty() && !d.is_empty() && !t.contains(char::is_whitespace)
        });
    if ok {
        Ok(t.to_lowercase())
    } else {
        Err(ServiceError::Invalid(
            "must be an e-mail address (local@domain)".into(),
        ))
    }
}

/// Whether a presented CSRF token is the session's (constant time; empty never matches).
pub fn csrf_matches(presented: &str, session: &StoredSession) -> bool {
    !presented.is_empty() && token::ct_eq(presented.as_bytes(), session.csrf_token.as_bytes())
}

impl Service {
    /// Creates a console user with a role in workspace `ws`.
    pub async fn create_user(
        &self,
        email: &str,
        password: &str,
        ws: Uuid,
        role: Role,
    ) -> Result<Membership, ServiceError> {
        let email = check_email(email)?;
        check_password(password)?;
        let now = self.now_millis();
        let user = self
            .store
            .create_user(NewUser {
                id: new_id(),
                email: email.clone(),
                password_hash: hash_password(password)?,
                workspace_id: ws,
                role,
                created_at: now,
            })
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found("workspace", ws),
                StoreError::Conflict(_) => {
                    ServiceError::Conflict(format!("user {email} already exists"))
                }
                other => other.into(),
            })?;
        Ok(Membership {
            user_id: user.id,
            email: user.email,
            workspace_id: ws,
            role,
            created_at: now,
        })
    }

    /// Users and their memberships, of one workspace or of all.
    pub async fn list_users(&self, ws: Option<Uuid>) -> Result<Vec<Membership>, ServiceError> {
        Ok(self.store.list_memberships(ws).await?)
    }

    /// Removes a user named by id or e-mail: their memberships and sessions end at once.
    /// Returns the user's id.
    pub async fn remove_user(&self, id_or_email: &str) -> Result<Uuid, ServiceError> {
        let missing = || ServiceError::not_found("user", id_or_email);
        let id = match Uuid::parse_str(id_or_email.trim()) {
            Ok(id) => id,
            Err(_) if id_or_email.contains('\0') => return Err(missing()),
            Err(_) => self
                .store
                .find_user_by_email(id_or_email)
                .await?
                .map(|u| u.id)
                .ok_or_else(missing)?,
        };
        self.store.remove_user(id).await.map_err(|e| match e {
            StoreError::NotFound => missing(),
            other => other.into(),
        })?;
        Ok(id)
    }

    /// Checks a login: the user and their first membership when the password matches, `None`
    /// otherwise (an unknown e-mail takes as long as a wrong password).
    pub async fn login(
        &self,
        email: &str,
        password: &str,
    ) -> Result<Option<(StoredUser, Membership)>, ServiceError> {
        // An address no user can have (a NUL or another control character, refused when users
        // are created) is an unknown user: same answer, same time, no store lookup.
        let user = if email.contains(|c: char| c.is_control()) {
            None
        } else {
            self.store.find_user_by_email(email).await?
        };
        let Some(user) = user else {
            let _ = verify_password(password, dummy_hash());
            return Ok(None);
        };
        if !verify_password(password, &user.password_hash) {
            return Ok(None);
        }
        let membership = self
            .store
            .user_memberships(user.id)
            .await?
            .into_iter()
            .next();
        Ok(membership.map(|m| (user, m)))
    }

    /// Starts a session for a user in a workspace; returns the cookie value (only ever sent to
    /// the browser). A fresh value every time, so a value planted before login is worthless.
    pub async fn start_session(&self, user_id: Uuid, ws: Uuid) -> Result<String, ServiceError> {
        let value = b64(&random_bytes::<32>()?);
        let csrf = b64(&random_bytes::<32>()?);
        let now = self.now();
        self.store
            .create_session(NewSession {
                id_hash: token::hash(&value),
                user_id,
                workspace_id: ws,
                csrf_token: csrf,
                created_at: now,
                expires_at: now + time::Duration::seconds(ABSOLUTE_SECS),
            })
            .await?;
        Ok(value)
    }

    /// The active session of a cookie value, or `None`. Moves its idle clock (at most once a
    /// minute).
    pub async fn find_session(&self, value: &str) -> Result<Option<StoredSession>, ServiceError> {
        let hash = token::hash(value);
        let Some(stored) = self.store.find_session(&hash).await? else {
            return Ok(None);
        };
        let now = self.now();
        if !token::ct_eq(stored.id_hash.as_bytes(), hash.as_bytes())
            || !stored.is_active(now, IDLE_SECS)
        {
            return Ok(None);
        }
        if now - stored.last_seen_at > time::Duration::seconds(60) {
            self.store.touch_session(&hash, now).await?;
        }
        Ok(Some(stored))
    }

    /// Ends the session of a cookie value (a fresh login replacing it).
    pub async fn end_session(&self, value: &str) -> Result<(), ServiceError> {
        Ok(self
            .store
            .revoke_session(&token::hash(value), self.now())
            .await?)
    }

    /// Ends a live session (logout).
    pub async fn logout(&self, session: &StoredSession) -> Result<(), ServiceError> {
        Ok(self
            .store
            .revoke_session(&session.id_hash, self.now())
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_hash_with_argon2id_and_verify() -> Result<(), ServiceError> {
        let phc = hash_password("correct horse")?;
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(verify_password("correct horse", &phc));
        assert!(!verify_password("correct horsE", &phc));
        assert!(!verify_password("correct horse", "not a phc string"));
        assert_ne!(phc, hash_password("correct horse")?, "salted");
        Ok(())
    }

    #[test]
    fn emails_and_passwords_are_checked() {
        assert_eq!(
            check_email(" Ada@Example.com ").ok().as_deref(),
            Some("ada@example.com")
        );
        assert!(check_email("nobody").is_err());
        assert!(check_email("a b@c").is_err());
        assert!(check_password("short").is_err());
        assert!(check_password("long enough password").is_ok());
        assert!(check_password(&"p".repeat(1025)).is_err());
    }
}
