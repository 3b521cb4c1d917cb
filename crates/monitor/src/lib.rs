//! # apidrift-monitor
//!
//! Running checks (decisions D7, D8, D10, D14, D16): the part of apidrift that talks to the
//! outside world.
//!
//! * [`Client`] — the SSRF-safe outbound client. hyper 1 (HTTP/1.1) over tokio, rustls with the
//!   ring provider and the webpki roots. Every request: the URL judged by
//!   [`apidrift_model::net::check_url`]; IP literals canonicalised and judged; names judged, then
//!   resolved ONCE through the injectable [`Resolver`] with a timeout, every answer judged (one
//!   blocked answer refuses the request); TCP only to the checked addresses through the
//!   injectable [`Dialer`]; GET and HEAD may reuse an idle connection ([`KeepAlive`]) only to
//!   an address the request itself has just checked; no proxy variables, no cookies; redirects off
//!   unless asked, at most 5, each hop judged again, never https → http, never to another origin
//!   with credentials attached; the endpoint's timeout over the whole exchange; body capped at
//!   10 MiB after decompression (gzip, deflate, br); at most 100 response headers in 64 KiB.
//!   Failures are [`FetchError`]s with a [`FetchErrorKind`] (`dns_failed`, `ssrf_blocked`, …).
//! * [`FetchRequest`] / [`FetchResponse`] — one exchange; credentials per auth type (D6) and
//!   extra headers are added by the client.
//!
//! * [`Monitor`] — the pipeline over an `Arc<dyn Store>`, a `KeyRing` and a [`Client`]:
//!   [`Monitor::capture_baseline`] (D8: status, content type, tracked headers, sealed body,
//!   shape; `baselineVersion` + 1; health `checking` then `healthy`), [`Monitor::run_check`]
//!   (D7/D8: baseline required, one quota unit, fetch, diff with the endpoint's mode and ignore
//!   paths, contract validation, one `record_check` call; a fetch with no response is a
//!   `status_changed` change; checks of one endpoint are serialised), validating the response
//!   contract in force (D10). [`CheckOutcome`] gives the spec's 200 body
//!   ([`CheckOutcome::to_response`]). One monitor per process (the service's): its clones share
//!   the per-endpoint locks.
//!
//! * [`alerts`] — D11 event bodies, the diff fingerprint, `Apidrift-Signature` signing and
//!   verification, webhook secrets; [`Monitor::accept_diff`] (D12) promotes a check's response.
//! * [`channels`] — the Slack, Discord and PagerDuty messages a native channel receives,
//!   rendered at delivery time from the stored event (D24).
//! * [`redact`] — what a URL may show: query values hidden everywhere one is shown (alert
//!   messages, the console), and the secret path segments of every known webhook URL form.
//! * [`Worker`] ([`worker`], [`scheduler`], [`outbox`]) — the background loops of
//!   `serve --role worker|all` (D18): due schedules and webhook deliveries claimed with leases,
//!   retried with backoff, released on graceful shutdown.
//! * [`metrics`] — process-wide counters of checks (by trigger and result), their durations,
//!   schedule lag and delivery attempts, rendered in the Prometheus text format by the API's
//!   `GET /metrics`.
//!
//! The crate has no HTTP-server code. The application service that front doors call is in
//! `apidrift-app`, above this crate.

pub mod alerts;
mod body;
mod cadence;
pub mod channels;
mod client;
pub mod contracts;
mod error;
mod loops;
pub mod metrics;
mod monitor;
pub mod outbox;
pub mod redact;
mod resolve;
pub mod scheduler;
pub mod worker;

pub use client::{
    CONNECT_TIMEOUT, Client, ClientBuilder, DNS_TIMEOUT, FetchRequest, FetchResponse, IDLE_TIMEOUT,
    KeepAlive, Limits, MAX_BODY_BYTES, MAX_HEAD_BYTES, MAX_IDLE_PER_KEY, MAX_IDLE_TOTAL,
    MAX_REDIRECTS, MAX_RESPONSE_HEADERS, USER_AGENT,
};
pub use error::{FetchError, FetchErrorKind, MonitorError};
pub use monitor::{
    CheckOutcome, DEFAULT_SAMPLE_INTERVAL, MAX_SAMPLES, Monitor, ScheduledSlot,
    contract_from_openapi,
};
pub use resolve::{Dialer, Resolver, SystemResolver, TcpDialer};
pub use worker::{Worker, WorkerConfig, WorkerStats};
