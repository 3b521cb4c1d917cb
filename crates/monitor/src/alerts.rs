//! Alert payloads and signatures (D11): the event body, the diff fingerprint that dedupes a
//! persisting drift, the `Apidrift-Signature` header and webhook secrets.

use apidrift_model::{DiffChange, DiffSummary, HttpMethod, Severity, timestamp};
use apidrift_store::{
    AlertDraft, DiffCounts, EVENT_DETECTED, EVENT_FAST, EVENT_RESOLVED, EVENT_SLOW, LatencyDraft,
    StoredEndpoint, rules,
};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

/// At most this many changes travel in an event (the most severe first).
pub const TOP_CHANGES: usize = 20;

/// The header that carries the signature.
pub const SIGNATURE_HEADER: &str = "Apidrift-Signature";

/// The fingerprint of a change list: its set of (path, type, severity), order-free, as a hex
/// SHA-256. `None` for an empty list.
pub fn fingerprint(changes: &[DiffChange]) -> Option<String> {
    if changes.is_empty() {
        return None;
    }
    let mut items: Vec<String> = changes
        .iter()
        .map(|c| {
            format!(
                "{}\u{1f}{}\u{1f}{}",
                c.path,
                c.change_type.as_str(),
                c.severity.as_str()
            )
        })
        .collect();
    items.sort();
    items.dedup();
    let digest = ring::digest::digest(&ring::digest::SHA256, items.join("\u{1e}").as_bytes());
    Some(hex(digest.as_ref()))
}

/// The highest severity of a change list.
pub fn max_severity(changes: &[DiffChange]) -> Option<Severity> {
    changes.iter().map(|c| c.severity).max()
}

/// The `diff` object of an event: the summary fields and the top [`TOP_CHANGES`] changes
/// (breaking first, then warning, then info; stable within a severity).
pub fn diff_object(summary: &DiffSummary, changes: &[DiffChange]) -> Value {
    let mut top: Vec<&DiffChange> = changes.iter().collect();
    top.sort_by_key(|c| std::cmp::Reverse(c.severity));
    top.truncate(TOP_CHANGES);
    let mut value = serde_json::to_value(summary).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert(
            "changes".into(),
            serde_json::to_value(top).unwrap_or(Value::Array(Vec::new())),
        );
    }
    value
}

/// The event's `endpoint`: its URL with query values hidden ([`crate::redact::query_values`]),
/// so a key in the query reaches no channel.
fn endpoint_object(endpoint: &StoredEndpoint) -> Value {
    json!({
        "id": endpoint.id,
        "name": endpoint.settings.name,
        "url": crate::redact::query_values(&endpoint.settings.url),
        "method": method_str(endpoint.settings.method),
    })
}

fn method_str(m: HttpMethod) -> &'static str {
    m.as_str()
}

/// One event body (`type`, `id`, `createdAt`, `workspaceId`, `endpoint`, `diff`).
pub fn event_body(
    kind: &str,
    event_id: Uuid,
    created_at: OffsetDateTime,
    endpoint: &StoredEndpoint,
    diff: Value,
) -> String {
    json!({
        "type": kind,
        "id": event_id,
        "createdAt": timestamp::format(created_at).unwrap_or_default(),
        "workspaceId": endpoint.workspace_id,
        "endpoint": endpoint_object(endpoint),
        "diff": diff,
    })
    .to_string()
}

/// One latency event body (`type`, `id`, `createdAt`, `workspaceId`, `endpoint`, `latency`):
/// `latency` is `{"responseTimeMs", "maxResponseTimeMs", "slowAfter"}` of the check that sent it.
pub fn latency_body(
    kind: &str,
    event_id: Uuid,
    created_at: OffsetDateTime,
    endpoint: &StoredEndpoint,
    response_time: u32,
) -> String {
    json!({
        "type": kind,
        "id": event_id,
        "createdAt": timestamp::format(created_at).unwrap_or_default(),
        "workspaceId": endpoint.workspace_id,
        "endpoint": endpoint_object(endpoint),
        "latency": {
            "responseTimeMs": response_time,
            "maxResponseTimeMs": endpoint.settings.max_response_time_ms,
            "slowAfter": endpoint.settings.slow_after,
        },
    })
    .to_string()
}

/// The latency side of a check's draft (D26): its response time when it was up (a response with
/// a status below 500), the endpoint's threshold, and both bodies with their own event id (empty
/// for a check that was not up: such a check sends no latency event).
pub fn latency_draft(
    endpoint: &StoredEndpoint,
    now: OffsetDateTime,
    http_status: Option<u16>,
    response_time: Option<u32>,
) -> LatencyDraft {
    let event_id = Uuid::now_v7();
    let up = response_time.filter(|_| rules::is_up(http_status));
    let (slow, fast) = match up {
        Some(ms) => (
            latency_body(EVENT_SLOW, event_id, now, endpoint, ms),
            latency_body(EVENT_FAST, event_id, now, endpoint, ms),
        ),
        None => (String::new(), String::new()),
    };
    LatencyDraft {
        event_id,
        response_time: up,
        max_response_time_ms: endpoint.settings.max_response_time_ms,
        slow_after: endpoint.settings.slow_after,
        slow_payload: slow,
        fast_payload: fast,
    }
}

