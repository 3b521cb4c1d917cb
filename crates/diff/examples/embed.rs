//! Embeds the diff engine: compares two JSON files in full mode, ignoring `$.meta.requestId` and
//! pairing the `$.users` items by `login`, prints the changes, and exits 1 when one is breaking
//! (0 otherwise, 2 on a usage or read error).
//!
//! `cargo run -p apidrift-diff --example embed -- crates/diff/examples/data/before.json crates/diff/examples/data/after.json`
use apidrift_diff::{DiffMode, IdentityRule, IgnorePattern, Options, Severity, diff_bodies, parse};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(breaking) => ExitCode::from(u8::from(breaking)),
        Err(e) => {
            eprintln!("embed: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [before, after] = args.as_slice() else {
        return Err("usage: embed BEFORE.json AFTER.json".into());
    };
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"));
    let (old, new) = (read(before)?, read(after)?);
    let (old, new) = (
        parse(&old).map_err(|e| format!("{before}: {e}"))?,
        parse(&new).map_err(|e| format!("{after}: {e}"))?,
    );
    let options = Options::with_mode(DiffMode::Full)
        .with_ignore(IgnorePattern::parse("$.meta.requestId")?)
        .with_identity_rule(IdentityRule::parse("$.users", "login")?);
    let report = diff_bodies(&old, &new, &options)?;
    for c in &report.changes {
        println!("{} {} {}: {}", c.severity, c.change_type, c.path, c.message);
    }
    Ok(report.reaches(Some(Severity::Breaking)))
}
