//! The typed failures of an outbound fetch ([`FetchError`], [`FetchErrorKind`]) and of the check
//! pipeline ([`MonitorError`]).

use std::fmt;
use std::time::Duration;

/// Why a fetch produced no response. The wire spelling ([`FetchErrorKind::as_str`]) is what a
/// check row records as its `error_kind` and what `docs/checks.md` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FetchErrorKind {
    /// The URL is not one the policy accepts (scheme, credentials, port, syntax).
    InvalidUrl,
    /// The host, or an address it resolves to, is in a blocked range (D14).
    SsrfBlocked,
    /// The name does not resolve (NXDOMAIN, empty answer, resolver error).
    DnsFailed,
    /// The resolver did not answer in time (5 s, or less when the deadline is nearer).
    DnsTimeout,
    /// The upstream refused the connection (RST).
    ConnectRefused,
    /// The TCP connection was not established in time.
    ConnectTimeout,
    /// Any other connect failure (network unreachable, …).
    ConnectFailed,
    /// The TLS handshake failed (untrusted, expired or mismatched certificate, not TLS, old TLS).
    TlsError,
    /// The endpoint's `timeoutMs` elapsed before the whole response was read.
    Timeout,
    /// The response was not valid HTTP/1.
    ProtocolError,
    /// More response headers, or larger ones, than the client accepts.
    HeadersTooLarge,
    /// The upstream closed the connection before a complete response head.
    ConnectionClosed,
    /// The upstream reset the connection.
    ConnectionReset,
    /// The body ended before its declared length.
    IncompleteBody,
    /// The body is larger than 10 MiB (after decompression).
    BodyTooLarge,
    /// The body could not be decompressed.
    DecodeError,
    /// A `Content-Encoding` the client does not decode (e.g. zstd).
    UnsupportedEncoding,
    /// More than 5 redirects, or a loop.
    TooManyRedirects,
    /// A redirect that cannot be followed: no or bad `Location`, a scheme other than http(s), a
    /// downgrade from https to http, or another origin while credentials are attached.
    InvalidRedirect,
    /// A request that could not be built (e.g. a header value that is not valid in HTTP).
    InvalidRequest,
}

impl FetchErrorKind {
    /// Every kind, in documentation order.
    pub const ALL: &'static [FetchErrorKind] = &[
        FetchErrorKind::InvalidUrl,
        FetchErrorKind::SsrfBlocked,
        FetchErrorKind::DnsFailed,
        FetchErrorKind::DnsTimeout,
        FetchErrorKind::ConnectRefused,
        FetchErrorKind::ConnectTimeout,
        FetchErrorKind::ConnectFailed,
        FetchErrorKind::TlsError,
        FetchErrorKind::Timeout,
        FetchErrorKind::ProtocolError,
        FetchErrorKind::HeadersTooLarge,
        FetchErrorKind::ConnectionClosed,
        FetchErrorKind::ConnectionReset,
        FetchErrorKind::IncompleteBody,
        FetchErrorKind::BodyTooLarge,
        FetchErrorKind::DecodeError,
        FetchErrorKind::UnsupportedEncoding,
        FetchErrorKind::TooManyRedirects,
        FetchErrorKind::InvalidRedirect,
        FetchErrorKind::InvalidRequest,
    ];

    /// The recorded spelling (`dns_failed`, `ssrf_blocked`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            FetchErrorKind::InvalidUrl => "invalid_url",
            FetchErrorKind::SsrfBlocked => "ssrf_blocked",
            FetchErrorKind::DnsFailed => "dns_failed",
            FetchErrorKind::DnsTimeout => "dns_timeout",
            FetchErrorKind::ConnectRefused => "connect_refused",
            FetchErrorKind::ConnectTimeout => "connect_timeout",
            FetchErrorKind::ConnectFailed => "connect_failed",
            FetchErrorKind::TlsError => "tls_error",
            FetchErrorKind::Timeout => "timeout",
            FetchErrorKind::ProtocolError => "protocol_error",
            FetchErrorKind::HeadersTooLarge => "headers_too_large",
            FetchErrorKind::ConnectionClosed => "connection_closed",
            FetchErrorKind::ConnectionReset => "connection_reset",
            FetchErrorKind::IncompleteBody => "incomplete_body",
            FetchErrorKind::BodyTooLarge => "body_too_large",
            FetchErrorKind::DecodeError => "decode_error",
            FetchErrorKind::UnsupportedEncoding => "unsupported_encoding",
            FetchErrorKind::TooManyRedirects => "too_many_redirects",
            FetchErrorKind::InvalidRedirect => "invalid_redirect",
            FetchErrorKind::InvalidRequest => "invalid_request",
        }
    }
}

impl fmt::Display for FetchErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fetch that produced no response. The message names the cause (host, limit, an address
/// only when the URL is written as one) and never a header value, credential, body or the
/// address a name resolved to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct FetchError {
    pub kind: FetchErrorKind,
    pub message: String,
    /// Time spent before the failure.
    pub elapsed: Duration,
}

impl FetchError {
    pub(crate) fn new(kind: FetchErrorKind, message: impl Into<String>) -> Self {
        FetchError {
            kind,
            message: message.into(),
            elapsed: Duration::ZERO,
        }
    }
}

/// Why a baseline capture or a check could not run (the API maps these to status codes).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MonitorError {
    /// The endpoint does not exist in the workspace (404).
    #[error("endpoint not found")]
    NotFound,
    /// A check needs an active baseline (400).
    #[error(
        "no baseline has been captured for this endpoint yet; capture one first with POST /api/v1/endpoints/{{id}}/baseline (or apidrift baseline capture)"
    )]
    NoBaseline,
    /// The workspace used its monthly check quota (400).
    #[error("monthly check quota exhausted ({used} of {quota} checks used this month)")]
    QuotaExhausted { used: u64, quota: u32 },
    /// A baseline capture whose fetch failed (400): no response to keep.
    #[error("the baseline could not be captured: {0}")]
    CaptureFailed(FetchError),
    /// The samples of a multi-sample capture disagree in more than their values (400): the
    /// reason names the sample and the path, never a value of the body.
    #[error("the baseline could not be captured: {0}")]
    Unstable(String),
    /// A stored secret or body could not be opened or sealed (500; names no secret).
    #[error("sealed data: {0}")]
    Seal(String),
    /// The contract could not be built from the document (400 for the CLI).
    #[error("contract: {0}")]
    Contract(String),
    /// The endpoint's stored settings are unusable (e.g. a URL the policy now refuses).
    #[error("endpoint settings: {0}")]
    Endpoint(String),
    /// The diff engine refused the documents (too deep).
    #[error("diff: {0}")]
    Diff(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] apidrift_store::StoreError),
}
