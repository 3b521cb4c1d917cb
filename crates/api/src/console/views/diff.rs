//! One diff: its counts and status, the accept button, and the changes grouped and coloured by
//! severity.

use super::layout::{Chrome, badge, page, time};
use apidrift_model::{DiffChange, DiffSummary, Severity};
use maud::{Markup, html};

/// The diff page.
#[derive(Debug)]
pub struct DiffView<'a> {
    pub summary: &'a DiffSummary,
    pub changes: &'a [DiffChange],
    /// Whether the visitor just accepted it (the redirect after the accept form says so).
    pub just_accepted: bool,
    /// Whether the visitor may accept diffs.
    pub can_accept: bool,
}

/// Longest old or new value shown, in bytes; longer ones are cut and end with `…`.
const VALUE_LIMIT: usize = 300;

pub fn render(chrome: &Chrome, v: &DiffView<'_>) -> Markup {
    let d = v.summary;
    page(
        "Diff",
        chrome,
        html! {
            h1 { "Diff of " (d.endpoint_name.as_deref().unwrap_or("an endpoint")) }
            p {
                (time(d.created_at)) " · " (d.breaking_count) " breaking, " (d.warning_count)
                " warnings, " (d.info_count) " info · "
                span id="diff-status" {
                    @if d.accepted { span class="badge healthy" { "accepted" } } @else { "not accepted" }
                }
            }
            @if d.accepted {
                @if v.just_accepted {
                    p class="flash" role="status" { "Diff accepted: its response is the endpoint's baseline now." }
                }
            } @else if v.can_accept {
                // The first step: the confirmation page names the diff, its form posts.
                form method="get" action={ "/console/diffs/" (d.id) "/accept" } {
                    p { "Accepting makes the response that produced this diff the endpoint's new baseline." }
                    p { button type="submit" id="accept-diff" { "Accept…" } }
                }
            }
            @if let Some(eid) = d.endpoint_id {
                p { a href={ "/console/endpoints/" (eid) } { "Back to the endpoint" } }
            }
            (changes(v.changes))
        },
    )
}

/// The changes in one section per severity present, most severe first.
fn changes(all: &[DiffChange]) -> Markup {
    let groups: Vec<(Severity, Vec<&DiffChange>)> =
        [Severity::Breaking, Severity::Warning, Severity::Info]
            .into_iter()
            .map(|sev| (sev, all.iter().filter(|c| c.severity == sev).collect()))
            .filter(|(_, group): &(Severity, Vec<&DiffChange>)| !group.is_empty())
            .collect();
    html! {
        @for (sev, group) in &groups {
            section aria-labelledby={ "sev-" (sev.as_str()) } {
                h2 id={ "sev-" (sev.as_str()) } { (badge(sev.as_str())) " " (group.len()) " change(s)" }
                table {
                    thead { tr {
                        th scope="col" { "Path" }
                        th scope="col" { "Type" }
                        th scope="col" { "Message" }
                        th scope="col" { "Old" }
                        th scope="col" { "New" }
                    } }
                    tbody {
                        @for c in group {
                            tr {
                                td { code { (c.path) } }
                                td { (c.change_type.as_str()) }
                                td { (c.message) }
                                td { (value(c.old_value.as_ref())) (value_type(c.old_type.as_deref())) }
                                td { (value(c.new_value.as_ref())) (value_type(c.new_type.as_deref())) }
                            }
                        }
                    }
                }
            }
        }
        @if groups.is_empty() {
            p { "No changes." }
        }
    }
}

/// An old or new value as compact JSON, cut at [`VALUE_LIMIT`] bytes on a char boundary.
fn value(v: Option<&serde_json::Value>) -> Markup {
    match v {
        None => html! { "—" },
        Some(v) => {
            let mut t = v.to_string();
            if t.len() > VALUE_LIMIT {
                let cut = (0..=VALUE_LIMIT)
                    .rev()
                    .find(|i| t.is_char_boundary(*i))
                    .unwrap_or(0);
                t.truncate(cut);
                t.push('…');
            }
            html! { code { (t) } }
        }
    }
}

