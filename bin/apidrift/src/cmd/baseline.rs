//! `apidrift baseline capture ENDPOINT_ID [--workspace ID]` (D8): fetches the endpoint through the
//! SSRF-safe client (the configured allow-list applies) and records a baseline. `--samples N`
//! (1 to 5) fetches N times, `[baseline] sample_interval_ms` apart, and learns the volatile
//! paths. Prints `{"baselineVersion","capturedAt","status","samples","volatilePaths"}` like
//! `POST /v1/endpoints/{id}/baseline`.

use super::{CliError, print_json};
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_app::{Actor, Service, ServiceError};
use apidrift_model::Uuid;
use std::process::ExitCode;

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
    /// Responses to sample (1 to 5): leaf paths whose values differ between them are learned
    /// as volatile and ignored by full-mode checks until the next capture.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=5))]
    samples: u8,
}

pub fn parse_id(text: &str) -> Result<Uuid, String> {
    Uuid::parse_str(text.trim()).map_err(|_| "must be a UUID".to_owned())
}

/// The endpoint's workspace: `--workspace` when given, else the one the endpoint belongs to (an
/// operator lookup, so `apidrift baseline capture ENDPOINT_ID` works as D8 writes it).
pub async fn workspace_of(
    service: &Service,
    given: Option<Uuid>,
    endpoint: Uuid,
) -> Result<Uuid, CliError> {
    match given {
        Some(workspace) => Ok(workspace),
        None => match service.endpoint_workspace(endpoint).await {
            Err(ServiceError::NotFound { .. }) => {
                Err(CliError(format!("no endpoint with id {endpoint}")))
            }
            other => Ok(other?),
        },
    }
}

/// The workspace a command works in: `--workspace` (or `APIDRIFT_WORKSPACE`) when given, else
/// the database's only workspace; with none or several, an error that says what to do (and
/// lists them).
/// The operator acting on the workspace `given`, or on the only workspace there is
/// ([`the_workspace`]).
pub async fn operator(service: &Service, given: Option<Uuid>) -> Result<Actor, CliError> {
    Ok(Actor::operator(the_workspace(service, given).await?))
}

pub async fn the_workspace(service: &Service, given: Option<Uuid>) -> Result<Uuid, CliError> {
    if let Some(workspace) = given {
        return Ok(workspace);
    }
    let all = service.list_workspaces().await?;
    match all.as_slice() {
        [only] => Ok(only.id),
        [] => Err(CliError(
            "no workspace yet: create one with `apidrift workspace create --name NAME`".into(),
        )),
        several => {
            let list: Vec<String> = several
                .iter()
                .map(|w| format!("{} ({})", w.id, w.name))
                .collect();
            Err(CliError(format!(
                "this database has {} workspaces: pass --workspace ID (or set APIDRIFT_WORKSPACE) with one of {}",
                several.len(),
                list.join(", ")
            )))
        }
    }
}

pub fn run(global: &GlobalArgs, command: BaselineCommand) -> Result<ExitCode, CliError> {
    let BaselineCommand::Capture(args) = command;
    let settings = config::load_from_process(global)?;
    db::block_on(async {
        let service = db::service(&settings, true).await?;
        let workspace = workspace_of(&service, args.workspace, args.endpoint).await?;
        let captured = service
            .capture_baseline_sampled(&Actor::operator(workspace), args.endpoint, args.samples)
            .await?;
        print_json(&captured)?;
        Ok(ExitCode::SUCCESS)
    })?
}
