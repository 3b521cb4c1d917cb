//! One webhook's delivery log: the webhook (kind, URL as listed, minimum severity), the **Send
//! test** button and what the last test got, and its deliveries newest first with their last
//! attempt and state, paged. Never a payload, a secret, a signature or a Slack/Discord URL: the
//! view model holds none of them.

use super::layout::{Chrome, badge, csrf_field, page, time_text};
use maud::{Markup, html};
use uuid::Uuid;

/// The delivery log page.
#[derive(Debug)]
pub struct DeliveryLog<'a> {
    pub id: Uuid,
    pub kind: &'a str,
    /// The URL as the webhook list shows it (a Slack or Discord URL redacted).
    pub url: &'a str,
    pub min_severity: &'a str,
    pub created_at: &'a str,
    /// What the test just sent got, when the page answers a **Send test**.
    pub test: Option<TestOutcome<'a>>,
    /// How many deliveries the webhook has, on every page.
    pub total: u64,
    pub rows: Vec<DeliveryRow<'a>>,
    /// The offsets of the newer and the older page, when there is one.
    pub previous: Option<u64>,
    pub next: Option<u64>,
}

/// What a test delivery got.
#[derive(Debug)]
pub enum TestOutcome<'a> {
    /// The receiver answered 2xx (its status).
    Delivered(Option<u16>),
    /// It did not: the receiver's status when it answered (then the error only repeats it), else
    /// why not (e.g. `connect_refused: …`).
    Failed { status: Option<u16>, error: &'a str },
}

/// One delivery as the log shows it.
#[derive(Debug)]
pub struct DeliveryRow<'a> {
    pub event: &'a str,
    pub endpoint_id: Uuid,
    /// The endpoint's name, when it still exists.
    pub endpoint_name: Option<&'a str>,
    pub diff_id: Option<Uuid>,
    pub created_at: &'a str,
    pub attempts: u32,
    pub last_attempt_at: Option<&'a str>,
    pub last_status: Option<u16>,
    pub last_error: Option<&'a str>,
    /// `pending`, `delivered` or `failed`.
    pub state: &'a str,
}

