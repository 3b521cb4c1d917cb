//! The check pipeline's routes (issue 6, `apidrift-monitor`): `POST /api/v1/endpoints/{id}/check`,
//! `POST /v1/endpoints/{id}/check` and `POST /v1/endpoints/{id}/baseline`.
//!
//! They are registered by [`configure_api_v1`] (inside the `/api/v1` scope) and [`configure_v1`]
//! (inside `/v1`), which [`crate::app`] already calls, so adding them is local to this file. The
//! guards they take are ready in [`crate::auth`]: `Authed<RunChecks>` (scope `checks:run`, member
//! or above, checks class) and `Authed<CaptureBaselines>` (scope `baselines:write`, member or
//! above, checks class). Until the monitor service is wired, these paths answer 404 like any
//! unknown route.

use utoipa_actix_web::service_config::ServiceConfig;

/// Check routes under `/api/v1`.
pub fn configure_api_v1(_config: &mut ServiceConfig) {}

/// Check and baseline routes under `/v1`.
pub fn configure_v1(_config: &mut ServiceConfig) {}
