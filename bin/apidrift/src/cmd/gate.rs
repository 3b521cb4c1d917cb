//! Shared by `apidrift diff` and `apidrift validate` (D16): reading inputs (files or `-`), the
//! `--fail-on` threshold and the four output formats (`text`, `json`, `markdown`, `github`).

use super::CliError;
use apidrift_diff::{Report, Severity};
use std::io::{IsTerminal, Read, Write};

/// The `--fail-on` threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Breaking,
    Warning,
    Info,
    Never,
}

impl FailOn {
    pub fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Breaking => Some(Severity::Breaking),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

/// The `--format` of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Github,
}

/// Reads a file argument (`-` for stdin) as UTF-8 text.
pub fn read_input(arg: &str) -> Result<String, CliError> {
    let lower = arg.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return super::snapshot::fetch_document(arg);
    }
    let bytes = if arg == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| CliError(format!("cannot read standard input: {e}")))?;
        buf
    } else {
        std::fs::read(arg).map_err(|e| CliError(format!("cannot read {arg}: {}", io_reason(&e))))?
    };
    let mut text = String::from_utf8(bytes).map_err(|e| {
        CliError(format!(
            "{}: not UTF-8 text (byte {})",
            name(arg),
            e.utf8_error().valid_up_to()
        ))
    })?;
    if text.starts_with('\u{feff}') {
        text.drain(..3);
    }
    Ok(text)
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::IsADirectory => "is a directory".into(),
        _ => e.to_string(),
    }
}

/// How an input is named in messages.
pub fn name(arg: &str) -> &str {
    if arg == "-" { "standard input" } else { arg }
}

/// Prints the report in the chosen format and returns the exit code (0, or 1 when a change
/// reaches the threshold).
pub fn finish(
    report: &Report,
    format: Format,
    fail_on: FailOn,
) -> Result<std::process::ExitCode, CliError> {
    let text = match format {
        Format::Json => {
            let mut t = report.to_json();
            t.push('\n');
            t
        }
        Format::Text => text(
            report,
            crate::color::enabled(crate::color::choice(), std::io::stdout().is_terminal()),
        ),
        Format::Markdown => markdown(report),
        Format::Github => github(report),
    };
    let mut out = std::io::stdout().lock();
    // A closed pipe (e.g. `| head`) is not an error of the diff.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Ok(if report.reaches(fail_on.threshold()) {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    })
}

fn summary(report: &Report) -> String {
    let c = &report.counts;
    if c.change_count == 0 {
        return "no changes".into();
    }
    format!(
        "{} change{}: {} breaking, {} warning, {} info",
        c.change_count,
        if c.change_count == 1 { "" } else { "s" },
        c.breaking_count,
        c.warning_count,
        c.info_count
    )
}

fn values(report: &Report, i: usize) -> Option<String> {
    match (report.value_text(i, true), report.value_text(i, false)) {
        (None, None) => None,
        (Some(a), None) => Some(format!("was {}", short(&a))),
        (None, Some(b)) => Some(format!("now {}", short(&b))),
        (Some(a), Some(b)) => Some(format!("{} -> {}", short(&a), short(&b))),
    }
}

fn short(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(77).collect();
        t.push_str("...");
        t
    }
}

fn text(report: &Report, colour: bool) -> String {
    let mut out = String::new();
    for (i, c) in report.changes.iter().enumerate() {
        let (label, code) = match c.severity {
            Severity::Breaking => ("BREAKING", "31"),
            Severity::Warning => ("WARNING ", "33"),
            Severity::Info => ("INFO    ", "36"),
            // A severity added to the model after this version: plain label, no colour.
            _ => ("OTHER   ", "0"),
        };
        if colour {
            out.push_str(&format!("\x1b[1;{code}m{label}\x1b[0m"));
        } else {
            out.push_str(label);
        }
        out.push_str(&format!("  {}  {}  {}", c.path, c.change_type, c.message));
        if let Some(v) = values(report, i) {
            out.push_str(&format!(" ({v})"));
        }
        out.push('\n');
    }
    out.push_str(&summary(report));
    out.push('\n');
    out
}

fn cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

fn code(s: &str) -> String {
    if s.is_empty() {
        return String::new();
    }
    let s = cell(&short(s));
    if s.contains('`') {
        format!("`` {s} ``")
    } else {
        format!("`{s}`")
    }
}

fn markdown(report: &Report) -> String {
    let mut out = format!("### apidrift: {}\n", summary(report));
    if report.changes.is_empty() {
        return out;
    }
    out.push_str("\n| Severity | Type | Path | Message | Old | New |\n|---|---|---|---|---|---|\n");
    for (i, c) in report.changes.iter().enumerate() {
        let icon = match c.severity {
            Severity::Breaking => "🔴 breaking",
            Severity::Warning => "🟠 warning",
            Severity::Info => "🔵 info",
            _ => "⚪ other",
        };
        out.push_str(&format!(
            "| {icon} | `{}` | {} | {} | {} | {} |\n",
            c.change_type,
            code(&c.path),
            cell(&c.message),
            code(&report.value_text(i, true).unwrap_or_default()),
            code(&report.value_text(i, false).unwrap_or_default()),
        ));
    }
    out
}

/// Escapes the data of a workflow command.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property of a workflow command.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn github(report: &Report) -> String {
    let mut out = String::new();
    for (i, c) in report.changes.iter().enumerate() {
        let level = match c.severity {
            Severity::Breaking => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
            _ => "notice",
        };
        let mut message = format!("{}: {}", c.path, c.message);
        if let Some(v) = values(report, i) {
            message.push_str(&format!(" ({v})"));
        }
        out.push_str(&format!(
            "::{level} title={}::{}\n",
            escape_property(&format!("apidrift {} {}", c.severity, c.change_type)),
            escape_data(&message)
        ));
    }
    out.push_str(&format!("apidrift: {}\n", summary(report)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_commands_are_escaped() {
        assert_eq!(escape_data("a%b\nc"), "a%25b%0Ac");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
        assert_eq!(cell("a|b"), "a\\|b");
        assert_eq!(code("a`b"), "`` a`b ``");
    }
}
