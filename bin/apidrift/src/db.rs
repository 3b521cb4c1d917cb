//! Opening the store named by the database URL (D2). This is the only place in the workspace that
//! names a concrete adapter; which one a URL selects is read in [`crate::dburl`].

use crate::config::Settings;
pub use crate::dburl::{Backend, backend_for, describe, require_existing, sqlite_file};
use crate::error::CliError;
use apidrift_app::Service;
use apidrift_model::net::AllowList;
use apidrift_monitor::Client;
use apidrift_seal::KeyRing;
use apidrift_store::{ConnectOptions, Store};
use std::sync::Arc;

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
