//! The console's pages and form handlers.

use super::form::{FormLimit, LOGIN_LIMIT, SessionForm};
use super::html::url_param;
use super::session::{self, Session};
use super::views::{self, Chrome};
use crate::error::ApiError;
use crate::ratelimit::{Class, Quota};
use crate::routes::{openapi_import, probe};
use crate::state::AppState;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use apidrift_app::{MintToken, MintedToken, ProbeResult, WebhookView};
use apidrift_model::{Health, Role, Scope};
use apidrift_store::{DiffFilter, EndpointFilter, PageRequest};
use maud::Markup;
use std::collections::HashMap;
use time::OffsetDateTime;
use uuid::Uuid;

/// Login attempts allowed per client address and per account.
const LOGIN_PER_ADDRESS: Quota = Quota::per_minute(20);
const LOGIN_PER_ACCOUNT: Quota = Quota::per_minute(10);
/// Endpoints per console page.
const PAGE_SIZE: u32 = 25;
/// Checks the endpoint page's charts draw, and checks per history page.
const CHART_CHECKS: u32 = 50;
const CHECKS_PAGE: u32 = 20;

/// Registers every console route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    super::lifecycle::configure(cfg);
    super::deliveries::configure(cfg);
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
        .route("/console/diffs/{id}/accept", web::get().to(confirm_accept))
        .route("/console/diffs/{id}/accept", web::post().to(accept_diff))
        .route("/console/tokens", web::get().to(tokens))
        .route("/console/tokens", web::post().to(create_token))
        .route("/console/tokens/{id}/revoke", web::get().to(confirm_revoke))
        .route("/console/tokens/{id}/revoke", web::post().to(revoke_token))
        .route("/console/webhooks", web::get().to(webhooks_list))
        .route("/console/webhooks", web::post().to(webhook_add))
        .route(
            "/console/webhooks/{id}/remove",
            web::post().to(webhook_remove),
        )
        .route("/console/probe", web::get().to(probe_form))
        .route("/console/probe", web::post().to(probe_submit))
        .service(
            web::resource("/console/import")
                // A pasted document, form-encoded, read only for a signed-in user.
                .app_data(FormLimit::Import)
                .route(web::get().to(import_form))
                .route(web::post().to(import_submit)),
        );
}

pub(super) type Page = Result<HttpResponse, ApiError>;

pub(super) fn html(status: StatusCode, body: Markup) -> HttpResponse {
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

pub(super) fn redirect(to: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, to))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

pub(super) fn chrome(s: &Session, active: &'static str) -> Chrome {
    Chrome {
        user: Some((s.email().to_owned(), s.role().to_string())),
        csrf: s.csrf().to_owned(),
        active,
    }
}

