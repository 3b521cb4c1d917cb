//! One endpoint: details without credentials, latest diffs, the check history and its charts,
//! and the capture-baseline and run-check buttons.

use super::form::Form;
use super::html::url_param;
use super::kit::{Page, chrome, error_page, field, html, parse_uuid, redirect, session_or_return};
use super::session::Session;
use super::views;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, web};
use apidrift_app::read::{DiffFilter, PageRequest};
use apidrift_app::{Action, act};
use std::collections::HashMap;

/// Checks the endpoint page's charts draw, and checks per history page.
const CHART_CHECKS: u32 = 50;
const CHECKS_PAGE: u32 = 20;

/// Registers the endpoint page and its actions.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console/endpoints/{id}", web::get().to(endpoint))
        .route("/console/endpoints/{id}/check", web::post().to(run_check))
        .route(
            "/console/endpoints/{id}/baseline",
            web::post().to(capture_baseline),
        );
}

/// The outcome message an endpoint action redirected with (`?done=`).
fn flash(req: &HttpRequest) -> Option<String> {
    let query: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect();
    query.get("done").cloned()
}

async fn endpoint(state: web::Data<AppState>, req: HttpRequest, id: web::Path<String>) -> Page {
    let s = session_or_return!(state, req);
    let actor = s.actor();
    let found = match parse_uuid(&id) {
        Ok(id) => state
            .service
            .find_endpoint(&actor, id)
            .await
            .map_err(ApiError::from)?,
        Err(_) => None,
    };
    let Some(e) = found else {
        return Ok(error_page(Some(&s), &ApiError::NotFound));
    };
    let history = state
        .service
        .list_diffs(
            &actor,
            &DiffFilter {
                endpoint_id: Some(e.id),
                ..DiffFilter::default()
            },
            PageRequest {
                limit: 20,
                offset: 0,
            },
        )
        .await
        .map_err(ApiError::from)?;
    let flash = flash(&req);
    let offset = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "checks")
        .and_then(|(_, v)| v.parse::<u64>().ok())
        .unwrap_or(0);
    let latest = state
        .service
        .list_checks(
            &actor,
            e.id,
            PageRequest {
                limit: CHART_CHECKS,
                offset: 0,
            },
        )
        .await?;
    let page = state
        .service
        .list_checks(
            &actor,
            e.id,
            PageRequest {
                limit: CHECKS_PAGE,
                offset,
            },
        )
        .await?;
    let parse = |t: &str| apidrift_model::timestamp::parse(t).ok();
    let chart: Vec<views::chart::CheckPoint<'_>> = latest
        .items
        .iter()
        .filter_map(|c| {
            Some(views::chart::CheckPoint {
                at: parse(&c.started_at)?,
                response_time: c.response_time,
                http_status: c.http_status,
                breaking_count: c.breaking_count,
                warning_count: c.warning_count,
                error: c.error.as_deref(),
            })
        })
        .collect();
    let checks: Vec<views::endpoint::CheckRow<'_>> = page
        .items
        .iter()
        .filter_map(|c| {
            Some(views::endpoint::CheckRow {
                started_at: parse(&c.started_at)?,
                http_status: c.http_status,
                response_time: c.response_time,
                error: c.error.as_deref(),
                diff_id: c.diff_id,
                breaking_count: c.breaking_count,
                warning_count: c.warning_count,
                change_count: c.change_count,
                scheduled: c.scheduled,
            })
        })
        .collect();
    let next = offset + u64::from(CHECKS_PAGE);
    let volatile_paths = state.service.volatile_paths(&actor, e.id).await?;
    // Query values hidden, as on the endpoint list and in alert messages.
    let shown_url = apidrift_app::redact::query_values(&e.settings.url);
    let view = views::endpoint::EndpointDetail {
        id: e.id,
        name: &e.settings.name,
        health: e.health,
        method: e.settings.method.as_str(),
        url: &shown_url,
        environment: &e.settings.environment,
        auth_type: e.secrets.auth_type.as_str(),
        diff_mode: e.settings.diff_mode.as_str(),
        baseline_version: e.baseline_version,
        identity_keys: &e.settings.identity_keys,
        volatile_paths: &volatile_paths,
        response_contract: e
            .response_contract
            .as_ref()
            .map(|c| (c.operation.as_str(), c.status)),
        last_checked_at: e.last_checked_at,
        response_time: e.response_time,
        breaking_count: e.breaking_count,
        warning_count: e.warning_count,
        flash: flash.as_deref(),
        can_act: s.can(Action::RunChecks),
        can_delete: s.can(Action::DeleteEndpoints),
        paused: e.paused,
        schedule: e.settings.schedule,
        next_run_at: e.next_run_at,
        history: &history.items,
        now: time::OffsetDateTime::now_utc(),
        chart: &chart,
        checks: &checks,
        checks_total: page.total,
        checks_previous: (offset > 0).then(|| offset.saturating_sub(u64::from(CHECKS_PAGE))),
        checks_next: (next < page.total).then_some(next),
    };
    Ok(html(
        StatusCode::OK,
        views::endpoint::render(&chrome(&s, "endpoints"), &view),
    ))
}

/// Capture a baseline or run a check from the endpoint page (the form's extractor checked the
/// role and spent the `checks` budget).
async fn endpoint_action(
    state: web::Data<AppState>,
    s: Session,
    pairs: Vec<(String, String)>,
    id: web::Path<String>,
    check: bool,
) -> Page {
    let outcome: Result<String, ApiError> = async {
        let id = parse_uuid(&id)?;
        let actor = s.actor();
        if check {
            let outcome = state.service.run_check(&actor, id).await?;
            let r = outcome.to_response();
            Ok(format!(
                "Check done: {} breaking, {} warnings.",
                r.breaking_count, r.warning_count
            ))
        } else {
            // An unreadable choice goes through as 0 so that the service names the field.
            let samples = field(&pairs, "samples").map_or(Ok(1), str::parse::<u8>);
            let b = state
                .service
                .capture_baseline_sampled(&actor, id, samples.unwrap_or(0))
                .await?;
            Ok(match b.volatile_paths.len() {
                0 => format!(
                    "Baseline {} captured (HTTP {}).",
                    b.baseline_version, b.status
                ),
                n => format!(
                    "Baseline {} captured (HTTP {}) from {} samples; {n} volatile path(s) learned.",
                    b.baseline_version, b.status, b.samples
                ),
            })
        }
    }
    .await;
    match outcome {
        Ok(message) => Ok(redirect(&format!(
            "/console/endpoints/{}?done={}",
            id.as_str(),
            url_param(&message)
        ))),
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}

async fn run_check(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::RunChecks>,
) -> Page {
    endpoint_action(state, form.session, form.pairs, id, true).await
}

async fn capture_baseline(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::CaptureBaselines>,
) -> Page {
    endpoint_action(state, form.session, form.pairs, id, false).await
}
