//! The route table: every documented token route, registered once for both the application
//! ([`crate::create_app`]) and the OpenAPI document ([`crate::openapi::document`]). The
//! console's session routes are registered beside it (`console::configure_json`).

use super::{accept, apply, checks, diffs, endpoints, health, lifecycle, webhooks, workspace};
use utoipa_actix_web::service_config::ServiceConfig;

/// Registers every documented route.
pub fn configure(config: &mut ServiceConfig) {
    config
        .service(health::healthz)
        .service(health::readyz)
        .service(
            utoipa_actix_web::scope("/api/v1")
                .service(endpoints::list_endpoints)
                .service(endpoints::create_endpoints)
                .service(apply::apply_monitors)
                .service(endpoints::get_endpoint)
                .service(diffs::list_endpoint_diffs)
                .service(diffs::list_diffs)
                .service(diffs::get_diff)
                .service(accept::accept_diff)
                .configure(checks::configure_api_v1)
                .configure(lifecycle::configure_api_v1)
                .configure(workspace::configure_api_v1)
                .configure(webhooks::configure_api_v1),
        )
        .service(
            utoipa_actix_web::scope("/v1")
                .service(endpoints::create_endpoints_v1)
                .service(diffs::list_endpoint_diffs_v1)
                .configure(checks::configure_v1)
                .configure(webhooks::configure_v1)
                .configure(lifecycle::configure_v1),
        );
}
