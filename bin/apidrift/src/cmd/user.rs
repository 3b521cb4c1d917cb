//! `apidrift user create|list|remove` (D15): console users. The password is read from stdin
//! (`--password-stdin`, one line) and stored only as an argon2id hash; nothing prints it back.

use super::CliError;
use super::baseline::the_workspace;
use super::workspace::parse_id;
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_app::check_password;
use apidrift_model::{Role, Uuid, timestamp};
use apidrift_store::Membership;
use serde::Serialize;
use std::io::BufRead as _;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum UserCommand {
    /// Create a console user with a role in a workspace; prints {"id","email","workspaceId","role"}.
    Create(CreateArgs),
    /// List users and their memberships as a JSON array (never a password or hash).
    List(ListArgs),
    /// Remove a user (by id or e-mail): their memberships and sessions end at once.
    Remove(RemoveArgs),
}

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// The user's e-mail (the login name; stored lower-cased).
    #[arg(long, value_parser = parse_email)]
    email: String,
    /// Read the password from standard input (first line). Required: passwords are never
    /// taken from the command line.
    #[arg(long, required = true)]
    password_stdin: bool,
    /// The workspace the user belongs to (default: the only workspace).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
    /// Role: viewer, member, admin or owner.
    #[arg(long, value_parser = parse_role, default_value = "member")]
    role: Role,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only this workspace's members.
    #[arg(long, value_name = "ID", value_parser = parse_id)]
    workspace: Option<Uuid>,
}

#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    /// The user's id or e-mail.
    #[arg(value_name = "ID_OR_EMAIL")]
    user: String,
}

fn parse_email(text: &str) -> Result<String, String> {
    apidrift_app::users::check_email(text).map_err(|e| e.to_string())
}

fn parse_role(text: &str) -> Result<Role, String> {
    text.parse::<Role>()
        .map_err(|_| "must be one of viewer, member, admin, owner".to_owned())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    id: Uuid,
    email: String,
    workspace_id: Uuid,
    role: Role,
    created_at: String,
}

impl From<&Membership> for Listed {
    fn from(m: &Membership) -> Self {
        Listed {
            id: m.user_id,
            email: m.email.clone(),
            workspace_id: m.workspace_id,
            role: m.role,
            created_at: timestamp::format(m.created_at).unwrap_or_default(),
        }
    }
}

/// Runs `apidrift user …`.
pub fn run(global: &GlobalArgs, command: UserCommand) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    let password = match &command {
        UserCommand::Create(_) => {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| CliError(format!("cannot read the password from stdin: {e}")))?;
            let password = line.trim_end_matches(['\r', '\n']).to_owned();
            check_password(&password)?;
            Some(password)
        }
        _ => None,
    };
    db::block_on(async {
        let service = db::service(&settings, false).await?;
        match command {
            UserCommand::Create(args) => {
                let membership = service
                    .create_user(
                        &args.email,
                        password.as_deref().unwrap_or_default(),
                        the_workspace(&service, args.workspace).await?,
                        args.role,
                    )
                    .await?;
                super::print_json(&Listed::from(&membership))
            }
            UserCommand::List(args) => {
                let list = service.list_users(args.workspace).await?;
                let listed: Vec<Listed> = list.iter().map(Listed::from).collect();
                super::print_json(&listed)
            }
            UserCommand::Remove(args) => {
                let id = service.remove_user(&args.user).await?;
                super::print_json(&serde_json::json!({ "removed": id }))
            }
        }
    })??;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_parsed_by_the_service_rule() {
        assert_eq!(
            parse_email(" Ada@Example.com ").as_deref(),
            Ok("ada@example.com")
        );
        assert!(parse_email("nobody").is_err());
    }
}
