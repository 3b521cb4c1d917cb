//! The skeleton every console page and form shares: the HTML response with its security headers,
//! redirects, the chrome (user, CSRF token, active tab), error pages, the session of a page
//! request, and the small form helpers (fields, ids, the CSRF check).

use super::session::{self, Session};
use super::views::{self, Chrome};
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse};
use maud::Markup;
use uuid::Uuid;

pub(crate) type Page = Result<HttpResponse, ApiError>;

pub(crate) fn html(status: StatusCode, body: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("X-Frame-Options", "DENY"))
        .insert_header((
            "Content-Security-Policy",
            "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; frame-ancestors 'none'",
        ))
        .insert_header(("Referrer-Policy", "same-origin"))
        .body(body.into_string())
}

pub(crate) fn redirect(to: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, to))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

pub(crate) fn chrome(s: &Session, active: &'static str) -> Chrome {
    Chrome {
        user: Some((s.email().to_owned(), s.role().to_string())),
        csrf: s.csrf().to_owned(),
        active,
    }
}

/// An error as a page: the status of the API error and its text.
pub(crate) fn error_page(s: Option<&Session>, e: &ApiError) -> HttpResponse {
    use actix_web::ResponseError as _;
    let status = e.status_code();
    let c = s.map(|s| chrome(s, "")).unwrap_or_default();
    let message = e.to_string();
    let view = views::error::ErrorPage {
        status: status.as_u16(),
        title: status.canonical_reason().unwrap_or("Error"),
        message: &message,
    };
    html(status, views::error::render(&c, &view))
}

/// The session of a page request, or the redirect to the login page.
pub(crate) async fn need_session(
    state: &AppState,
    req: &HttpRequest,
) -> Result<Session, HttpResponse> {
    match session::current(state, req).await {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(redirect("/console/login")),
        Err(e) => Err(error_page(None, &e)),
    }
}

/// The session of a page request, or (returned from the handler) the redirect to the login page.
macro_rules! session_or_return {
    ($state:expr, $req:expr) => {
        match $crate::console::kit::need_session(&$state, &$req).await {
            Ok(s) => s,
            Err(resp) => return Ok(resp),
        }
    };
}
pub(crate) use session_or_return;

pub(crate) fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

pub(crate) fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

pub(crate) fn parse_uuid(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::NotFound)
}

/// State-changing forms: CSRF (Origin + `_csrf`) first.
pub(crate) fn check_form(
    s: &Session,
    req: &HttpRequest,
    pairs: &[(String, String)],
) -> Result<(), ApiError> {
    s.check_csrf(req, Some(field(pairs, "_csrf").unwrap_or("")))
}
