//! [`CliError`]: what every command returns when it fails, and the one place a use case's
//! failure ([`ServiceError`]) becomes a CLI message. `main` prints it as one line on stderr and
//! exits 2.

use apidrift_app::ServiceError;

/// A failure a user caused or can act on: printed as one line, exit code 2.
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

impl From<ServiceError> for CliError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::NoKey(_) => {
                CliError("no sealing key: set ENDPOINT_SECRET_KEY (or secret_key_file)".into())
            }
            other => CliError(other.to_string()),
        }
    }
}
