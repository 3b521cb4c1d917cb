//! `apidrift workspace create|update|list` (D3, D17). `create` and `update` print one JSON
//! object `{"id","name","plan","endpointLimit","checkQuota"}`; `list` prints a JSON array of
//! them, oldest first. Limits are `null` when unlimited.

use super::CliError;
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_app::workspaces::{WorkspaceChange, check_name};
use apidrift_model::{Plan, Uuid};
use apidrift_store::Workspace;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum WorkspaceCommand {
    /// Create a workspace and print it as JSON.
    Create(CreateArgs),
    /// Change a workspace's name, plan or limits and print it as JSON.
    Update(UpdateArgs),
    /// List every workspace as a JSON array, oldest first.
    List,
}

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// Workspace name (1 to 200 characters).
    #[arg(long, value_parser = parse_name)]
    name: String,
    /// Plan (free, starter, pro, enterprise); its limits apply unless overridden.
    #[arg(long, value_parser = parse_plan, default_value = "enterprise")]
    plan: Plan,
    /// Endpoints the workspace may hold: a number, or `unlimited`.
    #[arg(long, value_name = "N", value_parser = parse_limit, allow_negative_numbers = true)]
    endpoint_limit: Option<Limit>,
    /// Checks per calendar month (UTC): a number, or `unlimited`.
    #[arg(long, value_name = "N", value_parser = parse_limit, allow_negative_numbers = true)]
    check_quota: Option<Limit>,
}

#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// The workspace id.
    #[arg(value_name = "ID", value_parser = parse_id)]
    id: Uuid,
    /// New name.
    #[arg(long, value_parser = parse_name)]
    name: Option<String>,
    /// New plan. Its limits replace the current ones unless --endpoint-limit/--check-quota
    /// are given too.
    #[arg(long, value_parser = parse_plan)]
    plan: Option<Plan>,
    /// Endpoints the workspace may hold: a number, or `unlimited`.
    #[arg(long, value_name = "N", value_parser = parse_limit, allow_negative_numbers = true)]
    endpoint_limit: Option<Limit>,
    /// Checks per calendar month (UTC): a number, or `unlimited`.
    #[arg(long, value_name = "N", value_parser = parse_limit, allow_negative_numbers = true)]
    check_quota: Option<Limit>,
}

/// A limit flag: `Some(n)` or unlimited (`None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(Option<u32>);

fn parse_limit(text: &str) -> Result<Limit, String> {
    if text.eq_ignore_ascii_case("unlimited") {
        return Ok(Limit(None));
    }
    text.parse::<u32>()
        .map(|n| Limit(Some(n)))
        .map_err(|_| "must be a whole number from 0 to 4294967295, or `unlimited`".to_owned())
}

fn parse_plan(text: &str) -> Result<Plan, String> {
    text.parse::<Plan>().map_err(|e| e.to_string())
}

fn parse_name(text: &str) -> Result<String, String> {
    check_name(text).map_err(|e| e.to_string())
}

/// Parses a UUID argument (shared with the token commands).
pub fn parse_id(text: &str) -> Result<Uuid, String> {
    Uuid::parse_str(text.trim()).map_err(|_| "must be a UUID".to_owned())
}

/// The printed form of a workspace (D3), fields in this order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output<'a> {
    id: Uuid,
    name: &'a str,
    plan: Plan,
    endpoint_limit: Option<u32>,
    check_quota: Option<u32>,
}

impl<'a> From<&'a Workspace> for Output<'a> {
    fn from(ws: &'a Workspace) -> Self {
        Output {
            id: ws.id,
            name: &ws.name,
            plan: ws.plan,
            endpoint_limit: ws.endpoint_limit,
            check_quota: ws.check_quota,
        }
    }
}

fn print(ws: &Workspace) -> Result<(), CliError> {
    super::print_json(&Output::from(ws))
}

pub fn run(global: &GlobalArgs, command: WorkspaceCommand) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    db::block_on(async {
        let service = db::service(&settings, false).await?;
        let workspace = match command {
            WorkspaceCommand::List => {
                let all = service.list_workspaces().await?;
                let listed: Vec<Output<'_>> = all.iter().map(Output::from).collect();
                return super::print_json(&listed);
            }
            WorkspaceCommand::Create(args) => {
                service
                    .create_workspace(
                        &args.name,
                        args.plan,
                        args.endpoint_limit.map(|l| l.0),
                        args.check_quota.map(|l| l.0),
                    )
                    .await?
            }
            WorkspaceCommand::Update(args) => {
                let change = WorkspaceChange {
                    name: args.name,
                    plan: args.plan,
                    endpoint_limit: args.endpoint_limit.map(|l| l.0),
                    check_quota: args.check_quota.map(|l| l.0),
                };
                service.update_workspace(args.id, change).await?
            }
        };
        print(&workspace)
    })??;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse() {
        assert_eq!(parse_limit("5"), Ok(Limit(Some(5))));
        assert_eq!(parse_limit("0"), Ok(Limit(Some(0))));
        assert_eq!(parse_limit("unlimited"), Ok(Limit(None)));
        assert_eq!(parse_limit("Unlimited"), Ok(Limit(None)));
        for bad in ["-1", "", "1.5", "ten", "4294967296"] {
            assert!(parse_limit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plans_and_names_parse() {
        assert_eq!(parse_plan("pro"), Ok(Plan::Pro));
        assert_eq!(
            parse_plan("gold"),
            Err("must be one of free, starter, pro, enterprise".to_owned())
        );
        assert!(parse_plan("PRO").is_err());
        assert_eq!(parse_name("  Acme "), Ok("Acme".to_owned()));
        assert!(parse_name("   ").is_err());
        assert!(parse_name(&"x".repeat(201)).is_err());
        assert!(parse_name(&"é".repeat(200)).is_ok());
    }
}
