//! Native alert channels: the message a `slack`, `discord` or `pagerduty` webhook receives,
//! rendered at delivery time from the stored generic event (`type`, `id`, `createdAt`,
//! `endpoint`, `diff`), so every kind shares the one outbox, its leases and its retries.
//!
//! * Slack incoming webhook: `{ "text", "blocks" }`, a `header` block (plain text, at most 150
//!   characters) and `section` blocks (mrkdwn, at most 3000 characters); `&`, `<`, `>` are
//!   escaped everywhere, so no text of a diff forms a link or a mention.
//! * Discord webhook: `{ "content", "embeds": [one embed], "allowed_mentions": { "parse": [] } }`
//!   within Discord's limits (content 2000, title 256, description 4096, 25 fields of at most
//!   256/1024, 6000 characters per message); no text of a diff can mention anyone.
//! * PagerDuty Events API v2: `{ "routing_key", "event_action": "trigger"|"resolve",
//!   "dedup_key": <endpoint id>, "payload": { "summary" (≤ 1024), "source", "severity", ... } }`;
//!   the resolve carries the same `dedup_key`, so one incident opens and closes per endpoint.
//!
//! A latency event (`latency.slow`, `latency.resolved`; its `latency` object instead of `diff`)
//! renders as a short message of its own: "Slow responses: <name>" with the response time, the
//! threshold and `slowAfter`, and "Response time back to normal: <name>". PagerDuty gets a
//! `warning` trigger and its resolve under the dedup key `<endpoint id>:slow`, an incident of
//! its own beside the drift's.
//!
//! The links point at the console's diff page when `[server] public_url` is set. The endpoint's
//! URL is shown with its query values hidden ([`crate::redact::query_values`]), as the console
//! shows it.

use apidrift_store::{EVENT_FAST, EVENT_RESOLVED, EVENT_SLOW, WebhookKind};
use serde_json::{Map, Value, json};

/// PagerDuty's Events API v2 endpoint, the default URL of a `pagerduty` webhook.
pub const PAGERDUTY_EVENTS_URL: &str = "https://events.pagerduty.com/v2/enqueue";

/// Slack: a header block's text.
pub const SLACK_HEADER_MAX: usize = 150;
/// Slack: a section block's text (and our fallback `text`).
pub const SLACK_SECTION_MAX: usize = 3000;
/// Discord: message content.
pub const DISCORD_CONTENT_MAX: usize = 2000;
/// Discord: embed title.
pub const DISCORD_TITLE_MAX: usize = 256;
/// Discord: embed description.
pub const DISCORD_DESCRIPTION_MAX: usize = 4096;
/// Discord: field name / value.
pub const DISCORD_FIELD_NAME_MAX: usize = 256;
pub const DISCORD_FIELD_VALUE_MAX: usize = 1024;
/// Discord: all embed text of one message.
pub const DISCORD_EMBED_TOTAL_MAX: usize = 6000;
/// PagerDuty: `payload.summary`.
pub const PAGERDUTY_SUMMARY_MAX: usize = 1024;
/// Changes listed in a Slack or Discord message (the generic event carries up to 20).
pub const LISTED_CHANGES: usize = 10;

/// `text` cut to at most `max` characters (not bytes), ending with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// What a rendered event says, whatever the channel.
struct Facts<'a> {
    resolved: bool,
    endpoint_id: &'a str,
    endpoint_name: &'a str,
    endpoint_method: &'a str,
    /// Query values hidden (an event queued before they were hidden at queueing time too).
    endpoint_url: String,
    diff_id: Option<&'a str>,
    breaking: u64,
    warning: u64,
    info: u64,
    changes: Vec<(&'a str, &'a str, &'a str, &'a str)>,
    created_at: &'a str,
    link: Option<String>,
}

