//! `apidrift migrate` (D2): applies the pending embedded migrations and exits. Prints
//! `{"backend": "sqlite"|"postgres", "applied": [versions…]}`.

use super::CliError;
use crate::config::{self, GlobalArgs};
use crate::db;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Serialize)]
struct Output<'a> {
    backend: &'a str,
    applied: Vec<String>,
}

pub fn run(global: &GlobalArgs) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    db::block_on(async {
        let store = db::open(&settings, false).await?;
        let report = store.migrate().await.map_err(db::store_error)?;
        super::print_json(&Output {
            backend: store.backend().as_str(),
            applied: report.applied,
        })
    })??;
    Ok(ExitCode::SUCCESS)
}
