//! [`UserStore`] on SQLite: users, memberships and sessions (migration
//! `2026-11-21-140000_users_sessions`).

use crate::rows::{from_ts, id, parse_id, ts};
use crate::{Error, Result, SqliteStore};
use apidrift_model::Role;
use apidrift_store::{
    Membership, NewSession, NewUser, StoreError, StoredSession, StoredUser, UserStore,
};
use async_trait::async_trait;
use diesel::prelude::*;
use time::OffsetDateTime;
use uuid::Uuid;

mod schema {
    diesel::table! {
        users (id) {
            id -> Text,
            email -> Text,
            password_hash -> Text,
            created_at -> BigInt,
        }
    }
    diesel::table! {
        memberships (user_id, workspace_id) {
            user_id -> Text,
            workspace_id -> Text,
            role -> Text,
            created_at -> BigInt,
        }
    }
    diesel::table! {
        sessions (id_hash) {
            id_hash -> Text,
            user_id -> Text,
            workspace_id -> Text,
            csrf_token -> Text,
            created_at -> BigInt,
            last_seen_at -> BigInt,
            expires_at -> BigInt,
            revoked_at -> Nullable<BigInt>,
        }
    }
    diesel::joinable!(memberships -> users (user_id));
    diesel::allow_tables_to_appear_in_same_query!(users, memberships, sessions);
}

use schema::{memberships, sessions, users};

type UserRow = (String, String, String, i64);
type MembershipRow = (String, String, String, String, i64);

fn user_from(row: UserRow) -> Result<StoredUser, StoreError> {
    Ok(StoredUser {
        id: parse_id("users.id", &row.0)?,
        email: row.1,
        password_hash: row.2,
        created_at: from_ts("users.created_at", row.3)?,
    })
}

fn role_from(text: &str) -> Result<Role, StoreError> {
    text.parse::<Role>()
        .map_err(|_| StoreError::corrupt("memberships.role", text))
}

