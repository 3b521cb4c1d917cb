//! The endpoints list: health and environment filters, one row per endpoint, pagination; for
//! admins and owners a checkbox per row and **Delete selected…**, which opens the confirmation
//! page naming them.

use super::layout::{Chrome, badge, millis, page, schedule, time};
use super::uptime::{sparkline, uptime_cell};
use crate::console::html::url_param;
use apidrift_model::Cadence;
use apidrift_model::Health;
use maud::{Markup, html};
use time::OffsetDateTime;
use uuid::Uuid;

/// One page of the list.
#[derive(Debug)]
pub struct EndpointList<'a> {
    /// The health filter, parsed.
    pub health: Option<Health>,
    /// The health filter as the query spelled it (kept in the pagination links).
    pub health_query: &'a str,
    /// The environment filter, empty for none.
    pub environment: &'a str,
    /// How many endpoints match the filters, on every page.
    pub total: u64,
    pub rows: Vec<EndpointRow<'a>>,
    /// The offsets of the previous and the next page, when there is one.
    pub previous: Option<u64>,
    pub next: Option<u64>,
    /// The outcome of the action that led here (e.g. "Deleted 3 endpoint(s).").
    pub flash: Option<&'a str>,
    /// Whether the user may delete endpoints (admin and above): the rows get checkboxes.
    pub can_delete: bool,
    /// Whether the user may add endpoints (member and above): the **Add endpoint** link.
    pub can_add: bool,
}

/// An endpoint as the list shows it.
#[derive(Debug)]
pub struct EndpointRow<'a> {
    pub id: Uuid,
    pub name: &'a str,
    pub health: Health,
    pub method: &'a str,
    pub url: &'a str,
    pub environment: &'a str,
    pub last_checked_at: Option<OffsetDateTime>,
    /// Milliseconds, from the last check.
    pub response_time: Option<u32>,
    pub breaking_count: u32,
    pub warning_count: u32,
    /// The uptime windows (D26).
    pub uptime: Option<apidrift_model::Uptime>,
    /// The last response times, oldest first (`None`: no response), for the sparkline.
    pub recent: Vec<Option<u32>>,
    pub schedule: Option<Cadence>,
    pub next_run_at: Option<OffsetDateTime>,
    pub paused: bool,
}

const HEALTHS: [Health; 5] = [
    Health::Healthy,
    Health::Warning,
    Health::Breaking,
    Health::Unknown,
    Health::Checking,
];

