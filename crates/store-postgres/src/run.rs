//! [`CheckTx`] and [`MarkTx`] on PostgreSQL: the primitives of one check's transaction (and of
//! a run's in-flight mark) on the connection of a transaction that [`tx!`] opened (and runs
//! again whole on a deadlock or serialization failure). The orchestration and its rules are
//! `apidrift_store::run`'s, in the lock order this adapter needs: the schedule row, then the
//! endpoint row (both taken by [`CheckTx::prefetch`] for a recorded check, else by
//! `hold_schedule` and `open_diff`, so alert decisions of one endpoint are serialised), the
//! workspace's usage row last so its lock is held only until the commit. After the prefetch the
//! reads answer from what it read and the writes are queued, then sent pipelined with the unit
//! (docs/storage.md, "Recording a check on PostgreSQL"). These functions store and fetch.

use crate::cached::{Binds, Cached, cached};
use crate::checks::CheckWrites;
use crate::endpoints::lock_endpoint;
use crate::escape::{read_opt, store_opt, store_text};
use crate::rows::micros;
use crate::tx::{Step, join2, pipeline};
use crate::webhooks::list_webhooks;
use crate::{Error, Result, checks, not_found, usage, workspaces};
use apidrift_model::Health;
use apidrift_store::run::{CheckTx, HealthMark, HealthWrite, MarkTx, OutboxEvent, QuotaRefused};
use apidrift_store::{
    AlertState, DiffCounts, DiffSeen, NewCheck, NewDiff, OpenDiff, ScheduleFinish, SlowState,
    StoreError, StoredCheck, StoredWebhook, ids_from_text, ids_to_text, new_id, to_u32,
};
use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{
    Array, Bool, Int4, Int8, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

/// The connection of an open transaction, as a [`CheckTx`] (and a [`MarkTx`]).
///
/// Without [`CheckTx::prefetch`] every primitive is its own statement, sent and answered in
/// turn. After it (a recorded check, `apidrift_store::run::record_check_run`), the reads answer
/// from what it read, and the writes are queued and sent pipelined with the quota's unit
/// ([`CheckTx::take_unit`]), in the order they were queued: a check is then four round trips
/// (`BEGIN`; the locks and reads; the writes with the unit; `COMMIT`) whatever its steps.
pub(crate) struct Tx<'c> {
    conn: &'c mut AsyncPgConnection,
    ahead: Option<Ahead>,
    queue: Vec<Write>,
}

impl<'c> Tx<'c> {
    pub(crate) fn new(conn: &'c mut AsyncPgConnection) -> Self {
        Tx {
            conn,
            ahead: None,
            queue: Vec::new(),
        }
    }

    /// Sends the queued writes (pipelined). A transaction that queued writes calls it before it
    /// commits; the unit's take sends them itself.
    pub(crate) async fn flush(&mut self) -> Result<()> {
        if self.queue.is_empty() {
            return Ok(());
        }
        let queue = std::mem::take(&mut self.queue);
        let conn: &AsyncPgConnection = self.conn;
        pipeline(queue.iter().flat_map(|w| w.steps(conn)).collect()).await?;
        Ok(())
    }

    /// What [`CheckTx::prefetch`] read, when it read it for `ws` and `endpoint`.
    fn ahead(&mut self, ws: Uuid, endpoint: Uuid) -> Option<&mut Ahead> {
        self.ahead
            .as_mut()
            .filter(|a| a.ws == ws && a.endpoint == endpoint)
    }

    /// What [`CheckTx::prefetch`] read, when it read it for `ws`.
    fn ahead_in(&mut self, ws: Uuid) -> Option<&mut Ahead> {
        self.ahead.as_mut().filter(|a| a.ws == ws)
    }
}

/// What [`CheckTx::prefetch`] locked and read, kept up to date by the writes queued after it.
struct Ahead {
    ws: Uuid,
    endpoint: Uuid,
    /// The lease owner asked about, and whether it holds the (now locked) schedule row.
    owner: Option<String>,
    held: bool,
    /// Whether the endpoint is the workspace's (its row is locked).
    found: bool,
    /// The open diff, with its seen figures.
    open: Option<(OpenDiff, OffsetDateTime, i32)>,
    state: AlertState,
    webhooks: Vec<StoredWebhook>,
    /// `None`: the workspace is missing; else its quota.
    quota: Option<Option<u32>>,
    /// The baseline asked about and whether it is the endpoint's.
    baseline: Option<(Uuid, bool)>,
}

