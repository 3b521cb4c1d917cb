//! The **Add endpoint** page: the endpoint form (the one the edit page uses) at the create
//! defaults, posting to the create use case of `POST /api/v1/endpoints` (same action, same
//! validation, same plan rules). A refused entry shows the service's reason (naming the field)
//! above the submitted values, secrets left blank; a created endpoint opens its page.

use super::edit_form::{body_of, values_of};
use super::form::{Form, FormLimit, SignedIn};
use super::html::url_param;
use super::kit::{Page, chrome, html, redirect};
use super::session::Session;
use super::views::{self, edit::EditValues};
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use apidrift_app::act;
use apidrift_model::EndpointSettings;

/// Registers the add page (before `/console/endpoints/{id}`, which would take `new` for an id).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/console/endpoints/new")
            // As the edit form: a request body (up to 1 MiB, form-encoded up to three bytes per
            // byte) beside the other fields.
            .app_data(FormLimit::Bytes(
                3 * apidrift_model::validate::MAX_REQUEST_BODY_BYTES + 64 * 1024,
            ))
            .route(web::get().to(add_form))
            .route(web::post().to(add_submit)),
    );
}

fn add_page(s: &Session, values: EditValues, error: Option<&ApiError>) -> HttpResponse {
    use actix_web::ResponseError as _;
    let message = error.map(ToString::to_string);
    let view = views::edit::AddEndpoint {
        values,
        error: message.as_deref(),
    };
    let status = error.map_or(StatusCode::OK, |e| e.status_code());
    html(
        status,
        views::edit::render_add(&chrome(s, "endpoints"), &view),
    )
}

async fn add_form(signed_in: SignedIn<act::CreateEndpoints>) -> Page {
    let defaults = values_of(&EndpointSettings::new("", ""));
    Ok(add_page(&signed_in.session, defaults, None))
}

async fn add_submit(state: web::Data<AppState>, form: Form<act::CreateEndpoints>) -> Page {
    let (s, pairs) = (form.session, form.pairs);
    let (values, body) = body_of(&pairs);
    let created = match body {
        Err(m) => Err(ApiError::BadRequest(m)),
        Ok(body) => match state.service.register_endpoints(&s.actor(), &body).await {
            Err(e) => Err(ApiError::from(e)),
            Ok(answer) => match (answer.endpoints.first(), answer.skipped.first()) {
                (Some(e), _) => Ok(e.id),
                (None, Some(skipped)) => Err(ApiError::BadRequest(skipped.reason.clone())),
                (None, None) => Err(ApiError::BadRequest(
                    "endpoint: nothing was created; check the fields and save again".into(),
                )),
            },
        },
    };
    Ok(match created {
        Ok(id) => redirect(&format!(
            "/console/endpoints/{id}?done={}",
            url_param("Endpoint added. Capture a baseline to start detecting drift.")
        )),
        Err(e) => add_page(&s, values, Some(&e)),
    })
}