/// An error as a page: the status of the API error and its text.
pub(super) fn error_page(s: Option<&Session>, e: &ApiError) -> HttpResponse {
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

/// The session of a page request, or the redirect to the login page (for sibling modules).
pub(super) async fn session_for(
    state: &AppState,
    req: &HttpRequest,
) -> Result<Session, HttpResponse> {
    need_session(state, req).await
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

pub(super) fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

pub(super) fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

pub(super) fn parse_uuid(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::NotFound)
}

/// State-changing forms: CSRF (Origin + `_csrf`) first.
pub(super) fn check_form(
    s: &Session,
    req: &HttpRequest,
    pairs: &[(String, String)],
) -> Result<(), ApiError> {
    s.check_csrf(req, Some(field(pairs, "_csrf").unwrap_or("")))
}

async fn home(state: web::Data<AppState>, req: HttpRequest) -> Page {
    Ok(match session::current(&state, &req).await? {
        Some(_) => redirect("/console/endpoints"),
        None => redirect("/console/login"),
    })
}

fn login_page(status: StatusCode, message: Option<&str>, email: &str) -> HttpResponse {
    html(
        status,
        views::login::render(&views::login::Login { message, email }),
    )
}

async fn login_form(state: web::Data<AppState>, req: HttpRequest) -> Page {
    if session::current(&state, &req).await?.is_some() {
        return Ok(redirect("/console/endpoints"));
    }
    Ok(login_page(StatusCode::OK, None, ""))
}

async fn login(state: web::Data<AppState>, req: HttpRequest, payload: web::Payload) -> Page {
    if let Err(e) = session::check_origin(&req) {
        return Ok(login_page(StatusCode::FORBIDDEN, Some(&e.to_string()), ""));
    }
    // The one form read without a session: small, and refused before reading when larger.
    let body = match crate::routes::read_limited(
        &req,
        payload.into_inner(),
        LOGIN_LIMIT,
        ApiError::PayloadTooLarge,
    )
    .await
    {
        Ok(body) => body,
        Err(e) => {
            use actix_web::ResponseError as _;
            return Ok(login_page(e.status_code(), Some(&e.to_string()), ""));
        }
    };
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
                    "Too many login attempts: try again in {}.",
                    info.wait_text()
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

async fn logout(state: web::Data<AppState>, req: HttpRequest, form: SessionForm) -> Page {
    let SessionForm { session: s, pairs } = form;
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
    if let Some(Err(reason)) = environment
        .as_deref()
        .map(|e| apidrift_model::validate::refuse_nul("environment", e))
    {
        return Ok(error_page(Some(&s), &ApiError::BadRequest(reason)));
    }
    let offset = query
        .get("offset")
        .and_then(|o| o.parse::<u64>().ok())
        .unwrap_or(0);
    let filter = EndpointFilter {
        health,
        environment: environment.clone(),
    };
    let found = state
        .service
        .list_endpoints(
            s.workspace_id(),
            &filter,
            PageRequest {
                limit: PAGE_SIZE,
                offset,
            },
        )
        .await
        .map_err(ApiError::from)?;
    // Query values hidden, as every alert message shows the URL (an API key may sit there).
    let urls: Vec<String> = found
        .items
        .iter()
        .map(|e| apidrift_app::redact::query_values(&e.settings.url))
        .collect();
    let rows = found
        .items
        .iter()
        .zip(&urls)
        .map(|(e, url)| views::endpoints::EndpointRow {
            id: e.id,
            name: &e.settings.name,
            health: e.health,
            method: e.settings.method.as_str(),
            url,
            environment: &e.settings.environment,
            last_checked_at: e.last_checked_at,
            response_time: e.response_time,
            breaking_count: e.breaking_count,
            warning_count: e.warning_count,
        })
        .collect();
    let next = offset + u64::from(PAGE_SIZE);
    let view = views::endpoints::EndpointList {
        health,
        health_query: health_text,
        environment: environment.as_deref().unwrap_or(""),
        total: found.total,
        rows,
        previous: (offset > 0).then(|| offset.saturating_sub(u64::from(PAGE_SIZE))),
        next: (next < found.total).then_some(next),
        flash: query.get("done").map(String::as_str),
        can_delete: s.role() >= Role::Admin,
    };
    Ok(html(
        StatusCode::OK,
        views::endpoints::render(&chrome(&s, "endpoints"), &view),
    ))
}

/// The outcome message an endpoint action redirected with (`?done=`).
fn flash(req: &HttpRequest) -> Option<String> {
    let query: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect();
    query.get("done").cloned()
}

async fn endpoint(state: web::Data<AppState>, req: HttpRequest, id: web::Path<String>) -> Page {
    let s = session_or_return!(state, req);
    let ws = s.workspace_id();
    let found = match parse_uuid(&id) {
        Ok(id) => state
            .service
            .find_endpoint(ws, id)
            .await
            .map_err(ApiError::from)?,
        Err(_) => None,
    };
    let Some(e) = found else {
        return Ok(error_page(Some(&s), &ApiError::NotFound));
    };
    let history = state
        .service
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
        .map_err(ApiError::from)?;
    let flash = flash(&req);
    let offset = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "checks")
        .and_then(|(_, v)| v.parse::<u64>().ok())
        .unwrap_or(0);
    let latest = state
        .service
        .list_checks(
            ws,
            e.id,
            PageRequest {
                limit: CHART_CHECKS,
                offset: 0,
            },
        )
        .await?;
    let page = state
        .service
        .list_checks(
            ws,
            e.id,
            PageRequest {
                limit: CHECKS_PAGE,
                offset,
            },
        )
        .await?;
    let parse = |t: &str| apidrift_model::timestamp::parse(t).ok();
    let chart: Vec<views::chart::CheckPoint<'_>> = latest
        .items
        .iter()
        .filter_map(|c| {
            Some(views::chart::CheckPoint {
                at: parse(&c.started_at)?,
                response_time: c.response_time,
                http_status: c.http_status,
                breaking_count: c.breaking_count,
                warning_count: c.warning_count,
                error: c.error.as_deref(),
            })
        })
        .collect();
    let checks: Vec<views::endpoint::CheckRow<'_>> = page
        .items
        .iter()
        .filter_map(|c| {
            Some(views::endpoint::CheckRow {
                started_at: parse(&c.started_at)?,
                http_status: c.http_status,
                response_time: c.response_time,
                error: c.error.as_deref(),
                diff_id: c.diff_id,
                breaking_count: c.breaking_count,
                warning_count: c.warning_count,
                change_count: c.change_count,
                scheduled: c.scheduled,
            })
        })
        .collect();
    let next = offset + u64::from(CHECKS_PAGE);
    let volatile_paths = state.service.volatile_paths(ws, e.id).await?;
    // Query values hidden, as on the endpoint list and in alert messages.
    let shown_url = apidrift_app::redact::query_values(&e.settings.url);
    let view = views::endpoint::EndpointDetail {
        id: e.id,
        name: &e.settings.name,
        health: e.health,
        method: e.settings.method.as_str(),
        url: &shown_url,
        environment: &e.settings.environment,
        auth_type: e.secrets.auth_type.as_str(),
        diff_mode: e.settings.diff_mode.as_str(),
        baseline_version: e.baseline_version,
        identity_keys: &e.settings.identity_keys,
        volatile_paths: &volatile_paths,
        response_contract: e
            .response_contract
            .as_ref()
            .map(|c| (c.operation.as_str(), c.status)),
        last_checked_at: e.last_checked_at,
        response_time: e.response_time,
        breaking_count: e.breaking_count,
        warning_count: e.warning_count,
        flash: flash.as_deref(),
        can_act: s.role() >= Role::Member,
        can_delete: s.role() >= Role::Admin,
        paused: e.paused,
        history: &history.items,
        chart: &chart,
        checks: &checks,
        checks_total: page.total,
        checks_previous: (offset > 0).then(|| offset.saturating_sub(u64::from(CHECKS_PAGE))),
        checks_next: (next < page.total).then_some(next),
    };
    Ok(html(
        StatusCode::OK,
        views::endpoint::render(&chrome(&s, "endpoints"), &view),
    ))
}

/// Capture a baseline or run a check from the endpoint page.
async fn endpoint_action(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    form: SessionForm,
    check: bool,
) -> Page {
    let SessionForm { session: s, pairs } = form;
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
        state.service.get_endpoint(ws, id).await?;
        probe::take_budget(&state, &req, ws, Class::Checks).await?;
        if check {
            let outcome = state.service.run_check(ws, id).await?;
            let r = outcome.to_response();
            Ok(format!(
                "Check done: {} breaking, {} warnings.",
                r.breaking_count, r.warning_count
            ))
        } else {
            // An unreadable choice goes through as 0 so that the service names the field.
            let samples = field(&pairs, "samples").map_or(Ok(1), str::parse::<u8>);
            let b = state
                .service
                .capture_baseline_sampled(ws, id, samples.unwrap_or(0))
                .await?;
            Ok(match b.volatile_paths.len() {
                0 => format!(
                    "Baseline {} captured (HTTP {}).",
                    b.baseline_version, b.status
                ),
                n => format!(
                    "Baseline {} captured (HTTP {}) from {} samples; {n} volatile path(s) learned.",
                    b.baseline_version, b.status, b.samples
                ),
            })
        }
    }
    .await;
    match outcome {
        Ok(message) => Ok(redirect(&format!(
            "/console/endpoints/{}?done={}",
            id.as_str(),
            url_param(&message)
        ))),
        Err(e) => Ok(error_page(Some(&s), &e)),
    }
}