/// A write queued after [`CheckTx::prefetch`], sent by [`Tx::flush`] or with the unit.
enum Write {
    Close {
        ws: Uuid,
        endpoint: Uuid,
        at: OffsetDateTime,
    },
    Check(Box<CheckWrites>),
    Touch {
        ws: Uuid,
        diff: Uuid,
        at: OffsetDateTime,
    },
    LinkCheck {
        ws: Uuid,
        check: Uuid,
        diff: Uuid,
    },
    Event {
        ws: Uuid,
        id: Uuid,
        endpoint: Uuid,
        kind: &'static str,
        payload: String,
        created_at: OffsetDateTime,
        delivery_ids: Vec<Uuid>,
        webhook_ids: Vec<Uuid>,
    },
    State {
        ws: Uuid,
        endpoint: Uuid,
        fingerprint: Option<String>,
        webhook_ids: String,
        slow_streak: i32,
        slow_webhook_ids: Option<String>,
        at: OffsetDateTime,
    },
    Finish {
        ws: Uuid,
        endpoint: Uuid,
        next_run_at: OffsetDateTime,
        now: OffsetDateTime,
        outcome: String,
        owner: String,
    },
}

impl Write {
    /// The write's statements, ready for a [`pipeline`].
    fn steps<'a>(&self, mut c: &'a AsyncPgConnection) -> Vec<Step<'a, usize>> {
        match self {
            Write::Close { ws, endpoint, at } => {
                vec![close_diffs(*ws, *endpoint, *at).execute(&mut c)]
            }
            Write::Check(writes) => writes.steps(c),
            Write::Touch { ws, diff, at } => vec![touch_diff(*ws, *diff, *at).execute(&mut c)],
            Write::LinkCheck { ws, check, diff } => {
                vec![link_check(*ws, *check, *diff).execute(&mut c)]
            }
            Write::Event {
                ws,
                id,
                endpoint,
                kind,
                payload,
                created_at,
                delivery_ids,
                webhook_ids,
            } => vec![
                cached(
                    "WITH e AS (INSERT INTO outbox_events (id, workspace_id, endpoint_id, kind, \
                     payload, created_at) VALUES ($1, $2, $3, $4, $5, $6)) \
                     INSERT INTO deliveries (id, workspace_id, event_id, webhook_id, state, \
                     attempts, next_attempt_at, created_at) \
                     SELECT d, $2, $1, w, 'pending', 0, $6, $6 \
                     FROM unnest($7::uuid[], $8::uuid[]) AS t(d, w)",
                )
                .bind::<SqlUuid, _>(*id)
                .bind::<SqlUuid, _>(*ws)
                .bind::<SqlUuid, _>(*endpoint)
                .bind::<Text, _>(*kind)
                .bind::<Text, _>(payload.as_str())
                .bind::<Timestamptz, _>(*created_at)
                .bind::<Array<SqlUuid>, _>(delivery_ids)
                .bind::<Array<SqlUuid>, _>(webhook_ids)
                .execute(&mut c),
            ],
            Write::State {
                ws,
                endpoint,
                fingerprint,
                webhook_ids,
                slow_streak,
                slow_webhook_ids,
                at,
            } => vec![
                put_state(
                    *ws,
                    *endpoint,
                    fingerprint.as_deref(),
                    webhook_ids,
                    *slow_streak,
                    slow_webhook_ids.as_deref(),
                    *at,
                )
                .execute(&mut c),
            ],
            Write::Finish {
                ws,
                endpoint,
                next_run_at,
                now,
                outcome,
                owner,
            } => {
                vec![finish_run(*ws, *endpoint, *next_run_at, *now, outcome, owner).execute(&mut c)]
            }
        }
    }
}

fn close_diffs(ws: Uuid, endpoint: Uuid, at: OffsetDateTime) -> Cached<impl Binds + Send> {
    cached(
        "UPDATE diffs SET closed_at = $1 \
         WHERE workspace_id = $2 AND endpoint_id = $3 AND NOT accepted AND closed_at IS NULL",
    )
    .bind::<Timestamptz, _>(micros(at))
    .bind::<SqlUuid, _>(ws)
    .bind::<SqlUuid, _>(endpoint)
}

