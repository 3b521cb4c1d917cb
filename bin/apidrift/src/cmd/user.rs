//! `apidrift user create|list|remove` (D15): console users. The password is read from stdin
//! (`--password-stdin`, one line) and stored only as an argon2id hash; nothing prints it back.

use super::CliError;
use super::workspace::parse_id;
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_model::{Role, Uuid, timestamp};
use apidrift_store::{Membership, NewUser, StoreError, new_id};
use serde::Serialize;
use std::io::BufRead as _;
use std::process::ExitCode;
use time::OffsetDateTime;

/// Shortest password accepted.
pub const MIN_PASSWORD: usize = 12;

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
    /// The workspace the user belongs to.
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Uuid,
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
    let t = text.trim();
    let ok = t.len() <= 254
        && t.split_once('@').is_some_and(|(l, d)| {
            !l.is_empty() && !d.is_empty() && !t.contains(char::is_whitespace)
        });
    if ok {
        Ok(t.to_lowercase())
    } else {
        Err("must be an e-mail address (local@domain)".into())
    }
}

fn parse_role(text: &str) -> Result<Role, String> {
    text.parse::<Role>()
        .map_err(|_| "must be one of viewer, member, admin, owner".to_owned())
}

/// Checks a password's length (at least [`MIN_PASSWORD`] characters, at most 1024).
pub fn check_password(password: &str) -> Result<(), CliError> {
    let n = password.chars().count();
    if n < MIN_PASSWORD {
        return Err(CliError(format!(
            "the password must have at least {MIN_PASSWORD} characters"
        )));
    }
    if n > 1024 {
        return Err(CliError(
            "the password is longer than 1024 characters".into(),
        ));
    }
    Ok(())
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
        let store = db::open(&settings, true).await?;
        match command {
            UserCommand::Create(args) => {
                let hash = apidrift_api::console::session::hash_password(
                    password.as_deref().unwrap_or_default(),
                )
                .map_err(|e| CliError(e.to_string()))?;
                let now = apidrift_model::timestamp::truncate_to_millis(OffsetDateTime::now_utc());
                let created = store
                    .create_user(NewUser {
                        id: new_id(),
                        email: args.email.clone(),
                        password_hash: hash,
                        workspace_id: args.workspace,
                        role: args.role,
                        created_at: now,
                    })
                    .await;
                let user = match created {
                    Err(StoreError::NotFound) => {
                        return Err(CliError(format!("workspace {} not found", args.workspace)));
                    }
                    Err(StoreError::Conflict(_)) => {
                        return Err(CliError(format!("user {} already exists", args.email)));
                    }
                    other => other.map_err(db::store_error)?,
                };
                super::print_json(&Listed {
                    id: user.id,
                    email: user.email,
                    workspace_id: args.workspace,
                    role: args.role,
                    created_at: timestamp::format(now).unwrap_or_default(),
                })
            }
            UserCommand::List(args) => {
                let list = store
                    .list_memberships(args.workspace)
                    .await
                    .map_err(db::store_error)?;
                let listed: Vec<Listed> = list.iter().map(Listed::from).collect();
                super::print_json(&listed)
            }
            UserCommand::Remove(args) => {
                let id = match Uuid::parse_str(args.user.trim()) {
                    Ok(id) => id,
                    Err(_) => store
                        .find_user_by_email(&args.user)
                        .await
                        .map_err(db::store_error)?
                        .map(|u| u.id)
                        .ok_or_else(|| CliError(format!("user {} not found", args.user)))?,
                };
                match store.remove_user(id).await {
                    Err(StoreError::NotFound) => {
                        Err(CliError(format!("user {} not found", args.user)))
                    }
                    Err(e) => Err(db::store_error(e)),
                    Ok(()) => super::print_json(&serde_json::json!({ "removed": id })),
                }
            }
        }
    })??;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_and_passwords_are_checked() {
        assert_eq!(
            parse_email(" Ada@Example.com ").as_deref(),
            Ok("ada@example.com")
        );
        assert!(parse_email("nobody").is_err());
        assert!(parse_email("a b@c").is_err());
        assert!(check_password("short").is_err());
        assert!(check_password("long enough password").is_ok());
    }
}
