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
fieldset{border:1px solid #ccc;margin:.5rem 0}.inline{display:inline}\
";

/// The navigation entries: key (matched against [`Chrome::active`]), target, label.
const NAV: [(&str, &str, &str); 5] = [
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

/// A timestamp as the API writes it, or a dash.
pub fn time(t: Option<OffsetDateTime>) -> String {
    t.and_then(|t| apidrift_model::timestamp::format(t).ok())
        .unwrap_or_else(|| "—".into())
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
        assert_eq!(time(None), "—");
        assert_eq!(millis(Some(12)), "12 ms");
        assert_eq!(millis(None), "—");
    }
}
