//! The error page: the status of a failed request and what to do about it.

use super::layout::{Chrome, alert, page};
use maud::{Markup, html};

/// A failure as a page.
#[derive(Debug)]
pub struct ErrorPage<'a> {
    /// The HTTP status code.
    pub status: u16,
    /// Its reason phrase (the page title).
    pub title: &'a str,
    /// The error's message.
    pub message: &'a str,
}

pub fn render(chrome: &Chrome, v: &ErrorPage<'_>) -> Markup {
    page(
        v.title,
        chrome,
        html! {
            h1 { (v.status) }
            (alert(v.message))
            p { a href="/console/endpoints" { "Back to endpoints" } }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped, chrome};
    use super::*;

    #[test]
    fn the_message_is_escaped() {
        let html = render(
            &chrome(),
            &ErrorPage {
                status: 400,
                title: "Bad Request",
                message: HOSTILE,
            },
        )
        .into_string();
        assert!(html.contains("<h1>400</h1><p class=\"error\" role=\"alert\">"));
        assert_escaped(&html);
    }
}