fn facts<'a>(event: &'a Value, public_url: Option<&str>) -> Facts<'a> {
    let s = |v: &'a Value| v.as_str().unwrap_or_default();
    let diff = &event["diff"];
    let diff_id = diff["id"].as_str();
    let changes = diff["changes"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| {
                    (
                        s(&c["severity"]),
                        s(&c["type"]),
                        s(&c["path"]),
                        s(&c["message"]),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let link = match (public_url, diff_id) {
        (Some(base), Some(id)) => {
            Some(format!("{}/console/diffs/{id}", base.trim_end_matches('/')))
        }
        (Some(base), None) => Some(format!(
            "{}/console/endpoints/{}",
            base.trim_end_matches('/'),
            s(&event["endpoint"]["id"])
        )),
        _ => None,
    };
    Facts {
        resolved: event["type"].as_str() == Some(EVENT_RESOLVED),
        endpoint_id: s(&event["endpoint"]["id"]),
        endpoint_name: s(&event["endpoint"]["name"]),
        endpoint_method: s(&event["endpoint"]["method"]),
        endpoint_url: crate::redact::query_values(s(&event["endpoint"]["url"])),
        diff_id,
        breaking: diff["breakingCount"].as_u64().unwrap_or(0),
        warning: diff["warningCount"].as_u64().unwrap_or(0),
        info: diff["infoCount"].as_u64().unwrap_or(0),
        changes,
        created_at: s(&event["createdAt"]),
        link,
    }
}

impl Facts<'_> {
    fn title(&self) -> String {
        if self.resolved {
            format!("Drift resolved: {}", self.endpoint_name)
        } else {
            format!("API drift detected: {}", self.endpoint_name)
        }
    }

    fn counts(&self) -> String {
        format!(
            "{} breaking, {} warning, {} info",
            self.breaking, self.warning, self.info
        )
    }

    fn endpoint_line(&self) -> String {
        format!("{} {}", self.endpoint_method, self.endpoint_url)
    }
}

/// The request body a webhook of `kind` sends for the stored generic event `payload`. `secret`
/// is the opened webhook secret (the routing key of a `pagerduty` webhook). `None` for
/// `generic` (the stored body is sent as is) and for a payload that is not an event object.
pub fn render(
    kind: WebhookKind,
    payload: &str,
    secret: &str,
    public_url: Option<&str>,
) -> Option<String> {
    if kind == WebhookKind::Generic {
        return None;
    }
    let event: Value = serde_json::from_str(payload).ok()?;
    if !event.is_object() {
        return None;
    }
    if let Some(kind_str) = event["type"].as_str()
        && (kind_str == EVENT_SLOW || kind_str == EVENT_FAST)
    {
        return Some(latency_message(kind, &event, secret, public_url)?.to_string());
    }
    let f = facts(&event, public_url);
    let body = match kind {
        WebhookKind::Generic => return None,
        WebhookKind::Slack => slack(&f),
        WebhookKind::Discord => discord(&f),
        WebhookKind::Pagerduty => pagerduty(&f, secret),
    };
    Some(body.to_string())
}

/// Slack mrkdwn escaping: `&`, `<` and `>` (so no text of a diff can form a link or mention).
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn slack(f: &Facts<'_>) -> Value {
    let title = truncate(&slack_escape(&f.title()), SLACK_HEADER_MAX);
    let mut summary = format!(
        "*Endpoint:* {}\n`{}`",
        slack_escape(f.endpoint_name),
        slack_escape(&f.endpoint_line())
    );
    if f.resolved {
        summary.push_str("\nThe endpoint answers like its baseline again.");
    } else {
        summary.push_str(&format!("\n*Changes:* {}", f.counts()));
    }
    if let Some(link) = &f.link {
        summary.push_str(&format!(
            "\n<{}|{}>",
            slack_escape(link),
            if f.diff_id.is_some() {
                "Open the diff"
            } else {
                "Open the endpoint"
            }
        ));
    }
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "text": title}}),
        json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate(&summary, SLACK_SECTION_MAX)}}),
    ];
    if !f.resolved && !f.changes.is_empty() {
        let mut lines = String::from("*Top changes:*");
        for (severity, kind, path, message) in f.changes.iter().take(LISTED_CHANGES) {
            lines.push_str(&format!(
                "\n• *{severity}* {kind} `{}`: {}",
                slack_escape(&truncate(path, 200)),
                slack_escape(&truncate(message, 200))
            ));
        }
        if f.changes.len() > LISTED_CHANGES {
            lines.push_str(&format!(
                "\n… and {} more",
                f.changes.len() - LISTED_CHANGES
            ));
        }
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate(&lines, SLACK_SECTION_MAX)}}));
    }
    let text = if f.resolved {
        f.title()
    } else {
        format!("{} ({})", f.title(), f.counts())
    };
    json!({
        "text": truncate(&slack_escape(&text), SLACK_SECTION_MAX),
        "blocks": blocks,
    })
}

