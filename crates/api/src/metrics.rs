//! `GET /metrics`: the Prometheus text exposition format (0.0.4) on the main port.
//!
//! Without `[metrics] token` the route needs no credential (like `/healthz`); with one, it needs
//! `Authorization: Bearer TOKEN` (the scheme in any case, as RFC 9110 has it) and answers 401
//! otherwise. Families (see docs/operations.md):
//!
//! * `apidrift_http_requests_total{route,method,status}` and
//!   `apidrift_http_request_duration_seconds{route}` (histogram), counted by [`observe`], which
//!   the request middleware calls once per response. `route` is the matched route template
//!   (`/api/v1/endpoints/{id}`), never the raw path; a request no route matched is
//!   `route="(unmatched)"`, and `method` is one of the standard methods or `other`, so the label
//!   sets stay bounded whatever clients send.
//! * the check, schedule and delivery families of [`apidrift_app::metrics`];
//! * `apidrift_endpoints{health}` and `apidrift_outbox_pending`, gauges read from the store at
//!   scrape time (so every instance on one database reports the same figures), and
//!   `apidrift_store_up` (1 when that read succeeded);
//! * with `[metrics] per_endpoint = true` only: `apidrift_endpoint_up`,
//!   `apidrift_endpoint_response_seconds` and `apidrift_endpoint_drift_open`, labelled
//!   `workspace`, `endpoint` (names) and `endpoint_id`, for at most `[metrics] max_series`
//!   endpoints (one store read per scrape), and `apidrift_metrics_series_dropped`, the
//!   endpoints left out.

pub use crate::bearer::{TokenDigest, digest};
use crate::state::AppState;
use actix_web::dev::ServiceResponse;
use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, web};
use apidrift_app::metrics::{Histogram, family};
use apidrift_model::Health;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, RwLock};
use std::time::Instant;

/// The `Content-Type` of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The route label of requests no route matched.
pub const UNMATCHED: &str = "(unmatched)";
/// Most distinct (route, method, status) series kept; later ones are counted under
/// `route="(other)"`. Route templates are a fixed set, so this only guards against surprises.
const MAX_SERIES: usize = 2000;

/// Request-duration buckets (seconds).
const HTTP_BOUNDS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

