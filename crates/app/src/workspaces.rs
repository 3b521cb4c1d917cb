//! Workspaces (D3, D17): creating one and changing its name, plan or limits. A plan brings its
//! limits (`Plan::endpoint_limit`, `Plan::check_quota`) unless the caller overrides them.

use super::actions::{Action, Actor};
use super::base::Service;
use super::error::ServiceError;
use apidrift_model::{Plan, SeverityOverride, WorkspaceSettings};
use apidrift_store::{NewWorkspace, StoreError, Workspace, WorkspaceUpdate, new_id};
use serde_json::Value;
use uuid::Uuid;

/// The wire name of the workspace's default severity overrides.
pub const OVERRIDES_FIELD: &str = "severityOverrides";

/// A workspace's settings as `GET`/`PATCH /api/v1/workspace` answer them, with their version
/// (the strong `ETag`).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkspaceView {
    pub settings: WorkspaceSettings,
    pub version: i64,
}

impl WorkspaceView {
    fn of(w: Workspace) -> WorkspaceView {
        WorkspaceView {
            settings: WorkspaceSettings {
                id: w.id,
                name: w.name,
                plan: w.plan,
                severity_overrides: w.severity_overrides,
            },
            version: w.version,
        }
    }
}

/// Reads a `PATCH /api/v1/workspace` body: an object whose only member is `severityOverrides`
/// (a list of overrides; `null` or `[]` removes them). The reason names the member.
pub fn parse_settings_patch(body: &Value) -> Result<Vec<SeverityOverride>, String> {
    let Value::Object(map) = body else {
        return Err("request body must be a JSON object".into());
    };
    if let Some(unknown) = map.keys().find(|k| *k != OVERRIDES_FIELD) {
        return Err(format!(
            "{unknown}: not a workspace setting that can be changed (settings: {OVERRIDES_FIELD})"
        ));
    }
    let Some(list) = map.get(OVERRIDES_FIELD) else {
        return Err(format!("nothing to change: send {OVERRIDES_FIELD}"));
    };
    let list = SeverityOverride::parse_list(OVERRIDES_FIELD, list)?;
    crate::endpoints::check_overrides(OVERRIDES_FIELD, &list)?;
    Ok(list)
}

/// Longest workspace name accepted.
pub const MAX_NAME: usize = 200;

/// A workspace name as stored (trimmed), or why it is refused.
pub fn check_name(text: &str) -> Result<String, ServiceError> {
    let name = text.trim();
    if name.is_empty() {
        return Err(ServiceError::Invalid("must not be empty".into()));
    }
    if name.contains('\0') {
        return Err(ServiceError::Invalid(
            "must not contain a NUL character (U+0000)".into(),
        ));
    }
    if name.chars().count() > MAX_NAME {
        return Err(ServiceError::Invalid(format!(
            "must be at most {MAX_NAME} characters"
        )));
    }
    Ok(name.to_owned())
}

/// What to change; `None` leaves a field alone, `Some(None)` makes a limit unlimited.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceChange {
    pub name: Option<String>,
    /// A new plan; its limits replace the current ones unless given below.
    pub plan: Option<Plan>,
    pub endpoint_limit: Option<Option<u32>>,
    pub check_quota: Option<Option<u32>>,
}

impl Service {
    /// Creates a workspace on `plan`, with the plan's limits unless overridden (`Some(None)` =
    /// unlimited).
    pub async fn create_workspace(
        &self,
        name: &str,
        plan: Plan,
        endpoint_limit: Option<Option<u32>>,
        check_quota: Option<Option<u32>>,
    ) -> Result<Workspace, ServiceError> {
        Ok(self
            .store
            .create_workspace(NewWorkspace {
                id: new_id(),
                name: check_name(name)?,
                plan,
                endpoint_limit: endpoint_limit.unwrap_or(plan.endpoint_limit()),
                check_quota: check_quota.unwrap_or(plan.check_quota()),
                created_at: self.now(),
            })
            .await?)
    }

    /// `GET /api/v1/workspace`: the settings of the actor's workspace and their version.
    pub async fn workspace_settings(&self, actor: &Actor) -> Result<WorkspaceView, ServiceError> {
        actor.may(Action::ReadWorkspace)?;
        Ok(WorkspaceView::of(self.workspace(actor.workspace()).await?))
    }