fn discord(f: &Facts<'_>) -> Value {
    let title = truncate(&f.title(), DISCORD_TITLE_MAX);
    let description = truncate(
        &if f.resolved {
            format!(
                "`{}`\nThe endpoint answers like its baseline again.",
                f.endpoint_line()
            )
        } else {
            format!("`{}`\n{}", f.endpoint_line(), f.counts())
        },
        1024,
    );
    let mut used = title.chars().count() + description.chars().count();
    let mut fields = Vec::new();
    if !f.resolved {
        for (severity, kind, path, message) in f.changes.iter().take(LISTED_CHANGES) {
            let name = truncate(&format!("{severity} · {kind}"), DISCORD_FIELD_NAME_MAX);
            let value = truncate(
                &format!("`{}`\n{}", truncate(path, 300), message),
                DISCORD_FIELD_VALUE_MAX.min(500),
            );
            let size = name.chars().count() + value.chars().count();
            if used + size > DISCORD_EMBED_TOTAL_MAX - 100 {
                break;
            }
            used += size;
            fields.push(json!({"name": name, "value": value, "inline": false}));
        }
    }
    let mut embed = Map::new();
    embed.insert("title".into(), Value::String(title.clone()));
    embed.insert("description".into(), Value::String(description));
    embed.insert(
        "color".into(),
        json!(if f.resolved {
            0x2e_b8_86
        } else if f.breaking > 0 {
            0xd9_35_35
        } else {
            0xe0_a0_20
        }),
    );
    if !fields.is_empty() {
        embed.insert("fields".into(), Value::Array(fields));
    }
    if let Some(link) = &f.link {
        embed.insert("url".into(), Value::String(link.clone()));
    }
    if !f.created_at.is_empty() {
        embed.insert("timestamp".into(), Value::String(f.created_at.to_owned()));
    }
    embed.insert("footer".into(), json!({"text": "apidrift"}));
    json!({
        "content": truncate(&title, DISCORD_CONTENT_MAX),
        "embeds": [Value::Object(embed)],
        "allowed_mentions": {"parse": []},
    })
}

fn pagerduty(f: &Facts<'_>, routing_key: &str) -> Value {
    if f.resolved {
        return json!({
            "routing_key": routing_key,
            "event_action": "resolve",
            "dedup_key": f.endpoint_id,
        });
    }
    let severity = if f.breaking > 0 {
        "critical"
    } else if f.warning > 0 {
        "warning"
    } else {
        "info"
    };
    let summary = truncate(
        &format!(
            "API drift on {} ({}): {}",
            f.endpoint_name,
            f.endpoint_line(),
            f.counts()
        ),
        PAGERDUTY_SUMMARY_MAX,
    );
    let top: Vec<Value> = f
        .changes
        .iter()
        .take(LISTED_CHANGES)
        .map(|(severity, kind, path, message)| {
            json!({"severity": severity, "type": kind, "path": path, "message": truncate(message, 300)})
        })
        .collect();
    let mut payload = json!({
        "summary": summary,
        "source": truncate(&f.endpoint_url, 255),
        "severity": severity,
        "component": truncate(f.endpoint_name, 255),
        "class": "api-drift",
        "custom_details": {
            "endpointId": f.endpoint_id,
            "diffId": f.diff_id,
            "breakingCount": f.breaking,
            "warningCount": f.warning,
            "infoCount": f.info,
            "changes": top,
        },
    });
    if !f.created_at.is_empty()
        && let Value::Object(map) = &mut payload
    {
        map.insert("timestamp".into(), Value::String(f.created_at.to_owned()));
    }
    let mut body = json!({
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": f.endpoint_id,
        "client": "apidrift",
        "payload": payload,
    });
    if let (Some(link), Value::Object(map)) = (&f.link, &mut body) {
        map.insert(
            "links".into(),
            json!([{"href": link, "text": "The diff in apidrift"}]),
        );
        map.insert("client_url".into(), Value::String(link.clone()));
    }
    body
}

