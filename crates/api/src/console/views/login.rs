//! The login page.

use super::layout::{Chrome, alert, page};
use maud::{Markup, html};

/// The login form, with the reason of a failed attempt and the e-mail it used.
#[derive(Debug, Default)]
pub struct Login<'a> {
    pub message: Option<&'a str>,
    pub email: &'a str,
}

pub fn render(v: &Login<'_>) -> Markup {
    page(
        "Log in",
        &Chrome::default(),
        html! {
            h1 { "Log in" }
            @if let Some(m) = v.message { (alert(m)) }
            form method="post" action="/console/login" {
                label for="email" { "E-mail" }
                input id="email" name="email" type="email" autocomplete="username" required autofocus value=(v.email);
                label for="password" { "Password" }
                input id="password" name="password" type="password" autocomplete="current-password" required;
                p { button type="submit" { "Log in" } }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped};
    use super::*;

    #[test]
    fn the_email_and_message_are_escaped() {
        for v in [
            Login {
                message: None,
                email: HOSTILE,
            },
            Login {
                message: Some(HOSTILE),
                email: "",
            },
        ] {
            assert_escaped(&render(&v).into_string());
        }
    }

    #[test]
    fn the_form_keeps_its_fields() {
        let html = render(&Login::default()).into_string();
        assert!(html.contains("<label for=\"email\">E-mail</label>"));
        assert!(html.contains("required autofocus value=\"\">"));
        assert!(!html.contains("role=\"alert\""));
    }
}
