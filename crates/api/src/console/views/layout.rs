//! The page shell (doctype, head, header with navigation and the logout form) and the small
//! pieces every page shares: badges, alerts, the CSRF field, times.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use time::OffsetDateTime;

/// What the layout needs to know about the visitor.
#[derive(Debug, Clone, Default)]
pub struct Chrome {
    /// The signed-in user's e-mail and role; `None` on the login page.
    pub user: Option<(String, String)>,
    /// The session's CSRF token (for the logout form and every form of the page).
    pub csrf: String,
    /// The active navigation entry.
    pub active: &'static str,
}

const STYLE: &str = "\
*{box-sizing:border-box}body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;\
color:#1a1a1a;background:#fff;line-height:1.45}header{background:#14213d;color:#fff;padding:.6rem 1rem;\
display:flex;gap:1rem;align-items:center;flex-wrap:wrap}header a{color:#fff}header .brand{font-weight:700;\
margin-right:1rem}nav a{padding:.25rem .5rem;border-radius:4px}nav a[aria-current=page]{background:#fff;\
color:#14213d}main{padding:1rem;max-width:72rem}table{border-collapse:collapse;width:100%;margin:.5rem 0}\
th,td{border-bottom:1px solid #ccc;text-align:left;padding:.35rem .5rem;vertical-align:top}\
.badge{display:inline-block;padding:.1rem .45rem;border-radius:4px;font-size:.85rem;font-weight:600}\
.healthy{background:#d3f4dc;color:#0b4a1d}.warning{background:#fff0c2;color:#5c4200}\
.breaking{background:#ffd6d6;color:#7a0010}.unknown,.checking{background:#e4e4e4;color:#222}\
.info{background:#dbe9ff;color:#0a3580}\
.badge.delivered{background:#d3f4dc;color:#0b4a1d}.badge.failed{background:#ffd6d6;color:#7a0010}\
.badge.pending{background:#e4e4e4;color:#222}.flash{padding:.6rem;border:2px solid #0b4a1d;background:#eefbf1}\
.error{padding:.6rem;border:2px solid #7a0010;background:#fff1f1}\
button,input,select,textarea{font:inherit}button{background:#14213d;color:#fff;border:0;padding:.4rem .8rem;\
border-radius:4px;cursor:pointer}button.danger{background:#9b0015}\
:focus-visible{outline:3px solid #f5a300;outline-offset:2px}label{display:block;margin:.4rem 0 .1rem}\
code,pre{font-family:ui-monospace,monospace;font-size:.9rem}pre{background:#f4f4f4;padding:.5rem;overflow:auto}\
.token{font-size:1.05rem;word-break:break-all;background:#fff8db;padding:.5rem;border:1px solid #5c4200}\
fieldset{border:1px solid #ccc;margin:.5rem 0}.inline{display:inline}time,td.nowrap{white-space:nowrap}\
";

/// The navigation entries: key (matched against [`Chrome::active`]), target, label.
const NAV: [(&str, &str, &str); 6] = [
    ("overview", "/console/overview", "Overview"),
    ("endpoints", "/console/endpoints", "Endpoints"),
    ("tokens", "/console/tokens", "Tokens"),
    ("webhooks", "/console/webhooks", "Webhooks"),
    ("probe", "/console/probe", "Probe a URL"),
    ("import", "/console/import", "Import OpenAPI"),
];

/// A whole page: the doctype, the header with navigation, `body` inside `<main>`.
pub fn page(title: &str, chrome: &Chrome, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · apidrift" }
                // `<style>` is raw text (entities are not decoded there), so the stylesheet goes
                // in unescaped. Safe: STYLE is a constant of this file, not input, and holds no
                // `<` (a unit test checks it), so it cannot close the element.
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    span class="brand" { "apidrift" }
                    @if let Some((email, role)) = &chrome.user {
                        nav aria-label="Console" {
                            @for (key, href, label) in NAV {
                                a href=(href) aria-current=[(key == chrome.active).then_some("page")] { (label) }
                                " "
                            }
                        }
                        span { (email) " (" (role) ")" }
                        form class="inline" method="post" action="/console/logout" {
                            (csrf_field(&chrome.csrf))
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main id="main" { (body) }
            }
        }
    }
}

/// The hidden `_csrf` field every state-changing form carries.
pub fn csrf_field(csrf: &str) -> Markup {
    html! { input type="hidden" name="_csrf" value=(csrf); }
}

/// A badge: `kind` is both its CSS class and its text (a health, a severity).
pub fn badge(kind: &str) -> Markup {
    html! { span class={ "badge " (kind) } { (kind) } }
}

