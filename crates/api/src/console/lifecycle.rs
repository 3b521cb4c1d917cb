//! The endpoint lifecycle pages (D19): edit, pause/resume, delete with confirmation, and the
//! delete of several endpoints at once (ticked in the list, or all that an import created).
//! Thin callers of the service's update, pause and delete use cases; the roles are the actions'
//! (member edits and pauses, admin and above delete).

use super::edit_form::body_of;
use super::form::{Form, FormLimit, SignedIn};
use super::html::url_param;
use super::kit::{Page, chrome, error_page, field, form_pairs, html, parse_uuid, redirect};
use super::session::Session;
use super::views::{self, edit::EditValues};
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, web};
use apidrift_app::read::StoredEndpoint;
use apidrift_app::{Service, ServiceError, act};
use uuid::Uuid;

/// Registers the lifecycle routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    // Before `/console/endpoints/{id}` (registered later), which would take `delete` for an id.
    cfg.route(
        "/console/endpoints/delete",
        web::get().to(confirm_delete_many),
    )
    .route("/console/endpoints/delete", web::post().to(delete_many));
    cfg.service(
        web::resource("/console/endpoints/{id}/edit")
            // The edit form carries the request body (up to 1 MiB, form-encoded up to three
            // bytes per byte) beside the other fields.
            .app_data(FormLimit::Bytes(
                3 * apidrift_model::validate::MAX_REQUEST_BODY_BYTES + 64 * 1024,
            ))
            .route(web::get().to(edit_form))
            .route(web::post().to(edit_submit)),
    );
    cfg.route("/console/endpoints/{id}/pause", web::post().to(pause))
        .route("/console/endpoints/{id}/resume", web::post().to(resume))
        .route(
            "/console/endpoints/{id}/delete",
            web::get().to(confirm_delete),
        )
        .route("/console/endpoints/{id}/delete", web::post().to(delete));
}

fn values_of(e: &StoredEndpoint) -> EditValues {
    super::edit_form::values_of(&e.settings)
}

/// What the edit form says when the endpoint changed after it was opened.
pub const CHANGED_MEANWHILE: &str = "Someone else changed this endpoint after you opened the form: review the current values below and save again.";

fn edit_page(
    s: &Session,
    e: &StoredEndpoint,
    values: EditValues,
    version: i64,
    error: Option<&ApiError>,
) -> actix_web::HttpResponse {
    use actix_web::ResponseError as _;
    let message = error.map(ToString::to_string);
    let view = views::edit::EditEndpoint {
        id: e.id,
        stored_name: &e.settings.name,
        auth_type: e.secrets.auth_type.as_str(),
        has_headers: e.secrets.sealed_headers.is_some(),
        has_request_body: e.secrets.sealed_request_body.is_some(),
        values,
        version,
        error: message.as_deref(),
    };
    let status = error.map_or(StatusCode::OK, |e| e.status_code());
    html(status, views::edit::render(&chrome(s, "endpoints"), &view))
}

async fn endpoint_of(state: &AppState, s: &Session, id: &str) -> Result<StoredEndpoint, ApiError> {
    let id = parse_uuid(id)?;
    Ok(state.service.get_endpoint(&s.actor(), id).await?)
}

async fn edit_form(
    state: web::Data<AppState>,
    id: web::Path<String>,
    signed_in: SignedIn<act::EditEndpoints>,
) -> Page {
    let s = signed_in.session;
    Ok(match endpoint_of(&state, &s, &id).await {
        Ok(e) => edit_page(&s, &e, values_of(&e), e.version, None),
        Err(e) => error_page(Some(&s), &e),
    })
}

