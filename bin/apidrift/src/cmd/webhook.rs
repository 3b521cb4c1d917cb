//! `apidrift webhook add|list|remove` (D11): the alert channels of a workspace from the command
//! line, with the same rules as `POST/GET/DELETE /v1/webhooks`: the URL passes the outbound policy
//! (the configured allow-list applies), the secret is generated (printed once) or read from
//! `--secret-stdin`, sealed with the configured key, and never printed afterwards.

use super::baseline::{allow_list, parse_id};
use super::{CliError, print_json};
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_model::{Severity, Uuid, timestamp};
use apidrift_seal::{Binding, Field};
use apidrift_store::{NewWebhook, StoredWebhook, new_id};
use serde::Serialize;
use std::io::Read as _;
use std::process::ExitCode;
use time::OffsetDateTime;

#[derive(Debug, clap::Subcommand)]
pub enum WebhookCommand {
    /// Register a webhook; prints it (with the secret when one was generated).
    Add(AddArgs),
    /// List a workspace's webhooks (never their secrets).
    List(ListArgs),
    /// Remove a webhook and its pending deliveries.
    Remove(RemoveArgs),
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The workspace.
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Uuid,
    /// Where deliveries are POSTed (http or https).
    #[arg(long)]
    url: String,
    /// Lowest severity that alerts: info, warning or breaking.
    #[arg(long, default_value = "warning", value_parser = parse_severity)]
    min_severity: Severity,
    /// Read the signing secret from stdin instead of generating one.
    #[arg(long)]
    secret_stdin: bool,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The workspace whose webhooks to list.
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Uuid,
}

#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    /// The webhook id.
    #[arg(value_name = "WEBHOOK_ID", value_parser = parse_id)]
    id: Uuid,
    /// The webhook's workspace.
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Uuid,
}

fn parse_severity(text: &str) -> Result<Severity, String> {
    text.parse::<Severity>()
        .map_err(|_| "one of info, warning, breaking".to_owned())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct View {
    id: Uuid,
    url: String,
    min_severity: &'static str,
    created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
}

fn view(w: &StoredWebhook, secret: Option<String>) -> Result<View, CliError> {
    Ok(View {
        id: w.id,
        url: w.url.clone(),
        min_severity: w.min_severity.as_str(),
        created_at: timestamp::format(w.created_at).map_err(|e| CliError(e.to_string()))?,
        secret,
    })
}

pub fn run(global: &GlobalArgs, command: WebhookCommand) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    match command {
        WebhookCommand::Add(args) => {
            let allow = allow_list(&settings)?;
            let url = apidrift_model::net::check_url(args.url.trim(), &allow)
                .map_err(|e| CliError(format!("url: {e}")))?;
            let supplied = if args.secret_stdin {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| CliError(format!("cannot read the secret from stdin: {e}")))?;
                let text = text.trim_end_matches(['\r', '\n']).to_owned();
                if text.is_empty() || text.len() > 256 {
                    return Err(CliError("secret: 1 to 256 characters".into()));
                }
                Some(text)
            } else {
                None
            };
            let keys = settings.key_ring()?.ok_or_else(|| {
                CliError("no sealing key: set ENDPOINT_SECRET_KEY (or secret_key_file)".into())
            })?;
            let generated = match supplied {
                Some(_) => None,
                None => Some(apidrift_monitor::alerts::generate_secret().map_err(CliError)?),
            };
            let secret = supplied
                .as_deref()
                .or(generated.as_deref())
                .unwrap_or_default();
            let id = new_id();
            let sealed_secret = keys
                .seal(
                    secret.as_bytes(),
                    &Binding::new(
                        *args.workspace.as_bytes(),
                        *id.as_bytes(),
                        Field::WebhookSecret,
                    ),
                )
                .map_err(|e| CliError(e.to_string()))?;
            db::block_on(async {
                let store = db::open(&settings, true).await?;
                let stored = store
                    .create_webhook(NewWebhook {
                        id,
                        workspace_id: args.workspace,
                        url: url.to_string(),
                        min_severity: args.min_severity,
                        sealed_secret,
                        created_at: OffsetDateTime::now_utc(),
                    })
                    .await
                    .map_err(|e| match e {
                        apidrift_store::StoreError::NotFound => {
                            CliError("workspace not found".into())
                        }
                        other => db::store_error(other),
                    })?;
                print_json(&view(&stored, generated)?)
            })??;
        }
        WebhookCommand::List(args) => {
            db::block_on(async {
                let store = db::open(&settings, true).await?;
                let hooks = store
                    .list_webhooks(args.workspace)
                    .await
                    .map_err(db::store_error)?;
                let views = hooks
                    .iter()
                    .map(|w| view(w, None))
                    .collect::<Result<Vec<_>, _>>()?;
                print_json(&serde_json::json!({ "webhooks": views }))
            })??;
        }
        WebhookCommand::Remove(args) => {
            db::block_on(async {
                let store = db::open(&settings, true).await?;
                store
                    .delete_webhook(args.workspace, args.id)
                    .await
                    .map_err(|e| match e {
                        apidrift_store::StoreError::NotFound => {
                            CliError("webhook not found in this workspace".into())
                        }
                        other => db::store_error(other),
                    })?;
                print_json(&serde_json::json!({ "removed": args.id }))
            })??;
        }
    }
    Ok(ExitCode::SUCCESS)
}
