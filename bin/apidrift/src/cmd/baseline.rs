//! `apidrift baseline capture ENDPOINT_ID [--workspace ID]` (D8): fetches the endpoint through the
//! SSRF-safe client (the configured allow-list applies) and records a baseline. Prints
//! `{"baselineVersion","capturedAt","status"}` like `POST /v1/endpoints/{id}/baseline`.

use super::{CliError, print_json};
use crate::config::{self, GlobalArgs, Settings};
use crate::db;
use apidrift_model::Uuid;
use apidrift_model::net::AllowList;
use apidrift_monitor::{Client, Monitor, MonitorError};
use apidrift_store::Store;
use serde::Serialize;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, clap::Subcommand)]
pub enum BaselineCommand {
    /// Fetch the endpoint now and record the response as its new baseline.
    Capture(CaptureArgs),
}

#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// The endpoint id.
    #[arg(value_name = "ENDPOINT_ID", value_parser = parse_id)]
    endpoint: Uuid,
    /// The endpoint's workspace (looked up from the endpoint id when not given).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
}

pub fn parse_id(text: &str) -> Result<Uuid, String> {
    Uuid::parse_str(text.trim()).map_err(|_| "must be a UUID".to_owned())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Captured {
    baseline_version: u32,
    captured_at: String,
    status: u16,
}

/// The allow-list of the configuration (`APIDRIFT_OUTBOUND__ALLOW_CIDRS`, `[outbound]`).
pub fn allow_list(settings: &Settings) -> Result<AllowList, CliError> {
    AllowList::parse(&settings.outbound.allow_cidrs.join(","))
        .map_err(|e| CliError(format!("outbound.allow_cidrs: {e}")))
}

/// A monitor over the configured database, key and allow-list.
pub fn monitor(settings: &Settings, store: Arc<dyn Store>) -> Result<Monitor, CliError> {
    let keys = settings.key_ring()?.ok_or_else(|| {
        CliError("no sealing key: set ENDPOINT_SECRET_KEY (or secret_key_file)".into())
    })?;
    let client = Client::new(allow_list(settings)?).map_err(|e| CliError(e.to_string()))?;
    Ok(Monitor::new(store, Arc::new(keys), client))
}

/// The endpoint's workspace: `--workspace` when given, else the one the endpoint belongs to (an
/// operator lookup, so `apidrift baseline capture ENDPOINT_ID` works as D8 writes it).
pub async fn workspace_of(
    store: &dyn Store,
    given: Option<Uuid>,
    endpoint: Uuid,
) -> Result<Uuid, CliError> {
    if let Some(workspace) = given {
        return Ok(workspace);
    }
    store
        .endpoint_workspace(endpoint)
        .await
        .map_err(db::store_error)?
        .ok_or_else(|| CliError(format!("no endpoint with id {endpoint}")))
}

/// A pipeline failure as a one-line CLI error.
pub fn monitor_error(e: MonitorError) -> CliError {
    match e {
        MonitorError::NotFound => CliError("endpoint not found in this workspace".into()),
        other => CliError(other.to_string()),
    }
}

pub fn run(global: &GlobalArgs, command: BaselineCommand) -> Result<ExitCode, CliError> {
    let BaselineCommand::Capture(args) = command;
    let settings = config::load_from_process(global)?;
    db::block_on(async {
        let store = db::open(&settings, true).await?;
        let workspace = workspace_of(&*store, args.workspace, args.endpoint).await?;
        let monitor = monitor(&settings, store)?;
        let baseline = monitor
            .capture_baseline(workspace, args.endpoint)
            .await
            .map_err(monitor_error)?;
        let captured_at = apidrift_model::timestamp::format(baseline.captured_at)
            .map_err(|e| CliError(e.to_string()))?;
        print_json(&Captured {
            baseline_version: baseline.version,
            captured_at,
            status: baseline.status,
        })?;
        Ok(ExitCode::SUCCESS)
    })?
}
