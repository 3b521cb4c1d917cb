//! One module per subcommand. Each exposes `run(...) -> Result<ExitCode, CliError>`.

pub mod keygen;

/// A failure a user caused or can act on: printed as one line, exit code 2.
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
