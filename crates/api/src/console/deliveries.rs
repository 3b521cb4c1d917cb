//! A webhook's delivery log and its **Send test** button (D19): thin callers of the service's
//! `list_deliveries` and `test_webhook`, the use cases of `GET /v1/webhooks/{id}/deliveries` and
//! `POST /v1/webhooks/{id}/test`, with the same role (admin and above) and, for the test, the same
//! rate-limit class (`creates`). Another workspace's webhook answers 404 like an unknown id.

use super::form::{Form, SignedIn};
use super::kit::{Page, chrome, error_page, html, parse_uuid};
use super::session::Session;
use super::views::deliveries::{DeliveryLog, DeliveryRow, TestOutcome};
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use apidrift_app::read::PageRequest;
use apidrift_app::{WebhookTestResult, act};
use std::collections::HashMap;
use uuid::Uuid;

/// Deliveries per page.
const PAGE_SIZE: u32 = 25;

/// Registers the delivery log routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console/webhooks/{id}", web::get().to(log))
        .route("/console/webhooks/{id}/test", web::post().to(send_test));
}

/// The log page of webhook `id` at `offset`, with the outcome of a test just sent.
async fn log_page(
    state: &AppState,
    s: &Session,
    id: Uuid,
    offset: u64,
    test: Option<&WebhookTestResult>,
) -> Result<HttpResponse, ApiError> {
    let actor = s.actor();
    let hook = state
        .service
        .list_webhooks(&actor)
        .await?
        .into_iter()
        .find(|w| w.id == id)
        .ok_or(ApiError::NotFound)?;
    let found = state
        .service
        .list_deliveries(
            &actor,
            id,
            PageRequest {
                limit: PAGE_SIZE,
                offset,
            },
        )
        .await?;
    // The endpoints' names, one lookup per endpoint of the page.
    let mut names: HashMap<Uuid, String> = HashMap::new();
    for d in &found.items {
        if names.contains_key(&d.endpoint_id) {
            continue;
        }
        if let Some(e) = state
            .service
            .find_endpoint(&actor, d.endpoint_id)
            .await
            .map_err(ApiError::from)?
        {
            names.insert(e.id, e.settings.name);
        }
    }
    let rows = found
        .items
        .iter()
        .map(|d| DeliveryRow {
            event: &d.event,
            endpoint_id: d.endpoint_id,
            endpoint_name: names.get(&d.endpoint_id).map(String::as_str),
            diff_id: d.diff_id,
            created_at: &d.created_at,
            attempts: d.attempts,
            last_attempt_at: d.last_attempt_at.as_deref(),
            last_status: d.last_status,
            last_error: d.last_error.as_deref(),
            state: &d.state,
        })
        .collect();
    let test = test.map(|t| match (t.delivered, t.error.as_deref()) {
        (true, _) => TestOutcome::Delivered(t.status),
        (false, error) => TestOutcome::Failed {
            status: t.status,
            error: error.unwrap_or("the receiver did not answer 2xx"),
        },
    });
    let next = offset + u64::from(PAGE_SIZE);
    let view = DeliveryLog {
        id: hook.id,
        kind: &hook.kind,
        url: &hook.url,
        min_severity: &hook.min_severity,
        created_at: &hook.created_at,
        test,
        total: found.total,
        rows,
        previous: (offset > 0).then(|| offset.saturating_sub(u64::from(PAGE_SIZE))),
        next: (next < found.total).then_some(next),
    };
    Ok(html(
        StatusCode::OK,
        super::views::deliveries::render(&chrome(s, "webhooks"), &view),
    ))
}

/// The delivery log; as the API, the role first (403, the extractor), then the webhook (404).
async fn log(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    signed_in: SignedIn<act::ListWebhooks>,
) -> Page {
    let s = signed_in.session;
    let offset = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "offset")
        .and_then(|(_, v)| v.parse::<u64>().ok())
        .unwrap_or(0);
    let shown = async {
        let id = parse_uuid(&id)?;
        log_page(&state, &s, id, offset, None).await
    }
    .await;
    Ok(shown.unwrap_or_else(|e| error_page(Some(&s), &e)))
}

async fn send_test(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::ManageWebhooks>,
) -> Page {
    let s = form.session;
    let shown = async {
        let id = parse_uuid(&id)?;
        let result = state.service.test_webhook(&s.actor(), id).await?;
        log_page(&state, &s, id, 0, Some(&result)).await
    }
    .await;
    Ok(shown.unwrap_or_else(|e| error_page(Some(&s), &e)))
}
