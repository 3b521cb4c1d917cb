//! Signing in and out: the login form (rate limited per client address and per account), the
//! login itself (a fresh session id every time), and logout.

use super::form::{LOGIN_LIMIT, SessionForm};
use super::kit::{Page, check_form, error_page, field, form_pairs, html, redirect};
use super::session;
use super::views;
use crate::error::ApiError;
use crate::ratelimit::{Class, Quota};
use crate::state::AppState;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};

/// Login attempts allowed per client address and per account.
const LOGIN_PER_ADDRESS: Quota = Quota::per_minute(20);
const LOGIN_PER_ACCOUNT: Quota = Quota::per_minute(10);

/// Registers the login routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console", web::get().to(home))
        .route("/console/", web::get().to(home))
        .route("/console/login", web::get().to(login_form))
        .route("/console/login", web::post().to(login))
        .route("/console/logout", web::post().to(logout));
}

async fn home(state: web::Data<AppState>, req: HttpRequest) -> Page {
    Ok(match session::current(&state, &req).await? {
        Some(_) => redirect("/console/overview"),
        None => redirect("/console/login"),
    })
}

fn login_page(status: StatusCode, message: Option<&str>, email: &str) -> HttpResponse {
    html(
        status,
        views::login::render(&views::login::Login { message, email }),
    )
}

async fn login_form(state: web::Data<AppState>, req: HttpRequest) -> Page {
    if session::current(&state, &req).await?.is_some() {
        return Ok(redirect("/console/overview"));
    }
    Ok(login_page(StatusCode::OK, None, ""))
}

async fn login(state: web::Data<AppState>, req: HttpRequest, payload: web::Payload) -> Page {
    if let Err(e) = session::check_origin(&req) {
        return Ok(login_page(StatusCode::FORBIDDEN, Some(&e.to_string()), ""));
    }
    // The one form read without a session: small, and refused before reading when larger.
    let body = match crate::body::read_limited(
        &req,
        payload.into_inner(),
        LOGIN_LIMIT,
        ApiError::PayloadTooLarge,
    )
    .await
    {
        Ok(body) => body,
        Err(e) => {
            use actix_web::ResponseError as _;
            return Ok(login_page(e.status_code(), Some(&e.to_string()), ""));
        }
    };
    let pairs = form_pairs(&body);
    let email = field(&pairs, "email").unwrap_or("").trim().to_lowercase();
    let password = field(&pairs, "password").unwrap_or("");
    let ip = req
        .peer_addr()
        .map(|a| a.ip().to_string())
        .unwrap_or_default();
    for (key, quota) in [
        (format!("login:ip:{ip}"), LOGIN_PER_ADDRESS),
        (format!("login:user:{email}"), LOGIN_PER_ACCOUNT),
    ] {
        if let Err(ApiError::RateLimited(info)) = state
            .limiter
            .take(&key, Class::Unauthenticated, quota)
            .await
        {
            let mut resp = login_page(
                StatusCode::TOO_MANY_REQUESTS,
                Some(&format!(
                    "Too many login attempts: try again in {}.",
                    info.wait_text()
                )),
                &email,
            );
            if let Ok(v) = header::HeaderValue::from_str(&info.retry_after.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return Ok(resp);
        }
    }
    let Some((user, membership)) = state.service.login(&email, password).await? else {
        return Ok(login_page(
            StatusCode::UNAUTHORIZED,
            Some("Wrong e-mail or password."),
            &email,
        ));
    };
    // Fixation: whatever session the browser presented ends here; a fresh id is minted.
    if let Some(old) = session::cookie_value(&req) {
        let _ = state.service.end_session(&old).await;
    }
    let value = session::start(&state, user.id, membership.workspace_id).await?;
    Ok(HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/console/overview"))
        .cookie(session::session_cookie(&req, value))
        .finish())
}

async fn logout(state: web::Data<AppState>, req: HttpRequest, form: SessionForm) -> Page {
    let SessionForm { session: s, pairs } = form;
    if let Err(e) = check_form(&s, &req, &pairs) {
        return Ok(error_page(Some(&s), &e));
    }
    state.service.logout(&s.stored).await?;
    Ok(HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/console/login"))
        .cookie(session::removal_cookie(&req))
        .finish())
}