pub fn render(chrome: &Chrome, v: &DeliveryLog<'_>) -> Markup {
    let base = format!("/console/webhooks/{}", v.id);
    page(
        "Webhook deliveries",
        chrome,
        html! {
            p { a href="/console/webhooks" { "← Webhooks" } }
            h1 { "Deliveries of a webhook" }
            dl {
                dt { "Kind" } dd { (v.kind) }
                dt { "URL" } dd { code id="webhook-url" { (v.url) } }
                dt { "Minimum severity" } dd { (badge(v.min_severity)) }
                dt { "Created" } dd { (time_text(Some(v.created_at))) }
            }
            @match &v.test {
                None => {}
                Some(TestOutcome::Delivered(status)) => {
                    p class="flash" role="status" id="test-outcome" {
                        "Test delivered: the receiver answered "
                        @match status { Some(s) => { "HTTP " (s) }, None => "2xx" }
                        "."
                    }
                }
                Some(TestOutcome::Failed { status, error }) => {
                    p class="error" role="alert" id="test-outcome" {
                        @match status {
                            Some(s) => { "Test failed: the receiver answered HTTP " (s) "." },
                            None => { "Test failed: " (error) },
                        }
                    }
                }
            }
            form method="post" action={ (base) "/test" } {
                (csrf_field(&chrome.csrf))
                button type="submit" id="send-test" { "Send test" }
                " "
                span class="hint" {
                    "Sends one test event now (a signed " code { "ping" } " for a generic webhook) and \
                     shows what the receiver answered. It is not queued, retried or listed below."
                }
            }
            h2 { "Deliveries" }
            @if v.rows.is_empty() {
                p id="no-deliveries" {
                    "No deliveries yet. One is queued here when a check finds a new drift (its set of \
                     changes differs from the drift already alerted for that endpoint) with a change of \
                     severity " strong { (v.min_severity) } " or worse, and when a later check finds no \
                     change after a drift this webhook was sent (" code { "drift.resolved" } "). A check \
                     that sees the same drift again queues nothing, and " em { "Send test" } " is not queued."
                }
            } @else {
                p { (v.total) " deliver" @if v.total == 1 { "y" } @else { "ies" } ", newest first" }
                table id="deliveries" {
                    thead { tr {
                        th scope="col" { "Event" }
                        th scope="col" { "Endpoint" }
                        th scope="col" { "Diff" }
                        th scope="col" { "Created" }
                        th scope="col" { "Attempts" }
                        th scope="col" { "Last attempt" }
                        th scope="col" { "Last status" }
                        th scope="col" { "Last error" }
                        th scope="col" { "State" }
                    } }
                    tbody {
                        @for d in &v.rows {
                            tr {
                                td { code { (d.event) } }
                                td {
                                    a href={ "/console/endpoints/" (d.endpoint_id) } {
                                        @match d.endpoint_name { Some(n) => (n), None => "endpoint" }
                                    }
                                }
                                td {
                                    @match d.diff_id {
                                        Some(id) => a href={ "/console/diffs/" (id) } { "view diff" },
                                        None => "—",
                                    }
                                }
                                td { (time_text(Some(d.created_at))) }
                                td { (d.attempts) }
                                td { (time_text(d.last_attempt_at)) }
                                td {
                                    @match d.last_status { Some(s) => (s), None => "—" }
                                }
                                td { (d.last_error.unwrap_or("—")) }
                                td { (badge(d.state)) }
                            }
                        }
                    }
                }
                nav aria-label="Delivery pages" {
                    @if let Some(p) = v.previous {
                        a href={ (base) "?offset=" (p) } { "Newer deliveries" }
                        " "
                    }
                    @if let Some(n) = v.next {
                        a href={ (base) "?offset=" (n) } { "Older deliveries" }
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

    fn row(state: &'static str, error: Option<&'static str>) -> DeliveryRow<'static> {
        DeliveryRow {
            event: "drift.detected",
            endpoint_id: Uuid::nil(),
            endpoint_name: Some("orders"),
            diff_id: Some(Uuid::nil()),
            created_at: "2026-01-02T03:04:05.000Z",
            attempts: 2,
            last_attempt_at: Some("2026-01-02T03:04:06.000Z"),
            last_status: Some(500),
            last_error: error,
            state,
        }
    }

    fn log(rows: Vec<DeliveryRow<'static>>) -> DeliveryLog<'static> {
        DeliveryLog {
            id: Uuid::nil(),
            kind: "generic",
            url: "https://h.example/hook",
            min_severity: "warning",
            created_at: "2026-01-01T00:00:00.000Z",
            test: None,
            total: 60,
            rows,
            previous: Some(0),
            next: Some(50),
        }
    }

    #[test]
    fn hostile_values_are_escaped_everywhere() {
        let mut v = log(vec![DeliveryRow {
            event: HOSTILE,
            endpoint_name: Some(HOSTILE),
            ..row("failed", Some(HOSTILE))
        }]);
        v.url = HOSTILE;
        v.kind = HOSTILE;
        let html = render(&chrome(), &v).into_string();
        assert_escaped(&html);
        assert!(html.contains("<code id=\"webhook-url\">&lt;script&gt;"));
        v.rows.clear();
        v.test = Some(TestOutcome::Failed {
            status: None,
            error: HOSTILE,
        });
        let html = render(&chrome(), &v).into_string();
        assert_escaped(&html);
        assert!(html.contains("id=\"test-outcome\">Test failed: &lt;script&gt;"));
    }

    #[test]
    fn rows_states_outcomes_and_pages() {
        let mut v = log(vec![
            row("failed", Some("HTTP 500")),
            row("delivered", None),
        ]);
        v.test = Some(TestOutcome::Delivered(Some(204)));
        let html = render(&chrome(), &v).into_string();
        let nil = Uuid::nil();
        let (created, last) = (
            time_text(Some("2026-01-02T03:04:05.000Z")).into_string(),
            time_text(Some("2026-01-02T03:04:06.000Z")).into_string(),
        );
        assert!(created.starts_with("<time datetime=\"2026-01-02T03:04:05.000Z\""));
        assert!(html.contains(&format!(
            "<td><code>drift.detected</code></td><td><a href=\"/console/endpoints/{nil}\">orders</a></td>\
             <td><a href=\"/console/diffs/{nil}\">view diff</a></td><td>{created}</td>\
             <td>2</td><td>{last}</td><td>500</td><td>HTTP 500</td>\
             <td><span class=\"badge failed\">failed</span></td>"
        )), "{html}");
        assert!(
            html.contains("<td>—</td><td><span class=\"badge delivered\">delivered</span></td>")
        );
        assert!(html.contains("Test delivered: the receiver answered HTTP 204."));
        assert!(html.contains(&format!("action=\"/console/webhooks/{nil}/test\"")));
        assert!(html.contains("name=\"_csrf\" value=\"csrf-token\""));
        assert!(html.contains("<p>60 deliveries, newest first</p>"));
        assert!(html.contains(&format!(
            "<a href=\"/console/webhooks/{nil}?offset=0\">Newer deliveries</a> \
             <a href=\"/console/webhooks/{nil}?offset=50\">Older deliveries</a>"
        )));
        v.test = Some(TestOutcome::Failed {
            status: Some(500),
            error: "HTTP 500",
        });
        v.rows.clear();
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains(
            "role=\"alert\" id=\"test-outcome\">Test failed: the receiver answered HTTP 500.</p>"
        ));
        assert!(html.contains(&format!(
            "<p id=\"no-deliveries\">No deliveries yet. One is queued here when a check finds a new \
             drift (its set of changes differs from the drift already alerted for that endpoint) with \
             a change of severity <strong>{}</strong> or worse, and when a later check finds no change \
             after a drift this webhook was sent (<code>drift.resolved</code>). A check that sees the \
             same drift again queues nothing, and <em>Send test</em> is not queued.</p>",
            v.min_severity
        )));
        assert!(!html.contains("Older deliveries"));
    }
}
