//! `apidrift token create|list|revoke` (D3, D4). The token text is printed once, by `create`;
//! the store keeps only its SHA-256 and a 4-character hint, and `list` shows neither the text nor
//! the hash.

use super::CliError;
use super::workspace::parse_id;
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_model::{Role, Scope, Uuid, timestamp};
use apidrift_seal::Token;
use apidrift_store::{NewToken, StoreError, StoredToken, new_id};
use serde::Serialize;
use std::process::ExitCode;
use time::{Duration, OffsetDateTime};

/// Longest token name accepted.
const MAX_NAME: usize = 200;
/// Longest expiry accepted, in days (100 years).
const MAX_EXPIRY_DAYS: u32 = 36_500;

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
    /// The workspace the token belongs to.
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Uuid,
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
    /// The workspace whose tokens to list.
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Uuid,
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

/// The scopes to grant: the given ones in the order first named, or the default (D3).
fn scopes_or_default(given: Vec<Scope>) -> Vec<Scope> {
    if given.is_empty() {
        return Scope::DEFAULT.to_vec();
    }
    let mut scopes = Vec::with_capacity(given.len());
    for scope in given {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    scopes
}

pub fn run(global: &GlobalArgs, command: TokenCommand) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    db::block_on(async {
        let store = db::open(&settings, true).await?;
        match command {
            TokenCommand::Create(args) => {
                let token = Token::mint().map_err(|e| CliError(e.to_string()))?;
                let now = OffsetDateTime::now_utc();
                let new = NewToken {
                    id: new_id(),
                    workspace_id: args.workspace,
                    name: args.name,
                    token_hash: token.hash(),
                    hint: token.hint(),
                    scopes: scopes_or_default(args.scopes),
                    role: args.role,
                    created_at: now,
                    expires_at: args.expires_in.map(|d| now + Duration::days(i64::from(d))),
                };
                let stored = match store.create_token(new).await {
                    Err(StoreError::NotFound) => {
                        return Err(CliError(format!("workspace {} not found", args.workspace)));
                    }
                    other => other.map_err(db::store_error)?,
                };
                super::print_json(&Created {
                    id: stored.id,
                    token: token.expose(),
                    scopes: &stored.scopes,
                    role: stored.role,
                })
            }
            TokenCommand::List(args) => {
                if store
                    .get_workspace(args.workspace)
                    .await
                    .map_err(db::store_error)?
                    .is_none()
                {
                    return Err(CliError(format!("workspace {} not found", args.workspace)));
                }
                let tokens = store
                    .list_tokens(args.workspace)
                    .await
                    .map_err(db::store_error)?;
                let listed: Vec<Listed<'_>> = tokens.iter().map(Listed::from).collect();
                super::print_json(&listed)
            }
            TokenCommand::Revoke(args) => {
                let now = OffsetDateTime::now_utc();
                match store.revoke_token_by_id(args.id, now).await {
                    Err(StoreError::NotFound) => {
                        Err(CliError(format!("token {} not found", args.id)))
                    }
                    Err(e) => Err(db::store_error(e)),
                    Ok(token) => super::print_json(&Listed::from(&token)),
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

    #[test]
    fn default_and_deduplicated_scopes() {
        assert_eq!(scopes_or_default(Vec::new()), vec![Scope::EndpointsRead]);
        assert_eq!(
            scopes_or_default(vec![
                Scope::ChecksRun,
                Scope::EndpointsRead,
                Scope::ChecksRun
            ]),
            vec![Scope::ChecksRun, Scope::EndpointsRead]
        );
    }
}
