//! One endpoint: its details (never its credential), the capture-baseline, run-check, edit,
//! pause/resume and delete buttons (by role), its history charts, its check history and its
//! diff history.

use super::chart::{self, CheckPoint};
use super::layout::{Chrome, badge, csrf_field, millis, page, schedule, time, utc};
use apidrift_model::Cadence;
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
    /// Identity rules of full mode (pattern → key).
    pub identity_keys: &'a std::collections::BTreeMap<String, String>,
    /// Leaf paths the active baseline's capture learned volatile (ignored by full-mode checks).
    pub volatile_paths: &'a [String],
    /// The attached response contract: its operation and status.
    pub response_contract: Option<(&'a str, u16)>,
    pub last_checked_at: Option<OffsetDateTime>,
    /// Milliseconds, from the last check.
    pub response_time: Option<u32>,
    pub breaking_count: u32,
    pub warning_count: u32,
    /// The outcome of the action that led here (capture, check).
    pub flash: Option<&'a str>,
    /// Whether the visitor may capture baselines, run checks, edit and pause (member and above).
    pub can_act: bool,
    /// Whether the visitor may delete the endpoint (admin and above).
    pub can_delete: bool,
    /// Whether schedules skip the endpoint.
    pub paused: bool,
    /// Its schedule, if any, and when the schedule runs it next.
    pub schedule: Option<Cadence>,
    pub next_run_at: Option<OffsetDateTime>,
    /// The latest diffs, newest first: one per drift (a check that sees the drift of the open
    /// diff again counts on it).
    pub history: &'a [DiffSummary],
    /// The time the page is drawn, from which the age of each drift is told.
    pub now: OffsetDateTime,
    /// The latest checks for the charts (any order).
    pub chart: &'a [CheckPoint<'a>],
    /// One page of the check history, newest first.
    pub checks: &'a [CheckRow<'a>],
    /// All checks of the endpoint, and the offsets of the neighbouring pages.
    pub checks_total: u64,
    pub checks_previous: Option<u64>,
    pub checks_next: Option<u64>,
}

