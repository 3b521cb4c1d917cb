//! [`AlertStore`] on SQLite: webhooks, the outbox, deliveries and schedules. SQLite is one
//! process (D18), so claims are a `SELECT` then an `UPDATE` of the same rows inside one
//! `BEGIN IMMEDIATE` transaction; leases still expire so a crashed run is retried.

use crate::cached::cached;
use crate::rows::{from_ts, id, parse_id, ts};
use crate::run::{self, Tx};
use crate::webhooks::list_webhooks;
use crate::{Error, Result, SqliteStore};
use apidrift_model::Cadence;
use apidrift_store::run as store_run;
use apidrift_store::{
    AlertDraft, AlertStore, CheckRecording, ClaimedDelivery, ClaimedSchedule, DeliveryAttempt,
    DeliveryCounts, DeliveryOutcome, NewCheck, NewDiff, NewSchedule, NewWebhook, RecordedCheck,
    ScheduleFinish, ScheduleInfo, StoreError, StoredWebhook, WebhookKind,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Binary, Integer, Nullable, Text};
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

fn lease_until(now: OffsetDateTime, lease: Duration) -> i64 {
    ts(now).saturating_add(i64::try_from(lease.as_micros()).unwrap_or(i64::MAX))
}

fn kind(text: &str) -> Result<WebhookKind, StoreError> {
    text.parse::<WebhookKind>()
        .map_err(|e| StoreError::corrupt("webhooks.kind", e))
}

#[derive(QueryableByName)]
struct DeliveryRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    workspace_id: String,
    #[diesel(sql_type = Text)]
    event_id: String,
    #[diesel(sql_type = Text)]
    webhook_id: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Binary)]
    sealed_secret: Vec<u8>,
    #[diesel(sql_type = Text)]
    payload: String,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = BigInt)]
    created_at: i64,
}

fn claim_deliveries(
    c: &mut SqliteConnection,
    owner: &str,
    now: OffsetDateTime,
    lease: Duration,
    limit: u32,
) -> Result<Vec<ClaimedDelivery>> {
    let rows: Vec<DeliveryRow> = cached(
        "SELECT d.id, d.workspace_id, d.event_id, d.webhook_id, w.kind, w.url, w.sealed_secret, \
         e.payload, d.attempts, e.created_at FROM deliveries d \
         JOIN webhooks w ON w.id = d.webhook_id JOIN outbox_events e ON e.id = d.event_id \
         WHERE d.state = 'pending' AND d.next_attempt_at <= ? \
         AND (d.lease_until IS NULL OR d.lease_until < ?) \
         ORDER BY d.next_attempt_at LIMIT ?",
    )
    .bind::<BigInt, _>(ts(now))
    .bind::<BigInt, _>(ts(now))
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)?;
    let until = lease_until(now, lease);
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        cached("UPDATE deliveries SET lease_until = ?, lease_owner = ? WHERE id = ?")
            .bind::<BigInt, _>(until)
            .bind::<Text, _>(owner)
            .bind::<Text, _>(&r.id)
            .execute(c)?;
        out.push(ClaimedDelivery {
            id: parse_id("deliveries.id", &r.id)?,
            workspace_id: parse_id("deliveries.workspace_id", &r.workspace_id)?,
            event_id: parse_id("deliveries.event_id", &r.event_id)?,
            webhook_id: parse_id("deliveries.webhook_id", &r.webhook_id)?,
            kind: kind(&r.kind)?,
            url: r.url,
            sealed_secret: r.sealed_secret,
            payload: r.payload,
            attempts: u32::try_from(r.attempts).unwrap_or(0),
            created_at: from_ts("outbox_events.created_at", r.created_at)?,
        });
    }
    Ok(out)
}

fn finish_delivery(
    c: &mut SqliteConnection,
    delivery: Uuid,
    owner: &str,
    attempt: &DeliveryAttempt,
    outcome: DeliveryOutcome,
) -> Result<bool> {
    let (state, next, finished) = match outcome {
        DeliveryOutcome::Delivered => ("delivered", None, Some(ts(attempt.attempted_at))),
        DeliveryOutcome::Retry(at) => ("pending", Some(ts(at)), None),
        DeliveryOutcome::Failed => ("failed", None, Some(ts(attempt.attempted_at))),
    };
    let n = cached(
        "UPDATE deliveries SET state = ?, attempts = attempts + 1, \
         next_attempt_at = COALESCE(?, next_attempt_at), finished_at = ?, last_error = ?, \
         lease_until = NULL, lease_owner = NULL WHERE id = ? AND lease_owner = ?",
    )
    .bind::<Text, _>(state)
    .bind::<Nullable<BigInt>, _>(next)
    .bind::<Nullable<BigInt>, _>(finished)
    .bind::<Nullable<Text>, _>(attempt.error.clone())
    .bind::<Text, _>(id(delivery))
    .bind::<Text, _>(owner)
    .execute(c)?;
    if n == 0 {
        return Ok(false);
    }
    cached(
        "INSERT INTO delivery_attempts (id, delivery_id, attempt, attempted_at, http_status, \
         error, duration_ms) VALUES (?, ?, (SELECT attempts FROM deliveries WHERE id = ?), ?, ?, ?, ?)",
    )
    .bind::<Text, _>(id(attempt.id))
    .bind::<Text, _>(id(delivery))
    .bind::<Text, _>(id(delivery))
    .bind::<BigInt, _>(ts(attempt.attempted_at))
    .bind::<Nullable<Integer>, _>(attempt.http_status.map(i32::from))
    .bind::<Nullable<Text>, _>(attempt.error.clone())
    .bind::<Integer, _>(i32::try_from(attempt.duration_ms).unwrap_or(i32::MAX))
    .execute(c)?;
    Ok(true)
}

