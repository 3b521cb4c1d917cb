//! The web console (D15): server-rendered pages under `/console` for signed-in users.
//!
//! * [`session`]: argon2id passwords, server-side sessions, the cookie, CSRF (Origin + token);
//! * [`pages`]: the routes and handlers: login/logout, endpoints (health badges, filters,
//!   pagination), one endpoint (details without credentials, latest diff, history,
//!   capture-baseline and run-check buttons), one diff (changes grouped and coloured by severity,
//!   the accept button), tokens (create with scope checkboxes, shown once, list, revoke),
//!   webhooks (add, list, remove), the URL probe and the OpenAPI import. Each handler builds a
//!   view model and hands it to
//! * [`views`]: the markup, one module per page, in maud (escaped by default, compile-time
//!   checked);
//! * [`deliveries`]: a webhook's delivery log (paged, newest first) and its **Send test** button;
//! * [`edit_form`]: the endpoint edit form as the update body the service validates;
//! * [`form`]: the form body of a signed-in user, read after the session check, to a limit;
//! * [`html`]: query-string encoding.
//!
//! Roles apply as on the API (D4, D19): viewers read; members capture baselines, run checks,
//! probe, import, edit and pause endpoints; admins and owners also delete endpoints, manage
//! tokens and webhooks (their delivery logs and test sends included) and accept diffs. Accept,
//! revoke and delete ask for confirmation first.

pub mod deliveries;
pub mod edit_form;
pub mod form;
pub mod html;
pub mod lifecycle;
pub mod pages;
pub mod session;
pub mod views;

pub use pages::configure;
