//! The one rule for text that reaches a database column, shared by every adapter.
//!
//! Two kinds of text reach the store:
//! * **Monitored content and JSON columns**: what is derived from an upstream response (diff
//!   changes and summaries, shapes, tracked headers, content types, check errors, alert
//!   fingerprints and bodies, delivery errors, schedule outcomes) and every JSON column (tags and
//!   ignore paths included). Every adapter keeps it *faithfully*, whatever it holds: U+0000 (NUL)
//!   and the other control characters included, in JSON keys as in values, reading back gives
//!   exactly what was written. An adapter whose database cannot hold a character (PostgreSQL
//!   refuses U+0000 in `text` and `jsonb`) escapes it in storage and restores it on read.
//! * **User input in text columns**: names, descriptions, environments, URLs, content types of
//!   requests, e-mails, token names and hashes, session hashes, lease owners, and the lookups and
//!   filters by them. A NUL there is refused with [`StoreError::InvalidInput`] naming the column
//!   ([`nul_refused`]), before any statement, identically on every adapter; nothing is written.
//!   Other control characters are stored as given. The service layer refuses such input earlier
//!   (a 400 or a skipped entry); this is the last line of defence, never a backend error.
//!
//! Adapters call the `check_text` method of an input type (or [`refuse_nul`] for a lookup
//! argument) first thing in the trait method that takes it.

use crate::{
    EndpointChanges, EndpointFilter, NewEndpointRow, NewSession, NewToken, NewUser, NewWebhook,
    NewWorkspace,
};
use crate::{StoreError, WorkspaceUpdate};
use apidrift_model::EndpointSettings;

/// `deliveries.lease_owner` and `schedules.lease_owner`: the owner a worker claims with.
pub const LEASE_OWNER: &str = "lease_owner";

/// The error for a NUL in the user-input column `column` (`table.column`). Its wording is the
/// same on every adapter and never quotes the value.
pub fn nul_refused(column: &str) -> StoreError {
    StoreError::InvalidInput(format!(
        "{column} must not contain a NUL character (U+0000): remove it and try again"
    ))
}

/// [`nul_refused`] when `value` holds a NUL.
pub fn refuse_nul(column: &str, value: &str) -> Result<(), StoreError> {
    if value.contains('\0') {
        Err(nul_refused(column))
    } else {
        Ok(())
    }
}

fn refuse_nul_opt(column: &str, value: Option<&str>) -> Result<(), StoreError> {
    value.map_or(Ok(()), |v| refuse_nul(column, v))
}

impl NewWorkspace {
    /// The user-input rule for its text columns (see [the module](self)).
    pub fn check_text(&self) -> Result<(), StoreError> {
        refuse_nul("workspaces.name", &self.name)
    }
}

impl WorkspaceUpdate {
    /// The user-input rule for its text columns (see [the module](self)).
    pub fn check_text(&self) -> Result<(), StoreError> {
        refuse_nul_opt("workspaces.name", self.name.as_deref())
    }
}

impl NewToken {
    /// The user-input rule for its text columns (see [the module](self)).
    pub fn check_text(&self) -> Result<(), StoreError> {
        refuse_nul("tokens.name", &self.name)?;
        refuse_nul("tokens.token_hash", &self.token_hash)?;
        refuse_nul("tokens.hint", &self.hint)
    }
}

/// The user-input rule for the text columns of an endpoint's settings (see [the module](self)).
/// Tags, ignore paths and identity keys are JSON columns, kept faithfully.
fn check_settings(s: &EndpointSettings) -> Result<(), StoreError> {
    refuse_nul("endpoints.name", &s.name)?;
    refuse_nul("endpoints.url", &s.url)?;
    refuse_nul("endpoints.environment", &s.environment)?;
    refuse_nul_opt("endpoints.description", s.description.as_deref())?;
    refuse_nul("endpoints.content_type", &s.content_type)
}

impl NewEndpointRow {
    /// The user-input rule for its text columns (see [the module](self)). Tags, ignore paths
    /// and the contract are JSON columns, kept faithfully.
    pub fn check_text(&self) -> Result<(), StoreError> {
        check_settings(&self.settings)
    }
}

impl EndpointChanges {
    /// The user-input rule for its text columns (see [the module](self)).
    pub fn check_text(&self) -> Result<(), StoreError> {
        check_settings(&self.settings)
    }
}

impl EndpointFilter {
    /// The user-input rule for the filter values (see [the module](self)).
    pub fn check_text(&self) -> Result<(), StoreError> {
        refuse_nul_opt("endpoints.environment", self.environment.as_deref())
    }
}

impl NewUser {
    /// The user-input rule for its text columns (see [the module](self)).
    pub fn check_text(&self) -> Result<(), StoreError> {
        refuse_nul("users.email", &self.email)?;
        refuse_nul("users.password_hash", &self.password_hash)
    }
}

impl NewSession {
    /// The user-input rule for its text columns (see [the module](self)).
    pub fn check_text(&self) -> Result<(), StoreError> {
        refuse_nul("sessions.id_hash", &self.id_hash)?;
        refuse_nul("sessions.csrf_token", &self.csrf_token)
    }
}

impl NewWebhook {
    /// The user-input rule for its text columns (see [the module](self)).
    pub fn check_text(&self) -> Result<(), StoreError> {
        refuse_nul("webhooks.url", &self.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_refused_by_column_and_other_controls_pass() {
        assert!(refuse_nul("t.c", "a\u{1}b\u{b}c\u{7f}\t\r\n").is_ok());
        let err = refuse_nul("t.c", "a\0b");
        assert!(
            matches!(&err, Err(StoreError::InvalidInput(m)) if m.starts_with("t.c ") && !m.contains("a\0b")),
            "{err:?}"
        );
        assert!(refuse_nul_opt("t.c", None).is_ok());
        assert!(refuse_nul_opt("t.c", Some("\0")).is_err());
    }

    #[test]
    fn update_and_filter_name_their_column() {
        let update = WorkspaceUpdate {
            name: Some("x\0".into()),
            ..WorkspaceUpdate::default()
        };
        assert_eq!(
            update.check_text().err().map(|e| e.to_string()),
            Some(nul_refused("workspaces.name").to_string())
        );
        assert!(WorkspaceUpdate::default().check_text().is_ok());
        let filter = EndpointFilter {
            environment: Some("\0".into()),
            ..EndpointFilter::default()
        };
        assert_eq!(
            filter.check_text().err().map(|e| e.to_string()),
            Some(nul_refused("endpoints.environment").to_string())
        );
    }
}
