//! [`CheckTx`] and [`MarkTx`] on PostgreSQL: the primitives of one check's transaction (and of
//! a run's in-flight mark) on the connection of a
//! transaction that [`tx!`] opened (and runs again whole on a deadlock or serialization
//! failure). The orchestration and its rules are `apidrift_store::run`'s, in the lock order this
//! adapter needs: the schedule row, then the endpoint row (`checks::insert_check` locks it, so
//! alert decisions of one endpoint are serialised), the workspace's usage row last so its lock
//! is held only until the commit. These functions store and fetch.

use crate::cached::cached;
use crate::endpoints::lock_endpoint;
use crate::escape::{read_opt, store_opt, store_text};
use crate::rows::micros;
use crate::webhooks::list_webhooks;
use crate::{Error, Result, checks, not_found, workspaces};
use apidrift_model::Health;
use apidrift_store::run::{CheckTx, HealthMark, HealthWrite, MarkTx, OutboxEvent, QuotaRefused};
use apidrift_store::{
    AlertState, DiffCounts, DiffSeen, NewCheck, NewDiff, OpenDiff, ScheduleFinish, SlowState,
    StoredCheck, StoredWebhook, ids_from_text, ids_to_text, new_id, to_u32,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{
    Array, Bool, Int4, Int8, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

/// The connection of an open transaction, as a [`CheckTx`].
pub(crate) struct Tx<'c>(pub(crate) &'c mut AsyncPgConnection);

impl From<QuotaRefused> for Error {
    fn from(r: QuotaRefused) -> Self {
        Error::QuotaExhausted {
            used: r.used,
            quota: r.quota,
        }
    }
}

#[derive(QueryableByName)]
struct StateRow {
    #[diesel(sql_type = Nullable<Text>)]
    fingerprint: Option<String>,
    #[diesel(sql_type = Text)]
    webhook_ids: String,
    #[diesel(sql_type = Integer)]
    slow_streak: i32,
    #[diesel(sql_type = Nullable<Text>)]
    slow_webhook_ids: Option<String>,
}

#[derive(QueryableByName)]
struct OpenRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    baseline_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    fingerprint: Option<String>,
}

#[derive(QueryableByName)]
struct SeenRow {
    #[diesel(sql_type = Timestamptz)]
    first_seen_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    last_seen_at: OffsetDateTime,
    #[diesel(sql_type = Int4)]
    seen_count: i32,
}

#[derive(QueryableByName)]
struct Held {
    #[diesel(sql_type = Int8)]
    n: i64,
}