async fn run_check(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    form: SessionForm,
) -> Page {
    endpoint_action(state, req, id, form, true).await
}

async fn capture_baseline(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    form: SessionForm,
) -> Page {
    endpoint_action(state, req, id, form, false).await
}

async fn diff(state: web::Data<AppState>, req: HttpRequest, id: web::Path<String>) -> Page {
    let s = session_or_return!(state, req);
    let found = match parse_uuid(&id) {
        Ok(id) => state
            .service
            .find_diff(s.workspace_id(), id)
            .await
            .map_err(ApiError::from)?,
        Err(_) => None,
    };
    let Some(d) = found else {
        return Ok(error_page(Some(&s), &ApiError::NotFound));
    };
    let groups = state.service.group_changes(&d.changes);
    let view = views::diff::DiffView {
        summary: &d.base,
        changes: &d.changes,
        groups: &groups,
        just_accepted: req.query_string().contains("accepted=1"),
        can_accept: s.role() >= Role::Admin,
    };
    Ok(html(
        StatusCode::OK,
        views::diff::render(&chrome(&s, "endpoints"), &view),
    ))
}

/// The confirmation step of Accept: names the endpoint and the diff's counts.
async fn confirm_accept(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
) -> Page {
    let s = session_or_return!(state, req);
    let found: Result<_, ApiError> = async {
        s.require(Role::Admin, "accept diffs")?;
        let id = parse_uuid(&id)?;
        state
            .service
            .find_diff(s.workspace_id(), id)
            .await
            .map_err(ApiError::from)?
            .ok_or(ApiError::NotFound)
    }
    .await;
    let d = match found {
        Ok(d) => d.base,
        Err(e) => return Ok(error_page(Some(&s), &e)),
    };
    if d.accepted {
        return Ok(redirect(&format!("/console/diffs/{}", d.id)));
    }
    let name = d.endpoint_name.as_deref().unwrap_or("an endpoint");
    let view = views::confirm::Confirm {
        title: "Accept a diff",
        question: maud::html! {
            "Accept the diff of " (name) " from " (views::layout::time(d.created_at)) " ("
            (d.breaking_count) " breaking, " (d.warning_count) " warnings, " (d.info_count) " info)?"
        },
        consequence: "The response that produced it becomes the endpoint's new baseline; when it                       is the latest diff, the endpoint turns healthy and shows no breaking or                       warning changes.",
        action: format!("/console/diffs/{}/accept", d.id),
        button: "Accept",
        button_id: "confirm-accept",
        danger: false,
        back: format!("/console/diffs/{}", d.id),
        hidden: Vec::new(),
    };
    Ok(html(
        StatusCode::OK,
        views::confirm::render(&chrome(&s, "endpoints"), &view),
    ))
}

