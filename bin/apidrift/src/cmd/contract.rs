//! `apidrift contract attach ENDPOINT_ID --spec FILE --operation "GET /path" [--status N]` and
//! `apidrift contract detach ENDPOINT_ID` (D10). Attach resolves the response schema of the
//! operation (OpenAPI 3.0, 3.1 or 3.2, JSON or YAML) and prints
//! `{"endpointId","operation","status","hasResponseContract":true}`; detach prints the same with
//! `hasResponseContract: false`.

use super::baseline::{parse_id, workspace_of};
use super::{CliError, print_json};
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_model::Uuid;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum ContractCommand {
    /// Attach an OpenAPI response contract to an endpoint.
    Attach(AttachArgs),
    /// Remove the endpoint's response contract.
    Detach(DetachArgs),
}

#[derive(Debug, clap::Args)]
pub struct AttachArgs {
    /// The endpoint to attach the contract to.
    #[arg(value_name = "ENDPOINT_ID", value_parser = parse_id)]
    endpoint: Uuid,
    /// The OpenAPI document (JSON or YAML), `-` for stdin.
    #[arg(long, value_name = "FILE")]
    spec: String,
    /// The operation, e.g. "GET /users/{id}".
    #[arg(long, value_name = "OPERATION")]
    operation: String,
    /// The response status whose schema is the contract (default: the first 2xx).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(100..=599))]
    status: Option<u16>,
    /// The endpoint's workspace (looked up from the endpoint id when not given).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
}

#[derive(Debug, clap::Args)]
pub struct DetachArgs {
    /// The endpoint whose contract to remove.
    #[arg(value_name = "ENDPOINT_ID", value_parser = parse_id)]
    endpoint: Uuid,
    /// The endpoint's workspace (looked up from the endpoint id when not given).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Out {
    endpoint_id: Uuid,
    operation: Option<String>,
    status: Option<u16>,
    has_response_contract: bool,
}

pub fn run(global: &GlobalArgs, command: ContractCommand) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    let out = match command {
        ContractCommand::Attach(args) => {
            let spec = super::bundle::read_spec(&args.spec)?;
            let document = spec.text.as_str();
            db::block_on(async {
                let service = db::service(&settings, false).await?;
                let workspace = workspace_of(&service, args.workspace, args.endpoint).await?;
                let contract = service
                    .attach_contract(
                        workspace,
                        args.endpoint,
                        document,
                        &args.operation,
                        args.status,
                    )
                    .await
                    .map_err(|e| CliError(spec.explain(CliError::from(e).0)))?;
                Ok::<_, CliError>(Out {
                    endpoint_id: args.endpoint,
                    operation: Some(contract.operation),
                    status: Some(contract.status),
                    has_response_contract: true,
                })
            })??
        }
        ContractCommand::Detach(args) => db::block_on(async {
            let service = db::service(&settings, false).await?;
            let workspace = workspace_of(&service, args.workspace, args.endpoint).await?;
            service.detach_contract(workspace, args.endpoint).await?;
            Ok::<_, CliError>(Out {
                endpoint_id: args.endpoint,
                operation: None,
                status: None,
                has_response_contract: false,
            })
        })??,
    };
    print_json(&out)?;
    Ok(ExitCode::SUCCESS)
}
