//! [`ServiceError`]: the one failure type of every use case. The API maps it to a status code in
//! one place (`apidrift_api::ApiError: From<ServiceError>`), the CLI to a one-line message and an
//! exit code in one place (`CliError: From<ServiceError>`). Messages say what went wrong and what
//! to do next; none carries a token, a credential, a secret or a monitored body.

use apidrift_monitor::MonitorError;
use apidrift_store::StoreError;

/// Why a use case failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// The input is invalid (HTTP 400): the message names the field and the rule.
    #[error("{0}")]
    Invalid(String),
    /// The workspace's plan does not allow it (HTTP 402).
    #[error("{0}")]
    PlanLimit(String),
    /// The caller may not do this (HTTP 403), e.g. mint a token stronger than their own role.
    #[error("{0}")]
    Forbidden(String),
    /// No such row in this workspace (HTTP 404, always the same text there). `what` names the
    /// kind of row and `id` how the caller named it; the CLI prints both.
    #[error("{what} {id} not found")]
    NotFound { what: &'static str, id: String },
    /// The row exists already (e.g. a user with that e-mail).
    #[error("{0}")]
    Conflict(String),
    /// The caller named the version it read (`If-Match`, the console form's hidden field) and the
    /// row has another one now: someone changed it meanwhile; nothing was written (HTTP 412).
    /// `what` names the kind of row.
    #[error("the {what} changed since you read it")]
    Changed { what: &'static str },
    /// A change without a version kept meeting concurrent changes of the same row and gave up
    /// after several attempts; nothing was written (HTTP 503: trying again later is right).
    #[error("the {what} kept changing while this change was applied; try again")]
    Contended { what: &'static str },
    /// An OpenAPI import body or document larger than the limit (HTTP 413); the text names the
    /// setting that raises it.
    #[error(
        "the document is larger than the import limit of {0} bytes; raise `[limits] import_max_bytes` (APIDRIFT_LIMITS__IMPORT_MAX_BYTES) to import a larger one"
    )]
    TooLarge(usize),
    /// No sealing key is configured, so secrets cannot be sealed or opened (HTTP 503). The text
    /// says what cannot be done.
    #[error("ENDPOINT_SECRET_KEY is not configured{0}")]
    NoKey(&'static str),
    /// The store failed (unavailable: 503; a missing row: 404; the rest: 500).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Anything else (HTTP 500; the detail is logged, never sent).
    #[error("{0}")]
    Internal(String),
}

/// What a store failure inside a [`ServiceError::Store`] means to a caller, so that a front door
/// picks its status without naming the store's error type. Each text is the store's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreFault {
    /// The row does not exist (HTTP 404).
    NotFound,
    /// The row changed since it was read; nothing was written (HTTP 412).
    Changed(String),
    /// Input the store cannot hold, e.g. a NUL in user text (HTTP 400); the text names it.
    InvalidInput(String),
    /// The database cannot be reached (HTTP 503); the text is for the log.
    Unavailable(String),
    /// Any other store failure (HTTP 500); the text is for the log.
    Other(String),
}

impl ServiceError {
    /// The meaning of a store failure, or `None` when this is not [`ServiceError::Store`].
    pub fn store_fault(&self) -> Option<StoreFault> {
        let ServiceError::Store(e) = self else {
            return None;
        };
        Some(match e {
            StoreError::NotFound => StoreFault::NotFound,
            StoreError::Changed => StoreFault::Changed(e.to_string()),
            StoreError::InvalidInput(text) => StoreFault::InvalidInput(text.clone()),
            StoreError::Unavailable(_) => StoreFault::Unavailable(e.to_string()),
            other => StoreFault::Other(other.to_string()),
        })
    }

    /// [`ServiceError::NotFound`] for a row named by its id.
    pub fn not_found(what: &'static str, id: impl std::fmt::Display) -> Self {
        ServiceError::NotFound {
            what,
            id: id.to_string(),
        }
    }

    /// A check-pipeline failure of the endpoint `endpoint` (or of the diff `diff` when accepting):
    /// the caller's mistakes (no baseline, quota spent, a fetch that failed, unusable stored
    /// settings) are [`ServiceError::Invalid`]; a stored secret that does not open or a stored
    /// contract that does not compile is [`ServiceError::Internal`].
    pub(crate) fn from_monitor(e: MonitorError, what: &'static str, id: uuid::Uuid) -> Self {
        match e {
            MonitorError::NotFound => ServiceError::not_found(what, id),
            MonitorError::NoBaseline
            | MonitorError::QuotaExhausted { .. }
            | MonitorError::CaptureFailed(_)
            | MonitorError::Unstable(_)
            | MonitorError::Endpoint(_)
            | MonitorError::Diff(_) => ServiceError::Invalid(e.to_string()),
            MonitorError::Store(s) => ServiceError::Store(s),
            other => ServiceError::Internal(other.to_string()),
        }
    }
}

/// No user-facing message of the service carries a Rust `Debug` rendering (moved here with the
/// service from the monitor's wording tests).
#[cfg(test)]
mod wording {
    use super::*;

    const DEBUG_MARKS: &[&str] = &[
        "Some(",
        "None",
        "Other(",
        "OtherError",
        "{ ",
        "::",
        "Error(",
    ];

    #[test]
    fn service_messages_are_plain() {
        let id = uuid::Uuid::nil();
        let mut messages = Vec::new();
        for e in [
            MonitorError::NotFound,
            MonitorError::NoBaseline,
            MonitorError::QuotaExhausted { used: 3, quota: 3 },
            MonitorError::Endpoint("the URL is refused".into()),
            MonitorError::Diff("too deep".into()),
            MonitorError::Store(apidrift_store::StoreError::InvalidInput(
                "endpoints.name must not contain a NUL character (U+0000): remove it and try again"
                    .into(),
            )),
        ] {
            messages.push(ServiceError::from_monitor(e, "endpoint", id).to_string());
        }
        for e in [
            ServiceError::Invalid("x".into()),
            ServiceError::not_found("endpoint", id),
            ServiceError::TooLarge(10),
            ServiceError::NoKey(", so credentials cannot be sealed"),
            ServiceError::Store(apidrift_store::StoreError::NotFound),
        ] {
            messages.push(e.to_string());
        }
        for text in &messages {
            for mark in DEBUG_MARKS {
                assert!(
                    !text.contains(mark),
                    "{mark:?} in user-facing text {text:?}"
                );
            }
        }
    }
}

/// A store failure says what it means to a front door; other failures are not store faults.
#[cfg(test)]
mod faults {
    use super::*;

    #[test]
    fn store_failures_map_to_faults() {
        let fault = |e: StoreError| ServiceError::Store(e).store_fault();
        assert_eq!(fault(StoreError::NotFound), Some(StoreFault::NotFound));
        assert_eq!(
            fault(StoreError::Changed),
            Some(StoreFault::Changed("changed since it was read".into()))
        );
        assert_eq!(
            fault(StoreError::InvalidInput("a NUL".into())),
            Some(StoreFault::InvalidInput("a NUL".into()))
        );
        assert_eq!(
            fault(StoreError::Unavailable("pool timed out".into())),
            Some(StoreFault::Unavailable(
                "database unavailable: pool timed out".into()
            ))
        );
        assert_eq!(
            fault(StoreError::Database("deadlock".into())),
            Some(StoreFault::Other("database error: deadlock".into()))
        );
        assert_eq!(ServiceError::Invalid("x".into()).store_fault(), None);
    }
}
