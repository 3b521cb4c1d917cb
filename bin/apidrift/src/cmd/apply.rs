//! `apidrift apply -f FILE [--prune] [--dry-run] [--server URL]` and `apidrift export` (monitors
//! as code). `apply` reads a monitors file (YAML or JSON), fills its `${NAME}` placeholders from
//! this process's environment before anything is sent, and runs the apply use case: on the
//! database as the operator, or with `--server` through `POST /api/v1/apply` with the token in
//! `APIDRIFT_TOKEN`. `export` writes the workspace's keyed endpoints as a monitors file, secrets
//! only as placeholders.

use super::CliError;
use super::baseline::{parse_id, the_workspace};
use crate::config::{self, GlobalArgs};
use crate::db;
use apidrift_app::apply::{ApplyResult, substitute};
use apidrift_app::{Actor, ApplyPlan};
use apidrift_model::net::AllowList;
use apidrift_model::validate::Credential;
use apidrift_model::{HttpMethod, SecretString, Uuid};
use apidrift_monitor::{Client, FetchRequest};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The largest monitors file read.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// The deepest `[`/`{` nesting a YAML monitors file may have (the YAML parser's cost grows with
/// it; a monitors file needs a few levels).
const MAX_YAML_FLOW_DEPTH: usize = 64;

/// How long `--server` waits for the answer.
const SERVER_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// The monitors file (YAML or JSON; `-` reads stdin).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: PathBuf,
    /// Also delete the keyed endpoints the file does not name (never one without a key).
    #[arg(long)]
    prune: bool,
    /// Print the plan and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Apply through a running server (`https://apidrift.example.com`) with the API token in
    /// APIDRIFT_TOKEN, instead of on the database.
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// The workspace (on the database; default: the only one).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
    /// Print the answer as JSON (`{"plan": …, "applied": …}`) instead of lines.
    #[arg(long)]
    json: bool,
}

impl ApplyArgs {
    /// Whether the command goes to a server (no database is used).
    pub fn remote(&self) -> bool {
        self.server.is_some()
    }
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The workspace (default: the only one).
    #[arg(long, value_name = "ID", value_parser = parse_id, env = "APIDRIFT_WORKSPACE")]
    workspace: Option<Uuid>,
    /// Write the file here instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

/// `apidrift apply`: exit 0 after the plan is applied (or printed, with `--dry-run`); 2 for a
/// bad file, a missing variable, an invalid entry or a refusal of the server.
pub fn run(global: &GlobalArgs, args: ApplyArgs) -> Result<ExitCode, CliError> {
    let body = request_body(&args)?;
    let result = match &args.server {
        Some(server) => db::block_on(remote(server, &body))??,
        None => {
            let settings = config::load_from_process(global)?;
            db::block_on(async {
                let service = db::service(&settings, true).await?;
                let ws = the_workspace(&service, args.workspace).await?;
                service
                    .apply_monitors(&Actor::operator(ws), &body)
                    .await
                    .map_err(CliError::from)
            })??
        }
    };
    if args.json {
        super::print_json(&result)?;
    } else {
        print!("{}", render(&result));
    }
    Ok(ExitCode::SUCCESS)
}

/// The request of the apply use case: the file with its placeholders filled, and the flags.
fn request_body(args: &ApplyArgs) -> Result<Value, CliError> {
    let bytes = read_file(&args.file)?;
    let mut file =
        parse_file(&bytes).map_err(|e| CliError(format!("{}: {e}", shown(&args.file))))?;
    let Value::Object(map) = &file else {
        return Err(CliError(format!(
            "{}: a monitors file is an object with a list `endpoints`",
            shown(&args.file)
        )));
    };
    if let Some(k) = map.keys().find(|k| *k != "endpoints") {
        return Err(CliError(format!(
            "{}: {k}: not a field of a monitors file (only `endpoints`; use --prune and \
             --dry-run for the rest)",
            shown(&args.file)
        )));
    }
    let env = |name: &str| std::env::var(name).ok();
    substitute(&mut file, &env).map_err(|e| CliError(format!("{}: {e}", shown(&args.file))))?;
    let endpoints = file
        .get_mut("endpoints")
        .map(Value::take)
        .unwrap_or(Value::Null);
    Ok(json!({"endpoints": endpoints, "prune": args.prune, "dryRun": args.dry_run}))
}

fn shown(path: &Path) -> String {
    if path == Path::new("-") {
        "stdin".into()
    } else {
        path.display().to_string()
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, CliError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    let limit = MAX_FILE_BYTES + 1;
    let read = if path == Path::new("-") {
        std::io::stdin().take(limit).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(limit).read_to_end(&mut bytes))
    };
    read.map_err(|e| CliError(format!("cannot read {}: {e}", shown(path))))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(CliError(format!(
            "{}: larger than {MAX_FILE_BYTES} bytes; split the monitors into several workspaces",
            shown(path)
        )));
    }
    Ok(bytes)
}

