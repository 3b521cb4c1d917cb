//! The check pipeline as a library service (D7, D8, D10): baseline capture, checks, contracts.

use crate::client::{Client, FetchRequest, FetchResponse};
use crate::error::{FetchError, MonitorError};
use crate::metrics::{CheckResult, Trigger};
use apidrift_diff::contract::Contract;
use apidrift_diff::{
    Body, DEFAULT_TRACKED_HEADERS, DiffMode, IdentityRule, IgnorePattern, Input, Json, Options,
    OverrideRule, Shape, TextBody, VolatileError, diff, is_json_media_type, volatile_paths,
};
use apidrift_model::validate::{Credential, ExtraHeader};
use apidrift_model::{CheckResponse, DiffChange, DiffDetail, Health, SeverityOverride, sealed};
use apidrift_seal::{Binding, Field, KeyRing};
use apidrift_store::{
    CheckContext, CheckRecording, DiffCounts, NewBaseline, NewCheck, NewDiff, ResponseContract,
    ScheduleFinish, Store, StoredBaseline, StoredEndpoint, new_id,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

/// The pause before a fetch is tried again (D19).
pub const RETRY_DELAY: Duration = Duration::from_secs(2);

/// The pause between the samples of a multi-sample baseline capture (D20: about 1 s), unless
/// [`Monitor::with_sample_interval`] sets another.
pub const DEFAULT_SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// Most samples of one baseline capture (D20).
pub const MAX_SAMPLES: u8 = 5;

/// Slack added to a run's deadline beyond its fetches (sealing, diffing, writing).
const RUN_SLACK: Duration = Duration::from_secs(5);

/// The latest a run of `endpoint` started at `now` can end: every fetch timing out, the pauses
/// between retries, and some slack. Past it, a `checking` health is left over from a run that
/// died (the process was killed) and is reset to the health before the run.
pub fn run_deadline(endpoint: &StoredEndpoint, now: OffsetDateTime) -> OffsetDateTime {
    let tries = u32::from(endpoint.settings.retries) + 1;
    let fetches = Duration::from_millis(u64::from(endpoint.settings.timeout_ms.max(1))) * tries;
    let pauses = RETRY_DELAY * u32::from(endpoint.settings.retries);
    let total = fetches + pauses + RUN_SLACK;
    now + time::Duration::try_from(total).unwrap_or(time::Duration::HOUR)
}

/// What a check did: the figures of the spec's 200 body and what was recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    pub check_id: Uuid,
    /// The check's diff: the one it wrote, or the endpoint's open diff of the same drift it was
    /// linked to (D26); `None` when nothing changed.
    pub diff_id: Option<Uuid>,
    /// How many checks saw that diff's drift, this one included; `None` without a diff.
    pub seen_count: Option<u32>,
    pub counts: DiffCounts,
    /// The endpoint's health after the check (D7).
    pub health: Health,
    pub http_status: Option<u16>,
    /// Milliseconds; `None` when the fetch produced no response.
    pub response_time: Option<u32>,
    /// The failure of a fetch that produced no response (`dns_failed`, …).
    pub error_kind: Option<String>,
    /// Deliveries queued by this check (alerts, D11).
    pub alerts_sent: u32,
    pub changes: Vec<DiffChange>,
    /// A scheduled run's finish was written with the check, in its transaction (false for a
    /// manual check, or when the run's lease had passed to another worker).
    pub schedule_finished: bool,
}

/// The claimed slot of a scheduled check ([`Monitor::run_scheduled_check`]): who holds its lease,
/// when it was due and its period, from which the next slot is computed when the check records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledSlot {
    pub owner: String,
    pub due: OffsetDateTime,
    pub period: std::time::Duration,
}

impl ScheduledSlot {
    /// The finish of the run recorded at `now` (D17: one period after the due slot, or the first
    /// slot after `now` when that has passed).
    fn finish_at(&self, now: OffsetDateTime) -> ScheduleFinish {
        ScheduleFinish {
            owner: self.owner.clone(),
            next_run_at: crate::cadence::next_run(self.due, now, self.period),
            now,
        }
    }
}

/// A scheduled run's one read ([`Monitor::read_scheduled`]): the check context, read at `at`
/// under the endpoint's lock, which it holds until dropped.
pub(crate) struct LockedRead {
    pub(crate) context: CheckContext,
    at: OffsetDateTime,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl CheckOutcome {
    /// The spec's 200 body of `POST /endpoints/{id}/check`.
    pub fn to_response(&self) -> CheckResponse {
        CheckResponse {
            success: true,
            diff_id: self.diff_id,
            seen_count: self.seen_count,
            breaking_count: self.counts.breaking,
            warning_count: self.counts.warning,
            change_count: self.counts.changes,
            alerts_sent: self.alerts_sent,
        }
    }
}

/// One async lock per endpoint, shared by every clone of a [`Monitor`].
type Locks = Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>;

/// Runs baselines and checks against one store, with one key ring and one outbound client.
/// Cheap to clone: clones share the per-endpoint locks that serialise concurrent checks of one
/// endpoint, so a process builds one monitor (the service layer does, in `serve`) and hands out
/// clones.
#[derive(Clone)]
pub struct Monitor {
    store: Arc<dyn Store>,
    keys: Arc<KeyRing>,
    client: Client,
    locks: Arc<Locks>,
    sample_interval: Duration,
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

/// A response reduced to what the diff needs, its body kept as bytes.
struct Captured {
    status: u16,
    headers: Vec<(String, String)>,
    content_type: Option<String>,
    body: Vec<u8>,
}

impl Captured {
    fn from_response(r: FetchResponse) -> Captured {
        Captured {
            status: r.status,
            content_type: r.content_type().map(str::to_owned),
            headers: r.headers,
            body: r.body,
        }
    }