#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct One {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

fn delivery_counts(c: &mut SqliteConnection, ws: Uuid) -> Result<DeliveryCounts> {
    let rows: Vec<CountRow> =
        cached("SELECT state, count(*) AS n FROM deliveries WHERE workspace_id = ? GROUP BY state")
            .bind::<Text, _>(id(ws))
            .load(c)?;
    let mut out = DeliveryCounts::default();
    for r in rows {
        let n = u64::try_from(r.n).unwrap_or(0);
        match r.state.as_str() {
            "pending" => out.pending = n,
            "delivered" => out.delivered = n,
            _ => out.failed += n,
        }
    }
    let attempts: One = cached(
        "SELECT count(*) AS n FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id \
         WHERE d.workspace_id = ?",
    )
    .bind::<Text, _>(id(ws))
    .get_result(c)?;
    out.attempts = u64::try_from(attempts.n).unwrap_or(0);
    Ok(out)
}

#[derive(QueryableByName)]
struct Unscheduled {
    #[diesel(sql_type = Text)]
    workspace_id: String,
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    schedule: String,
}

fn cadence(text: &str) -> Result<Cadence, StoreError> {
    text.parse::<Cadence>()
        .map_err(|e| StoreError::corrupt("schedule", e))
}

fn unscheduled(c: &mut SqliteConnection, limit: u32) -> Result<Vec<(Uuid, Uuid, Cadence)>> {
    cached(
        "DELETE FROM schedules WHERE endpoint_id IN (SELECT s.endpoint_id FROM schedules s \
         JOIN endpoints e ON e.id = s.endpoint_id WHERE e.schedule IS NULL)",
    )
    .execute(c)?;
    let rows: Vec<Unscheduled> = cached(
        "SELECT e.workspace_id, e.id, e.schedule FROM endpoints e \
         LEFT JOIN schedules s ON s.endpoint_id = e.id \
         WHERE e.schedule IS NOT NULL AND s.endpoint_id IS NULL LIMIT ?",
    )
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)?;
    rows.into_iter()
        .map(|r| {
            Ok((
                parse_id("endpoints.workspace_id", &r.workspace_id)?,
                parse_id("endpoints.id", &r.id)?,
                cadence(&r.schedule)?,
            ))
        })
        .collect()
}

fn insert_schedules(c: &mut SqliteConnection, rows: &[NewSchedule]) -> Result<u64> {
    let mut n = 0u64;
    for r in rows {
        n += cached(
            "INSERT INTO schedules (endpoint_id, workspace_id, frequency, next_run_at) \
             VALUES (?, ?, ?, ?) ON CONFLICT (endpoint_id) DO NOTHING",
        )
        .bind::<Text, _>(id(r.endpoint_id))
        .bind::<Text, _>(id(r.workspace_id))
        .bind::<Text, _>(r.cadence.to_string())
        .bind::<BigInt, _>(ts(r.next_run_at))
        .execute(c)? as u64;
    }
    Ok(n)
}

#[derive(QueryableByName)]
struct ScheduleRow {
    #[diesel(sql_type = Text)]
    workspace_id: String,
    #[diesel(sql_type = Text)]
    endpoint_id: String,
    #[diesel(sql_type = Text)]
    frequency: String,
    #[diesel(sql_type = BigInt)]
    next_run_at: i64,
}

