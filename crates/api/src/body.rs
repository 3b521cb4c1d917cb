//! Reading request bodies, for the routes and the console alike: one size-limited reader, and the
//! JSON bodies of the API on top of it.

use crate::error::ApiError;
use crate::state::MAX_BODY_BYTES;
use actix_web::http::header;
use actix_web::{HttpMessage, HttpRequest, web};
use serde_json::Value;

/// Reads an optional JSON request body: `None` when the request has no body (no or a zero
/// `Content-Length`, or an empty payload), else as [`read_json_body`].
pub async fn read_optional_json_body(
    req: &HttpRequest,
    body: web::Payload,
) -> Result<Option<Value>, ApiError> {
    if declared_length(req) == Some(0) {
        return Ok(None);
    }
    let bytes = read_limited(
        req,
        body.into_inner(),
        MAX_BODY_BYTES,
        ApiError::PayloadTooLarge,
    )
    .await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let content_type = req.content_type().trim().to_ascii_lowercase();
    if content_type != "application/json" && !content_type.ends_with("+json") {
        return Err(ApiError::UnsupportedMediaType(
            "Content-Type must be application/json".into(),
        ));
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ApiError::BadRequest(format!("request body is not valid JSON: {e}")))
}

/// Reads a JSON request body: `application/json` or `…+json` (else 415), at most 2 MiB (else
/// 413), valid JSON (else 400).
pub async fn read_json_body(req: &HttpRequest, body: web::Payload) -> Result<Value, ApiError> {
    let bytes = read_body(req, body, MAX_BODY_BYTES, ApiError::PayloadTooLarge).await?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::BadRequest(format!("request body is not valid JSON: {e}")))
}

/// Reads a JSON request body's bytes: `application/json` or `…+json` (else 415), at most `max`
/// bytes (else `too_large(max)`, before reading when `Content-Length` says so).
pub async fn read_body(
    req: &HttpRequest,
    body: web::Payload,
    max: usize,
    too_large: fn(usize) -> ApiError,
) -> Result<web::Bytes, ApiError> {
    let content_type = req.content_type().trim().to_ascii_lowercase();
    if content_type != "application/json" && !content_type.ends_with("+json") {
        return Err(ApiError::UnsupportedMediaType(
            "Content-Type must be application/json".into(),
        ));
    }
    read_limited(req, body.into_inner(), max, too_large).await
}

/// The request's `Content-Length`, when it declares one.
fn declared_length(req: &HttpRequest) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// Reads a request body of at most `max` bytes, the one reader of every route and console form:
/// a declared `Content-Length` above it is refused before a byte is read, a body that streams
/// past it as soon as it does (`too_large(max)`).
pub(crate) async fn read_limited(
    req: &HttpRequest,
    payload: actix_web::dev::Payload,
    max: usize,
    too_large: fn(usize) -> ApiError,
) -> Result<web::Bytes, ApiError> {
    if declared_length(req).is_some_and(|n| n > max as u64) {
        return Err(too_large(max));
    }
    let stream = actix_web::body::BodyStream::new(payload);
    match actix_web::body::to_bytes_limited(stream, max).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(ApiError::BadRequest(
            "request body could not be read".into(),
        )),
        Err(_) => Err(too_large(max)),
    }
}
