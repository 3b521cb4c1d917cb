//! API tokens (D3, D4): minting (the text is shown once; the store keeps its SHA-256 and a
//! 4-character hint), listing (never the text nor the hash), revoking, authenticating a bearer
//! token, and the first-run bootstrap (D2: the workspace `default`, an owner token with every
//! scope, the console user `admin@localhost`).

use super::actions::{Action, Actor};
use super::base::{Service, b64, random_bytes};
use super::error::ServiceError;
use apidrift_model::{Plan, Role, Scope};
use apidrift_seal::{Token, token};
use apidrift_store::{
    NewToken, NewUser, StoreError, StoredToken, TOKEN_TOUCH_INTERVAL_SECS, new_id,
};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use uuid::Uuid;

/// Longest token name accepted.
pub const MAX_NAME: usize = 200;
/// Longest expiry accepted, in days (100 years).
pub const MAX_EXPIRY_DAYS: u32 = 36_500;

/// What to mint (in the workspace of the actor minting it).
#[derive(Debug, Clone)]
pub struct MintToken {
    /// A label shown in listings (trimmed; may be empty).
    pub name: String,
    /// Granted scopes, in the order first named; empty means the default (`endpoints:read`).
    pub scopes: Vec<Scope>,
    pub role: Role,
    /// Days until the token expires; `None` for never.
    pub expires_in_days: Option<u32>,
}

/// A minted token: the stored row, and the text, shown this once.
pub struct MintedToken {
    pub token: StoredToken,
    secret: Token,
}

impl std::fmt::Debug for MintedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MintedToken")
            .field("id", &self.token.id)
            .finish_non_exhaustive()
    }
}

impl MintedToken {
    /// The token text (`svc_live_…`): show it once, never log it.
    pub fn expose(&self) -> &str {
        self.secret.expose()
    }
}

/// What the first start created, to print once.
#[derive(Debug)]
pub struct FirstRun {
    pub workspace_id: Uuid,
    /// The owner token with every scope.
    pub token: MintedToken,
    /// The console's first user (owner).
    pub admin_email: String,
    /// Its one-time password.
    pub admin_password: String,
}

/// Whether `text` has the form and checksum of a token (checked before any database lookup).
pub fn token_well_formed(text: &str) -> bool {
    token::check_format(text).is_ok()
}