/// A monitors file: JSON when it starts with `{`, else YAML (its flow nesting bounded first).
pub fn parse_file(bytes: &[u8]) -> Result<Value, String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON: {e}"));
    }
    if let Some(line) = too_deep(bytes, MAX_YAML_FLOW_DEPTH) {
        return Err(format!(
            "[ ] or {{ }} nested more than {MAX_YAML_FLOW_DEPTH} levels deep at line {line}"
        ));
    }
    serde_yaml_ng::from_slice::<Value>(bytes).map_err(|e| {
        let first = e.to_string();
        format!("not valid YAML: {}", first.lines().next().unwrap_or(""))
    })
}

/// The line (1-based) where `[`/`{` outside quotes and comments nest deeper than `max`. It
/// counts where YAML might not (a bracket inside a plain scalar), which only refuses a file that
/// opens more than `max` brackets it never closes.
fn too_deep(text: &[u8], max: usize) -> Option<usize> {
    let (mut depth, mut line, mut quote, mut comment) = (0usize, 1usize, None, false);
    let mut prev = b'\n';
    for &b in text {
        if b == b'\n' {
            line += 1;
            comment = false;
            // A quoted scalar may span lines only inside flow collections; reset otherwise.
            if depth == 0 {
                quote = None;
            }
        } else if comment {
        } else if let Some(q) = quote {
            if b == q && prev != b'\\' {
                quote = None;
            }
        } else {
            match b {
                b'"' | b'\'' => quote = Some(b),
                b'#' if prev.is_ascii_whitespace() => comment = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > max {
                        return Some(line);
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        prev = b;
    }
    None
}

/// `POST {server}/api/v1/apply` with the token of `APIDRIFT_TOKEN`.
async fn remote(server: &str, body: &Value) -> Result<ApplyResult, CliError> {
    let token = std::env::var("APIDRIFT_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            CliError(
                "--server needs an API token in APIDRIFT_TOKEN (scope endpoints:write, role admin \
                 or above)"
                    .into(),
            )
        })?;
    let base = server.trim_end_matches('/');
    let url = url::Url::parse(&format!("{base}/api/v1/apply"))
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| {
            CliError(format!(
                "--server: {server} is not an http or https URL (e.g. https://apidrift.example.com)"
            ))
        })?;
    // The operator names the server: any address is allowed (unlike monitored URLs).
    let allow = AllowList::parse("0.0.0.0/0,::/0").map_err(CliError)?;
    let client =
        Client::new(allow).map_err(|e| CliError(format!("cannot start the HTTP client: {e}")))?;
    let request = FetchRequest {
        method: HttpMethod::Post,
        credential: Credential::Bearer {
            token: SecretString::new(token.trim()),
        },
        body: Some(body.to_string().into_bytes()),
        content_type: Some("application/json".into()),
        timeout: SERVER_TIMEOUT,
        ..FetchRequest::get(url)
    };
    let answer = client
        .fetch(&request)
        .await
        .map_err(|e| CliError(format!("cannot reach {base}: {e}")))?;
    let parsed: Option<Value> = serde_json::from_slice(&answer.body).ok();
    if answer.status == 200 {
        let result = parsed
            .and_then(|v| result_of(&v))
            .ok_or_else(|| CliError(format!("{base} answered 200 without an apply result")))?;
        return Ok(result);
    }
    let error = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| "no error message".into());
    Err(CliError(format!(
        "the server answered {}: {error}",
        answer.status
    )))
}

