//! Webhooks: the outcome of an add (the generated signing secret, once), the add form with its
//! kind selector (generic signed webhook, Slack, Discord, PagerDuty), and the list with a link
//! to each webhook's delivery log (see [`super::deliveries`]) and remove buttons.

use super::layout::{Chrome, badge, csrf_field, page, time_text};
use apidrift_model::Severity;
use maud::{Markup, html};
use uuid::Uuid;

/// The webhooks page.
#[derive(Debug)]
pub struct Webhooks<'a> {
    pub notice: HookNotice<'a>,
    /// The form's values: `generic`, empty and `warning`, or what a refused add submitted
    /// (never a Slack or Discord URL: those are secrets).
    pub kind: &'a str,
    pub url: &'a str,
    pub min_severity: &'a str,
    pub rows: Vec<WebhookRow<'a>>,
}

/// What the last post did.
#[derive(Debug)]
pub enum HookNotice<'a> {
    None,
    /// Added with a generated secret: its only appearance.
    AddedWithSecret(&'a str),
    /// Added without a secret to show (supplied, a routing key, or a Slack/Discord URL); the
    /// webhook's kind.
    Added(&'a str),
    /// Refused, with the reason.
    Refused(&'a str),
}

/// A webhook as the list shows it (never its secret).
#[derive(Debug)]
pub struct WebhookRow<'a> {
    pub id: Uuid,
    pub kind: &'a str,
    pub url: &'a str,
    pub min_severity: &'a str,
    pub created_at: &'a str,
}

const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Breaking];

/// The kinds offered by the form: (value, label).
const KINDS: [(&str, &str); 4] = [
    ("generic", "Generic (signed JSON event)"),
    ("slack", "Slack incoming webhook"),
    ("discord", "Discord webhook"),
    ("pagerduty", "PagerDuty (Events API v2)"),
];

