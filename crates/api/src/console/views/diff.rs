//! One diff: its counts and status, the accept button, and the changes coloured by severity, one
//! row per group of changes that share a normalised path and a type (a field removed from 30
//! keyed items is one row "30 items: [id=1], …").

use super::layout::{Chrome, badge, page, time};
use apidrift_app::ChangeGroup;
use apidrift_model::{DiffChange, DiffSummary, Severity};
use maud::{Markup, html};

/// The diff page.
#[derive(Debug)]
pub struct DiffView<'a> {
    pub summary: &'a DiffSummary,
    pub changes: &'a [DiffChange],
    /// `changes` grouped by normalised path and type (`Service::group_changes`).
    pub groups: &'a [ChangeGroup],
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
            p id="diff-seen" {
                "First seen " (time(d.first_seen_at.or(d.created_at))) " · last seen "
                (time(d.last_seen_at.or(d.created_at))) " · "
                @if d.seen_count == 1 { "seen by one check" } @else { "seen by " (d.seen_count) " checks" }
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
            (changes(v.changes, v.groups))
        },
    )
}

/// Most affected items named in a group's row; the others are counted.
const ITEMS_SHOWN: usize = 20;

/// The groups in one section per severity present (a group's severity is its most severe
/// change), most severe first.
fn changes(all: &[DiffChange], groups: &[ChangeGroup]) -> Markup {
    let sections: Vec<(Severity, Vec<&ChangeGroup>, usize)> =
        [Severity::Breaking, Severity::Warning, Severity::Info]
            .into_iter()
            .map(|sev| {
                let in_sev: Vec<&ChangeGroup> =
                    groups.iter().filter(|g| g.severity == sev).collect();
                let count = in_sev.iter().map(|g| g.count()).sum();
                (sev, in_sev, count)
            })
            .filter(|(_, in_sev, _)| !in_sev.is_empty())
            .collect();
    html! {
        @for (sev, in_sev, count) in &sections {
            section aria-labelledby={ "sev-" (sev.as_str()) } {
                h2 id={ "sev-" (sev.as_str()) } { (badge(sev.as_str())) " " (count) " change(s)" }
                table {
                    thead { tr {
                        th scope="col" { "Path" }
                        th scope="col" { "Type" }
                        th scope="col" { "Message" }
                        th scope="col" { "Old" }
                        th scope="col" { "New" }
                    } }
                    tbody {
                        @for g in in_sev {
                            (group_row(all, g))
                        }
                    }
                }
            }
        }
        @if sections.is_empty() {
            p { "No changes." }
        }
    }
}

