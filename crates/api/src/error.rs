//! [`ApiError`]: every failure of the API, answered as `{"error": "<reason>"}` with
//! `Content-Type: application/json` (D5).

use crate::gcra::RateInfo;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use apidrift_app::StoreFault;
use apidrift_model::ErrorBody;

/// The body of every 401 (D4): the same text for a missing, malformed, unknown, expired or
/// revoked token.
pub const UNAUTHORIZED: &str = "missing or invalid token";
/// The body of every 404 (D4): the same text for a missing row, another workspace's row, a
/// malformed id and an unknown route.
pub const NOT_FOUND: &str = "not found";

/// A failure of a request. `Display` is the `error` text of the response: it never carries a
/// token, a credential or a stored value.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: a malformed query parameter or request body.
    #[error("{0}")]
    BadRequest(String),
    /// 401: no valid token.
    #[error("{UNAUTHORIZED}")]
    Unauthorized,
    /// 402: the workspace plan does not allow the request.
    #[error("{0}")]
    PaymentRequired(String),
    /// 403: a missing scope or a role too weak.
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such resource in this workspace (or no such route).
    #[error("{NOT_FOUND}")]
    NotFound,
    /// 405: the route exists with other methods (listed in `Allow`).
    #[error("method not allowed")]
    MethodNotAllowed(&'static str),
    /// 412: the `If-Match` of the request names another version than the current one.
    #[error("{0}")]
    PreconditionFailed(String),
    /// 413: the body is larger than the limit.
    #[error("request body larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// 413: an OpenAPI import body larger than the import limit; names the setting to raise.
    #[error(
        "request body larger than the import limit of {0} bytes; raise `[limits] import_max_bytes` (APIDRIFT_LIMITS__IMPORT_MAX_BYTES) to import a larger document"
    )]
    DocumentTooLarge(usize),
    /// 415: the body is not JSON.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 429: a rate limit was exceeded.
    #[error("rate limit exceeded: retry in {}", .0.wait_text())]
    RateLimited(RateInfo),
    /// 503: the server cannot serve the request now (no sealing key, database down).
    #[error("{0}")]
    Unavailable(String),
    /// 500: anything else. The detail is logged, never sent.
    #[error("internal server error")]
    Internal(String),
}

impl ApiError {
    /// A storage failure: unavailability is 503, the rest 500. The detail goes to the log only.
    pub fn store(fault: StoreFault) -> Self {
        match fault {
            StoreFault::NotFound => ApiError::NotFound,
            // The service turns it into its own text; this is the safety net.
            StoreFault::Changed(text) => ApiError::PreconditionFailed(text),
            // Input the store cannot hold (a NUL in user text): the caller's mistake, named by
            // the store's message. The service refuses it earlier; this is the safety net.
            StoreFault::InvalidInput(text) => ApiError::BadRequest(text),
            StoreFault::Unavailable(detail) => {
                tracing::error!(error = %detail, "database unavailable");
                ApiError::Unavailable("database unavailable".into())
            }
            StoreFault::Other(detail) => ApiError::Internal(detail),
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::PaymentRequired(_) => StatusCode::PAYMENT_REQUIRED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            ApiError::PayloadTooLarge(_) | ApiError::DocumentTooLarge(_) => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let ApiError::Internal(detail) = self {
            tracing::error!(error = %detail, "internal error");
        }
        let mut response = HttpResponse::build(self.status_code());
        match self {
            ApiError::Unauthorized => {
                response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
            }
            ApiError::MethodNotAllowed(allow) => {
                response.insert_header((header::ALLOW, *allow));
            }
            ApiError::RateLimited(info) => {
                response.insert_header((header::RETRY_AFTER, info.retry_after.to_string()));
                for (name, value) in info.headers() {
                    response.insert_header((name, value));
                }
            }
            _ => {}
        }
        json_error(response, &self.to_string())
    }
}

/// Builds `{"error": text}` with the JSON content type.
pub fn json_error(mut builder: actix_web::HttpResponseBuilder, text: &str) -> HttpResponse {
    let body = serde_json::to_vec(&ErrorBody::new(text))
        .unwrap_or_else(|_| br#"{"error":"internal server error"}"#.to_vec());
    builder
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ))
        .body(body)
}

/// The one mapping of a use case's failure to HTTP. A 404 never says which row or why (D4); a
/// store failure goes through [`ApiError::store`].
impl From<apidrift_app::ServiceError> for ApiError {
    fn from(e: apidrift_app::ServiceError) -> Self {
        use apidrift_app::ServiceError as S;
        if let Some(fault) = e.store_fault() {
            return ApiError::store(fault);
        }
        match e {
            S::Invalid(text) | S::Conflict(text) => ApiError::BadRequest(text),
            S::PlanLimit(text) => ApiError::PaymentRequired(text),
            S::Forbidden(text) => ApiError::Forbidden(text),
            S::NotFound { .. } => ApiError::NotFound,
            S::TooLarge(limit) => ApiError::DocumentTooLarge(limit),
            e @ S::NoKey(_) => ApiError::Unavailable(e.to_string()),
            e @ S::Changed { .. } => ApiError::PreconditionFailed(e.to_string()),
            e @ S::Contended { .. } => ApiError::Unavailable(e.to_string()),
            other => ApiError::Internal(other.to_string()),
        }
    }
}