    /// The tracked headers (D9) as a JSON object, first value of each.
    fn tracked_headers(&self) -> Value {
        let mut map = Map::new();
        for name in DEFAULT_TRACKED_HEADERS {
            if let Some((_, v)) = self.headers.iter().find(|(n, _)| n == name) {
                map.insert((*name).to_owned(), Value::String(v.clone()));
            }
        }
        Value::Object(map)
    }
}

/// A body as the diff engine reads it: JSON when the content type says so and it parses, else
/// text by digest.
fn body_of<'a>(content_type: Option<&str>, bytes: &'a [u8]) -> Body<Json<'a>> {
    if content_type.is_some_and(is_json_media_type)
        && let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(json) = apidrift_diff::parse(text)
    {
        return Body::Json(json);
    }
    Body::Text(TextBody::of(bytes))
}

fn headers_from_json(value: &Value) -> Vec<(String, String)> {
    match value {
        Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.to_ascii_lowercase(), s.to_owned())))
            .collect(),
        _ => Vec::new(),
    }
}

/// What a multi-sample capture does between two samples (D20: the monitor's sample interval).
pub(crate) trait SamplePause: Send {
    /// Waits `pause`, the capture holding `held` bytes of samples meanwhile.
    fn pause(&mut self, pause: Duration, held: usize) -> impl Future<Output = ()> + Send;
}

/// A plain sleep between samples: a capture asked for through the API or the CLI.
struct Sleep;

impl SamplePause for Sleep {
    async fn pause(&mut self, pause: Duration, _held: usize) {
        tokio::time::sleep(pause).await;
    }
}

fn binding(workspace: Uuid, row: Uuid, field: Field) -> Binding {
    Binding::new(*workspace.as_bytes(), *row.as_bytes(), field)
}

impl Monitor {
    pub fn new(store: Arc<dyn Store>, keys: Arc<KeyRing>, client: Client) -> Monitor {
        Monitor {
            store,
            keys,
            client,
            locks: Arc::new(Mutex::new(HashMap::new())),
            sample_interval: DEFAULT_SAMPLE_INTERVAL,
        }
    }

