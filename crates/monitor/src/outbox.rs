//! Webhook deliveries from the durable outbox (D11). A delivery is claimed with a lease, POSTed
//! through the SSRF-safe [`crate::Client`] (5 s timeout, no redirects) — a generic webhook with
//! the `Apidrift-Signature` header, a native channel with its service's message
//! ([`crate::channels`]) — and its attempt recorded with the outcome in one transaction: a
//! 2xx is delivered; anything else is retried with exponential backoff and jitter until the
//! event is older than the retry window (24 h), then given up. A process that dies mid-attempt
//! leaves the lease to expire, so the delivery is sent again (at least once).

use crate::alerts::{SIGNATURE_HEADER, signature};
use crate::channels;
use crate::client::FetchRequest;
use crate::loops::{Ctx, Room, WorkerConfig, WorkerStats, claim_loop, random_below};
use apidrift_model::HttpMethod;
use apidrift_model::SecretString;
use apidrift_model::validate::{Credential, ExtraHeader};
use apidrift_seal::{Binding, Field};
use apidrift_store::{ClaimedDelivery, DeliveryAttempt, DeliveryOutcome, WebhookKind, new_id};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use tokio::sync::watch;

/// The delay before retry number `attempts` (1 = the first retry): `base * 2^(attempts-1)`
/// capped at `max`, then a random point in its upper half (jitter).
pub fn backoff(config: &WorkerConfig, attempts: u32) -> Duration {
    let base = config.retry_base.as_millis().max(1);
    let exp = base.saturating_mul(1u128 << attempts.saturating_sub(1).min(40));
    let full = exp.min(config.retry_max.as_millis().max(1));
    let full = u64::try_from(full).unwrap_or(u64::MAX);
    Duration::from_millis(full / 2 + random_below(full / 2 + 1))
}

/// The delivery loop of one process.
pub(crate) async fn run(ctx: Ctx, stop: watch::Receiver<bool>) {
    let claim_ctx = ctx.clone();
    claim_loop(
        ctx.config.poll,
        ctx.config.grace,
        Room::slots_only(ctx.config.delivery_concurrency, ctx.stats.clone()),
        stop,
        move |free| {
            let ctx = claim_ctx.clone();
            async move {
                let limit = u32::try_from(free.min(100)).unwrap_or(100);
                match ctx
                    .monitor
                    .store()
                    .claim_deliveries(
                        &ctx.owner,
                        OffsetDateTime::now_utc(),
                        ctx.config.lease,
                        limit,
                    )
                    .await
                {
                    Ok(items) => items,
                    Err(e) => {
                        tracing::warn!(error = %e, "outbox: claim failed");
                        Vec::new()
                    }
                }
            }
        },
        move |item: ClaimedDelivery, slot| {
            let ctx = ctx.clone();
            async move {
                deliver(&ctx, item).await;
                drop(slot);
            }
        },
    )
    .await;
}

/// What one delivery sends: where, which body, which extra headers.
struct Outgoing {
    url: String,
    body: String,
    headers: Vec<ExtraHeader>,
}

/// Builds the request of delivery `d` from its opened secret: the signed generic event, or the
/// message of a native channel (Slack and Discord POST to the sealed URL; PagerDuty carries the
/// routing key in its body). A URL that holds a secret is sealed with it
/// ([`delivery_target`]).
fn outgoing(ctx: &Ctx, d: &ClaimedDelivery, opened: &[u8]) -> Result<Outgoing, String> {
    let (url, secret) = delivery_target(d.kind, &d.url, opened)?;
    if d.kind == WebhookKind::Generic {
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let sig = signature(secret, now, d.payload.as_bytes());
        return Ok(Outgoing {
            url,
            body: d.payload.clone(),
            headers: vec![ExtraHeader {
                name: SIGNATURE_HEADER.to_owned(),
                value: SecretString::new(sig),
            }],
        });
    }
    let secret = std::str::from_utf8(secret)
        .map_err(|_| "the webhook secret is not UTF-8 text".to_owned())?;
    let body = channels::render(d.kind, &d.payload, secret, ctx.config.public_url.as_deref())
        .ok_or_else(|| "the stored event is not a JSON object".to_owned())?;
    Ok(Outgoing {
        url,
        body,
        headers: Vec::new(),
    })
}

