//! Webhook rows on PostgreSQL: how a stored webhook is read, for the webhook list
//! ([`apidrift_store::AlertStore::list_webhooks`]) and for the alerts a check's transaction plans
//! (the run module), which both read it here.

use crate::Result;
use crate::cached::cached;
use apidrift_model::Severity;
use apidrift_store::{NewWebhook, StoreError, StoredWebhook, WebhookKind};
use diesel::prelude::*;
use diesel::sql_types::{Bytea, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

type Conn = AsyncPgConnection;

#[derive(QueryableByName)]
struct WebhookRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Text)]
    min_severity: String,
    #[diesel(sql_type = Bytea)]
    sealed_secret: Vec<u8>,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
}

impl WebhookRow {
    fn into_model(self) -> Result<StoredWebhook, StoreError> {
        Ok(NewWebhook {
            id: self.id,
            workspace_id: self.workspace_id,
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
            created_at: self.created_at,
        })
    }
}

/// On a shared reference, so that a check's transaction can pipeline it with its other reads.
pub(crate) async fn list_webhooks(mut c: &Conn, ws: Uuid) -> Result<Vec<StoredWebhook>> {
    let rows: Vec<WebhookRow> = cached(
        "SELECT id, workspace_id, kind, url, min_severity, sealed_secret, created_at FROM webhooks \
         WHERE workspace_id = $1 ORDER BY created_at, id",
    )
    .bind::<SqlUuid, _>(ws)
    .load(&mut c)
    .await?;
    Ok(rows
        .into_iter()
        .map(WebhookRow::into_model)
        .collect::<Result<_, _>>()?)
}