/// The message of a latency event (`latency.slow` / `latency.resolved`) for a native channel.
fn latency_message(
    kind: WebhookKind,
    event: &Value,
    routing_key: &str,
    public_url: Option<&str>,
) -> Option<Value> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let slow = event["type"].as_str() == Some(EVENT_SLOW);
    let endpoint_id = s(&event["endpoint"]["id"]);
    let name = s(&event["endpoint"]["name"]);
    let line = format!(
        "{} {}",
        s(&event["endpoint"]["method"]),
        crate::redact::query_values(&s(&event["endpoint"]["url"]))
    );
    let latency = &event["latency"];
    let ms = latency["responseTimeMs"].as_u64().unwrap_or(0);
    let max = latency["maxResponseTimeMs"].as_u64();
    let after = latency["slowAfter"].as_u64().unwrap_or(0);
    let title = if slow {
        format!("Slow responses: {name}")
    } else {
        format!("Response time back to normal: {name}")
    };
    let detail = match (slow, max) {
        (true, Some(max)) => {
            format!("{after} checks in a row took longer than {max} ms (last: {ms} ms).")
        }
        (true, None) => format!("The last check took {ms} ms."),
        (false, Some(max)) => format!("The last check took {ms} ms, within {max} ms."),
        (false, None) => format!("The last check took {ms} ms."),
    };
    let link = public_url.map(|base| {
        format!(
            "{}/console/endpoints/{endpoint_id}",
            base.trim_end_matches('/')
        )
    });
    let created_at = s(&event["createdAt"]);
    Some(match kind {
        WebhookKind::Generic => return None,
        WebhookKind::Slack => {
            let mut text = format!(
                "*Endpoint:* {}\n`{}`\n{}",
                slack_escape(&name),
                slack_escape(&line),
                detail
            );
            if let Some(link) = &link {
                text.push_str(&format!("\n<{}|Open the endpoint>", slack_escape(link)));
            }
            json!({
                "text": truncate(&slack_escape(&title), SLACK_SECTION_MAX),
                "blocks": [
                    {"type": "header", "text": {"type": "plain_text", "text": truncate(&slack_escape(&title), SLACK_HEADER_MAX)}},
                    {"type": "section", "text": {"type": "mrkdwn", "text": truncate(&text, SLACK_SECTION_MAX)}},
                ],
            })
        }
        WebhookKind::Discord => {
            let title = truncate(&title, DISCORD_TITLE_MAX);
            let mut embed = Map::new();
            embed.insert("title".into(), Value::String(title.clone()));
            embed.insert(
                "description".into(),
                Value::String(truncate(&format!("`{line}`\n{detail}"), 1024)),
            );
            embed.insert(
                "color".into(),
                json!(if slow { 0xe0_a0_20 } else { 0x2e_b8_86 }),
            );
            if let Some(link) = &link {
                embed.insert("url".into(), Value::String(link.clone()));
            }
            if !created_at.is_empty() {
                embed.insert("timestamp".into(), Value::String(created_at));
            }
            embed.insert("footer".into(), json!({"text": "apidrift"}));
            json!({
                "content": truncate(&title, DISCORD_CONTENT_MAX),
                "embeds": [Value::Object(embed)],
                "allowed_mentions": {"parse": []},
            })
        }
        WebhookKind::Pagerduty => {
            let dedup_key = format!("{endpoint_id}:slow");
            if !slow {
                return Some(json!({
                    "routing_key": routing_key,
                    "event_action": "resolve",
                    "dedup_key": dedup_key,
                }));
            }
            let mut payload = json!({
                "summary": truncate(&format!("{title} ({line}): {detail}"), PAGERDUTY_SUMMARY_MAX),
                "source": truncate(&crate::redact::query_values(&s(&event["endpoint"]["url"])), 255),
                "severity": "warning",
                "component": truncate(&name, 255),
                "class": "api-latency",
                "custom_details": {
                    "endpointId": endpoint_id,
                    "responseTimeMs": ms,
                    "maxResponseTimeMs": max,
                    "slowAfter": after,
                },
            });
            if !created_at.is_empty()
                && let Value::Object(map) = &mut payload
            {
                map.insert("timestamp".into(), Value::String(created_at));
            }
            let mut body = json!({
                "routing_key": routing_key,
                "event_action": "trigger",
                "dedup_key": dedup_key,
                "client": "apidrift",
                "payload": payload,
            });
            if let (Some(link), Value::Object(map)) = (&link, &mut body) {
                map.insert(
                    "links".into(),
                    json!([{"href": link, "text": "The endpoint in apidrift"}]),
                );
                map.insert("client_url".into(), Value::String(link.clone()));
            }
            body
        }
    })
}

