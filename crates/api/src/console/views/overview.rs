//! The overview, the landing page after login: the workspace's endpoints by health, the newest
//! drifts, the endpoints whose last fetch failed and the next scheduled runs.

use super::layout::{Chrome, badge, page, time};
use apidrift_model::{DiffSummary, Health};
use maud::{Markup, html};
use time::OffsetDateTime;
use uuid::Uuid;

/// The overview page.
#[derive(Debug)]
pub struct OverviewPage<'a> {
    /// How many endpoints have each health (every health, 0 included).
    pub by_health: Vec<(Health, u64)>,
    pub total: u64,
    /// The newest drifts, newest first.
    pub drifts: &'a [DiffSummary],
    /// Endpoints whose latest check failed to fetch: id, name, error kind, when.
    pub failing: Vec<(Uuid, &'a str, &'a str, OffsetDateTime)>,
    /// The next scheduled runs: id, name, when.
    pub next_runs: Vec<(Uuid, &'a str, OffsetDateTime)>,
    /// Whether the visitor may add endpoints (the links of an empty workspace).
    pub can_add: bool,
}

/// The severity a drift is shown with: its most severe change.
fn severity(d: &DiffSummary) -> &'static str {
    if d.breaking_count > 0 {
        "breaking"
    } else if d.warning_count > 0 {
        "warning"
    } else {
        "info"
    }
}

