//! `apidrift diff BASELINE CURRENT` (D16): the offline CI gate. Each argument is a snapshot file
//! or a bare JSON document, or `-` for standard input (at most one). Exit 0 when no change reaches
//! `--fail-on`, 1 when one does, 2 on bad input.

use super::CliError;
use super::gate::{FailOn, Format, annotation_file, finish_for, name, read_input};
use apidrift_diff::{DiffMode, IdentityRule, IgnorePattern, Options, OverrideRule, read_document};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The baseline: a snapshot file, a JSON file, or `-` for standard input.
    pub baseline: String,
    /// The current response: a snapshot file, a JSON file, or `-` for standard input.
    pub current: String,
    /// `schema` ignores leaf values and merges array elements; `full` compares values too and
    /// pairs keyed array items by identity.
    #[arg(long, value_enum, default_value = "schema")]
    pub mode: Mode,
    /// Exit 1 when a change of this severity or above is found.
    #[arg(long, value_enum, default_value = "breaking")]
    pub fail_on: FailOn,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Drop changes at this path and below (`$.meta.requestId`, `$.items[].updatedAt`,
    /// `$..traceId`, `status`, `headers.etag`). Repeatable. In full mode, the volatile paths a
    /// baseline snapshot learned from several samples are dropped too.
    #[arg(long = "ignore", value_name = "PATTERN")]
    pub ignore: Vec<String>,
    /// Full mode: pair the items of the arrays matching PATTERN by KEY instead of the default
    /// keys (`id`, `uuid`, `key`, `slug`, `name`, `code`, `_id`), e.g. `$.commits=sha` or
    /// `$..lines.data=id`. Items whose KEY values are not unique strings or numbers are paired by
    /// position. Repeatable; the first matching rule wins.
    #[arg(long = "identity-key", value_name = "PATTERN=KEY")]
    pub identity_key: Vec<String>,
    /// Give the changes of rule RULE (a rule id of docs/severity.md, e.g. `field-added`) the
    /// severity LEVEL (`info`, `warning`, `breaking`, or `ignore` to drop them), at PATH and below
    /// it when given (ignore-pattern syntax), e.g. `field-added=breaking` or
    /// `value-changed=$.meta=ignore`. Repeatable; the first matching one wins. The summary and
    /// the exit code follow.
    #[arg(long = "severity", value_name = "RULE[=PATH]=LEVEL")]
    pub severity: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Schema,
    Full,
}

pub fn run(args: DiffArgs) -> Result<ExitCode, CliError> {
    if args.baseline == "-" && args.current == "-" {
        return Err(CliError(
            "only one of BASELINE and CURRENT can be `-` (standard input)".into(),
        ));
    }
    let ignore = args
        .ignore
        .iter()
        .map(|p| IgnorePattern::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError(e.to_string()))?;
    let identity_rules = args
        .identity_key
        .iter()
        .map(|spec| IdentityRule::parse_spec(spec))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError(e.to_string()))?;
    let severity_overrides = args
        .severity
        .iter()
        .map(|spec| OverrideRule::parse_spec(spec))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError(e.to_string()))?;
    let mut options = Options::with_mode(match args.mode {
        Mode::Schema => DiffMode::Schema,
        Mode::Full => DiffMode::Full,
    });
    options.ignore = ignore;
    options.identity_rules = identity_rules;
    options.severity_overrides = severity_overrides;
    let old_text = read_input(&args.baseline)?;
    let new_text = read_input(&args.current)?;
    let old =
        read_document(&old_text).map_err(|e| CliError(format!("{}: {e}", name(&args.baseline))))?;
    let new =
        read_document(&new_text).map_err(|e| CliError(format!("{}: {e}", name(&args.current))))?;
    // A baseline snapshot taken from several samples (`apidrift snapshot --samples`) carries the
    // leaf paths that changed between them: full mode ignores them, as checks do.
    if options.mode == DiffMode::Full {
        for path in &old.volatile_paths {
            options.ignore.push(IgnorePattern::parse(path).map_err(|e| {
                CliError(format!(
                    "{}: volatilePaths: {e}; take the snapshot again",
                    name(&args.baseline)
                ))
            })?);
        }
    }
    let report = apidrift_diff::diff(&old, &new, &options).map_err(|e| CliError(e.to_string()))?;
    let file = annotation_file(&args.baseline, &args.current);
    let code = finish_for(&report, args.format, args.fail_on, file);
    // The documents are large and about to be freed by the exit: skip the drop.
    std::mem::forget(old);
    std::mem::forget(new);
    code
}
