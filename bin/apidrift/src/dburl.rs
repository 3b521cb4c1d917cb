//! What a database URL names (D2): the adapter it selects, the SQLite file it points at, and a
//! description of it for messages that never shows a password. Read by the configuration (where
//! the key file sits beside a SQLite database) and by [`crate::db`], which opens the store.
//!
//! * `postgres://…` or `postgresql://…` → PostgreSQL;
//! * `sqlite://PATH`, `sqlite:PATH`, `sqlite::memory:` or a plain file path → SQLite;
//! * any other `scheme://` is an error, never a silent SQLite fallback.

use crate::error::CliError;
use std::path::PathBuf;

/// Which adapter a database URL selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

/// Picks the adapter for `url`, or explains why the URL is not one we accept.
pub fn backend_for(url: &str) -> Result<Backend, CliError> {
    let url = url.trim();
    if url.is_empty() {
        return Err(CliError("database URL is empty".into()));
    }
    if let Some((scheme, _)) = url.split_once("://") {
        let is_scheme = scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if is_scheme {
            return match scheme.to_ascii_lowercase().as_str() {
                "postgres" | "postgresql" => Ok(Backend::Postgres),
                "sqlite" => Ok(Backend::Sqlite),
                other => Err(CliError(format!(
                    "unsupported database URL scheme `{other}`: use postgres://, postgresql://, \
                     sqlite://PATH, sqlite::memory: or a file path"
                ))),
            };
        }
    }
    Ok(Backend::Sqlite)
}

/// The database file of a SQLite URL or path; `None` for PostgreSQL and `sqlite::memory:`.
pub fn sqlite_file(url: &str) -> Option<PathBuf> {
    if backend_for(url).ok()? != Backend::Sqlite {
        return None;
    }
    let url = url.trim();
    let path = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    let path = path.split('?').next().unwrap_or(path);
    if path.is_empty() || path == ":memory:" {
        return None;
    }
    Some(PathBuf::from(path))
}

/// The database a URL names, for messages: a SQLite file as an absolute `sqlite://` URL, a
/// PostgreSQL URL without its password and query string (which may hold credentials).
pub fn describe(url: &str) -> String {
    let url = url.trim();
    match backend_for(url) {
        Ok(Backend::Sqlite) => match sqlite_file(url) {
            Some(path) => {
                let abs = std::path::absolute(&path).unwrap_or(path);
                format!("sqlite://{}", abs.display())
            }
            None => "sqlite::memory: (in memory, gone when the command ends)".into(),
        },
        Ok(Backend::Postgres) => {
            let Some((scheme, rest)) = url.split_once("://") else {
                return "postgres".into();
            };
            let rest = rest.split('?').next().unwrap_or(rest);
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let host = match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    let user = userinfo.split(':').next().unwrap_or_default();
                    if user.is_empty() {
                        host.to_owned()
                    } else {
                        format!("{user}@{host}")
                    }
                }
                None => authority.to_owned(),
            };
            format!("{scheme}://{host}{path}")
        }
        Err(_) => "(unsupported URL)".into(),
    }
}

/// Refuses to let an admin command create a database: a SQLite file that does not exist yet, or
/// an in-memory one (its data would be gone when the command ends). PostgreSQL databases are
/// created by their operator, never by apidrift, so they always pass. `hint` says how to create
/// one on purpose.
pub fn require_existing(url: &str, hint: &str) -> Result<(), CliError> {
    if backend_for(url)? != Backend::Sqlite {
        return Ok(());
    }
    match sqlite_file(url) {
        Some(path) if path.exists() => Ok(()),
        Some(_) => Err(CliError(format!(
            "no database at {}: {hint}, or point --database-url (or DATABASE_URL) at the \
             existing database",
            describe(url)
        ))),
        None => Err(CliError(format!(
            "sqlite::memory: would be a new, empty database that is gone when the command ends: \
             {hint}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_pick_the_adapter() {
        let backend = |u: &str| backend_for(u).ok();
        assert_eq!(backend("postgres://u@h/db"), Some(Backend::Postgres));
        assert_eq!(
            backend("postgresql://u@h:5432/db?sslmode=disable"),
            Some(Backend::Postgres)
        );
        assert_eq!(backend("POSTGRES://h/db"), Some(Backend::Postgres));
        assert_eq!(backend("sqlite://apidrift.db"), Some(Backend::Sqlite));
        assert_eq!(
            backend("sqlite:///var/lib/apidrift.db"),
            Some(Backend::Sqlite)
        );
        assert_eq!(backend("sqlite::memory:"), Some(Backend::Sqlite));
        assert_eq!(backend("./data/apidrift.db"), Some(Backend::Sqlite));
        assert_eq!(backend("/tmp/x.db"), Some(Backend::Sqlite));
        assert_eq!(backend("apidrift.db"), Some(Backend::Sqlite));
    }

    #[test]
    fn other_schemes_are_errors_not_sqlite() {
        for url in [
            "mysql://h/db",
            "http://h/db",
            "postgre://h/db",
            "file:///tmp/x.db",
            " ",
            "",
        ] {
            assert!(backend_for(url).is_err(), "{url:?} accepted");
        }
        let msg = backend_for("mysql://root@h/db")
            .err()
            .map(|e| e.0)
            .unwrap_or_default();
        assert!(msg.contains("`mysql`") && !msg.contains("root"), "{msg}");
    }

    #[test]
    fn descriptions_name_the_file_and_hide_passwords() {
        let abs = describe("sqlite://rel/a.db");
        assert!(
            abs.starts_with("sqlite:///") && abs.ends_with("/rel/a.db"),
            "{abs}"
        );
        assert_eq!(describe("sqlite:///var/a.db"), "sqlite:///var/a.db");
        assert!(describe("sqlite::memory:").starts_with("sqlite::memory:"));
        assert_eq!(
            describe("postgres://app:hunter2@db.internal:5432/apidrift?sslmode=disable&password=x"),
            "postgres://app@db.internal:5432/apidrift"
        );
        assert_eq!(
            describe("postgresql://db/apidrift"),
            "postgresql://db/apidrift"
        );
        assert_eq!(describe("postgres://:pw@h/d"), "postgres://h/d");
        assert!(!describe("postgres://u:p@w@h/d").contains("p@w"));
    }

    #[test]
    fn only_existing_sqlite_files_pass_without_create() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("x.db");
        let url = format!("sqlite://{}", path.display());
        let err = require_existing(&url, "pass --create").err().map(|e| e.0);
        assert!(
            err.as_deref().is_some_and(
                |e| e.starts_with("no database at sqlite:///") && e.contains("pass --create")
            ),
            "{err:?}"
        );
        std::fs::write(&path, b"")?;
        assert!(require_existing(&url, "").is_ok());
        assert!(require_existing("sqlite::memory:", "").is_err());
        assert!(require_existing("postgres://h/d", "").is_ok());
        Ok(())
    }

    #[test]
    fn sqlite_files() {
        assert_eq!(
            sqlite_file("sqlite://apidrift.db"),
            Some(PathBuf::from("apidrift.db"))
        );
        assert_eq!(
            sqlite_file("sqlite:///var/a.db"),
            Some(PathBuf::from("/var/a.db"))
        );
        assert_eq!(
            sqlite_file("sqlite:data/a.db?mode=rwc"),
            Some(PathBuf::from("data/a.db"))
        );
        assert_eq!(sqlite_file("plain.db"), Some(PathBuf::from("plain.db")));
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("postgres://h/db"), None);
    }
}