pub fn render(chrome: &Chrome, v: &OverviewPage<'_>) -> Markup {
    page(
        "Overview",
        chrome,
        html! {
            h1 { "Overview" }
            section aria-labelledby="health-heading" {
                h2 id="health-heading" { "Endpoints by health" }
                @if v.total == 0 {
                    p id="no-endpoints" {
                        "No endpoints yet."
                        @if v.can_add {
                            " " a href="/console/endpoints/new" { "Add endpoint" }
                            " or " a href="/console/import" { "import an OpenAPI document" } "."
                        }
                    }
                } @else {
                    ul id="health-counts" {
                        @for (h, n) in &v.by_health {
                            li {
                                a href={ "/console/endpoints?health=" (h.as_str()) } {
                                    (badge(h.as_str())) " " (n)
                                }
                            }
                        }
                    }
                    p { (v.total) " endpoint(s) in all. " a href="/console/endpoints" { "All endpoints" } }
                }
            }
            section aria-labelledby="drifts-heading" {
                h2 id="drifts-heading" { "Newest drifts" }
                @if v.drifts.is_empty() {
                    p { "No drift detected yet." }
                } @else {
                    table id="newest-drifts" {
                        thead { tr {
                            th scope="col" { "Endpoint" }
                            th scope="col" { "Severity" }
                            th scope="col" { "Changes" }
                            th scope="col" { "When" }
                        } }
                        tbody {
                            @for d in v.drifts {
                                tr {
                                    td {
                                        @let name = d.endpoint_name.as_deref().unwrap_or("(deleted endpoint)");
                                        @match d.endpoint_id {
                                            Some(id) => a href={ "/console/endpoints/" (id) } { (name) },
                                            None => (name),
                                        }
                                    }
                                    td { (badge(severity(d))) }
                                    td { (d.breaking_count) " breaking, " (d.warning_count) " warnings, " (d.info_count) " info" }
                                    td class="nowrap" { a href={ "/console/diffs/" (d.id) } { (time(d.created_at)) } }
                                }
                            }
                        }
                    }
                }
            }
            section aria-labelledby="failing-heading" {
                h2 id="failing-heading" { "Failed their last fetch" }
                @if v.failing.is_empty() {
                    p { "None: every checked endpoint answered its last check." }
                } @else {
                    table id="failing" {
                        thead { tr {
                            th scope="col" { "Endpoint" }
                            th scope="col" { "Error" }
                            th scope="col" { "When" }
                        } }
                        tbody {
                            @for (id, name, kind, at) in &v.failing {
                                tr {
                                    td { a href={ "/console/endpoints/" (id) } { (name) } }
                                    td { code { (kind) } }
                                    td class="nowrap" { (time(Some(*at))) }
                                }
                            }
                        }
                    }
                }
            }
            section aria-labelledby="runs-heading" {
                h2 id="runs-heading" { "Next scheduled runs" }
                @if v.next_runs.is_empty() {
                    p { "No scheduled runs: give an endpoint a schedule on its edit page." }
                } @else {
                    table id="next-runs" {
                        thead { tr {
                            th scope="col" { "Endpoint" }
                            th scope="col" { "Next run" }
                        } }
                        tbody {
                            @for (id, name, at) in &v.next_runs {
                                tr {
                                    td { a href={ "/console/endpoints/" (id) } { (name) } }
                                    td class="nowrap" { (time(Some(*at))) }
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

    fn drift(name: Option<&str>, breaking: u32, warning: u32) -> DiffSummary {
        DiffSummary {
            id: Uuid::nil(),
            endpoint_id: Some(Uuid::max()),
            endpoint_name: name.map(str::to_owned),
            created_at: Some(OffsetDateTime::now_utc() - time::Duration::minutes(3)),
            accepted: false,
            breaking_count: breaking,
            warning_count: warning,
            info_count: 1,
            change_count: breaking + warning + 1,
            first_seen_at: None,
            last_seen_at: None,
            seen_count: 1,
        }
    }

    #[test]
    fn counts_drifts_failures_and_runs() {
        let drifts = [drift(Some("orders"), 2, 0), drift(None, 0, 1)];
        let soon =
            OffsetDateTime::now_utc() + time::Duration::minutes(12) + time::Duration::seconds(30);
        let v = OverviewPage {
            by_health: vec![(Health::Healthy, 3), (Health::Breaking, 1)],
            total: 4,
            drifts: &drifts,
            failing: vec![(Uuid::nil(), "users", "timeout", OffsetDateTime::now_utc())],
            next_runs: vec![(Uuid::nil(), "users", soon)],
            can_add: true,
        };
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains(
            "<li><a href=\"/console/endpoints?health=breaking\"><span class=\"badge breaking\">breaking</span> 1</a></li>"
        ));
        assert!(html.contains("4 endpoint(s) in all."));
        assert!(html.contains(
            "<td><a href=\"/console/endpoints/ffffffff-ffff-ffff-ffff-ffffffffffff\">orders</a></td>\
             <td><span class=\"badge breaking\">breaking</span></td><td>2 breaking, 0 warnings, 1 info</td>"
        ), "{html}");
        assert!(html.contains(">3 min ago</time></a></td>"));
        assert!(html.contains(
            "(deleted endpoint)</a></td><td><span class=\"badge warning\">warning</span>"
        ));
        assert!(html.contains("<td><code>timeout</code></td>"));
        assert!(html.contains(">in 12 min</time></td>"));
        assert!(!html.contains("no-endpoints"));
    }

    #[test]
    fn an_empty_workspace_says_how_to_start_and_names_are_escaped() {
        let v = OverviewPage {
            by_health: Vec::new(),
            total: 0,
            drifts: &[],
            failing: Vec::new(),
            next_runs: Vec::new(),
            can_add: true,
        };
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains("<p id=\"no-endpoints\">No endpoints yet. <a href=\"/console/endpoints/new\">Add endpoint</a>"));
        assert!(html.contains("No drift detected yet."));
        assert!(html.contains("No scheduled runs"));
        let drifts = [drift(Some(HOSTILE), 1, 0)];
        let v = OverviewPage {
            by_health: vec![(Health::Unknown, 1)],
            total: 1,
            drifts: &drifts,
            failing: vec![(Uuid::nil(), HOSTILE, HOSTILE, OffsetDateTime::now_utc())],
            next_runs: vec![(Uuid::nil(), HOSTILE, OffsetDateTime::now_utc())],
            can_add: false,
        };
        assert_escaped(&render(&chrome(), &v).into_string());
    }
}
