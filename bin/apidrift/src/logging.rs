//! The log of `apidrift serve`, on stderr: `[log] filter` (`APIDRIFT_LOG`) in `tracing`'s
//! directive syntax and `[log] format` (`APIDRIFT_LOG_FORMAT`) `text` or `json` (one JSON object
//! per line). Never coloured: logs go to files and collectors, not terminals.
//!
//! Directives are `LEVEL` (the default for every target), `TARGET=LEVEL` and
//! `TARGET[{field,…}]=LEVEL`, comma separated, e.g. `info`, `apidrift=debug,actix_web=warn`.
//! A target matches itself and every target it prefixes (`apidrift` covers `apidrift_api::…`).
//! Span-name and field-value filters of `EnvFilter` are not supported. A directive that does not
//! parse stops `serve` with a message naming it.

use crate::cmd::CliError;
use crate::config::{LogFormat, LogSettings};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The filter when none is configured.
pub const DEFAULT_FILTER: &str = "info";

/// Parses a filter: directives separated by commas, blanks around them ignored. An empty filter
/// is [`DEFAULT_FILTER`].
pub fn parse_filter(text: Option<&str>) -> Result<Targets, CliError> {
    let directives: Vec<&str> = text
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if directives.is_empty() {
        return DEFAULT_FILTER
            .parse()
            .map_err(|e| CliError(format!("log filter: {e}")));
    }
    for d in &directives {
        // `Targets` reads a bare word as a target; a level-looking word with a typo would then
        // silently switch every other log line off. Refuse what is neither a level nor a
        // plausible target (a Rust path: letters, digits, `_`, `-` and `::`).
        let (target, level) = match d.split_once('=') {
            Some((t, l)) => (t, Some(l)),
            None => (*d, None),
        };
        let bad = |why: &str| {
            CliError(format!(
                "log filter directive `{d}`: {why}; write directives like `info` or \
                 `apidrift=debug,actix_web=warn` (levels: off, error, warn, info, debug, trace)"
            ))
        };
        if let Some(level) = level
            && !is_level(level.trim())
        {
            return Err(bad(&format!("`{}` is not a level", level.trim())));
        }
        let name = target.split("[{").next().unwrap_or(target).trim();
        if name.is_empty() {
            return Err(bad("no target before `=`"));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ':')
        {
            return Err(bad(&format!("`{name}` is not a target")));
        }
    }
    directives
        .join(",")
        .parse::<Targets>()
        .map_err(|e| CliError(format!("log filter `{}`: {e}", directives.join(","))))
}

fn is_level(text: &str) -> bool {
    matches!(
        text.to_ascii_lowercase().as_str(),
        "off" | "error" | "warn" | "info" | "debug" | "trace" | "0" | "1" | "2" | "3" | "4" | "5"
    )
}

/// Installs the process's log subscriber. Call once, early; a second call is a no-op.
pub fn init(settings: &LogSettings) -> Result<(), CliError> {
    let filter = parse_filter(settings.filter.as_deref())?;
    let registry = tracing_subscriber::registry().with(filter);
    let _ = match settings.format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(false),
            )
            .try_init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(false)
                    .with_writer(std::io::stderr)
                    .with_ansi(false),
            )
            .try_init(),
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    fn enabled(filter: &str, target: &str, level: Level) -> bool {
        parse_filter(Some(filter)).is_ok_and(|t| t.would_enable(target, &level))
    }

    #[test]
    fn directives_follow_tracing_syntax() {
        // The example: debug for our crates, no longer silently `info`.
        assert!(enabled(
            "apidrift=debug",
            "apidrift::cmd::serve",
            Level::DEBUG
        ));
        assert!(enabled("apidrift=debug", "apidrift_api::app", Level::DEBUG));
        assert!(!enabled(
            "apidrift=debug",
            "apidrift_api::app",
            Level::TRACE
        ));
        assert!(!enabled("apidrift=debug", "actix_server", Level::ERROR));
        let two = "apidrift=debug, actix_web=warn";
        assert!(enabled(two, "actix_web::x", Level::WARN));
        assert!(!enabled(two, "actix_web::x", Level::INFO));
        // A bare level is the default; a target directive refines it.
        assert!(enabled("warn,apidrift=trace", "hyper", Level::WARN));
        assert!(!enabled("warn,apidrift=trace", "hyper", Level::INFO));
        assert!(enabled("warn,apidrift=trace", "apidrift::x", Level::TRACE));
        assert!(enabled("DEBUG", "x", Level::DEBUG));
        assert!(!enabled("off", "x", Level::ERROR));
        // Unset or blank: info.
        for blank in [None, Some(""), Some(" , ")] {
            let t = parse_filter(blank);
            assert!(t.as_ref().is_ok_and(|t| t.would_enable("x", &Level::INFO)));
            assert!(t.is_ok_and(|t| !t.would_enable("x", &Level::DEBUG)));
        }
    }

    #[test]
    fn bad_directives_are_errors_that_name_them() {
        for bad in [
            "apidrift=loud",
            "apidrift=debug=x",
            "info!",
            "apidrift debug",
            "=debug",
            "apidrift=",
        ] {
            let err = parse_filter(Some(bad))
                .err()
                .map(|e| e.0)
                .unwrap_or_default();
            assert!(err.contains("log filter"), "{bad:?} accepted: {err}");
        }
        let err = parse_filter(Some("info,apidrift=verbose"))
            .err()
            .map(|e| e.0)
            .unwrap_or_default();
        assert!(
            err.contains("`apidrift=verbose`") && err.contains("not a level"),
            "{err}"
        );
    }
}