/// One group: a single change as it is; several as the normalised path, the count and the
/// affected items, with the values when every change of the group has the same ones.
fn group_row(all: &[DiffChange], g: &ChangeGroup) -> Markup {
    let members: Vec<&DiffChange> = g.indices.iter().filter_map(|i| all.get(*i)).collect();
    let Some(first) = members.first() else {
        return html! {};
    };
    if members.len() == 1 {
        return html! {
            tr {
                td { code { (first.path) } }
                td { (first.change_type.as_str()) }
                td { (first.message) }
                td { (value(first.old_value.as_ref())) (value_type(first.old_type.as_deref())) }
                td { (value(first.new_value.as_ref())) (value_type(first.new_type.as_deref())) }
            }
        };
    }
    let same = |pick: fn(&DiffChange) -> (Option<&serde_json::Value>, Option<&str>)| {
        members.iter().all(|c| pick(c) == pick(first))
    };
    let old_same = same(|c| (c.old_value.as_ref(), c.old_type.as_deref()));
    let new_same = same(|c| (c.new_value.as_ref(), c.new_type.as_deref()));
    let hidden = g.items.len().saturating_sub(ITEMS_SHOWN);
    html! {
        tr class="group" {
            td {
                code { (g.path) }
                br;
                small class="items" {
                    (g.count()) " items: "
                    @for (i, item) in g.items.iter().take(ITEMS_SHOWN).enumerate() {
                        @if i > 0 { ", " }
                        code { (item) }
                    }
                    @if hidden > 0 { " and " (hidden) " more" }
                }
            }
            td { (g.change_type.as_str()) }
            td { (g.message) }
            td {
                @if old_same { (value(first.old_value.as_ref())) (value_type(first.old_type.as_deref())) }
                @else { "varies" }
            }
            td {
                @if new_same { (value(first.new_value.as_ref())) (value_type(first.new_type.as_deref())) }
                @else { "varies" }
            }
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
    use apidrift_app::group_changes;
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
            first_seen_at: None,
            last_seen_at: None,
            seen_count: 1,
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
                groups: &group_changes(std::slice::from_ref(&hostile)),
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
                changes: std::slice::from_ref(&hostile),
                groups: &group_changes(std::slice::from_ref(&hostile)),
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
                groups: &[],
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
        let mut all = [change(Severity::Info, "i"), change(Severity::Breaking, "b")];
        all[0].path = "$.other".into();
        let groups = group_changes(&all);
        let v = DiffView {
            summary: &s,
            changes: &all,
            groups: &groups,
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
        assert!(
            html.contains("<p id=\"diff-seen\">First seen — · last seen — · seen by one check</p>")
        );
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
                groups: &[],
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
        let seen = DiffSummary {
            first_seen_at: Some(time::macros::datetime!(2026-11-24 08:00 UTC)),
            last_seen_at: Some(time::macros::datetime!(2026-11-27 09:30 UTC)),
            seen_count: 212,
            ..summary(false)
        };
        let html = render(
            &chrome(),
            &DiffView {
                summary: &seen,
                changes: &[],
                groups: &[],
                just_accepted: false,
                can_accept: false,
            },
        )
        .into_string();
        // Relative times with the absolute UTC time on hover (the relative text moves with
        // the clock, so only the instants are compared).
        for part in [
            "<p id=\"diff-seen\">First seen <time datetime=\"2026-11-24T08:00:00.000Z\" \
             title=\"2026-11-24 08:00:00 UTC\">",
            "</time> · last seen <time datetime=\"2026-11-27T09:30:00.000Z\" \
             title=\"2026-11-27 09:30:00 UTC\">",
            "</time> · seen by 212 checks</p>",
        ] {
            assert!(html.contains(part), "{part} in {html}");
        }
    }

    #[test]
    fn changes_sharing_a_normalised_path_and_type_are_one_row_with_the_items() {
        let s = summary(false);
        let removed = |id: u32, sev: Severity| DiffChange {
            id: format!("c{id}"),
            path: format!("$.users[id={id}].email"),
            change_type: ChangeType::Removed,
            severity: sev,
            message: "field removed (was a string)".into(),
            old_value: Some(serde_json::json!(format!("u{id}"))),
            new_value: None,
            old_type: Some("string".into()),
            new_type: None,
        };
        let mut all: Vec<DiffChange> = (1..=25).map(|i| removed(i, Severity::Breaking)).collect();
        all.push(change(Severity::Info, "other"));
        let groups = group_changes(&all);
        assert_eq!(groups.len(), 2);
        let html = render(
            &chrome(),
            &DiffView {
                summary: &s,
                changes: &all,
                groups: &groups,
                just_accepted: false,
                can_accept: false,
            },
        )
        .into_string();
        // One row for the 25 removals, counted in the section's heading as 25 changes.
        assert_eq!(html.matches("<tr class=\"group\">").count(), 1, "{html}");
        assert!(html.contains(
            "<h2 id=\"sev-breaking\"><span class=\"badge breaking\">breaking</span> 25 change(s)</h2>"
        ));
        assert!(html.contains("<code>$.users[].email</code><br><small class=\"items\">25 items: <code>[id=1]</code>, <code>[id=2]</code>"));
        assert!(html.contains("<code>[id=20]</code> and 5 more</small>"));
        assert!(!html.contains("[id=21]"));
        // The old values differ between the items, the new ones (none) do not.
        assert!(html.contains("<td>varies</td><td>—</td>"));
        // A change alone keeps its own path and values.
        assert!(html.contains("<td><code>$.id</code></td>"));
    }
}
