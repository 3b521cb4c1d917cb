//! Tokens: the new token (shown once, with a copy button), the create form with scope
//! checkboxes, and the list with revoke buttons.

use super::layout::{Chrome, csrf_field, page, time};
use apidrift_model::{Role, Scope};
use maud::{Markup, html};
use time::OffsetDateTime;
use uuid::Uuid;

/// The tokens page.
#[derive(Debug)]
pub struct Tokens<'a> {
    /// The token just created: its only appearance.
    pub created: Option<&'a str>,
    /// The highest role the visitor may give a token (their own).
    pub max_role: Role,
    pub rows: Vec<TokenRow<'a>>,
}

/// A stored token as the list shows it (its hint, never the token or its hash).
#[derive(Debug)]
pub struct TokenRow<'a> {
    pub id: Uuid,
    pub name: &'a str,
    pub hint: &'a str,
    pub scopes: &'a [Scope],
    pub role: Role,
    pub last_used_at: Option<OffsetDateTime>,
    pub expires_at: Option<OffsetDateTime>,
    /// `active`, `expired` or `revoked`.
    pub status: &'a str,
    /// Whether it can still be revoked.
    pub revocable: bool,
}

const SCOPES: [Scope; 4] = [
    Scope::EndpointsRead,
    Scope::EndpointsWrite,
    Scope::ChecksRun,
    Scope::BaselinesWrite,
];

const ROLES: [Role; 4] = [Role::Viewer, Role::Member, Role::Admin, Role::Owner];

fn scope_label(scope: Scope) -> &'static str {
    match scope {
        Scope::EndpointsRead => "read endpoints and diffs",
        Scope::EndpointsWrite => "create endpoints (stores credentials)",
        Scope::ChecksRun => "run checks",
        Scope::BaselinesWrite => "capture baselines and accept diffs",
    }
}

pub fn render(chrome: &Chrome, v: &Tokens<'_>) -> Markup {
    page(
        "Tokens",
        chrome,
        html! {
            h1 { "Tokens" }
            @if let Some(token) = v.created {
                section class="flash" role="status" aria-labelledby="new-token" {
                    h2 id="new-token" { "New token" }
                    p { strong { "Copy it now: it is shown only once and cannot be recovered." } }
                    p { code id="token-value" class="token" { (token) } }
                    button type="button" id="copy-token" onclick="navigator.clipboard.writeText(document.getElementById('token-value').textContent).then(function(){document.getElementById('copy-token').textContent='Copied'})" { "Copy" }
                }
            }
            h2 { "Create a token" }
            form method="post" action="/console/tokens" {
                (csrf_field(&chrome.csrf))
                label for="name" { "Name" }
                input id="name" name="name" maxlength="200" required;
                fieldset {
                    legend { "Scopes" }
                    @for scope in SCOPES {
                        @let id = format!("scope-{}", scope.as_str().replace(':', "-"));
                        div {
                            // Writing endpoints stores credentials: opt in, never by default.
                            input type="checkbox" id=(id) name="scopes" value=(scope.as_str()) checked[scope != Scope::EndpointsWrite];
                            " "
                            label class="inline" for=(id) { code { (scope.as_str()) } " — " (scope_label(scope)) }
                        }
                    }
                }
                label for="role" { "Role" }
                select id="role" name="role" {
                    @for role in ROLES.into_iter().filter(|r| *r <= v.max_role) {
                        option value=(role.as_str()) selected[role == Role::Member] { (role.as_str()) }
                    }
                }
                label for="expires" { "Expires in days (empty: never)" }
                input id="expires" name="expires_in_days" type="number" min="1" max="3650";
                p { button type="submit" { "Create token" } }
            }
            h2 { "Existing tokens" }
            table {
                thead { tr {
                    th scope="col" { "Name" }
                    th scope="col" { "Hint" }
                    th scope="col" { "Scopes" }
                    th scope="col" { "Role" }
                    th scope="col" { "Last used" }
                    th scope="col" { "Expires" }
                    th scope="col" { "Status" }
                    th scope="col" { span class="visually-hidden" { "Actions" } }
                } }
                tbody {
                    @for t in &v.rows {
                        tr {
                            td { (t.name) }
                            td { code { "…" (t.hint) } }
                            td { (t.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")) }
                            td { (t.role.as_str()) }
                            td { (time(t.last_used_at)) }
                            td { (time(t.expires_at)) }
                            td { (t.status) }
                            td {
                                @if t.revocable {
                                    // The first step: the confirmation page names the token, its form posts.
                                    form method="get" action={ "/console/tokens/" (t.id) "/revoke" } {
                                        button class="danger" type="submit" aria-label={ "Revoke " (t.name) } { "Revoke…" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped, chrome};
    use super::*;

    fn row(name: &str) -> TokenRow<'_> {
        TokenRow {
            id: Uuid::nil(),
            name,
            hint: "abcd",
            scopes: &[Scope::EndpointsRead, Scope::ChecksRun],
            role: Role::Member,
            last_used_at: None,
            expires_at: None,
            status: "active",
            revocable: true,
        }
    }

    #[test]
    fn token_names_are_escaped_in_text_and_labels() {
        let html = render(
            &chrome(),
            &Tokens {
                created: None,
                max_role: Role::Owner,
                rows: vec![row(HOSTILE)],
            },
        )
        .into_string();
        assert!(html.contains("<td>&lt;script&gt;"));
        assert!(html.contains("aria-label=\"Revoke &lt;script&gt;"));
        assert_escaped(&html);
    }

    #[test]
    fn scopes_roles_the_new_token_and_revoke_forms() {
        let mut revoked = row("old");
        revoked.revocable = false;
        revoked.status = "revoked";
        let html = render(
            &chrome(),
            &Tokens {
                created: Some("svc_live_x"),
                max_role: Role::Admin,
                rows: vec![row("ci"), revoked],
            },
        )
        .into_string();
        assert!(html.contains("<code id=\"token-value\" class=\"token\">svc_live_x</code>"));
        assert!(html.contains(".then(function(){document.getElementById('copy-token').textContent='Copied'})\">Copy</button>"));
        assert!(html.contains(
            "<div><input type=\"checkbox\" id=\"scope-endpoints-write\" name=\"scopes\" value=\"endpoints:write\"> \
             <label class=\"inline\" for=\"scope-endpoints-write\"><code>endpoints:write</code> — create endpoints (stores credentials)</label></div>"
        ));
        assert!(html.contains("value=\"endpoints:read\" checked>"));
        assert!(html.contains("<option value=\"member\" selected>member</option>"));
        assert!(html.contains("<option value=\"admin\">admin</option>"));
        assert!(!html.contains("value=\"owner\""));
        assert!(html.contains(
            "<tr><td>ci</td><td><code>…abcd</code></td><td>endpoints:read, checks:run</td><td>member</td>\
             <td>—</td><td>—</td><td>active</td><td><form method=\"get\" \
             action=\"/console/tokens/00000000-0000-0000-0000-000000000000/revoke\">"
        ));
        assert!(html.contains("<td>revoked</td><td></td></tr>"));
        let html = render(
            &chrome(),
            &Tokens {
                created: None,
                max_role: Role::Admin,
                rows: Vec::new(),
            },
        )
        .into_string();
        assert!(!html.contains("token-value"));
    }
}