/// The scopes to grant: the given ones in the order first named, or the default (D3).
fn scopes_or_default(given: Vec<Scope>) -> Vec<Scope> {
    let mut scopes = Vec::with_capacity(given.len());
    for scope in given {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    if scopes.is_empty() {
        return Scope::DEFAULT.to_vec();
    }
    scopes
}

impl Service {
    /// Mints a token in the actor's workspace. [`ServiceError::Forbidden`] when it would outrank
    /// the actor's role (the operator has none: any role); 404 when the workspace does not exist.
    pub async fn mint_token(
        &self,
        actor: &Actor,
        mint: MintToken,
    ) -> Result<MintedToken, ServiceError> {
        actor.may(Action::ManageTokens)?;
        let workspace_id = actor.workspace();
        let name = mint.name.trim().to_owned();
        apidrift_model::validate::refuse_nul("name", &name).map_err(ServiceError::Invalid)?;
        if name.chars().count() > MAX_NAME {
            return Err(ServiceError::Invalid(format!(
                "name: at most {MAX_NAME} characters"
            )));
        }
        if let Some(by) = actor.role()
            && mint.role > by
        {
            return Err(ServiceError::Forbidden(format!(
                "role {by} cannot create {} tokens",
                mint.role
            )));
        }
        let now = self.now_millis();
        let expires_at = match mint.expires_in_days {
            None => None,
            Some(days) if (1..=MAX_EXPIRY_DAYS).contains(&days) => {
                Some(now + time::Duration::days(i64::from(days)))
            }
            Some(_) => {
                return Err(ServiceError::Invalid(format!(
                    "expiry: a whole number of days from 1 to {MAX_EXPIRY_DAYS}"
                )));
            }
        };
        let secret =
            Token::mint().map_err(|e| ServiceError::Internal(format!("token minting: {e}")))?;
        let token = self
            .store
            .create_token(NewToken {
                id: new_id(),
                workspace_id,
                name,
                token_hash: secret.hash(),
                hint: secret.hint(),
                scopes: scopes_or_default(mint.scopes),
                role: mint.role,
                created_at: now,
                expires_at,
            })
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found("workspace", workspace_id),
                other => other.into(),
            })?;
        Ok(MintedToken { token, secret })
    }

    /// Every token of the actor's workspace, oldest first. 404 when the workspace does not exist.
    pub async fn list_tokens(&self, actor: &Actor) -> Result<Vec<StoredToken>, ServiceError> {
        actor.may(Action::ManageTokens)?;
        let ws = actor.workspace();
        self.workspace(ws).await?;
        Ok(self.store.list_tokens(ws).await?)
    }

    /// Revokes token `id` of the actor's workspace (idempotent). It stops authenticating at once
    /// in this process (its cached lookup is evicted), and in other processes within
    /// [`TOKEN_CACHE_SECS`](crate::TOKEN_CACHE_SECS) seconds.
    pub async fn revoke_token(&self, actor: &Actor, id: Uuid) -> Result<StoredToken, ServiceError> {
        actor.may(Action::ManageTokens)?;
        let revoked = self
            .store
            .revoke_token(actor.workspace(), id, self.now())
            .await;
        self.evicting(revoked, id)
    }

    /// Operator: revokes token `id` of any workspace (idempotent; `apidrift token revoke`),
    /// evicted from this process's token cache like [`Service::revoke_token`].
    pub async fn revoke_any_token(&self, id: Uuid) -> Result<StoredToken, ServiceError> {
        let revoked = self.store.revoke_token_by_id(id, self.now()).await;
        self.evicting(revoked, id)
    }

    /// The answer of a revoke, the token evicted from the cache when it was revoked.
    fn evicting(
        &self,
        revoked: Result<StoredToken, StoreError>,
        id: Uuid,
    ) -> Result<StoredToken, ServiceError> {
        match revoked {
            Ok(token) => {
                self.token_cache.evict(&token.token_hash);
                Ok(token)
            }
            Err(StoreError::NotFound) => Err(ServiceError::not_found("token", id)),
            Err(other) => Err(other.into()),
        }
    }

    /// The active token whose text is `text` (well formed: see [`token_well_formed`]), or
    /// `None` for an unknown, revoked or expired one. A token that authenticated less than
    /// [`TOKEN_CACHE_SECS`](crate::TOKEN_CACHE_SECS) seconds ago is answered from this process's
    /// cache (no store read); its expiry is checked on every use.
    pub async fn authenticate(&self, text: &str) -> Result<Option<StoredToken>, ServiceError> {
        let hash = token::hash(text);
        let now = self.now();
        let active = |t: &StoredToken| {
            token::ct_eq(t.token_hash.as_bytes(), hash.as_bytes()) && t.is_active(now)
        };
        if let Some(cached) = self.token_cache.get(&hash, Instant::now()) {
            return Ok(Some(cached).filter(active));
        }
        let epoch = self.token_cache.epoch();
        let read_at = Instant::now();
        let found = self.store.find_token_by_hash(&hash).await?.filter(active);
        if let Some(t) = &found {
            self.token_cache.put(t.clone(), read_at, epoch);
        }
        Ok(found)
    }

    /// Records a token's use (`lastUsedAt`), at most once a minute per token from this process.
    /// A failure is logged, not returned: it must not fail the request.
    pub async fn record_token_use(&self, ws: Uuid, token_id: Uuid) {
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
        if let Err(e) = self.store.touch_token(ws, token_id, self.now()).await {
            tracing::warn!(error = %e, "could not record token use");
        }
    }

    /// First start on an empty database (D2): creates the workspace `default` (enterprise), an
    /// owner token with every scope and the console user `admin@localhost` (owner) with a
    /// one-time password. `None` when a workspace exists already.
    pub async fn bootstrap(&self) -> Result<Option<FirstRun>, ServiceError> {
        if self.store.count_workspaces().await? > 0 {
            return Ok(None);
        }
        let now: OffsetDateTime = self.now();
        let workspace = self
            .create_workspace("default", Plan::Enterprise, None, None)
            .await?;
        let token = self
            .mint_token(
                &Actor::operator(workspace.id),
                MintToken {
                    name: "bootstrap owner".into(),
                    scopes: Scope::ALL.to_vec(),
                    role: Role::Owner,
                    expires_in_days: None,
                },
            )
            .await?;
        let admin_email = "admin@localhost".to_owned();
        let admin_password = b64(&random_bytes::<18>()?);
        self.store
            .create_user(NewUser {
                id: new_id(),
                email: admin_email.clone(),
                password_hash: super::users::hash_password(&admin_password)?,
                workspace_id: workspace.id,
                role: Role::Owner,
                created_at: now,
            })
            .await?;
        Ok(Some(FirstRun {
            workspace_id: workspace.id,
            token,
            admin_email,
            admin_password,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_deduplicated_scopes() {
        assert_eq!(scopes_or_default(Vec::new()), vec![Scope::EndpointsRead]);
        assert_eq!(
            scopes_or_default(vec![
                Scope::ChecksRun,
                Scope::EndpointsRead,
                Scope::ChecksRun
            ]),
            vec![Scope::ChecksRun, Scope::EndpointsRead]
        );
    }
}
