//! The endpoint list: health badges, filters (health, environment) and pagination.

use super::kit::{Page, chrome, error_page, html, session_or_return};
use super::views;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, web};
use apidrift_app::Action;
use apidrift_app::read::{EndpointFilter, PageRequest};
use apidrift_model::Health;
use std::collections::HashMap;

/// Endpoints per console page.
const PAGE_SIZE: u32 = 25;

/// Registers the endpoint list.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console/endpoints", web::get().to(endpoints));
}

async fn endpoints(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    let query: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect();
    let health_text = query.get("health").map(String::as_str).unwrap_or("");
    let health = if health_text.is_empty() {
        None
    } else {
        match health_text.parse::<Health>() {
            Ok(h) => Some(h),
            Err(_) => {
                return Ok(error_page(
                    Some(&s),
                    &ApiError::BadRequest("health: unknown value".into()),
                ));
            }
        }
    };
    let environment = query
        .get("environment")
        .map(|e| e.trim().to_owned())
        .filter(|e| !e.is_empty());
    if let Some(Err(reason)) = environment
        .as_deref()
        .map(|e| apidrift_model::validate::refuse_nul("environment", e))
    {
        return Ok(error_page(Some(&s), &ApiError::BadRequest(reason)));
    }
    let offset = query
        .get("offset")
        .and_then(|o| o.parse::<u64>().ok())
        .unwrap_or(0);
    let filter = EndpointFilter {
        health,
        environment: environment.clone(),
    };
    let found = state
        .service
        .list_endpoints(
            &s.actor(),
            &filter,
            PageRequest {
                limit: PAGE_SIZE,
                offset,
            },
            views::uptime::SPARK_POINTS,
        )
        .await
        .map_err(ApiError::from)?;
    // Query values hidden, as every alert message shows the URL (an API key may sit there).
    let urls: Vec<String> = found
        .items
        .iter()
        .map(|l| apidrift_app::redact::query_values(&l.endpoint.settings.url))
        .collect();
    let rows = found
        .items
        .iter()
        .zip(&urls)
        .map(|(l, url)| (&l.endpoint, url, &l.recent))
        .map(|(e, url, recent)| views::endpoints::EndpointRow {
            id: e.id,
            name: &e.settings.name,
            health: e.health,
            method: e.settings.method.as_str(),
            url,
            environment: &e.settings.environment,
            last_checked_at: e.last_checked_at,
            response_time: e.response_time,
            breaking_count: e.breaking_count,
            warning_count: e.warning_count,
            uptime: e.uptime,
            // The page's sparkline points, read with it (one store call).
            recent: recent.iter().map(|p| p.response_time).collect(),
            schedule: e.settings.schedule,
            next_run_at: e.next_run_at,
            paused: e.paused,
        })
        .collect();
    let next = offset + u64::from(PAGE_SIZE);
    let view = views::endpoints::EndpointList {
        health,
        health_query: health_text,
        environment: environment.as_deref().unwrap_or(""),
        total: found.total,
        rows,
        previous: (offset > 0).then(|| offset.saturating_sub(u64::from(PAGE_SIZE))),
        next: (next < found.total).then_some(next),
        flash: query.get("done").map(String::as_str),
        can_delete: s.can(Action::DeleteEndpoints),
        can_add: s.can(Action::CreateEndpoints),
    };
    Ok(html(
        StatusCode::OK,
        views::endpoints::render(&chrome(&s, "endpoints"), &view),
    ))
}
