//! [`CheckTx`] and [`MarkTx`] on SQLite: the primitives of one check's transaction (and of a
//! run's in-flight mark) on the connection of a write
//! (one savepoint of the writer's `BEGIN IMMEDIATE` transaction, so every writer is serialised
//! and an error rolls the check back alone). The orchestration and its rules are
//! `apidrift_store::run`'s; these functions store and fetch. Every step is synchronous, so
//! [`now`] drives the orchestration to its end on the writer's thread.

use crate::cached::cached;
use crate::rows::{from_ts, id, parse_id, ts};
use crate::webhooks::list_webhooks;
use crate::{Error, Result, checks, workspaces};
use apidrift_model::Health;
use apidrift_store::run::{
    CheckTx, HealthMark, HealthWrite, MarkTx, OutboxEvent, QuotaRefused, run_now,
};
use apidrift_store::{
    AlertState, DiffCounts, DiffSeen, NewCheck, NewDiff, OpenDiff, ScheduleFinish, SlowState,
    StoreError, StoredCheck, StoredWebhook, ids_from_text, ids_to_text, new_id, to_u32,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer, Nullable, Text};
use std::future::Future;
use time::OffsetDateTime;
use uuid::Uuid;

/// The connection of an open write, as a [`CheckTx`].
pub(crate) struct Tx<'c>(pub(crate) &'c mut SqliteConnection);

/// Runs an orchestration of `apidrift_store::run` over [`Tx`] to its end, now.
pub(crate) fn now<R>(steps: impl Future<Output = Result<R>>) -> Result<R> {
    run_now(steps)?
}

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
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Nullable<Text>)]
    baseline_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    fingerprint: Option<String>,
}

#[derive(QueryableByName)]
struct SeenRow {
    #[diesel(sql_type = BigInt)]
    first_seen_at: i64,
    #[diesel(sql_type = BigInt)]
    last_seen_at: i64,
    #[diesel(sql_type = BigInt)]
    seen_count: i64,
}

#[derive(QueryableByName)]
struct Held {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[async_trait]
impl CheckTx for Tx<'_> {
    type Error = Error;

    async fn hold_schedule(&mut self, ws: Uuid, endpoint: Uuid, owner: &str) -> Result<bool> {
        // The write already holds the database's write lock: reading the lease is enough.
        let held: Option<Held> = cached(
            "SELECT 1 AS n FROM schedules \
             WHERE workspace_id = ? AND endpoint_id = ? AND lease_owner = ?",
        )
        .bind::<Text, _>(id(ws))
        .bind::<Text, _>(id(endpoint))
        .bind::<Text, _>(owner)
        .get_result(self.0)
        .optional()?;
        Ok(held.is_some_and(|h| h.n == 1))
    }

    async fn open_diff(&mut self, ws: Uuid, endpoint: Uuid) -> Result<Option<OpenDiff>> {
        // The write already holds the database's write lock: no other check decides meanwhile.
        let row: Option<OpenRow> = cached(
            "SELECT id, baseline_id, fingerprint FROM diffs \
             WHERE workspace_id = ? AND endpoint_id = ? AND accepted = 0 AND closed_at IS NULL \
             ORDER BY created_at DESC, id DESC LIMIT 1",
        )
        .bind::<Text, _>(id(ws))
        .bind::<Text, _>(id(endpoint))
        .get_result(self.0)
        .optional()?;
        row.map(|r| -> Result<OpenDiff> {
            Ok(OpenDiff {
                id: parse_id("diffs.id", &r.id)?,
                baseline_id: r
                    .baseline_id
                    .map(|b| parse_id("diffs.baseline_id", &b))
                    .transpose()?,
                fingerprint: r.fingerprint,
            })
        })
        .transpose()
    }

