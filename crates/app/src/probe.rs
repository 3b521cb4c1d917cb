//! A one-off URL probe (D15): one request through the SSRF-safe client (D14); the answer
//! describes the response (status, time, content type, size, the inferred shape of a JSON body)
//! and never carries the body itself. A fetch that fails is [`ServiceError::Invalid`] naming the
//! cause.

use super::actions::{Action, Actor};
use super::base::Service;
use super::error::ServiceError;
use apidrift_diff::Shape;
use apidrift_model::HttpMethod;
use apidrift_model::validate;
use apidrift_monitor::FetchRequest;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Per-request timeout of a probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Request body of `POST /api/check`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProbeRequest {
    /// Absolute http(s) URL; the outbound policy of D14 applies.
    pub url: String,
    /// Default `GET`.
    #[serde(default)]
    pub method: Option<String>,
    /// Extra request headers, name → value (never stored, never echoed).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub headers: Option<serde_json::Map<String, Value>>,
}

/// Answer of `POST /api/check`: what the response looked like, never its body.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ProbeResult {
    pub status: u16,
    /// Milliseconds from the first lookup to the last body byte.
    pub response_time: u32,
    pub content_type: Option<String>,
    /// Body size in bytes (after decompression).
    pub size: usize,
    /// Whether the body parsed as JSON.
    pub json: bool,
    /// The inferred shape of a JSON body (types per path), `null` otherwise.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub shape: Option<Shape>,
}

impl Service {
    /// Probes the URL of a probe request body (`{"url", "method"?, "headers"?}`) for workspace
    /// `ws` (whose idle connections the request may reuse).
    pub async fn probe(&self, actor: &Actor, body: &Value) -> Result<ProbeResult, ServiceError> {
        actor.may(Action::ProbeUrls)?;
        let ws = actor.workspace();
        let request: ProbeRequest = serde_json::from_value(body.clone())
            .map_err(|e| ServiceError::Invalid(format!("request body: {e}")))?;
        let method = match request.method.as_deref() {
            None | Some("") => HttpMethod::Get,
            Some(m) => m
                .parse::<HttpMethod>()
                .map_err(|_| ServiceError::Invalid(format!("method: unknown method \"{m}\"")))?,
        };
        let url = self
            .client
            .check_url(request.url.trim())
            .map_err(|e| ServiceError::Invalid(format!("url: {}", e.message)))?;
        // The same header rules as an endpoint's `headers` (reserved names, field values).
        let headers = match request.headers {
            None => Vec::new(),
            Some(map) => {
                validate::request_headers(&Value::Object(map)).map_err(ServiceError::Invalid)?
            }
        };
        let mut request = FetchRequest::get(url);
        request.method = method;
        request.headers = headers;
        request.timeout = PROBE_TIMEOUT;
        request.workspace = Some(ws);
        let response = self.client.fetch(&request).await.map_err(|e| {
            ServiceError::Invalid(format!("fetch failed: {} ({})", e.message, e.kind))
        })?;
        let parsed = serde_json::from_slice::<Value>(&response.body).ok();
        let shape = match &parsed {
            Some(v) => Shape::infer(v).ok(),
            None => None,
        };
        Ok(ProbeResult {
            status: response.status,
            response_time: response.elapsed_ms(),
            content_type: response.content_type().map(str::to_owned),
            size: response.body.len(),
            json: parsed.is_some(),
            shape,
        })
    }
}