fn membership_from(row: MembershipRow) -> Result<Membership, StoreError> {
    Ok(Membership {
        user_id: parse_id("memberships.user_id", &row.0)?,
        email: row.1,
        workspace_id: parse_id("memberships.workspace_id", &row.2)?,
        role: role_from(&row.3)?,
        created_at: from_ts("memberships.created_at", row.4)?,
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
impl UserStore for SqliteStore {
    async fn create_user(&self, new: NewUser) -> Result<StoredUser, StoreError> {
        new.check_text()?;
        self.write(move |c| {
            let email = new.email.trim().to_lowercase();
            // A missing workspace fails the membership's foreign key: NotFound.
            let at = ts(new.created_at);
            diesel::insert_into(users::table)
                .values((
                    users::id.eq(id(new.id)),
                    users::email.eq(&email),
                    users::password_hash.eq(&new.password_hash),
                    users::created_at.eq(at),
                ))
                .execute(c)?;
            diesel::insert_into(memberships::table)
                .values((
                    memberships::user_id.eq(id(new.id)),
                    memberships::workspace_id.eq(id(new.workspace_id)),
                    memberships::role.eq(new.role.as_str()),
                    memberships::created_at.eq(at),
                ))
                .execute(c)?;
            Ok(StoredUser {
                id: new.id,
                email,
                password_hash: new.password_hash,
                created_at: from_ts("users.created_at", at)?,
            })
        })
        .await
    }

    async fn find_user_by_email(&self, email: &str) -> Result<Option<StoredUser>, StoreError> {
        apidrift_store::text::refuse_nul("users.email", email)?;
        let email = email.trim().to_lowercase();
        let row = self
            .run(move |c| {
                Ok(users::table
                    .filter(users::email.eq(email))
                    .select((
                        users::id,
                        users::email,
                        users::password_hash,
                        users::created_at,
                    ))
                    .first::<UserRow>(c)
                    .optional()?)
            })
            .await?;
        row.map(user_from).transpose()
    }

    async fn user_memberships(&self, user_id: Uuid) -> Result<Vec<Membership>, StoreError> {
        let rows = self
            .run(move |c| {
                Ok(membership_query!()
                    .filter(memberships::user_id.eq(id(user_id)))
                    .order((
                        memberships::created_at.asc(),
                        memberships::workspace_id.asc(),
                    ))
                    .load::<MembershipRow>(c)?)
            })
            .await?;
        rows.into_iter().map(membership_from).collect()
    }

    async fn list_memberships(
        &self,
        workspace_id: Option<Uuid>,
    ) -> Result<Vec<Membership>, StoreError> {
        let rows = self
            .run(move |c| {
                let mut q = membership_query!()
                    .order((users::email.asc(), memberships::workspace_id.asc()))
                    .into_boxed();
                if let Some(ws) = workspace_id {
                    q = q.filter(memberships::workspace_id.eq(id(ws)));
                }
                Ok(q.load::<MembershipRow>(c)?)
            })
            .await?;
        rows.into_iter().map(membership_from).collect()
    }

    async fn remove_user(&self, user_id: Uuid) -> Result<(), StoreError> {
        self.write(move |c| {
            let uid = id(user_id);
            diesel::delete(sessions::table.filter(sessions::user_id.eq(&uid))).execute(c)?;
            diesel::delete(memberships::table.filter(memberships::user_id.eq(&uid))).execute(c)?;
            let n = diesel::delete(users::table.filter(users::id.eq(&uid))).execute(c)?;
            if n == 0 {
                return Err(Error::Store(StoreError::NotFound));
            }
            Ok(())
        })
        .await
    }

    async fn create_session(&self, new: NewSession) -> Result<(), StoreError> {
        new.check_text()?;
        self.write(move |c| {
            let at = ts(new.created_at);
            diesel::insert_into(sessions::table)
                .values((
                    sessions::id_hash.eq(&new.id_hash),
                    sessions::user_id.eq(id(new.user_id)),
                    sessions::workspace_id.eq(id(new.workspace_id)),
                    sessions::csrf_token.eq(&new.csrf_token),
                    sessions::created_at.eq(at),
                    sessions::last_seen_at.eq(at),
                    sessions::expires_at.eq(ts(new.expires_at)),
                ))
                .execute(c)?;
            Ok(())
        })
        .await
    }

    async fn find_session(&self, id_hash: &str) -> Result<Option<StoredSession>, StoreError> {
        apidrift_store::text::refuse_nul("sessions.id_hash", id_hash)?;
        let id_hash = id_hash.to_owned();
        type Row = (String, String, String, i64, i64, i64, Option<i64>);
        let found = self
            .quick_read(move |c| {
                let Some(s) = sessions::table
                    .filter(sessions::id_hash.eq(&id_hash))
                    .select((
                        sessions::user_id,
                        sessions::workspace_id,
                        sessions::csrf_token,
                        sessions::created_at,
                        sessions::last_seen_at,
                        sessions::expires_at,
                        sessions::revoked_at,
                    ))
                    .first::<Row>(c)
                    .optional()?
                else {
                    return Ok(None);
                };
                let m = membership_query!()
                    .filter(memberships::user_id.eq(&s.0))
                    .filter(memberships::workspace_id.eq(&s.1))
                    .first::<MembershipRow>(c)
                    .optional()?;
                Ok(m.map(|m| (id_hash, s, m)))
            })
            .await?;
        let Some((id_hash, s, m)) = found else {
            return Ok(None);
        };
        let m = membership_from(m)?;
        Ok(Some(StoredSession {
            id_hash,
            user_id: m.user_id,
            email: m.email,
            workspace_id: m.workspace_id,
            role: m.role,
            csrf_token: s.2,
            created_at: from_ts("sessions.created_at", s.3)?,
            last_seen_at: from_ts("sessions.last_seen_at", s.4)?,
            expires_at: from_ts("sessions.expires_at", s.5)?,
            revoked_at: s.6.map(|v| from_ts("sessions.revoked_at", v)).transpose()?,
        }))
    }

    async fn touch_session(&self, id_hash: &str, at: OffsetDateTime) -> Result<(), StoreError> {
        apidrift_store::text::refuse_nul("sessions.id_hash", id_hash)?;
        let id_hash = id_hash.to_owned();
        self.write(move |c| {
            diesel::update(sessions::table.filter(sessions::id_hash.eq(id_hash)))
                .set(sessions::last_seen_at.eq(ts(at)))
                .execute(c)?;
            Ok(())
        })
        .await
    }

    async fn revoke_session(&self, id_hash: &str, at: OffsetDateTime) -> Result<(), StoreError> {
        apidrift_store::text::refuse_nul("sessions.id_hash", id_hash)?;
        let id_hash = id_hash.to_owned();
        self.write(move |c| {
            diesel::update(
                sessions::table
                    .filter(sessions::id_hash.eq(id_hash))
                    .filter(sessions::revoked_at.is_null()),
            )
            .set(sessions::revoked_at.eq(ts(at)))
            .execute(c)?;
            Ok(())
        })
        .await
    }
}
