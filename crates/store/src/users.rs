//! Console users, workspace memberships and server-side sessions (D15): the [`UserStore`] trait,
//! a supertrait of [`crate::Store`], and its row types.
//!
//! Rules:
//! * e-mail addresses are stored lower-cased and are unique across the install;
//! * passwords arrive as argon2id PHC strings (hashing is the caller's job);
//! * a session is stored under the hex SHA-256 of its cookie value, never the value itself, and
//!   carries its CSRF token, its idle clock (`last_seen_at`) and its absolute expiry;
//! * a session belongs to one workspace; [`UserStore::find_session`] returns the member's
//!   current role, so removing a membership or a user ends its sessions at once.

use crate::StoreError;
use apidrift_model::Role;
use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

/// A user to create, with their first membership.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub id: Uuid,
    /// Lower-cased by the store.
    pub email: String,
    /// argon2id PHC string.
    pub password_hash: String,
    pub workspace_id: Uuid,
    pub role: Role,
    pub created_at: OffsetDateTime,
}

/// A stored user (with the password hash, for login only).
#[derive(Clone, PartialEq, Eq)]
pub struct StoredUser {
    pub id: Uuid,
    pub email: String,
    pub password_hash: String,
    pub created_at: OffsetDateTime,
}

impl std::fmt::Debug for StoredUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredUser")
            .field("id", &self.id)
            .field("email", &self.email)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// A user's membership of a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub user_id: Uuid,
    pub email: String,
    pub workspace_id: Uuid,
    pub role: Role,
    pub created_at: OffsetDateTime,
}

/// A session to create.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// Hex SHA-256 of the cookie value.
    pub id_hash: String,
    pub user_id: Uuid,
    pub workspace_id: Uuid,
    pub csrf_token: String,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
}

/// A live session with its member's current role.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredSession {
    pub id_hash: String,
    pub user_id: Uuid,
    pub email: String,
    pub workspace_id: Uuid,
    pub role: Role,
    pub csrf_token: String,
    pub created_at: OffsetDateTime,
    pub last_seen_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    pub revoked_at: Option<OffsetDateTime>,
}

impl std::fmt::Debug for StoredSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSession")
            .field("user_id", &self.user_id)
            .field("workspace_id", &self.workspace_id)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

impl StoredSession {
    /// Not revoked, before the absolute expiry, and seen within `idle` seconds.
    pub fn is_active(&self, now: OffsetDateTime, idle_secs: i64) -> bool {
        self.revoked_at.is_none()
            && now < self.expires_at
            && now < self.last_seen_at + time::Duration::seconds(idle_secs)
    }
}

/// Users, memberships and sessions.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Creates a user and their membership of `workspace_id` in one transaction.
    /// [`StoreError::Conflict`] when the e-mail is taken; [`StoreError::NotFound`] when the
    /// workspace does not exist.
    async fn create_user(&self, new: NewUser) -> Result<StoredUser, StoreError>;

    /// Authentication: the user with this e-mail (any case).
    async fn find_user_by_email(&self, email: &str) -> Result<Option<StoredUser>, StoreError>;

    /// The user's memberships, oldest first.
    async fn user_memberships(&self, user_id: Uuid) -> Result<Vec<Membership>, StoreError>;

    /// Operator: every membership, or those of one workspace; by e-mail.
    async fn list_memberships(
        &self,
        workspace_id: Option<Uuid>,
    ) -> Result<Vec<Membership>, StoreError>;

    /// Operator: removes a user, their memberships and sessions. [`StoreError::NotFound`] when
    /// there is no such user.
    async fn remove_user(&self, user_id: Uuid) -> Result<(), StoreError>;

    /// Stores a new session.
    async fn create_session(&self, new: NewSession) -> Result<(), StoreError>;

    /// The session with this hash, with its member's current role; `None` when unknown or the
    /// membership is gone. Revoked and expired sessions are returned (check
    /// [`StoredSession::is_active`]).
    async fn find_session(&self, id_hash: &str) -> Result<Option<StoredSession>, StoreError>;

    /// Moves the session's idle clock.
    async fn touch_session(&self, id_hash: &str, at: OffsetDateTime) -> Result<(), StoreError>;

    /// Revokes the session (logout). Unknown sessions are ignored.
    async fn revoke_session(&self, id_hash: &str, at: OffsetDateTime) -> Result<(), StoreError>;
}

