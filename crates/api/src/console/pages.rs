//! The console's pages and form handlers.

use super::html::{Chrome, esc, page, url_param};
use super::session::{self, Session};
use crate::error::ApiError;
use crate::ratelimit::{Class, Quota};
use crate::routes::{openapi_import, probe};
use crate::state::AppState;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use apidrift_model::{DiffDetail, Health, Role, Scope, Severity};
use apidrift_monitor::service::{MintToken, MintedToken, ProbeResult, WebhookView};
use apidrift_store::{DiffFilter, EndpointFilter, PageRequest};
use std::collections::HashMap;
use std::fmt::Write as _;
use time::OffsetDateTime;
use uuid::Uuid;

/// Login attempts allowed per client address and per account.
const LOGIN_PER_ADDRESS: Quota = Quota::per_minute(20);
const LOGIN_PER_ACCOUNT: Quota = Quota::per_minute(10);
/// Endpoints per console page.
const PAGE_SIZE: u32 = 25;

/// Registers every console route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console", web::get().to(home))
        .route("/console/", web::get().to(home))
        .route("/console/login", web::get().to(login_form))
        .route("/console/login", web::post().to(login))
        .route("/console/logout", web::post().to(logout))
        .route("/console/endpoints", web::get().to(endpoints))
        .route("/console/endpoints/{id}", web::get().to(endpoint))
        .route("/console/endpoints/{id}/check", web::post().to(run_check))
        .route(
            "/console/endpoints/{id}/baseline",
            web::post().to(capture_baseline),
        )
        .route("/console/diffs/{id}", web::get().to(diff))
        .route("/console/diffs/{id}/accept", web::post().to(accept_diff))
        .route("/console/tokens", web::get().to(tokens))
        .route("/console/tokens", web::post().to(create_token))
        .route("/console/tokens/{id}/revoke", web::post().to(revoke_token))
        .route("/console/webhooks", web::get().to(webhooks_list))
        .route("/console/webhooks", web::post().to(webhook_add))
        .route(
            "/console/webhooks/{id}/remove",
            web::post().to(webhook_remove),
        )
        .route("/console/probe", web::get().to(probe_form))
        .route("/console/probe", web::post().to(probe_submit))
        .route("/console/import", web::get().to(import_form))
        .route("/console/import", web::post().to(import_submit));
}

type Page = Result<HttpResponse, ApiError>;

fn html(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("X-Frame-Options", "DENY"))
        .insert_header((
            "Content-Security-Policy",
            "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; frame-ancestors 'none'",
        ))
        .insert_header(("Referrer-Policy", "same-origin"))
        .body(body)
}

fn redirect(to: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, to))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

fn chrome(s: &Session, active: &'static str) -> Chrome {
    Chrome {
        user: Some((s.email().to_owned(), s.role().to_string())),
        csrf: s.csrf().to_owned(),
        active,
    }
}

/// An error as a page: the status of the API error and its text.
fn error_page(s: Option<&Session>, e: &ApiError) -> HttpResponse {
    use actix_web::ResponseError as _;
    let status = e.status_code();
    let c = s.map(|s| chrome(s, "")).unwrap_or_default();
    let body = format!(
        "<h1>{}</h1><p class=\"error\" role=\"alert\">{}</p><p><a href=\"/console/endpoints\">Back to endpoints</a></p>",
        status.as_u16(),
        esc(&e.to_string())
    );
    html(
        status,
        page(status.canonical_reason().unwrap_or("Error"), &c, &body),
    )
}

/// The session of a page request, or the redirect to the login page.
async fn need_session(state: &AppState, req: &HttpRequest) -> Result<Session, HttpResponse> {
    match session::current(state, req).await {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(redirect("/console/login")),
        Err(e) => Err(error_page(None, &e)),
    }
}

macro_rules! session_or_return {
    ($state:expr, $req:expr) => {
        match need_session(&$state, &$req).await {
            Ok(s) => s,
            Err(resp) => return Ok(resp),
        }
    };
}

fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn fmt_time(t: Option<OffsetDateTime>) -> String {
    t.and_then(|t| apidrift_model::timestamp::format(t).ok())
        .unwrap_or_else(|| "—".into())
}

fn badge(health: Health) -> String {
    format!("<span class=\"badge {0}\">{0}</span>", esc(health.as_str()))
}

fn sev_badge(sev: Severity) -> String {
    format!("<span class=\"badge {0}\">{0}</span>", esc(sev.as_str()))
}

fn parse_uuid(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::NotFound)
}

/// State-changing forms: CSRF (Origin + `_csrf`) first.
fn check_form(s: &Session, req: &HttpRequest, pairs: &[(String, String)]) -> Result<(), ApiError> {
    s.check_csrf(req, Some(field(pairs, "_csrf").unwrap_or("")))
}

async fn home(state: web::Data<AppState>, req: HttpRequest) -> Page {
    Ok(match session::current(&state, &req).await? {
        Some(_) => redirect("/console/endpoints"),
        None => redirect("/console/login"),
    })
}

