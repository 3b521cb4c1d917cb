//! `apidrift endpoint add|list|show|update|delete|pause|resume` (D19, D25): the operator's twin of
//! the endpoint routes, through the same use cases (`Service::register_endpoints`,
//! `update_endpoint`, `set_paused`, `delete_endpoint`). Output is JSON, like the other admin
//! commands (`add` prints the new id and name unless `--json`); credentials are never printed.
//! `add` has a flag per create field and reads secrets from environment variables or stdin;
//! `update` takes the PATCH document (`--patch JSON`, or `--patch -` to read it from stdin so
//! that a credential stays off the command line).

use super::baseline::{operator, parse_id, the_workspace, workspace_of};
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
    /// Register an endpoint (the same rules as POST /api/v1/endpoints); prints its id and name.
    Add(Box<AddArgs>),
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

/// `apidrift endpoint add`: one flag per field of a create entry. Values go to the create use
/// case as they are given, so every rule and message is the API's.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The workspace (default: the only workspace).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
    /// Display name.
    #[arg(long)]
    name: String,
    /// The monitored URL (http or https).
    #[arg(long)]
    url: String,
    /// The HTTP method of each check (default GET).
    #[arg(long)]
    method: Option<String>,
    /// The environment label (default production).
    #[arg(long)]
    environment: Option<String>,
    /// Free-form description.
    #[arg(long)]
    description: Option<String>,
    /// A tag (repeat the flag for several).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// An extra request header, `Name: value` (repeatable). For a secret value use --header-env.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// An extra request header whose value is read from an environment variable, `Name=VAR`
    /// (repeatable); the value is sealed and never printed.
    #[arg(long = "header-env", value_name = "NAME=VAR")]
    header_envs: Vec<String>,
    /// The credential style: none, bearer, oauth, api_key, basic or custom.
    #[arg(long, value_name = "TYPE")]
    auth: Option<String>,
    /// The environment variable holding the credential's secret: the token (bearer, oauth), the
    /// key (api_key), the header value (custom) or the password (basic).
    #[arg(long, value_name = "VAR", conflicts_with = "auth_secret_stdin")]
    auth_secret_env: Option<String>,
    /// Read the credential's secret (see --auth-secret-env) from stdin.
    #[arg(long)]
    auth_secret_stdin: bool,
    /// The header that carries the credential: api_key (default X-API-Key) and custom.
    #[arg(long, value_name = "NAME")]
    auth_header: Option<String>,
    /// The user name, for basic.
    #[arg(long, value_name = "USER")]
    auth_username: Option<String>,
    /// The request body sent on each check (POST, PUT, PATCH, …); sealed, never printed.
    #[arg(long, value_name = "TEXT", conflicts_with = "request_body_file")]
    request_body: Option<String>,
    /// Read the request body from a file (`-`: stdin).
    #[arg(long, value_name = "PATH")]
    request_body_file: Option<String>,
    /// The content type of the request body (default application/json).
    #[arg(long, value_name = "MEDIA_TYPE")]
    content_type: Option<String>,
    /// How responses are compared: schema (default), full or exact (= full).
    #[arg(long, value_name = "MODE")]
    diff_mode: Option<String>,
    /// How long a check waits for the response, in milliseconds.
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,
    /// Run the check on a schedule: hourly, daily, weekly or monthly (Starter plan or above).
    #[arg(long, value_name = "FREQUENCY", conflicts_with = "interval_seconds")]
    schedule: Option<String>,
    /// Run the check every N seconds (60 to 2592000) instead of a named frequency.
    #[arg(long, value_name = "N")]
    interval_seconds: Option<u64>,
    /// A path pattern whose changes are ignored, e.g. `$.meta.requestId` (repeatable).
    #[arg(long = "ignore-path", value_name = "PATTERN")]
    ignore_paths: Vec<String>,
    /// An identity rule of full mode, `PATTERN=MEMBER`, e.g. `$.commits=sha` (repeatable).
    #[arg(long = "identity-key", value_name = "PATTERN=MEMBER")]
    identity_keys: Vec<String>,
    /// Follow redirects (default: a redirect is the response).
    #[arg(long)]
    follow_redirects: bool,
    /// How many times a fetch with no response or a 5xx is tried again (0 to 3, default 1).
    #[arg(long, value_name = "N")]
    retries: Option<u64>,
    /// Print the created endpoint as JSON (`{"endpoint": …}`) instead of its id and name.
    #[arg(long)]
    json: bool,
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
        EndpointCommand::Add(args) => {
            let entry = add_entry(
                &args,
                &|name| std::env::var(name).ok(),
                &mut std::io::stdin(),
            )?;
            db::block_on(async {
                let service = db::service(&settings, true).await?;
                let actor = operator(&service, args.workspace).await?;
                let answer = service.register_endpoints(&actor, &entry).await?;
                let Some(created) = answer.endpoints.first() else {
                    // One entry, not created: the reason the API lists under `skipped`.
                    let reason = answer.skipped.first().map(|s| s.reason.clone());
                    return Err(CliError(
                        reason.unwrap_or_else(|| "the endpoint was not created".to_owned()),
                    ));
                };
                if args.json {
                    print_json(&json!({ "endpoint": created }))
                } else {
                    println!("{}\t{}", created.id, created.name);
                    Ok(())
                }
            })??
        }
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
                    0,
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