fn touch_diff(ws: Uuid, diff: Uuid, at: OffsetDateTime) -> Cached<impl Binds + Send> {
    cached(
        "UPDATE diffs SET last_seen_at = $1, seen_count = seen_count + 1 \
         WHERE workspace_id = $2 AND id = $3 \
         RETURNING first_seen_at, last_seen_at, seen_count",
    )
    .bind::<Timestamptz, _>(micros(at))
    .bind::<SqlUuid, _>(ws)
    .bind::<SqlUuid, _>(diff)
}

fn link_check(ws: Uuid, check: Uuid, diff: Uuid) -> Cached<impl Binds + Send> {
    cached("UPDATE checks SET diff_id = $1 WHERE workspace_id = $2 AND id = $3")
        .bind::<SqlUuid, _>(diff)
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(check)
}

fn put_state<'a>(
    ws: Uuid,
    endpoint: Uuid,
    fingerprint: Option<&'a str>,
    webhook_ids: &'a str,
    slow_streak: i32,
    slow_webhook_ids: Option<&'a str>,
    at: OffsetDateTime,
) -> Cached<impl Binds + Send + 'a> {
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
    .bind::<Nullable<Text>, _>(fingerprint)
    .bind::<Text, _>(webhook_ids)
    .bind::<Integer, _>(slow_streak)
    .bind::<Nullable<Text>, _>(slow_webhook_ids)
    .bind::<Timestamptz, _>(at)
}

fn finish_run<'a>(
    ws: Uuid,
    endpoint: Uuid,
    next_run_at: OffsetDateTime,
    now: OffsetDateTime,
    outcome: &'a str,
    owner: &'a str,
) -> Cached<impl Binds + Send + 'a> {
    cached(
        "UPDATE schedules SET next_run_at = $1, last_run_at = $2, last_outcome = $3, \
         runs = runs + 1, lease_until = NULL, lease_owner = NULL \
         WHERE workspace_id = $4 AND endpoint_id = $5 AND lease_owner = $6",
    )
    .bind::<Timestamptz, _>(next_run_at)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(outcome)
    .bind::<SqlUuid, _>(ws)
    .bind::<SqlUuid, _>(endpoint)
    .bind::<Text, _>(owner)
}

fn alert_state_of(s: StateRow) -> Result<AlertState> {
    Ok(AlertState {
        fingerprint: read_opt(s.fingerprint),
        webhook_ids: ids_from_text(&s.webhook_ids)?,
        slow: SlowState {
            streak: u32::try_from(s.slow_streak).unwrap_or(0),
            alerted: s
                .slow_webhook_ids
                .map(|ids| ids_from_text(&ids))
                .transpose()?,
        },
    })
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

/// The answer of the prefetch's locks.
#[derive(QueryableByName)]
struct Locked {
    #[diesel(sql_type = Bool)]
    held: bool,
    #[diesel(sql_type = Bool)]
    found: bool,
}

/// The answer of the prefetch's read (one row).
#[derive(QueryableByName)]
struct AheadRow {
    #[diesel(sql_type = Bool)]
    workspace_found: bool,
    #[diesel(sql_type = Nullable<Int4>)]
    check_quota: Option<i32>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    diff_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    diff_baseline_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    diff_fingerprint: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    first_seen_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Int4>)]
    seen_count: Option<i32>,
    #[diesel(sql_type = Bool)]
    has_state: bool,
    #[diesel(sql_type = Nullable<Text>)]
    fingerprint: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    webhook_ids: Option<String>,
    #[diesel(sql_type = Nullable<Int4>)]
    slow_streak: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    slow_webhook_ids: Option<String>,
    #[diesel(sql_type = Bool)]
    baseline_found: bool,
}