pub fn render(chrome: &Chrome, v: &Webhooks<'_>) -> Markup {
    page(
        "Webhooks",
        chrome,
        html! {
            h1 { "Webhooks" }
            p {
                "Alerts (" code { "drift.detected" } " and " code { "drift.resolved" }
                " events) go to these channels when a check finds changes at or above the minimum severity."
            }
            @match v.notice {
                HookNotice::None => {}
                HookNotice::AddedWithSecret(secret) => {
                    section class="flash" role="status" aria-labelledby="new-secret" {
                        h2 id="new-secret" { "Webhook added" }
                        p { strong { "Copy the signing secret now: it is shown only once and cannot be recovered." } }
                        p { code id="secret-value" class="token" { (secret) } }
                        button type="button" id="copy-secret" onclick="navigator.clipboard.writeText(document.getElementById('secret-value').textContent).then(function(){document.getElementById('copy-secret').textContent='Copied'})" { "Copy" }
                    }
                }
                HookNotice::Added(kind) => {
                    p class="flash" role="status" {
                        @match kind {
                            "slack" | "discord" => "Webhook added. Its URL is kept secret: the list shows it shortened.",
                            "pagerduty" => "Webhook added. The routing key is kept secret and is not shown again.",
                            _ => "Webhook added with the secret you supplied.",
                        }
                    }
                }
                HookNotice::Refused(reason) => {
                    p class="error" role="alert" id="webhook-error" { (reason) }
                }
            }
            h2 { "Add a webhook" }
            form method="post" action="/console/webhooks" {
                (csrf_field(&chrome.csrf))
                label for="kind" { "Kind" }
                select id="kind" name="kind" {
                    @for (value, label) in KINDS {
                        option value=(value) selected[value == v.kind] { (label) }
                    }
                }
                label for="url" { "URL" }
                input id="url" name="url" type="url" size="60" value=(v.url) aria-describedby="url-help";
                p id="url-help" class="hint" {
                    "Generic: any https URL. Slack: the incoming-webhook URL (https://hooks.slack.com/services/…). "
                    "Discord: the webhook URL (https://discord.com/api/webhooks/…). "
                    "PagerDuty: leave empty to use the Events API v2."
                }
                label for="min_severity" { "Minimum severity" }
                select id="min_severity" name="min_severity" {
                    @for sev in SEVERITIES {
                        option value=(sev.as_str()) selected[sev.as_str() == v.min_severity] { (sev.as_str()) }
                    }
                }
                label for="secret" { "Secret: generic signing secret (empty: generate one) or PagerDuty routing key; none for Slack and Discord" }
                input id="secret" name="secret" type="password" maxlength="256" autocomplete="off";
                p { button type="submit" { "Add webhook" } }
            }
            h2 { "Existing webhooks" }
            @if v.rows.is_empty() {
                p { "No webhooks yet." }
            } @else {
                table {
                    thead { tr {
                        th scope="col" { "Kind" }
                        th scope="col" { "URL" }
                        th scope="col" { "Minimum severity" }
                        th scope="col" { "Created" }
                        th scope="col" { span class="visually-hidden" { "Actions" } }
                    } }
                    tbody {
                        @for w in &v.rows {
                            tr {
                                td { (w.kind) }
                                td { code { (w.url) } }
                                td { (badge(w.min_severity)) }
                                td { (time_text(Some(w.created_at))) }
                                td {
                                    a href={ "/console/webhooks/" (w.id) } aria-label={ "Deliveries and test of " (w.url) } { "Deliveries and test" }
                                    " "
                                    form class="inline" method="post" action={ "/console/webhooks/" (w.id) "/remove" } {
                                        (csrf_field(&chrome.csrf))
                                        button class="danger" type="submit" aria-label={ "Remove " (w.url) } { "Remove" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped, chrome};
    use super::*;

    fn row(url: &str) -> WebhookRow<'_> {
        WebhookRow {
            id: Uuid::nil(),
            kind: "generic",
            url,
            min_severity: "info",
            created_at: "2026-01-02T03:04:05.000Z",
        }
    }

    #[test]
    fn webhook_urls_are_escaped_in_the_list_the_form_and_the_error() {
        let html = render(
            &chrome(),
            &Webhooks {
                notice: HookNotice::None,
                kind: "generic",
                url: "",
                min_severity: "warning",
                rows: vec![row(HOSTILE)],
            },
        )
        .into_string();
        assert!(html.contains("<td><code>&lt;script&gt;"));
        assert!(html.contains("aria-label=\"Remove &lt;script&gt;"));
        assert_escaped(&html);
        let html = render(
            &chrome(),
            &Webhooks {
                notice: HookNotice::Refused(HOSTILE),
                kind: HOSTILE,
                url: HOSTILE,
                min_severity: HOSTILE,
                rows: Vec::new(),
            },
        )
        .into_string();
        assert!(html.contains("id=\"webhook-error\">&lt;script&gt;"));
        assert!(html.contains("size=\"60\" value=\"&lt;script&gt;"));
        assert_escaped(&html);
    }

    #[test]
    fn notices_form_and_list() {
        let html = render(
            &chrome(),
            &Webhooks {
                notice: HookNotice::AddedWithSecret("whsec_x"),
                kind: "generic",
                url: "",
                min_severity: "warning",
                rows: vec![row("https://h.example/a")],
            },
        )
        .into_string();
        assert!(html.contains("<code id=\"secret-value\" class=\"token\">whsec_x</code>"));
        assert!(html.contains("<option value=\"warning\" selected>warning</option>"));
        assert!(html.contains("<option value=\"info\">info</option>"));
        let created = time_text(Some("2026-01-02T03:04:05.000Z")).into_string();
        assert!(created.starts_with("<time datetime=\"2026-01-02T03:04:05.000Z\""));
        assert!(html.contains(&format!(
            "<tr><td>generic</td><td><code>https://h.example/a</code></td><td><span class=\"badge info\">info</span></td>\
             <td>{created}</td><td><a href=\"/console/webhooks/00000000-0000-0000-0000-000000000000\" \
             aria-label=\"Deliveries and test of https://h.example/a\">Deliveries and test</a> \
             <form class=\"inline\" method=\"post\" \
             action=\"/console/webhooks/00000000-0000-0000-0000-000000000000/remove\">"
        )));
        assert!(!html.contains("No webhooks yet."));
        let html = render(
            &chrome(),
            &Webhooks {
                notice: HookNotice::Added("generic"),
                kind: "pagerduty",
                url: "",
                min_severity: "breaking",
                rows: Vec::new(),
            },
        )
        .into_string();
        assert!(html.contains("with the secret you supplied"));
        assert!(!html.contains("secret-value"));
        assert!(html.contains("<option value=\"breaking\" selected>"));
        assert!(
            html.contains(
                "<option value=\"pagerduty\" selected>PagerDuty (Events API v2)</option>"
            )
        );
        assert!(html.contains("<option value=\"slack\">Slack incoming webhook</option>"));
        assert!(html.contains("No webhooks yet."));
    }
}
