//! `GET /api/v1/endpoints`, `GET /api/v1/endpoints/{id}`, `POST /api/v1/endpoints` and its D13
//! alias `POST /v1/endpoints`.

use crate::auth::{Authed, ReadEndpoints, WriteEndpoints};
use crate::docs::{EndpointCreateRequest, ListEndpointsQuery};
use crate::error::ApiError;
use crate::query::Params;
use crate::routes::{parse_id, read_json_body};
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use apidrift_diff::IgnorePattern;
use apidrift_model::validate::{self, NewEndpoint};
use apidrift_model::{
    CreateEndpointsResponse, EndpointEnvelope, EndpointList, ErrorBody, LatestDiff, Pagination,
    SkippedEntry, sealed,
};
use apidrift_seal::{Binding, Field, KeyRing};
use apidrift_store::{NewEndpointRow, new_id};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

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
    auth: Authed<ReadEndpoints>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = Params::parse(req.query_string())?;
    let page = params.page()?;
    let filter = params.endpoint_filter()?;
    let found = state
        .store
        .list_endpoints(auth.workspace_id, &filter, page)
        .await
        .map_err(ApiError::store)?;
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
        (status = 200, description = "The endpoint; latestDiff is null when it never produced a diff", body = EndpointEnvelope),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:read", body = ErrorBody),
        (status = 404, description = "No such endpoint in this workspace", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/endpoints/{id}")]
pub async fn get_endpoint(
    auth: Authed<ReadEndpoints>,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&id)?;
    let endpoint = state
        .store
        .get_endpoint(auth.workspace_id, id)
        .await
        .map_err(ApiError::store)?
        .ok_or(ApiError::NotFound)?;
    let latest = state
        .store
        .latest_diff(auth.workspace_id, id)
        .await
        .map_err(ApiError::store)?;
    let latest_diff = latest.map(|d| LatestDiff {
        id: d.base.id,
        created_at: d.base.created_at.unwrap_or(endpoint.created_at),
        breaking_count: d.base.breaking_count,
        warning_count: d.base.warning_count,
        info_count: d.base.info_count,
    });
    Ok(HttpResponse::Ok().json(EndpointEnvelope {
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
    auth: Authed<WriteEndpoints>,
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
    auth: Authed<WriteEndpoints>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    create(auth, req, body, state).await
}

/// D6, in the order of D4: body (400), then the server's and workspace's state (404, 503, 402),
/// then each entry on its own.
async fn create(
    auth: Authed<WriteEndpoints>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body = read_json_body(&req, body).await?;
    let entries =
        validate::create_entries(&body).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let ws = auth.workspace_id;
    let workspace = state
        .store
        .get_workspace(ws)
        .await
        .map_err(ApiError::store)?
        .ok_or(ApiError::NotFound)?;
    let Some(keys) = state.keys.clone() else {
        return Err(ApiError::Unavailable(
            "ENDPOINT_SECRET_KEY is not configured: credentials cannot be sealed".into(),
        ));
    };
    if let Some(limit) = workspace.endpoint_limit {
        let count = state
            .store
            .count_endpoints(ws)
            .await
            .map_err(ApiError::store)?;
        if count >= u64::from(limit) {
            return Err(limit_reached(limit));
        }
    }

    let now = apidrift_model::timestamp::truncate_to_millis(OffsetDateTime::now_utc());
    let mut skipped: Vec<SkippedEntry> = Vec::new();
    let mut rows: Vec<(usize, NewEndpointRow)> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        match check_entry(entry, &state, workspace.plan.allows_schedules()) {
            Ok(valid) => {
                let row = seal_row(&keys, ws, valid, now)?;
                rows.push((index, row));
            }
            Err(reason) => skipped.push(SkippedEntry {
                name: validate::entry_name(entry),
                reason,
                index,
            }),
        }
    }

    let mut created = Vec::new();
    if !rows.is_empty() {
        let indices: Vec<usize> = rows.iter().map(|(i, _)| *i).collect();
        let result = state
            .store
            .create_endpoints(ws, rows.into_iter().map(|(_, r)| r).collect())
            .await
            .map_err(ApiError::store)?;
        if result.created.is_empty() && result.limit_already_reached() {
            return Err(limit_reached(result.endpoint_limit.unwrap_or_default()));
        }
        for &index in &indices[result.created.len()..] {
            skipped.push(SkippedEntry {
                name: validate::entry_name(&entries[index]),
                reason: "plan endpoint limit reached".into(),
                index,
            });
        }
        created = result.created;
    }
    skipped.sort_by_key(|s| s.index);
    let scheduled = created.iter().filter(|e| e.schedule.is_some()).count();
    let response = CreateEndpointsResponse {
        created: u32::try_from(created.len()).unwrap_or(u32::MAX),
        scheduled: u32::try_from(scheduled).unwrap_or(u32::MAX),
        endpoints: created.iter().map(|e| e.to_model()).collect(),
        skipped,
    };
    Ok(if response.created > 0 {
        HttpResponse::Created().json(response)
    } else {
        HttpResponse::Ok().json(response)
    })
}

fn limit_reached(limit: u32) -> ApiError {
    ApiError::PaymentRequired(format!(
        "workspace plan endpoint limit reached ({limit} endpoints)"
    ))
}

/// One entry: D6 validation, `ignorePaths` through the diff engine's parser, and the plan rule
/// for schedules.
fn check_entry(entry: &Value, state: &AppState, schedules: bool) -> Result<NewEndpoint, String> {
    let valid = validate::validate_entry(entry, &state.allow)?;
    for (i, pattern) in valid.ignore_paths.iter().enumerate() {
        IgnorePattern::parse(pattern).map_err(|e| format!("ignorePaths[{i}]: {e}"))?;
    }
    if valid.schedule.is_some() && !schedules {
        return Err("schedule: requires the Starter plan or above".into());
    }
    Ok(valid)
}

/// Seals the entry's secrets, each bound to the workspace, the new row's id and its column.
fn seal_row(
    keys: &KeyRing,
    ws: Uuid,
    valid: NewEndpoint,
    now: OffsetDateTime,
) -> Result<NewEndpointRow, ApiError> {
    let id = new_id();
    let seal = |plain: &[u8], field: Field| {
        keys.seal(plain, &Binding::new(*ws.as_bytes(), *id.as_bytes(), field))
            .map_err(|e| ApiError::Internal(format!("sealing failed: {e}")))
    };
    let sealed_auth = match sealed::credential_to_json(&valid.credential) {
        Some(plain) => Some(seal(&plain, Field::EndpointAuth)?),
        None => None,
    };
    let sealed_headers = match sealed::headers_to_json(&valid.headers) {
        Some(plain) => Some(seal(&plain, Field::EndpointHeaders)?),
        None => None,
    };
    let sealed_request_body = match &valid.request_body {
        Some(body) => Some(seal(body.as_bytes(), Field::EndpointRequestBody)?),
        None => None,
    };
    Ok(NewEndpointRow {
        id,
        auth_type: valid.auth_type(),
        name: valid.name,
        url: valid.url,
        method: valid.method,
        environment: valid.environment,
        description: valid.description,
        tags: valid.tags,
        sealed_auth,
        sealed_headers,
        sealed_request_body,
        content_type: valid.content_type,
        diff_mode: valid.diff_mode,
        timeout_ms: valid.timeout_ms,
        schedule: valid.schedule,
        ignore_paths: valid.ignore_paths,
        follow_redirects: valid.follow_redirects,
        response_contract: None,
        created_at: now,
    })
}
