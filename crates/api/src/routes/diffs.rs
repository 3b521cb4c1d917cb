//! `GET /api/v1/diffs`, `GET /api/v1/diffs/{id}`, and `GET /api/v1/endpoints/{id}/diffs` with
//! its D13 twin `GET /v1/endpoints/{id}/diffs`.

use crate::auth::Authed;
use crate::docs::{EndpointDiffsQuery, ListDiffsQuery};
use crate::error::ApiError;
use crate::query::Params;
use crate::routes::parse_id;
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, get, web};
use apidrift_app::read::{DiffFilter, PageRequest};
use apidrift_app::{Actor, act};
use apidrift_model::{DiffEnvelope, DiffList, ErrorBody, Pagination};

/// List diffs across the workspace, newest first.
#[utoipa::path(
    get,
    path = "/diffs",
    tag = "diffs",
    operation_id = "listDiffs",
    params(ListDiffsQuery),
    security(("bearer" = ["endpoints:read"])),
    responses(
        (status = 200, description = "A page of diffs", body = DiffList),
        (status = 400, description = "A malformed query parameter (named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:read", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/diffs")]
pub async fn list_diffs(
    auth: Authed<act::ReadEndpoints>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = Params::parse(req.query_string())?;
    let page = params.page()?;
    let filter = params.diff_filter(true)?;
    list(&state, &auth.actor, &filter, page).await
}

/// One diff with all its changes (never a response body).
#[utoipa::path(
    get,
    path = "/diffs/{id}",
    tag = "diffs",
    operation_id = "getDiff",
    params(("id" = Uuid, Path, description = "Diff id")),
    security(("bearer" = ["endpoints:read"])),
    responses(
        (status = 200, description = "The diff with every change", body = DiffEnvelope),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:read", body = ErrorBody),
        (status = 404, description = "No such diff in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/diffs/{id}")]
pub async fn get_diff(
    auth: Authed<act::ReadEndpoints>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let diff = state.service.get_diff(&auth.actor, id).await?;
    Ok(HttpResponse::Ok().json(DiffEnvelope { diff }))
}

async fn endpoint_diffs(
    auth: Authed<act::ReadEndpoints>,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = Params::parse(req.query_string())?;
    let page = params.page()?;
    let mut filter = params.diff_filter(false)?;
    let id = parse_id(&id)?;
    state.service.get_endpoint(&auth.actor, id).await?;
    filter.endpoint_id = Some(id);
    list(&state, &auth.actor, &filter, page).await
}

/// The diffs of one endpoint: `GET /api/v1/diffs?endpointId={id}`, but 404 when the endpoint
/// is not in the workspace.
#[utoipa::path(
    get,
    path = "/endpoints/{id}/diffs",
    tag = "diffs",
    operation_id = "listEndpointDiffs",
    params(("id" = Uuid, Path, description = "Endpoint id"), EndpointDiffsQuery),
    security(("bearer" = ["endpoints:read"])),
    responses(
        (status = 200, description = "A page of the endpoint's diffs", body = DiffList),
        (status = 400, description = "A malformed query parameter (named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:read", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/endpoints/{id}/diffs")]
pub async fn list_endpoint_diffs(
    auth: Authed<act::ReadEndpoints>,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    endpoint_diffs(auth, id, req, state).await
}

/// The diffs of one endpoint (D13 alias of `GET /api/v1/endpoints/{id}/diffs`): 404 when the
/// endpoint is not in the workspace.
#[utoipa::path(
    get,
    path = "/endpoints/{id}/diffs",
    tag = "second surface",
    operation_id = "listEndpointDiffsV1",
    params(("id" = Uuid, Path, description = "Endpoint id"), EndpointDiffsQuery),
    security(("bearer" = ["endpoints:read"])),
    responses(
        (status = 200, description = "A page of the endpoint's diffs", body = DiffList),
        (status = 400, description = "A malformed query parameter (named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:read", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/endpoints/{id}/diffs")]
pub async fn list_endpoint_diffs_v1(
    auth: Authed<act::ReadEndpoints>,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    endpoint_diffs(auth, id, req, state).await
}

async fn list(
    state: &AppState,
    actor: &Actor,
    filter: &DiffFilter,
    page: PageRequest,
) -> Result<HttpResponse, ApiError> {
    let found = state
        .service
        .list_diffs(actor, filter, page)
        .await
        .map_err(ApiError::from)?;
    Ok(HttpResponse::Ok().json(DiffList {
        diffs: found.items,
        pagination: Pagination {
            limit: page.limit,
            offset: page.offset,
            total: found.total,
        },
    }))
}
