//! Shared by `apidrift diff` and `apidrift validate` (D16): reading inputs (files or `-`), the
//! `--fail-on` threshold and the four output formats (`text`, `json`, `markdown`, `github`).

use super::CliError;
use apidrift_diff::{ChangeGroup, Report, Severity, group_changes};
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
    finish_for(report, format, fail_on, None)
}

/// As [`finish`]; `file` (an input that was a file) is named in GitHub annotations (`file=`).
pub fn finish_for(
    report: &Report,
    format: Format,
    fail_on: FailOn,
    file: Option<&str>,
) -> Result<std::process::ExitCode, CliError> {
    let colour = crate::color::enabled(crate::color::choice(), std::io::stdout().is_terminal());
    let text = render(report, format, file, colour);
    let mut out = std::io::stdout().lock();
    // A closed pipe (e.g. `| head`) is not an error of the diff.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Ok(if report.reaches(fail_on.threshold()) {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    })
}

/// The report in one format. `json` keeps one change per path (the wire form); the formats for
/// people show one row per group of changes that share a normalised path and a type.
pub fn render(report: &Report, format: Format, file: Option<&str>, colour: bool) -> String {
    match format {
        Format::Json => {
            let mut t = report.to_json();
            t.push('\n');
            t
        }
        Format::Text => text(report, colour),
        Format::Markdown => markdown(report),
        Format::Github => github(report, file),
    }
}

/// The file a GitHub annotation names: the current input when it is a file, else the baseline
/// when it is one (`-` and URLs are not files).
pub fn annotation_file<'a>(baseline: &'a str, current: &'a str) -> Option<&'a str> {
    let is_file = |arg: &str| {
        let lower = arg.to_ascii_lowercase();
        arg != "-" && !lower.starts_with("http://") && !lower.starts_with("https://")
    };
    [current, baseline].into_iter().find(|a| is_file(a))
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

/// A row for people: one group of changes.
struct Row<'r> {
    severity: Severity,
    change_type: apidrift_diff::ChangeType,
    /// The change's own path for a group of one, else the normalised path.
    path: &'r str,
    message: &'r str,
    /// `3 items: [id=1], [id=2], [id=3]` for a group of several.
    items: Option<String>,
    /// The values of a single body change.
    old: Option<String>,
    new: Option<String>,
}

const ITEMS_SHOWN: usize = 10;

fn rows<'r>(report: &'r Report, groups: &'r [ChangeGroup]) -> Vec<Row<'r>> {
    groups
        .iter()
        .filter_map(|g| {
            let first = *g.indices.first()?;
            let change = report.changes.get(first)?;
            if g.count() == 1 {
                let body = change.path.starts_with('$');
                return Some(Row {
                    severity: change.severity,
                    change_type: change.change_type,
                    path: &change.path,
                    message: &change.message,
                    items: None,
                    old: body.then(|| report.value_text(first, true)).flatten(),
                    new: body.then(|| report.value_text(first, false)).flatten(),
                });
            }
            let n = g.count();
            let items = if g.items.is_empty() {
                format!("{n} changes")
            } else {
                let mut t = format!("{} items: ", g.items.len());
                t.push_str(
                    &g.items
                        .iter()
                        .take(ITEMS_SHOWN)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", "),
                );
                if g.items.len() > ITEMS_SHOWN {
                    t.push_str(&format!(" and {} more", g.items.len() - ITEMS_SHOWN));
                }
                t
            };
            Some(Row {
                severity: g.severity,
                change_type: g.change_type,
                path: &g.path,
                message: &g.message,
                items: Some(items),
                old: None,
                new: None,
            })
        })
        .collect()
}

/// The values of a single change, after its message: `"a" → "b"`, or `value "a"` when only one
/// side has one (a lone `null` says nothing the message does not: it is left out).
fn values(row: &Row<'_>) -> Option<String> {
    match (&row.old, &row.new) {
        (Some(a), Some(b)) => Some(format!("{} → {}", short(a), short(b))),
        (Some(v), None) | (None, Some(v)) if v != "null" => Some(format!("value {}", short(v))),
        _ => None,
    }
}

