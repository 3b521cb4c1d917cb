//! The workspace's settings (D26, D27): `GET` and `PATCH /api/v1/workspace`, its default severity
//! overrides. Thin callers of `apidrift_app::Service` (module `workspaces`).

use crate::auth::Authed;
use crate::docs::WorkspacePatchDoc;
use crate::error::ApiError;
use crate::routes::{precondition, read_json_body};
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, get, patch, web};
use apidrift_app::{WorkspaceView, act};
use apidrift_model::{ErrorBody, WorkspaceSettings};
use serde::Serialize;
use utoipa_actix_web::service_config::ServiceConfig;

/// Routes under `/api/v1`.
pub fn configure_api_v1(config: &mut ServiceConfig) {
    config.service(get_workspace).service(update_workspace);
}

/// `{ "workspace": WorkspaceSettings }`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WorkspaceEnvelope {
    pub workspace: WorkspaceSettings,
}

fn answer(view: WorkspaceView) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(precondition::etag(view.version))
        .json(WorkspaceEnvelope {
            workspace: view.settings,
        })
}

/// Read the workspace's settings.
#[utoipa::path(
    get,
    path = "/workspace",
    tag = "workspace",
    operation_id = "getWorkspace",
    security(("bearer" = ["endpoints:read"])),
    responses(
        (status = 200, description = "The settings of the token's workspace", body = WorkspaceEnvelope,
            headers(("ETag" = String, description = "The version of the workspace's settings as a strong entity tag (\"3\"). Send it as If-Match with PATCH"))),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:read", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[get("/workspace")]
pub async fn get_workspace(
    auth: Authed<act::ReadWorkspace>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(answer(state.service.workspace_settings(&auth.actor).await?))
}

/// Change the workspace's settings: its default severity overrides.
#[utoipa::path(
    patch,
    path = "/workspace",
    tag = "workspace",
    operation_id = "updateWorkspace",
    params(
        ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^([ \t]*\*[ \t]*|[ \t,]*((W/)?"[!#-~]*"[ \t]*(,[ \t,]*((W/)?"[!#-~]*"[ \t]*)?)*)?)$"#, description = "The ETag of the settings as read (\"3\"), a comma-separated list of them, or *: the change is made only while the settings have that version (strong comparison; a weak W/\"3\" never matches), else 412"),
    ),
    request_body(content = WorkspacePatchDoc, content_type = "application/json"),
    security(("bearer" = ["endpoints:write"])),
    responses(
        (status = 200, description = "The settings after the change", body = WorkspaceEnvelope,
            headers(("ETag" = String, description = "The new version of the settings as a strong entity tag (\"4\"): send it as If-Match with the next change"))),
        (status = 400, description = "Not a JSON object, a member other than severityOverrides, an invalid override (named, with the valid rule ids for an unknown one), or an If-Match that is not * or a list of entity tags; nothing changed", body = ErrorBody),
        (status = 401, description = "Missing or invalid token", body = ErrorBody),
        (status = 403, description = "Token lacks endpoints:write, or the role is below admin", body = ErrorBody),
        (status = 412, description = "If-Match names another version than the current one: {\"error\": \"the workspace changed since you read it\"}; nothing changed", body = ErrorBody),
        (status = 413, description = "Body larger than 2 MiB", body = ErrorBody),
        (status = 415, description = "Body is not application/json", body = ErrorBody),
        (status = 429, description = "Rate limit exceeded (Retry-After)", body = ErrorBody),
    )
)]
#[patch("/workspace")]
pub async fn update_workspace(
    auth: Authed<act::UpdateWorkspace>,
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body = read_json_body(&req, body).await?;
    let expected = precondition::expected_workspace_version(&req, &state, &auth.actor).await?;
    Ok(answer(
        state
            .service
            .update_workspace_settings(&auth.actor, &body, expected)
            .await?,
    ))
}
