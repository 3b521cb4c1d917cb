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
//!
//! Most forms perform one action of the application's table ([`apidrift_app::actions`]) and take
//! a [`Form<A>`] instead: after the body, the CSRF check (403), the action's weakest role (403)
//! and one unit of the workspace's budget of the action's class (429), in that order, each
//! refusal an error page. Pages that show what only some roles may do take a [`SignedIn<A>`]:
//! the session and the role, no budget.

use super::kit::{check_form, error_page, form_pairs, redirect};
use super::session::{self, Session};
use crate::body::read_limited;
use crate::error::ApiError;
use crate::state::AppState;
use actix_web::dev::Payload;
use actix_web::error::InternalError;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use apidrift_app::Act;
use std::future::Future;
use std::marker::PhantomData;
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

/// A signed-in user's form performing the action `A` (a marker type of [`apidrift_app::act`]):
/// read as [`SessionForm`], then the CSRF check, the action's role and its budget.
pub struct Form<A: Act> {
    pub session: Session,
    pub pairs: Vec<(String, String)>,
    _action: PhantomData<A>,
}

impl<A: Act> FromRequest for Form<A> {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let form = SessionForm::from_request(req, payload);
        let req = req.clone();
        Box::pin(async move {
            let SessionForm { session, pairs } = form.await?;
            let allowed = async {
                check_form(&session, &req, &pairs)?;
                let state = app_state(&req)?;
                state.allow(&req, &session.actor(), A::ACTION).await
            }
            .await;
            match allowed {
                Ok(()) => Ok(Form {
                    session,
                    pairs,
                    _action: PhantomData,
                }),
                Err(e) => Err(respond(error_page(Some(&session), &e))),
            }
        })
    }
}

/// A signed-in user who may perform the action `A` (its weakest role; nothing is spent), for a
/// page that leads to it (a confirmation, a form). No session: the redirect to the login page.
pub struct SignedIn<A: Act> {
    pub session: Session,
    _action: PhantomData<A>,
}

impl<A: Act> FromRequest for SignedIn<A> {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let state = app_state(&req).map_err(|e| respond(error_page(None, &e)))?;
            let session = match session::current(state, &req).await {
                Ok(Some(s)) => s,
                Ok(None) => return Err(respond(redirect("/console/login"))),
                Err(e) => return Err(respond(error_page(None, &e))),
            };
            match session.actor().may(A::ACTION) {
                Ok(()) => Ok(SignedIn {
                    session,
                    _action: PhantomData,
                }),
                Err(e) => Err(respond(error_page(Some(&session), &ApiError::from(e)))),
            }
        })
    }
}

fn app_state(req: &HttpRequest) -> Result<&web::Data<AppState>, ApiError> {
    req.app_data::<web::Data<AppState>>()
        .ok_or_else(|| ApiError::Internal("application state missing".into()))
}

/// An already rendered page as the extractor's error.
fn respond(page: HttpResponse) -> actix_web::Error {
    InternalError::from_response("console form refused", page).into()
}
