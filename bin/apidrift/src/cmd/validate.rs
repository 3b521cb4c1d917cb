//! `apidrift validate --spec FILE --operation "GET /path" [--status N] [--media-type TYPE]
//! RESPONSE...` (D10, D16, D21): checks responses (snapshot files or bare JSON documents, `-` for
//! standard input) against the operation's response schema. The document is parsed once for all
//! of them; each response is checked against the schema of its media type (`--media-type`, else
//! the snapshot's content type, else the default one). Exit 0 when all are valid, 1 when one
//! violates the contract, 2 on bad input (nothing is checked then).

use super::CliError;
use super::gate::{FailOn, Format, finish, name, read_input};
use apidrift_diff::contract::{Contract, ContractValidator, OpenApiDocument};
use apidrift_diff::{Body, IgnorePattern, Options, Report, Rule, read_document};
use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The OpenAPI 3.0, 3.1 or 3.2 document (JSON or YAML).
    #[arg(long, value_name = "FILE")]
    pub spec: String,
    /// The operation, e.g. "GET /users/{id}".
    #[arg(long)]
    pub operation: String,
    /// The response status whose schema applies (default: 200, else the first 2xx).
    #[arg(long)]
    pub status: Option<u16>,
    /// The media type whose schema applies to every response (default: each snapshot's
    /// content type, else application/json, else the first JSON media type).
    #[arg(long, value_name = "TYPE")]
    pub media_type: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Exit 1 when a change of this severity or above is found.
    #[arg(long, value_enum, default_value = "breaking")]
    pub fail_on: FailOn,
    /// Drop violations at this path and below. Repeatable.
    #[arg(long = "ignore", value_name = "PATTERN")]
    pub ignore: Vec<String>,
    /// The responses: snapshot files, JSON files, or `-` for standard input.
    #[arg(required = true, value_name = "RESPONSE")]
    pub responses: Vec<String>,
}

pub fn run(args: ValidateArgs) -> Result<ExitCode, CliError> {
    let stdin_uses =
        usize::from(args.spec == "-") + args.responses.iter().filter(|r| *r == "-").count();
    if stdin_uses > 1 {
        return Err(CliError(
            "standard input (`-`) can be read once: pass the other inputs as files".into(),
        ));
    }
    let ignore = args
        .ignore
        .iter()
        .map(|p| IgnorePattern::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError(e.to_string()))?;
    let mut options = Options::default();
    options.ignore = ignore;
    let spec = super::bundle::read_spec(&args.spec)?;
    let in_spec = |e: apidrift_diff::contract::ContractError| {
        CliError(spec.explain(format!("{}: {e}", name(&args.spec))))
    };
    let document = OpenApiDocument::parse(spec.text.as_bytes()).map_err(in_spec)?;
    // 3.0 forms in a 3.1 document are read with their 3.0 meaning: say where, once each.
    for reading in document.lenient_readings() {
        eprintln!("apidrift: note: {}: {reading}", name(&args.spec));
    }
    let contract = document
        .contract(&args.operation, args.status, args.media_type.as_deref())
        .map_err(in_spec)?;
    drop(document);

    // Every response is read before any is checked: bad input checks nothing.
    let mut texts = Vec::with_capacity(args.responses.len());
    for arg in &args.responses {
        texts.push(read_input(arg)?);
    }
    let mut inputs = Vec::with_capacity(texts.len());
    for (arg, text) in args.responses.iter().zip(&texts) {
        inputs.push(read_document(text).map_err(|e| CliError(format!("{}: {e}", name(arg))))?);
    }

    let mut validators: HashMap<Option<String>, ContractValidator> = HashMap::new();
    let mut results: Vec<(&str, Option<String>, Report)> = Vec::with_capacity(inputs.len());
    for (arg, input) in args.responses.iter().zip(&inputs) {
        // The media type: the flag (already the contract's default), else the snapshot's.
        let content_type = match &args.media_type {
            Some(_) => None,
            None => input.headers.as_ref().and_then(|h| {
                h.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                    .map(|(_, v)| v.as_str())
            }),
        };
        let chosen = content_type.and_then(|ct| contract.select_media_type(ct));
        let validator = match validators.entry(chosen.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(
                contract
                    .validator_for(chosen.as_deref())
                    .map_err(|e| CliError(e.to_string()))?,
            ),
        };
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
            // Text, absent, or a kind of body a later version of the engine knows.
            _ => {
                report.extend(Report::from_changes(vec![violation(
                    "$",
                    "the response body is not JSON".into(),
                )]));
            }
        }
        results.push((arg, validator.media_type().map(str::to_owned), report));
    }
    if let [(_, _, report)] = results.as_slice() {
        return finish(report, args.format, args.fail_on);
    }
    print_all(&results, &contract, args.format, args.fail_on)
}

/// Several responses: each under its name, then one line for all.
fn print_all(
    results: &[(&str, Option<String>, Report)],
    contract: &Contract,
    format: Format,
    fail_on: FailOn,
) -> Result<ExitCode, CliError> {
    let threshold = fail_on.threshold();
    let failing = results
        .iter()
        .filter(|(_, _, r)| r.reaches(threshold))
        .count();
    let code = if failing > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    if let Format::Json = format {
        let mut out = String::from("{\"responses\":[");
        let mut totals = [0u64; 4];
        for (i, (arg, media, report)) in results.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let c = &report.counts;
            for (t, n) in totals.iter_mut().zip([
                c.breaking_count,
                c.warning_count,
                c.info_count,
                c.change_count,
            ]) {
                *t += u64::from(n);
            }
            out.push_str("{\"response\":");
            out.push_str(&json_string(name(arg)));
            if let Some(m) = media {
                out.push_str(",\"mediaType\":");
                out.push_str(&json_string(m));
            }
            out.push(',');
            // The report's own document, members after its opening brace.
            out.push_str(report.to_json().get(1..).unwrap_or("}"));
        }
        out.push_str(&format!(
            "],\"operation\":{},\"breakingCount\":{},\"warningCount\":{},\"infoCount\":{},\"changeCount\":{}}}\n",
            json_string(&contract.operation()),
            totals[0],
            totals[1],
            totals[2],
            totals[3]
        ));
        let mut stdout = std::io::stdout().lock();
        let _ = stdout
            .write_all(out.as_bytes())
            .and_then(|()| stdout.flush());
        return Ok(code);
    }
    for (arg, _, report) in results {
        let heading = match format {
            Format::Markdown => format!("#### {}\n", name(arg)),
            _ => format!("{}:\n", name(arg)),
        };
        {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout
                .write_all(heading.as_bytes())
                .and_then(|()| stdout.flush());
        }
        finish(report, format, fail_on)?;
    }
    let line = format!(
        "{} responses checked against {}: {failing} failing\n",
        results.len(),
        contract.operation()
    );
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.flush());
    Ok(code)
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
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
