//! `apidrift snapshot URL [-H 'Name: value']… [-o FILE]` (D16): fetches a URL through the same
//! SSRF-safe client as checks (the allow-list `APIDRIFT_OUTBOUND__ALLOW_CIDRS` applies) and
//! writes a snapshot file `{"apidriftSnapshot":1,"status":…,"headers":{…},"body":…}` that
//! `apidrift diff` reads. A JSON body is copied verbatim (numbers keep their spelling); any other
//! body goes to `bodyText` with `body: null`.
//!
//! [`fetch_document`] is the same fetch for the URL arguments of `apidrift diff`.

use super::CliError;
use crate::config::{self, GlobalArgs};
use apidrift_model::net::AllowList;
use apidrift_model::validate::ExtraHeader;
use apidrift_model::{HttpMethod, SecretString};
use apidrift_monitor::{Client, FetchRequest, FetchResponse};
use serde_json::{Map, Value};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct SnapshotArgs {
    /// The http(s) URL to fetch.
    #[arg(value_name = "URL")]
    url: String,
    /// A request header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    /// Where to write the snapshot (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// The request method.
    #[arg(long, value_name = "METHOD", default_value = "GET", value_parser = parse_method)]
    method: HttpMethod,
    /// The whole exchange's deadline in milliseconds (1 to 60000).
    #[arg(long, value_name = "MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u32).range(1..=60_000))]
    timeout_ms: u32,
    /// Follow up to 5 redirects (the outbound address rules apply at every hop).
    #[arg(long)]
    follow_redirects: bool,
}

fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| "must be `Name: value`".to_owned())?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_!#$%&'*+.^`|~".contains(&b))
    {
        return Err(format!("{name:?} is not a valid header name"));
    }
    Ok((name.to_owned(), value.trim().to_owned()))
}

fn parse_method(text: &str) -> Result<HttpMethod, String> {
    HttpMethod::read(text).map_err(|e| e.to_string())
}

/// The outbound client of the CLI: the allow-list from the environment or the config file.
fn client(allow: AllowList) -> Result<Client, CliError> {
    Client::new(allow).map_err(|e| CliError(e.to_string()))
}

async fn fetch(client: &Client, request: &FetchRequest) -> Result<FetchResponse, CliError> {
    client
        .fetch(request)
        .await
        .map_err(|e| CliError(format!("{}: {e}", request.url)))
}

/// The snapshot file text of a response.
pub fn snapshot_text(response: &FetchResponse) -> Result<String, CliError> {
    let mut headers = Map::new();
    for (name, value) in &response.headers {
        match headers.get_mut(name) {
            Some(Value::String(first)) => {
                let joined = format!("{first}, {value}");
                *first = joined;
            }
            _ => {
                headers.insert(name.clone(), Value::String(value.clone()));
            }
        }
    }
    let headers = serde_json::to_string(&Value::Object(headers))
        .map_err(|e| CliError(format!("cannot encode headers: {e}")))?;
    let is_json = response
        .content_type()
        .is_some_and(apidrift_diff::is_json_media_type);
    let text = std::str::from_utf8(&response.body).ok();
    let body = match text {
        // Verbatim: the diff engine keeps numbers exactly as spelled.
        Some(t) if is_json && apidrift_diff::parse(t).is_ok() => format!("\"body\":{}", t.trim()),
        _ => {
            let lossy = String::from_utf8_lossy(&response.body);
            let encoded = serde_json::to_string(&Value::String(lossy.into_owned()))
                .map_err(|e| CliError(format!("cannot encode the body: {e}")))?;
            format!("\"body\":null,\"bodyText\":{encoded}")
        }
    };
    Ok(format!(
        "{{\"apidriftSnapshot\":1,\"status\":{},\"headers\":{headers},{body}}}\n",
        response.status
    ))
}

/// Fetches an http(s) argument of `apidrift diff` as a snapshot document. The allow-list comes
/// from `APIDRIFT_OUTBOUND__ALLOW_CIDRS`.
pub fn fetch_document(url: &str) -> Result<String, CliError> {
    let allow =
        AllowList::parse(&std::env::var("APIDRIFT_OUTBOUND__ALLOW_CIDRS").unwrap_or_default())
            .map_err(|e| CliError(format!("APIDRIFT_OUTBOUND__ALLOW_CIDRS: {e}")))?;
    let client = client(allow)?;
    let url = client
        .check_url(url)
        .map_err(|e| CliError(format!("{url}: {e}")))?;
    crate::db::block_on(async {
        let response = fetch(&client, &FetchRequest::get(url)).await?;
        snapshot_text(&response)
    })?
}

pub fn run(global: &GlobalArgs, args: SnapshotArgs) -> Result<ExitCode, CliError> {
    let settings = config::load_from_process(global)?;
    let client = client(crate::db::allow_list(&settings)?)?;
    let url = client
        .check_url(&args.url)
        .map_err(|e| CliError(format!("{}: {e}", args.url)))?;
    let mut request = FetchRequest::get(url);
    request.method = args.method;
    request.timeout = Duration::from_millis(u64::from(args.timeout_ms));
    request.follow_redirects = args.follow_redirects;
    request.headers = args
        .headers
        .into_iter()
        .map(|(name, value)| ExtraHeader {
            name,
            value: SecretString::new(value),
        })
        .collect();
    let text = crate::db::block_on(async {
        let response = fetch(&client, &request).await?;
        snapshot_text(&response)
    })??;
    match args.output {
        Some(path) => std::fs::write(&path, text)
            .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
