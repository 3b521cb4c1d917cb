//! [`AlertStore`] on PostgreSQL: webhooks, the outbox, deliveries and schedules. Claims are one
//! `UPDATE … WHERE key IN (SELECT … FOR UPDATE SKIP LOCKED)` statement, so N workers never claim
//! the same row, and a lease (`lease_until`) lets another worker take over the work of one that
//! died.

use crate::cached::cached;
use crate::escape::{read_opt, read_text, store_opt, store_text};
use crate::run::Tx;
use crate::webhooks::list_webhooks;
use crate::{Error, PgStore, Result};
use apidrift_model::Cadence;
use apidrift_store::run as store_run;
use apidrift_store::{
    AlertDraft, AlertStore, CheckRecording, ClaimedDelivery, ClaimedSchedule, DeliveryAttempt,
    DeliveryCounts, DeliveryOutcome, NewCheck, NewDiff, NewSchedule, NewWebhook, RecordedCheck,
    ScheduleFinish, ScheduleInfo, StoreError, StoredWebhook, WebhookKind,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{Array, Bytea, Int4, Int8, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

/// The end of a lease taken at `now`, saturating like SQLite's: a lease too long to represent
/// never ends (it used to fall back to one hour, or panic past the year 9999).
fn lease_until(now: OffsetDateTime, lease: Duration) -> OffsetDateTime {
    now.saturating_add(time::Duration::try_from(lease).unwrap_or(time::Duration::MAX))
}

fn kind(text: &str) -> Result<WebhookKind, StoreError> {
    text.parse::<WebhookKind>()
        .map_err(|e| StoreError::corrupt("webhooks.kind", e))
}

#[derive(QueryableByName)]
struct DeliveryRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    event_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    webhook_id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Bytea)]
    sealed_secret: Vec<u8>,
    #[diesel(sql_type = Text)]
    payload: String,
    #[diesel(sql_type = Int4)]
    attempts: i32,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
}

#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = Int8)]
    n: i64,
}

#[derive(QueryableByName)]
struct One {
    #[diesel(sql_type = Int8)]
    n: i64,
}

#[derive(QueryableByName)]
struct Unscheduled {
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    schedule: String,
}

#[derive(QueryableByName)]
struct ScheduleRow {
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    endpoint_id: Uuid,
    #[diesel(sql_type = Text)]
    frequency: String,
    #[diesel(sql_type = Timestamptz)]
    next_run_at: OffsetDateTime,
}

#[derive(QueryableByName)]
struct InfoRow {
    #[diesel(sql_type = Text)]
    frequency: String,
    #[diesel(sql_type = Timestamptz)]
    next_run_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_run_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Text>)]
    last_outcome: Option<String>,
    #[diesel(sql_type = Int8)]
    runs: i64,
    #[diesel(sql_type = Int8)]
    skipped: i64,
}

