//! `apidrift endpoint list|show|update|delete|pause|resume` (D19): the operator's twin of the
//! endpoint routes, through the same use cases (`Service::update_endpoint`, `set_paused`,
//! `delete_endpoint`). Output is JSON, like the other admin commands; credentials are never
//! printed. `update` takes the PATCH document (`--patch JSON`, or `--patch -` to read it from
//! stdin so that a credential stays off the command line).

use super::baseline::{parse_id, the_workspace, workspace_of};
use super::{CliError, print_json};
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_app::Actor;
use apidrift_model::{EndpointList, Pagination, Uuid};
use apidrift_store::{EndpointFilter, PageRequest};
use serde_json::{Value, json};
use std::io::Read as _;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum EndpointCommand {
    /// List a workspace's endpoints, newest first.
    List(ListArgs),
    /// Print one endpoint.
    Show(IdArgs),
    /// Change an endpoint: any subset of the create fields and `paused`, as a JSON object.
    Update(UpdateArgs),
    /// Delete an endpoint with its schedule, baselines, checks, diffs and secrets.
    Delete(IdArgs),
    /// Pause an endpoint: schedules skip it (manual checks still run).
    Pause(IdArgs),
    /// Resume a paused endpoint.
    Resume(IdArgs),
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
    /// Rows per page (1 to 100).
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=100))]
    limit: u32,
    #[arg(long, default_value_t = 0)]
    offset: u64,
}

#[derive(Debug, clap::Args)]
pub struct IdArgs {
    /// The endpoint id.
    #[arg(value_name = "ENDPOINT_ID", value_parser = parse_id)]
    id: Uuid,
    /// The workspace (found from the endpoint when omitted).
    #[arg(long, value_name = "ID", value_parser = parse_id)]
    workspace: Option<Uuid>,
}

#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    #[command(flatten)]
    target: IdArgs,
    /// The change as a JSON object (e.g. '{"timeoutMs": 5000}'); `-` reads it from stdin.
    #[arg(long, value_name = "JSON")]
    patch: String,
}

pub fn run(global: &GlobalArgs, command: EndpointCommand) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    match command {
        EndpointCommand::List(args) => db::block_on(async {
            let service = db::service(&settings, false).await?;
            let page = PageRequest {
                limit: args.limit,
                offset: args.offset,
            };
            let found = service
                .list_endpoints(
                    &Actor::operator(the_workspace(&service, args.workspace).await?),
                    &EndpointFilter::default(),
                    page,
                )
                .await?;
            print_json(&EndpointList {
                endpoints: found.items.iter().map(|e| e.to_model()).collect(),
                pagination: Pagination {
                    limit: page.limit,
                    offset: page.offset,
                    total: found.total,
                },
            })
        })??,
        EndpointCommand::Show(args) => db::block_on(async {
            let service = db::service(&settings, false).await?;
            let ws = workspace_of(&service, args.workspace, args.id).await?;
            let e = service.get_endpoint(&Actor::operator(ws), args.id).await?;
            print_json(&json!({ "endpoint": e.to_model() }))
        })??,
        EndpointCommand::Update(args) => {
            let text = if args.patch == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| CliError(format!("cannot read the change from stdin: {e}")))?;
                text
            } else {
                args.patch.clone()
            };
            let patch: Value = serde_json::from_str(&text).map_err(|e| {
                CliError(format!(
                    "--patch: not valid JSON ({e}); give an object such as '{{\"timeoutMs\": 5000}}'"
                ))
            })?;
            db::block_on(async {
                let service = db::service(&settings, true).await?;
                let ws = workspace_of(&service, args.target.workspace, args.target.id).await?;
                // The CLI changes only the fields it names (no version: concurrent changes of
                // other fields stay).
                let e = service
                    .update_endpoint(&Actor::operator(ws), args.target.id, &patch, None)
                    .await?;
                print_json(&json!({ "endpoint": e.to_model() }))
            })??
        }
        EndpointCommand::Delete(args) => db::block_on(async {
            let service = db::service(&settings, false).await?;
            let ws = workspace_of(&service, args.workspace, args.id).await?;
            service
                .delete_endpoint(&Actor::operator(ws), args.id, None)
                .await?;
            print_json(&json!({ "deleted": args.id }))
        })??,
        EndpointCommand::Pause(args) => pause(&settings, args, true)?,
        EndpointCommand::Resume(args) => pause(&settings, args, false)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn pause(settings: &config::Settings, args: IdArgs, paused: bool) -> Result<(), CliError> {
    db::block_on(async {
        let service = db::service(settings, false).await?;
        let ws = workspace_of(&service, args.workspace, args.id).await?;
        let e = service
            .set_paused(&Actor::operator(ws), args.id, paused)
            .await?;
        print_json(&json!({ "endpoint": e }))
    })?
}
