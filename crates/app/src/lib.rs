//! # apidrift-app
//!
//! The application service: every use case of apidrift written once, behind its three front
//! doors (the REST API and the console in `apidrift-api`, the admin CLI in `apidrift`). It sits
//! between `apidrift-monitor` (fetching, checking, scheduling, delivering) and the front doors:
//! model ← diff ← monitor ← app ← api ← bin.
//!
//! [`Service`] is built once per process (`apidrift serve`, or one admin command) from the store,
//! the key ring (optional: without it, use cases that seal or open answer
//! [`ServiceError::NoKey`]), the outbound allow-list and a [`Clock`]. It holds the one outbound
//! [`Client`](apidrift_monitor::Client) of the process and, with a key, the one [`Monitor`](apidrift_monitor::Monitor) (whose per-endpoint locks
//! serialise checks), so the API, the console and the worker share them. Front doors translate
//! their input, call one method and translate the result or the [`ServiceError`]; none of them
//! seals, diffs, hashes a token or builds a monitor.
//!
//! Who may do what is one table, [`actions`]: each [`Action`] with its scope, weakest role,
//! rate-limit class and 403 verb. A use case called on behalf of a caller takes an [`Actor`] (a
//! token, a console session, or the CLI's operator) and checks it against the table first; the
//! front doors read the same table before they spend a rate limit. Internal callers (the worker,
//! the scheduler) call the monitor, not these use cases.
//!
//! Use cases, by module:
//! * [`endpoints`]: [`Service::register_endpoints`] (D6: validation, sealing, the plan limit,
//!   skip reasons, schedules; `POST /api/v1/endpoints`, `POST /v1/endpoints`);
//! * [`apply`]: [`Service::apply_monitors`] and [`Service::export_monitors`] (monitors as code,
//!   D25; `POST /api/v1/apply`, `apidrift apply`, `apidrift export`);
//! * [`openapi`]: [`Service::openapi`] (parse a document into candidates, and import them through
//!   the same registration; `POST /api/openapi/parse`, the console's import page);
//! * [`checks`]: [`Service::capture_baseline`], [`Service::run_check`], [`Service::accept_diff`],
//!   [`Service::attach_contract`], [`Service::detach_contract`];
//! * [`probe`]: [`Service::probe`] (`POST /api/check`, the console's probe page);
//! * [`webhooks`]: [`Service::create_webhook`], [`Service::list_webhooks`],
//!   [`Service::delete_webhook`];
//! * [`tokens`]: [`Service::mint_token`], [`Service::list_tokens`], [`Service::revoke_token`],
//!   [`Service::authenticate`] (bearer tokens), [`Service::bootstrap`] (first start);
//! * [`lifecycle`]: [`Service::update_endpoint`], [`Service::set_paused`],
//!   [`Service::delete_endpoint`], [`Service::delete_endpoints`], [`Service::list_checks`],
//!   [`Service::list_deliveries`], [`Service::test_webhook`], and the worker's upkeep
//!   ([`Service::reset_stale_checking`], [`Service::prune_checks`]) (D19);
//! * [`reads`]: [`Service::list_endpoints`], [`Service::get_endpoint`],
//!   [`Service::find_endpoint`], [`Service::list_diffs`], [`Service::get_diff`], … (every read of a
//!   caller's data);
//! * [`keys`]: [`Service::rotate_keys`] (`apidrift keys rotate`);
//! * [`workspaces`]: [`Service::create_workspace`], [`Service::update_workspace`];
//! * [`users`]: [`Service::create_user`], [`Service::list_users`], [`Service::remove_user`],
//!   [`Service::login`], and console sessions ([`Service::start_session`],
//!   [`Service::find_session`], [`Service::end_session`], [`Service::logout`]).
//!
//! The value types those use cases take and hand out (filters, pages, stored rows) are
//! [`read`]'s; the shared rate-limit state the API's leased limiter uses is [`ratelimit`]'s. A front
//! door names nothing of the store beyond them.
//!
//! A new use case is one method here (in the module of its entity) plus a thin caller in each
//! front door that offers it.

pub mod actions;
pub mod apply;
mod base;
pub mod checks;
pub mod endpoints;
mod error;
pub mod keys;
pub mod lifecycle;
pub mod openapi;
pub mod probe;
pub mod ratelimit;
pub mod read;
pub mod reads;
mod token_cache;
pub mod tokens;
pub mod users;
pub mod webhooks;
pub mod workspaces;

pub use actions::{Act, Action, Actor, RateClass, Rule, act};
pub use apply::{ApplyPlan, ApplyResult, ExportedMonitors, PlannedUpdate};
pub use base::{
    Clock, DEFAULT_IMPORT_MAX_BYTES, DEFAULT_IMPORT_PARSE_BUDGET, Service, SystemClock,
};
pub use checks::{Accepted, BaselineCaptured, ChangeGroup, group_changes};
pub use error::{ServiceError, StoreFault};
pub use lifecycle::{CheckRecord, DEFAULT_CHECK_RETENTION_DAYS, DeliveryView, WebhookTestResult};
pub use openapi::{Candidate, DEFAULT_IMPORT_METHODS, ParseRequest, ParseResult};
pub use probe::ProbeResult;
pub use reads::{OVERVIEW_ROWS, Overview};
pub use token_cache::{TOKEN_CACHE_CAPACITY, TOKEN_CACHE_SECS};
pub use tokens::{FirstRun, MintToken, MintedToken, token_well_formed};
pub use users::{MIN_PASSWORD, check_password, csrf_matches};
pub use webhooks::WebhookView;
pub use workspaces::WorkspaceView;

/// What the front doors show of the monitor: the largest sample count of a baseline capture,
/// the URL redaction of pages and messages, and the process metrics `GET /metrics` renders.
pub use apidrift_monitor::{MAX_SAMPLES, metrics, redact};
