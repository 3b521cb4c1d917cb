//! Workspaces (D3, D17): creating one and changing its name, plan or limits. A plan brings its
//! limits (`Plan::endpoint_limit`, `Plan::check_quota`) unless the caller overrides them.

use super::base::Service;
use super::error::ServiceError;
use apidrift_model::Plan;
use apidrift_store::{NewWorkspace, StoreError, Workspace, WorkspaceUpdate, new_id};
use uuid::Uuid;

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
    fn names_are_trimmed_and_bounded() {
        assert_eq!(check_name("  Acme ").ok().as_deref(), Some("Acme"));
        assert!(check_name("   ").is_err());
        assert!(check_name(&"x".repeat(201)).is_err());
        assert!(check_name(&"é".repeat(200)).is_ok());
    }
}
