//! Webhook rows on SQLite: how a stored webhook is read, for the webhook list
//! ([`apidrift_store::AlertStore::list_webhooks`]) and for the alerts a check's transaction plans
//! (the run module), which both read it here.

use crate::Result;
use crate::cached::cached;
use crate::rows::{from_ts, id, parse_id};
use apidrift_model::Severity;
use apidrift_store::{NewWebhook, StoreError, StoredWebhook, WebhookKind};
use diesel::SqliteConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Binary, Text};
use uuid::Uuid;

#[derive(QueryableByName)]
struct WebhookRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    workspace_id: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Text)]
    min_severity: String,
    #[diesel(sql_type = Binary)]
    sealed_secret: Vec<u8>,
    #[diesel(sql_type = BigInt)]
    created_at: i64,
}

impl WebhookRow {
    fn into_model(self) -> Result<StoredWebhook, StoreError> {
        Ok(NewWebhook {
            id: parse_id("webhooks.id", &self.id)?,
            workspace_id: parse_id("webhooks.workspace_id", &self.workspace_id)?,
            kind: self
                .kind
                .parse::<WebhookKind>()
                .map_err(|e| StoreError::corrupt("webhooks.kind", e))?,
            url: self.url,
            min_severity: self
                .min_severity
                .parse::<Severity>()
                .map_err(|e| StoreError::corrupt("webhooks.min_severity", e))?,
            sealed_secret: self.sealed_secret,
            created_at: from_ts("webhooks.created_at", self.created_at)?,
        })
    }
}

pub(crate) fn list_webhooks(c: &mut SqliteConnection, ws: Uuid) -> Result<Vec<StoredWebhook>> {
    let rows: Vec<WebhookRow> = cached(
        "SELECT id, workspace_id, kind, url, min_severity, sealed_secret, created_at FROM webhooks \
         WHERE workspace_id = ? ORDER BY created_at, id",
    )
    .bind::<Text, _>(id(ws))
    .load(c)?;
    Ok(rows
        .into_iter()
        .map(WebhookRow::into_model)
        .collect::<Result<_, _>>()?)
}
