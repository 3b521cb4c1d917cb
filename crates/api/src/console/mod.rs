//! The web console (D15): server-rendered pages under `/console` for signed-in users, and the two
//! cookie-authenticated JSON routes of its pages (`POST /api/check`, `POST /api/openapi/parse`).
//!
//! One handler module per page family, each beside its view module in [`views`]:
//! * [`login`]: signing in and out;
//! * [`overview`]: the landing page after login (counts by health, newest drifts, failed
//!   fetches, next scheduled runs);
//! * [`endpoints`]: the endpoint list (health badges, filters, pagination);
//! * [`endpoint`]: one endpoint (details without credentials, latest diff, history,
//!   capture-baseline and run-check buttons);
//! * [`add`]: the **Add endpoint** form (the edit page's form, posting to the create use case);
//! * [`lifecycle`]: edit, pause/resume, delete (one or several) with confirmation;
//! * [`diff`]: one diff (changes grouped and coloured by severity, the accept button);
//! * [`tokens`]: create with scope checkboxes, shown once, list, revoke;
//! * [`webhooks`]: add, list, remove; [`deliveries`]: a webhook's delivery log (paged, newest
//!   first) and its **Send test** button;
//! * [`probe`]: the URL probe page and `POST /api/check`;
//! * [`import`]: the OpenAPI import page and `POST /api/openapi/parse`.
//!
//! Each handler builds a view model and hands it to [`views`]: the markup, one module per page,
//! in maud (escaped by default, compile-time checked). What every family shares:
//! * [`kit`]: the page skeleton (HTML with its security headers, redirects, the chrome, error
//!   pages, the session of a page request, form fields and the CSRF check);
//! * [`session`]: argon2id passwords, server-side sessions, the cookie, CSRF (Origin + token);
//! * [`form`]: the form body of a signed-in user, read after the session check, to a limit;
//! * [`edit_form`]: the endpoint edit form as the update body the service validates;
//! * [`html`]: query-string encoding.
//!
//! Roles apply as on the API (D4, D19): viewers read; members capture baselines, run checks,
//! probe, import, edit and pause endpoints; admins and owners also delete endpoints, manage
//! tokens and webhooks (their delivery logs and test sends included) and accept diffs. Accept,
//! revoke and delete ask for confirmation first.

pub mod add;
pub mod deliveries;
pub mod diff;
pub mod edit_form;
pub mod endpoint;
pub mod endpoints;
pub mod form;
pub mod html;
pub mod import;
pub mod kit;
pub mod lifecycle;
pub mod login;
pub mod overview;
pub mod probe;
pub mod session;
pub mod tokens;
pub mod views;
pub mod webhooks;

use actix_web::web;
use utoipa_actix_web::service_config::ServiceConfig;

/// Registers every console page.
pub fn configure(cfg: &mut web::ServiceConfig) {
    // Before `/console/endpoints/{id}` (registered later), which would take `delete` for an id.
    lifecycle::configure(cfg);
    add::configure(cfg);
    deliveries::configure(cfg);
    login::configure(cfg);
    overview::configure(cfg);
    endpoints::configure(cfg);
    endpoint::configure(cfg);
    diff::configure(cfg);
    tokens::configure(cfg);
    webhooks::configure(cfg);
    probe::configure(cfg);
    import::configure(cfg);
}

/// Registers the documented JSON routes of the console (session cookie), for both the
/// application and the OpenAPI document.
pub fn configure_json(config: &mut ServiceConfig) {
    config.service(probe::probe).service(import::parse_openapi);
}
