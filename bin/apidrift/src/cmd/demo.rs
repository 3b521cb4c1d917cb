//! `apidrift demo`: the whole product offline, in one command. It runs the same start as `serve`
//! (`serve::serve` with every default) over a SQLite database in a new temporary directory, next
//! to a small sample upstream on a loopback port that changes its answers after the baselines
//! are captured. The service's outbound allow-list admits that upstream's address alone; the
//! SSRF rules of every other install are untouched.
//!
//! Once the port is bound it registers three endpoints in the first-run workspace through the
//! service's own use cases (the ones `POST /api/v1/endpoints`, `POST …/baseline` and
//! `POST …/check` call), captures their baselines, lets the upstream drift and checks them, then
//! prints each diff as text with its console and API addresses, the console login and an API
//! token. It serves until SIGTERM or Ctrl-C, then exits 0 and deletes the directory.

use super::CliError;
use super::gate::{Format, render};
use super::serve::{self, ServeArgs, Startup, say};
use crate::config::{self, Overrides, Settings};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use apidrift_app::{Actor, FirstRun, Service};
use apidrift_model::net::AllowList;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Port of the demo service on 127.0.0.1 (default: a free port, printed at start).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    port: u16,
}

/// The log filter of the demo unless `APIDRIFT_LOG` says otherwise: warnings and errors only,
/// so the tour stays readable.
const DEMO_LOG_FILTER: &str = "warn";

pub fn run(args: DemoArgs) -> Result<ExitCode, CliError> {
    let dir = DemoDir::create()?;
    // Only the log variables are read: the demo never touches the user's database, key or
    // allow-list, whatever the environment or a configuration file says.
    let env: HashMap<String, String> = std::env::vars()
        .filter(|(k, _)| k == "APIDRIFT_LOG" || k == "APIDRIFT_LOG_FORMAT")
        .collect();
    let overrides = Overrides {
        database_url: Some(format!(
            "sqlite://{}",
            dir.path().join("apidrift.db").display()
        )),
        bind: Some(format!("127.0.0.1:{}", args.port)),
    };
    let mut settings = config::load(None, &env, &overrides)?;
    if settings.log.filter.is_none() {
        settings.log.filter = Some(DEMO_LOG_FILTER.into());
    }
    crate::logging::init(&settings.log)?;
    let limits = serve::rate_limits(&settings.limits)?;
    let result = actix_web::rt::System::new().block_on(async {
        let upstream = Upstream::start()?;
        let allow = AllowList::parse(&format!("{}/32", upstream.addr.ip()))
            .map_err(|e| CliError(format!("demo allow-list: {e}")))?;
        say(&format!(
            "apidrift demo: a throwaway service on a temporary SQLite database in {}",
            dir.path().display()
        ));
        say(&format!(
            "apidrift demo: sample upstream at http://{} (outbound requests may reach {}/32 and no \
             other private address)",
            upstream.addr,
            upstream.addr.ip()
        ));
        let mut tour = Tour {
            upstream: &upstream,
            dir: dir.path(),
            first: None,
        };
        let served = serve::serve(settings, ServeArgs::defaults(), limits, allow, &mut tour).await;
        upstream.stop().await;
        served
    });
    let shown = dir.path().display().to_string();
    drop(dir);
    if result.is_ok() {
        say(&format!("apidrift demo: stopped; removed {shown}"));
    }
    result
}

/// The demo's temporary directory (mode 0700), deleted with everything in it when dropped, on
/// success and failure alike.
struct DemoDir {
    path: PathBuf,
}

impl DemoDir {
    fn create() -> Result<DemoDir, CliError> {
        let base = std::env::temp_dir();
        let mut last = None;
        for attempt in 0u32..32 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or_default();
            let name = format!(
                "apidrift-demo-{}-{:08x}",
                std::process::id(),
                nanos ^ attempt
            );
            let path = base.join(name);
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt as _;
                builder.mode(0o700);
            }
            match builder.create(&path) {
                Ok(()) => return Ok(DemoDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => {
                    return Err(CliError(format!(
                        "cannot create a temporary directory in {}: {e}",
                        base.display()
                    )));
                }
            }
        }
        Err(CliError(format!(
            "cannot create a temporary directory in {}: {}",
            base.display(),
            last.map(|e| e.to_string()).unwrap_or_default()
        )))
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DemoDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            eprintln!(
                "apidrift demo: could not remove {}: {e}",
                self.path.display()
            );
        }
    }
}

