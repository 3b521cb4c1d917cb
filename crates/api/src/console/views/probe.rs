//! The URL probe: the form and the figures of one request (never its body).

use super::layout::{Chrome, alert, csrf_field, page};
use maud::{Markup, html};

/// The probe page.
#[derive(Debug)]
pub struct Probe<'a> {
    /// The URL in the form: empty, or the one just probed.
    pub url: &'a str,
    pub outcome: Option<ProbeOutcome<'a>>,
}

/// What a probe found, or why it failed.
#[derive(Debug)]
pub enum ProbeOutcome<'a> {
    Done {
        status: u16,
        /// Milliseconds.
        response_time: u32,
        content_type: Option<&'a str>,
        /// Bytes.
        size: usize,
        /// The inferred shape as pretty JSON; `None` when the body is not JSON.
        shape: Option<String>,
    },
    Failed(String),
}

pub fn render(chrome: &Chrome, v: &Probe<'_>) -> Markup {
    page(
        "Probe",
        chrome,
        html! {
            h1 { "Probe a URL" }
            p { "One request through the same outbound rules as checks. The body is never shown: only its status, timing, size and shape." }
            form method="post" action="/console/probe" {
                (csrf_field(&chrome.csrf))
                label for="url" { "URL" }
                input id="url" name="url" type="url" size="60" required value=(v.url);
                label for="method" { "Method" }
                select id="method" name="method" {
                    option { "GET" }
                    option { "HEAD" }
                    option { "POST" }
                }
                p { button type="submit" { "Probe" } }
            }
            @match &v.outcome {
                Some(ProbeOutcome::Done { status, response_time, content_type, size, shape }) => {
                    section aria-labelledby="probe-result" {
                        h2 id="probe-result" { "Result" }
                        dl {
                            dt { "Status" } dd id="probe-status" { (status) }
                            dt { "Response time" } dd { (response_time) " ms" }
                            dt { "Content type" } dd { (content_type.unwrap_or("—")) }
                            dt { "Size" } dd { (size) " bytes" }
                        }
                        h3 { "Inferred shape" }
                        pre { (shape.as_deref().unwrap_or("(not JSON)")) }
                    }
                }
                Some(ProbeOutcome::Failed(message)) => (alert(message)),
                None => {}
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped, chrome};
    use super::*;

    #[test]
    fn the_url_content_type_shape_and_error_are_escaped() {
        for v in [
            Probe {
                url: HOSTILE,
                outcome: None,
            },
            Probe {
                url: "",
                outcome: Some(ProbeOutcome::Done {
                    status: 200,
                    response_time: 5,
                    content_type: Some(HOSTILE),
                    size: 10,
                    shape: None,
                }),
            },
            Probe {
                url: "",
                outcome: Some(ProbeOutcome::Done {
                    status: 200,
                    response_time: 5,
                    content_type: None,
                    size: 10,
                    shape: Some(HOSTILE.into()),
                }),
            },
            Probe {
                url: "",
                outcome: Some(ProbeOutcome::Failed(HOSTILE.into())),
            },
        ] {
            assert_escaped(&render(&chrome(), &v).into_string());
        }
    }

    #[test]
    fn the_result_figures() {
        let html = render(
            &chrome(),
            &Probe {
                url: "https://a.example/",
                outcome: Some(ProbeOutcome::Done {
                    status: 200,
                    response_time: 5,
                    content_type: None,
                    size: 10,
                    shape: None,
                }),
            },
        )
        .into_string();
        assert!(html.contains("required value=\"https://a.example/\">"));
        assert!(html.contains(
            "<dt>Status</dt><dd id=\"probe-status\">200</dd><dt>Response time</dt><dd>5 ms</dd>\
             <dt>Content type</dt><dd>—</dd><dt>Size</dt><dd>10 bytes</dd></dl>\
             <h3>Inferred shape</h3><pre>(not JSON)</pre>"
        ));
    }
}
