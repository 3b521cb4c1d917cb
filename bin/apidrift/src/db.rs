//! Opening the store named by the database URL (D2). This is the only place in the workspace that
//! names a concrete adapter.
//!
//! * `postgres://…` or `postgresql://…` → PostgreSQL;
//! * `sqlite://PATH`, `sqlite:PATH`, `sqlite::memory:` or a plain file path → SQLite;
//! * any other `scheme://` is an error, never a silent SQLite fallback.

use crate::config::Settings;
use crate::error::CliError;
use apidrift_app::Service;
use apidrift_model::net::AllowList;
use apidrift_monitor::Client;
use apidrift_seal::KeyRing;
use apidrift_store::{ConnectOptions, Store};
use std::path::PathBuf;
use std::sync::Arc;

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

/// Connects to the configured database. `migrate` applies pending migrations while connecting.
pub async fn open(settings: &Settings, migrate: bool) -> Result<Arc<dyn Store>, CliError> {
    let url = settings.database_url.trim();
    let options = ConnectOptions {
        migrate,
        ..ConnectOptions::default()
    };
    let store: Arc<dyn Store> = match backend_for(url)? {
        Backend::Postgres => Arc::new(
            apidrift_store_postgres::PgStore::connect_with(url, options)
                .await
                .map_err(store_error)?,
        ),
        Backend::Sqlite => Arc::new(
            apidrift_store_sqlite::SqliteStore::connect_with(url, options)
                .await
                .map_err(store_error)?,
        ),
    };
    Ok(store)
}

/// The service of an admin command, over the configured database (migrated) and allow-list;
/// with the configured key ring when `keys` (commands that seal or open secrets).
pub async fn service(settings: &Settings, keys: bool) -> Result<Service, CliError> {
    let store = open(settings, true).await?;
    let keys = if keys { settings.key_ring()? } else { None };
    Ok(new_service(settings, store, keys, allow_list(settings)?)?
        .with_sample_interval(settings.baseline.sample_interval()))
}

/// The service over `store` with the configured outbound client (`allow` and `[outbound]`'s
/// keep-alive).
pub fn new_service(
    settings: &Settings,
    store: Arc<dyn Store>,
    keys: Option<KeyRing>,
    allow: AllowList,
) -> Result<Service, CliError> {
    let client = outbound_client(settings, allow.clone())?;
    Ok(Service::with_client(
        store,
        keys.map(Arc::new),
        allow,
        client,
    ))
}

/// The outbound client of the configuration: the allow-list `allow` and `[outbound]`'s
/// keep-alive (`APIDRIFT_OUTBOUND__KEEP_ALIVE`, `APIDRIFT_OUTBOUND__IDLE_TIMEOUT_SECS`).
pub fn outbound_client(settings: &Settings, allow: AllowList) -> Result<Client, CliError> {
    Client::builder(allow)
        .keep_alive(settings.outbound.keep_alive())
        .build()
        .map_err(|e| CliError(format!("outbound client: {e}")))
}

/// The allow-list of the configuration (`APIDRIFT_OUTBOUND__ALLOW_CIDRS`, `[outbound]`).
pub fn allow_list(settings: &Settings) -> Result<AllowList, CliError> {
    AllowList::parse(&settings.outbound.allow_cidrs.join(","))
        .map_err(|e| CliError(format!("outbound.allow_cidrs: {e}")))
}

/// A store failure as a one-line CLI error.
pub fn store_error(e: apidrift_store::StoreError) -> CliError {
    CliError(e.to_string())
}

/// Runs an admin command's async body on a single-threaded runtime.
pub fn block_on<F: std::future::Future>(future: F) -> Result<F::Output, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError(format!("cannot start the async runtime: {e}")))?;
    Ok(runtime.block_on(future))
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