/// The bodies a "test" of a native channel sends, in order: a short message for Slack and
/// Discord; for PagerDuty an `info` trigger and its resolve (one dedup key per webhook), so the
/// test opens no lasting incident.
pub fn test_messages(kind: WebhookKind, webhook_id: &str, routing_key: &str) -> Vec<String> {
    let text = "apidrift test message: this channel will receive API drift alerts.";
    match kind {
        WebhookKind::Generic => Vec::new(),
        WebhookKind::Slack => vec![
            json!({
                "text": text,
                "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
            })
            .to_string(),
        ],
        WebhookKind::Discord => {
            vec![json!({"content": text, "allowed_mentions": {"parse": []}}).to_string()]
        }
        WebhookKind::Pagerduty => {
            let dedup = format!("apidrift-test-{webhook_id}");
            vec![
                json!({
                    "routing_key": routing_key,
                    "event_action": "trigger",
                    "dedup_key": dedup,
                    "client": "apidrift",
                    "payload": {"summary": text, "source": "apidrift", "severity": "info"},
                })
                .to_string(),
                json!({"routing_key": routing_key, "event_action": "resolve", "dedup_key": dedup})
                    .to_string(),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, changes: usize, long: bool) -> String {
        let name = if long {
            "n".repeat(5000)
        } else {
            "users <@everyone> & co".into()
        };
        let list: Vec<Value> = (0..changes)
            .map(|i| {
                json!({"id": i.to_string(), "path": format!("$.a{i}"), "type": "removed",
                       "severity": "breaking", "message": if long { "m".repeat(5000) } else { format!("field a{i} removed") }})
            })
            .collect();
        let diff = if kind == EVENT_RESOLVED && changes == 0 {
            Value::Null
        } else {
            json!({"id": "d1", "breakingCount": changes, "warningCount": 0, "infoCount": 1, "changeCount": changes + 1, "changes": list})
        };
        json!({"type": kind, "id": "e1", "createdAt": "2026-11-26T14:00:00.000Z", "workspaceId": "w",
               "endpoint": {"id": "ep-1", "name": name, "url": "http://127.0.0.1/u", "method": "GET"}, "diff": diff})
        .to_string()
    }

    fn latency_event(kind: &str) -> String {
        json!({"type": kind, "id": "e2", "createdAt": "2026-11-27T12:00:00.000Z", "workspaceId": "w",
               "endpoint": {"id": "ep-1", "name": "users <@everyone>", "url": "http://127.0.0.1/u?key=s3cret", "method": "GET"},
               "latency": {"responseTimeMs": 950, "maxResponseTimeMs": 500, "slowAfter": 3}})
        .to_string()
    }

    #[test]
    fn latency_events_render_per_channel_with_their_own_dedup_key() {
        let parse = |kind, event: &str| -> Value {
            render(kind, event, "rk", Some("https://drift.example.com"))
                .and_then(|b| serde_json::from_str(&b).ok())
                .unwrap_or(Value::Null)
        };
        let slow = latency_event(EVENT_SLOW);
        let fast = latency_event(EVENT_FAST);
        let pd = parse(WebhookKind::Pagerduty, &slow);
        assert_eq!(pd["event_action"], "trigger");
        assert_eq!(pd["dedup_key"], "ep-1:slow");
        assert_eq!(pd["payload"]["severity"], "warning");
        assert_eq!(pd["payload"]["custom_details"]["maxResponseTimeMs"], 500);
        let pd = parse(WebhookKind::Pagerduty, &fast);
        assert_eq!(
            (pd["event_action"].as_str(), pd["dedup_key"].as_str()),
            (Some("resolve"), Some("ep-1:slow"))
        );
        let sl = parse(WebhookKind::Slack, &slow);
        let text = sl["blocks"][1]["text"]["text"].as_str().unwrap_or_default();
        assert!(text.contains("3 checks in a row took longer than 500 ms (last: 950 ms)"));
        assert!(text.contains("&lt;@everyone&gt;") && !text.contains("s3cret"));
        assert_eq!(sl["text"], "Slow responses: users &lt;@everyone&gt;");
        let dc = parse(WebhookKind::Discord, &fast);
        assert_eq!(
            dc["embeds"][0]["title"],
            "Response time back to normal: users <@everyone>"
        );
        assert_eq!(dc["allowed_mentions"]["parse"], json!([]));
        assert!(render(WebhookKind::Generic, &slow, "", None).is_none());
    }

    fn chars(v: &Value) -> usize {
        v.as_str().map_or(0, |s| s.chars().count())
    }

    #[test]
    fn generic_is_not_rendered() {
        assert_eq!(
            render(
                WebhookKind::Generic,
                &event("drift.detected", 1, false),
                "k",
                None
            ),
            None
        );
        assert_eq!(render(WebhookKind::Slack, "[1]", "k", None), None);
    }

    #[test]
    fn slack_fits_the_limits_and_escapes() {
        for long in [false, true] {
            let body = render(
                WebhookKind::Slack,
                &event("drift.detected", 20, long),
                "k",
                Some("https://d.example/"),
            )
            .unwrap_or_default();
            let v: Value = serde_json::from_str(&body).unwrap_or_default();
            assert!(chars(&v["text"]) > 0 && chars(&v["text"]) <= SLACK_SECTION_MAX);
            let blocks = v["blocks"].as_array().cloned().unwrap_or_default();
            assert_eq!(blocks[0]["type"], "header");
            assert!(chars(&blocks[0]["text"]["text"]) <= SLACK_HEADER_MAX);
            for b in &blocks[1..] {
                assert!(chars(&b["text"]["text"]) <= SLACK_SECTION_MAX);
            }
            if !long {
                assert!(!body.contains("<@everyone>"), "{body}");
                assert!(
                    body.contains("https://d.example/console/diffs/d1"),
                    "{body}"
                );
            }
        }
    }

    #[test]
    fn discord_fits_the_limits() {
        for long in [false, true] {
            let body = render(
                WebhookKind::Discord,
                &event("drift.detected", 20, long),
                "k",
                None,
            )
            .unwrap_or_default();
            let v: Value = serde_json::from_str(&body).unwrap_or_default();
            assert!(chars(&v["content"]) <= DISCORD_CONTENT_MAX);
            assert_eq!(v["allowed_mentions"]["parse"], json!([]));
            let e = &v["embeds"][0];
            let mut total =
                chars(&e["title"]) + chars(&e["description"]) + chars(&e["footer"]["text"]);
            assert!(chars(&e["title"]) <= DISCORD_TITLE_MAX);
            for field in e["fields"].as_array().cloned().unwrap_or_default() {
                assert!(chars(&field["name"]) <= DISCORD_FIELD_NAME_MAX);
                assert!(chars(&field["value"]) <= DISCORD_FIELD_VALUE_MAX);
                total += chars(&field["name"]) + chars(&field["value"]);
            }
            assert!(total <= DISCORD_EMBED_TOTAL_MAX, "{total}");
        }
    }

    #[test]
    fn pagerduty_trigger_and_resolve_share_the_dedup_key() {
        let t = render(
            WebhookKind::Pagerduty,
            &event("drift.detected", 2, true),
            "R".repeat(32).as_str(),
            None,
        )
        .unwrap_or_default();
        let t: Value = serde_json::from_str(&t).unwrap_or_default();
        assert_eq!(t["event_action"], "trigger");
        assert_eq!(t["payload"]["severity"], "critical");
        assert!(chars(&t["payload"]["summary"]) <= PAGERDUTY_SUMMARY_MAX);
        let r = render(
            WebhookKind::Pagerduty,
            &event(EVENT_RESOLVED, 0, false),
            "R".repeat(32).as_str(),
            None,
        )
        .unwrap_or_default();
        let r: Value = serde_json::from_str(&r).unwrap_or_default();
        assert_eq!(r["event_action"], "resolve");
        assert_eq!(
            (t["dedup_key"].clone(), r["dedup_key"].clone()),
            (json!("ep-1"), json!("ep-1"))
        );
        assert_eq!(r["routing_key"], "R".repeat(32));
    }

    #[test]
    fn no_channel_message_carries_a_query_value_of_the_endpoint_url() {
        // An event as queued before query values were hidden at queueing time.
        let mut e: Value =
            serde_json::from_str(&event("drift.detected", 2, false)).unwrap_or_default();
        e["endpoint"]["url"] = json!("https://api.example.com/v1/x?api_key=QuErYkEy42&page=2");
        let payload = e.to_string();
        for kind in [
            WebhookKind::Slack,
            WebhookKind::Discord,
            WebhookKind::Pagerduty,
        ] {
            let body = render(kind, &payload, &"R".repeat(32), Some("https://d.example"))
                .unwrap_or_default();
            assert!(!body.contains("QuErYkEy42"), "{kind}: {body}");
            assert!(
                body.contains("https://api.example.com/v1/x?api_key=…&amp;page=…")
                    || body.contains("https://api.example.com/v1/x?api_key=…&page=…"),
                "{kind}: {body}"
            );
        }
        let pd: Value = serde_json::from_str(
            &render(WebhookKind::Pagerduty, &payload, &"R".repeat(32), None).unwrap_or_default(),
        )
        .unwrap_or_default();
        assert_eq!(
            pd["payload"]["source"],
            "https://api.example.com/v1/x?api_key=…&page=…"
        );
    }
}
