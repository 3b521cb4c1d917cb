//! `apidrift webhook add|list|remove` (D11, D24): the alert channels of a workspace from the
//! command line, through the same use cases as `POST/GET/DELETE /v1/webhooks`: `--kind` picks
//! the generic signed webhook, Slack, Discord or PagerDuty; the URL passes the outbound policy
//! (the configured allow-list applies); a generic secret is generated (printed once) or read
//! from `--secret-stdin` (a PagerDuty routing key is read the same way), a Slack or Discord URL
//! may be read from `--url-stdin` so it stays out of the process list; secrets are sealed with
//! the configured key and never printed afterwards.

use super::baseline::{operator, parse_id};
use super::{CliError, print_json};
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_model::{Severity, Uuid};
use serde_json::json;
use std::io::Read as _;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum WebhookCommand {
    /// Register a webhook (generic, slack, discord or pagerduty); prints it (with the secret
    /// when one was generated).
    #[command(visible_alias = "create")]
    Add(AddArgs),
    /// List a workspace's webhooks (never their secrets).
    List(ListArgs),
    /// Remove a webhook and its pending deliveries.
    Remove(RemoveArgs),
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The workspace (default: the only workspace).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
    /// What the webhook delivers: generic (signed JSON event), slack, discord or pagerduty.
    #[arg(long, default_value = "generic", value_parser = ["generic", "slack", "discord", "pagerduty"])]
    kind: String,
    /// Where deliveries are POSTed (http or https): the Slack or Discord webhook URL for those
    /// kinds; optional for pagerduty (PagerDuty's Events API v2 by default).
    #[arg(long, conflicts_with = "url_stdin")]
    url: Option<String>,
    /// Read the URL from stdin (a Slack or Discord webhook URL is a secret, and so is a URL with
    /// a key in it, such as a query `token`).
    #[arg(long, conflicts_with = "secret_stdin")]
    url_stdin: bool,
    /// Lowest severity that alerts: info, warning or breaking.
    #[arg(long, default_value = "warning", value_parser = parse_severity)]
    min_severity: Severity,
    /// Read the secret from stdin: a generic webhook's signing secret (instead of generating
    /// one) or a PagerDuty routing key (required for pagerduty).
    #[arg(long)]
    secret_stdin: bool,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The workspace whose webhooks to list (default: the only workspace).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
}

#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    /// The webhook id.
    #[arg(value_name = "WEBHOOK_ID", value_parser = parse_id)]
    id: Uuid,
    /// The webhook's workspace (default: the only workspace).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
}

fn parse_severity(text: &str) -> Result<Severity, String> {
    text.parse::<Severity>()
        .map_err(|_| "one of info, warning, breaking".to_owned())
}

pub fn run(global: &GlobalArgs, command: WebhookCommand) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    match command {
        WebhookCommand::Add(args) => {
            let mut body = json!({ "kind": args.kind, "minSeverity": args.min_severity.as_str() });
            if let Some(url) = &args.url {
                body["url"] = json!(url);
            }
            let read_stdin = |what: &str| -> Result<String, CliError> {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| CliError(format!("cannot read the {what} from stdin: {e}")))?;
                Ok(text.trim_end_matches(['\r', '\n']).to_owned())
            };
            if args.url_stdin {
                body["url"] = json!(read_stdin("URL")?);
            }
            if args.secret_stdin {
                body["secret"] = json!(read_stdin("secret")?);
            }
            db::block_on(async {
                let service = db::service(&settings, true).await?;
                let view = service
                    .create_webhook(&operator(&service, args.workspace).await?, &body)
                    .await?;
                print_json(&view)
            })??;
        }
        WebhookCommand::List(args) => {
            db::block_on(async {
                let service = db::service(&settings, false).await?;
                let webhooks = service
                    .list_webhooks(&operator(&service, args.workspace).await?)
                    .await?;
                print_json(&json!({ "webhooks": webhooks }))
            })??;
        }
        WebhookCommand::Remove(args) => {
            db::block_on(async {
                let service = db::service(&settings, false).await?;
                service
                    .delete_webhook(&operator(&service, args.workspace).await?, args.id)
                    .await?;
                print_json(&json!({ "removed": args.id }))
            })??;
        }
    }
    Ok(ExitCode::SUCCESS)
}