/// A failure shown on the page, announced to assistive technology.
pub fn alert(message: &str) -> Markup {
    html! { p class="error" role="alert" { (message) } }
}

/// A time as every console page prints it: relative to now ("3 min ago", "in 12 min") in a
/// `<time>` element whose `datetime` is the instant and whose `title` (shown on hover) is the
/// absolute UTC time; a dash when there is none. The stylesheet keeps it on one line.
pub fn time(t: Option<OffsetDateTime>) -> Markup {
    time_at(t, OffsetDateTime::now_utc())
}

/// [`time`] for a timestamp as the API writes it (RFC 3339); an unreadable one is shown as is.
pub fn time_text(t: Option<&str>) -> Markup {
    match t {
        None => time(None),
        Some(text) => match apidrift_model::timestamp::parse(text) {
            Ok(at) => time(Some(at)),
            Err(_) => html! { (text) },
        },
    }
}

/// [`time`] as seen at `now`.
pub fn time_at(t: Option<OffsetDateTime>, now: OffsetDateTime) -> Markup {
    match t {
        None => html! { "—" },
        Some(t) => html! {
            time datetime=(timestamp(t)) title=(utc(t)) { (relative(t, now)) }
        },
    }
}

/// The instant as the API writes it (RFC 3339, UTC).
pub fn timestamp(t: OffsetDateTime) -> String {
    apidrift_model::timestamp::format(t).unwrap_or_default()
}

