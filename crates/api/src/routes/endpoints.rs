//! `GET /api/v1/endpoints`, `GET /api/v1/endpoints/{id}`, `POST /api/v1/endpoints` and its D13
//! alias `POST /v1/endpoints`.

use crate::auth::Authed;
use crate::docs::{EndpointCreateRequest, ListEndpointsQuery};
use crate::error::ApiError;
use crate::query::Params;
use crate::routes::{parse_id, read_json_body};
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use apidrift_app::act;
use apidrift_model::{
    CreateEndpointsResponse, EndpointEnvelope, EndpointList, ErrorBody, LatestDiff, Pagination,
};

/// List endpoints, newest first.
#[utoipa::path(
    get,
    path = "/endpoints",
    tag = "endpoints",
    operation_id = "listEndpoints",
    params(ListEndpointsQuery),
    security(("bearer" = ["endpoints:read"])),
    responses(
        (status = 200, description = "A page of endpoints", body = EndpointList),
        (status = 400, description = "A malformed query parameter (named)", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:read", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/endpoints")]
pub async fn list_endpoints(
    auth: Authed<act::ReadEndpoints>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = Params::parse(req.query_string())?;
    let page = params.page()?;
    let filter = params.endpoint_filter()?;
    let found = state
        .service
        .list_endpoints(&auth.actor, &filter, page, 0)
        .await
        .map_err(ApiError::from)?;
    Ok(HttpResponse::Ok().json(EndpointList {
        endpoints: found.items.iter().map(|e| e.to_model()).collect(),
        pagination: Pagination {
            limit: page.limit,
            offset: page.offset,
            total: found.total,
        },
    }))
}

/// One endpoint and its latest diff.
#[utoipa::path(
    get,
    path = "/endpoints/{id}",
    tag = "endpoints",
    operation_id = "getEndpoint",
    params(("id" = Uuid, Path, description = "Endpoint id")),
    security(("bearer" = ["endpoints:read"])),
    responses(
        (status = 200, description = "The endpoint; latestDiff is null when it never produced a diff", body = EndpointEnvelope,
            headers(("ETag" = String, description = "The endpoint's version as a strong entity tag (\"3\"); checks do not change it. Send it as If-Match with PATCH or DELETE"))),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:read", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/endpoints/{id}")]
pub async fn get_endpoint(
    auth: Authed<act::ReadEndpoints>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let endpoint = state.service.get_endpoint(&auth.actor, id).await?;
    let latest = state
        .service
        .latest_diff(&auth.actor, id)
        .await
        .map_err(ApiError::from)?;
    let latest_diff = latest.map(|d| LatestDiff {
        id: d.base.id,
        created_at: d.base.created_at.unwrap_or(endpoint.created_at),
        breaking_count: d.base.breaking_count,
        warning_count: d.base.warning_count,
        info_count: d.base.info_count,
    });
    Ok(HttpResponse::Ok()
        .insert_header(crate::routes::precondition::etag(endpoint.version))
        .json(EndpointEnvelope {
            endpoint: endpoint.to_model(),
            latest_diff,
        }))
}

/// Register one or many endpoints.
#[utoipa::path(
    post,
    path = "/endpoints",
    tag = "endpoints",
    operation_id = "createEndpoints",
    request_body(content = EndpointCreateRequest, content_type = "application/json"),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 201, description = "At least one endpoint was created", body = CreateEndpointsResponse),
        (status = 200, description = "Nothing was created; every entry is explained in skipped", body = CreateEndpointsResponse),
        (status = 400, description = "Not JSON, a JSON scalar, no entries, or more than 200", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 402, description = "The workspace plan's endpoint limit is already reached", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role cannot create endpoints", body = ErrorBody),
        (status = 413, description = "Body larger than 2 MiB", body = ErrorBody),
        (status = 415, description = "Body is not application/json", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/endpoints")]
pub async fn create_endpoints(
    auth: Authed<act::CreateEndpoints>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    create(auth, req, body, state).await
}

/// The same as `POST /api/v1/endpoints` (D13).
#[utoipa::path(
    post,
    path = "/endpoints",
    tag = "second surface",
    operation_id = "createEndpointsV1",
    request_body(content = EndpointCreateRequest, content_type = "application/json"),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 201, description = "At least one endpoint was created", body = CreateEndpointsResponse),
        (status = 200, description = "Nothing was created; every entry is explained in skipped", body = CreateEndpointsResponse),
        (status = 400, description = "Not JSON, a JSON scalar, no entries, or more than 200", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 402, description = "The workspace plan's endpoint limit is already reached", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role cannot create endpoints", body = ErrorBody),
        (status = 413, description = "Body larger than 2 MiB", body = ErrorBody),
        (status = 415, description = "Body is not application/json", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
        (status = 503, description = "ENDPOINT_SECRET_KEY is not configured", body = ErrorBody),
    )
)]
#[post("/endpoints")]
pub async fn create_endpoints_v1(
    auth: Authed<act::CreateEndpoints>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    create(auth, req, body, state).await
}

/// D6 (`apidrift_app::Service::register_endpoints`): 201 when at least one endpoint was
/// created, else 200 with every entry explained in `skipped`.
async fn create(
    auth: Authed<act::CreateEndpoints>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body = read_json_body(&req, body).await?;
    let response = state.service.register_endpoints(&auth.actor, &body).await?;
    Ok(if response.created > 0 {
        HttpResponse::Created().json(response)
    } else {
        HttpResponse::Ok().json(response)
    })
}
