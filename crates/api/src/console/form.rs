//! The body of a console form, read only once the session is known.
//!
//! Every state-changing console route takes a [`SessionForm`]: the extractor first looks up the
//! session (no session → the redirect to the login page, and not a byte of the body is read),
//! then reads the form body up to the route's limit ([`FormLimit`], 64 KiB unless the route says
//! otherwise; a larger `Content-Length` is refused before reading, a chunked body is cut off at
//! the limit) and parses it as `application/x-www-form-urlencoded` pairs. An anonymous client can
//! therefore not make the service buffer a body at all; a signed-in one only up to the limit of
//! the route it posts to. The login form is the one anonymous body; it has a small limit of its
//! own ([`LOGIN_LIMIT`]).

use super::kit::{error_page, form_pairs, redirect};
use super::session::{self, Session};
use crate::body::read_limited;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::dev::Payload;
use actix_web::error::InternalError;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use std::future::Future;
use std::pin::Pin;

/// The body limit of a console form without a [`FormLimit`] of its own: far above any form the
/// console renders (the largest, the endpoint edit form with a request body and headers, stays
/// under the endpoint's own 64 KiB body limit plus its fields).
pub const DEFAULT_FORM_LIMIT: usize = 256 * 1024;

/// The body limit of the login form, the one form read without a session.
pub const LOGIN_LIMIT: usize = 8 * 1024;

/// A route's form body limit, as resource `app_data`: a fixed size, or one the service's
/// configuration decides (the pasted OpenAPI document of the import form).
#[derive(Clone, Copy)]
pub enum FormLimit {
    /// At most this many bytes.
    Bytes(usize),
    /// Three times the service's import limit: a pasted document, form-encoded (up to three
    /// bytes per byte); the service then applies the import limit to the document itself.
    Import,
}

impl FormLimit {
    fn bytes(self, state: &AppState) -> usize {
        match self {
            FormLimit::Bytes(n) => n,
            FormLimit::Import => state.service.import_max_bytes().saturating_mul(3),
        }
    }
}

/// A signed-in user's form: the session and the form's pairs, in order.
pub struct SessionForm {
    pub session: Session,
    pub pairs: Vec<(String, String)>,
}

impl FromRequest for SessionForm {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let payload = payload.take();
        Box::pin(async move {
            let Some(state) = req.app_data::<web::Data<AppState>>() else {
                let e = ApiError::Internal("application state missing".into());
                return Err(respond(error_page(None, &e)));
            };
            let session = match session::current(state, &req).await {
                Ok(Some(s)) => s,
                Ok(None) => return Err(respond(redirect("/console/login"))),
                Err(e) => return Err(respond(error_page(None, &e))),
            };
            let limit = req
                .app_data::<FormLimit>()
                .copied()
                .unwrap_or(FormLimit::Bytes(DEFAULT_FORM_LIMIT))
                .bytes(state);
            match read_limited(&req, payload, limit, ApiError::PayloadTooLarge).await {
                Ok(body) => Ok(SessionForm {
                    session,
                    pairs: form_pairs(&body),
                }),
                Err(e) => Err(respond(error_page(Some(&session), &e))),
            }
        })
    }
}

/// An already rendered page as the extractor's error.
fn respond(page: HttpResponse) -> actix_web::Error {
    InternalError::from_response("console form refused", page).into()
}