    /// The version of the actor's workspace settings, for a change (an `If-Match` list of several
    /// versions is resolved against it).
    pub async fn workspace_version(&self, actor: &Actor) -> Result<i64, ServiceError> {
        actor.may(Action::UpdateWorkspace)?;
        Ok(self.workspace(actor.workspace()).await?.version)
    }

    /// `PATCH /api/v1/workspace` (admin or above): replaces the workspace's default severity
    /// overrides (D26) and answers the settings. Order: the body (400, naming the member), then
    /// `if_match` (412 when the settings changed since the caller read that version; nothing
    /// is written). Every change adds 1 to the version.
    pub async fn update_workspace_settings(
        &self,
        actor: &Actor,
        body: &Value,
        if_match: Option<i64>,
    ) -> Result<WorkspaceView, ServiceError> {
        actor.may(Action::UpdateWorkspace)?;
        let ws = actor.workspace();
        let overrides = parse_settings_patch(body).map_err(ServiceError::Invalid)?;
        let update = WorkspaceUpdate {
            severity_overrides: Some(overrides),
            expected_version: if_match,
            ..WorkspaceUpdate::default()
        };
        match self.store.update_workspace(ws, update).await {
            Ok(w) => Ok(WorkspaceView::of(w)),
            Err(StoreError::NotFound) => Err(ServiceError::not_found("workspace", ws)),
            Err(StoreError::Changed) => Err(ServiceError::Changed { what: "workspace" }),
            Err(other) => Err(other.into()),
        }
    }

    /// Operator (`apidrift workspace list`): every workspace, oldest first.
    pub async fn list_workspaces(&self) -> Result<Vec<Workspace>, ServiceError> {
        Ok(self.store.list_workspaces().await?)
    }

    /// Changes a workspace and returns it. A new plan brings its limits unless they are given.
    pub async fn update_workspace(
        &self,
        id: Uuid,
        change: WorkspaceChange,
    ) -> Result<Workspace, ServiceError> {
        if change.name.is_none()
            && change.plan.is_none()
            && change.endpoint_limit.is_none()
            && change.check_quota.is_none()
        {
            return Err(ServiceError::Invalid(
                "nothing to change: give --name, --plan, --endpoint-limit or --check-quota".into(),
            ));
        }
        let update = WorkspaceUpdate {
            name: change.name.as_deref().map(check_name).transpose()?,
            plan: change.plan,
            endpoint_limit: change
                .endpoint_limit
                .or(change.plan.map(Plan::endpoint_limit)),
            check_quota: change.check_quota.or(change.plan.map(Plan::check_quota)),
            ..WorkspaceUpdate::default()
        };
        self.store
            .update_workspace(id, update)
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found("workspace", id),
                other => other.into(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_patch_names_its_member() {
        use serde_json::json;
        let read = |v: Value| parse_settings_patch(&v);
        assert_eq!(
            read(json!({"severityOverrides": [{"rule": "field-added", "severity": "breaking"}]})),
            Ok(vec![SeverityOverride::new(
                "field-added",
                apidrift_model::OverrideSeverity::Breaking
            )])
        );
        assert_eq!(read(json!({"severityOverrides": null})), Ok(Vec::new()));
        assert_eq!(
            read(json!({})).err().as_deref(),
            Some("nothing to change: send severityOverrides")
        );
        assert_eq!(
            read(json!({"name": "x"})).err().as_deref(),
            Some("name: not a workspace setting that can be changed (settings: severityOverrides)")
        );
        assert_eq!(
            read(json!([])).err().as_deref(),
            Some("request body must be a JSON object")
        );
        let unknown = read(json!({"severityOverrides": [{"rule": "added", "severity": "info"}]}));
        assert!(
            unknown.as_ref().err().is_some_and(|e| e.starts_with(
                "severityOverrides[0].rule: unknown rule \"added\"; the rules are field-removed"
            )),
            "{unknown:?}"
        );
        // The path is parsed by the diff engine: a rule that never reports there is refused.
        let nowhere = read(json!({"severityOverrides": [
            {"rule": "field-added", "severity": "info"},
            {"rule": "status-changed", "path": "$.a", "severity": "info"},
        ]}));
        assert!(
            nowhere.as_ref().err().is_some_and(|e| e
                .starts_with("severityOverrides[1]: invalid severity override")
                && e.contains("never matches")),
            "{nowhere:?}"
        );
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(check_name("  Acme ").ok().as_deref(), Some("Acme"));
        assert!(check_name("   ").is_err());
        assert!(check_name(&"x".repeat(201)).is_err());
        assert!(check_name(&"é".repeat(200)).is_ok());
    }
}