fn cadence(text: &str) -> Result<Cadence, StoreError> {
    text.parse::<Cadence>()
        .map_err(|e| StoreError::corrupt("schedule", e))
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

#[async_trait]
impl AlertStore for PgStore {
    async fn create_webhook(&self, new: NewWebhook) -> Result<StoredWebhook, StoreError> {
        new.check_text()?;
        let mut conn = self.conn().await?;
        cached(
            "INSERT INTO webhooks (id, workspace_id, kind, url, min_severity, sealed_secret, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind::<SqlUuid, _>(new.id)
        .bind::<SqlUuid, _>(new.workspace_id)
        .bind::<Text, _>(new.kind.as_str())
        .bind::<Text, _>(&new.url)
        .bind::<Text, _>(new.min_severity.as_str())
        .bind::<Bytea, _>(&new.sealed_secret)
        .bind::<Timestamptz, _>(new.created_at)
        .execute(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        Ok(new)
    }

    async fn list_webhooks(&self, workspace_id: Uuid) -> Result<Vec<StoredWebhook>, StoreError> {
        let conn = self.conn().await?;
        list_webhooks(&conn, workspace_id)
            .await
            .map_err(StoreError::from)
    }

    async fn delete_webhook(&self, workspace_id: Uuid, webhook_id: Uuid) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let n = cached("DELETE FROM webhooks WHERE workspace_id = $1 AND id = $2")
            .bind::<SqlUuid, _>(workspace_id)
            .bind::<SqlUuid, _>(webhook_id)
            .execute(&mut conn)
            .await
            .map_err(|e| StoreError::from(Error::Db(e)))?;
        if n == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn record_check_alerting(
        &self,
        workspace_id: Uuid,
        check: NewCheck,
        diff: Option<NewDiff>,
        draft: AlertDraft,
    ) -> Result<(RecordedCheck, u32), StoreError> {
        tx!(self, |c| store_run::record_check_alerting(
            &mut Tx::new(c),
            workspace_id,
            &check,
            diff.as_ref(),
            &draft
        )
        .await)
    }

    async fn record_check_run(
        &self,
        workspace_id: Uuid,
        check: NewCheck,
        diff: Option<NewDiff>,
        draft: AlertDraft,
        finish: Option<ScheduleFinish>,
    ) -> Result<CheckRecording, StoreError> {
        if let Some(f) = &finish {
            apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, &f.owner)?;
        }
        // The steps answer their reads from the prefetch and queue their writes; the unit's take
        // sends them (`run::Tx`), the flush whatever a step queued after it.
        let result = tx!(@raw self, |c| {
            let mut tx = Tx::new(c);
            let recorded = store_run::record_check_run(
                &mut tx,
                workspace_id,
                &check,
                diff.as_ref(),
                &draft,
                finish.as_ref(),
            )
            .await?;
            tx.flush().await?;
            Ok(recorded)
        });
        match result {
            Ok(r) => Ok(r),
            Err(Error::QuotaExhausted { used, quota }) => {
                Ok(CheckRecording::QuotaExhausted { used, quota })
            }
            Err(e) => Err(StoreError::from(e)),
        }
    }

    async fn claim_deliveries(
        &self,
        owner: &str,
        now: OffsetDateTime,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        let mut conn = self.conn().await?;
        let rows: Vec<DeliveryRow> = cached(
            "WITH claimed AS ( \
               UPDATE deliveries SET lease_until = $2, lease_owner = $3 \
               WHERE id IN (SELECT id FROM deliveries WHERE state = 'pending' \
                 AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1) \
                 ORDER BY next_attempt_at LIMIT $4 FOR UPDATE SKIP LOCKED) \
               RETURNING id, workspace_id, event_id, webhook_id, attempts) \
             SELECT d.id, d.workspace_id, d.event_id, d.webhook_id, w.kind, w.url, w.sealed_secret, \
               e.payload, d.attempts, e.created_at \
             FROM claimed d JOIN webhooks w ON w.id = d.webhook_id \
             JOIN outbox_events e ON e.id = d.event_id",
        )
        .bind::<Timestamptz, _>(now)
        .bind::<Timestamptz, _>(lease_until(now, lease))
        .bind::<Text, _>(owner)
        .bind::<Int8, _>(i64::from(limit))
        .load(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                Ok(ClaimedDelivery {
                    id: r.id,
                    workspace_id: r.workspace_id,
                    event_id: r.event_id,
                    webhook_id: r.webhook_id,
                    kind: kind(&r.kind)?,
                    url: r.url,
                    sealed_secret: r.sealed_secret,
                    payload: read_text(r.payload),
                    attempts: u32::try_from(r.attempts).unwrap_or(0),
                    created_at: r.created_at,
                })
            })
            .collect::<Result<_, StoreError>>()?)
    }

    async fn finish_delivery(
        &self,
        delivery_id: Uuid,
        owner: &str,
        attempt: DeliveryAttempt,
        outcome: DeliveryOutcome,
    ) -> Result<bool, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        let (state, next, finished) = match outcome {
            DeliveryOutcome::Delivered => ("delivered", None, Some(attempt.attempted_at)),
            DeliveryOutcome::Retry(at) => ("pending", Some(at), None),
            DeliveryOutcome::Failed => ("failed", None, Some(attempt.attempted_at)),
        };
        let owner = owner.to_owned();
        tx!(self, |c| {
            let n = cached(
                "UPDATE deliveries SET state = $1, attempts = attempts + 1, \
                 next_attempt_at = COALESCE($2, next_attempt_at), finished_at = $3, \
                 last_error = $4, lease_until = NULL, lease_owner = NULL \
                 WHERE id = $5 AND lease_owner = $6",
            )
            .bind::<Text, _>(state)
            .bind::<Nullable<Timestamptz>, _>(next)
            .bind::<Nullable<Timestamptz>, _>(finished)
            .bind::<Nullable<Text>, _>(store_opt(attempt.error.as_deref()))
            .bind::<SqlUuid, _>(delivery_id)
            .bind::<Text, _>(&owner)
            .execute(c)
            .await?;
            if n == 0 {
                return Ok(false);
            }
            cached(
                "INSERT INTO delivery_attempts (id, delivery_id, attempt, attempted_at, \
                 http_status, error, duration_ms) \
                 VALUES ($1, $2, (SELECT attempts FROM deliveries WHERE id = $2), $3, $4, $5, $6)",
            )
            .bind::<SqlUuid, _>(attempt.id)
            .bind::<SqlUuid, _>(delivery_id)
            .bind::<Timestamptz, _>(attempt.attempted_at)
            .bind::<Nullable<Int4>, _>(attempt.http_status.map(i32::from))
            .bind::<Nullable<Text>, _>(store_opt(attempt.error.as_deref()))
            .bind::<Int4, _>(i32::try_from(attempt.duration_ms).unwrap_or(i32::MAX))
            .execute(c)
            .await?;
            Ok(true)
        })
    }

    async fn delivery_counts(&self, workspace_id: Uuid) -> Result<DeliveryCounts, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<CountRow> = cached(
            "SELECT state, count(*) AS n FROM deliveries WHERE workspace_id = $1 GROUP BY state",
        )
        .bind::<SqlUuid, _>(workspace_id)
        .load(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        let mut out = DeliveryCounts::default();
        for r in rows {
            match r.state.as_str() {
                "pending" => out.pending = count(r.n),
                "delivered" => out.delivered = count(r.n),
                _ => out.failed += count(r.n),
            }
        }
        let attempts: One = cached(
            "SELECT count(*) AS n FROM delivery_attempts a JOIN deliveries d \
             ON d.id = a.delivery_id WHERE d.workspace_id = $1",
        )
        .bind::<SqlUuid, _>(workspace_id)
        .get_result(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        out.attempts = count(attempts.n);
        Ok(out)
    }

    async fn unscheduled_endpoints(
        &self,
        limit: u32,
    ) -> Result<Vec<(Uuid, Uuid, Cadence)>, StoreError> {
        let mut conn = self.conn().await?;
        cached(
            "DELETE FROM schedules s USING endpoints e \
             WHERE e.id = s.endpoint_id AND e.schedule IS NULL",
        )
        .execute(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        let rows: Vec<Unscheduled> = cached(
            "SELECT e.workspace_id, e.id, e.schedule FROM endpoints e \
             WHERE e.schedule IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM schedules s WHERE s.endpoint_id = e.id) LIMIT $1",
        )
        .bind::<Int8, _>(i64::from(limit))
        .load(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        rows.into_iter()
            .map(|r| Ok((r.workspace_id, r.id, cadence(&r.schedule)?)))
            .collect()
    }

    async fn insert_schedules(&self, rows: Vec<NewSchedule>) -> Result<u64, StoreError> {
        if rows.is_empty() {
            return Ok(0);
        }
        let mut conn = self.conn().await?;
        let endpoints: Vec<Uuid> = rows.iter().map(|r| r.endpoint_id).collect();
        let workspaces: Vec<Uuid> = rows.iter().map(|r| r.workspace_id).collect();
        let freqs: Vec<String> = rows.iter().map(|r| r.cadence.to_string()).collect();
        let next: Vec<OffsetDateTime> = rows.iter().map(|r| r.next_run_at).collect();
        let n = cached(
            "INSERT INTO schedules (endpoint_id, workspace_id, frequency, next_run_at) \
             SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[]) \
             ON CONFLICT (endpoint_id) DO NOTHING",
        )
        .bind::<Array<SqlUuid>, _>(&endpoints)
        .bind::<Array<SqlUuid>, _>(&workspaces)
        .bind::<Array<Text>, _>(&freqs)
        .bind::<Array<Timestamptz>, _>(&next)
        .execute(&mut conn)
        .await
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        Ok(n as u64)
    }

    async fn claim_schedules(
        &self,
        owner: &str,
        now: OffsetDateTime,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedSchedule>, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        // One transaction: the claim (one statement, `SKIP LOCKED`), then the in-flight mark of
        // each claimed endpoint (health `checking` until the lease ends, the health before kept
        // to restore; paused endpoints are skipped, not run). Schedule rows, then endpoint rows:
        // the lock order of every run.
        let until = lease_until(now, lease);
        tx!(self, |c| {
            let rows: Vec<ScheduleRow> = cached(
                "UPDATE schedules SET lease_until = $2, lease_owner = $3 \
                 WHERE endpoint_id IN (SELECT endpoint_id FROM schedules WHERE next_run_at <= $1 \
                   AND (lease_until IS NULL OR lease_until < $1) \
                   ORDER BY next_run_at LIMIT $4 FOR UPDATE SKIP LOCKED) \
                 RETURNING workspace_id, endpoint_id, frequency, next_run_at",
            )
            .bind::<Timestamptz, _>(now)
            .bind::<Timestamptz, _>(until)
            .bind::<Text, _>(owner)
            .bind::<Int8, _>(i64::from(limit))
            .load(c)
            .await?;
            let claimed = rows
                .into_iter()
                .map(|r| {
                    Ok(ClaimedSchedule {
                        workspace_id: r.workspace_id,
                        endpoint_id: r.endpoint_id,
                        cadence: cadence(&r.frequency)?,
                        next_run_at: r.next_run_at,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let endpoints: Vec<Uuid> = claimed.iter().map(|s| s.endpoint_id).collect();
            store_run::mark_claimed(&mut Tx::new(c), &endpoints, now, until).await?;
            Ok(claimed)
        })
    }

    async fn finish_schedule(
        &self,
        endpoint_id: Uuid,
        owner: &str,
        next_run_at: OffsetDateTime,
        outcome: &str,
        skipped: bool,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        // The schedule first (the claim's lock order), then the endpoint: a run that recorded
        // nothing (skipped, failed) leaves the claim's `checking`, which goes back to the health
        // before the claim.
        tx!(self, |c| {
            let n = cached(
                "UPDATE schedules SET next_run_at = $1, last_run_at = $2, last_outcome = $3, \
                 runs = runs + $4, skipped = skipped + $5, lease_until = NULL, lease_owner = NULL \
                 WHERE endpoint_id = $6 AND lease_owner = $7",
            )
            .bind::<Timestamptz, _>(next_run_at)
            .bind::<Timestamptz, _>(now)
            .bind::<Text, _>(store_text(outcome).as_ref())
            .bind::<Int8, _>(i64::from(!skipped))
            .bind::<Int8, _>(i64::from(skipped))
            .bind::<SqlUuid, _>(endpoint_id)
            .bind::<Text, _>(owner)
            .execute(c)
            .await?;
            if n > 0 {
                store_run::restore_after_run(&mut Tx::new(c), endpoint_id, now).await?;
            }
            Ok(n > 0)
        })
    }

    async fn extend_schedule_leases(
        &self,
        owner: &str,
        endpoint_ids: &[Uuid],
        until: OffsetDateTime,
    ) -> Result<u64, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        if endpoint_ids.is_empty() {
            return Ok(0);
        }
        let n: One = statement!(self, |c| Ok(cached(
            "WITH ext AS (UPDATE schedules SET lease_until = $3 \
               WHERE lease_owner = $1 AND endpoint_id = ANY($2) AND lease_until < $3 \
               RETURNING endpoint_id), \
             marks AS (UPDATE endpoints e SET checking_until = $3 FROM ext \
               WHERE e.id = ext.endpoint_id AND e.health = 'checking' \
               AND e.checking_until < $3 RETURNING e.id) \
             SELECT count(*) AS n FROM ext",
        )
        .bind::<Text, _>(owner)
        .bind::<Array<SqlUuid>, _>(endpoint_ids)
        .bind::<Timestamptz, _>(until)
        .get_result(c)
        .await?))?;
        Ok(count(n.n))
    }

    async fn release_leases(&self, owner: &str) -> Result<u64, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        let mut conn = self.conn().await?;
        let mut total = 0u64;
        for sql in [
            "UPDATE schedules SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = $1",
            "UPDATE deliveries SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = $1",
        ] {
            total += cached(sql)
                .bind::<Text, _>(owner)
                .execute(&mut conn)
                .await
                .map_err(|e| StoreError::from(Error::Db(e)))? as u64;
        }
        Ok(total)
    }

    async fn schedule_of(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<ScheduleInfo>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<InfoRow> = cached(
            "SELECT frequency, next_run_at, last_run_at, last_outcome, runs, skipped \
             FROM schedules WHERE workspace_id = $1 AND endpoint_id = $2",
        )
        .bind::<SqlUuid, _>(workspace_id)
        .bind::<SqlUuid, _>(endpoint_id)
        .get_result(&mut conn)
        .await
        .optional()
        .map_err(|e| StoreError::from(Error::Db(e)))?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(ScheduleInfo {
            cadence: cadence(&r.frequency)?,
            next_run_at: r.next_run_at,
            last_run_at: r.last_run_at,
            last_outcome: read_opt(r.last_outcome),
            runs: count(r.runs),
            skipped: count(r.skipped),
        }))
    }
}