fn value_type(t: Option<&str>) -> Markup {
    html! {
        @if let Some(t) = t { " " small { "(" (t) ")" } }
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped, chrome};
    use super::*;
    use apidrift_model::ChangeType;
    use uuid::Uuid;

    fn summary(accepted: bool) -> DiffSummary {
        DiffSummary {
            id: Uuid::nil(),
            endpoint_id: Some(Uuid::nil()),
            endpoint_name: Some("items".into()),
            created_at: None,
            accepted,
            breaking_count: 1,
            warning_count: 0,
            info_count: 0,
            change_count: 1,
        }
    }

    fn change(severity: Severity, message: &str) -> DiffChange {
        DiffChange {
            id: "c1".into(),
            path: "$.id".into(),
            change_type: ChangeType::TypeChanged,
            severity,
            message: message.into(),
            old_value: Some(serde_json::json!(1)),
            new_value: Some(serde_json::json!("1")),
            old_type: Some("integer".into()),
            new_type: Some("string".into()),
        }
    }

    #[test]
    fn long_values_are_cut_on_a_char_boundary_and_escaped() {
        let v = serde_json::json!("é".repeat(400));
        let t = value(Some(&v)).into_string();
        assert!(t.ends_with("…</code>"));
        assert_eq!(value(None).into_string(), "—");
        assert_eq!(
            value(Some(&serde_json::json!("<b>"))).into_string(),
            "<code>&quot;&lt;b&gt;&quot;</code>"
        );
    }

    #[test]
    fn change_messages_values_and_the_endpoint_name_are_escaped() {
        let s = summary(false);
        let mut hostile = change(Severity::Warning, HOSTILE);
        let html = render(
            &chrome(),
            &DiffView {
                summary: &s,
                changes: std::slice::from_ref(&hostile),
                just_accepted: false,
                can_accept: true,
            },
        )
        .into_string();
        assert_escaped(&html);
        hostile.message = "m".into();
        hostile.path = HOSTILE.into();
        hostile.new_type = Some(HOSTILE.into());
        hostile.new_value = Some(serde_json::json!(HOSTILE));
        let html = render(
            &chrome(),
            &DiffView {
                summary: &s,
                changes: &[hostile],
                just_accepted: false,
                can_accept: true,
            },
        )
        .into_string();
        assert_escaped(&html);
        // The JSON string's own quotes are escaped as well.
        assert!(html.contains("<code>&quot;&lt;script&gt;"));
        let mut s = summary(false);
        s.endpoint_name = Some(HOSTILE.into());
        let html = render(
            &chrome(),
            &DiffView {
                summary: &s,
                changes: &[],
                just_accepted: false,
                can_accept: false,
            },
        )
        .into_string();
        assert!(html.contains("<h1>Diff of &lt;script&gt;"));
        assert_escaped(&html);
    }

    #[test]
    fn groups_status_and_the_accept_form() {
        let s = summary(false);
        let all = [change(Severity::Info, "i"), change(Severity::Breaking, "b")];
        let v = DiffView {
            summary: &s,
            changes: &all,
            just_accepted: false,
            can_accept: true,
        };
        let html = render(&chrome(), &v).into_string();
        let breaking = html.find("id=\"sev-breaking\"").unwrap_or(usize::MAX);
        let info = html.find("id=\"sev-info\"").unwrap_or(0);
        assert!(breaking < info, "{html}");
        assert!(!html.contains("sev-warning"));
        assert!(html.contains(
            "<h2 id=\"sev-info\"><span class=\"badge info\">info</span> 1 change(s)</h2>"
        ));
        assert!(html.contains(
            "<td><code>1</code> <small>(integer)</small></td><td><code>&quot;1&quot;</code> <small>(string)</small></td>"
        ));
        assert!(html.contains("<span id=\"diff-status\">not accepted</span>"));
        assert!(html.contains(
            "<form method=\"get\" action=\"/console/diffs/00000000-0000-0000-0000-000000000000/accept\">"
        ));
        assert!(html.contains("id=\"accept-diff\""));
        assert!(html.contains("href=\"/console/endpoints/00000000-0000-0000-0000-000000000000\">Back to the endpoint</a>"));

        // A member sees no button; nobody sees it on an accepted diff; the flash follows an accept.
        let html = render(
            &chrome(),
            &DiffView {
                can_accept: false,
                ..v
            },
        )
        .into_string();
        assert!(!html.contains("accept-diff"));
        let s = summary(true);
        let html = render(
            &chrome(),
            &DiffView {
                summary: &s,
                changes: &[],
                just_accepted: true,
                can_accept: true,
            },
        )
        .into_string();
        assert!(!html.contains("accept-diff"));
        assert!(html.contains(
            "<span id=\"diff-status\"><span class=\"badge healthy\">accepted</span></span>"
        ));
        assert!(html.contains("Diff accepted"));
        assert!(html.contains("<p>No changes.</p>"));
    }
}