fn claim_schedules(
    c: &mut SqliteConnection,
    owner: &str,
    now: OffsetDateTime,
    lease: Duration,
    limit: u32,
) -> Result<Vec<ClaimedSchedule>> {
    let rows: Vec<ScheduleRow> = cached(
        "SELECT workspace_id, endpoint_id, frequency, next_run_at FROM schedules \
         WHERE next_run_at <= ? AND (lease_until IS NULL OR lease_until < ?) \
         ORDER BY next_run_at LIMIT ?",
    )
    .bind::<BigInt, _>(ts(now))
    .bind::<BigInt, _>(ts(now))
    .bind::<BigInt, _>(i64::from(limit))
    .load(c)?;
    let until = lease_until(now, lease);
    // The same end as a time (saturating too) for the endpoints' marks.
    let until_at =
        now.saturating_add(time::Duration::try_from(lease).unwrap_or(time::Duration::MAX));
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        cached("UPDATE schedules SET lease_until = ?, lease_owner = ? WHERE endpoint_id = ?")
            .bind::<BigInt, _>(until)
            .bind::<Text, _>(owner)
            .bind::<Text, _>(&r.endpoint_id)
            .execute(c)?;
        out.push(ClaimedSchedule {
            workspace_id: parse_id("schedules.workspace_id", &r.workspace_id)?,
            endpoint_id: parse_id("schedules.endpoint_id", &r.endpoint_id)?,
            cadence: cadence(&r.frequency)?,
            next_run_at: from_ts("schedules.next_run_at", r.next_run_at)?,
        });
    }
    // The in-flight marks, in the claim's transaction (health `checking` until the lease ends,
    // the health before kept to restore); paused endpoints are skipped, not run.
    let endpoints: Vec<Uuid> = out.iter().map(|s| s.endpoint_id).collect();
    run::now(store_run::mark_claimed(
        &mut Tx(c),
        &endpoints,
        now,
        until_at,
    ))?;
    Ok(out)
}

#[derive(QueryableByName)]
struct InfoRow {
    #[diesel(sql_type = Text)]
    frequency: String,
    #[diesel(sql_type = BigInt)]
    next_run_at: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    last_run_at: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    last_outcome: Option<String>,
    #[diesel(sql_type = BigInt)]
    runs: i64,
    #[diesel(sql_type = BigInt)]
    skipped: i64,
}

#[async_trait]
impl AlertStore for SqliteStore {
    async fn create_webhook(&self, new: NewWebhook) -> Result<StoredWebhook, StoreError> {
        new.check_text()?;
        self.write(move |c| {
            cached(
                "INSERT INTO webhooks (id, workspace_id, kind, url, min_severity, sealed_secret, created_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind::<Text, _>(id(new.id))
            .bind::<Text, _>(id(new.workspace_id))
            .bind::<Text, _>(new.kind.as_str())
            .bind::<Text, _>(&new.url)
            .bind::<Text, _>(new.min_severity.as_str())
            .bind::<Binary, _>(&new.sealed_secret)
            .bind::<BigInt, _>(ts(new.created_at))
            .execute(c)?;
            Ok(new)
        })
        .await
    }

    async fn list_webhooks(&self, workspace_id: Uuid) -> Result<Vec<StoredWebhook>, StoreError> {
        self.run(move |c| list_webhooks(c, workspace_id)).await
    }

    async fn delete_webhook(&self, workspace_id: Uuid, webhook_id: Uuid) -> Result<(), StoreError> {
        self.write(move |c| {
            let n = cached("DELETE FROM webhooks WHERE workspace_id = ? AND id = ?")
                .bind::<Text, _>(id(workspace_id))
                .bind::<Text, _>(id(webhook_id))
                .execute(c)?;
            if n == 0 {
                return Err(Error::Store(StoreError::NotFound));
            }
            Ok(())
        })
        .await
    }

    async fn record_check_alerting(
        &self,
        workspace_id: Uuid,
        check: NewCheck,
        diff: Option<NewDiff>,
        draft: AlertDraft,
    ) -> Result<(RecordedCheck, u32), StoreError> {
        self.write(move |c| {
            run::now(store_run::record_check_alerting(
                &mut Tx(c),
                workspace_id,
                &check,
                diff.as_ref(),
                &draft,
            ))
        })
        .await
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
        // One write, so one savepoint of the writer's transaction: the check, its alerts, the
        // unit and the schedule's finish commit together or not at all. A refusal for want of a
        // unit rolls back the savepoint of the steps, then answers.
        self.write(move |c| {
            let steps = c.transaction(|c| {
                run::now(store_run::record_check_run(
                    &mut Tx(c),
                    workspace_id,
                    &check,
                    diff.as_ref(),
                    &draft,
                    finish.as_ref(),
                ))
            });
            match steps {
                Err(Error::QuotaExhausted { used, quota }) => {
                    Ok(CheckRecording::QuotaExhausted { used, quota })
                }
                other => other,
            }
        })
        .await
    }

    async fn claim_deliveries(
        &self,
        owner: &str,
        now: OffsetDateTime,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        let owner = owner.to_owned();
        self.write(move |c| claim_deliveries(c, &owner, now, lease, limit))
            .await
    }

    async fn finish_delivery(
        &self,
        delivery_id: Uuid,
        owner: &str,
        attempt: DeliveryAttempt,
        outcome: DeliveryOutcome,
    ) -> Result<bool, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        let owner = owner.to_owned();
        self.write(move |c| finish_delivery(c, delivery_id, &owner, &attempt, outcome))
            .await
    }

