//! What a URL may show. A URL can carry a secret in its query (`?api_key=…`, Google Chat's
//! `key` and `token`, a Power Automate workflow's `sig`) or, for a webhook, in its path (Slack's
//! `/services/T…/B…/<secret>`, Discord's `/api/webhooks/<id>/<token>`, Mattermost's
//! `/hooks/<key>`, …). One implementation serves every place that shows one: the alert
//! messages of every channel kind, the console, and the webhook answers of the API.
//!
//! * [`query_values`]: every query value replaced by `…`, names kept, no fragment — an endpoint's
//!   URL as an alert message or a console page shows it.
//! * [`webhook_url`]: a webhook's URL as it is stored and shown — [`query_values`] plus the
//!   secret path segments of every known channel URL form replaced by `…`. A URL whose shown
//!   form differs from it holds a secret, and is sealed ([`holds_secret`]).

use apidrift_store::WebhookKind;
use url::{Position, Url};

/// What replaces a hidden value or path segment.
pub const HIDDEN: &str = "…";

/// [`HIDDEN`] as a parsed URL holds it.
const HIDDEN_ENCODED: &str = "%E2%80%A6";

/// `query` with every value replaced by [`HIDDEN`]: `a=1&b` → `a=…&…` (a part without `=` may be
/// the secret itself, so it is hidden whole; an empty value stays empty).
fn hide_query(query: &str) -> String {
    query
        .split('&')
        .map(|part| match part.split_once('=') {
            Some((name, "")) => format!("{name}="),
            Some((name, _)) => format!("{name}={HIDDEN}"),
            None if part.is_empty() => String::new(),
            None => HIDDEN.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// `url` (an absolute URL as text) with every query value replaced by `…` (names kept) and
/// without its fragment: `https://api.example.com/v1/x?api_key=SECRET&page=2` →
/// `https://api.example.com/v1/x?api_key=…&page=…`. The rest of the text is kept as is.
pub fn query_values(url: &str) -> String {
    let url = url.split_once('#').map_or(url, |(before, _)| before);
    match url.split_once('?') {
        Some((before, query)) => format!("{before}?{}", hide_query(query)),
        None => url.to_owned(),
    }
}

/// Whether path segment `seg` is `v` followed by digits (an API version, as in Discord's
/// `/api/v10/webhooks/…`).
fn is_version(seg: &str) -> bool {
    seg.len() > 1 && seg.starts_with('v') && seg[1..].bytes().all(|b| b.is_ascii_digit())
}

/// Whether path segment `seg` looks like a generated key: at least 16 letters, digits, `-` or
/// `_` (Mattermost's keys are 26, Rocket.Chat's ids 17 and tokens 48).
fn key_like(seg: &str) -> bool {
    seg.len() >= 16
        && seg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Which path segments of a webhook URL on `host` hold its secret, by the URL forms of the
/// known channels.
fn secret_segments(host: &str, segs: &[&str]) -> Vec<bool> {
    let lower: Vec<String> = segs.iter().map(|s| s.to_ascii_lowercase()).collect();
    let mut hidden = vec![false; segs.len()];
    let hide_after = |hidden: &mut [bool], at: usize| {
        for h in hidden.iter_mut().skip(at + 1) {
            *h = true;
        }
    };
    for i in 0..segs.len() {
        match lower[i].as_str() {
            // Discord (any host: discord.com, discordapp.com, ptb./canary.): `/api[/vN]/webhooks
            // /{id}/{token}`, optionally `/slack` or `/github` (their Slack- and GitHub-compatible
            // forms); the id and the suffix are no secret, the token and anything else after is.
            "webhooks"
                if i >= 1
                    && (lower[i - 1] == "api"
                        || (i >= 2 && lower[i - 2] == "api" && is_version(&lower[i - 1])))
                    && segs.len() > i + 2 =>
            {
                for (j, h) in hidden.iter_mut().enumerate().skip(i + 2) {
                    *h = j == i + 2 || !matches!(lower[j].as_str(), "slack" | "github");
                }
                break;
            }
            // Webex: `/v1/webhooks/incoming/{token}`.
            "incoming" if i >= 1 && lower[i - 1] == "webhooks" => {
                hide_after(&mut hidden, i);
                break;
            }
            // Zapier `hooks.zapier.com/hooks/catch/{id}/{secret}/`: everything after `hooks`.
            "hooks" if host == "hooks.zapier.com" => {
                hide_after(&mut hidden, i);
                break;
            }
            // Mattermost `/hooks/{key}`, Rocket.Chat `/hooks/{id}/{token}` (any host): the
            // key-like segments after `hooks` (a receiver's own `/hooks/alerts` stays).
            "hooks" => {
                for (j, h) in hidden.iter_mut().enumerate().skip(i + 1) {
                    *h = key_like(segs[j]);
                }
                break;
            }
            // Microsoft Teams connectors: `…webhook.office.com/webhookb2/{guid}@{guid}/
            // IncomingWebhook/{id}/{guid}`, and the older `outlook.office.com/webhook/…`.
            "webhookb2" => {
                hide_after(&mut hidden, i);
                break;
            }
            "webhook" if host.ends_with(".office.com") || host.ends_with(".office365.com") => {
                hide_after(&mut hidden, i);
                break;
            }
            // IFTTT Webhooks: `/trigger/{event}/with/key/{key}`.
            "key" if i >= 1 && lower[i - 1] == "with" && i + 1 < segs.len() => {
                hidden[i + 1] = true;
            }
            // Telegram: `/bot{id}:{token}/sendMessage`.
            s if s.starts_with("bot") && s.contains(':') => hidden[i] = true,
            _ => {}
        }
    }
    // Slack: `hooks.slack.com/services/T…/B…/{secret}` (also `/workflows/…` and `/triggers/…`):
    // the last segment.
    if (host == "hooks.slack.com" || host.ends_with(".hooks.slack.com"))
        && let Some(last) = segs.iter().rposition(|s| !s.is_empty())
    {
        hidden[last] = true;
    }
    hidden
}

/// The form of webhook URL `url` that may be stored in clear and shown: origin, path with the
/// secret segments of a known channel URL form replaced by `…`, query values replaced by `…`
/// (names kept), no fragment. The URL of a `slack` or `discord` webhook is a secret whatever its
/// form: when no known form hides a segment, its last segment is hidden.
pub fn webhook_url(kind: WebhookKind, url: &Url) -> String {
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let path = url.path().strip_prefix('/').unwrap_or(url.path());
    let segs: Vec<&str> = path.split('/').collect();
    let mut hidden = secret_segments(&host, &segs);
    // A segment hidden before (a stored redacted form, parsed again) stays hidden.
    for (h, seg) in hidden.iter_mut().zip(&segs) {
        *h |= *seg == HIDDEN_ENCODED;
    }
    if matches!(kind, WebhookKind::Slack | WebhookKind::Discord) && !hidden.contains(&true) {
        match segs.iter().rposition(|s| !s.is_empty()) {
            Some(last) => hidden[last] = true,
            None => hidden = vec![true],
        }
    }
    // Scheme, host and port; never user information.
    let mut out = format!(
        "{}://{}",
        url.scheme(),
        &url[Position::BeforeHost..Position::AfterPort]
    );
    for (seg, hide) in segs.iter().zip(&hidden) {
        out.push('/');
        out.push_str(if *hide { HIDDEN } else { seg });
    }
    if let Some(query) = url.query() {
        out.push('?');
        out.push_str(&hide_query(query));
    }
    out
}

/// [`webhook_url`] of a URL stored as text (an older row may hold a form that was not redacted
/// when it was created): the text when it does not parse, with its query values hidden.
pub fn webhook_text(kind: WebhookKind, url: &str) -> String {
    match Url::parse(url) {
        Ok(parsed) => webhook_url(kind, &parsed),
        Err(_) => query_values(url),
    }
}

/// Whether webhook URL `url` holds a secret: its shown form differs from it. Such a URL is sealed
/// and only its shown form is stored in clear.
pub fn holds_secret(kind: WebhookKind, url: &Url) -> bool {
    webhook_url(kind, url) != url.as_str()
}

/// Whether webhook URL `text`, as typed (it may not parse), would hold a secret: a form that
/// shows it again (a refused console form) leaves such a URL out.
pub fn text_holds_secret(kind: WebhookKind, text: &str) -> bool {
    match Url::parse(text.trim()) {
        Ok(url) => holds_secret(kind, &url),
        Err(_) => query_values(text) != text || text.contains("/hooks/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(kind: WebhookKind, text: &str) -> String {
        match Url::parse(text) {
            Ok(u) => webhook_url(kind, &u),
            Err(e) => format!("unparsable {text}: {e}"),
        }
    }

    fn generic(text: &str) -> String {
        shown(WebhookKind::Generic, text)
    }

    #[test]
    fn query_values_are_hidden_names_kept() {
        assert_eq!(
            query_values("https://api.example.com/v1/x?api_key=SECRET&page=2#frag"),
            "https://api.example.com/v1/x?api_key=…&page=…"
        );
        assert_eq!(
            query_values("https://a.example/p?SECRET&x=&y=1"),
            "https://a.example/p?…&x=&y=…"
        );
        assert_eq!(
            query_values("http://127.0.0.1:9/users"),
            "http://127.0.0.1:9/users"
        );
        assert_eq!(query_values("https://a.example/?"), "https://a.example/?");
        // Hiding twice is hiding once.
        let once = query_values("https://a.example/p?k=v");
        assert_eq!(query_values(&once), once);
    }

    #[test]
    fn slack_urls_hide_the_secret() {
        for kind in [WebhookKind::Slack, WebhookKind::Generic] {
            assert_eq!(
                shown(kind, "https://hooks.slack.com/services/T0/B0/XXXXsecret"),
                "https://hooks.slack.com/services/T0/B0/…"
            );
            assert_eq!(
                shown(
                    kind,
                    "https://hooks.slack.com/workflows/T0/A0/123/XXXXsecret"
                ),
                "https://hooks.slack.com/workflows/T0/A0/123/…"
            );
        }
        let u = shown(
            WebhookKind::Slack,
            "https://hooks.slack.com/services/T0/B0/XXXXsecret?x=1",
        );
        assert_eq!(u, "https://hooks.slack.com/services/T0/B0/…?x=…");
    }

    #[test]
    fn discord_urls_hide_the_token_with_or_without_a_suffix() {
        for kind in [
            WebhookKind::Discord,
            WebhookKind::Slack,
            WebhookKind::Generic,
        ] {
            assert_eq!(
                shown(kind, "https://discord.com/api/webhooks/123/TOKEN"),
                "https://discord.com/api/webhooks/123/…"
            );
            assert_eq!(
                shown(kind, "https://discord.com/api/webhooks/123/TOKEN/slack"),
                "https://discord.com/api/webhooks/123/…/slack"
            );
            assert_eq!(
                shown(kind, "https://discordapp.com/api/webhooks/123/TOKEN/github"),
                "https://discordapp.com/api/webhooks/123/…/github"
            );
            assert_eq!(
                shown(
                    kind,
                    "https://ptb.discord.com/api/v10/webhooks/123/TOKEN?wait=true&thread_id=9"
                ),
                "https://ptb.discord.com/api/v10/webhooks/123/…?wait=…&thread_id=…"
            );
            // Anything else after the token is hidden too.
            assert_eq!(
                shown(kind, "https://discord.com/api/webhooks/123/TOKEN/other"),
                "https://discord.com/api/webhooks/123/…/…"
            );
        }
    }

    #[test]
    fn other_channel_forms_hide_their_secret() {
        // Mattermost, Rocket.Chat, Zapier.
        assert_eq!(
            generic("https://chat.example.org/hooks/xkq3u9secretk8w1mz7d5p0q2ra"),
            "https://chat.example.org/hooks/…"
        );
        assert_eq!(
            generic(
                "https://rocket.example.org/hooks/aB3dE5gH7jK9mN1pQ/Rt6Yu8Io0Pa2Sd4Fg6Hj8Kl0Zx2Cv4Bn6"
            ),
            "https://rocket.example.org/hooks/…/…"
        );
        // A receiver's own short path under `hooks` is no key.
        assert_eq!(
            generic("https://receiver.example.org/hooks/alerts"),
            "https://receiver.example.org/hooks/alerts"
        );
        assert_eq!(
            generic("https://hooks.zapier.com/hooks/catch/123/abcSECRET/"),
            "https://hooks.zapier.com/hooks/…/…/…/…"
        );
        // Microsoft Teams connector and Power Automate workflow.
        assert_eq!(
            generic("https://contoso.webhook.office.com/webhookb2/g1@g2/IncomingWebhook/ID/g3"),
            "https://contoso.webhook.office.com/webhookb2/…/…/…/…"
        );
        assert_eq!(
            generic("https://outlook.office.com/webhook/g1@g2/IncomingWebhook/ID/g3"),
            "https://outlook.office.com/webhook/…/…/…/…"
        );
        assert_eq!(
            generic(
                "https://prod-01.westus.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers&sv=1.0&sig=SIGSECRET"
            ),
            "https://prod-01.westus.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?api-version=…&sp=…&sv=…&sig=…"
        );
        // Google Chat.
        assert_eq!(
            generic("https://chat.googleapis.com/v1/spaces/AAA/messages?key=KEY&token=TOK"),
            "https://chat.googleapis.com/v1/spaces/AAA/messages?key=…&token=…"
        );
        // Webex, IFTTT, Telegram.
        assert_eq!(
            generic("https://webexapis.com/v1/webhooks/incoming/TOKEN"),
            "https://webexapis.com/v1/webhooks/incoming/…"
        );
        assert_eq!(
            generic("https://maker.ifttt.com/trigger/drift/with/key/KEY"),
            "https://maker.ifttt.com/trigger/drift/with/key/…"
        );
        assert_eq!(
            generic("https://api.telegram.org/bot123:TOKEN/sendMessage"),
            "https://api.telegram.org/…/sendMessage"
        );
    }

    #[test]
    fn plain_urls_are_kept_and_hold_no_secret() -> Result<(), url::ParseError> {
        for text in [
            "https://receiver.example.com/apidrift",
            "http://127.0.0.1:9/hook",
            "https://receiver.example.com/",
            "https://events.pagerduty.com/v2/enqueue",
            "https://receiver.example.com/webhooks/apidrift",
        ] {
            let u = Url::parse(text)?;
            assert_eq!(webhook_url(WebhookKind::Generic, &u), u.as_str());
            assert!(!holds_secret(WebhookKind::Generic, &u), "{text}");
            assert!(!holds_secret(WebhookKind::Pagerduty, &u), "{text}");
        }
        let u = Url::parse("https://receiver.example.com/in?token=T")?;
        assert!(holds_secret(WebhookKind::Generic, &u));
        // A slack or discord URL is a secret whatever its form.
        assert_eq!(
            shown(WebhookKind::Slack, "http://127.0.0.1:9/secret"),
            "http://127.0.0.1:9/…"
        );
        assert_eq!(
            shown(WebhookKind::Discord, "http://127.0.0.1:9/"),
            "http://127.0.0.1:9/…"
        );
        assert!(holds_secret(
            WebhookKind::Slack,
            &Url::parse("http://127.0.0.1:9/s")?
        ));
        // As typed: a URL that does not parse still shows no query value.
        assert!(text_holds_secret(
            WebhookKind::Generic,
            "http://x y/?token=T"
        ));
        assert!(!text_holds_secret(
            WebhookKind::Generic,
            "https://a.example"
        ));
        assert!(text_holds_secret(
            WebhookKind::Generic,
            " https://a.example/?k=v"
        ));
        Ok(())
    }

    #[test]
    fn a_shown_form_shows_the_same_again() {
        for (kind, text) in [
            (
                WebhookKind::Slack,
                "https://discord.com/api/webhooks/1/T/slack",
            ),
            (WebhookKind::Slack, "http://127.0.0.1:9/services/T1/B1/x"),
            (
                WebhookKind::Generic,
                "https://chat.example.org/hooks/xkq3u9secretk8w1mz7d5?k=v&z",
            ),
            (
                WebhookKind::Generic,
                "https://hooks.zapier.com/hooks/catch/1/abc/",
            ),
            (
                WebhookKind::Generic,
                "https://contoso.webhook.office.com/webhookb2/a@b/IncomingWebhook/c/d",
            ),
            (WebhookKind::Discord, "https://discord.com/api/webhooks/1/T"),
        ] {
            let once = shown(kind, text);
            assert_eq!(webhook_text(kind, &once), once, "{text}");
        }
        // An older row stored before this redaction: its shown form hides the token.
        assert_eq!(
            webhook_text(
                WebhookKind::Slack,
                "https://discord.com/api/webhooks/1/TOKEN/…"
            ),
            "https://discord.com/api/webhooks/1/…/…"
        );
    }
}