/// An [`ApplyResult`] read back from the route's answer.
fn result_of(v: &Value) -> Option<ApplyResult> {
    let plan = v.get("plan")?;
    let strings = |name: &str| -> Option<Vec<String>> {
        plan.get(name)?
            .as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    let update = plan
        .get("update")?
        .as_array()?
        .iter()
        .map(|u| {
            Some(apidrift_app::PlannedUpdate {
                key: u.get("key")?.as_str()?.to_owned(),
                fields: u
                    .get("fields")?
                    .as_array()?
                    .iter()
                    .map(|f| f.as_str().map(str::to_owned))
                    .collect::<Option<_>>()?,
            })
        })
        .collect::<Option<_>>()?;
    Some(ApplyResult {
        plan: ApplyPlan {
            create: strings("create")?,
            update,
            delete: strings("delete")?,
            unchanged: u32::try_from(plan.get("unchanged")?.as_u64()?).ok()?,
        },
        applied: v.get("applied")?.as_bool()?,
    })
}

/// The plan as lines: one per created, updated and deleted key, then the totals.
pub fn render(result: &ApplyResult) -> String {
    let plan = &result.plan;
    let mut out = String::new();
    for key in &plan.create {
        out.push_str(&format!("create     {key}\n"));
    }
    for u in &plan.update {
        out.push_str(&format!("update     {} ({})\n", u.key, u.fields.join(", ")));
    }
    for key in &plan.delete {
        out.push_str(&format!("delete     {key}\n"));
    }
    let verb = if result.applied {
        "applied"
    } else {
        "dry run, nothing changed"
    };
    out.push_str(&format!(
        "{} to create, {} to update, {} to delete, {} unchanged ({verb})\n",
        plan.create.len(),
        plan.update.len(),
        plan.delete.len(),
        plan.unchanged
    ));
    out
}

/// `apidrift export`: the workspace's keyed endpoints as a YAML monitors file on stdout (or
/// `-o FILE`); endpoints without a key are left out with a warning on stderr, and the variables
/// the file's placeholders need are named on stderr.
pub fn export(global: &GlobalArgs, args: ExportArgs) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    let exported = db::block_on(async {
        let service = db::service(&settings, true).await?;
        let ws = the_workspace(&service, args.workspace).await?;
        service
            .export_monitors(&Actor::operator(ws))
            .await
            .map_err(CliError::from)
    })??;
    let text = serde_yaml_ng::to_string(&exported.file)
        .map_err(|e| CliError(format!("cannot write the monitors file: {e}")))?;
    let text = format!(
        "# apidrift monitors file: `apidrift apply -f FILE` makes a workspace match it.\n{text}"
    );
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))?,
        None => print!("{text}"),
    }
    for name in &exported.skipped {
        eprintln!(
            "apidrift: left out endpoint {name:?}: it has no key (set one with `apidrift endpoint \
             update ID --patch '{{\"key\": \"…\"}}'`)"
        );
    }
    if !exported.variables.is_empty() {
        eprintln!(
            "apidrift: set these variables before applying the file: {}",
            exported.variables.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_and_json_files_read_the_same() {
        let yaml = b"endpoints:\n  - key: users # the users\n    name: Users\n    url: https://a.example/u\n    tags: [a, b]\n";
        let json = br#" {"endpoints": [{"key": "users", "name": "Users", "url": "https://a.example/u", "tags": ["a", "b"]}]}"#;
        assert_eq!(parse_file(yaml), parse_file(json));
        assert!(parse_file(json).is_ok());
    }

    #[test]
    fn deep_yaml_flow_nesting_is_refused_before_parsing() {
        let bomb = "[".repeat(100_000);
        let err = parse_file(bomb.as_bytes()).err().unwrap_or_default();
        assert!(
            err.contains("nested more than 64 levels deep at line 1"),
            "{err}"
        );
        // Brackets in quotes and comments do not count.
        let fine = format!("endpoints: []\n# {bomb}\nx: \"{bomb}\"\n");
        assert!(parse_file(fine.as_bytes()).is_ok());
    }

    #[test]
    fn the_plan_prints_one_line_per_change() {
        let result = ApplyResult {
            plan: ApplyPlan {
                create: vec!["a".into()],
                update: vec![apidrift_app::PlannedUpdate {
                    key: "b".into(),
                    fields: vec!["name".into(), "auth".into()],
                }],
                delete: vec!["c".into()],
                unchanged: 4,
            },
            applied: false,
        };
        assert_eq!(
            render(&result),
            "create     a\nupdate     b (name, auth)\ndelete     c\n\
             1 to create, 1 to update, 1 to delete, 4 unchanged (dry run, nothing changed)\n"
        );
        let back = result_of(&serde_json::to_value(&result).unwrap_or_default());
        assert_eq!(back, Some(result));
    }
}