/// The create entry of `endpoint add`: the flags as the API's wire fields, secrets read from the
/// environment (`env`) or `stdin`. The values are not checked here (the create use case does,
/// with the API's messages), only the shape of the flags (`Name: value`, `PATTERN=MEMBER`).
fn add_entry(
    args: &AddArgs,
    env: &dyn Fn(&str) -> Option<String>,
    stdin: &mut dyn std::io::Read,
) -> Result<Value, CliError> {
    let from_env = |flag: &str, var: &str| {
        env(var).ok_or_else(|| {
            CliError(format!(
                "{flag}: the environment variable {var} is not set; export it first"
            ))
        })
    };
    let mut stdin_used = false;
    let mut read_stdin = |what: &str| -> Result<String, CliError> {
        if std::mem::replace(&mut stdin_used, true) {
            return Err(CliError(format!(
                "{what}: stdin is already read for another flag; give this one another way"
            )));
        }
        let mut text = String::new();
        stdin
            .read_to_string(&mut text)
            .map_err(|e| CliError(format!("cannot read the {what} from stdin: {e}")))?;
        Ok(text.trim_end_matches(['\r', '\n']).to_owned())
    };
    let mut entry = serde_json::Map::new();
    entry.insert("name".into(), json!(args.name));
    entry.insert("url".into(), json!(args.url));
    let optional = [
        ("method", &args.method),
        ("environment", &args.environment),
        ("description", &args.description),
        ("contentType", &args.content_type),
        ("diffMode", &args.diff_mode),
    ];
    for (field, value) in optional {
        if let Some(v) = value {
            entry.insert(field.into(), json!(v));
        }
    }
    if !args.tags.is_empty() {
        entry.insert("tags".into(), json!(args.tags));
    }
    let mut headers = serde_json::Map::new();
    for h in &args.headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(CliError(format!(
                "--header {h:?}: write it as 'Name: value' (e.g. --header 'Accept: application/json')"
            )));
        };
        headers.insert(name.trim().to_owned(), json!(value.trim()));
    }
    for h in &args.header_envs {
        let Some((name, var)) = h.split_once('=') else {
            return Err(CliError(format!(
                "--header-env {h:?}: write it as NAME=VAR (e.g. --header-env X-Api-Key=API_KEY)"
            )));
        };
        let value = from_env("--header-env", var.trim())?;
        headers.insert(name.trim().to_owned(), json!(value));
    }
    if !headers.is_empty() {
        entry.insert("headers".into(), Value::Object(headers));
    }
    if let Some(kind) = &args.auth {
        let mut auth = serde_json::Map::new();
        auth.insert("type".into(), json!(kind));
        let secret = match (&args.auth_secret_env, args.auth_secret_stdin) {
            (Some(var), _) => Some(from_env("--auth-secret-env", var)?),
            (None, true) => Some(read_stdin("credential")?),
            (None, false) => None,
        };
        // The member that holds the secret for this type (an unknown type is left to the
        // create rules, which name the valid ones).
        let member = match kind.to_ascii_lowercase().as_str() {
            "bearer" | "oauth" => Some("token"),
            "api_key" => Some("key"),
            "custom" => Some("value"),
            "basic" => Some("password"),
            _ => None,
        };
        if let (Some(secret), Some(member)) = (secret, member) {
            auth.insert(member.into(), json!(secret));
        }
        if let Some(h) = &args.auth_header {
            auth.insert("header".into(), json!(h));
        }
        if let Some(u) = &args.auth_username {
            auth.insert("username".into(), json!(u));
        }
        entry.insert("auth".into(), Value::Object(auth));
    } else if args.auth_secret_env.is_some()
        || args.auth_secret_stdin
        || args.auth_header.is_some()
        || args.auth_username.is_some()
    {
        return Err(CliError(
            "--auth-secret-env, --auth-secret-stdin, --auth-header and --auth-username need \
             --auth TYPE (bearer, oauth, api_key, basic or custom)"
                .into(),
        ));
    }
    if let Some(body) = &args.request_body {
        entry.insert("requestBody".into(), json!(body));
    }
    if let Some(path) = &args.request_body_file {
        let body = if path == "-" {
            read_stdin("request body")?
        } else {
            std::fs::read_to_string(path)
                .map_err(|e| CliError(format!("--request-body-file: cannot read {path}: {e}")))?
        };
        entry.insert("requestBody".into(), json!(body));
    }
    if let Some(ms) = args.timeout_ms {
        entry.insert("timeoutMs".into(), json!(ms));
    }
    if let Some(f) = &args.schedule {
        entry.insert("schedule".into(), json!({ "frequency": f }));
    }
    if let Some(n) = args.interval_seconds {
        entry.insert("schedule".into(), json!({ "intervalSeconds": n }));
    }
    if !args.ignore_paths.is_empty() {
        entry.insert("ignorePaths".into(), json!(args.ignore_paths));
    }
    let mut identity = serde_json::Map::new();
    for rule in &args.identity_keys {
        let Some((pattern, member)) = rule.rsplit_once('=') else {
            return Err(CliError(format!(
                "--identity-key {rule:?}: write it as PATTERN=MEMBER (e.g. --identity-key '$.commits=sha')"
            )));
        };
        identity.insert(pattern.to_owned(), json!(member));
    }
    if !identity.is_empty() {
        entry.insert("identityKeys".into(), Value::Object(identity));
    }
    if args.follow_redirects {
        entry.insert("followRedirects".into(), json!(true));
    }
    if let Some(n) = args.retries {
        entry.insert("retries".into(), json!(n));
    }
    Ok(Value::Object(entry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        add: AddArgs,
    }

    fn entry(args: &[&str], stdin: &str) -> Result<Value, CliError> {
        let cli = Cli::try_parse_from(std::iter::once("add").chain(args.iter().copied()))
            .map_err(|e| CliError(e.to_string()))?;
        let env = |name: &str| (name == "TOKEN_VAR").then(|| "s3cr3t-token".to_owned());
        add_entry(&cli.add, &env, &mut stdin.as_bytes())
    }

    #[test]
    fn every_flag_becomes_its_create_field() -> Result<(), CliError> {
        let e = entry(
            &[
                "--name",
                "users",
                "--url",
                "https://api.example.com/u",
                "--method",
                "post",
                "--environment",
                "staging",
                "--description",
                "d",
                "--tag",
                "a",
                "--tag",
                "b",
                "--header",
                "Accept: application/json",
                "--header-env",
                "X-Key=TOKEN_VAR",
                "--auth",
                "bearer",
                "--auth-secret-env",
                "TOKEN_VAR",
                "--request-body",
                "{}",
                "--content-type",
                "text/plain",
                "--diff-mode",
                "full",
                "--timeout-ms",
                "5000",
                "--interval-seconds",
                "300",
                "--ignore-path",
                "$.meta",
                "--identity-key",
                "$.commits=sha",
                "--follow-redirects",
                "--retries",
                "2",
            ],
            "",
        )?;
        assert_eq!(
            e,
            json!({
                "name": "users", "url": "https://api.example.com/u", "method": "post",
                "environment": "staging", "description": "d", "tags": ["a", "b"],
                "headers": {"Accept": "application/json", "X-Key": "s3cr3t-token"},
                "auth": {"type": "bearer", "token": "s3cr3t-token"}, "requestBody": "{}",
                "contentType": "text/plain", "diffMode": "full", "timeoutMs": 5000,
                "schedule": {"intervalSeconds": 300}, "ignorePaths": ["$.meta"],
                "identityKeys": {"$.commits": "sha"}, "followRedirects": true, "retries": 2
            })
        );
        // Each secret member by type, from stdin too.
        let e = entry(
            &[
                "--name",
                "n",
                "--url",
                "u",
                "--auth",
                "basic",
                "--auth-username",
                "ada",
                "--auth-secret-stdin",
                "--schedule",
                "daily",
            ],
            "pw\n",
        )?;
        assert_eq!(
            e["auth"],
            json!({"type": "basic", "password": "pw", "username": "ada"})
        );
        assert_eq!(e["schedule"], json!({"frequency": "daily"}));
        let e = entry(
            &[
                "--name",
                "n",
                "--url",
                "u",
                "--auth",
                "api_key",
                "--auth-header",
                "X-K",
                "--auth-secret-env",
                "TOKEN_VAR",
            ],
            "",
        )?;
        assert_eq!(
            e["auth"],
            json!({"type": "api_key", "key": "s3cr3t-token", "header": "X-K"})
        );
        let e = entry(&["--name", "n", "--url", "u"], "")?;
        assert_eq!(e, json!({"name": "n", "url": "u"}));
        Ok(())
    }

    #[test]
    fn malformed_flags_and_missing_variables_are_named() {
        let err = |args: &[&str], stdin: &str| entry(args, stdin).err().map(|e| e.0);
        fn with<'a>(more: &[&'a str]) -> Vec<&'a str> {
            [&["--name", "n", "--url", "u"][..], more].concat()
        }
        let e = err(
            &with(&["--auth", "bearer", "--auth-secret-env", "NOPE"]),
            "",
        );
        assert_eq!(
            e.as_deref(),
            Some("--auth-secret-env: the environment variable NOPE is not set; export it first")
        );
        let e = err(&with(&["--header", "no colon"]), "");
        assert!(
            e.is_some_and(|e| e.starts_with("--header \"no colon\": write it as 'Name: value'"))
        );
        let e = err(&with(&["--header-env", "X-Key"]), "");
        assert!(e.is_some_and(|e| e.starts_with("--header-env \"X-Key\": write it as NAME=VAR")));
        let e = err(&with(&["--identity-key", "$.a"]), "");
        assert!(
            e.is_some_and(|e| e.starts_with("--identity-key \"$.a\": write it as PATTERN=MEMBER"))
        );
        let e = err(&with(&["--auth-secret-env", "TOKEN_VAR"]), "");
        assert!(e.is_some_and(|e| {
            e.ends_with("need --auth TYPE (bearer, oauth, api_key, basic or custom)")
        }));
        let e = err(
            &with(&[
                "--auth",
                "bearer",
                "--auth-secret-stdin",
                "--request-body-file",
                "-",
            ]),
            "x",
        );
        assert!(e.is_some_and(|e| e.starts_with("request body: stdin is already read")));
        // clap refuses a frequency and an interval together.
        assert!(
            err(
                &with(&["--schedule", "daily", "--interval-seconds", "60"]),
                ""
            )
            .is_some()
        );
    }
}
