//! Helpers for the end-to-end tests in `tests/e2e/`: locating and running the real `apidrift`
//! binary, which [`binary`] builds through Cargo on first use.

pub mod server;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Path of the `apidrift` binary, built on first use.
///
/// `APIDRIFT_BIN` names a prebuilt binary. Otherwise the binary is built with Cargo in the profile
/// of the running test (a no-op when it is up to date), because Cargo builds another package's
/// binaries only for that package's own tests.
pub fn binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("APIDRIFT_BIN") {
            return PathBuf::from(bin);
        }
        let mut dir = std::env::current_exe().unwrap_or_default();
        dir.pop();
        if dir.ends_with("deps") {
            dir.pop();
        }
        let release = dir.ends_with("release");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "-p", "apidrift", "--bin", "apidrift"]);
        if release {
            build.arg("--release");
        }
        match build.status() {
            Ok(status) if status.success() => {}
            other => panic!("building the apidrift binary failed: {other:?}"),
        }
        dir.join(format!("apidrift{}", std::env::consts::EXE_SUFFIX))
    })
    .clone()
}

/// Subcommands that use no database (and take no database flags).
pub const OFFLINE_COMMANDS: &[&str] = &["diff", "validate", "keygen", "snapshot", "demo"];

/// The database flags for a command run by a test against `url`: none for an offline command,
/// else `--database-url URL`, plus `--create` for the commands that accept it (`migrate`,
/// `workspace …`), because the scenarios start from a database that does not exist yet (the
/// refusal without `--create` has its own test).
pub fn database_args<'a>(args: &[&str], url: &'a str) -> Vec<&'a str> {
    if args.first().is_some_and(|c| OFFLINE_COMMANDS.contains(c)) {
        return Vec::new();
    }
    let mut flags = vec!["--database-url", url];
    if matches!(args.first(), Some(&"migrate" | &"workspace")) {
        flags.push("--create");
    }
    flags
}

/// Runs `apidrift ARGS…` and returns its output.
pub fn run(args: &[&str]) -> Output {
    match Command::new(binary()).args(args).output() {
        Ok(out) => out,
        Err(e) => panic!(
            "cannot run {}: {e} (build it with `cargo build -p apidrift`)",
            binary().display()
        ),
    }
}

/// Standard output as UTF-8.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as UTF-8.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `apidrift ARGS…` with `input` on standard input and returns its output.
pub fn run_with_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let child = Command::new(binary())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => panic!("cannot run {}: {e}", binary().display()),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // The binary may exit before reading everything (bad input): ignore a broken pipe.
        let _ = stdin.write_all(input);
    }
    match child.wait_with_output() {
        Ok(out) => out,
        Err(e) => panic!("waiting for {} failed: {e}", binary().display()),
    }
}
