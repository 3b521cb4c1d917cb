//! HTML rendering: the escaping helper every page goes through, and the page layout.
//!
//! Pages are built with `format!`-style code; every value that did not come from this crate's
//! source passes through [`esc`] (text and attribute values alike; attributes are always
//! double-quoted).

use std::fmt::Write as _;

/// Escapes text for HTML element content and double-quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '`' => out.push_str("&#96;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a query-string value.
pub fn url_param(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// What the layout needs to know about the visitor.
#[derive(Debug, Clone, Default)]
pub struct Chrome {
    /// The signed-in user's e-mail and role; `None` on the login page.
    pub user: Option<(String, String)>,
    /// The session's CSRF token (for the logout form).
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
.info{background:#dbe9ff;color:#0a3580}.flash{padding:.6rem;border:2px solid #0b4a1d;background:#eefbf1}\
.error{padding:.6rem;border:2px solid #7a0010;background:#fff1f1}\
button,input,select,textarea{font:inherit}button{background:#14213d;color:#fff;border:0;padding:.4rem .8rem;\
border-radius:4px;cursor:pointer}button.danger{background:#9b0015}\
:focus-visible{outline:3px solid #f5a300;outline-offset:2px}label{display:block;margin:.4rem 0 .1rem}\
code,pre{font-family:ui-monospace,monospace;font-size:.9rem}pre{background:#f4f4f4;padding:.5rem;overflow:auto}\
.token{font-size:1.05rem;word-break:break-all;background:#fff8db;padding:.5rem;border:1px solid #5c4200}\
fieldset{border:1px solid #ccc;margin:.5rem 0}.inline{display:inline}\
";

/// A whole page: `<!doctype html>`, the header with navigation, `body` inside `<main>`.
pub fn page(title: &str, chrome: &Chrome, body: &str) -> String {
    let mut nav = String::new();
    if let Some((email, role)) = &chrome.user {
        nav.push_str("<nav aria-label=\"Console\">");
        for (key, href, label) in [
            ("endpoints", "/console/endpoints", "Endpoints"),
            ("tokens", "/console/tokens", "Tokens"),
            ("webhooks", "/console/webhooks", "Webhooks"),
            ("probe", "/console/probe", "Probe a URL"),
            ("import", "/console/import", "Import OpenAPI"),
        ] {
            let current = if key == chrome.active {
                " aria-current=\"page\""
            } else {
                ""
            };
            let _ = write!(nav, "<a href=\"{href}\"{current}>{label}</a> ");
        }
        nav.push_str("</nav>");
        let _ = write!(
            nav,
            "<span>{} ({})</span><form class=\"inline\" method=\"post\" action=\"/console/logout\">\
             <input type=\"hidden\" name=\"_csrf\" value=\"{}\"><button type=\"submit\">Log out</button></form>",
            esc(email),
            esc(role),
            esc(&chrome.csrf)
        );
    }
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · apidrift</title><style>{STYLE}</style></head><body>\
         <header><span class=\"brand\">apidrift</span>{nav}</header><main id=\"main\">{body}</main></body></html>",
        title = esc(title),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\" `b`"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot; &#96;b&#96;"
        );
        assert_eq!(esc("plain é"), "plain é");
    }

    #[test]
    fn encodes_query_values() {
        assert_eq!(url_param("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }

    #[test]
    fn page_escapes_the_title_and_user() {
        let chrome = Chrome {
            user: Some(("<a>@x".into(), "owner".into())),
            csrf: "t\"".into(),
            active: "tokens",
        };
        let html = page("<T>", &chrome, "<p>b</p>");
        assert!(html.contains("<title>&lt;T&gt; · apidrift</title>"));
        assert!(html.contains("&lt;a&gt;@x"));
        assert!(html.contains("value=\"t&quot;\""));
        assert!(html.contains("href=\"/console/tokens\" aria-current=\"page\""));
        assert!(!html.contains("<a>@x"));
    }
}