    async fn delivery_counts(&self, workspace_id: Uuid) -> Result<DeliveryCounts, StoreError> {
        self.read(move |c| delivery_counts(c, workspace_id)).await
    }

    async fn unscheduled_endpoints(
        &self,
        limit: u32,
    ) -> Result<Vec<(Uuid, Uuid, Cadence)>, StoreError> {
        self.write(move |c| unscheduled(c, limit)).await
    }

    async fn insert_schedules(&self, rows: Vec<NewSchedule>) -> Result<u64, StoreError> {
        self.write(move |c| insert_schedules(c, &rows)).await
    }

    async fn claim_schedules(
        &self,
        owner: &str,
        now: OffsetDateTime,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedSchedule>, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        let owner = owner.to_owned();
        self.write(move |c| claim_schedules(c, &owner, now, lease, limit))
            .await
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
        let (owner, outcome) = (owner.to_owned(), outcome.to_owned());
        self.write(move |c| {
            let n = cached(
                "UPDATE schedules SET next_run_at = ?, last_run_at = ?, last_outcome = ?, \
                 runs = runs + ?, skipped = skipped + ?, lease_until = NULL, lease_owner = NULL \
                 WHERE endpoint_id = ? AND lease_owner = ?",
            )
            .bind::<BigInt, _>(ts(next_run_at))
            .bind::<BigInt, _>(ts(now))
            .bind::<Text, _>(&outcome)
            .bind::<BigInt, _>(i64::from(!skipped))
            .bind::<BigInt, _>(i64::from(skipped))
            .bind::<Text, _>(id(endpoint_id))
            .bind::<Text, _>(&owner)
            .execute(c)?;
            if n > 0 {
                // A run that recorded nothing (skipped, failed) leaves the claim's `checking`:
                // the health before the claim comes back.
                run::now(store_run::restore_after_run(&mut Tx(c), endpoint_id, now))?;
            }
            Ok(n > 0)
        })
        .await
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
        let owner = owner.to_owned();
        let ids: Vec<String> = endpoint_ids.iter().map(|e| id(*e)).collect();
        let until = ts(until);
        self.write(move |c| {
            let mut n = 0u64;
            for endpoint in &ids {
                let extended = cached(
                    "UPDATE schedules SET lease_until = ? \
                     WHERE lease_owner = ? AND endpoint_id = ? AND lease_until < ?",
                )
                .bind::<BigInt, _>(until)
                .bind::<Text, _>(&owner)
                .bind::<Text, _>(endpoint)
                .bind::<BigInt, _>(until)
                .execute(c)?;
                if extended > 0 {
                    cached(
                        "UPDATE endpoints SET checking_until = ? \
                         WHERE id = ? AND health = 'checking' AND checking_until < ?",
                    )
                    .bind::<BigInt, _>(until)
                    .bind::<Text, _>(endpoint)
                    .bind::<BigInt, _>(until)
                    .execute(c)?;
                }
                n += extended as u64;
            }
            Ok(n)
        })
        .await
    }

    async fn release_leases(&self, owner: &str) -> Result<u64, StoreError> {
        apidrift_store::text::refuse_nul(apidrift_store::text::LEASE_OWNER, owner)?;
        let owner = owner.to_owned();
        self.write(move |c| {
            let a = cached(
                "UPDATE schedules SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = ?",
            )
            .bind::<Text, _>(&owner)
            .execute(c)?;
            let b = cached(
                "UPDATE deliveries SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = ?",
            )
            .bind::<Text, _>(&owner)
            .execute(c)?;
            Ok((a + b) as u64)
        })
        .await
    }

    async fn schedule_of(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<ScheduleInfo>, StoreError> {
        self.run(move |c| {
            let row: Option<InfoRow> = cached(
                "SELECT frequency, next_run_at, last_run_at, last_outcome, runs, skipped \
                 FROM schedules WHERE workspace_id = ? AND endpoint_id = ?",
            )
            .bind::<Text, _>(id(workspace_id))
            .bind::<Text, _>(id(endpoint_id))
            .get_result(c)
            .optional()?;
            let Some(r) = row else { return Ok(None) };
            Ok(Some(ScheduleInfo {
                cadence: cadence(&r.frequency)?,
                next_run_at: from_ts("schedules.next_run_at", r.next_run_at)?,
                last_run_at: r
                    .last_run_at
                    .map(|t| from_ts("schedules.last_run_at", t))
                    .transpose()?,
                last_outcome: r.last_outcome,
                runs: u64::try_from(r.runs).unwrap_or(0),
                skipped: u64::try_from(r.skipped).unwrap_or(0),
            }))
        })
        .await
    }
}
