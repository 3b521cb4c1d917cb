//! [`OpsStore`] on SQLite: the operator reads and the online backup (`VACUUM INTO`).

use crate::cached::cached;
use crate::rows::{WorkspaceRow, parse_id};
use crate::schema::workspaces;
use crate::{Result, SqliteStore};
use apidrift_model::Health;
use apidrift_store::{
    EndpointSample, EndpointSeries, OperatorGauges, OpsStore, StoreError, Workspace, to_u32,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};
use std::path::{Path, PathBuf};

#[derive(QueryableByName)]
struct HealthCount {
    #[diesel(sql_type = Text)]
    health: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct CheckLine {
    #[diesel(sql_type = Text)]
    integrity_check: String,
}

#[derive(QueryableByName)]
struct SampleRow {
    #[diesel(sql_type = Text)]
    workspace: String,
    #[diesel(sql_type = Text)]
    endpoint: String,
    #[diesel(sql_type = Text)]
    endpoint_id: String,
    #[diesel(sql_type = Nullable<Integer>)]
    up: Option<i32>,
    #[diesel(sql_type = Nullable<Integer>)]
    response_time: Option<i32>,
    #[diesel(sql_type = Integer)]
    drift_open: i32,
    #[diesel(sql_type = BigInt)]
    total: i64,
}

fn series(c: &mut SqliteConnection, limit: u32) -> Result<EndpointSeries> {
    let mut out = EndpointSeries::default();
    if limit == 0 {
        let n: Count = cached("SELECT count(*) AS n FROM endpoints").get_result(c)?;
        out.total = u64::try_from(n.n).unwrap_or(0);
        return Ok(out);
    }
    let rows: Vec<SampleRow> = cached(
        "SELECT w.name AS workspace, e.name AS endpoint, e.id AS endpoint_id, \
         (SELECT CASE WHEN c.http_status IS NOT NULL AND c.http_status < 500 THEN 1 ELSE 0 END \
          FROM checks c WHERE c.workspace_id = e.workspace_id AND c.endpoint_id = e.id \
          ORDER BY c.started_at DESC, c.id DESC LIMIT 1) AS up, \
         e.response_time AS response_time, \
         CASE WHEN (CASE WHEN e.health = 'checking' THEN e.prior_health ELSE e.health END) \
          IN ('warning', 'breaking') THEN 1 ELSE 0 END AS drift_open, \
         count(*) OVER () AS total \
         FROM endpoints e JOIN workspaces w ON w.id = e.workspace_id \
         ORDER BY w.name, e.name, e.id LIMIT ?",
    )
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)?;
    for r in rows {
        out.total = u64::try_from(r.total).unwrap_or(0);
        out.samples.push(EndpointSample {
            workspace: r.workspace,
            endpoint: r.endpoint,
            endpoint_id: parse_id("endpoints.id", &r.endpoint_id)?,
            up: r.up.map(|u| u == 1),
            response_time_ms: r
                .response_time
                .map(|ms| to_u32("endpoints.response_time", ms.into()))
                .transpose()?,
            drift_open: r.drift_open == 1,
        });
    }
    Ok(out)
}

fn gauges(c: &mut SqliteConnection) -> Result<OperatorGauges> {
    let rows: Vec<HealthCount> =
        cached("SELECT health, count(*) AS n FROM endpoints GROUP BY health").load(c)?;
    let mut endpoints_by_health = Vec::with_capacity(rows.len());
    for r in rows {
        let health = r
            .health
            .parse::<Health>()
            .map_err(|e| StoreError::corrupt("endpoints.health", e))?;
        endpoints_by_health.push((health, u64::try_from(r.n).unwrap_or(0)));
    }
    let pending: Count =
        cached("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'").get_result(c)?;
    Ok(OperatorGauges {
        endpoints_by_health,
        outbox_pending: u64::try_from(pending.n).unwrap_or(0),
    })
}