pub fn render(chrome: &Chrome, v: &EndpointList<'_>) -> Markup {
    let base = format!(
        "/console/endpoints?health={}&environment={}",
        url_param(v.health_query),
        url_param(v.environment)
    );
    let now = OffsetDateTime::now_utc();
    page(
        "Endpoints",
        chrome,
        html! {
            h1 { "Endpoints" }
            @if v.can_add { p { a href="/console/endpoints/new" id="add-endpoint" { "Add endpoint" } } }
            form method="get" action="/console/endpoints" aria-label="Filters" {
                label for="health" { "Health" }
                select id="health" name="health" {
                    option value="" { "any" }
                    @for h in HEALTHS {
                        option value=(h.as_str()) selected[Some(h) == v.health] { (h.as_str()) }
                    }
                }
                label for="environment" { "Environment" }
                input id="environment" name="environment" value=(v.environment);
                " "
                button type="submit" { "Filter" }
            }
            @if let Some(m) = v.flash { p class="flash" role="status" id="list-outcome" { (m) } }
            p { (v.total) " endpoint(s)" }
            form method="get" action="/console/endpoints/delete" id="select-endpoints" {
            table {
                thead { tr {
                    @if v.can_delete { th scope="col" { "Select" } }
                    th scope="col" { "Name" }
                    th scope="col" { "Health" }
                    th scope="col" { "Method and URL" }
                    th scope="col" { "Environment" }
                    th scope="col" { "Last checked" }
                    th scope="col" { "Uptime (24 h)" }
                    th scope="col" { "Schedule" }
                    th scope="col" { "Response time" }
                    th scope="col" { "Breaking / warnings" }
                } }
                tbody {
                    @for e in &v.rows {
                        tr {
                            @if v.can_delete {
                                td {
                                    input type="checkbox" name="id" value=(e.id)
                                        id={ "select-" (e.id) } aria-label={ "Select " (e.name) };
                                }
                            }
                            td { a href={ "/console/endpoints/" (e.id) } { (e.name) } }
                            td { (badge(e.health.as_str())) }
                            td { code { (e.method) " " (e.url) } }
                            td { (e.environment) }
                            td { (time(e.last_checked_at)) }
                            td { (uptime_cell(e.uptime.as_ref())) }
                            td class="nowrap" { (schedule(e.schedule, e.next_run_at, e.paused, now)) }
                            td { (millis(e.response_time)) (sparkline(&e.recent)) }
                            td { (e.breaking_count) " / " (e.warning_count) }
                        }
                    }
                }
            }
            @if v.can_delete && !v.rows.is_empty() {
                p { button type="submit" class="danger" id="delete-selected" { "Delete selected…" } }
            }
            }
            nav aria-label="Pages" {
                @if let Some(previous) = v.previous {
                    a href={ (base) "&offset=" (previous) } { "Previous page" }
                    " "
                }
                @if let Some(next) = v.next {
                    a href={ (base) "&offset=" (next) } { "Next page" }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped, chrome};
    use super::*;

    fn row(name: &'static str, url: &'static str) -> EndpointRow<'static> {
        EndpointRow {
            id: Uuid::nil(),
            name,
            health: Health::Unknown,
            method: "GET",
            url,
            environment: "production",
            last_checked_at: None,
            response_time: Some(40),
            breaking_count: 1,
            warning_count: 2,
            uptime: None,
            recent: Vec::new(),
            schedule: None,
            next_run_at: None,
            paused: false,
        }
    }

    fn list(rows: Vec<EndpointRow<'static>>) -> EndpointList<'static> {
        EndpointList {
            health: Some(Health::Warning),
            health_query: "warning",
            environment: "",
            total: 60,
            rows,
            previous: Some(0),
            next: Some(50),
            flash: None,
            can_delete: false,
            can_add: false,
        }
    }

    #[test]
    fn names_urls_and_filters_are_escaped() {
        for rows in [
            vec![row(HOSTILE, "https://a.example/")],
            vec![row("a", HOSTILE)],
        ] {
            assert_escaped(&render(&chrome(), &list(rows)).into_string());
        }
        let mut v = list(Vec::new());
        v.environment = HOSTILE;
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains("name=\"environment\" value=\"&lt;script&gt;"));
        assert_escaped(&html);
        // In the links the filter is percent-encoded, so nothing is left to escape.
        assert!(html.contains("environment=%3Cscript%3Ealert%281%29"));
    }

    #[test]
    fn admins_get_a_checkbox_per_row_and_the_flash_is_escaped() {
        let mut v = list(vec![row(HOSTILE, "https://a.example/")]);
        v.can_delete = true;
        v.flash = Some(HOSTILE);
        let html = render(&chrome(), &v).into_string();
        assert_escaped(&html);
        assert!(html.contains(
            "<form method=\"get\" action=\"/console/endpoints/delete\" id=\"select-endpoints\">"
        ));
        assert!(html.contains(
            "<input type=\"checkbox\" name=\"id\" value=\"00000000-0000-0000-0000-000000000000\""
        ));
        assert!(html.contains("id=\"delete-selected\""));
        // Without the role: no checkbox, no button.
        let html = render(&chrome(), &list(vec![row("a", "https://a.example/")])).into_string();
        assert!(!html.contains("type=\"checkbox\""));
        assert!(!html.contains("delete-selected"));
    }

    #[test]
    fn rows_filters_and_pages() {
        let html = render(&chrome(), &list(vec![row("a", "https://a.example/")])).into_string();
        assert!(html.contains("<option value=\"warning\" selected>warning</option>"));
        assert!(html.contains("<option value=\"healthy\">healthy</option>"));
        assert!(html.contains("<p>60 endpoint(s)</p>"));
        assert!(html.contains(
            "<td><a href=\"/console/endpoints/00000000-0000-0000-0000-000000000000\">a</a></td>\
             <td><span class=\"badge unknown\">unknown</span></td>\
             <td><code>GET https://a.example/</code></td><td>production</td><td>—</td>\
             <td><span class=\"uptime\" title=\"24 h — · 7 days — · 30 days —\" \
             aria-label=\"Uptime 24 h — · 7 days — · 30 days —\">—</span></td>\
             <td class=\"nowrap\">not scheduled</td><td>40 ms</td><td>1 / 2</td>"
        ));
        // With history: the day's uptime (the others on hover) and a sparkline after the time.
        let mut r = row("a", "https://a.example/");
        r.uptime = Some(apidrift_model::Uptime {
            day: Some(0.995),
            week: Some(0.98),
            month: None,
        });
        r.recent = vec![Some(10), Some(40)];
        let html = render(&chrome(), &list(vec![r])).into_string();
        assert!(
            html.contains("title=\"24 h 99.5% · 7 days 98.0% · 30 days —\""),
            "{html}"
        );
        assert!(
            html.contains(">99.5%</span></td><td class=\"nowrap\">not scheduled</td><td>40 ms<svg class=\"spark\""),
            "{html}"
        );
        assert!(html.contains(
            "<a href=\"/console/endpoints?health=warning&amp;environment=&amp;offset=0\">Previous page</a> \
             <a href=\"/console/endpoints?health=warning&amp;environment=&amp;offset=50\">Next page</a>"
        ));
    }

    #[test]
    fn the_schedule_column_and_the_add_link() {
        let mut r = row("a", "https://a.example/");
        r.schedule = Some(Cadence::Interval(300));
        let mut v = list(vec![r]);
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains("<th scope=\"col\">Schedule</th>"));
        assert!(html.contains("<td class=\"nowrap\">every 5 min</td>"));
        assert!(!html.contains("add-endpoint"));
        v.can_add = true;
        let html = render(&chrome(), &v).into_string();
        assert!(
            html.contains(
                "<a href=\"/console/endpoints/new\" id=\"add-endpoint\">Add endpoint</a>"
            )
        );
    }
}
