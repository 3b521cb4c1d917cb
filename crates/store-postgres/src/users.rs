//! [`UserStore`] on PostgreSQL: users, memberships and sessions (migration
//! `2026-11-21-140000_users_sessions`).

use crate::{Error, PgStore};
use apidrift_model::Role;
use apidrift_store::{
    Membership, NewSession, NewUser, StoreError, StoredSession, StoredUser, UserStore,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::OffsetDateTime;
use uuid::Uuid;

mod schema {
    diesel::table! {
        users (id) {
            id -> Uuid,
            email -> Text,
            password_hash -> Text,
            created_at -> Timestamptz,
        }
    }
    diesel::table! {
        memberships (user_id, workspace_id) {
            user_id -> Uuid,
            workspace_id -> Uuid,
            role -> Text,
            created_at -> Timestamptz,
        }
    }
    diesel::table! {
        sessions (id_hash) {
            id_hash -> Text,
            user_id -> Uuid,
            workspace_id -> Uuid,
            csrf_token -> Text,
            created_at -> Timestamptz,
            last_seen_at -> Timestamptz,
            expires_at -> Timestamptz,
            revoked_at -> Nullable<Timestamptz>,
        }
    }
    diesel::joinable!(memberships -> users (user_id));
    diesel::allow_tables_to_appear_in_same_query!(users, memberships, sessions);
}

use schema::{memberships, sessions, users};

type UserRow = (Uuid, String, String, OffsetDateTime);
type MembershipRow = (Uuid, String, Uuid, String, OffsetDateTime);
type SessionRow = (
    Uuid,
    Uuid,
    String,
    OffsetDateTime,
    OffsetDateTime,
    OffsetDateTime,
    Option<OffsetDateTime>,
);

fn user_from(row: UserRow) -> StoredUser {
    StoredUser {
        id: row.0,
        email: row.1,
        password_hash: row.2,
        created_at: row.3,
    }
}

fn membership_from(row: MembershipRow) -> Result<Membership, StoreError> {
    Ok(Membership {
        user_id: row.0,
        email: row.1,
        workspace_id: row.2,
        role: row
            .3
            .parse::<Role>()
            .map_err(|_| StoreError::corrupt("memberships.role", &row.3))?,
        created_at: row.4,
    })
}

/// Memberships joined with their user's e-mail, as [`MembershipRow`]s.
macro_rules! membership_query {
    () => {
        memberships::table.inner_join(users::table).select((
            memberships::user_id,
            users::email,
            memberships::workspace_id,
            memberships::role,
            memberships::created_at,
        ))
    };
}

#[async_trait]
impl UserStore for PgStore {
    async fn create_user(&self, new: NewUser) -> Result<StoredUser, StoreError> {
        new.check_text()?;
        let email = new.email.trim().to_lowercase();
        let user = StoredUser {
            id: new.id,
            email: email.clone(),
            password_hash: new.password_hash.clone(),
            created_at: new.created_at,
        };
        tx!(self, |c| {
            diesel::insert_into(users::table)
                .values((
                    users::id.eq(new.id),
                    users::email.eq(&email),
                    users::password_hash.eq(&new.password_hash),
                    users::created_at.eq(new.created_at),
                ))
                .execute(c)
                .await?;
            // A missing workspace fails the membership's foreign key: NotFound.
            diesel::insert_into(memberships::table)
                .values((
                    memberships::user_id.eq(new.id),
                    memberships::workspace_id.eq(new.workspace_id),
                    memberships::role.eq(new.role.as_str()),
                    memberships::created_at.eq(new.created_at),
                ))
                .execute(c)
                .await?;
            Ok(())
        })?;
        Ok(user)
    }

    async fn find_user_by_email(&self, email: &str) -> Result<Option<StoredUser>, StoreError> {
        apidrift_store::text::refuse_nul("users.email", email)?;
        let email = email.trim().to_lowercase();
        let mut conn = self.conn().await?;
        let row = users::table
            .filter(users::email.eq(email))
            .select((
                users::id,
                users::email,
                users::password_hash,
                users::created_at,
            ))
            .first::<UserRow>(&mut conn)
            .await
            .optional()
            .map_err(|e| StoreError::from(Error::Db(e)))?;
        Ok(row.map(user_from))
    }

    async fn user_memberships(&self, user_id: Uuid) -> Result<Vec<Membership>, StoreError> {
        let mut conn = self.conn().await?;
        let rows = membership_query!()
            .filter(memberships::user_id.eq(user_id))
            .order((
                memberships::created_at.asc(),
                memberships::workspace_id.asc(),
            ))
            .load::<MembershipRow>(&mut conn)
            .await
            .map_err(|e| StoreError::from(Error::Db(e)))?;
        rows.into_iter().map(membership_from).collect()
    }

    async fn list_memberships(
        &self,
        workspace_id: Option<Uuid>,
    ) -> Result<Vec<Membership>, StoreError> {
        let mut conn = self.conn().await?;
        let mut q = membership_query!()
            .order((users::email.asc(), memberships::workspace_id.asc()))
            .into_boxed();
        if let Some(ws) = workspace_id {
            q = q.filter(memberships::workspace_id.eq(ws));
        }
        let rows = q
            .load::<MembershipRow>(&mut conn)
            .await
            .map_err(|e| StoreError::from(Error::Db(e)))?;
        rows.into_iter().map(membership_from).collect()
    }

    async fn remove_user(&self, user_id: Uuid) -> Result<(), StoreError> {
        tx!(self, |c| {
            diesel::delete(sessions::table.filter(sessions::user_id.eq(user_id)))
                .execute(c)
                .await?;
            diesel::delete(memberships::table.filter(memberships::user_id.eq(user_id)))
                .execute(c)
                .await?;
            let n = diesel::delete(users::table.filter(users::id.eq(user_id)))
                .execute(c)
                .await?;
            if n == 0 {
                return Err(Error::Store(StoreError::NotFound));
            }
            Ok(())
        })
    }

    async fn create_session(&self, new: NewSession) -> Result<(), StoreError> {
        new.check_text()?;
        let mut conn = self.conn().await?;
        diesel::insert_into(sessions::table)
            .values((
                sessions::id_hash.eq(&new.id_hash),
                sessions::user_id.eq(new.user_id),
                sessions::workspace_id.eq(new.workspace_id),
                sessions::csrf_token.eq(&new.csrf_token),
                sessions::created_at.eq(new.created_at),
                sessions::last_seen_at.eq(new.created_at),
                sessions::expires_at.eq(new.expires_at),
            ))
            .execute(&mut conn)
            .await
            .map_err(|e| StoreError::from(Error::Db(e)))?;
        Ok(())
    }

    async fn find_session(&self, id_hash: &str) -> Result<Option<StoredSession>, StoreError> {
        apidrift_store::text::refuse_nul("sessions.id_hash", id_hash)?;
        let mut conn = self.conn().await?;
        let s = sessions::table
            .filter(sessions::id_hash.eq(id_hash))
            .select((
                sessions::user_id,
                sessions::workspace_id,
                sessions::csrf_token,
                sessions::created_at,
                sessions::last_seen_at,
                sessions::expires_at,
                sessions::revoked_at,
            ))
            .first::<SessionRow>(&mut conn)
            .await
            .optional()
            .map_err(|e| StoreError::from(Error::Db(e)))?;
        let Some(s) = s else {
            return Ok(None);
        };
        let m = membership_query!()
            .filter(memberships::user_id.eq(s.0))
            .filter(memberships::workspace_id.eq(s.1))
            .first::<MembershipRow>(&mut conn)
            .await
            .optional()
            .map_err(|e| StoreError::from(Error::Db(e)))?;
        let Some(m) = m else {
            return Ok(None);
        };
        let m = membership_from(m)?;
        Ok(Some(StoredSession {
            id_hash: id_hash.to_owned(),
            user_id: m.user_id,
            email: m.email,
            workspace_id: m.workspace_id,
            role: m.role,
            csrf_token: s.2,
            created_at: s.3,
            last_seen_at: s.4,
            expires_at: s.5,
            revoked_at: s.6,
        }))
    }

    async fn touch_session(&self, id_hash: &str, at: OffsetDateTime) -> Result<(), StoreError> {
        apidrift_store::text::refuse_nul("sessions.id_hash", id_hash)?;
        let mut conn = self.conn().await?;
        diesel::update(sessions::table.filter(sessions::id_hash.eq(id_hash)))
            .set(sessions::last_seen_at.eq(at))
            .execute(&mut conn)
            .await
            .map_err(|e| StoreError::from(Error::Db(e)))?;
        Ok(())
    }

    async fn revoke_session(&self, id_hash: &str, at: OffsetDateTime) -> Result<(), StoreError> {
        apidrift_store::text::refuse_nul("sessions.id_hash", id_hash)?;
        let mut conn = self.conn().await?;
        diesel::update(
            sessions::table
                .filter(sessions::id_hash.eq(id_hash))
                .filter(sessions::revoked_at.is_null()),
        )
        .set(sessions::revoked_at.eq(at))
        .execute(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        Ok(())
    }
}