/// The file beside `target` that the copy is written to before it is renamed into place, so a
/// failed or interrupted backup never leaves a partial file under the requested name.
fn partial_path(target: &Path) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    target.with_file_name(name)
}

/// Checks a finished copy with `PRAGMA integrity_check` on a connection of its own.
fn verify_copy(path: &str) -> std::result::Result<(), StoreError> {
    let mut conn = SqliteConnection::establish(path)
        .map_err(|e| StoreError::Database(format!("cannot open the copy: {e}")))?;
    let lines: Vec<CheckLine> = cached("PRAGMA integrity_check")
        .load(&mut conn)
        .map_err(|e| StoreError::Database(format!("cannot check the copy: {e}")))?;
    if lines.len() == 1 && lines[0].integrity_check == "ok" {
        Ok(())
    } else {
        let first = lines
            .first()
            .map(|l| l.integrity_check.clone())
            .unwrap_or_default();
        Err(StoreError::Database(format!(
            "the copy failed its integrity check: {first}"
        )))
    }
}

/// Owner read/write only (a backup copy, a new database): the file holds token hashes and sealed
/// values, whatever the umask of the process that wrote it.
#[cfg(unix)]
pub(crate) fn restrict(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
pub(crate) fn restrict(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

fn sync_path(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}

#[async_trait]
impl OpsStore for SqliteStore {
    async fn list_workspaces(&self) -> Result<Vec<Workspace>, StoreError> {
        self.run(|c| {
            let rows: Vec<WorkspaceRow> = workspaces::table
                .order((workspaces::created_at.asc(), workspaces::id.asc()))
                .select(WorkspaceRow::as_select())
                .load(c)?;
            Ok(rows
                .into_iter()
                .map(WorkspaceRow::into_model)
                .collect::<Result<Vec<_>, StoreError>>()?)
        })
        .await
    }

    async fn operator_gauges(&self) -> Result<OperatorGauges, StoreError> {
        self.read(gauges).await
    }

    async fn endpoint_series(&self, limit: u32) -> Result<EndpointSeries, StoreError> {
        self.read(move |c| series(c, limit)).await
    }

    /// `VACUUM INTO` a file beside `target`: one read transaction on the source, so the copy is
    /// the database as of the moment it began while writers carry on (WAL). The copy is checked
    /// (`PRAGMA integrity_check`), made readable by its owner only (0600), flushed to disk, then
    /// renamed to `target`.
    async fn backup_to(&self, target: &Path) -> Result<(), StoreError> {
        if target.exists() {
            return Err(StoreError::InvalidInput(format!(
                "{} already exists: choose a new file name",
                target.display()
            )));
        }
        let partial = partial_path(target);
        let partial_text = partial
            .to_str()
            .ok_or_else(|| StoreError::InvalidInput("the backup path is not UTF-8".into()))?
            .to_owned();
        let _ = std::fs::remove_file(&partial);
        let into = partial_text.clone();
        let copied = self
            .run(move |c| {
                cached("VACUUM INTO ?").bind::<Text, _>(&into).execute(c)?;
                Ok(())
            })
            .await;
        let finish = async {
            copied?;
            let path = partial_text.clone();
            tokio::task::spawn_blocking(move || verify_copy(&path))
                .await
                .map_err(|e| StoreError::Database(e.to_string()))??;
            restrict(&partial).map_err(|e| StoreError::Database(format!("permissions: {e}")))?;
            sync_path(&partial).map_err(|e| StoreError::Database(format!("sync: {e}")))?;
            if target.exists() {
                return Err(StoreError::InvalidInput(format!(
                    "{} appeared while the backup ran: choose a new file name",
                    target.display()
                )));
            }
            std::fs::rename(&partial, target).map_err(|e| {
                StoreError::Database(format!("cannot move the copy into place: {e}"))
            })?;
            if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
                // Persist the rename; not every platform can open a directory, so best effort.
                let _ = sync_path(dir);
            }
            Ok(())
        };
        let result = finish.await;
        if result.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        result
    }
}