type Key = (String, &'static str, u16);

#[derive(Default)]
struct Http {
    requests: RwLock<HashMap<Key, AtomicU64>>,
    durations: RwLock<HashMap<String, Histogram<11>>>,
}

static HTTP: LazyLock<Http> = LazyLock::new(Http::default);

/// The method label: a standard method's name, or `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Counts one response: called by the request middleware with the request's method and the time
/// it started.
pub fn observe<B>(method: &Method, res: &ServiceResponse<B>, started: Instant) {
    let route = res
        .request()
        .match_pattern()
        .unwrap_or_else(|| UNMATCHED.to_owned());
    record(
        route,
        method_label(method),
        res.status().as_u16(),
        started.elapsed(),
    );
}

fn record(route: String, method: &'static str, status: u16, took: std::time::Duration) {
    let http = &*HTTP;
    let mut key = (route, method, status);
    let counted = http
        .requests
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
        .map(|c| c.fetch_add(1, Ordering::Relaxed))
        .is_some();
    if !counted {
        let mut map = http.requests.write().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_SERIES && !map.contains_key(&key) {
            key.0 = "(other)".to_owned();
        }
        map.entry(key.clone())
            .or_insert_with(|| AtomicU64::new(0))
            .fetch_add(1, Ordering::Relaxed);
    }
    let route = key.0;
    let observed = http
        .durations
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&route)
        .map(|h| h.observe(took))
        .is_some();
    if !observed {
        http.durations
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(route)
            .or_insert_with(|| Histogram::new(HTTP_BOUNDS))
            .observe(took);
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn render_http(out: &mut String) {
    let http = &*HTTP;
    family(
        out,
        "apidrift_http_requests_total",
        "counter",
        "HTTP requests answered, by route template, method and status.",
    );
    {
        let map = http.requests.read().unwrap_or_else(|p| p.into_inner());
        let mut rows: Vec<(&Key, u64)> = map
            .iter()
            .map(|(k, v)| (k, v.load(Ordering::Relaxed)))
            .collect();
        rows.sort_by(|a, b| a.0.cmp(b.0));
        for ((route, method, status), n) in rows {
            let _ = writeln!(
                out,
                "apidrift_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {n}",
                escape(route)
            );
        }
    }
    family(
        out,
        "apidrift_http_request_duration_seconds",
        "histogram",
        "Time from receiving a request to its response, by route template.",
    );
    let map = http.durations.read().unwrap_or_else(|p| p.into_inner());
    let mut routes: Vec<&String> = map.keys().collect();
    routes.sort();
    for route in routes {
        if let Some(h) = map.get(route) {
            let labels = format!("route=\"{}\"", escape(route));
            h.render(out, "apidrift_http_request_duration_seconds", &labels);
        }
    }
}

const HEALTHS: [Health; 5] = [
    Health::Healthy,
    Health::Warning,
    Health::Breaking,
    Health::Unknown,
    Health::Checking,
];

/// The whole exposition: HTTP, checks, schedules, deliveries, then the store's gauges.
async fn render(state: &AppState) -> String {
    let mut out = String::with_capacity(16 * 1024);
    family(
        &mut out,
        "apidrift_build_info",
        "gauge",
        "Always 1; the version of this process.",
    );
    let _ = writeln!(
        out,
        "apidrift_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    render_http(&mut out);
    apidrift_app::metrics::render(&mut out);
    let gauges = state.service.operator_gauges().await;
    if let Err(e) = &gauges {
        tracing::warn!(error = %e, "metrics: reading the store's figures failed");
    }
    family(
        &mut out,
        "apidrift_store_up",
        "gauge",
        "1 when this scrape could read the store's figures, else 0.",
    );
    let series = match state.endpoint_series {
        Some(limit) => Some(state.service.endpoint_series(limit).await),
        None => None,
    };
    if let Some(Err(e)) = &series {
        tracing::warn!(error = %e, "metrics: reading the per-endpoint figures failed");
    }
    let up = gauges.is_ok() && !matches!(series, Some(Err(_)));
    let _ = writeln!(out, "apidrift_store_up {}", u8::from(up));
    if let Some(Ok(series)) = series {
        render_endpoints(&mut out, &series);
    }
    if let Ok(g) = gauges {
        family(
            &mut out,
            "apidrift_endpoints",
            "gauge",
            "Endpoints by health, across every workspace (read from the store at scrape time).",
        );
        for h in HEALTHS {
            let _ = writeln!(
                out,
                "apidrift_endpoints{{health=\"{}\"}} {}",
                h.as_str(),
                g.endpoints(h)
            );
        }
        family(
            &mut out,
            "apidrift_outbox_pending",
            "gauge",
            "Webhook deliveries waiting to be sent, retries included (read from the store).",
        );
        let _ = writeln!(out, "apidrift_outbox_pending {}", g.outbox_pending);
    }
    out
}

/// The per-endpoint families (`[metrics] per_endpoint`).
fn render_endpoints(out: &mut String, series: &apidrift_app::read::EndpointSeries) {
    let labels = |s: &apidrift_app::read::EndpointSample| {
        format!(
            "workspace=\"{}\",endpoint=\"{}\",endpoint_id=\"{}\"",
            escape(&s.workspace),
            escape(&s.endpoint),
            s.endpoint_id
        )
    };
    family(
        out,
        "apidrift_endpoint_up",
        "gauge",
        "1 when the endpoint's last check got a response with a status below 500, else 0; absent before its first check.",
    );
    for s in &series.samples {
        if let Some(up) = s.up {
            let _ = writeln!(
                out,
                "apidrift_endpoint_up{{{}}} {}",
                labels(s),
                u8::from(up)
            );
        }
    }
    family(
        out,
        "apidrift_endpoint_response_seconds",
        "gauge",
        "The response time of the endpoint's last check, in seconds; absent when it got no response.",
    );
    for s in &series.samples {
        if let Some(ms) = s.response_time_ms {
            let _ = writeln!(
                out,
                "apidrift_endpoint_response_seconds{{{}}} {}",
                labels(s),
                f64::from(ms) / 1000.0
            );
        }
    }
    family(
        out,
        "apidrift_endpoint_drift_open",
        "gauge",
        "1 while the endpoint has drift that was not accepted (health warning or breaking), else 0.",
    );
    for s in &series.samples {
        let _ = writeln!(
            out,
            "apidrift_endpoint_drift_open{{{}}} {}",
            labels(s),
            u8::from(s.drift_open)
        );
    }
    family(
        out,
        "apidrift_metrics_series_dropped",
        "gauge",
        "Endpoints left out of the per-endpoint series because of [metrics] max_series.",
    );
    let kept = u64::try_from(series.samples.len()).unwrap_or(u64::MAX);
    let _ = writeln!(
        out,
        "apidrift_metrics_series_dropped {}",
        series.total.saturating_sub(kept)
    );
}

/// Whether the request carries the configured bearer token (compared in constant time over
/// SHA-256 digests, so neither the length nor a prefix leaks).
fn authorized(req: &HttpRequest, expected: &TokenDigest) -> bool {
    let Some(token) = crate::bearer::bearer_credentials(req) else {
        return false;
    };
    expected.matches(token.trim())
}

/// `GET /metrics`.
pub async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(expected) = &state.metrics_token
        && !authorized(&req, expected)
    {
        return HttpResponse::Unauthorized()
            .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
            .json(apidrift_model::ErrorBody {
                error: "missing or invalid token".into(),
            });
    }
    HttpResponse::Ok()
        .content_type(CONTENT_TYPE)
        .body(render(&state).await)
}

/// Registers `GET /metrics`.
pub fn configure(config: &mut web::ServiceConfig) {
    config.route("/metrics", web::get().to(metrics));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_scheme_is_case_insensitive() {
        let expected = digest("metrics-token-1");
        let with = |value: &str| {
            actix_web::test::TestRequest::default()
                .insert_header((header::AUTHORIZATION, value))
                .to_http_request()
        };
        for value in [
            "Bearer metrics-token-1",
            "bearer metrics-token-1",
            "BEARER metrics-token-1",
            "bEaReR  metrics-token-1 ",
        ] {
            assert!(authorized(&with(value), &expected), "{value}");
        }
        for value in [
            "Bearer wrong",
            "Basic metrics-token-1",
            "Bearermetrics-token-1",
            "metrics-token-1",
        ] {
            assert!(!authorized(&with(value), &expected), "{value}");
        }
        let none = actix_web::test::TestRequest::default().to_http_request();
        assert!(!authorized(&none, &expected));
        let twice = actix_web::test::TestRequest::default()
            .append_header((header::AUTHORIZATION, "Bearer metrics-token-1"))
            .append_header((header::AUTHORIZATION, "Bearer metrics-token-1"))
            .to_http_request();
        assert!(!authorized(&twice, &expected));
    }

    #[test]
    fn labels_are_escaped_and_methods_bounded() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(method_label(&Method::GET), "GET");
        let odd = Method::from_bytes(b"BREW").unwrap_or(Method::TRACE);
        assert_eq!(method_label(&odd), "other");
    }

    #[test]
    fn series_are_counted_per_key_and_rendered_sorted() {
        let route = "/test/metrics/{id}".to_owned();
        for _ in 0..3 {
            record(
                route.clone(),
                "GET",
                200,
                std::time::Duration::from_millis(3),
            );
        }
        record(
            route.clone(),
            "GET",
            404,
            std::time::Duration::from_millis(30),
        );
        let mut out = String::new();
        render_http(&mut out);
        assert!(out.contains(
            "apidrift_http_requests_total{route=\"/test/metrics/{id}\",method=\"GET\",status=\"200\"} 3\n"
        ));
        assert!(out.contains(
            "apidrift_http_requests_total{route=\"/test/metrics/{id}\",method=\"GET\",status=\"404\"} 1\n"
        ));
        assert!(out.contains(
            "apidrift_http_request_duration_seconds_bucket{route=\"/test/metrics/{id}\",le=\"0.005\"} 3\n"
        ));
        assert!(out.contains(
            "apidrift_http_request_duration_seconds_count{route=\"/test/metrics/{id}\"} 4\n"
        ));
    }
}