async fn edit_submit(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::EditEndpoints>,
) -> Page {
    let (s, pairs) = (form.session, form.pairs);
    let current = match endpoint_of(&state, &s, &id).await {
        Ok(e) => e,
        Err(e) => return Ok(error_page(Some(&s), &e)),
    };
    let (values, patch) = body_of(&pairs);
    // The version the form showed (absent from a form older than versions: the fields it sends
    // are laid over the current endpoint).
    let shown = match field(&pairs, "version").map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
            ApiError::BadRequest("version: not a version; open the edit form again".into())
        }),
    };
    let saved = match (patch, shown) {
        (Err(m), _) => Err(ApiError::BadRequest(m)),
        (_, Err(e)) => Err(e),
        (Ok(patch), Ok(shown)) => state
            .service
            .update_endpoint(&s.actor(), current.id, &patch, shown)
            .await
            .map_err(|e| match e {
                ServiceError::Changed { .. } => {
                    ApiError::PreconditionFailed(CHANGED_MEANWHILE.to_owned())
                }
                other => ApiError::from(other),
            }),
    };
    Ok(match saved {
        Ok(_) => redirect(&format!(
            "/console/endpoints/{}?done={}",
            current.id,
            url_param("Endpoint saved.")
        )),
        // Nothing was saved: the form again with what is stored now and its version.
        Err(e @ ApiError::PreconditionFailed(_)) => {
            match endpoint_of(&state, &s, &current.id.to_string()).await {
                Ok(now) => edit_page(&s, &now, values_of(&now), now.version, Some(&e)),
                Err(gone) => error_page(Some(&s), &gone),
            }
        }
        Err(e) => {
            // A refused field: the submitted values again, with the version the form showed.
            let version = field(&pairs, "version")
                .and_then(|v| v.trim().parse::<i64>().ok())
                .unwrap_or(current.version);
            edit_page(&s, &current, values, version, Some(&e))
        }
    })
}

async fn set_paused(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::PauseEndpoints>,
    paused: bool,
) -> Page {
    let s = form.session;
    let done = async {
        let id = parse_uuid(&id)?;
        state.service.set_paused(&s.actor(), id, paused).await?;
        Ok::<_, ApiError>(id)
    }
    .await;
    Ok(match done {
        Ok(id) => redirect(&format!(
            "/console/endpoints/{id}?done={}",
            url_param(if paused {
                "Paused: schedules skip this endpoint; manual checks still run."
            } else {
                "Resumed: schedules check this endpoint again."
            })
        )),
        Err(e) => error_page(Some(&s), &e),
    })
}

async fn pause(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::PauseEndpoints>,
) -> Page {
    set_paused(state, id, form, true).await
}

async fn resume(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::PauseEndpoints>,
) -> Page {
    set_paused(state, id, form, false).await
}

async fn confirm_delete(
    state: web::Data<AppState>,
    id: web::Path<String>,
    signed_in: SignedIn<act::DeleteEndpoints>,
) -> Page {
    let s = signed_in.session;
    let e = match endpoint_of(&state, &s, &id).await {
        Ok(e) => e,
        Err(e) => return Ok(error_page(Some(&s), &e)),
    };
    let view = views::confirm::Confirm {
        title: "Delete an endpoint",
        question: maud::html! {
            "Delete the endpoint " (e.settings.name) " (" (e.settings.method.as_str()) " " (e.settings.url) ")?"
        },
        consequence: "Its schedule, baselines, checks, diffs, contract and stored credentials are \
                      deleted with it, and its queued webhook deliveries are dropped. This cannot \
                      be undone.",
        action: format!("/console/endpoints/{}/delete", e.id),
        button: "Delete",
        button_id: "confirm-delete",
        danger: true,
        back: format!("/console/endpoints/{}", e.id),
        hidden: Vec::new(),
    };
    Ok(html(
        StatusCode::OK,
        views::confirm::render(&chrome(&s, "endpoints"), &view),
    ))
}

async fn delete(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::DeleteEndpoints>,
) -> Page {
    let id = parse_uuid(&id).map(|id| vec![id]);
    delete_confirmed(state, form, |_| id).await
}

