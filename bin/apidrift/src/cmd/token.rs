//! `apidrift token create|list|revoke` (D3, D4). The token text is printed once, by `create`;
//! the store keeps only its SHA-256 and a 4-character hint, and `list` shows neither the text nor
//! the hash.

use super::CliError;
use super::baseline::operator;
use super::workspace::parse_id;
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_app::MintToken;
use apidrift_app::tokens::{MAX_EXPIRY_DAYS, MAX_NAME};
use apidrift_model::{Role, Scope, Uuid, timestamp};
use apidrift_store::StoredToken;
use serde::Serialize;
use std::process::ExitCode;
use time::OffsetDateTime;

#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it once, as JSON {"id","token","scopes","role"}.
    Create(CreateArgs),
    /// List a workspace's tokens as a JSON array (never the token text).
    List(ListArgs),
    /// Revoke a token: it stops authenticating at once.
    Revoke(RevokeArgs),
}

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// The workspace the token belongs to (default: the only workspace).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
    /// Scopes, comma separated: endpoints:read, endpoints:write, checks:run, baselines:write.
    #[arg(long, value_name = "SCOPES", value_delimiter = ',', value_parser = parse_scope)]
    scopes: Vec<Scope>,
    /// Role: viewer, member, admin or owner.
    #[arg(long, value_parser = parse_role, default_value = "member")]
    role: Role,
    /// A label shown in listings.
    #[arg(long, value_parser = parse_name, default_value = "")]
    name: String,
    /// Days until the token expires (default: never).
    #[arg(long, value_name = "DAYS", value_parser = parse_days, allow_negative_numbers = true)]
    expires_in: Option<u32>,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The workspace whose tokens to list (default: the only workspace).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
}

#[derive(Debug, clap::Args)]
pub struct RevokeArgs {
    /// The token id (from `token create` or `token list`).
    #[arg(value_name = "ID", value_parser = parse_id)]
    id: Uuid,
}

fn parse_scope(text: &str) -> Result<Scope, String> {
    text.trim().parse::<Scope>().map_err(|e| e.to_string())
}

fn parse_role(text: &str) -> Result<Role, String> {
    text.parse::<Role>().map_err(|e| e.to_string())
}

fn parse_name(text: &str) -> Result<String, String> {
    let name = text.trim();
    if name.chars().count() > MAX_NAME {
        return Err(format!("must be at most {MAX_NAME} characters"));
    }
    Ok(name.to_owned())
}

fn parse_days(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(days) if (1..=MAX_EXPIRY_DAYS).contains(&days) => Ok(days),
        _ => Err(format!(
            "must be a whole number of days from 1 to {MAX_EXPIRY_DAYS}"
        )),
    }
}

/// Output of `token create`: the only time the token text is shown.
#[derive(Serialize)]
struct Created<'a> {
    id: Uuid,
    token: &'a str,
    scopes: &'a [Scope],
    role: Role,
}

/// One token in `token list` / `token revoke` output: never the text nor its hash.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed<'a> {
    id: Uuid,
    workspace_id: Uuid,
    name: &'a str,
    hint: &'a str,
    scopes: &'a [Scope],
    role: Role,
    #[serde(with = "timestamp")]
    created_at: OffsetDateTime,
    #[serde(with = "timestamp::option")]
    expires_at: Option<OffsetDateTime>,
    #[serde(with = "timestamp::option")]
    last_used_at: Option<OffsetDateTime>,
    #[serde(with = "timestamp::option")]
    revoked_at: Option<OffsetDateTime>,
}

impl<'a> From<&'a StoredToken> for Listed<'a> {
    fn from(t: &'a StoredToken) -> Self {
        Listed {
            id: t.id,
            workspace_id: t.workspace_id,
            name: &t.name,
            hint: &t.hint,
            scopes: &t.scopes,
            role: t.role,
            created_at: t.created_at,
            expires_at: t.expires_at,
            last_used_at: t.last_used_at,
            revoked_at: t.revoked_at,
        }
    }
}

pub fn run(global: &GlobalArgs, command: TokenCommand) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    db::block_on(async {
        let service = db::service(&settings, false).await?;
        match command {
            TokenCommand::Create(args) => {
                let minted = service
                    .mint_token(
                        &operator(&service, args.workspace).await?,
                        MintToken {
                            name: args.name,
                            scopes: args.scopes,
                            role: args.role,
                            expires_in_days: args.expires_in,
                        },
                    )
                    .await?;
                super::print_json(&Created {
                    id: minted.token.id,
                    token: minted.expose(),
                    scopes: &minted.token.scopes,
                    role: minted.token.role,
                })
            }
            TokenCommand::List(args) => {
                let tokens = service
                    .list_tokens(&operator(&service, args.workspace).await?)
                    .await?;
                let listed: Vec<Listed<'_>> = tokens.iter().map(Listed::from).collect();
                super::print_json(&listed)
            }
            TokenCommand::Revoke(args) => {
                let token = service.revoke_any_token(args.id).await?;
                super::print_json(&Listed::from(&token))
            }
        }
    })??;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse() {
        assert_eq!(parse_scope(" checks:run"), Ok(Scope::ChecksRun));
        assert!(parse_scope("endpoints:admin").is_err());
        assert_eq!(parse_role("owner"), Ok(Role::Owner));
        assert!(parse_role("root").is_err());
        assert_eq!(parse_days("30"), Ok(30));
        for bad in ["0", "-1", "36501", "1.5", ""] {
            assert!(parse_days(bad).is_err(), "{bad}");
        }
        assert!(parse_name(&"n".repeat(201)).is_err());
    }
}