#[async_trait]
impl CheckTx for Tx<'_> {
    type Error = Error;

    async fn prefetch(
        &mut self,
        ws: Uuid,
        endpoint: Uuid,
        owner: Option<&str>,
        baseline_id: Option<Uuid>,
    ) -> Result<()> {
        let mut c: &AsyncPgConnection = self.conn;
        // Three statements in one round trip, run in this order. The first takes the locks in
        // the order of a claim (the schedule row while `owner` holds its lease, then the
        // endpoint row): a second check of the endpoint waits there until this one commits.
        // The reads come in statements of their own, after it: under READ COMMITTED each
        // statement reads a snapshot taken when it starts, so they see what a check that held
        // the lock before committed (one statement's snapshot would be older than its locks).
        let locks = cached(
            "WITH s AS MATERIALIZED (SELECT 1 AS n FROM schedules \
               WHERE workspace_id = $1 AND endpoint_id = $2 AND lease_owner = $3 FOR UPDATE), \
             e AS MATERIALIZED (SELECT 1 AS n FROM endpoints \
               WHERE workspace_id = $1 AND id = $2 AND (SELECT count(*) FROM s) >= 0 FOR UPDATE) \
             SELECT EXISTS (SELECT 1 FROM s) AS held, EXISTS (SELECT 1 FROM e) AS found",
        )
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(endpoint)
        .bind::<Nullable<Text>, _>(owner)
        .get_result::<Locked>(&mut c);
        let read = cached(
            "SELECT w.id IS NOT NULL AS workspace_found, w.check_quota, \
               d.id AS diff_id, d.baseline_id AS diff_baseline_id, \
               d.fingerprint AS diff_fingerprint, d.first_seen_at, d.seen_count, \
               a.endpoint_id IS NOT NULL AS has_state, a.fingerprint, a.webhook_ids, \
               a.slow_streak, a.slow_webhook_ids, \
               EXISTS (SELECT 1 FROM baselines b \
                 WHERE b.workspace_id = $1 AND b.endpoint_id = $2 AND b.id = $3) AS baseline_found \
             FROM (SELECT 1) AS one \
             LEFT JOIN workspaces w ON w.id = $1 \
             LEFT JOIN LATERAL (SELECT id, baseline_id, fingerprint, first_seen_at, seen_count \
               FROM diffs WHERE workspace_id = $1 AND endpoint_id = $2 AND NOT accepted \
               AND closed_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 1) d ON true \
             LEFT JOIN alert_state a ON a.workspace_id = $1 AND a.endpoint_id = $2",
        )
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(endpoint)
        .bind::<Nullable<SqlUuid>, _>(baseline_id)
        .get_result::<AheadRow>(&mut c);
        let conn: &AsyncPgConnection = self.conn;
        let (locked, (row, webhooks)) = join2(locks, join2(read, list_webhooks(conn, ws))).await;
        let (locked, row, webhooks) = (locked?, row?, webhooks?);
        let open = match (row.diff_id, row.first_seen_at, row.seen_count) {
            (Some(id), Some(first), Some(seen)) => Some((
                OpenDiff {
                    id,
                    baseline_id: row.diff_baseline_id,
                    fingerprint: read_opt(row.diff_fingerprint),
                },
                first,
                seen,
            )),
            _ => None,
        };
        let state = match (row.has_state, row.webhook_ids, row.slow_streak) {
            (true, Some(webhook_ids), Some(slow_streak)) => alert_state_of(StateRow {
                fingerprint: row.fingerprint,
                webhook_ids,
                slow_streak,
                slow_webhook_ids: row.slow_webhook_ids,
            })?,
            _ => AlertState::default(),
        };
        let quota = if row.workspace_found {
            Some(
                row.check_quota
                    .map(|q| u32::try_from(q).map_err(|e| StoreError::corrupt("check_quota", e)))
                    .transpose()?,
            )
        } else {
            None
        };
        self.ahead = Some(Ahead {
            ws,
            endpoint,
            owner: owner.map(str::to_owned),
            held: locked.held,
            found: locked.found,
            open,
            state,
            webhooks,
            quota,
            baseline: baseline_id.map(|b| (b, row.baseline_found)),
        });
        Ok(())
    }

    async fn hold_schedule(&mut self, ws: Uuid, endpoint: Uuid, owner: &str) -> Result<bool> {
        if let Some(a) = self.ahead(ws, endpoint)
            && a.owner.as_deref() == Some(owner)
        {
            return Ok(a.held);
        }
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
        .get_result(self.conn)
        .await
        .optional()?;
        Ok(held.is_some_and(|h| h.n == 1))
    }

    async fn open_diff(&mut self, ws: Uuid, endpoint: Uuid) -> Result<Option<OpenDiff>> {
        if let Some(a) = self.ahead(ws, endpoint) {
            if !a.found {
                return Err(not_found());
            }
            return Ok(a.open.as_ref().map(|(open, _, _)| open.clone()));
        }
        // The endpoint row first, the lock `insert_check` takes: a second check of the endpoint
        // waits here until this one committed its decision.
        lock_endpoint(self.conn, ws, endpoint).await?;
        let row: Option<OpenRow> = cached(
            "SELECT id, baseline_id, fingerprint FROM diffs \
             WHERE workspace_id = $1 AND endpoint_id = $2 AND NOT accepted AND closed_at IS NULL \
             ORDER BY created_at DESC, id DESC LIMIT 1",
        )
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(endpoint)
        .get_result(self.conn)
        .await
        .optional()?;
        Ok(row.map(|r| OpenDiff {
            id: r.id,
            baseline_id: r.baseline_id,
            fingerprint: read_opt(r.fingerprint),
        }))
    }

    async fn close_diffs(&mut self, ws: Uuid, endpoint: Uuid, at: OffsetDateTime) -> Result<()> {
        if let Some(a) = self.ahead(ws, endpoint) {
            a.open = None;
            self.queue.push(Write::Close { ws, endpoint, at });
            return Ok(());
        }
        close_diffs(ws, endpoint, at).execute(self.conn).await?;
        Ok(())
    }

    async fn touch_diff(
        &mut self,
        ws: Uuid,
        diff: Uuid,
        check: Uuid,
        at: OffsetDateTime,
    ) -> Result<DiffSeen> {
        let known = self.ahead_in(ws).and_then(|a| {
            let (_, first, seen) = a.open.as_mut().filter(|(o, _, _)| o.id == diff)?;
            *seen += 1;
            Some((*first, *seen))
        });
        if let Some((first_seen_at, seen_count)) = known {
            self.queue.push(Write::Touch { ws, diff, at });
            // The check's own insert, still queued, takes the link (one statement less).
            let queued = self.queue.iter_mut().find_map(|w| match w {
                Write::Check(c) if c.check_id() == check => Some(c),
                _ => None,
            });
            match queued {
                Some(c) => c.link_diff(diff),
                None => self.queue.push(Write::LinkCheck { ws, check, diff }),
            }
            return Ok(DiffSeen {
                id: diff,
                first_seen_at,
                last_seen_at: micros(at),
                seen_count: to_u32("diffs.seen_count", seen_count.into())?,
            });
        }
        let seen: Option<SeenRow> = touch_diff(ws, diff, at)
            .get_result(self.conn)
            .await
            .optional()?;
        let seen = seen.ok_or_else(not_found)?;
        link_check(ws, check, diff).execute(self.conn).await?;
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
        let Some(a) = self.ahead(ws, check.endpoint_id) else {
            return checks::insert_check(self.conn, ws, check, diff, counts, health).await;
        };
        if !a.found {
            return Err(not_found());
        }
        let baseline = diff.and_then(|d| d.baseline_id);
        let known = match (baseline, a.baseline) {
            (None, _) => Some(true),
            (Some(b), Some((asked, found))) if b == asked => Some(found),
            _ => None,
        };
        let baseline_ok = match (known, baseline) {
            (Some(ok), _) => ok,
            (None, Some(b)) => checks::baseline_of(self.conn, ws, check.endpoint_id, b).await?,
            (None, None) => true,
        };
        if !baseline_ok {
            return Err(not_found());
        }
        let writes = CheckWrites::new(ws, check, diff, counts, health)?;
        let stored = writes.stored()?;
        self.queue.push(Write::Check(Box::new(writes)));
        Ok(stored)
    }

    async fn alert_state(&mut self, ws: Uuid, endpoint: Uuid) -> Result<AlertState> {
        if let Some(a) = self.ahead(ws, endpoint) {
            return Ok(a.state.clone());
        }
        let state: Option<StateRow> = cached(
            "SELECT fingerprint, webhook_ids, slow_streak, slow_webhook_ids FROM alert_state \
             WHERE workspace_id = $1 AND endpoint_id = $2",
        )
        .bind::<SqlUuid, _>(ws)
        .bind::<SqlUuid, _>(endpoint)
        .get_result(self.conn)
        .await
        .optional()?;
        state
            .map(alert_state_of)
            .transpose()
            .map(Option::unwrap_or_default)
    }

    async fn webhooks(&mut self, ws: Uuid) -> Result<Vec<StoredWebhook>> {
        if let Some(a) = self.ahead_in(ws) {
            return Ok(a.webhooks.clone());
        }
        list_webhooks(self.conn, ws).await
    }

    async fn queue_event(
        &mut self,
        ws: Uuid,
        event: OutboxEvent<'_>,
        webhook_ids: &[Uuid],
    ) -> Result<u32> {
        let write = Write::Event {
            ws,
            id: event.id,
            endpoint: event.endpoint_id,
            kind: event.kind,
            payload: store_text(event.payload).into_owned(),
            created_at: event.created_at,
            delivery_ids: webhook_ids.iter().map(|_| new_id()).collect(),
            webhook_ids: webhook_ids.to_vec(),
        };
        if self.ahead_in(ws).is_some() {
            self.queue.push(write);
            return Ok(u32::try_from(webhook_ids.len()).unwrap_or(u32::MAX));
        }
        // The event and its deliveries in one statement.
        let n = pipeline(write.steps(self.conn))
            .await?
            .into_iter()
            .sum::<usize>();
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    async fn put_alert_state(
        &mut self,
        ws: Uuid,
        endpoint: Uuid,
        state: &AlertState,
        at: OffsetDateTime,
    ) -> Result<()> {
        let write = Write::State {
            ws,
            endpoint,
            fingerprint: store_opt(state.fingerprint.as_deref()),
            webhook_ids: ids_to_text(&state.webhook_ids),
            slow_streak: i32::try_from(state.slow.streak).unwrap_or(i32::MAX),
            slow_webhook_ids: state.slow.alerted.as_deref().map(ids_to_text),
            at,
        };
        if let Some(a) = self.ahead(ws, endpoint) {
            a.state = state.clone();
            self.queue.push(write);
            return Ok(());
        }
        pipeline(write.steps(self.conn)).await?;
        Ok(())
    }

    async fn check_quota(&mut self, ws: Uuid) -> Result<Option<u32>> {
        if let Some(a) = self.ahead_in(ws) {
            return a.quota.ok_or_else(not_found);
        }
        Ok(workspaces::get_workspace(self.conn, ws)
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
        if self.queue.is_empty() {
            return usage::take_unit(self.conn, ws, month, limit).await;
        }
        // The queued writes and the unit, last, in one round trip. A refusal is an error of the
        // caller's, which rolls the writes back with the transaction.
        let queue = std::mem::take(&mut self.queue);
        let mut c: &AsyncPgConnection = self.conn;
        let writes = pipeline(queue.iter().flat_map(|w| w.steps(c)).collect());
        let unit = usage::take_free_query(ws, month, limit).get_result::<usage::Used>(&mut c);
        let (written, unit) = join2(writes, unit).await;
        written?;
        match unit.optional()? {
            Some(used) => Ok(Some(used.count())),
            None => usage::take_waiting(self.conn, ws, month, limit).await,
        }
    }

    async fn units_used(&mut self, ws: Uuid, month: &str) -> Result<u64> {
        usage::units_used(self.conn, ws, month).await
    }

    async fn finish_recorded(
        &mut self,
        ws: Uuid,
        endpoint: Uuid,
        finish: &ScheduleFinish,
        outcome: &str,
    ) -> Result<bool> {
        let write = Write::Finish {
            ws,
            endpoint,
            next_run_at: finish.next_run_at,
            now: finish.now,
            outcome: store_text(outcome).into_owned(),
            owner: finish.owner.clone(),
        };
        let held = self
            .ahead(ws, endpoint)
            .filter(|a| a.owner.as_deref() == Some(finish.owner.as_str()))
            .map(|a| a.held);
        if let Some(held) = held {
            // The prefetch locked the row while `owner` held it: the update writes it.
            if held {
                self.queue.push(write);
            }
            return Ok(held);
        }
        let n: usize = pipeline(write.steps(self.conn)).await?.into_iter().sum();
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
        .load(self.conn)
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
        .execute(self.conn)
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
        .load(self.conn)
        .await?;
        rows.into_iter()
            .map(|r| Ok((r.id, prior(r.prior_health.as_deref())?)))
            .collect()
    }
}
