//! `apidrift validate --spec FILE --operation "GET /path" [--status N] RESPONSE` (D10, D16):
//! checks a response (a snapshot file or a bare JSON document, `-` for standard input) against the
//! operation's response schema. Exit 0 when valid, 1 on a violation, 2 on bad input.

use super::CliError;
use super::gate::{FailOn, Format, finish, name, read_input};
use apidrift_diff::contract::Contract;
use apidrift_diff::{Body, IgnorePattern, Options, Report, Rule, read_document};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The OpenAPI 3.0 or 3.1 document (JSON or YAML).
    #[arg(long, value_name = "FILE")]
    pub spec: String,
    /// The operation, e.g. "GET /users/{id}".
    #[arg(long)]
    pub operation: String,
    /// The response status whose schema applies (default: 200, else the first 2xx).
    #[arg(long)]
    pub status: Option<u16>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Exit 1 when a change of this severity or above is found.
    #[arg(long, value_enum, default_value = "breaking")]
    pub fail_on: FailOn,
    /// Drop violations at this path and below. Repeatable.
    #[arg(long = "ignore", value_name = "PATTERN")]
    pub ignore: Vec<String>,
    /// The response: a snapshot file, a JSON file, or `-` for standard input.
    pub response: String,
}

pub fn run(args: ValidateArgs) -> Result<ExitCode, CliError> {
    if args.spec == "-" && args.response == "-" {
        return Err(CliError(
            "only one of --spec and RESPONSE can be `-` (standard input)".into(),
        ));
    }
    let ignore = args
        .ignore
        .iter()
        .map(|p| IgnorePattern::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError(e.to_string()))?;
    let options = Options {
        ignore,
        ..Options::default()
    };
    let spec = read_input(&args.spec)?;
    let contract = Contract::from_openapi(&spec, &args.operation, args.status)
        .map_err(|e| CliError(format!("{}: {e}", name(&args.spec))))?;
    let validator = contract.validator().map_err(|e| CliError(e.to_string()))?;
    let text = read_input(&args.response)?;
    let input =
        read_document(&text).map_err(|e| CliError(format!("{}: {e}", name(&args.response))))?;
    let mut report = Report::default();
    if let Some(status) = input.status
        && !status_matches(&contract.status, status)
        && !options.ignore.iter().any(|p| p.as_str() == "status")
    {
        report.extend(Report::from_changes(vec![violation(
            "status",
            format!("status {status} is not the contract's {}", contract.status),
        )]));
    }
    match &input.body {
        Body::Json(json) => report.extend(validator.check(&json.to_value(), &options)),
        Body::Text(_) | Body::Absent => {
            report.extend(Report::from_changes(vec![violation(
                "$",
                "the response body is not JSON".into(),
            )]));
        }
    }
    finish(&report, args.format, args.fail_on)
}

fn status_matches(key: &str, status: u16) -> bool {
    key == "default"
        || key == status.to_string()
        || (key.len() == 3
            && key[1..].eq_ignore_ascii_case("XX")
            && key[..1] == (status / 100).to_string())
}

fn violation(path: &str, message: String) -> apidrift_diff::DiffChange {
    let rule = Rule::ContractViolation;
    apidrift_diff::DiffChange {
        id: apidrift_diff::change_id(path, rule.change_type()),
        path: path.to_owned(),
        change_type: rule.change_type(),
        severity: rule.severity(),
        message,
        old_value: None,
        new_value: None,
        old_type: None,
        new_type: None,
    }
}