#[async_trait]
impl CheckTx for Tx<'_> {
    type Error = Error;

    async fn hold_schedule(&mut self, ws: Uuid, endpoint: Uuid, owner: &str) -> Result<bool> {
        // The schedule row first, as a claim and `finish_schedule` take it (schedule, then
        // endpoint): a scheduled run and a delete of its endpoint never wait on each other in
        // opposite orders.
        let held: Option<Held> = cached(
            "SELECT 1::int8 AS n FROM schedules \
             WHERE workspace_id = $1 AND endpoint_id = $2 AND lease_owner = $3 FOR UPDATE",
        )
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(endpoint)
        .bind::<Text, _>(owner)
        .get_result(self.0)
        .await
        .optional()?;
        Ok(held.is_some_and(|h| h.n == 1))
    }

    async fn open_diff(&mut self, ws: Uuid, endpoint: Uuid) -> Result<Option<OpenDiff>> {
        // The endpoint row first, the lock `insert_check` takes: a second check of the endpoint
        // waits here until this one committed its decision.
        lock_endpoint(self.0, ws, endpoint).await?;
        let row: Option<OpenRow> = cached(
            "SELECT id, baseline_id, fingerprint FROM diffs \
             WHERE workspace_id = $1 AND endpoint_id = $2 AND NOT accepted AND closed_at IS NULL \
             ORDER BY created_at DESC, id DESC LIMIT 1",
        )
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(endpoint)
        .get_result(self.0)
        .await
        .optional()?;
        Ok(row.map(|r| OpenDiff {
            id: r.id,
            baseline_id: r.baseline_id,
            fingerprint: read_opt(r.fingerprint),
        }))
    }

    async fn close_diffs(&mut self, ws: Uuid, endpoint: Uuid, at: OffsetDateTime) -> Result<()> {
        cached(
            "UPDATE diffs SET closed_at = $1 \
             WHERE workspace_id = $2 AND endpoint_id = $3 AND NOT accepted AND closed_at IS NULL",
        )
        .bind::<Timestamptz, _>(micros(at))
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(endpoint)
        .execute(self.0)
        .await?;
        Ok(())
    }

    async fn touch_diff(
        &mut self,
        ws: Uuid,
        diff: Uuid,
        check: Uuid,
        at: OffsetDateTime,
    ) -> Result<DiffSeen> {
        let seen: Option<SeenRow> = cached(
            "UPDATE diffs SET last_seen_at = $1, seen_count = seen_count + 1 \
             WHERE workspace_id = $2 AND id = $3 \
             RETURNING first_seen_at, last_seen_at, seen_count",
        )
        .bind::<Timestamptz, _>(micros(at))
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(diff)
        .get_result(self.0)
        .await
        .optional()?;
        let seen = seen.ok_or_else(not_found)?;
        cached("UPDATE checks SET diff_id = $1 WHERE workspace_id = $2 AND id = $3")
            .bind::<SqlUuid, _>(diff)
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(check)
            .execute(self.0)
            .await?;
        Ok(DiffSeen {
            id: diff,
            first_seen_at: seen.first_seen_at,
            last_seen_at: seen.last_seen_at,
            seen_count: to_u32("diffs.seen_count", seen.seen_count.into())?,
        })
    }

    async fn insert_check(
        &mut self,
        ws: Uuid,
        check: &NewCheck,
        diff: Option<&NewDiff>,
        counts: DiffCounts,
        health: Health,
    ) -> Result<StoredCheck> {
        checks::insert_check(self.0, ws, check, diff, counts, health).await
    }

    async fn alert_state(&mut self, ws: Uuid, endpoint: Uuid) -> Result<AlertState> {
        let state: Option<StateRow> = cached(
            "SELECT fingerprint, webhook_ids, slow_streak, slow_webhook_ids FROM alert_state \
             WHERE workspace_id = $1 AND endpoint_id = $2",
        )
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(endpoint)
        .get_result(self.0)
        .await
        .optional()?;
        Ok(match state {
            Some(s) => AlertState {
                fingerprint: read_opt(s.fingerprint),
                webhook_ids: ids_from_text(&s.webhook_ids)?,
                slow: SlowState {
                    streak: u32::try_from(s.slow_streak).unwrap_or(0),
                    alerted: s
                        .slow_webhook_ids
                        .map(|ids| ids_from_text(&ids))
                        .transpose()?,
                },
            },
            None => AlertState::default(),
        })
    }

    async fn webhooks(&mut self, ws: Uuid) -> Result<Vec<StoredWebhook>> {
        list_webhooks(self.0, ws).await
    }

    async fn queue_event(
        &mut self,
        ws: Uuid,
        event: OutboxEvent<'_>,
        webhook_ids: &[Uuid],
    ) -> Result<u32> {
        cached(
            "INSERT INTO outbox_events (id, workspace_id, endpoint_id, kind, payload, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind::<SqlUuid, _>(event.id)
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(event.endpoint_id)
        .bind::<Text, _>(event.kind)
        .bind::<Text, _>(store_text(event.payload).as_ref())
        .bind::<Timestamptz, _>(event.created_at)
        .execute(self.0)
        .await?;
        let ids: Vec<Uuid> = webhook_ids.iter().map(|_| new_id()).collect();
        let n = cached(
            "INSERT INTO deliveries (id, workspace_id, event_id, webhook_id, state, attempts, \
             next_attempt_at, created_at) \
             SELECT d, $2, $3, w, 'pending', 0, $4, $4 FROM unnest($1::uuid[], $5::uuid[]) AS t(d, w)",
        )
        .bind::<Array<SqlUuid>, _>(&ids)
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(event.id)
        .bind::<Timestamptz, _>(event.created_at)
        .bind::<Array<SqlUuid>, _>(webhook_ids)
        .execute(self.0)
        .await?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    async fn put_alert_state(
        &mut self,
        ws: Uuid,
        endpoint: Uuid,
        state: &AlertState,
        at: OffsetDateTime,
    ) -> Result<()> {
        cached(
            "INSERT INTO alert_state (endpoint_id, workspace_id, fingerprint, webhook_ids, \
             slow_streak, slow_webhook_ids, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (endpoint_id) DO UPDATE SET \
             fingerprint = excluded.fingerprint, webhook_ids = excluded.webhook_ids, \
             slow_streak = excluded.slow_streak, slow_webhook_ids = excluded.slow_webhook_ids, \
             updated_at = excluded.updated_at",
        )
        .bind::<SqlUuid, _>(endpoint)
        .bind::<SqlUuid, _>(ws)
        .bind::<Nullable<Text>, _>(store_opt(state.fingerprint.as_deref()))
        .bind::<Text, _>(ids_to_text(&state.webhook_ids))
        .bind::<Integer, _>(i32::try_from(state.slow.streak).unwrap_or(i32::MAX))
        .bind::<Nullable<Text>, _>(state.slow.alerted.as_deref().map(ids_to_text))
        .bind::<Timestamptz, _>(at)
        .execute(self.0)
        .await?;
        Ok(())
    }

    async fn check_quota(&mut self, ws: Uuid) -> Result<Option<u32>> {
        Ok(workspaces::get_workspace(self.0, ws)
            .await?
            .ok_or_else(not_found)?
            .check_quota)
    }

    async fn take_unit(
        &mut self,
        ws: Uuid,
        month: &str,
        limit: Option<u32>,
    ) -> Result<Option<u64>> {
        workspaces::take_unit(self.0, ws, month, limit).await
    }

    async fn units_used(&mut self, ws: Uuid, month: &str) -> Result<u64> {
        workspaces::units_used(self.0, ws, month).await
    }

    async fn finish_recorded(
        &mut self,
        ws: Uuid,
        endpoint: Uuid,
        finish: &ScheduleFinish,
        outcome: &str,
    ) -> Result<bool> {
        let n = cached(
            "UPDATE schedules SET next_run_at = $1, last_run_at = $2, last_outcome = $3, \
             runs = runs + 1, lease_until = NULL, lease_owner = NULL \
             WHERE workspace_id = $4 AND endpoint_id = $5 AND lease_owner = $6",
        )
        .bind::<Timestamptz, _>(finish.next_run_at)
        .bind::<Timestamptz, _>(finish.now)
        .bind::<Text, _>(store_text(outcome).as_ref())
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(endpoint)
        .bind::<Text, _>(&finish.owner)
        .execute(self.0)
        .await?;
        Ok(n > 0)
    }
}

#[derive(QueryableByName)]
struct MarkRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    health: String,
    #[diesel(sql_type = Nullable<Text>)]
    prior_health: Option<String>,
    #[diesel(sql_type = Bool)]
    paused: bool,
}

