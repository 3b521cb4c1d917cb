//! `apidrift snapshot URL [-H 'Name: value']… [-o FILE]` (D16): fetches a URL through the same
//! SSRF-safe client as checks (the allow-list `APIDRIFT_OUTBOUND__ALLOW_CIDRS` applies) and
//! writes a snapshot file `{"apidriftSnapshot":1,"status":…,"headers":{…},"body":…}` that
//! `apidrift diff` reads. A JSON body is copied verbatim (numbers keep their spelling); any other
//! body goes to `bodyText` with `body: null`. `--samples N` fetches N times and adds the leaf
//! paths whose values changed between the samples as `"volatilePaths"`, which `apidrift diff
//! --mode full` ignores when the file is its baseline.
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
    /// Fetch N times (1 to 5) and record the fields whose values changed between the samples
    /// (timestamps, request ids) as `volatilePaths`; `diff --mode full` ignores them when this
    /// file is the baseline. The first sample is the one written.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u8).range(1..=5))]
    samples: u8,
    /// The pause between samples, in milliseconds (0 to 60000).
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(0..=60_000))]
    sample_interval_ms: u64,
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
    snapshot_with(response, None)
}

/// The leaf paths whose values differ between the samples (the first is the snapshot). Samples
/// that differ in status, kind of body or shape are an error naming the sample and the path,
/// never a value.
fn learn_volatile(samples: &[FetchResponse]) -> Result<Vec<String>, CliError> {
    let retake = "take the snapshot again when the endpoint answers steadily";
    let Some(first) = samples.first() else {
        return Ok(Vec::new());
    };
    let mut bodies = Vec::with_capacity(samples.len());
    for (i, sample) in samples.iter().enumerate() {
        if sample.status != first.status {
            return Err(CliError(format!(
                "sample {} answered HTTP {}, sample 1 HTTP {}; {retake}",
                i + 1,
                sample.status,
                first.status
            )));
        }
        let json = sample
            .content_type()
            .is_some_and(apidrift_diff::is_json_media_type)
            .then(|| std::str::from_utf8(&sample.body).ok())
            .flatten()
            .and_then(|t| apidrift_diff::parse(t).ok());
        match json {
            Some(j) => bodies.push(j),
            None => {
                return Err(CliError(format!(
                    "sample {} is not a JSON body: --samples learns volatile fields of JSON \
                     responses only; take the snapshot without it",
                    i + 1
                )));
            }
        }
    }
    apidrift_diff::volatile_paths(&bodies, &apidrift_diff::Options::default())
        .map_err(|e| CliError(e.to_string()))
}

fn snapshot_with(
    response: &FetchResponse,
    volatile: Option<&[String]>,
) -> Result<String, CliError> {
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
    let volatile = match volatile {
        Some(paths) => format!(
            ",\"volatilePaths\":{}",
            serde_json::to_string(paths)
                .map_err(|e| CliError(format!("cannot encode the volatile paths: {e}")))?
        ),
        None => String::new(),
    };
    Ok(format!(
        "{{\"apidriftSnapshot\":1,\"status\":{},\"headers\":{headers},{body}{volatile}}}\n",
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
    let client = crate::db::outbound_client(&settings, crate::db::allow_list(&settings)?)?;
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
    let (samples, pause) = (args.samples, Duration::from_millis(args.sample_interval_ms));
    let text = crate::db::block_on(async {
        let mut taken = Vec::with_capacity(usize::from(samples));
        for i in 0..samples {
            if i > 0 {
                tokio::time::sleep(pause).await;
            }
            taken.push(fetch(&client, &request).await?);
        }
        let Some(first) = taken.first() else {
            return Err(CliError("no response was taken".into()));
        };
        if samples == 1 {
            snapshot_text(first)
        } else {
            snapshot_with(first, Some(&learn_volatile(&taken)?))
        }
    })??;
    match args.output {
        Some(path) => std::fs::write(&path, text)
            .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