async fn accept_diff(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    form: SessionForm,
) -> Page {
    let SessionForm { session: s, pairs } = form;
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

async fn tokens_page(state: &AppState, s: &Session, created: Option<&MintedToken>) -> Page {
    if let Err(e) = s.require(Role::Admin, "manage tokens") {
        return Ok(error_page(Some(s), &e));
    }
    let list = state
        .service
        .list_tokens(s.workspace_id())
        .await
        .map_err(ApiError::from)?;
    let now = OffsetDateTime::now_utc();
    let rows = list
        .iter()
        .map(|t| views::tokens::TokenRow {
            id: t.id,
            name: &t.name,
            hint: &t.hint,
            scopes: &t.scopes,
            role: t.role,
            last_used_at: t.last_used_at,
            expires_at: t.expires_at,
            status: if t.revoked_at.is_some() {
                "revoked"
            } else if t.is_active(now) {
                "active"
            } else {
                "expired"
            },
            revocable: t.revoked_at.is_none(),
        })
        .collect();
    let view = views::tokens::Tokens {
        created: created.map(MintedToken::expose),
        max_role: s.role(),
        rows,
    };
    Ok(html(
        StatusCode::OK,
        views::tokens::render(&chrome(s, "tokens"), &view),
    ))
}

async fn tokens(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    tokens_page(&state, &s, None).await
}

async fn create_token(state: web::Data<AppState>, req: HttpRequest, form: SessionForm) -> Page {
    let SessionForm { session: s, pairs } = form;
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

/// The confirmation step of Revoke: names the token (name and hint).
async fn confirm_revoke(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
) -> Page {
    let s = session_or_return!(state, req);
    let found: Result<_, ApiError> = async {
        s.require(Role::Admin, "manage tokens")?;
        let id = parse_uuid(&id)?;
        state
            .service
            .list_tokens(s.workspace_id())
            .await
            .map_err(ApiError::from)?
            .into_iter()
            .find(|t| t.id == id && t.revoked_at.is_none())
            .ok_or(ApiError::NotFound)
    }
    .await;
    let t = match found {
        Ok(t) => t,
        Err(e) => return Ok(error_page(Some(&s), &e)),
    };
    let view = views::confirm::Confirm {
        title: "Revoke a token",
        question: maud::html! {
            "Revoke the token " (t.name) " (…" (t.hint) ", role " (t.role.as_str()) ")?"
        },
        consequence: "Every request with it is refused from now on. This cannot be undone:                       create a new token if it is still needed.",
        action: format!("/console/tokens/{}/revoke", t.id),
        button: "Revoke",
        button_id: "confirm-revoke",
        danger: true,
        back: "/console/tokens".into(),
        hidden: Vec::new(),
    };
    Ok(html(
        StatusCode::OK,
        views::confirm::render(&chrome(&s, "tokens"), &view),
    ))
}

async fn revoke_token(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    form: SessionForm,
) -> Page {
    let SessionForm { session: s, pairs } = form;
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
        kind: String,
        url: String,
        min: String,
    },
}

async fn webhooks_page(state: &AppState, s: &Session, outcome: HookOutcome) -> Page {
    if let Err(e) = s.require(Role::Admin, "manage webhooks") {
        return Ok(error_page(Some(s), &e));
    }
    let list = state.service.list_webhooks(s.workspace_id()).await?;
    use actix_web::ResponseError as _;
    use views::webhooks::{HookNotice, WebhookRow, Webhooks};
    let mut status = StatusCode::OK;
    let refusal;
    let (notice, kind, url, min) = match &outcome {
        HookOutcome::None => (HookNotice::None, "generic", "", "warning"),
        HookOutcome::Created(w) => match &w.secret {
            Some(secret) => (
                HookNotice::AddedWithSecret(secret),
                "generic",
                "",
                "warning",
            ),
            None => (HookNotice::Added(&w.kind), "generic", "", "warning"),
        },
        HookOutcome::Refused {
            error,
            kind,
            url,
            min,
        } => {
            status = error.status_code();
            refusal = error.to_string();
            // A Slack or Discord URL is a secret, and so is any URL that holds one by its form
            // (a query value, a Discord token, …): a refused form does not send it back.
            let hook_kind = kind.parse().unwrap_or(apidrift_store::WebhookKind::Generic);
            let url = if apidrift_app::redact::text_holds_secret(hook_kind, url) {
                ""
            } else {
                url.as_str()
            };
            (
                HookNotice::Refused(&refusal),
                kind.as_str(),
                url,
                min.as_str(),
            )
        }
    };
    let view = Webhooks {
        notice,
        kind,
        url,
        min_severity: min,
        rows: list
            .iter()
            .map(|w| WebhookRow {
                id: w.id,
                kind: &w.kind,
                url: &w.url,
                min_severity: &w.min_severity,
                created_at: &w.created_at,
            })
            .collect(),
    };
    Ok(html(
        status,
        views::webhooks::render(&chrome(s, "webhooks"), &view),
    ))
}

async fn webhooks_list(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    webhooks_page(&state, &s, HookOutcome::None).await
}

async fn webhook_add(state: web::Data<AppState>, req: HttpRequest, form: SessionForm) -> Page {
    let SessionForm { session: s, pairs } = form;
    if let Err(e) = async {
        check_form(&s, &req, &pairs)?;
        s.require(Role::Admin, "manage webhooks")
    }
    .await
    {
        return Ok(error_page(Some(&s), &e));
    }
    let url = field(&pairs, "url").unwrap_or("").trim().to_owned();
    let kind = field(&pairs, "kind").unwrap_or("generic").to_owned();
    let min = field(&pairs, "min_severity")
        .unwrap_or("warning")
        .to_owned();
    let made = async {
        probe::take_budget(&state, &req, s.workspace_id(), Class::Creates).await?;
        let mut body = serde_json::json!({ "kind": kind, "minSeverity": min });
        if !url.is_empty() {
            body["url"] = serde_json::Value::String(url.clone());
        }
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
        Err(error) => HookOutcome::Refused {
            error,
            kind,
            url,
            min,
        },
    };
    webhooks_page(&state, &s, outcome).await
}

async fn webhook_remove(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    form: SessionForm,
) -> Page {
    let SessionForm { session: s, pairs } = form;
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
    use actix_web::ResponseError as _;
    use views::probe::{Probe, ProbeOutcome};
    let mut status = StatusCode::OK;
    let outcome = match &result {
        Some(Ok(r)) => Some(ProbeOutcome::Done {
            status: r.status,
            response_time: r.response_time,
            content_type: r.content_type.as_deref(),
            size: r.size,
            shape: r
                .shape
                .as_ref()
                .and_then(|sh| serde_json::to_string_pretty(sh).ok()),
        }),
        Some(Err(e)) => {
            status = e.status_code();
            Some(ProbeOutcome::Failed(e.to_string()))
        }
        None => None,
    };
    let view = Probe { url, outcome };
    html(status, views::probe::render(&chrome(s, "probe"), &view))
}

async fn probe_form(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    Ok(probe_page(&s, "", None))
}

async fn probe_submit(state: web::Data<AppState>, req: HttpRequest, form: SessionForm) -> Page {
    let SessionForm { session: s, pairs } = form;
    let url = field(&pairs, "url").unwrap_or("").to_owned();
    let result = async {
        check_form(&s, &req, &pairs)?;
        s.require(Role::Member, "run checks")?;
        probe::take_budget(&state, &req, s.workspace_id(), Class::Checks).await?;
        let body = serde_json::json!({ "url": url, "method": field(&pairs, "method") });
        Ok(state.service.probe(s.workspace_id(), &body).await?)
    }
    .await;
    Ok(probe_page(&s, &url, Some(result)))
}

fn import_page(
    s: &Session,
    form: &ImportForm,
    result: Option<Result<apidrift_app::ParseResult, ApiError>>,
) -> HttpResponse {
    use actix_web::ResponseError as _;
    use views::import::{Import, ImportOutcome, Imported, Operation};
    let mut status = StatusCode::OK;
    let outcome = match &result {
        Some(Ok(r)) => Some(ImportOutcome::Listed {
            operations: r
                .operations
                .iter()
                .map(|c| {
                    let label = c.label();
                    let checked = match &form.operations {
                        Some(ticked) => ticked.contains(&label),
                        None => c.importable,
                    };
                    Operation {
                        label,
                        checked,
                        name: &c.name,
                        method: &c.method,
                        url: c.url.as_deref(),
                        has_response_contract: c.has_response_contract,
                        not_importable: c.reason.as_deref(),
                    }
                })
                .collect(),
            imported: r.import.as_ref().map(|i| Imported {
                created: i.created,
                created_ids: i.endpoints.iter().map(|e| e.id).collect(),
                skipped: i
                    .skipped
                    .iter()
                    .map(|k| (k.name.as_str(), k.reason.as_str()))
                    .collect(),
            }),
        }),
        Some(Err(e)) => {
            status = e.status_code();
            Some(ImportOutcome::Failed(e.to_string()))
        }
        None => None,
    };
    let view = Import {
        document: &form.document,
        methods: form.methods.iter().map(String::as_str).collect(),
        outcome,
        can_delete: s.role() >= Role::Admin,
    };
    html(status, views::import::render(&chrome(s, "import"), &view))
}

/// What the import form sent.
struct ImportForm {
    document: String,
    /// The methods ticked (GET and HEAD on a fresh form).
    methods: Vec<String>,
    /// The operations ticked, when the form listed them.
    operations: Option<Vec<String>>,
}

impl ImportForm {
    fn fresh() -> ImportForm {
        ImportForm {
            document: String::new(),
            methods: apidrift_app::DEFAULT_IMPORT_METHODS
                .iter()
                .map(|m| (*m).to_owned())
                .collect(),
            operations: None,
        }
    }

    fn of(pairs: &[(String, String)]) -> ImportForm {
        let all = |name: &str| -> Vec<String> {
            pairs
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .collect()
        };
        ImportForm {
            document: field(pairs, "document").unwrap_or("").to_owned(),
            methods: all("methods"),
            operations: (field(pairs, "listed") == Some("yes")).then(|| all("operations")),
        }
    }
}

async fn import_form(state: web::Data<AppState>, req: HttpRequest) -> Page {
    let s = session_or_return!(state, req);
    Ok(import_page(&s, &ImportForm::fresh(), None))
}

/// The import form: "List operations" parses, "Import" creates the operations ticked (every
/// importable one when the document was not listed yet) of the methods ticked.
async fn import_submit(state: web::Data<AppState>, req: HttpRequest, form: SessionForm) -> Page {
    let SessionForm { session: s, pairs } = form;
    let form = ImportForm::of(&pairs);
    let import = field(&pairs, "action") == Some("import");
    let result = async {
        check_form(&s, &req, &pairs)?;
        if form.methods.is_empty() {
            return Err(ApiError::BadRequest(
                "methods: tick at least one method to import".into(),
            ));
        }
        if import && form.operations.as_ref().is_some_and(Vec::is_empty) {
            return Err(ApiError::BadRequest(
                "operations: tick at least one operation to import".into(),
            ));
        }
        let mut body = serde_json::json!({
            "document": form.document,
            "import": import,
            "methods": form.methods,
        });
        if import && let Some(ops) = &form.operations {
            body["operations"] = serde_json::json!(ops);
        }
        let request =
            apidrift_app::ParseRequest::from_value(body, state.service.import_max_bytes())?;
        openapi_import::run(&state, &req, &s, request)
            .await
            .map(|(r, _)| r)
    }
    .await;
    Ok(import_page(&s, &form, Some(result)))
}