fn login_page(status: StatusCode, message: Option<&str>, email: &str) -> HttpResponse {
    let alert = message
        .map(|m| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(m)))
        .unwrap_or_default();
    let body = format!(
        "<h1>Log in</h1>{alert}<form method=\"post\" action=\"/console/login\">\
         <label for=\"email\">E-mail</label><input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"username\" required autofocus value=\"{}\">\
         <label for=\"password\">Password</label><input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required>\
         <p><button type=\"submit\">Log in</button></p></form>",
        esc(email)
    );
    html(status, page("Log in", &Chrome::default(), &body))
}

async fn login_form(state: web::Data<AppState>, req: HttpRequest) -> Page {
    if session::current(&state, &req).await?.is_some() {
        return Ok(redirect("/console/endpoints"));
    }
    Ok(login_page(StatusCode::OK, None, ""))
}

async fn login(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> Page {
    if let Err(e) = session::check_origin(&req) {
        return Ok(login_page(StatusCode::FORBIDDEN, Some(&e.to_string()), ""));
    }
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
                    "Too many login attempts: try again in {} seconds.",
                    info.retry_after
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
        .insert_header((header::LOCATION, "/console/endpoints"))
        .cookie(session::session_cookie(&req, value))
        .finish())
}

async fn logout(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> Page {
    let s = session_or_return!(state, req);
    let pairs = form_pairs(&body);
    if let Err(e) = check_form(&s, &req, &pairs) {
        return Ok(error_page(Some(&s), &e));
    }
    state.service.logout(&s.stored).await?;
    Ok(HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/console/login"))
        .cookie(session::removal_cookie(&req))
        .finish())
}

async fn endpoints(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    let query: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect();
    let health_text = query.get("health").map(String::as_str).unwrap_or("");
    let health = if health_text.is_empty() {
        None
    } else {
        match health_text.parse::<Health>() {
            Ok(h) => Some(h),
            Err(_) => {
                return Ok(error_page(
                    Some(&s),
                    &ApiError::BadRequest("health: unknown value".into()),
                ));
            }
        }
    };
    let environment = query
        .get("environment")
        .map(|e| e.trim().to_owned())
        .filter(|e| !e.is_empty());
    let offset = query
        .get("offset")
        .and_then(|o| o.parse::<u64>().ok())
        .unwrap_or(0);
    let filter = EndpointFilter {
        health,
        environment: environment.clone(),
    };
    let found = state
        .store
        .list_endpoints(
            s.workspace_id(),
            &filter,
            PageRequest {
                limit: PAGE_SIZE,
                offset,
            },
        )
        .await
        .map_err(ApiError::store)?;
    let mut b = String::from("<h1>Endpoints</h1>");
    b.push_str("<form method=\"get\" action=\"/console/endpoints\" aria-label=\"Filters\"><label for=\"health\">Health</label><select id=\"health\" name=\"health\"><option value=\"\">any</option>");
    for h in [
        Health::Healthy,
        Health::Warning,
        Health::Breaking,
        Health::Unknown,
        Health::Checking,
    ] {
        let sel = if Some(h) == health { " selected" } else { "" };
        let _ = write!(b, "<option value=\"{0}\"{sel}>{0}</option>", h.as_str());
    }
    let _ = write!(
        b,
        "</select><label for=\"environment\">Environment</label><input id=\"environment\" name=\"environment\" value=\"{}\"> <button type=\"submit\">Filter</button></form>",
        esc(environment.as_deref().unwrap_or(""))
    );
    let _ = write!(b, "<p>{} endpoint(s)</p>", found.total);
    b.push_str("<table><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Health</th><th scope=\"col\">Method and URL</th><th scope=\"col\">Environment</th><th scope=\"col\">Last checked</th><th scope=\"col\">Response time</th><th scope=\"col\">Breaking / warnings</th></tr></thead><tbody>");
    for e in &found.items {
        let _ = write!(
            b,
            "<tr><td><a href=\"/console/endpoints/{}\">{}</a></td><td>{}</td><td><code>{} {}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td></tr>",
            e.id,
            esc(&e.name),
            badge(e.health),
            esc(e.method.as_str()),
            esc(&e.url),
            esc(&e.environment),
            fmt_time(e.last_checked_at),
            e.response_time
                .map_or_else(|| "—".to_owned(), |ms| format!("{ms} ms")),
            e.breaking_count,
            e.warning_count
        );
    }
    b.push_str("</tbody></table><nav aria-label=\"Pages\">");
    let base = format!(
        "/console/endpoints?health={}&environment={}",
        url_param(health_text),
        url_param(environment.as_deref().unwrap_or(""))
    );
    if offset > 0 {
        let prev = offset.saturating_sub(u64::from(PAGE_SIZE));
        let _ = write!(
            b,
            "<a href=\"{}&offset={prev}\">Previous page</a> ",
            esc(&base)
        );
    }
    let next = offset + u64::from(PAGE_SIZE);
    if next < found.total {
        let _ = write!(b, "<a href=\"{}&offset={next}\">Next page</a>", esc(&base));
    }
    b.push_str("</nav>");
    Ok(html(
        StatusCode::OK,
        page("Endpoints", &chrome(&s, "endpoints"), &b),
    ))
}

fn flash(req: &HttpRequest) -> String {
    let query: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect();
    query
        .get("done")
        .map(|m| format!("<p class=\"flash\" role=\"status\">{}</p>", esc(m)))
        .unwrap_or_default()
}

async fn endpoint(state: web::Data<AppState>, req: HttpRequest, id: web::Path<String>) -> Page {
    let s = session_or_return!(state, req);
    let ws = s.workspace_id();
    let found = match parse_uuid(&id) {
        Ok(id) => state
            .store
            .get_endpoint(ws, id)
            .await
            .map_err(ApiError::store)?,
        Err(_) => None,
    };
    let Some(e) = found else {
        return Ok(error_page(Some(&s), &ApiError::NotFound));
    };
    let history = state
        .store
        .list_diffs(
            ws,
            &DiffFilter {
                endpoint_id: Some(e.id),
                ..DiffFilter::default()
            },
            PageRequest {
                limit: 20,
                offset: 0,
            },
        )
        .await
        .map_err(ApiError::store)?;
    let mut b = format!("<h1>{}</h1>{}", esc(&e.name), flash(&req));
    let _ = write!(
        b,
        "<dl><dt>Health</dt><dd>{}</dd><dt>Request</dt><dd><code>{} {}</code></dd><dt>Environment</dt><dd>{}</dd>\
         <dt>Authentication</dt><dd>{} (the credential is never shown)</dd><dt>Diff mode</dt><dd>{}</dd>\
         <dt>Baseline version</dt><dd>{}</dd><dt>Response contract</dt><dd>{}</dd><dt>Last checked</dt><dd>{}</dd>\
         <dt>Response time</dt><dd>{}</dd><dt>Latest check</dt><dd>{} breaking, {} warnings</dd></dl>",
        badge(e.health),
        esc(e.method.as_str()),
        esc(&e.url),
        esc(&e.environment),
        esc(e.auth_type.as_str()),
        esc(e.diff_mode.as_str()),
        e.baseline_version
            .map_or_else(|| "none yet".to_owned(), |v| v.to_string()),
        e.response_contract.as_ref().map_or_else(
            || "none".to_owned(),
            |c| format!("{} ({})", esc(&c.operation), c.status)
        ),
        fmt_time(e.last_checked_at),
        e.response_time
            .map_or_else(|| "—".to_owned(), |ms| format!("{ms} ms")),
        e.breaking_count,
        e.warning_count
    );
    if s.role() >= Role::Member {
        let _ = write!(
            b,
            "<form class=\"inline\" method=\"post\" action=\"/console/endpoints/{0}/baseline\"><input type=\"hidden\" name=\"_csrf\" value=\"{1}\"><button type=\"submit\">Capture baseline</button></form> \
             <form class=\"inline\" method=\"post\" action=\"/console/endpoints/{0}/check\"><input type=\"hidden\" name=\"_csrf\" value=\"{1}\"><button type=\"submit\">Run check</button></form>",
            e.id,
            esc(s.csrf())
        );
    } else {
        b.push_str("<p>Your role (viewer) can read but not capture baselines or run checks.</p>");
    }
    b.push_str("<h2>Diff history</h2>");
    if history.items.is_empty() {
        b.push_str("<p>No diffs yet.</p>");
    } else {
        b.push_str("<table><thead><tr><th scope=\"col\">Created</th><th scope=\"col\">Breaking</th><th scope=\"col\">Warnings</th><th scope=\"col\">Info</th><th scope=\"col\">Accepted</th></tr></thead><tbody>");
        for d in &history.items {
            let _ = write!(
                b,
                "<tr><td><a href=\"/console/diffs/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                d.id,
                fmt_time(d.created_at),
                d.breaking_count,
                d.warning_count,
                d.info_count,
                if d.accepted { "yes" } else { "no" }
            );
        }
        b.push_str("</tbody></table>");
    }
    Ok(html(
        StatusCode::OK,
        page(&e.name, &chrome(&s, "endpoints"), &b),
    ))
}

/// Capture a baseline or run a check from the endpoint page.
async fn endpoint_action(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Bytes,
    check: bool,
) -> Page {
    let s = session_or_return!(state, req);
    let pairs = form_pairs(&body);
    let outcome: Result<String, ApiError> = async {
        check_form(&s, &req, &pairs)?;
        s.require(
            Role::Member,
            if check {
                "run checks"
            } else {
                "capture baselines"
            },
        )?;
        let id = parse_uuid(&id)?;
        let ws = s.workspace_id();
        state
            .store
            .get_endpoint(ws, id)
            .await
            .map_err(ApiError::store)?
            .ok_or(ApiError::NotFound)?;
        probe::take_budget(&state, &req, ws, Class::Checks).await?;
        if check {
            let outcome = state.service.run_check(ws, id).await?;
            let r = outcome.to_response();
            Ok(format!(
                "Check done: {} breaking, {} warnings.",
                r.breaking_count, r.warning_count
            ))
        } else {
            let b = state.service.capture_baseline(ws, id).await?;
            Ok(format!(
                "Baseline {} captured (HTTP {}).",
                b.baseline_version, b.status
            ))
        }
    }
    .await;
    match outcome {
        Ok(message) => Ok(redirect(&format!(
            "/console/endpoints/{}?done={}",
            esc(&id),
            url_param(&message)
        ))),
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}

async fn run_check(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Bytes,
) -> Page {
    endpoint_action(state, req, id, body, true).await
}

async fn capture_baseline(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Bytes,
) -> Page {
    endpoint_action(state, req, id, body, false).await
}

fn value_text(v: Option<&serde_json::Value>) -> String {
    match v {
        None => "—".into(),
        Some(v) => {
            let mut t = v.to_string();
            if t.len() > 300 {
                let cut = (0..=300)
                    .rev()
                    .find(|i| t.is_char_boundary(*i))
                    .unwrap_or(0);
                t.truncate(cut);
                t.push('…');
            }
            format!("<code>{}</code>", esc(&t))
        }
    }
}

fn render_changes(d: &DiffDetail) -> String {
    let mut b = String::new();
    for sev in [Severity::Breaking, Severity::Warning, Severity::Info] {
        let group: Vec<_> = d.changes.iter().filter(|c| c.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        let _ = write!(
            b,
            "<section aria-labelledby=\"sev-{0}\"><h2 id=\"sev-{0}\">{1} {2} change(s)</h2><table><thead><tr><th scope=\"col\">Path</th><th scope=\"col\">Type</th><th scope=\"col\">Message</th><th scope=\"col\">Old</th><th scope=\"col\">New</th></tr></thead><tbody>",
            sev.as_str(),
            sev_badge(sev),
            group.len()
        );
        for c in group {
            let _ = write!(
                b,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}{}</td><td>{}{}</td></tr>",
                esc(&c.path),
                esc(c.change_type.as_str()),
                esc(&c.message),
                value_text(c.old_value.as_ref()),
                c.old_type
                    .as_deref()
                    .map(|t| format!(" <small>({})</small>", esc(t)))
                    .unwrap_or_default(),
                value_text(c.new_value.as_ref()),
                c.new_type
                    .as_deref()
                    .map(|t| format!(" <small>({})</small>", esc(t)))
                    .unwrap_or_default(),
            );
        }
        b.push_str("</tbody></table></section>");
    }
    if b.is_empty() {
        b.push_str("<p>No changes.</p>");
    }
    b
}

async fn diff(state: web::Data<AppState>, req: HttpRequest, id: web::Path<String>) -> Page {
    let s = session_or_return!(state, req);
    let found = match parse_uuid(&id) {
        Ok(id) => state
            .store
            .get_diff(s.workspace_id(), id)
            .await
            .map_err(ApiError::store)?,
        Err(_) => None,
    };
    let Some(d) = found else {
        return Ok(error_page(Some(&s), &ApiError::NotFound));
    };
    let mut b = format!(
        "<h1>Diff of {}</h1><p>{} · {} breaking, {} warnings, {} info · <span id=\"diff-status\">{}</span></p>",
        esc(d.base.endpoint_name.as_deref().unwrap_or("an endpoint")),
        fmt_time(d.base.created_at),
        d.base.breaking_count,
        d.base.warning_count,
        d.base.info_count,
        if d.base.accepted {
            "<span class=\"badge healthy\">accepted</span>"
        } else {
            "not accepted"
        }
    );
    if d.base.accepted {
        if req.query_string().contains("accepted=1") {
            b.push_str(
                "<p class=\"flash\" role=\"status\">Diff accepted: its response is the endpoint's baseline now.</p>",
            );
        }
    } else if s.role() >= Role::Admin {
        let _ = write!(
            b,
            "<form method=\"post\" action=\"/console/diffs/{}/accept\"><input type=\"hidden\" name=\"_csrf\" value=\"{}\">\
             <p>Accepting makes the response that produced this diff the endpoint's new baseline.</p>\
             <p><button type=\"submit\" id=\"accept-diff\">Accept</button></p></form>",
            d.base.id,
            esc(s.csrf())
        );
    }
    if let Some(eid) = d.base.endpoint_id {
        let _ = write!(
            b,
            "<p><a href=\"/console/endpoints/{eid}\">Back to the endpoint</a></p>"
        );
    }
    b.push_str(&render_changes(&d));
    Ok(html(
        StatusCode::OK,
        page("Diff", &chrome(&s, "endpoints"), &b),
    ))
}

async fn accept_diff(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Bytes,
) -> Page {
    let s = session_or_return!(state, req);
    let pairs = form_pairs(&body);
    let done: Result<Uuid, ApiError> = async {
        check_form(&s, &req, &pairs)?;
        s.require(Role::Admin, "accept diffs")?;
        let id = parse_uuid(&id)?;
        let ws = s.workspace_id();
        probe::take_budget(&state, &req, ws, Class::Checks).await?;
        state.service.accept_diff(ws, id).await?;
        Ok(id)
    }
    .await;
    match done {
        Ok(id) => Ok(redirect(&format!("/console/diffs/{id}?accepted=1"))),
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}

fn scope_label(scope: Scope) -> &'static str {
    match scope {
        Scope::EndpointsRead => "read endpoints and diffs",
        Scope::EndpointsWrite => "create endpoints (stores credentials)",
        Scope::ChecksRun => "run checks",
        Scope::BaselinesWrite => "capture baselines and accept diffs",
    }
}

async fn tokens_page(state: &AppState, s: &Session, created: Option<&MintedToken>) -> Page {
    if let Err(e) = s.require(Role::Admin, "manage tokens") {
        return Ok(error_page(Some(s), &e));
    }
    let list = state
        .store
        .list_tokens(s.workspace_id())
        .await
        .map_err(ApiError::store)?;
    let mut b = String::from("<h1>Tokens</h1>");
    if let Some(t) = created {
        let _ = write!(
            b,
            "<section class=\"flash\" role=\"status\" aria-labelledby=\"new-token\"><h2 id=\"new-token\">New token</h2>\
             <p><strong>Copy it now: it is shown only once and cannot be recovered.</strong></p>\
             <p><code id=\"token-value\" class=\"token\">{}</code></p>\
             <button type=\"button\" id=\"copy-token\" onclick=\"navigator.clipboard.writeText(document.getElementById('token-value').textContent).then(function(){{document.getElementById('copy-token').textContent='Copied'}})\">Copy</button></section>",
            esc(t.expose())
        );
    }
    let _ = write!(
        b,
        "<h2>Create a token</h2><form method=\"post\" action=\"/console/tokens\"><input type=\"hidden\" name=\"_csrf\" value=\"{}\">\
         <label for=\"name\">Name</label><input id=\"name\" name=\"name\" maxlength=\"200\" required>\
         <fieldset><legend>Scopes</legend>",
        esc(s.csrf())
    );
    for scope in [
        Scope::EndpointsRead,
        Scope::EndpointsWrite,
        Scope::ChecksRun,
        Scope::BaselinesWrite,
    ] {
        let checked = if scope == Scope::EndpointsWrite {
            ""
        } else {
            " checked"
        };
        let id = scope.as_str().replace(':', "-");
        let _ = write!(
            b,
            "<div><input type=\"checkbox\" id=\"scope-{id}\" name=\"scopes\" value=\"{0}\"{checked}> <label class=\"inline\" for=\"scope-{id}\"><code>{0}</code> — {1}</label></div>",
            scope.as_str(),
            scope_label(scope)
        );
    }
    b.push_str("</fieldset><label for=\"role\">Role</label><select id=\"role\" name=\"role\">");
    for role in [Role::Viewer, Role::Member, Role::Admin, Role::Owner] {
        if role > s.role() {
            continue;
        }
        let sel = if role == Role::Member {
            " selected"
        } else {
            ""
        };
        let _ = write!(b, "<option value=\"{0}\"{sel}>{0}</option>", role.as_str());
    }
    b.push_str("</select><label for=\"expires\">Expires in days (empty: never)</label><input id=\"expires\" name=\"expires_in_days\" type=\"number\" min=\"1\" max=\"3650\">\
                <p><button type=\"submit\">Create token</button></p></form><h2>Existing tokens</h2>\
                <table><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Hint</th><th scope=\"col\">Scopes</th><th scope=\"col\">Role</th><th scope=\"col\">Last used</th><th scope=\"col\">Expires</th><th scope=\"col\">Status</th><th scope=\"col\"><span class=\"visually-hidden\">Actions</span></th></tr></thead><tbody>");
    let now = OffsetDateTime::now_utc();
    for t in &list {
        let scopes: Vec<&str> = t.scopes.iter().map(|s| s.as_str()).collect();
        let status = if t.revoked_at.is_some() {
            "revoked"
        } else if t.is_active(now) {
            "active"
        } else {
            "expired"
        };
        let action = if t.revoked_at.is_none() {
            format!(
                "<form method=\"post\" action=\"/console/tokens/{}/revoke\"><input type=\"hidden\" name=\"_csrf\" value=\"{}\"><button class=\"danger\" type=\"submit\" aria-label=\"Revoke {}\">Revoke</button></form>",
                t.id,
                esc(s.csrf()),
                esc(&t.name)
            )
        } else {
            String::new()
        };
        let _ = write!(
            b,
            "<tr><td>{}</td><td><code>…{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.name),
            esc(&t.hint),
            esc(&scopes.join(", ")),
            esc(t.role.as_str()),
            fmt_time(t.last_used_at),
            fmt_time(t.expires_at),
            status,
            action
        );
    }
    b.push_str("</tbody></table>");
    Ok(html(
        StatusCode::OK,
        page("Tokens", &chrome(s, "tokens"), &b),
    ))
}

async fn tokens(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    tokens_page(&state, &s, None).await
}

async fn create_token(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> Page {
    let s = session_or_return!(state, req);
    let pairs = form_pairs(&body);
    let made: Result<MintedToken, ApiError> = async {
        check_form(&s, &req, &pairs)?;
        s.require(Role::Admin, "manage tokens")?;
        let name = field(&pairs, "name").unwrap_or("").trim().to_owned();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(ApiError::BadRequest(
                "name: required, at most 200 characters".into(),
            ));
        }
        let mut scopes = Vec::new();
        for (k, v) in &pairs {
            if k == "scopes" {
                let scope = v
                    .parse::<Scope>()
                    .map_err(|_| ApiError::BadRequest(format!("scopes: unknown scope {v:?}")))?;
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
        }
        if scopes.is_empty() {
            return Err(ApiError::BadRequest("scopes: choose at least one".into()));
        }
        let role = field(&pairs, "role")
            .unwrap_or("member")
            .parse::<Role>()
            .map_err(|_| ApiError::BadRequest("role: unknown role".into()))?;
        let expires_in_days = match field(&pairs, "expires_in_days").map(str::trim) {
            None | Some("") => None,
            Some(d) => Some(
                d.parse::<u32>()
                    .ok()
                    .filter(|d| (1..=3650).contains(d))
                    .ok_or_else(|| {
                        ApiError::BadRequest("expires_in_days: a number from 1 to 3650".into())
                    })?,
            ),
        };
        Ok(state
            .service
            .mint_token(MintToken {
                workspace_id: s.workspace_id(),
                name,
                scopes,
                role,
                expires_in_days,
                granted_by: Some(s.role()),
            })
            .await?)
    }
    .await;
    match made {
        Ok(token) => tokens_page(&state, &s, Some(&token)).await,
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}

async fn revoke_token(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Bytes,
) -> Page {
    let s = session_or_return!(state, req);
    let pairs = form_pairs(&body);
    let done: Result<(), ApiError> = async {
        check_form(&s, &req, &pairs)?;
        s.require(Role::Admin, "manage tokens")?;
        let id = parse_uuid(&id)?;
        state
            .service
            .revoke_token(Some(s.workspace_id()), id)
            .await?;
        Ok(())
    }
    .await;
    match done {
        Ok(()) => Ok(redirect("/console/tokens")),
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}

/// What the webhooks page shows after a post: a created webhook (its generated secret once),
/// or the reason the add was refused (with the submitted values kept in the form).
enum HookOutcome {
    None,
    Created(WebhookView),
    Refused {
        error: ApiError,
        url: String,
        min: String,
    },
}

async fn webhooks_page(state: &AppState, s: &Session, outcome: HookOutcome) -> Page {
    if let Err(e) = s.require(Role::Admin, "manage webhooks") {
        return Ok(error_page(Some(s), &e));
    }
    let list = state.service.list_webhooks(s.workspace_id()).await?;
    let mut b = String::from(
        "<h1>Webhooks</h1><p>Alerts (signed <code>drift.detected</code> and <code>drift.resolved</code> events) go to these URLs when a check finds changes at or above the minimum severity.</p>",
    );
    let mut status = StatusCode::OK;
    let (url, min) = match &outcome {
        HookOutcome::Refused { url, min, .. } => (url.as_str(), min.as_str()),
        _ => ("", "warning"),
    };
    match &outcome {
        HookOutcome::None => {}
        HookOutcome::Created(w) => match &w.secret {
            Some(secret) => {
                let _ = write!(
                    b,
                    "<section class=\"flash\" role=\"status\" aria-labelledby=\"new-secret\"><h2 id=\"new-secret\">Webhook added</h2>\
                     <p><strong>Copy the signing secret now: it is shown only once and cannot be recovered.</strong></p>\
                     <p><code id=\"secret-value\" class=\"token\">{}</code></p>\
                     <button type=\"button\" id=\"copy-secret\" onclick=\"navigator.clipboard.writeText(document.getElementById('secret-value').textContent).then(function(){{document.getElementById('copy-secret').textContent='Copied'}})\">Copy</button></section>",
                    esc(secret)
                );
            }
            None => b.push_str(
                "<p class=\"flash\" role=\"status\">Webhook added with the secret you supplied.</p>",
            ),
        },
        HookOutcome::Refused { error, .. } => {
            use actix_web::ResponseError as _;
            status = error.status_code();
            let _ = write!(
                b,
                "<p class=\"error\" role=\"alert\" id=\"webhook-error\">{}</p>",
                esc(&error.to_string())
            );
        }
    }
    let _ = write!(
        b,
        "<h2>Add a webhook</h2><form method=\"post\" action=\"/console/webhooks\"><input type=\"hidden\" name=\"_csrf\" value=\"{}\">\
         <label for=\"url\">URL</label><input id=\"url\" name=\"url\" type=\"url\" size=\"60\" required value=\"{}\">\
         <label for=\"min_severity\">Minimum severity</label><select id=\"min_severity\" name=\"min_severity\">",
        esc(s.csrf()),
        esc(url)
    );
    for sev in [Severity::Info, Severity::Warning, Severity::Breaking] {
        let sel = if sev.as_str() == min { " selected" } else { "" };
        let _ = write!(b, "<option value=\"{0}\"{sel}>{0}</option>", sev.as_str());
    }
    b.push_str(
        "</select><label for=\"secret\">Signing secret (empty: generate one)</label>\
         <input id=\"secret\" name=\"secret\" type=\"password\" maxlength=\"256\" autocomplete=\"off\">\
         <p><button type=\"submit\">Add webhook</button></p></form><h2>Existing webhooks</h2>",
    );
    if list.is_empty() {
        b.push_str("<p>No webhooks yet.</p>");
    } else {
        b.push_str("<table><thead><tr><th scope=\"col\">URL</th><th scope=\"col\">Minimum severity</th><th scope=\"col\">Created</th><th scope=\"col\"><span class=\"visually-hidden\">Actions</span></th></tr></thead><tbody>");
        for w in &list {
            let _ = write!(
                b,
                "<tr><td><code>{url}</code></td><td><span class=\"badge {min}\">{min}</span></td><td>{}</td><td>\
                 <form method=\"post\" action=\"/console/webhooks/{}/remove\"><input type=\"hidden\" name=\"_csrf\" value=\"{}\">\
                 <button class=\"danger\" type=\"submit\" aria-label=\"Remove {url}\">Remove</button></form></td></tr>",
                esc(&w.created_at),
                w.id,
                esc(s.csrf()),
                url = esc(&w.url),
                min = esc(&w.min_severity),
            );
        }
        b.push_str("</tbody></table>");
    }
    Ok(html(status, page("Webhooks", &chrome(s, "webhooks"), &b)))
}

async fn webhooks_list(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    webhooks_page(&state, &s, HookOutcome::None).await
}

async fn webhook_add(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> Page {
    let s = session_or_return!(state, req);
    let pairs = form_pairs(&body);
    if let Err(e) = async {
        check_form(&s, &req, &pairs)?;
        s.require(Role::Admin, "manage webhooks")
    }
    .await
    {
        return Ok(error_page(Some(&s), &e));
    }
    let url = field(&pairs, "url").unwrap_or("").trim().to_owned();
    let min = field(&pairs, "min_severity")
        .unwrap_or("warning")
        .to_owned();
    let made = async {
        probe::take_budget(&state, &req, s.workspace_id(), Class::Creates).await?;
        let mut body = serde_json::json!({ "url": url, "minSeverity": min });
        if let Some(secret) = field(&pairs, "secret").filter(|v| !v.is_empty()) {
            body["secret"] = serde_json::Value::String(secret.to_owned());
        }
        Ok(state
            .service
            .create_webhook(s.workspace_id(), &body)
            .await?)
    }
    .await;
    let outcome = match made {
        Ok(w) => HookOutcome::Created(w),
        Err(error) => HookOutcome::Refused { error, url, min },
    };
    webhooks_page(&state, &s, outcome).await
}

async fn webhook_remove(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Bytes,
) -> Page {
    let s = session_or_return!(state, req);
    let pairs = form_pairs(&body);
    let done: Result<(), ApiError> = async {
        check_form(&s, &req, &pairs)?;
        s.require(Role::Admin, "manage webhooks")?;
        let id = parse_uuid(&id)?;
        probe::take_budget(&state, &req, s.workspace_id(), Class::Creates).await?;
        Ok(state.service.delete_webhook(s.workspace_id(), id).await?)
    }
    .await;
    match done {
        Ok(()) => Ok(redirect("/console/webhooks")),
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}

fn probe_page(
    s: &Session,
    url: &str,
    result: Option<Result<ProbeResult, ApiError>>,
) -> HttpResponse {
    let mut b = format!(
        "<h1>Probe a URL</h1><p>One request through the same outbound rules as checks. The body is never shown: only its status, timing, size and shape.</p>\
         <form method=\"post\" action=\"/console/probe\"><input type=\"hidden\" name=\"_csrf\" value=\"{}\">\
         <label for=\"url\">URL</label><input id=\"url\" name=\"url\" type=\"url\" size=\"60\" required value=\"{}\">\
         <label for=\"method\">Method</label><select id=\"method\" name=\"method\"><option>GET</option><option>HEAD</option><option>POST</option></select>\
         <p><button type=\"submit\">Probe</button></p></form>",
        esc(s.csrf()),
        esc(url)
    );
    let mut status = StatusCode::OK;
    match result {
        Some(Ok(r)) => {
            let shape = r
                .shape
                .as_ref()
                .and_then(|sh| serde_json::to_string_pretty(sh).ok())
                .unwrap_or_else(|| "(not JSON)".into());
            let _ = write!(
                b,
                "<section aria-labelledby=\"probe-result\"><h2 id=\"probe-result\">Result</h2><dl>\
                 <dt>Status</dt><dd id=\"probe-status\">{}</dd><dt>Response time</dt><dd>{} ms</dd>\
                 <dt>Content type</dt><dd>{}</dd><dt>Size</dt><dd>{} bytes</dd></dl><h3>Inferred shape</h3><pre>{}</pre></section>",
                r.status,
                r.response_time,
                esc(r.content_type.as_deref().unwrap_or("—")),
                r.size,
                esc(&shape)
            );
        }
        Some(Err(e)) => {
            use actix_web::ResponseError as _;
            status = e.status_code();
            let _ = write!(
                b,
                "<p class=\"error\" role=\"alert\">{}</p>",
                esc(&e.to_string())
            );
        }
        None => {}
    }
    html(status, page("Probe", &chrome(s, "probe"), &b))
}

async fn probe_form(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    Ok(probe_page(&s, "", None))
}

async fn probe_submit(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> Page {
    let s = session_or_return!(state, req);
    let pairs = form_pairs(&body);
    let url = field(&pairs, "url").unwrap_or("").to_owned();
    let result = async {
        check_form(&s, &req, &pairs)?;
        s.require(Role::Member, "run checks")?;
        probe::take_budget(&state, &req, s.workspace_id(), Class::Checks).await?;
        let body = serde_json::json!({ "url": url, "method": field(&pairs, "method") });
        Ok(state.service.probe(&body).await?)
    }
    .await;
    Ok(probe_page(&s, &url, Some(result)))
}

fn import_page(
    s: &Session,
    document: &str,
    result: Option<Result<apidrift_monitor::service::ParseResult, ApiError>>,
) -> HttpResponse {
    let mut b = format!(
        "<h1>Import an OpenAPI document</h1><p>OpenAPI 3.0 or 3.1, JSON or YAML. Operations become endpoints with no authentication and their response contracts attached; path templates need example values.</p>\
         <form method=\"post\" action=\"/console/import\"><input type=\"hidden\" name=\"_csrf\" value=\"{}\">\
         <label for=\"document\">Document</label><textarea id=\"document\" name=\"document\" rows=\"14\" cols=\"80\" required>{}</textarea>\
         <p><button type=\"submit\" name=\"action\" value=\"parse\">List operations</button> <button type=\"submit\" name=\"action\" value=\"import\">Import</button></p></form>",
        esc(s.csrf()),
        esc(document)
    );
    let mut status = StatusCode::OK;
    match result {
        Some(Ok(r)) => {
            b.push_str("<h2>Operations</h2><table><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Method</th><th scope=\"col\">URL</th><th scope=\"col\">Contract</th><th scope=\"col\">Importable</th></tr></thead><tbody>");
            for c in &r.operations {
                let _ = write!(
                    b,
                    "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    esc(&c.name),
                    esc(&c.method),
                    esc(c.url.as_deref().unwrap_or("—")),
                    if c.has_response_contract { "yes" } else { "no" },
                    c.reason
                        .as_deref()
                        .map_or_else(|| "yes".to_owned(), |r| format!("no: {}", esc(r)))
                );
            }
            b.push_str("</tbody></table>");
            if let Some(i) = &r.import {
                let _ = write!(
                    b,
                    "<p class=\"flash\" role=\"status\" id=\"import-result\">Created {} endpoint(s), skipped {}.</p>",
                    i.created,
                    i.skipped.len()
                );
                if !i.skipped.is_empty() {
                    b.push_str("<ul>");
                    for sk in &i.skipped {
                        let _ = write!(b, "<li>{}: {}</li>", esc(&sk.name), esc(&sk.reason));
                    }
                    b.push_str("</ul>");
                }
            }
        }
        Some(Err(e)) => {
            use actix_web::ResponseError as _;
            status = e.status_code();
            let _ = write!(
                b,
                "<p class=\"error\" role=\"alert\">{}</p>",
                esc(&e.to_string())
            );
        }
        None => {}
    }
    html(status, page("Import", &chrome(s, "import"), &b))
}

async fn import_form(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    Ok(import_page(&s, "", None))
}

async fn import_submit(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> Page {
    let s = session_or_return!(state, req);
    let pairs = form_pairs(&body);
    let document = field(&pairs, "document").unwrap_or("").to_owned();
    let result = async {
        check_form(&s, &req, &pairs)?;
        let body = serde_json::json!({
            "document": document,
            "import": field(&pairs, "action") == Some("import"),
        });
        openapi_import::run(&state, &req, &s, &body)
            .await
            .map(|(r, _)| r)
    }
    .await;
    Ok(import_page(&s, &document, Some(result)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_on_a_char_boundary_and_escaped() {
        let v = serde_json::json!("é".repeat(400));
        let t = value_text(Some(&v));
        assert!(t.ends_with("…</code>"));
        assert_eq!(value_text(None), "—");
        assert_eq!(
            value_text(Some(&serde_json::json!("<b>"))),
            "<code>&quot;&lt;b&gt;&quot;</code>"
        );
    }
}