/// One check of the history table.
#[derive(Debug)]
pub struct CheckRow<'a> {
    pub started_at: OffsetDateTime,
    pub http_status: Option<u16>,
    pub response_time: Option<u32>,
    /// The error kind of a failed fetch.
    pub error: Option<&'a str>,
    pub diff_id: Option<Uuid>,
    pub breaking_count: u32,
    pub warning_count: u32,
    pub change_count: u32,
    pub scheduled: bool,
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
                dt { "Identity keys" }
                dd id="identity-keys" {
                    @if v.identity_keys.is_empty() {
                        "none (items are paired by id, uuid, key, slug, name, code or _id)"
                    } @else {
                        @for (i, (pattern, key)) in v.identity_keys.iter().enumerate() {
                            @if i > 0 { ", " }
                            code { (pattern) "=" (key) }
                        }
                    }
                }
                dt { "Learned volatile paths" }
                dd id="volatile-paths" {
                    @if v.volatile_paths.is_empty() {
                        "none (capture with several samples to learn them)"
                    } @else {
                        @for (i, path) in v.volatile_paths.iter().enumerate() {
                            @if i > 0 { ", " }
                            code { (path) }
                        }
                        @if v.diff_mode == "full" {
                            " — ignored by checks until the next capture"
                        } @else {
                            " — ignored in full mode only"
                        }
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
                dt { "Schedule" }
                dd id="schedule-state" {
                    (schedule(v.schedule, v.next_run_at, v.paused, OffsetDateTime::now_utc()))
                    @if v.paused { " (manual checks still run)" }
                }
            }
            @if v.can_act {
                form class="inline" method="post" action={ "/console/endpoints/" (v.id) "/baseline" } {
                    (csrf_field(&chrome.csrf))
                    label class="inline" for="samples" { "Samples " }
                    select id="samples" name="samples" {
                        @for n in 1..=5u8 { option value=(n) selected[n == 1] { (n) } }
                    }
                    " "
                    button type="submit" { "Capture baseline" }
                }
                " "
                form class="inline" method="post" action={ "/console/endpoints/" (v.id) "/check" } {
                    (csrf_field(&chrome.csrf))
                    button type="submit" { "Run check" }
                }
                " "
                a id="edit-endpoint" href={ "/console/endpoints/" (v.id) "/edit" } { "Edit" }
                " "
                @if v.paused {
                    form class="inline" method="post" action={ "/console/endpoints/" (v.id) "/resume" } {
                        (csrf_field(&chrome.csrf))
                        button type="submit" id="resume-endpoint" { "Resume schedule" }
                    }
                } @else {
                    form class="inline" method="post" action={ "/console/endpoints/" (v.id) "/pause" } {
                        (csrf_field(&chrome.csrf))
                        button type="submit" id="pause-endpoint" { "Pause schedule" }
                    }
                }
                @if v.can_delete {
                    " "
                    form class="inline" method="get" action={ "/console/endpoints/" (v.id) "/delete" } {
                        button class="danger" type="submit" id="delete-endpoint" { "Delete…" }
                    }
                }
            } @else {
                p { "Your role (viewer) can read but not capture baselines, run checks or change the endpoint." }
            }
            h2 { "History" }
            (chart::history(v.chart))
            h2 { "Checks" }
            @if v.checks.is_empty() {
                p { "No checks yet." }
            } @else {
                p { (v.checks_total) " check(s), newest first" }
                table id="check-history" {
                    thead { tr {
                        th scope="col" { "Started" }
                        th scope="col" { "HTTP status" }
                        th scope="col" { "Response time" }
                        th scope="col" { "Breaking / warnings / changes" }
                        th scope="col" { "Diff" }
                        th scope="col" { "Trigger" }
                    } }
                    tbody {
                        @for c in v.checks {
                            tr {
                                td { (time(Some(c.started_at))) }
                                td {
                                    @match (c.http_status, c.error) {
                                        (Some(s), _) => (s),
                                        (None, Some(e)) => { "failed: " (e) },
                                        (None, None) => "—",
                                    }
                                }
                                td { (millis(c.response_time)) }
                                td { (c.breaking_count) " / " (c.warning_count) " / " (c.change_count) }
                                td {
                                    @match c.diff_id {
                                        Some(d) => a href={ "/console/diffs/" (d) } { "view diff" },
                                        None => "—",
                                    }
                                }
                                td { @if c.scheduled { "schedule" } @else { "manual" } }
                            }
                        }
                    }
                }
                nav aria-label="Check pages" {
                    @if let Some(p) = v.checks_previous {
                        a href={ "/console/endpoints/" (v.id) "?checks=" (p) "#check-history" } { "Newer checks" }
                        " "
                    }
                    @if let Some(n) = v.checks_next {
                        a href={ "/console/endpoints/" (v.id) "?checks=" (n) "#check-history" } { "Older checks" }
                    }
                }
            }
            h2 { "Diff history" }
            @if v.history.is_empty() {
                p { "No diffs yet." }
            } @else {
                table {
                    thead { tr {
                        th scope="col" { "First seen" }
                        th scope="col" { "Drift" }
                        th scope="col" { "Breaking" }
                        th scope="col" { "Warnings" }
                        th scope="col" { "Info" }
                        th scope="col" { "Accepted" }
                    } }
                    tbody {
                        @for d in v.history {
                            tr {
                                td { a href={ "/console/diffs/" (d.id) } { (time(d.first_seen_at.or(d.created_at))) } }
                                td title={ "last seen " (d.last_seen_at.map_or_else(|| "—".to_owned(), utc)) } { (drift_span(d, v.now)) }
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

/// One drift of the history: "since 3 days · seen 212 times", its age counted from when it was
/// first seen.
pub fn drift_span(d: &DiffSummary, now: OffsetDateTime) -> String {
    let age = d
        .first_seen_at
        .or(d.created_at)
        .map_or_else(|| "—".to_owned(), |first| age(now - first));
    let seen = match d.seen_count {
        1 => "seen once".to_owned(),
        n => format!("seen {n} times"),
    };
    format!("since {age} · {seen}")
}

/// A duration in its largest whole unit: "3 days", "1 hour", "less than a minute".
fn age(d: time::Duration) -> String {
    let unit = |n: i64, one: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {one}s")
        }
    };
    if d.whole_days() >= 1 {
        unit(d.whole_days(), "day")
    } else if d.whole_hours() >= 1 {
        unit(d.whole_hours(), "hour")
    } else if d.whole_minutes() >= 1 {
        unit(d.whole_minutes(), "minute")
    } else {
        "less than a minute".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped, chrome};
    use super::*;

    static NO_KEYS: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();

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
            identity_keys: &NO_KEYS,
            volatile_paths: &[],
            response_contract: Some(("GET /items", 200)),
            last_checked_at: None,
            response_time: None,
            breaking_count: 0,
            warning_count: 1,
            flash: None,
            can_act: true,
            can_delete: true,
            paused: false,
            schedule: None,
            next_run_at: None,
            history,
            now: OffsetDateTime::UNIX_EPOCH,
            chart: &[],
            checks: &[],
            checks_total: 0,
            checks_previous: None,
            checks_next: None,
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
    fn the_history_shows_one_row_per_drift_with_its_age_and_count() {
        let now = OffsetDateTime::UNIX_EPOCH + time::Duration::days(30);
        let first = now - time::Duration::days(3) - time::Duration::hours(5);
        let drift = DiffSummary {
            id: Uuid::nil(),
            endpoint_id: None,
            endpoint_name: None,
            created_at: Some(first),
            accepted: false,
            breaking_count: 1,
            warning_count: 0,
            info_count: 0,
            change_count: 1,
            first_seen_at: Some(first),
            last_seen_at: Some(now - time::Duration::minutes(5)),
            seen_count: 212,
        };
        assert_eq!(drift_span(&drift, now), "since 3 days · seen 212 times");
        let history = [drift];
        let mut v = detail("a", "https://a.example/", &history);
        v.now = now;
        let html = render(&chrome(), &v).into_string();
        assert!(
            html.contains(
                "<td title=\"last seen 1970-01-30 23:55:00 UTC\">since 3 days · seen 212 times</td>"
            ),
            "{html}"
        );
        assert_eq!(html.matches("since 3 days").count(), 1);
        let at = |first: time::Duration, seen: u32| {
            drift_span(
                &DiffSummary {
                    first_seen_at: Some(now - first),
                    seen_count: seen,
                    ..history[0].clone()
                },
                now,
            )
        };
        assert_eq!(at(time::Duration::days(1), 2), "since 1 day · seen 2 times");
        assert_eq!(at(time::Duration::hours(2), 1), "since 2 hours · seen once");
        assert_eq!(
            at(time::Duration::minutes(61), 1),
            "since 1 hour · seen once"
        );
        assert_eq!(
            at(time::Duration::minutes(7), 9),
            "since 7 minutes · seen 9 times"
        );
        assert_eq!(
            at(time::Duration::seconds(20), 1),
            "since less than a minute · seen once"
        );
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
            first_seen_at: None,
            last_seen_at: None,
            seen_count: 1,
        }];
        let mut v = detail("a", "https://a.example/", &history);
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains(
            "<form class=\"inline\" method=\"post\" action=\"/console/endpoints/00000000-0000-0000-0000-000000000000/baseline\">\
             <input type=\"hidden\" name=\"_csrf\" value=\"csrf-token\"><label class=\"inline\" for=\"samples\">Samples </label>\
             <select id=\"samples\" name=\"samples\"><option value=\"1\" selected>1</option><option value=\"2\">2</option>"
        ));
        assert!(html.contains("<option value=\"5\">5</option></select> <button type=\"submit\">Capture baseline</button></form> "));
        assert!(html.contains(
            "<dd id=\"volatile-paths\">none (capture with several samples to learn them)</dd>"
        ));
        assert!(html.contains("<dd id=\"identity-keys\">none (items are paired by"));
        assert!(html.contains("Run check</button>"));
        assert!(html.contains("<dd>3</dd>"));
        assert!(html.contains("<dd>GET /items (200)</dd>"));
        assert!(html.contains("<dd>bearer (the credential is never shown)</dd>"));
        assert!(html.contains(
            "<td><a href=\"/console/diffs/00000000-0000-0000-0000-000000000000\">—</a></td>\
             <td title=\"last seen —\">since — · seen once</td>\
             <td>1</td><td>2</td><td>3</td><td>no</td>"
        ));
        v.can_act = false;
        v.baseline_version = None;
        v.response_contract = None;
        v.history = &[];
        let html = render(&chrome(), &v).into_string();
        assert!(!html.contains("Run check</button>"));
        assert!(html.contains("Your role (viewer) can read"));
        assert!(!html.contains("edit-endpoint"));
        assert!(!html.contains("pause-endpoint"));
        assert!(!html.contains("delete-endpoint"));
        assert!(html.contains("<dd>none yet</dd>"));
        assert!(html.contains("<dd>none</dd>"));
        assert!(html.contains("<p>No diffs yet.</p>"));
    }

    #[test]
    fn edit_pause_resume_and_delete_by_role() {
        let mut v = detail("a", "https://a.example/", &[]);
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains(
            "<a id=\"edit-endpoint\" href=\"/console/endpoints/00000000-0000-0000-0000-000000000000/edit\">Edit</a>"
        ));
        assert!(html.contains("/pause\"><input type=\"hidden\" name=\"_csrf\" value=\"csrf-token\"><button type=\"submit\" id=\"pause-endpoint\">"));
        assert!(html.contains(
            "<form class=\"inline\" method=\"get\" action=\"/console/endpoints/00000000-0000-0000-0000-000000000000/delete\">"
        ));
        // No schedule: said so, never "active".
        assert!(html.contains("<dd id=\"schedule-state\">not scheduled</dd>"));
        assert!(html.contains("No checks yet: the charts appear"));
        v.schedule = Some(Cadence::Every(apidrift_model::Frequency::Hourly));
        v.next_run_at = Some(
            OffsetDateTime::now_utc() + time::Duration::minutes(12) + time::Duration::seconds(30),
        );
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains("<dd id=\"schedule-state\">every 1 hour · next run <time datetime="));
        assert!(html.contains(">in 12 min</time></dd>"));
        v.paused = true;
        v.can_delete = false;
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains("id=\"resume-endpoint\""));
        assert!(!html.contains("id=\"pause-endpoint\""));
        assert!(!html.contains("delete-endpoint"));
        assert!(html.contains(
            "<dd id=\"schedule-state\">every 1 hour · paused (manual checks still run)</dd>"
        ));
    }

    #[test]
    fn check_history_links_diffs_and_pages() {
        let at = OffsetDateTime::UNIX_EPOCH;
        let checks = [
            CheckRow {
                started_at: at,
                http_status: Some(200),
                response_time: Some(12),
                error: None,
                diff_id: Some(Uuid::nil()),
                breaking_count: 1,
                warning_count: 0,
                change_count: 3,
                scheduled: true,
            },
            CheckRow {
                started_at: at,
                http_status: None,
                response_time: None,
                error: Some(HOSTILE),
                diff_id: None,
                breaking_count: 0,
                warning_count: 0,
                change_count: 0,
                scheduled: false,
            },
        ];
        let points = [CheckPoint {
            at,
            response_time: Some(12),
            http_status: Some(200),
            breaking_count: 1,
            warning_count: 0,
            error: None,
        }];
        let mut v = detail("a", "https://a.example/", &[]);
        v.checks = &checks;
        v.chart = &points;
        v.checks_total = 45;
        v.checks_previous = Some(0);
        v.checks_next = Some(40);
        let html = render(&chrome(), &v).into_string();
        assert_escaped(&html);
        assert!(html.contains("<p>45 check(s), newest first</p>"));
        assert!(html.contains(
            "<td>200</td><td>12 ms</td><td>1 / 0 / 3</td>\
             <td><a href=\"/console/diffs/00000000-0000-0000-0000-000000000000\">view diff</a></td><td>schedule</td>"
        ));
        assert!(html.contains("<td>failed: &lt;script&gt;"));
        assert!(html.contains("<td>—</td><td>manual</td>"));
        assert!(html.contains("?checks=0#check-history\">Newer checks</a>"));
        assert!(html.contains("?checks=40#check-history\">Older checks</a>"));
        assert!(html.contains("<svg id=\"response-chart\""));
    }

    #[test]
    fn identity_keys_and_learned_volatile_paths_are_listed_and_escaped() {
        let keys: std::collections::BTreeMap<String, String> = [
            ("$.commits".to_owned(), "sha".to_owned()),
            (HOSTILE.to_owned(), "id".to_owned()),
        ]
        .into();
        let paths = ["$.meta.requestId".to_owned(), HOSTILE.to_owned()];
        let mut v = detail("a", "https://a.example/", &[]);
        v.identity_keys = &keys;
        v.volatile_paths = &paths;
        v.diff_mode = "full";
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains("<code>$.commits=sha</code>"), "{html}");
        assert!(html.contains(
            "<dd id=\"volatile-paths\"><code>$.meta.requestId</code>, <code>&lt;script&gt;"
        ));
        assert!(html.contains("— ignored by checks until the next capture</dd>"));
        assert_escaped(&html);
        v.diff_mode = "schema";
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains("— ignored in full mode only</dd>"));
    }
}