/// The conformance test of [`UserStore`] both adapters run (feature `testkit`): users,
/// memberships, the e-mail's case, session expiry, revocation and removal.
#[cfg(feature = "testkit")]
pub async fn user_store_conformance(
    store: &dyn crate::Store,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use crate::{NewWorkspace, new_id};
    use apidrift_model::Plan;
    let now = OffsetDateTime::from_unix_timestamp(1_800_000_000)?;
    let mut workspaces = Vec::new();
    for name in ["a", "b"] {
        let w = store
            .create_workspace(NewWorkspace {
                id: new_id(),
                name: name.into(),
                plan: Plan::Enterprise,
                endpoint_limit: None,
                check_quota: None,
                created_at: now,
            })
            .await?;
        workspaces.push(w.id);
    }
    let user = store
        .create_user(NewUser {
            id: new_id(),
            email: " Ada@Example.COM ".into(),
            password_hash: "$argon2id$v=19$fake".into(),
            workspace_id: workspaces[0],
            role: Role::Admin,
            created_at: now,
        })
        .await?;
    assert_eq!(user.email, "ada@example.com");
    let dup = store
        .create_user(NewUser {
            id: new_id(),
            email: "ADA@example.com".into(),
            password_hash: "x".into(),
            workspace_id: workspaces[0],
            role: Role::Viewer,
            created_at: now,
        })
        .await;
    assert!(matches!(dup, Err(StoreError::Conflict(_))), "{dup:?}");
    let missing_ws = store
        .create_user(NewUser {
            id: new_id(),
            email: "bob@example.com".into(),
            password_hash: "x".into(),
            workspace_id: new_id(),
            role: Role::Viewer,
            created_at: now,
        })
        .await;
    assert!(
        matches!(missing_ws, Err(StoreError::NotFound)),
        "{missing_ws:?}"
    );
    assert!(store.find_user_by_email("bob@example.com").await?.is_none());
    let found = store.find_user_by_email("ADA@EXAMPLE.com").await?;
    assert_eq!(found.as_ref().map(|u| u.id), Some(user.id));
    assert_eq!(
        found.map(|u| u.password_hash),
        Some("$argon2id$v=19$fake".to_owned())
    );
    let ms = store.user_memberships(user.id).await?;
    assert_eq!(ms.len(), 1);
    assert_eq!(
        (ms[0].workspace_id, ms[0].role),
        (workspaces[0], Role::Admin)
    );
    assert_eq!(store.list_memberships(Some(workspaces[1])).await?.len(), 0);
    assert_eq!(store.list_memberships(None).await?.len(), 1);

    let later = now + time::Duration::hours(12);
    store
        .create_session(NewSession {
            id_hash: "h1".into(),
            user_id: user.id,
            workspace_id: workspaces[0],
            csrf_token: "c1".into(),
            created_at: now,
            expires_at: later,
        })
        .await?;
    let s = store.find_session("h1").await?.ok_or("session missing")?;
    assert_eq!(
        (s.user_id, s.role, s.csrf_token.as_str()),
        (user.id, Role::Admin, "c1")
    );
    assert_eq!(s.email, "ada@example.com");
    assert!(s.is_active(now + time::Duration::minutes(5), 1800));
    assert!(
        !s.is_active(now + time::Duration::minutes(31), 1800),
        "idle expiry"
    );
    assert!(!s.is_active(later, 10 * 86_400), "absolute expiry");
    store
        .touch_session("h1", now + time::Duration::minutes(20))
        .await?;
    let s = store.find_session("h1").await?.ok_or("session missing")?;
    assert!(s.is_active(now + time::Duration::minutes(31), 1800));
    assert!(store.find_session("nope").await?.is_none());
    store.revoke_session("h1", now).await?;
    let s = store.find_session("h1").await?.ok_or("session missing")?;
    assert!(s.revoked_at.is_some());
    assert!(!s.is_active(now, 1800));

    store
        .create_session(NewSession {
            id_hash: "h2".into(),
            user_id: user.id,
            workspace_id: workspaces[0],
            csrf_token: "c2".into(),
            created_at: now,
            expires_at: later,
        })
        .await?;
    store.remove_user(user.id).await?;
    assert!(store.find_session("h2").await?.is_none());
    assert!(store.find_user_by_email("ada@example.com").await?.is_none());
    assert!(matches!(
        store.remove_user(user.id).await,
        Err(StoreError::NotFound)
    ));
    Ok(())
}