/// The sample upstream: a users API, an orders API and a health check, answering JSON on a
/// loopback port, in its "before" shape until [`Upstream::drift`] and its "after" shape since.
struct Upstream {
    addr: SocketAddr,
    drifted: Arc<AtomicBool>,
    handle: actix_web::dev::ServerHandle,
}

impl Upstream {
    /// Binds 127.0.0.1 on a free port and serves on the current actix system (one worker).
    fn start() -> Result<Upstream, CliError> {
        let fail = |e: std::io::Error| CliError(format!("cannot start the sample upstream: {e}"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(fail)?;
        let addr = listener.local_addr().map_err(fail)?;
        let drifted = Arc::new(AtomicBool::new(false));
        let state = web::Data::from(drifted.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .default_service(web::to(sample))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(1)
        .listen(listener)
        .map_err(fail)?
        .run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        Ok(Upstream {
            addr,
            drifted,
            handle,
        })
    }

    /// From now on every answer has its "after" shape.
    fn drift(&self) {
        self.drifted.store(true, Ordering::SeqCst);
    }

    async fn stop(&self) {
        self.handle.stop(true).await;
    }
}

/// One answer of the sample upstream.
async fn sample(req: HttpRequest, drifted: web::Data<AtomicBool>) -> HttpResponse {
    let after = drifted.load(Ordering::SeqCst);
    match sample_document(req.path(), after) {
        Some(body) => {
            let mut res = HttpResponse::Ok();
            res.content_type("application/json");
            if after && req.path() == "/users/42" {
                // Announces the end of this version: a warning of its own in the diff.
                res.insert_header(("Deprecation", "@1767225600"));
            }
            res.body(body.to_string())
        }
        None => HttpResponse::NotFound()
            .content_type("application/json")
            .body(json!({"error": "not found"}).to_string()),
    }
}

/// The sample documents, before and after the drift: the users API turns `id` into a string and
/// drops `email` and `address.postcode` (breaking), adds `lastLoginAt` and announces its
/// deprecation; the orders API drops `coupon` from one order and adds `status`; the health check
/// does not change.
fn sample_document(path: &str, after: bool) -> Option<Value> {
    Some(match (path, after) {
        ("/users/42", false) => json!({
            "id": 42,
            "name": "Ada Lovelace",
            "email": "ada@example.com",
            "plan": "pro",
            "address": {"city": "London", "postcode": "NW1 6XE"},
            "createdAt": "2024-03-01T09:30:00Z"
        }),
        ("/users/42", true) => json!({
            "id": "42",
            "name": "Ada Lovelace",
            "plan": "pro",
            "address": {"city": "London"},
            "createdAt": "2024-03-01T09:30:00Z",
            "lastLoginAt": "2026-01-15T08:00:00Z"
        }),
        ("/orders", false) => json!({
            "orders": [
                {"id": "o-1001", "total": 12.5, "currency": "EUR", "coupon": "WELCOME"},
                {"id": "o-1002", "total": 39.9, "currency": "EUR", "coupon": "SPRING"}
            ],
            "count": 2
        }),
        ("/orders", true) => json!({
            "orders": [
                {"id": "o-1001", "total": 12.5, "currency": "EUR", "coupon": "WELCOME",
                 "status": "paid"},
                {"id": "o-1002", "total": 39.9, "currency": "EUR", "status": "shipped"}
            ],
            "count": 2
        }),
        ("/health", _) => json!({"status": "ok"}),
        _ => return None,
    })
}

/// The endpoints the demo registers, as a `POST /api/v1/endpoints` body.
fn demo_endpoints(upstream: SocketAddr) -> Value {
    json!({"endpoints": [
        {
            "name": "Users API: user 42",
            "url": format!("http://{upstream}/users/42"),
            "description": "The demo's sample users API",
            "tags": ["demo"]
        },
        {
            "name": "Orders API: list",
            "url": format!("http://{upstream}/orders"),
            "description": "The demo's sample orders API",
            "tags": ["demo"]
        },
        {
            "name": "Health",
            "url": format!("http://{upstream}/health"),
            "tags": ["demo"]
        }
    ]})
}

/// The demo's [`Startup`]: keeps the first-run secrets, and once the port is bound registers the
/// endpoints, captures baselines, drifts, checks and prints the tour.
struct Tour<'a> {
    upstream: &'a Upstream,
    dir: &'a Path,
    first: Option<FirstRun>,
}

impl Startup for Tour<'_> {
    fn first_run(&mut self, _: &Settings, first: FirstRun) {
        self.first = Some(first);
    }

    async fn listening(
        &mut self,
        service: &Arc<Service>,
        addr: SocketAddr,
    ) -> Result<(), CliError> {
        let first = self.first.take().ok_or_else(|| {
            CliError("the demo database was not new: no first-run workspace".into())
        })?;
        let ws = Actor::operator(first.workspace_id);
        let created = service
            .register_endpoints(&ws, &demo_endpoints(self.upstream.addr))
            .await?;
        if let Some(s) = created.skipped.first() {
            return Err(CliError(format!(
                "demo endpoint {:?} refused: {}",
                s.name, s.reason
            )));
        }
        for endpoint in &created.endpoints {
            service.capture_baseline(&ws, endpoint.id).await?;
        }
        self.upstream.drift();
        let colour = crate::color::enabled(crate::color::choice(), std::io::stdout().is_terminal());
        let mut tour = format!(
            "apidrift demo: registered {} endpoints and captured their baselines; then the \
             upstream changed and a check ran:\n",
            created.endpoints.len()
        );
        for endpoint in &created.endpoints {
            let outcome = service.run_check(&ws, endpoint.id).await?;
            tour.push_str(&format!(
                "\n  {} ({} {})\n",
                endpoint.name, endpoint.method, endpoint.url
            ));
            let report = apidrift_diff::Report::from_changes(outcome.changes);
            for line in render(&report, Format::Text, None, colour).lines() {
                tour.push_str(&format!("    {line}\n"));
            }
            if let Some(diff) = outcome.diff_id {
                tour.push_str(&format!(
                    "    diff in the console: http://{addr}/console/diffs/{diff}\n    \
                     diff in the API:     http://{addr}/api/v1/diffs/{diff}\n"
                ));
            }
        }
        say(&tour);
        say(&format!(
            "apidrift: console user {} (owner), one-time password (shown only now):\n{}",
            first.admin_email, first.admin_password
        ));
        say(&format!(
            "apidrift: API token with every scope (shown only now):\n{}",
            first.token.expose()
        ));
        say(&format!("apidrift: listening on http://{addr}"));
        say(&format!("apidrift: console at http://{addr}/console"));
        say(&format!(
            "apidrift demo: try  curl -H \"Authorization: Bearer {}\" \
             http://{addr}/api/v1/endpoints\n\
             apidrift demo: serving until Ctrl-C or SIGTERM; then {} is deleted",
            first.token.expose(),
            self.dir.display()
        ));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_upstream_drifts_but_its_health_check_does_not() {
        for path in ["/users/42", "/orders"] {
            assert_ne!(
                sample_document(path, false),
                sample_document(path, true),
                "{path}"
            );
        }
        assert_eq!(
            sample_document("/health", false),
            sample_document("/health", true)
        );
        assert_eq!(sample_document("/nope", false), None);
    }

    #[test]
    fn the_temporary_directory_goes_with_its_guard() -> Result<(), CliError> {
        let dir = DemoDir::create()?;
        let path = dir.path().to_path_buf();
        std::fs::write(path.join("apidrift.db"), b"x").map_err(|e| CliError(e.to_string()))?;
        assert!(path.is_dir());
        drop(dir);
        assert!(!path.exists());
        Ok(())
    }
}
