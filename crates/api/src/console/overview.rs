//! The overview, the console's landing page after login: the workspace at a glance, from one
//! read use case (`Service::overview`).

use super::kit::{Page, chrome, html, session_or_return};
use super::views;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, web};
use apidrift_app::Action;
use apidrift_model::Health;

/// The healths the overview counts, in the order it lists them.
const HEALTHS: [Health; 5] = [
    Health::Breaking,
    Health::Warning,
    Health::Healthy,
    Health::Unknown,
    Health::Checking,
];

/// Registers the overview page.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console/overview", web::get().to(overview));
}

async fn overview(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    let o = state
        .service
        .overview(&s.actor())
        .await
        .map_err(ApiError::from)?;
    let count = |h: Health| {
        o.workspace
            .by_health
            .iter()
            .filter(|(k, _)| *k == h)
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    let view = views::overview::OverviewPage {
        by_health: HEALTHS.iter().map(|h| (*h, count(*h))).collect(),
        total: o.endpoints,
        drifts: &o.drifts,
        failing: o
            .workspace
            .failing
            .iter()
            .map(|f| (f.endpoint_id, f.name.as_str(), f.error_kind.as_str(), f.at))
            .collect(),
        next_runs: o
            .workspace
            .next_runs
            .iter()
            .map(|r| (r.endpoint_id, r.name.as_str(), r.at))
            .collect(),
        can_add: s.can(Action::CreateEndpoints),
    };
    Ok(html(
        StatusCode::OK,
        views::overview::render(&chrome(&s, "overview"), &view),
    ))
}