/// One attempt: (HTTP status, error) — error `None` means delivered.
async fn attempt(ctx: &Ctx, d: &ClaimedDelivery) -> (Option<u16>, Option<String>) {
    let secret = match ctx.keys.open(
        &d.sealed_secret,
        &Binding::new(
            *d.workspace_id.as_bytes(),
            *d.webhook_id.as_bytes(),
            Field::WebhookSecret,
        ),
    ) {
        Ok(s) => s,
        Err(e) => return (None, Some(format!("webhook secret: {e}"))),
    };
    let out = match outgoing(ctx, d, &secret) {
        Ok(o) => o,
        Err(e) => return (None, Some(e)),
    };
    // The outbound policy applies to every kind, to the URL actually used.
    let url = match ctx.monitor.client().check_url(&out.url) {
        Ok(u) => u,
        Err(e) => return (None, Some(e.to_string())),
    };
    let request = FetchRequest {
        url,
        method: HttpMethod::Post,
        credential: Credential::None,
        headers: out.headers,
        body: Some(out.body.into_bytes()),
        content_type: Some("application/json".to_owned()),
        timeout: ctx.config.delivery_timeout,
        follow_redirects: false,
        workspace: Some(d.workspace_id),
    };
    match ctx.monitor.client().fetch(&request).await {
        Ok(r) if (200..300).contains(&r.status) => (Some(r.status), None),
        Ok(r) => (Some(r.status), Some(format!("HTTP {}", r.status))),
        Err(e) => (None, Some(e.to_string())),
    }
}

async fn deliver(ctx: &Ctx, d: ClaimedDelivery) {
    let attempted_at = OffsetDateTime::now_utc();
    let started = Instant::now();
    let (status, error) = attempt(ctx, &d).await;
    let duration_ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
    let outcome = match &error {
        None => {
            WorkerStats::add(&ctx.stats.deliveries_sent, 1);
            DeliveryOutcome::Delivered
        }
        Some(_) => {
            WorkerStats::add(&ctx.stats.deliveries_failed_attempts, 1);
            let now = OffsetDateTime::now_utc();
            let delay = time::Duration::try_from(backoff(&ctx.config, d.attempts + 1))
                .unwrap_or(time::Duration::HOUR);
            let window =
                time::Duration::try_from(ctx.config.retry_window).unwrap_or(time::Duration::DAY);
            if now + delay > d.created_at + window {
                DeliveryOutcome::Failed
            } else {
                DeliveryOutcome::Retry(now + delay)
            }
        }
    };
    crate::metrics::record_delivery(match outcome {
        DeliveryOutcome::Delivered => crate::metrics::DeliveryResult::Delivered,
        DeliveryOutcome::Retry(_) => crate::metrics::DeliveryResult::Retry,
        DeliveryOutcome::Failed => crate::metrics::DeliveryResult::Failed,
    });
    if let Some(e) = &error {
        tracing::info!(delivery = %d.id, attempt = d.attempts + 1, error = %e, "webhook delivery failed");
    }
    let record = DeliveryAttempt {
        id: new_id(),
        attempted_at,
        http_status: status,
        error,
        duration_ms,
    };
    match ctx
        .monitor
        .store()
        .finish_delivery(d.id, &ctx.owner, record, outcome)
        .await
    {
        Ok(true) => {}
        Ok(false) => tracing::warn!(delivery = %d.id, "outbox: lease lost"),
        Err(e) => tracing::warn!(error = %e, "outbox: recording an attempt failed"),
    }
}

/// Where the deliveries of a `kind` webhook stored with URL `stored_url` go, and its secret, from
/// its opened sealed secret `opened`: a `slack` or `discord` webhook's sealed secret is its URL;
/// a `generic` or `pagerduty` webhook whose stored URL is redacted (holds `…`) sealed
/// `<full URL>\n<secret>`; any other goes to the stored URL.
pub fn delivery_target<'a>(
    kind: WebhookKind,
    stored_url: &str,
    opened: &'a [u8],
) -> Result<(String, &'a [u8]), String> {
    let text = || {
        std::str::from_utf8(opened).map_err(|_| "the webhook secret is not UTF-8 text".to_owned())
    };
    match kind {
        WebhookKind::Slack | WebhookKind::Discord => Ok((text()?.to_owned(), opened)),
        WebhookKind::Generic | WebhookKind::Pagerduty
            if stored_url.contains(crate::redact::HIDDEN) =>
        {
            let at = opened
                .iter()
                .position(|b| *b == b'\n')
                .ok_or_else(|| "the sealed webhook URL is missing".to_owned())?;
            let url = std::str::from_utf8(&opened[..at])
                .map_err(|_| "the sealed webhook URL is not UTF-8 text".to_owned())?;
            Ok((url.to_owned(), &opened[at + 1..]))
        }
        WebhookKind::Generic | WebhookKind::Pagerduty => Ok((stored_url.to_owned(), opened)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let config = WorkerConfig {
            retry_base: Duration::from_millis(1000),
            retry_max: Duration::from_millis(10_000),
            ..WorkerConfig::default()
        };
        for _ in 0..50 {
            let d1 = backoff(&config, 1).as_millis();
            assert!((500..=1000).contains(&d1), "{d1}");
            let d3 = backoff(&config, 3).as_millis();
            assert!((2000..=4000).contains(&d3), "{d3}");
            let d30 = backoff(&config, 30).as_millis();
            assert!((5000..=10_000).contains(&d30), "{d30}");
        }
    }
}