/// `2026-11-27 11:04:05 UTC`.
pub fn utc(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// "just now", "3 min ago", "in 12 min", "5 h ago", "in 2 days".
pub fn relative(t: OffsetDateTime, now: OffsetDateTime) -> String {
    let seconds = (t - now).whole_seconds();
    let future = seconds > 0;
    let n = seconds.unsigned_abs();
    let amount = if n < 60 {
        return if future {
            "in under a minute"
        } else {
            "just now"
        }
        .to_owned();
    } else if n < 3600 {
        format!("{} min", n / 60)
    } else if n < 48 * 3600 {
        format!("{} h", n / 3600)
    } else {
        format!("{} days", n / 86_400)
    };
    if future {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// A schedule as the console shows it: "every 1 hour · next run in 12 min", "every 5 min ·
/// paused", or "not scheduled" (and "· paused" when it is).
pub fn schedule(
    cadence: Option<apidrift_model::Cadence>,
    next_run_at: Option<OffsetDateTime>,
    paused: bool,
    now: OffsetDateTime,
) -> Markup {
    let Some(cadence) = cadence else {
        return html! { "not scheduled" @if paused { " · paused" } };
    };
    html! {
        (cadence_text(cadence))
        @if paused {
            " · paused"
        } @else if let Some(next) = next_run_at {
            " · next run "
            @if next > now { (time_at(Some(next), now)) } @else { "due now" }
        }
    }
}

/// "every 1 hour", "every 30 days", "every 5 min", "every 90 seconds".
pub fn cadence_text(cadence: apidrift_model::Cadence) -> String {
    let seconds = cadence.seconds();
    let plural =
        |n: u64, one: &str, many: &str| format!("every {n} {}", if n == 1 { one } else { many });
    if seconds.is_multiple_of(7 * 86_400) && seconds < 30 * 86_400 {
        plural(seconds / (7 * 86_400), "week", "weeks")
    } else if seconds.is_multiple_of(86_400) {
        plural(seconds / 86_400, "day", "days")
    } else if seconds.is_multiple_of(3600) {
        plural(seconds / 3600, "hour", "hours")
    } else if seconds.is_multiple_of(60) {
        format!("every {} min", seconds / 60)
    } else {
        plural(seconds, "second", "seconds")
    }
}

/// A response time in milliseconds, or a dash.
pub fn millis(ms: Option<u32>) -> String {
    ms.map_or_else(|| "—".to_owned(), |ms| format!("{ms} ms"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A value that breaks out of text, of a double-quoted attribute, and of an entity.
    pub(crate) const HOSTILE: &str = "<script>alert(1)</script>\"'&";
    /// How [`HOSTILE`] must appear once escaped.
    pub(crate) const HOSTILE_ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;'&amp;";

    /// The hostile value appears only escaped: never raw, at least once escaped.
    pub(crate) fn assert_escaped(html: &str) {
        assert!(!html.contains("<script>"), "raw markup in {html}");
        assert!(!html.contains("\"'&"), "raw quote in {html}");
        assert!(html.contains(HOSTILE_ESCAPED), "value missing in {html}");
    }

    pub(crate) fn chrome() -> Chrome {
        Chrome {
            user: Some(("owner@example.com".into(), "owner".into())),
            csrf: "csrf-token".into(),
            active: "endpoints",
        }
    }

    #[test]
    fn page_escapes_the_title_and_user() {
        let chrome = Chrome {
            user: Some((HOSTILE.into(), "owner".into())),
            csrf: "t\"".into(),
            active: "tokens",
        };
        let html = page(HOSTILE, &chrome, html! { p { "b" } }).into_string();
        assert!(html.contains(&format!("<title>{HOSTILE_ESCAPED} · apidrift</title>")));
        assert_escaped(&html);
        assert!(html.contains("name=\"_csrf\" value=\"t&quot;\""));
        assert!(html.contains("href=\"/console/tokens\" aria-current=\"page\">Tokens</a>"));
        assert!(html.contains("href=\"/console/endpoints\">Endpoints</a>"));
        assert!(html.contains("<main id=\"main\"><p>b</p></main>"));
    }

    #[test]
    fn the_login_page_has_no_navigation() {
        let html = page("Log in", &Chrome::default(), html! {}).into_string();
        assert!(!html.contains("<nav"));
        assert!(!html.contains("/console/logout"));
    }

    #[test]
    fn the_stylesheet_cannot_close_its_element() {
        assert!(!STYLE.contains('<'));
    }

    #[test]
    fn badges_and_dashes() {
        assert_eq!(
            badge("healthy").into_string(),
            "<span class=\"badge healthy\">healthy</span>"
        );
        assert_eq!(time(None).into_string(), "—");
        assert_eq!(millis(Some(12)), "12 ms");
        assert_eq!(millis(None), "—");
    }

    #[test]
    fn times_are_relative_with_the_utc_time_on_hover() {
        let now = time::macros::datetime!(2026-11-27 11:00:00 UTC);
        let at = |s: i64| now + time::Duration::seconds(s);
        assert_eq!(
            time_at(Some(at(-180)), now).into_string(),
            "<time datetime=\"2026-11-27T10:57:00.000Z\" title=\"2026-11-27 10:57:00 UTC\">3 min ago</time>"
        );
        assert_eq!(relative(at(12 * 60 + 5), now), "in 12 min");
        assert_eq!(relative(at(-10), now), "just now");
        assert_eq!(relative(at(30), now), "in under a minute");
        assert_eq!(relative(at(-5 * 3600), now), "5 h ago");
        assert_eq!(relative(at(3 * 86_400), now), "in 3 days");
        assert!(STYLE.contains("time,td.nowrap{white-space:nowrap}"));
        assert_eq!(time_text(Some("not a time")).into_string(), "not a time");
        assert!(
            time_text(Some("2026-11-27T10:00:00.000Z"))
                .into_string()
                .starts_with(
                    "<time datetime=\"2026-11-27T10:00:00.000Z\" title=\"2026-11-27 10:00:00 UTC\">"
                )
        );
    }

    #[test]
    fn schedules_say_their_cadence_and_next_run() {
        use apidrift_model::{Cadence, Frequency};
        let now = time::macros::datetime!(2026-11-27 11:00:00 UTC);
        let next = Some(now + time::Duration::minutes(12));
        let text = |c, n, p| schedule(c, n, p, now).into_string();
        assert_eq!(text(None, next, false), "not scheduled");
        assert_eq!(text(None, None, true), "not scheduled · paused");
        assert_eq!(
            text(Some(Cadence::Every(Frequency::Hourly)), next, false),
            "every 1 hour · next run <time datetime=\"2026-11-27T11:12:00.000Z\" \
             title=\"2026-11-27 11:12:00 UTC\">in 12 min</time>"
        );
        assert_eq!(
            text(Some(Cadence::Interval(300)), None, false),
            "every 5 min"
        );
        assert_eq!(
            text(Some(Cadence::Every(Frequency::Daily)), next, true),
            "every 1 day · paused"
        );
        assert_eq!(
            text(
                Some(Cadence::Every(Frequency::Daily)),
                Some(now - time::Duration::minutes(1)),
                false
            ),
            "every 1 day · next run due now"
        );
        assert_eq!(
            cadence_text(Cadence::Every(Frequency::Weekly)),
            "every 1 week"
        );
        assert_eq!(
            cadence_text(Cadence::Every(Frequency::Monthly)),
            "every 30 days"
        );
        assert_eq!(cadence_text(Cadence::Interval(7200)), "every 2 hours");
        assert_eq!(cadence_text(Cadence::Interval(90)), "every 90 seconds");
    }
}
