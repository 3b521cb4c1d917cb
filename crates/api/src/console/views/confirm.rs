//! The confirmation step of a consequential action (accept a diff, revoke a token, delete an
//! endpoint): a page that names what the action applies to and what it does, with one form that
//! posts it and a link back. No script: the first button is a plain link to this page.

use super::layout::{Chrome, csrf_field, page};
use maud::{Markup, html};

/// A confirmation page.
#[derive(Debug)]
pub struct Confirm<'a> {
    /// The page title and heading, e.g. "Revoke a token".
    pub title: &'a str,
    /// The question, naming the target, e.g. "Revoke the token ci (…abcd)?"; escaped.
    pub question: Markup,
    /// What happens, in plain words.
    pub consequence: &'a str,
    /// Where the form posts.
    pub action: String,
    /// The submit button's text and id.
    pub button: &'a str,
    pub button_id: &'a str,
    /// Whether the action destroys something (a red button).
    pub danger: bool,
    /// Where "Cancel" leads.
    pub back: String,
    /// More hidden fields the form posts (name, value), e.g. the ids of a bulk delete.
    pub hidden: Vec<(&'a str, String)>,
}

pub fn render(chrome: &Chrome, v: &Confirm<'_>) -> Markup {
    page(
        v.title,
        chrome,
        html! {
            h1 { (v.title) }
            p id="confirm-question" { strong { (v.question) } }
            p { (v.consequence) }
            form method="post" action=(v.action) {
                (csrf_field(&chrome.csrf))
                input type="hidden" name="confirm" value="yes";
                @for (name, value) in &v.hidden {
                    input type="hidden" name=(name) value=(value);
                }
                button type="submit" id=(v.button_id) class=[v.danger.then_some("danger")] { (v.button) }
                " "
                a href=(v.back) { "Cancel" }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped, chrome};
    use super::*;

    #[test]
    fn names_the_target_escaped_and_posts_with_the_csrf_token() {
        let v = Confirm {
            title: "Revoke a token",
            question: html! { "Revoke the token " (HOSTILE) "?" },
            consequence: "Requests with it fail from now on.",
            action: "/console/tokens/x/revoke".into(),
            button: "Revoke",
            button_id: "confirm-revoke",
            danger: true,
            back: "/console/tokens".into(),
            hidden: Vec::new(),
        };
        let html = render(&chrome(), &v).into_string();
        assert_escaped(&html);
        assert!(html.contains(
            "<form method=\"post\" action=\"/console/tokens/x/revoke\">\
             <input type=\"hidden\" name=\"_csrf\" value=\"csrf-token\">\
             <input type=\"hidden\" name=\"confirm\" value=\"yes\">\
             <button type=\"submit\" id=\"confirm-revoke\" class=\"danger\">Revoke</button> \
             <a href=\"/console/tokens\">Cancel</a></form>"
        ));
        assert!(html.contains("<h1>Revoke a token</h1>"));
    }

    #[test]
    fn posts_the_hidden_fields_escaped() {
        let v = Confirm {
            title: "Delete endpoints",
            question: html! { "Delete 2 endpoints?" },
            consequence: "This cannot be undone.",
            action: "/console/endpoints/delete".into(),
            button: "Delete",
            button_id: "confirm-delete-many",
            danger: true,
            back: "/console/endpoints".into(),
            hidden: vec![("id", "a".into()), ("id", HOSTILE.into())],
        };
        let html = render(&chrome(), &v).into_string();
        assert_escaped(&html);
        assert!(html.contains(
            "<input type=\"hidden\" name=\"confirm\" value=\"yes\">\
             <input type=\"hidden\" name=\"id\" value=\"a\">"
        ));
    }
}