    /// The same monitor with another pause between capture samples (tests use a short one).
    pub fn with_sample_interval(mut self, interval: Duration) -> Monitor {
        self.sample_interval = interval;
        self
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The per-endpoint lock: two checks (or captures) of one endpoint through this monitor (or
    /// its clones) run one after the other, so health and latest figures always come from one
    /// complete run.
    fn lock_for(&self, endpoint_id: Uuid) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        if locks.len() > 10_000 {
            locks.retain(|_, l| Arc::strong_count(l) > 1);
        }
        locks.entry(endpoint_id).or_default().clone()
    }

    async fn endpoint(&self, ws: Uuid, id: Uuid) -> Result<StoredEndpoint, MonitorError> {
        self.store
            .get_endpoint(ws, id)
            .await?
            .ok_or(MonitorError::NotFound)
    }

    /// Opens the endpoint's sealed credential, headers and request body into a request.
    pub fn request_for(&self, endpoint: &StoredEndpoint) -> Result<FetchRequest, MonitorError> {
        let ws = endpoint.workspace_id;
        let open = |blob: &[u8], field: Field| {
            self.keys
                .open(blob, &binding(ws, endpoint.id, field))
                .map_err(|e| MonitorError::Seal(e.to_string()))
        };
        let credential = match &endpoint.secrets.sealed_auth {
            Some(blob) => {
                let plain = open(blob, Field::EndpointAuth)?;
                sealed::credential_from_json(&plain).map_err(MonitorError::Seal)?
            }
            None => Credential::None,
        };
        let headers: Vec<ExtraHeader> = match &endpoint.secrets.sealed_headers {
            Some(blob) => {
                let plain = open(blob, Field::EndpointHeaders)?;
                sealed::headers_from_json(&plain).map_err(MonitorError::Seal)?
            }
            None => Vec::new(),
        };
        let body = match &endpoint.secrets.sealed_request_body {
            Some(blob) => Some(open(blob, Field::EndpointRequestBody)?.to_vec()),
            None => None,
        };
        let url = url::Url::parse(&endpoint.settings.url)
            .map_err(|e| MonitorError::Endpoint(format!("stored URL does not parse: {e}")))?;
        Ok(FetchRequest {
            url,
            method: endpoint.settings.method,
            credential,
            headers,
            body,
            content_type: Some(endpoint.settings.content_type.clone()),
            timeout: Duration::from_millis(u64::from(endpoint.settings.timeout_ms.max(1))),
            follow_redirects: endpoint.settings.follow_redirects,
            workspace: Some(ws),
        })
    }

    /// Captures a baseline from one sample (D8): [`Monitor::capture_baseline_sampled`] with 1.
    pub async fn capture_baseline(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<StoredBaseline, MonitorError> {
        self.capture_baseline_sampled(workspace_id, endpoint_id, 1)
            .await
    }

    /// Captures a baseline (D8, D20): fetch `samples` times (1 to [`MAX_SAMPLES`], the
    /// monitor's sample interval apart), learn the leaf paths whose values differ between the
    /// samples (`volatile_paths`), seal the first sample's body, infer its shape, record it as
    /// version + 1 with the learned paths and set health `healthy`. Health is `checking` while it
    /// runs; a failed fetch restores the previous health and is [`MonitorError::CaptureFailed`];
    /// samples that differ in status, in kind of body or in shape are [`MonitorError::Unstable`].
    /// Uses no quota (D13), whatever the number of samples.
    pub async fn capture_baseline_sampled(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        samples: u8,
    ) -> Result<StoredBaseline, MonitorError> {
        let samples = samples.clamp(1, MAX_SAMPLES);
        let endpoint = self.endpoint(workspace_id, endpoint_id).await?;
        let lock = self.lock_for(endpoint_id);
        let _guard = lock.lock().await;
        let request = self.request_for(&endpoint)?;
        let now = OffsetDateTime::now_utc();
        // Each sample may take a whole run (its fetches and retries), plus the pauses between.
        let one_run = run_deadline(&endpoint, now) - now;
        let pauses = time::Duration::try_from(self.sample_interval * u32::from(samples - 1))
            .unwrap_or(time::Duration::MINUTE);
        let deadline = now + one_run * i32::from(samples) + pauses;
        self.store
            .begin_checking(workspace_id, endpoint_id, now, deadline)
            .await?;
        let result = self
            .capture_inner(&endpoint, &request, samples, &mut Sleep)
            .await;
        if result.is_err() {
            self.restore_health(&endpoint).await;
        }
        result
    }

    /// The first baseline of a scheduled run: [`Monitor::capture_baseline_sampled`] of the
    /// endpoint as the run read it, under the endpoint's lock its [`LockedRead`] holds, with
    /// `pause` between the samples (the scheduler's runs wait outside their run slot). It writes
    /// no `checking` mark and restores no health: the run's claim marked the endpoint, the
    /// worker's heartbeat keeps that mark and the lease alive for the whole capture, pauses
    /// included, and the run's finish gives the health back when nothing was recorded.
    pub(crate) async fn capture_scheduled(
        &self,
        read: &LockedRead,
        samples: u8,
        pause: &mut impl SamplePause,
    ) -> Result<StoredBaseline, MonitorError> {
        let samples = samples.clamp(1, MAX_SAMPLES);
        let endpoint = &read.context.endpoint;
        let request = self.request_for(endpoint)?;
        self.capture_inner(endpoint, &request, samples, pause).await
    }

    async fn capture_inner(
        &self,
        endpoint: &StoredEndpoint,
        request: &FetchRequest,
        samples: u8,
        pause: &mut impl SamplePause,
    ) -> Result<StoredBaseline, MonitorError> {
        let mut taken: Vec<Captured> = Vec::with_capacity(usize::from(samples));
        for i in 0..samples {
            if i > 0 {
                let held = taken.iter().map(|c| c.body.len()).sum();
                pause.pause(self.sample_interval, held).await;
            }
            let response = self
                .fetch_with_retries(request, endpoint.settings.retries)
                .await
                .map_err(MonitorError::CaptureFailed)?;
            taken.push(Captured::from_response(response));
        }
        let volatile = self.learn_volatile(endpoint, &taken)?;
        // `samples` is at least 1, so `taken` holds at least one response.
        let captured = taken.swap_remove(0);
        let shape = match body_of(captured.content_type.as_deref(), &captured.body) {
            Body::Json(json) => serde_json::to_value(
                Shape::infer(&json).map_err(|e| MonitorError::Diff(e.to_string()))?,
            )
            .map_err(|e| MonitorError::Diff(e.to_string()))?,
            _ => Value::Null,
        };
        let id = new_id();
        let sealed_body = self
            .keys
            .seal(
                &captured.body,
                &binding(endpoint.workspace_id, id, Field::BaselineBody),
            )
            .map_err(|e| MonitorError::Seal(e.to_string()))?;
        let baseline = NewBaseline {
            id,
            endpoint_id: endpoint.id,
            status: captured.status,
            content_type: captured.content_type.clone(),
            headers: captured.tracked_headers(),
            sealed_body,
            shape,
            captured_at: OffsetDateTime::now_utc(),
            volatile_paths: volatile,
        };
        Ok(self
            .store
            .record_baseline(endpoint.workspace_id, baseline, Some(Health::Healthy))
            .await?)
    }

    /// The leaf paths whose values differ between the samples (D20); none from one sample or
    /// from a body that is not JSON. Samples that differ in status, in kind of body or in shape
    /// are [`MonitorError::Unstable`], naming the sample and the path, never a value.
    fn learn_volatile(
        &self,
        endpoint: &StoredEndpoint,
        taken: &[Captured],
    ) -> Result<Vec<String>, MonitorError> {
        let Some((first, rest)) = taken.split_first() else {
            return Ok(Vec::new());
        };
        if rest.is_empty() {
            return Ok(Vec::new());
        }
        let retake = "take the samples again when the endpoint answers steadily";
        for (i, c) in rest.iter().enumerate() {
            if c.status != first.status {
                return Err(MonitorError::Unstable(format!(
                    "sample {} answered HTTP {}, sample 1 HTTP {}; {retake}",
                    i + 2,
                    c.status,
                    first.status
                )));
            }
        }
        let mut bodies = Vec::with_capacity(taken.len());
        for (i, c) in taken.iter().enumerate() {
            match body_of(c.content_type.as_deref(), &c.body) {
                Body::Json(json) => bodies.push(json),
                _ if i == 0 => return Ok(Vec::new()),
                _ => {
                    return Err(MonitorError::Unstable(format!(
                        "sample {} is not a JSON body, sample 1 is; {retake}",
                        i + 1
                    )));
                }
            }
        }
        let options = self.options_for(endpoint)?;
        volatile_paths(&bodies, &options).map_err(|e| match e {
            VolatileError::ShapeDiffers { .. } => MonitorError::Unstable(e.to_string()),
            other => MonitorError::Diff(other.to_string()),
        })
    }

    async fn restore_health(&self, endpoint: &StoredEndpoint) {
        let _ = self
            .store
            .set_health(
                endpoint.workspace_id,
                endpoint.id,
                endpoint.health,
                OffsetDateTime::now_utc(),
            )
            .await;
    }

    /// Runs a check (D7, D8): needs an active baseline ([`MonitorError::NoBaseline`]) and one
    /// unit of the monthly quota ([`MonitorError::QuotaExhausted`], refused before the fetch
    /// when none is left, and by the recording when the quota ran out meanwhile); fetches,
    /// diffs against the baseline with the endpoint's mode and ignore paths, validates the
    /// contract in force, and records the quota unit, the check, its diff (when a change
    /// exists), the endpoint's figures and the alerts in ONE store call, one transaction. A
    /// fetch with no response is one `status_changed` change at `status`.
    pub async fn run_check(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<CheckOutcome, MonitorError> {
        self.run_check_as(workspace_id, endpoint_id, Trigger::Manual)
            .await
    }

    /// [`Monitor::run_check`], counted in the process metrics ([`crate::metrics`]) under
    /// `trigger`: a check that ran is `clean`, `drift` (a diff was recorded) or `error` (no
    /// response, or the pipeline failed); a refusal before it ran (unknown endpoint, no baseline,
    /// quota exhausted) is not counted.
    pub async fn run_check_as(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        trigger: Trigger,
    ) -> Result<CheckOutcome, MonitorError> {
        let started = std::time::Instant::now();
        let scheduled = matches!(trigger, Trigger::Scheduled);
        let result = self.check(workspace_id, endpoint_id, scheduled).await;
        Self::count(trigger, endpoint_id, started, result)
    }

    /// Counts a check in the process metrics ([`Monitor::run_check_as`]).
    fn count(
        trigger: Trigger,
        endpoint_id: Uuid,
        started: std::time::Instant,
        result: Result<CheckOutcome, MonitorError>,
    ) -> Result<CheckOutcome, MonitorError> {
        let counted = match &result {
            Ok(o) if o.error_kind.is_some() => Some(CheckResult::Error),
            Ok(o) if o.diff_id.is_some() => Some(CheckResult::Drift),
            Ok(_) => Some(CheckResult::Clean),
            Err(
                MonitorError::NotFound
                | MonitorError::NoBaseline
                | MonitorError::QuotaExhausted { .. },
            ) => None,
            Err(_) => Some(CheckResult::Error),
        };
        if let Some(r) = counted {
            let took = started.elapsed();
            crate::metrics::record_check(trigger, r, took);
            tracing::debug!(
                endpoint = %endpoint_id,
                trigger = %trigger.as_str(),
                result = %r.as_str(),
                ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
                "check finished"
            );
        }
        result
    }

    /// The endpoint's lock taken, then everything a scheduled run decides on and its check needs
    /// read under it in one call ([`Store::check_context`]: the endpoint, its baseline, the quota,
    /// the newest diff, the workspace's plan and overrides), so that a run queued behind a check
    /// or capture of the endpoint sees what that one recorded. The lock is held until the
    /// [`LockedRead`] is dropped or consumed by [`Monitor::run_scheduled_check`] or
    /// [`Monitor::capture_scheduled`]. `None` when the endpoint is gone.
    pub(crate) async fn read_scheduled(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
    ) -> Result<Option<LockedRead>, MonitorError> {
        let guard = self.lock_for(endpoint_id).lock_owned().await;
        let at = OffsetDateTime::now_utc();
        Ok(self
            .store
            .check_context(workspace_id, endpoint_id, at)
            .await?
            .map(|context| LockedRead {
                context,
                at,
                _guard: guard,
            }))
    }

    /// [`Monitor::run_check`] for a schedule, from the run's [`LockedRead`] (no second read):
    /// the check is recorded as `scheduled`, and the run's finish (next slot, outcome, lease
    /// released) in the same transaction as the check (`schedule_finished` says whether it was
    /// written). A run that records nothing (an error, the quota used up) is finished by its
    /// caller.
    pub(crate) async fn run_scheduled_check(
        &self,
        read: LockedRead,
        slot: &ScheduledSlot,
    ) -> Result<CheckOutcome, MonitorError> {
        let started = std::time::Instant::now();
        let endpoint_id = read.context.endpoint.id;
        let result = self
            .check_read(read.context, read.at, (true, Some(slot)))
            .await;
        Self::count(Trigger::Scheduled, endpoint_id, started, result)
    }

    /// A check without a claimed slot: the endpoint's lock, then one read for the endpoint, its
    /// baseline, the quota and the newest diff, under the lock so that a check queued behind
    /// another sees what that one recorded.
    async fn check(
        &self,
        workspace_id: Uuid,
        endpoint_id: Uuid,
        scheduled: bool,
    ) -> Result<CheckOutcome, MonitorError> {
        let lock = self.lock_for(endpoint_id);
        let _guard = lock.lock().await;
        let started_at = OffsetDateTime::now_utc();
        let context = self
            .store
            .check_context(workspace_id, endpoint_id, started_at)
            .await?
            .ok_or(MonitorError::NotFound)?;
        self.check_read(context, started_at, (scheduled, None))
            .await
    }

    /// A check from its read (taken under the endpoint's lock, which the caller holds), recorded
    /// as `scheduled` or not, with the finish of its claimed `slot` when it has one. The quota is read so that a check with no unit left
    /// never fetches; the unit itself is taken in the recording transaction, which refuses
    /// (writing nothing) when the quota was used up meanwhile (docs/checks.md, "One transaction
    /// per check").
    async fn check_read(
        &self,
        context: CheckContext,
        started_at: OffsetDateTime,
        (scheduled, slot): (bool, Option<&ScheduledSlot>),
    ) -> Result<CheckOutcome, MonitorError> {
        let CheckContext {
            endpoint,
            baseline,
            usage,
            latest_diff,
            workspace_overrides,
            ..
        } = context;
        let (workspace_id, endpoint_id) = (endpoint.workspace_id, endpoint.id);
        let Some(baseline) = baseline else {
            return Err(MonitorError::NoBaseline);
        };
        let mut options = self.options_for(&endpoint)?;
        options.severity_overrides =
            severity_rules(&endpoint.settings.severity_overrides, &workspace_overrides)?;
        let diff_options = with_volatile(options.clone(), &baseline.volatile_paths)?;
        let request = self.request_for(&endpoint)?;
        if let Some(quota) = usage.exhausted() {
            return Err(MonitorError::QuotaExhausted {
                used: usage.used,
                quota,
            });
        }
        // `checking` while the check runs (D7). A scheduled run was marked by its claim (and its
        // finish restores the health when nothing was recorded). A manual check marks itself,
        // with a deadline, so that readers see it running; the mark keeps the previous health,
        // which comes back when the check records nothing and, after the deadline, when the
        // process died (D19).
        if !scheduled {
            self.store
                .begin_checking(
                    workspace_id,
                    endpoint_id,
                    started_at,
                    run_deadline(&endpoint, started_at),
                )
                .await?;
        }
        let result = self
            .check_inner(
                &endpoint,
                &baseline,
                &request,
                (&diff_options, &options),
                (started_at, latest_diff),
                (scheduled, slot),
            )
            .await;
        if result.is_err() && !scheduled {
            self.restore_health(&endpoint).await;
        }
        result
    }

    /// One fetch, tried again after [`RETRY_DELAY`] up to `retries` times while it yields no
    /// response or a 5xx (D19). The last result is the one recorded.
    async fn fetch_with_retries(
        &self,
        request: &FetchRequest,
        retries: u8,
    ) -> Result<FetchResponse, FetchError> {
        let mut left = retries;
        loop {
            let result = self.client.fetch(request).await;
            let retryable = match &result {
                Ok(r) => r.status >= 500,
                Err(_) => true,
            };
            if !retryable || left == 0 {
                return result;
            }
            left -= 1;
            tokio::time::sleep(RETRY_DELAY).await;
        }
    }

    /// The diff options of `endpoint`: its mode, `ignorePaths` and `identityKeys`.
    fn options_for(&self, endpoint: &StoredEndpoint) -> Result<Options, MonitorError> {
        let mut options = Options::with_mode(endpoint.settings.diff_mode);
        for p in &endpoint.settings.ignore_paths {
            options.ignore.push(
                IgnorePattern::parse(p)
                    .map_err(|e| MonitorError::Endpoint(format!("ignorePaths: {e}")))?,
            );
        }
        for (pattern, key) in &endpoint.settings.identity_keys {
            options.identity_rules.push(
                IdentityRule::parse(pattern, key)
                    .map_err(|e| MonitorError::Endpoint(format!("identityKeys: {e}")))?,
            );
        }
        Ok(options)
    }

    async fn check_inner(
        &self,
        endpoint: &StoredEndpoint,
        baseline: &StoredBaseline,
        request: &FetchRequest,
        (options, contract_options): (&Options, &Options),
        (started_at, previous): (OffsetDateTime, Option<DiffDetail>),
        (scheduled, slot): (bool, Option<&ScheduledSlot>),
    ) -> Result<CheckOutcome, MonitorError> {
        let ws = endpoint.workspace_id;
        let fetched = self
            .fetch_with_retries(request, endpoint.settings.retries)
            .await;
        let finished_at = OffsetDateTime::now_utc();
        let baseline_body = self
            .keys
            .open(
                &baseline.sealed_body,
                &binding(ws, baseline.id, Field::BaselineBody),
            )
            .map_err(|e| MonitorError::Seal(e.to_string()))?;
        let old = Input::response(
            baseline.status,
            headers_from_json(&baseline.headers),
            body_of(baseline.content_type.as_deref(), &baseline_body),
        );
        let check_id = new_id();
        let (changes, captured, failure) = match fetched {
            Ok(response) => {
                let elapsed_ms = response.elapsed_ms();
                let captured = Captured::from_response(response);
                let new = Input::response(
                    captured.status,
                    captured.headers.clone(),
                    body_of(captured.content_type.as_deref(), &captured.body),
                );
                let mut report =
                    diff(&old, &new, options).map_err(|e| MonitorError::Diff(e.to_string()))?;
                // A body that parsed is valid JSON: only one that did not is parsed again, for
                // the reason it fails.
                if matches!(old.body, Body::Json(_))
                    && !matches!(new.body, Body::Json(_))
                    && let Some(why) =
                        invalid_json(captured.content_type.as_deref(), &captured.body)
                {
                    report.extend(apidrift_diff::Report::from_changes(vec![not_json_change(
                        &why,
                    )]));
                }
                if let Some(contract) = &endpoint.response_contract
                    && contract.status == captured.status
                {
                    report.extend(
                        self.validate_contract(
                            endpoint.workspace_id,
                            contract,
                            &captured,
                            contract_options,
                        )
                        .await?,
                    );
                }
                (report.changes, Some((captured, elapsed_ms)), None)
            }
            Err(e) => {
                let new: Input<Json<'_>> = Input::no_response(failure_cause(&e));
                let report =
                    diff(&old, &new, options).map_err(|e| MonitorError::Diff(e.to_string()))?;
                (report.changes, None, Some(e))
            }
        };
        let diff_row = (!changes.is_empty()).then(|| NewDiff {
            id: new_id(),
            baseline_id: Some(baseline.id),
            changes: changes.clone(),
            summary: None,
            created_at: finished_at,
            fingerprint: crate::alerts::fingerprint(&changes),
        });
        let mut check = NewCheck {
            id: check_id,
            endpoint_id: endpoint.id,
            started_at,
            finished_at,
            http_status: captured.as_ref().map(|(c, _)| c.status),
            response_time: captured.as_ref().map(|(_, ms)| *ms),
            error_kind: failure.as_ref().map(|e| e.kind.as_str().to_owned()),
            error_message: failure.as_ref().map(|e| e.message.clone()),
            content_type: None,
            headers: None,
            sealed_body: None,
            scheduled,
        };
        // The response is kept only with a diff, so that accepting it can promote it (D12).
        if diff_row.is_some()
            && let Some((c, _)) = &captured
        {
            check.content_type = c.content_type.clone();
            check.headers = Some(c.tracked_headers());
            check.sealed_body = Some(
                self.keys
                    .seal(&c.body, &binding(ws, check_id, Field::CheckBody))
                    .map_err(|e| MonitorError::Seal(e.to_string()))?,
            );
        }
        // D11: the alert decision and its outbox rows are written in the check's transaction.
        let previous = match diff_row {
            None => previous,
            Some(_) => None,
        };
        let mut draft = crate::alerts::draft_for(
            endpoint,
            finished_at,
            diff_row.as_ref().map(|d| (d.id, d.changes.as_slice())),
            previous.as_ref().map(|p| (&p.base, p.changes.as_slice())),
        );
        // D26: the latency episode is decided in the same transaction.
        draft.latency = Some(crate::alerts::latency_draft(
            endpoint,
            finished_at,
            check.http_status,
            check.response_time,
        ));
        // A scheduled run's finish rides in the check's transaction: a process killed after the
        // commit leaves no recorded slot to run (and charge) again.
        let finish = slot.map(|s| s.finish_at(OffsetDateTime::now_utc()));
        let (recorded, alerts_sent, schedule_finished) = match self
            .store
            .record_check_run(ws, check, diff_row, draft, finish)
            .await?
        {
            CheckRecording::Recorded {
                recorded,
                alerts_sent,
                schedule_finished,
            } => (*recorded, alerts_sent, schedule_finished),
            CheckRecording::QuotaExhausted { used, quota } => {
                return Err(MonitorError::QuotaExhausted { used, quota });
            }
        };
        Ok(CheckOutcome {
            check_id,
            diff_id: recorded.diff.map(|d| d.id),
            seen_count: recorded.diff.map(|d| d.seen_count),
            counts: recorded.counts,
            health: recorded.health,
            http_status: recorded.check.http_status,
            response_time: recorded.check.response_time,
            error_kind: recorded.check.error_kind,
            alerts_sent,
            changes,
            schedule_finished,
        })
    }

    /// Accepts a diff (D12): sets `accepted`, promotes the response of the check that found it
    /// to a new baseline (`baselineVersion` + 1; none when that check got no response) and sets
    /// health `healthy` when it is the endpoint's latest diff. Idempotent: accepting again
    /// records nothing. [`MonitorError::NotFound`] for a diff of another workspace.
    pub async fn accept_diff(
        &self,
        workspace_id: Uuid,
        diff_id: Uuid,
    ) -> Result<(apidrift_model::DiffDetail, apidrift_store::AcceptOutcome), MonitorError> {
        let Some(detail) = self.store.get_diff(workspace_id, diff_id).await? else {
            return Err(MonitorError::NotFound);
        };
        let endpoint_id = detail.base.endpoint_id.ok_or(MonitorError::NotFound)?;
        let lock = self.lock_for(endpoint_id);
        let _guard = lock.lock().await;
        let mut baseline = None;
        if !detail.base.accepted
            && let Some(check_id) = detail.check_id
            && let Some(check) = self.store.get_check(workspace_id, check_id).await?
            && let (Some(status), Some(blob)) = (check.http_status, check.sealed_body.as_ref())
        {
            let body = self
                .keys
                .open(blob, &binding(workspace_id, check_id, Field::CheckBody))
                .map_err(|e| MonitorError::Seal(e.to_string()))?;
            let shape = match body_of(check.content_type.as_deref(), &body) {
                Body::Json(json) => serde_json::to_value(
                    Shape::infer(&json).map_err(|e| MonitorError::Diff(e.to_string()))?,
                )
                .map_err(|e| MonitorError::Diff(e.to_string()))?,
                _ => Value::Null,
            };
            let id = new_id();
            let sealed_body = self
                .keys
                .seal(&body, &binding(workspace_id, id, Field::BaselineBody))
                .map_err(|e| MonitorError::Seal(e.to_string()))?;
            // The learned volatile paths stay volatile: the promoted baseline keeps them until
            // the next capture learns again.
            let volatile_paths = self
                .store
                .active_baseline(workspace_id, endpoint_id)
                .await?
                .map(|b| b.volatile_paths)
                .unwrap_or_default();
            baseline = Some(NewBaseline {
                volatile_paths,
                id,
                endpoint_id,
                status,
                content_type: check.content_type.clone(),
                headers: check.headers.clone().unwrap_or(Value::Object(Map::new())),
                sealed_body,
                shape,
                captured_at: OffsetDateTime::now_utc(),
            });
        }
        let outcome = self
            .store
            .accept_diff(workspace_id, diff_id, baseline, OffsetDateTime::now_utc())
            .await?;
        Ok((detail, outcome))
    }

    async fn validate_contract(
        &self,
        workspace: Uuid,
        contract: &ResponseContract,
        captured: &Captured,
        options: &Options,
    ) -> Result<apidrift_diff::Report, MonitorError> {
        let Ok(body) = serde_json::from_slice::<Value>(&captured.body) else {
            // Not JSON at all: the content-type and body changes already say so.
            return Ok(apidrift_diff::Report::from_changes(Vec::new()));
        };
        // A reference is resolved through the process's bounded validator cache.
        let validator = crate::contracts::validator_for(
            &*self.store,
            crate::contracts::validators(),
            workspace,
            contract,
            captured.content_type.as_deref(),
        )
        .await?;
        Ok(validator.check(&body, options))
    }
}

/// The severity overrides of a check, parsed by the diff engine: the endpoint's own first, then
/// the workspace's defaults, so that in [`Options::severity_overrides`] (first match wins) an
/// endpoint rule wins over a workspace rule of the same rule and path.
pub fn severity_rules(
    endpoint: &[SeverityOverride],
    workspace: &[SeverityOverride],
) -> Result<Vec<OverrideRule>, MonitorError> {
    let parse = |list: &[SeverityOverride], whose: &str| {
        list.iter()
            .enumerate()
            .map(|(i, o)| {
                OverrideRule::from_wire(o).map_err(|e| {
                    MonitorError::Endpoint(format!(
                        "{whose}severityOverrides[{i}]: {e}; correct it with PATCH"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let mut rules = parse(endpoint, "")?;
    rules.extend(parse(workspace, "the workspace's ")?);
    Ok(rules)
}

/// `options` with the baseline's learned volatile paths ignored (D20: in full mode only; schema
/// mode ignores leaf values anyway, and must keep reporting shape changes at those paths).
fn with_volatile(mut options: Options, paths: &[String]) -> Result<Options, MonitorError> {
    if options.mode != DiffMode::Full {
        return Ok(options);
    }
    for p in paths {
        options.ignore.push(IgnorePattern::parse(p).map_err(|e| {
            MonitorError::Endpoint(format!(
                "a learned volatile path does not parse ({e}); capture the baseline again"
            ))
        })?);
    }
    Ok(options)
}

/// Builds the stored form of a contract: the operation, the status (the `--status` given, else
/// the document's first 2xx) and the resolved schema, compiled once to prove it is usable.
pub fn contract_from_openapi(
    document: &str,
    operation: &str,
    status: Option<u16>,
) -> Result<ResponseContract, MonitorError> {
    let c = Contract::from_openapi(document, operation, status)
        .map_err(|e| MonitorError::Contract(e.to_string()))?;
    let status = match status {
        Some(s) => s,
        None => c.status.parse::<u16>().unwrap_or(200),
    };
    Ok(ResponseContract {
        operation: c.operation(),
        status,
        schema: c.schema,
        set: None,
    })
}

/// Why a body that claims to be JSON is not (bad syntax, not UTF-8, nested too deep); `None`
/// for valid JSON or a non-JSON content type.
fn invalid_json(content_type: Option<&str>, bytes: &[u8]) -> Option<String> {
    if !content_type.is_some_and(is_json_media_type) {
        return None;
    }
    match std::str::from_utf8(bytes) {
        Err(e) => Some(format!("not UTF-8 at byte {}", e.valid_up_to())),
        Ok(text) => apidrift_diff::parse(text).err().map(|e| e.to_string()),
    }
}

/// A JSON baseline whose current body, still labelled JSON, no longer parses: the engine
/// compares only like with like, so the pipeline reports it as a breaking change at `$`.
fn not_json_change(why: &str) -> DiffChange {
    let path = "$";
    let change_type = apidrift_model::ChangeType::TypeChanged;
    DiffChange {
        id: apidrift_diff::change_id(path, change_type),
        path: path.to_owned(),
        change_type,
        severity: apidrift_model::Severity::Breaking,
        message: format!("the body is no longer valid JSON ({why})"),
        old_value: None,
        new_value: None,
        old_type: None,
        new_type: None,
    }
}

/// The message of the `status_changed` change of a fetch with no response (D8).
fn failure_cause(e: &FetchError) -> String {
    format!("{} ({})", e.message, e.kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use apidrift_model::{OverrideSeverity, Severity};

    fn report(
        endpoint: &[SeverityOverride],
        workspace: &[SeverityOverride],
    ) -> Result<apidrift_diff::Report, Box<dyn std::error::Error>> {
        let mut options = Options::with_mode(DiffMode::Full);
        options.severity_overrides = severity_rules(endpoint, workspace)?;
        let before = serde_json::json!({"id": 1, "old": true, "debug": {"t": 1}});
        let after = serde_json::json!({"id": 1, "plan": "pro", "debug": {"t": 1, "u": 2}});
        Ok(apidrift_diff::diff_bodies(&before, &after, &options)?)
    }

    fn severity_at(r: &apidrift_diff::Report, path: &str) -> Option<Severity> {
        r.changes
            .iter()
            .find(|c| c.path == path)
            .map(|c| c.severity)
    }

    /// The endpoint's rules come first, then the workspace's: the first match wins, so an
    /// endpoint rule beats a workspace rule of the same rule, and a workspace rule applies
    /// where the endpoint has none; `ignore` drops the change.
    #[test]
    fn endpoint_rules_win_over_the_workspace_defaults() -> Result<(), Box<dyn std::error::Error>> {
        let plain = report(&[], &[])?;
        assert_eq!(severity_at(&plain, "$.plan"), Some(Severity::Info));
        assert_eq!(severity_at(&plain, "$.old"), Some(Severity::Breaking));

        let workspace = [
            SeverityOverride::new("field-added", OverrideSeverity::Breaking),
            SeverityOverride::new("field-removed", OverrideSeverity::Ignore),
        ];
        let only_workspace = report(&[], &workspace)?;
        assert_eq!(
            severity_at(&only_workspace, "$.plan"),
            Some(Severity::Breaking)
        );
        assert_eq!(severity_at(&only_workspace, "$.old"), None, "ignored");

        let endpoint = [
            SeverityOverride::new("field-added", OverrideSeverity::Ignore).at("$.debug"),
            SeverityOverride::new("field-added", OverrideSeverity::Warning),
        ];
        let both = report(&endpoint, &workspace)?;
        assert_eq!(severity_at(&both, "$.plan"), Some(Severity::Warning));
        assert_eq!(
            severity_at(&both, "$.debug.u"),
            None,
            "ignored by the endpoint"
        );
        assert_eq!(
            severity_at(&both, "$.old"),
            None,
            "the workspace's rule still applies"
        );
        assert_eq!(both.counts.breaking_count, 0);
        assert_eq!(both.counts.warning_count, 1);
        Ok(())
    }

    #[test]
    fn a_stored_override_the_engine_cannot_use_names_its_list() {
        let bad = [SeverityOverride::new("status-changed", OverrideSeverity::Info).at("$.a")];
        let endpoint = severity_rules(&bad, &[]).err().map(|e| e.to_string());
        assert!(
            endpoint
                .as_deref()
                .is_some_and(|e| e.contains("severityOverrides[0]: invalid severity override")),
            "{endpoint:?}"
        );
        let workspace = severity_rules(&[], &bad).err().map(|e| e.to_string());
        assert!(
            workspace
                .as_deref()
                .is_some_and(|e| e.contains("the workspace's severityOverrides[0]")),
            "{workspace:?}"
        );
    }
}
