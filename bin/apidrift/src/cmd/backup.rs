//! `apidrift backup --to FILE`: a consistent copy of a SQLite database, taken while the service
//! runs (`VACUUM INTO` through the store: one read transaction, writers carry on). The copy is
//! checked with `PRAGMA integrity_check` and made owner-only (0600) before it is moved to FILE; an
//! existing FILE is never overwritten. Prints `{"backend":"sqlite","to":ABSOLUTE_PATH,"bytes":N}`.
//!
//! PostgreSQL is backed up with `pg_dump`: the command says so and exits 2.

use super::CliError;
use crate::config::{self, GlobalArgs};
use crate::db::{self, Backend};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// The file to write: a complete SQLite database. It must not exist yet.
    #[arg(long, value_name = "FILE")]
    to: PathBuf,
}

#[derive(Serialize)]
struct Output {
    backend: &'static str,
    to: String,
    bytes: u64,
}

/// What to tell a PostgreSQL user.
pub const POSTGRES_MESSAGE: &str = "backup copies SQLite databases; this one is PostgreSQL: back it \
     up with pg_dump, e.g. `pg_dump --format=custom --file=apidrift.dump \"$DATABASE_URL\"` \
     (see docs/operations.md)";

pub fn run(global: &GlobalArgs, args: BackupArgs) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    if db::backend_for(&settings.database_url)? == Backend::Postgres {
        return Err(CliError(POSTGRES_MESSAGE.into()));
    }
    if db::sqlite_file(&settings.database_url).is_none() {
        return Err(CliError(
            "an in-memory SQLite database lives only inside one process: there is nothing to \
             back up"
                .into(),
        ));
    }
    let to = std::path::absolute(&args.to)
        .map_err(|e| CliError(format!("{}: {e}", args.to.display())))?;
    if to.exists() {
        return Err(CliError(format!(
            "{} already exists: a backup never overwrites a file, choose a new name",
            to.display()
        )));
    }
    if let Some(dir) = to.parent()
        && !dir.is_dir()
    {
        return Err(CliError(format!(
            "folder {} does not exist: create it first",
            dir.display()
        )));
    }
    db::block_on(async {
        // Never migrate the database being copied: the copy is what is on disk now.
        let store = db::open(&settings, false).await?;
        store.backup_to(&to).await.map_err(db::store_error)
    })??;
    let bytes = std::fs::metadata(&to).map(|m| m.len()).unwrap_or(0);
    super::print_json(&Output {
        backend: "sqlite",
        to: to.display().to_string(),
        bytes,
    })?;
    Ok(ExitCode::SUCCESS)
}
