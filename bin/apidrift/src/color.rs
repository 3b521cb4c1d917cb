//! When output is coloured: the global `--color auto|always|never` and the `NO_COLOR`
//! convention (<https://no-color.org>), resolved in one place for every coloured output (the
//! `diff`/`validate` text report and clap's help and errors).
//!
//! `always` and `never` win over everything; `auto` colours a terminal unless `NO_COLOR` is set
//! to a non-empty value or `TERM` is `dumb`.

use std::ffi::OsString;
use std::sync::OnceLock;

/// The `--color` choice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// The same choice for clap's own output (help, usage errors).
    pub fn for_clap(self) -> clap::ColorChoice {
        match self {
            ColorChoice::Auto if no_color_env() => clap::ColorChoice::Never,
            ColorChoice::Auto => clap::ColorChoice::Auto,
            ColorChoice::Always => clap::ColorChoice::Always,
            ColorChoice::Never => clap::ColorChoice::Never,
        }
    }
}

static CHOICE: OnceLock<ColorChoice> = OnceLock::new();

/// Records the process's choice (from the parsed `--color`); the first call wins.
pub fn set(choice: ColorChoice) {
    let _ = CHOICE.set(choice);
}

/// The process's choice (`auto` until [`set`]).
pub fn choice() -> ColorChoice {
    CHOICE.get().copied().unwrap_or_default()
}

/// `NO_COLOR` set to a non-empty value, or `TERM=dumb`.
fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

/// Whether to colour a stream that `is_terminal` (or not), under `choice` and the environment.
pub fn enabled(choice: ColorChoice, is_terminal: bool) -> bool {
    decide(choice, is_terminal, no_color_env())
}

/// [`enabled`] with the environment given.
fn decide(choice: ColorChoice, is_terminal: bool, no_color: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => is_terminal && !no_color,
    }
}

/// Finds `--color WHEN` / `--color=WHEN` in raw arguments (before a `--`), so that clap's own
/// help and errors follow it too; the last one wins, an unknown value is left for clap to
/// report.
pub fn scan_args(args: &[OsString]) -> ColorChoice {
    let mut found = ColorChoice::Auto;
    let mut iter = args.iter().skip(1).map(|a| a.to_str().unwrap_or_default());
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        let value = if arg == "--color" {
            iter.next()
        } else {
            arg.strip_prefix("--color=")
        };
        if let Some(v) = value {
            found = match v {
                "always" => ColorChoice::Always,
                "never" => ColorChoice::Never,
                "auto" => ColorChoice::Auto,
                _ => found,
            };
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_beats_environment_and_auto_needs_a_terminal() {
        assert!(decide(ColorChoice::Always, false, true));
        assert!(!decide(ColorChoice::Never, true, false));
        assert!(decide(ColorChoice::Auto, true, false));
        assert!(!decide(ColorChoice::Auto, true, true), "NO_COLOR");
        assert!(!decide(ColorChoice::Auto, false, false), "a pipe");
    }

    #[test]
    fn raw_arguments_are_scanned() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(scan_args(&args(&["apidrift", "diff"])), ColorChoice::Auto);
        assert_eq!(
            scan_args(&args(&["apidrift", "--color", "never", "diff"])),
            ColorChoice::Never
        );
        assert_eq!(
            scan_args(&args(&["apidrift", "diff", "--color=always"])),
            ColorChoice::Always
        );
        assert_eq!(
            scan_args(&args(&["apidrift", "diff", "--", "--color=always"])),
            ColorChoice::Auto
        );
        assert_eq!(
            scan_args(&args(&["apidrift", "--color", "pink"])),
            ColorChoice::Auto
        );
    }
}