/// The endpoints a bulk delete names: every `id` field, in order, duplicates once. An id that
/// does not parse is a 404 like an unknown one; none, or more than the service takes at once,
/// is a 400.
fn ids_of(pairs: &[(String, String)]) -> Result<Vec<Uuid>, ApiError> {
    let mut ids: Vec<Uuid> = Vec::new();
    for (_, v) in pairs.iter().filter(|(k, _)| k == "id") {
        let id = parse_uuid(v)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err(ApiError::BadRequest(
            "select at least one endpoint to delete (tick it in the list)".into(),
        ));
    }
    if ids.len() > Service::DELETE_MANY_MAX {
        return Err(ApiError::BadRequest(format!(
            "at most {} endpoints are deleted at once; select fewer",
            Service::DELETE_MANY_MAX
        )));
    }
    Ok(ids)
}

/// The confirmation of a bulk delete (`GET /console/endpoints/delete?id=…&id=…`): names every
/// endpoint (name, method, URL) before anything is deleted.
async fn confirm_delete_many(
    state: web::Data<AppState>,
    req: HttpRequest,
    signed_in: SignedIn<act::DeleteEndpoints>,
) -> Page {
    let s = signed_in.session;
    let pairs = form_pairs(req.query_string().as_bytes());
    let found = async {
        let mut endpoints = Vec::new();
        for id in ids_of(&pairs)? {
            endpoints.push(state.service.get_endpoint(&s.actor(), id).await?);
        }
        Ok::<_, ApiError>(endpoints)
    }
    .await;
    let endpoints = match found {
        Ok(e) => e,
        Err(e) => return Ok(error_page(Some(&s), &e)),
    };
    let n = endpoints.len();
    let button = format!("Delete {n} endpoint(s)");
    let view = views::confirm::Confirm {
        title: "Delete endpoints",
        question: maud::html! {
            "Delete these " (n) " endpoint(s)?"
            ul id="delete-list" {
                @for e in &endpoints {
                    li { (e.settings.name) " (" (e.settings.method.as_str()) " " (e.settings.url) ")" }
                }
            }
        },
        consequence: "Their schedules, baselines, checks, diffs, contracts and stored credentials \
                      are deleted with them, and their queued webhook deliveries are dropped. \
                      This cannot be undone.",
        action: "/console/endpoints/delete".into(),
        button: &button,
        button_id: "confirm-delete-many",
        danger: true,
        back: "/console/endpoints".into(),
        hidden: endpoints.iter().map(|e| ("id", e.id.to_string())).collect(),
    };
    Ok(html(
        StatusCode::OK,
        views::confirm::render(&chrome(&s, "endpoints"), &view),
    ))
}

/// `POST /console/endpoints/delete` (from the confirmation): deletes them all, then the list
/// says how many.
async fn delete_many(state: web::Data<AppState>, form: Form<act::DeleteEndpoints>) -> Page {
    delete_confirmed(state, form, ids_of).await
}

/// A confirmed delete of one endpoint or several (`ids` reads them from the form): CSRF, the
/// admin role and the budget (the form's extractor) and the confirmation field first, then the
/// service's use case; the list then says how many went.
async fn delete_confirmed(
    state: web::Data<AppState>,
    form: Form<act::DeleteEndpoints>,
    ids: impl FnOnce(&[(String, String)]) -> Result<Vec<Uuid>, ApiError>,
) -> Page {
    let (s, pairs) = (form.session, form.pairs);
    let done = async {
        if field(&pairs, "confirm") != Some("yes") {
            return Err(ApiError::BadRequest(
                "confirm: open the delete page and confirm there".into(),
            ));
        }
        let ids = ids(&pairs)?;
        Ok(state.service.delete_endpoints(&s.actor(), &ids).await?)
    }
    .await;
    Ok(match done {
        Ok(n) => redirect(&format!(
            "/console/endpoints?done={}",
            url_param(&format!("Deleted {n} endpoint(s)."))
        )),
        Err(e) => error_page(Some(&s), &e),
    })
}