fn health(column: &str, text: &str) -> Result<Health> {
    Ok(apidrift_store::parse_enum(column, text)?)
}

fn prior(text: Option<&str>) -> Result<Option<Health>> {
    text.map(|t| health("endpoints.prior_health", t))
        .transpose()
}

#[async_trait]
impl MarkTx for Tx<'_> {
    type Error = Error;

    async fn health_of(
        &mut self,
        ws: Option<Uuid>,
        endpoints: &[Uuid],
    ) -> Result<Vec<(Uuid, HealthMark)>> {
        // In id order, so two transactions that lock several endpoints lock them alike.
        let rows: Vec<MarkRow> = cached(
            "SELECT id, health, prior_health, paused FROM endpoints \
             WHERE id = ANY($1) AND ($2::uuid IS NULL OR workspace_id = $2) \
             ORDER BY id FOR UPDATE",
        )
        .bind::<Array<SqlUuid>, _>(endpoints)
        .bind::<Nullable<SqlUuid>, _>(ws)
        .load(self.0)
        .await?;
        rows.into_iter()
            .map(|r| {
                let mark = HealthMark {
                    health: health("endpoints.health", &r.health)?,
                    prior: prior(r.prior_health.as_deref())?,
                    paused: r.paused,
                };
                Ok((r.id, mark))
            })
            .collect()
    }

    async fn write_health(&mut self, writes: &[HealthWrite], now: OffsetDateTime) -> Result<()> {
        // One statement for the batch.
        let ids: Vec<Uuid> = writes.iter().map(|w| w.endpoint_id).collect();
        let health: Vec<&str> = writes.iter().map(|w| w.health.as_str()).collect();
        let prior: Vec<Option<&str>> = writes.iter().map(|w| w.prior.map(Health::as_str)).collect();
        let until: Vec<Option<OffsetDateTime>> = writes
            .iter()
            .map(|w| w.checking_until.map(micros))
            .collect();
        cached(
            "UPDATE endpoints e SET health = v.health, prior_health = v.prior, \
             checking_until = v.until, updated_at = $5 \
             FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[]) \
               AS v(id, health, prior, until) \
             WHERE e.id = v.id",
        )
        .bind::<Array<SqlUuid>, _>(&ids)
        .bind::<Array<Text>, _>(&health)
        .bind::<Array<Nullable<Text>>, _>(&prior)
        .bind::<Array<Nullable<Timestamptz>>, _>(&until)
        .bind::<Timestamptz, _>(micros(now))
        .execute(self.0)
        .await?;
        Ok(())
    }

    async fn stale_marks(&mut self, now: OffsetDateTime) -> Result<Vec<(Uuid, Option<Health>)>> {
        // In id order, so two resets (or a reset and a claim of several) lock alike.
        let rows: Vec<MarkRow> = cached(
            "SELECT id, health, prior_health, paused FROM endpoints \
             WHERE health = 'checking' AND (checking_until IS NULL OR checking_until < $1) \
             ORDER BY id FOR UPDATE",
        )
        .bind::<Timestamptz, _>(micros(now))
        .load(self.0)
        .await?;
        rows.into_iter()
            .map(|r| Ok((r.id, prior(r.prior_health.as_deref())?)))
            .collect()
    }
}