/// The draft a check hands to the store: both possible bodies with one event id. `diff` is this
/// check's diff (id and changes) when it has one; `previous` is the endpoint's latest diff before
/// this check (the drift a `drift.resolved` refers to).
pub fn draft_for(
    endpoint: &StoredEndpoint,
    now: OffsetDateTime,
    diff: Option<(Uuid, &[DiffChange])>,
    previous: Option<(&DiffSummary, &[DiffChange])>,
) -> AlertDraft {
    let event_id = Uuid::now_v7();
    let (fp, sev, detected) = match diff {
        Some((diff_id, changes)) => {
            let counts = DiffCounts::of(changes);
            let summary = DiffSummary {
                id: diff_id,
                endpoint_id: Some(endpoint.id),
                endpoint_name: Some(endpoint.settings.name.clone()),
                created_at: Some(now),
                accepted: false,
                breaking_count: counts.breaking,
                warning_count: counts.warning,
                info_count: counts.info,
                change_count: counts.changes,
                first_seen_at: Some(now),
                last_seen_at: Some(now),
                seen_count: 1,
            };
            (
                fingerprint(changes),
                max_severity(changes),
                event_body(
                    EVENT_DETECTED,
                    event_id,
                    now,
                    endpoint,
                    diff_object(&summary, changes),
                ),
            )
        }
        None => (None, None, String::new()),
    };
    let resolved = if diff.is_none() {
        let d = previous
            .map(|(s, c)| diff_object(s, c))
            .unwrap_or(Value::Null);
        event_body(EVENT_RESOLVED, event_id, now, endpoint, d)
    } else {
        String::new()
    };
    AlertDraft {
        event_id,
        created_at: now,
        fingerprint: fp,
        max_severity: sev,
        detected_payload: detected,
        resolved_payload: resolved,
        latency: None,
    }
}

/// `t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn signature(secret: &[u8], unix: i64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(unix.to_string().as_bytes());
    ctx.update(b".");
    ctx.update(body);
    format!("t={unix},v1={}", hex(ctx.sign().as_ref()))
}

/// Verifies a [`signature`] header value (constant time); for receivers and tests.
pub fn verify_signature(secret: &[u8], header: &str, body: &[u8]) -> bool {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => v1 = unhex(v),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut msg = t.to_string().into_bytes();
    msg.push(b'.');
    msg.extend_from_slice(body);
    hmac::verify(&key, &msg, &v1).is_ok()
}

/// A new webhook secret: `whsec_` and 32 random bytes in hex.
pub fn generate_secret() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system random generator failed".to_owned())?;
    Ok(format!("whsec_{}", hex(&bytes)))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apidrift_model::ChangeType;

    fn change(path: &str, severity: Severity) -> DiffChange {
        DiffChange {
            id: path.into(),
            path: path.into(),
            change_type: ChangeType::Removed,
            severity,
            message: "m".into(),
            old_value: None,
            new_value: None,
            old_type: None,
            new_type: None,
        }
    }

    #[test]
    fn fingerprint_is_a_set() {
        let a = change("$.a", Severity::Breaking);
        let b = change("$.b", Severity::Info);
        assert_eq!(
            fingerprint(&[a.clone(), b.clone()]),
            fingerprint(&[b.clone(), a.clone(), a.clone()])
        );
        assert_ne!(fingerprint(std::slice::from_ref(&a)), fingerprint(&[a, b]));
        assert_eq!(fingerprint(&[]), None);
    }

    #[test]
    fn signature_round_trip() {
        let sig = signature(b"secret", 1_700_000_000, b"{\"a\":1}");
        assert!(sig.starts_with("t=1700000000,v1="));
        assert!(verify_signature(b"secret", &sig, b"{\"a\":1}"));
        assert!(!verify_signature(b"secret", &sig, b"{\"a\":2}"));
        assert!(!verify_signature(b"other", &sig, b"{\"a\":1}"));
        assert!(!verify_signature(b"secret", "t=1,v1=zz", b""));
    }

    #[test]
    fn known_hmac_vector() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"Jefe");
        let tag = hmac::sign(&key, b"what do ya want for nothing?");
        assert_eq!(
            hex(tag.as_ref()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn top_twenty_most_severe_first() {
        let mut changes: Vec<DiffChange> = (0..30)
            .map(|i| change(&format!("$.i{i}"), Severity::Info))
            .collect();
        changes.push(change("$.x", Severity::Breaking));
        let summary = DiffSummary {
            id: Uuid::nil(),
            endpoint_id: None,
            endpoint_name: None,
            created_at: None,
            accepted: false,
            breaking_count: 1,
            warning_count: 0,
            info_count: 30,
            change_count: 31,
            first_seen_at: None,
            last_seen_at: None,
            seen_count: 1,
        };
        let v = diff_object(&summary, &changes);
        let list = v["changes"].as_array().map(Vec::len);
        assert_eq!(list, Some(20));
        assert_eq!(v["changes"][0]["path"], "$.x");
        assert_eq!(v["changeCount"], 31);
    }

    #[test]
    fn secrets_are_random() -> Result<(), String> {
        let a = generate_secret()?;
        assert!(a.starts_with("whsec_") && a.len() == 6 + 64);
        assert_ne!(a, generate_secret()?);
        Ok(())
    }
}