/// The message with what follows it: the affected items of a group, or the values.
fn detail(row: &Row<'_>) -> String {
    let mut out = row.message.to_owned();
    for extra in [row.items.clone(), values(row)].into_iter().flatten() {
        out.push_str(" — ");
        out.push_str(&extra);
    }
    out
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
    let groups = group_changes(&report.changes);
    let mut out = String::new();
    for row in rows(report, &groups) {
        let (label, code) = match row.severity {
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
        out.push_str(&format!(
            "  {}  {}  {}\n",
            row.path,
            row.change_type,
            detail(&row)
        ));
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
    let groups = group_changes(&report.changes);
    for row in rows(report, &groups) {
        let icon = match row.severity {
            Severity::Breaking => "🔴 breaking",
            Severity::Warning => "🟠 warning",
            Severity::Info => "🔵 info",
            _ => "⚪ other",
        };
        let mut message = cell(row.message);
        if let Some(items) = &row.items {
            message.push_str(" — ");
            message.push_str(&cell(items));
        }
        out.push_str(&format!(
            "| {icon} | `{}` | {} | {} | {} | {} |\n",
            row.change_type,
            code(row.path),
            message,
            code(row.old.as_deref().unwrap_or_default()),
            code(row.new.as_deref().unwrap_or_default()),
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

fn github(report: &Report, file: Option<&str>) -> String {
    let groups = group_changes(&report.changes);
    let mut out = String::new();
    let file = file
        .map(|f| format!("file={},", escape_property(f)))
        .unwrap_or_default();
    for row in rows(report, &groups) {
        let level = match row.severity {
            Severity::Breaking => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
            _ => "notice",
        };
        let message = format!("{}: {}", row.path, detail(&row));
        out.push_str(&format!(
            "::{level} {file}title={}::{}\n",
            escape_property(&format!("apidrift {} {}", row.severity, row.change_type)),
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

    type R = Result<(), Box<dyn std::error::Error>>;

    fn full(a: &str, b: &str) -> Result<Report, Box<dyn std::error::Error>> {
        let options = apidrift_diff::Options::with_mode(apidrift_diff::DiffMode::Full);
        Ok(apidrift_diff::diff_bodies(
            &apidrift_diff::parse(a)?,
            &apidrift_diff::parse(b)?,
            &options,
        )?)
    }

    const A: &str = r#"{"u":[{"id":1,"e":"a"},{"id":2,"e":"b"},{"id":3,"e":"c"}],"email":"ada@example.com","gone":null,"n":"x"}"#;
    const B: &str = r#"{"u":[{"id":1},{"id":2},{"id":3}],"n":"y"}"#;

    #[test]
    fn text_groups_changes_and_says_each_thing_once() -> R {
        let report = full(A, B)?;
        assert_eq!(report.counts.change_count, 6);
        let out = render(&report, Format::Text, None, false);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            vec![
                "BREAKING  $.u[].e  removed  field removed (was a string) — 3 items: [id=1], [id=2], [id=3]",
                "BREAKING  $.email  removed  field removed (was a string) — value \"ada@example.com\"",
                "BREAKING  $.gone  removed  field removed (was null)",
                "INFO      $.n  changed  value changed — \"x\" → \"y\"",
                "6 changes: 5 breaking, 0 warning, 1 info",
            ]
        );
        let coloured = render(&report, Format::Text, None, true);
        assert!(coloured.contains("\x1b[1;31mBREAKING\x1b[0m"));
        Ok(())
    }

    #[test]
    fn long_groups_list_the_first_items() -> R {
        let items = |f: &dyn Fn(usize) -> String| {
            format!("[{}]", (0..14).map(f).collect::<Vec<_>>().join(","))
        };
        let a = items(&|i| format!(r#"{{"id":{i},"v":1}}"#));
        let b = items(&|i| format!(r#"{{"id":{i}}}"#));
        let out = render(&full(&a, &b)?, Format::Text, None, false);
        assert!(
            out.contains("— 14 items: [id=0], [id=1], [id=2], [id=3], [id=4], [id=5], [id=6], [id=7], [id=8], [id=9] and 4 more"),
            "{out}"
        );
        Ok(())
    }

    #[test]
    fn markdown_has_one_row_per_group() -> R {
        let out = render(&full(A, B)?, Format::Markdown, None, false);
        assert!(out.starts_with("### apidrift: 6 changes: 5 breaking, 0 warning, 1 info\n"));
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("| 🔴") || l.starts_with("| 🔵"))
            .collect();
        assert_eq!(rows.len(), 4, "{out}");
        assert_eq!(
            rows[0],
            "| 🔴 breaking | `removed` | `$.u[].e` | field removed (was a string) — 3 items: [id=1], [id=2], [id=3] |  |  |"
        );
        assert_eq!(
            rows[1],
            "| 🔴 breaking | `removed` | `$.email` | field removed (was a string) | `\"ada@example.com\"` |  |"
        );
        Ok(())
    }

    #[test]
    fn github_annotations_group_and_name_the_file() -> R {
        let report = full(A, B)?;
        let out = render(&report, Format::Github, Some("api/users,v1.json"), false);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 5, "{out}");
        assert_eq!(
            lines[0],
            "::error file=api/users%2Cv1.json,title=apidrift breaking removed::$.u[].e: field removed (was a string) — 3 items: [id=1], [id=2], [id=3]"
        );
        assert!(lines[3].starts_with(
            "::notice file=api/users%2Cv1.json,title=apidrift info changed::$.n: value changed"
        ));
        assert_eq!(
            lines[4],
            "apidrift: 6 changes: 5 breaking, 0 warning, 1 info"
        );
        let out = render(&report, Format::Github, None, false);
        assert!(
            out.starts_with("::error title=apidrift breaking removed::$.u[].e"),
            "{out}"
        );
        Ok(())
    }

    #[test]
    fn json_stays_one_change_per_path() -> R {
        let report = full(A, B)?;
        let out: serde_json::Value =
            serde_json::from_str(&render(&report, Format::Json, Some("x.json"), false))?;
        assert_eq!(out["changes"].as_array().map(Vec::len), Some(6));
        assert_eq!(out["changes"][0]["path"], "$.u[id=1].e");
        Ok(())
    }

    #[test]
    fn status_and_header_lines_carry_no_repeated_values() -> R {
        let x = apidrift_diff::Input::response(
            200,
            vec![],
            apidrift_diff::Body::<apidrift_diff::Json<'static>>::Absent,
        );
        let y = apidrift_diff::Input::response(
            503,
            vec![("etag".into(), "\"v1\"".into())],
            apidrift_diff::Body::Absent,
        );
        let report = apidrift_diff::diff(&x, &y, &apidrift_diff::Options::default())?;
        let out = render(&report, Format::Text, None, false);
        assert_eq!(
            out.lines().take(2).collect::<Vec<_>>(),
            vec![
                "BREAKING  status  status_changed  status changed from 200 to 503",
                "INFO      headers.etag  header_changed  etag header appeared",
            ]
        );
        Ok(())
    }

    #[test]
    fn the_annotated_file_is_the_current_input_else_the_baseline() {
        assert_eq!(annotation_file("a.json", "b.json"), Some("b.json"));
        assert_eq!(annotation_file("a.json", "-"), Some("a.json"));
        assert_eq!(annotation_file("-", "https://x.test/u"), None);
        assert_eq!(annotation_file("HTTP://x.test/u", "b.json"), Some("b.json"));
    }
}
