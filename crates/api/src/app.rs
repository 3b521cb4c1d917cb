//! Assembling the actix application: routes, the request log, rate-limit headers, the JSON
//! fallbacks for unknown routes and wrong methods, and [`Application`], which binds its own
//! listener.

use crate::auth::WorkspaceTag;
use crate::error::ApiError;
use crate::ratelimit::RateInfo;
use crate::state::AppState;
use actix_web::body::MessageBody;
use actix_web::dev::{ResourceDef, Server, ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::{App, HttpMessage, HttpRequest, HttpResponse, HttpServer, web};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Instant;
use utoipa_actix_web::AppExt;

/// Every route with its methods, for 405 answers (`Allow`) on a known path.
const ROUTES: &[(&str, &str)] = &[
    ("/api/v1/endpoints", "GET, POST"),
    ("/api/v1/endpoints/{id}", "GET, PATCH, DELETE"),
    ("/api/v1/endpoints/{id}/checks", "GET"),
    ("/api/v1/endpoints/{id}/check", "POST"),
    ("/api/v1/workspace", "GET, PATCH"),
    ("/api/v1/apply", "POST"),
    ("/api/v1/endpoints/{id}/baseline", "POST"),
    ("/api/v1/endpoints/{id}/diffs", "GET"),
    ("/api/v1/diffs", "GET"),
    ("/api/v1/diffs/{id}", "GET"),
    ("/api/v1/diffs/{id}/accept", "POST"),
    ("/api/v1/webhooks", "GET, POST"),
    ("/api/v1/webhooks/{id}", "DELETE"),
    ("/api/v1/webhooks/{id}/deliveries", "GET"),
    ("/api/v1/webhooks/{id}/test", "POST"),
    ("/v1/endpoints", "POST"),
    ("/v1/endpoints/{id}/diffs", "GET"),
    ("/v1/endpoints/{id}/check", "POST"),
    ("/v1/endpoints/{id}/baseline", "POST"),
    ("/v1/webhooks", "GET, POST"),
    ("/v1/webhooks/{id}", "DELETE"),
    ("/v1/webhooks/{id}/deliveries", "GET"),
    ("/v1/webhooks/{id}/test", "POST"),
    ("/healthz", "GET"),
    ("/readyz", "GET"),
    ("/openapi.json", "GET"),
    ("/metrics", "GET"),
    ("/api/check", "POST"),
    ("/api/openapi/parse", "POST"),
];

/// The application: routes, `/openapi.json`, fallbacks, and the middleware that logs each request
/// and adds the rate-limit headers.
pub fn create_app(
    state: AppState,
    openapi_json: Arc<Vec<u8>>,
) -> App<
    impl actix_web::dev::ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let (app, _) = App::new()
        .into_utoipa_app()
        .configure(crate::routes::table::configure)
        .configure(crate::console::configure_json)
        .split_for_parts();
    app.app_data(web::Data::new(state))
        .app_data(web::Data::from(openapi_json))
        .app_data(web::PathConfig::default().error_handler(|_, _| ApiError::NotFound.into()))
        .app_data(web::QueryConfig::default().error_handler(|e, _| {
            ApiError::BadRequest(format!("malformed query string: {e}")).into()
        }))
        .app_data(
            web::JsonConfig::default()
                .limit(crate::state::MAX_BODY_BYTES)
                .error_handler(|e, _| {
                    ApiError::BadRequest(format!("request body is not valid JSON: {e}")).into()
                }),
        )
        .route("/openapi.json", web::get().to(serve_openapi))
        .configure(crate::metrics::configure)
        .configure(crate::console::configure)
        .default_service(web::to(fallback))
        .wrap_fn(|req, srv| {
            use actix_web::dev::Service as _;
            let started = Instant::now();
            let method = req.method().clone();
            let call = srv.call(req);
            async move {
                let mut res = call.await?;
                let info = res.request().extensions().get::<RateInfo>().cloned();
                if let Some(info) = info {
                    let headers = res.headers_mut();
                    for (name, value) in info.headers() {
                        if !headers.contains_key(&name) {
                            headers.insert(name, value);
                        }
                    }
                }
                log_request(&method, &res, started);
                crate::metrics::observe(&method, &res, started);
                Ok(res)
            }
        })
}

