//! One endpoint: its details (never its credential), the capture-baseline and run-check
//! buttons, and its diff history.

use super::layout::{Chrome, badge, csrf_field, millis, page, time};
use apidrift_model::{DiffSummary, Health};
use maud::{Markup, html};
use time::OffsetDateTime;
use uuid::Uuid;

/// The endpoint page.
#[derive(Debug)]
pub struct EndpointDetail<'a> {
    pub id: Uuid,
    pub name: &'a str,
    pub health: Health,
    pub method: &'a str,
    pub url: &'a str,
    pub environment: &'a str,
    /// The authentication style only.
    pub auth_type: &'a str,
    pub diff_mode: &'a str,
    pub baseline_version: Option<u32>,
    /// The attached response contract: its operation and status.
    pub response_contract: Option<(&'a str, u16)>,
    pub last_checked_at: Option<OffsetDateTime>,
    /// Milliseconds, from the last check.
    pub response_time: Option<u32>,
    pub breaking_count: u32,
    pub warning_count: u32,
    /// The outcome of the action that led here (capture, check).
    pub flash: Option<&'a str>,
    /// Whether the visitor may capture baselines and run checks.
    pub can_act: bool,
    /// The latest diffs, newest first.
    pub history: &'a [DiffSummary],
}

pub fn render(chrome: &Chrome, v: &EndpointDetail<'_>) -> Markup {
    page(
        v.name,
        chrome,
        html! {
            h1 { (v.name) }
            @if let Some(m) = v.flash { p class="flash" role="status" { (m) } }
            dl {
                dt { "Health" } dd { (badge(v.health.as_str())) }
                dt { "Request" } dd { code { (v.method) " " (v.url) } }
                dt { "Environment" } dd { (v.environment) }
                dt { "Authentication" } dd { (v.auth_type) " (the credential is never shown)" }
                dt { "Diff mode" } dd { (v.diff_mode) }
                dt { "Baseline version" }
                dd {
                    @match v.baseline_version {
                        Some(version) => (version),
                        None => "none yet",
                    }
                }
                dt { "Response contract" }
                dd {
                    @match v.response_contract {
                        Some((operation, status)) => { (operation) " (" (status) ")" }
                        None => "none",
                    }
                }
                dt { "Last checked" } dd { (time(v.last_checked_at)) }
                dt { "Response time" } dd { (millis(v.response_time)) }
                dt { "Latest check" }
                dd { (v.breaking_count) " breaking, " (v.warning_count) " warnings" }
            }
            @if v.can_act {
                form class="inline" method="post" action={ "/console/endpoints/" (v.id) "/baseline" } {
                    (csrf_field(&chrome.csrf))
                    button type="submit" { "Capture baseline" }
                }
                " "
                form class="inline" method="post" action={ "/console/endpoints/" (v.id) "/check" } {
                    (csrf_field(&chrome.csrf))
                    button type="submit" { "Run check" }
                }
            } @else {
                p { "Your role (viewer) can read but not capture baselines or run checks." }
            }
            h2 { "Diff history" }
            @if v.history.is_empty() {
                p { "No diffs yet." }
            } @else {
                table {
                    thead { tr {
                        th scope="col" { "Created" }
                        th scope="col" { "Breaking" }
                        th scope="col" { "Warnings" }
                        th scope="col" { "Info" }
                        th scope="col" { "Accepted" }
                    } }
                    tbody {
                        @for d in v.history {
                            tr {
                                td { a href={ "/console/diffs/" (d.id) } { (time(d.created_at)) } }
                                td { (d.breaking_count) }
                                td { (d.warning_count) }
                                td { (d.info_count) }
                                td { @if d.accepted { "yes" } @else { "no" } }
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

    fn detail<'a>(name: &'a str, url: &'a str, history: &'a [DiffSummary]) -> EndpointDetail<'a> {
        EndpointDetail {
            id: Uuid::nil(),
            name,
            health: Health::Healthy,
            method: "GET",
            url,
            environment: "production",
            auth_type: "bearer",
            diff_mode: "schema",
            baseline_version: Some(3),
            response_contract: Some(("GET /items", 200)),
            last_checked_at: None,
            response_time: None,
            breaking_count: 0,
            warning_count: 1,
            flash: None,
            can_act: true,
            history,
        }
    }

    #[test]
    fn the_name_url_and_flash_are_escaped() {
        let html = render(&chrome(), &detail(HOSTILE, "https://a.example/", &[])).into_string();
        assert!(html.contains("<h1>&lt;script&gt;"));
        assert!(html.contains("<title>&lt;script&gt;"));
        assert_escaped(&html);
        assert_escaped(&render(&chrome(), &detail("a", HOSTILE, &[])).into_string());
        let mut v = detail("a", "https://a.example/", &[]);
        v.flash = Some(HOSTILE);
        assert_escaped(&render(&chrome(), &v).into_string());
    }

    #[test]
    fn buttons_for_members_and_a_note_for_viewers() {
        let history = [DiffSummary {
            id: Uuid::nil(),
            endpoint_id: None,
            endpoint_name: None,
            created_at: None,
            accepted: false,
            breaking_count: 1,
            warning_count: 2,
            info_count: 3,
            change_count: 6,
        }];
        let mut v = detail("a", "https://a.example/", &history);
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains(
            "<form class=\"inline\" method=\"post\" action=\"/console/endpoints/00000000-0000-0000-0000-000000000000/baseline\">\
             <input type=\"hidden\" name=\"_csrf\" value=\"csrf-token\"><button type=\"submit\">Capture baseline</button></form> "
        ));
        assert!(html.contains("Run check</button>"));
        assert!(html.contains("<dd>3</dd>"));
        assert!(html.contains("<dd>GET /items (200)</dd>"));
        assert!(html.contains("<dd>bearer (the credential is never shown)</dd>"));
        assert!(html.contains(
            "<td><a href=\"/console/diffs/00000000-0000-0000-0000-000000000000\">—</a></td>\
             <td>1</td><td>2</td><td>3</td><td>no</td>"
        ));
        v.can_act = false;
        v.baseline_version = None;
        v.response_contract = None;
        v.history = &[];
        let html = render(&chrome(), &v).into_string();
        assert!(!html.contains("Run check</button>"));
        assert!(html.contains("Your role (viewer) can read"));
        assert!(html.contains("<dd>none yet</dd>"));
        assert!(html.contains("<dd>none</dd>"));
        assert!(html.contains("<p>No diffs yet.</p>"));
    }
}