    async fn close_diffs(&mut self, ws: Uuid, endpoint: Uuid, at: OffsetDateTime) -> Result<()> {
        cached(
            "UPDATE diffs SET closed_at = ? \
             WHERE workspace_id = ? AND endpoint_id = ? AND accepted = 0 AND closed_at IS NULL",
        )
        .bind::<BigInt, _>(ts(at))
        .bind::<Text, _>(id(ws))
        .bind::<Text, _>(id(endpoint))
        .execute(self.0)?;
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
            "UPDATE diffs SET last_seen_at = ?, seen_count = seen_count + 1 \
             WHERE workspace_id = ? AND id = ? \
             RETURNING first_seen_at, last_seen_at, CAST(seen_count AS BIGINT) AS seen_count",
        )
        .bind::<BigInt, _>(ts(at))
        .bind::<Text, _>(id(ws))
        .bind::<Text, _>(id(diff))
        .get_result(self.0)
        .optional()?;
        let seen = seen.ok_or(Error::Store(StoreError::NotFound))?;
        cached("UPDATE checks SET diff_id = ? WHERE workspace_id = ? AND id = ?")
            .bind::<Text, _>(id(diff))
            .bind::<Text, _>(id(ws))
            .bind::<Text, _>(id(check))
            .execute(self.0)?;
        Ok(DiffSeen {
            id: diff,
            first_seen_at: from_ts("diffs.first_seen_at", seen.first_seen_at)?,
            last_seen_at: from_ts("diffs.last_seen_at", seen.last_seen_at)?,
            seen_count: to_u32("diffs.seen_count", seen.seen_count)?,
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
        checks::insert_check(self.0, ws, check, diff, counts, health)
    }

    async fn alert_state(&mut self, ws: Uuid, endpoint: Uuid) -> Result<AlertState> {
        let state: Option<StateRow> = cached(
            "SELECT fingerprint, webhook_ids, slow_streak, slow_webhook_ids FROM alert_state WHERE workspace_id = ? AND endpoint_id = ?",
        )
        .bind::<Text, _>(id(ws))
        .bind::<Text, _>(id(endpoint))
        .get_result(self.0)
        .optional()?;
        Ok(match state {
            Some(s) => AlertState {
                fingerprint: s.fingerprint,
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
        list_webhooks(self.0, ws)
    }

    async fn queue_event(
        &mut self,
        ws: Uuid,
        event: OutboxEvent<'_>,
        webhook_ids: &[Uuid],
    ) -> Result<u32> {
        cached(
            "INSERT INTO outbox_events (id, workspace_id, endpoint_id, kind, payload, created_at) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind::<Text, _>(id(event.id))
        .bind::<Text, _>(id(ws))
        .bind::<Text, _>(id(event.endpoint_id))
        .bind::<Text, _>(event.kind)
        .bind::<Text, _>(event.payload)
        .bind::<BigInt, _>(ts(event.created_at))
        .execute(self.0)?;
        let mut queued = 0u32;
        for hook in webhook_ids {
            cached(
                "INSERT INTO deliveries (id, workspace_id, event_id, webhook_id, state, attempts, \
                 next_attempt_at, created_at) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)",
            )
            .bind::<Text, _>(id(new_id()))
            .bind::<Text, _>(id(ws))
            .bind::<Text, _>(id(event.id))
            .bind::<Text, _>(id(*hook))
            .bind::<BigInt, _>(ts(event.created_at))
            .bind::<BigInt, _>(ts(event.created_at))
            .execute(self.0)?;
            queued += 1;
        }
        Ok(queued)
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
             VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (endpoint_id) DO UPDATE SET \
             fingerprint = excluded.fingerprint, webhook_ids = excluded.webhook_ids, \
             slow_streak = excluded.slow_streak, slow_webhook_ids = excluded.slow_webhook_ids, \
             updated_at = excluded.updated_at",
        )
        .bind::<Text, _>(id(endpoint))
        .bind::<Text, _>(id(ws))
        .bind::<Nullable<Text>, _>(state.fingerprint.as_deref())
        .bind::<Text, _>(ids_to_text(&state.webhook_ids))
        .bind::<Integer, _>(i32::try_from(state.slow.streak).unwrap_or(i32::MAX))
        .bind::<Nullable<Text>, _>(state.slow.alerted.as_deref().map(ids_to_text))
        .bind::<BigInt, _>(ts(at))
        .execute(self.0)?;
        Ok(())
    }

    async fn check_quota(&mut self, ws: Uuid) -> Result<Option<u32>> {
        Ok(workspaces::require_workspace(self.0, ws)?.check_quota)
    }

    async fn take_unit(
        &mut self,
        ws: Uuid,
        month: &str,
        limit: Option<u32>,
    ) -> Result<Option<u64>> {
        workspaces::take_unit(self.0, ws, month, limit)
    }

    async fn units_used(&mut self, ws: Uuid, month: &str) -> Result<u64> {
        workspaces::units_used(self.0, ws, month)
    }

    async fn finish_recorded(
        &mut self,
        ws: Uuid,
        endpoint: Uuid,
        finish: &ScheduleFinish,
        outcome: &str,
    ) -> Result<bool> {
        let n = cached(
            "UPDATE schedules SET next_run_at = ?, last_run_at = ?, last_outcome = ?, \
             runs = runs + 1, lease_until = NULL, lease_owner = NULL \
             WHERE workspace_id = ? AND endpoint_id = ? AND lease_owner = ?",
        )
        .bind::<BigInt, _>(ts(finish.next_run_at))
        .bind::<BigInt, _>(ts(finish.now))
        .bind::<Text, _>(outcome)
        .bind::<Text, _>(id(ws))
        .bind::<Text, _>(id(endpoint))
        .bind::<Text, _>(&finish.owner)
        .execute(self.0)?;
        Ok(n > 0)
    }
}

#[derive(QueryableByName)]
struct MarkRow {
    #[diesel(sql_type = Text)]
    id: String,
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
        // The write already holds the database's write lock: nothing changes the rows meanwhile.
        let mut out = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let row: Option<MarkRow> = cached(
                "SELECT id, health, prior_health, paused FROM endpoints \
                 WHERE id = ? AND (? IS NULL OR workspace_id = ?)",
            )
            .bind::<Text, _>(id(*endpoint))
            .bind::<Nullable<Text>, _>(ws.map(id))
            .bind::<Nullable<Text>, _>(ws.map(id))
            .get_result(self.0)
            .optional()?;
            if let Some(r) = row {
                let mark = HealthMark {
                    health: health("endpoints.health", &r.health)?,
                    prior: prior(r.prior_health.as_deref())?,
                    paused: r.paused,
                };
                out.push((*endpoint, mark));
            }
        }
        Ok(out)
    }

    async fn write_health(&mut self, writes: &[HealthWrite], now: OffsetDateTime) -> Result<()> {
        for w in writes {
            cached(
                "UPDATE endpoints SET health = ?, prior_health = ?, checking_until = ?, \
                 updated_at = ? WHERE id = ?",
            )
            .bind::<Text, _>(w.health.as_str())
            .bind::<Nullable<Text>, _>(w.prior.map(Health::as_str))
            .bind::<Nullable<BigInt>, _>(w.checking_until.map(ts))
            .bind::<BigInt, _>(ts(now))
            .bind::<Text, _>(id(w.endpoint_id))
            .execute(self.0)?;
        }
        Ok(())
    }

    async fn stale_marks(&mut self, now: OffsetDateTime) -> Result<Vec<(Uuid, Option<Health>)>> {
        let rows: Vec<MarkRow> = cached(
            "SELECT id, health, prior_health, paused FROM endpoints \
             WHERE health = 'checking' AND (checking_until IS NULL OR checking_until < ?)",
        )
        .bind::<BigInt, _>(ts(now))
        .load(self.0)?;
        rows.into_iter()
            .map(|r| {
                Ok((
                    parse_id("endpoints.id", &r.id)?,
                    prior(r.prior_health.as_deref())?,
                ))
            })
            .collect()
    }
}