/// One structured line per request: method, path template, status, latency, workspace. Never the
/// raw path (it may hold ids of other workspaces), a header, or a body.
fn log_request<B>(method: &Method, res: &ServiceResponse<B>, started: Instant) {
    let req = res.request();
    let route = req.match_pattern().unwrap_or_else(|| "(unmatched)".into());
    let workspace = req
        .extensions()
        .get::<WorkspaceTag>()
        .map(|w| w.0.to_string())
        .unwrap_or_else(|| "-".into());
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    tracing::info!(
        target: "apidrift::request",
        method = %method,
        route = %route,
        status = res.status().as_u16(),
        latency_ms = format_args!("{latency_ms:.2}"),
        workspace = %workspace,
        "request"
    );
}

async fn serve_openapi(doc: web::Data<Vec<u8>>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(doc.get_ref().clone())
}

/// Unknown route → 404; known route with another method → 405 with `Allow`; both `{error}`.
async fn fallback(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let path = req.path();
    for (pattern, allow) in ROUTES {
        if ResourceDef::new(*pattern).is_match(path) {
            return Err(ApiError::MethodNotAllowed(allow));
        }
    }
    Err(ApiError::NotFound)
}

/// A server bound to its own listener (port 0 picks a free port), ready to run.
pub struct Application {
    addr: SocketAddr,
    server: Server,
}

impl std::fmt::Debug for Application {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Application")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Application {
    /// Binds `bind` and builds the server with `workers` worker threads (0 = one per core).
    /// Must be called inside an actix system (`actix_web::rt::System`). Graceful shutdown: the
    /// SIGTERM and SIGINT handlers are installed here, before the caller announces the address,
    /// and on either signal the server stops accepting and lets in-flight requests finish (up to
    /// 30 s).
    pub fn build(state: AppState, bind: &str, workers: usize) -> std::io::Result<Self> {
        Self::build_on(state, TcpListener::bind(bind)?, workers)
    }

    /// [`Application::build`] on a listener the caller bound (`apidrift serve` binds before it
    /// creates anything, so that a taken port leaves the database as it was).
    pub fn build_on(
        state: AppState,
        listener: TcpListener,
        workers: usize,
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let doc = Arc::new(crate::openapi::document_bytes());
        let mut server = HttpServer::new(move || create_app(state.clone(), doc.clone()))
            .shutdown_timeout(30)
            .disable_signals();
        if workers > 0 {
            server = server.workers(workers);
        }
        let server = server.listen(listener)?.run();
        stop_on_signals(&server)?;
        Ok(Application { addr, server })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until a shutdown signal; returns once in-flight requests have finished.
    pub async fn run(self) -> std::io::Result<()> {
        self.server.await
    }
}

/// Stops `server` gracefully on SIGTERM or SIGINT.
#[cfg(unix)]
fn stop_on_signals(server: &Server) -> std::io::Result<()> {
    use actix_web::rt::signal::unix::{SignalKind, signal};
    for kind in [SignalKind::terminate(), SignalKind::interrupt()] {
        let mut stream = signal(kind)?;
        let handle = server.handle();
        actix_web::rt::spawn(async move {
            if stream.recv().await.is_some() {
                tracing::info!("shutdown signal received: finishing in-flight requests");
                handle.stop(true).await;
            }
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn stop_on_signals(server: &Server) -> std::io::Result<()> {
    let handle = server.handle();
    actix_web::rt::spawn(async move {
        if actix_web::rt::signal::ctrl_c().await.is_ok() {
            handle.stop(true).await;
        }
    });
    Ok(())
}
