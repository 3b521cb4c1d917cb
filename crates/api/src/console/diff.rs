//! One diff: changes grouped and coloured by severity, and Accept with its confirmation.

use super::form::{Form, SignedIn};
use super::kit::{Page, chrome, error_page, html, parse_uuid, redirect, session_or_return};
use super::views;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, web};
use apidrift_app::{Action, act};
use uuid::Uuid;

/// Registers the diff page and Accept.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console/diffs/{id}", web::get().to(diff))
        .route("/console/diffs/{id}/accept", web::get().to(confirm_accept))
        .route("/console/diffs/{id}/accept", web::post().to(accept_diff));
}

async fn diff(state: web::Data<AppState>, req: HttpRequest, id: web::Path<String>) -> Page {
    let s = session_or_return!(state, req);
    let found = match parse_uuid(&id) {
        Ok(id) => state
            .service
            .find_diff(&s.actor(), id)
            .await
            .map_err(ApiError::from)?,
        Err(_) => None,
    };
    let Some(d) = found else {
        return Ok(error_page(Some(&s), &ApiError::NotFound));
    };
    let groups = state.service.group_changes(&d.changes);
    let view = views::diff::DiffView {
        summary: &d.base,
        changes: &d.changes,
        groups: &groups,
        just_accepted: req.query_string().contains("accepted=1"),
        can_accept: s.can(Action::AcceptDiffs),
    };
    Ok(html(
        StatusCode::OK,
        views::diff::render(&chrome(&s, "endpoints"), &view),
    ))
}

/// The confirmation step of Accept: names the endpoint and the diff's counts.
async fn confirm_accept(
    state: web::Data<AppState>,
    id: web::Path<String>,
    signed_in: SignedIn<act::AcceptDiffs>,
) -> Page {
    let s = signed_in.session;
    let found: Result<_, ApiError> = async {
        let id = parse_uuid(&id)?;
        state
            .service
            .find_diff(&s.actor(), id)
            .await
            .map_err(ApiError::from)?
            .ok_or(ApiError::NotFound)
    }
    .await;
    let d = match found {
        Ok(d) => d.base,
        Err(e) => return Ok(error_page(Some(&s), &e)),
    };
    if d.accepted {
        return Ok(redirect(&format!("/console/diffs/{}", d.id)));
    }
    let name = d.endpoint_name.as_deref().unwrap_or("an endpoint");
    let view = views::confirm::Confirm {
        title: "Accept a diff",
        question: maud::html! {
            "Accept the diff of " (name) " from " (views::layout::time(d.created_at)) " ("
            (d.breaking_count) " breaking, " (d.warning_count) " warnings, " (d.info_count) " info)?"
        },
        consequence: "The response that produced it becomes the endpoint's new baseline; when it                       is the latest diff, the endpoint turns healthy and shows no breaking or                       warning changes.",
        action: format!("/console/diffs/{}/accept", d.id),
        button: "Accept",
        button_id: "confirm-accept",
        danger: false,
        back: format!("/console/diffs/{}", d.id),
        hidden: Vec::new(),
    };
    Ok(html(
        StatusCode::OK,
        views::confirm::render(&chrome(&s, "endpoints"), &view),
    ))
}

async fn accept_diff(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Form<act::AcceptDiffs>,
) -> Page {
    let s = form.session;
    let done: Result<Uuid, ApiError> = async {
        let id = parse_uuid(&id)?;
        state.service.accept_diff(&s.actor(), id).await?;
        Ok(id)
    }
    .await;
    match done {
        Ok(id) => Ok(redirect(&format!("/console/diffs/{id}?accepted=1"))),
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}
