//! The endpoint form, one component for **Add endpoint** and **Edit**: every field of create.
//! On edit it is prefilled; credentials, extra headers and the request body are write-only
//! ("leave blank to keep"), with an explicit choice to remove the credentials. On add it starts
//! at the create defaults. A refused save shows the reason (naming the field) above the
//! submitted values, never a secret's value.
//! The edit form carries the version of the endpoint it shows (hidden): when someone else
//! changed the endpoint meanwhile, nothing is saved and the form comes back with the current
//! values.

use super::layout::{Chrome, alert, csrf_field, page};
use maud::{Markup, html};
use uuid::Uuid;

/// The form's values, as text (prefilled from the endpoint, or as submitted).
#[derive(Debug, Default, Clone)]
pub struct EditValues {
    pub name: String,
    pub url: String,
    pub method: String,
    pub environment: String,
    pub description: String,
    /// Comma-separated.
    pub tags: String,
    pub content_type: String,
    pub diff_mode: String,
    pub timeout_ms: String,
    /// A frequency (`HOURLY`…) or empty for none.
    pub schedule: String,
    /// `schedule.intervalSeconds`, in place of a frequency (empty: none).
    pub interval: String,
    /// One pattern a line.
    pub ignore_paths: String,
    /// One `PATTERN=KEY` rule a line.
    pub identity_keys: String,
    /// One `RULE[=PATH]=LEVEL` severity override a line, in order.
    pub severity_overrides: String,
    pub follow_redirects: bool,
    pub retries: String,
    /// The latency threshold in milliseconds (empty: no latency alert).
    pub max_response_time_ms: String,
    pub slow_after: String,
}

/// The edit page.
#[derive(Debug)]
pub struct EditEndpoint<'a> {
    pub id: Uuid,
    /// The endpoint's stored name (the heading, whatever the form holds).
    pub stored_name: &'a str,
    /// The stored authentication style (its credential is never shown).
    pub auth_type: &'a str,
    /// Whether extra headers / a request body are stored (never their values).
    pub has_headers: bool,
    pub has_request_body: bool,
    pub values: EditValues,
    /// The version of the endpoint the values were read from (the hidden `version` field, sent
    /// back as the expected version on save).
    pub version: i64,
    /// Why the last save was refused.
    pub error: Option<&'a str>,
}

pub const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
const DIFF_MODES: [&str; 2] = ["schema", "full"];
const SCHEDULES: [&str; 4] = ["HOURLY", "DAILY", "WEEKLY", "MONTHLY"];
const AUTH_TYPES: [&str; 5] = ["bearer", "api_key", "basic", "oauth", "custom"];

/// The add page.
#[derive(Debug)]
pub struct AddEndpoint<'a> {
    pub values: EditValues,
    /// Why the last save was refused.
    pub error: Option<&'a str>,
}

/// What differs between the two uses of the form.
enum Kind<'a> {
    Add,
    Edit(&'a EditEndpoint<'a>),
}

pub fn render(chrome: &Chrome, v: &EditEndpoint<'_>) -> Markup {
    page(
        &format!("Edit {}", v.stored_name),
        chrome,
        html! {
            h1 { "Edit " (v.stored_name) }
            @if let Some(e) = v.error { (alert(e)) }
            (endpoint_form(chrome, &v.values, &Kind::Edit(v)))
        },
    )
}

pub fn render_add(chrome: &Chrome, v: &AddEndpoint<'_>) -> Markup {
    page(
        "Add endpoint",
        chrome,
        html! {
            h1 { "Add endpoint" }
            @if let Some(e) = v.error { (alert(e)) }
            (endpoint_form(chrome, &v.values, &Kind::Add))
        },
    )
}

/// The form itself, shared by add and edit.
fn endpoint_form(chrome: &Chrome, f: &EditValues, kind: &Kind<'_>) -> Markup {
    let action = match kind {
        Kind::Add => "/console/endpoints/new".to_owned(),
        Kind::Edit(v) => format!("/console/endpoints/{}/edit", v.id),
    };
    html! {
            form method="post" action=(action) {
                (csrf_field(&chrome.csrf))
                @if let Kind::Edit(v) = kind { input type="hidden" name="version" value=(v.version); }
                label for="name" { "Name" }
                input id="name" name="name" value=(f.name) maxlength="200" required;
                label for="url" { "URL" }
                input id="url" name="url" value=(f.url) size="60" required;
                label for="method" { "Method" }
                select id="method" name="method" {
                    @for m in METHODS { option value=(m) selected[f.method == m] { (m) } }
                }
                label for="environment" { "Environment" }
                input id="environment" name="environment" value=(f.environment);
                label for="description" { "Description" }
                textarea id="description" name="description" rows="2" cols="60" { (f.description) }
                label for="tags" { "Tags (comma-separated)" }
                input id="tags" name="tags" value=(f.tags);
                label for="content_type" { "Request content type" }
                input id="content_type" name="content_type" value=(f.content_type);
                label for="diff_mode" { "Diff mode" }
                select id="diff_mode" name="diff_mode" {
                    @for m in DIFF_MODES { option value=(m) selected[f.diff_mode == m] { (m) } }
                }
                label for="timeout_ms" { "Timeout (milliseconds)" }
                input id="timeout_ms" name="timeout_ms" type="number" value=(f.timeout_ms);
                label for="retries" { "Retries before a failed fetch counts" }
                input id="retries" name="retries" type="number" min="0" value=(f.retries);
                (latency_inputs(f))
                label for="schedule" { "Schedule" }
                select id="schedule" name="schedule" {
                    option value="" selected[f.schedule.is_empty()] { "none (manual checks only)" }
                    @for s in SCHEDULES { option value=(s) selected[f.schedule == s] { (s.to_lowercase()) } }
                }
                label for="interval" { "Or every so many seconds (60 to 2592000; leave the schedule at none)" }
                input id="interval" name="interval" type="number" min="60" max="2592000" value=(f.interval);
                label for="ignore_paths" { "Ignored paths (one a line)" }
                textarea id="ignore_paths" name="ignore_paths" rows="3" cols="60" { (f.ignore_paths) }
                label for="identity_keys" {
                    "Identity keys, full mode (one " code { "PATTERN=KEY" } " a line, e.g. "
                    code { "$.commits=sha" } ")"
                }
                textarea id="identity_keys" name="identity_keys" rows="3" cols="60" { (f.identity_keys) }
                label for="severity_overrides" {
                    "Severity overrides (one " code { "RULE[=PATH]=LEVEL" } " a line, first match wins, e.g. "
                    code { "field-added=breaking" } " or " code { "value-changed=$.debug=ignore" } ")"
                }
                textarea id="severity_overrides" name="severity_overrides" rows="3" cols="60" { (f.severity_overrides) }
                div {
                    input type="checkbox" id="follow_redirects" name="follow_redirects" value="yes" checked[f.follow_redirects];
                    " "
                    label class="inline" for="follow_redirects" { "Follow redirects" }
                }
                @match kind {
                    Kind::Edit(v) => {
                        fieldset {
                            legend { "Credentials (write-only: never shown)" }
                            p { "Stored now: " strong { (v.auth_type) } ". Leave the fields blank to keep them." }
                            label for="auth_type" { "Replace with" }
                            select id="auth_type" name="auth_type" {
                                option value="" selected { "keep the current credentials" }
                                @for t in AUTH_TYPES { option value=(t) { (t) } }
                            }
                            (credential_inputs())
                            div {
                                input type="checkbox" id="remove_auth" name="remove_auth" value="yes";
                                " "
                                label class="inline" for="remove_auth" { "Remove the credentials (send requests without authentication)" }
                            }
                        }
                        fieldset {
                            legend { "Extra headers and request body (write-only)" }
                            p {
                                "Headers: " @if v.has_headers { "set" } @else { "none" }
                                ". Request body: " @if v.has_request_body { "set" } @else { "none" }
                                ". Leave blank to keep."
                            }
                            label for="headers" { "Replace headers (one " code { "Name: value" } " a line)" }
                            textarea id="headers" name="headers" rows="2" cols="60" autocomplete="off" {}
                            label for="request_body" { "Replace request body" }
                            textarea id="request_body" name="request_body" rows="3" cols="60" autocomplete="off" {}
                        }
                        p {
                            button type="submit" id="save-endpoint" { "Save" }
                            " "
                            a href={ "/console/endpoints/" (v.id) } { "Cancel" }
                        }
                    }
                    Kind::Add => {
                        fieldset {
                            legend { "Credentials (write-only: never shown again, not even after a refused save)" }
                            label for="auth_type" { "Authentication" }
                            select id="auth_type" name="auth_type" {
                                option value="" selected { "none" }
                                @for t in AUTH_TYPES { option value=(t) { (t) } }
                            }
                            (credential_inputs())
                        }
                        fieldset {
                            legend { "Extra headers and request body (write-only)" }
                            label for="headers" { "Headers (one " code { "Name: value" } " a line)" }
                            textarea id="headers" name="headers" rows="2" cols="60" autocomplete="off" {}
                            label for="request_body" { "Request body (POST, PUT, PATCH)" }
                            textarea id="request_body" name="request_body" rows="3" cols="60" autocomplete="off" {}
                        }
                        p {
                            button type="submit" id="save-endpoint" { "Add endpoint" }
                            " "
                            a href="/console/endpoints" { "Cancel" }
                        }
                    }
                }
            }
    }
}

/// The credential inputs, never prefilled.
fn credential_inputs() -> Markup {
    html! {
        label for="auth_token" { "Token (bearer, oauth)" }
        input id="auth_token" name="auth_token" type="password" autocomplete="off";
        label for="auth_key" { "Key (api_key)" }
        input id="auth_key" name="auth_key" type="password" autocomplete="off";
        label for="auth_header" { "Header name (api_key, custom)" }
        input id="auth_header" name="auth_header" autocomplete="off";
        label for="auth_value" { "Header value (custom)" }
        input id="auth_value" name="auth_value" type="password" autocomplete="off";
        label for="auth_username" { "Username (basic)" }
        input id="auth_username" name="auth_username" autocomplete="off";
        label for="auth_password" { "Password (basic)" }
        input id="auth_password" name="auth_password" type="password" autocomplete="off";
    }
}

/// The latency threshold inputs (`maxResponseTimeMs`, `slowAfter`).
fn latency_inputs(f: &EditValues) -> Markup {
    html! {
        label for="max_response_time_ms" { "Slow above (milliseconds; blank: no latency alert)" }
        input id="max_response_time_ms" name="max_response_time_ms" type="number" min="1" max="600000" value=(f.max_response_time_ms);
        label for="slow_after" { "Alert after this many slow checks in a row (1 to 20)" }
        input id="slow_after" name="slow_after" type="number" min="1" max="20" value=(f.slow_after);
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::{HOSTILE, assert_escaped, chrome};
    use super::*;

    fn view(values: EditValues, error: Option<&str>) -> EditEndpoint<'_> {
        EditEndpoint {
            id: Uuid::nil(),
            stored_name: "items",
            auth_type: "bearer",
            has_headers: true,
            has_request_body: false,
            values,
            version: 7,
            error,
        }
    }

    #[test]
    fn prefilled_never_a_secret_and_selected_options() {
        let values = EditValues {
            name: "items".into(),
            url: "https://a.example/items".into(),
            method: "POST".into(),
            environment: "staging".into(),
            diff_mode: "full".into(),
            timeout_ms: "5000".into(),
            schedule: "DAILY".into(),
            interval: String::new(),
            ignore_paths: "$.meta\n$.ts".into(),
            identity_keys: "$.commits=sha".into(),
            severity_overrides: "field-added=breaking".into(),
            follow_redirects: true,
            retries: "2".into(),
            ..EditValues::default()
        };
        let html = render(&chrome(), &view(values, None)).into_string();
        assert!(html.contains(
            "<form method=\"post\" action=\"/console/endpoints/00000000-0000-0000-0000-000000000000/edit\">\
             <input type=\"hidden\" name=\"_csrf\" value=\"csrf-token\">\
             <input type=\"hidden\" name=\"version\" value=\"7\">"
        ));
        assert!(html.contains("<option value=\"POST\" selected>POST</option>"));
        assert!(html.contains("<option value=\"full\" selected>full</option>"));
        assert!(html.contains("<option value=\"DAILY\" selected>daily</option>"));
        assert!(html.contains("name=\"follow_redirects\" value=\"yes\" checked>"));
        assert!(html.contains(">$.meta\n$.ts</textarea>"));
        assert!(
            html.contains("name=\"identity_keys\" rows=\"3\" cols=\"60\">$.commits=sha</textarea>")
        );
        assert!(html.contains(
            "name=\"severity_overrides\" rows=\"3\" cols=\"60\">field-added=breaking</textarea>"
        ));
        assert!(html.contains("Stored now: <strong>bearer</strong>"));
        assert!(html.contains("Headers: set. Request body: none."));
        assert!(html.contains("<option value=\"\" selected>keep the current credentials</option>"));
        assert!(html.contains("id=\"remove_auth\" name=\"remove_auth\" value=\"yes\">"));
        // Secret inputs carry no value.
        for name in ["auth_token", "auth_key", "auth_value", "auth_password"] {
            assert!(html.contains(&format!(
                "name=\"{name}\" type=\"password\" autocomplete=\"off\">"
            )));
        }
    }

    #[test]
    fn values_and_the_error_are_escaped() {
        let values = EditValues {
            name: HOSTILE.into(),
            description: HOSTILE.into(),
            ..EditValues::default()
        };
        let html = render(&chrome(), &view(values, Some(HOSTILE))).into_string();
        assert_escaped(&html);
        assert!(html.contains("<p class=\"error\" role=\"alert\">&lt;script&gt;"));
        assert!(!html.contains("</textarea><script"));
    }

    #[test]
    fn the_add_form_shares_the_fields_and_never_echoes_a_secret() {
        let values = EditValues {
            name: "items".into(),
            url: "https://a.example/items".into(),
            method: "GET".into(),
            schedule: "HOURLY".into(),
            ..EditValues::default()
        };
        let html = render_add(
            &chrome(),
            &AddEndpoint {
                values,
                error: Some("url: must be an absolute http or https URL"),
            },
        )
        .into_string();
        assert!(html.contains(
            "<form method=\"post\" action=\"/console/endpoints/new\">\
             <input type=\"hidden\" name=\"_csrf\" value=\"csrf-token\">\
             <label for=\"name\">Name</label>"
        ));
        assert!(html.contains("<p class=\"error\" role=\"alert\">url: must be an absolute"));
        assert!(html.contains("name=\"url\" value=\"https://a.example/items\""));
        assert!(html.contains("<option value=\"HOURLY\" selected>hourly</option>"));
        assert!(html.contains("<option value=\"\" selected>none</option>"));
        assert!(html.contains("id=\"save-endpoint\">Add endpoint</button>"));
        // No version, no "keep" wording, no remove choice.
        for absent in ["name=\"version\"", "keep the current", "remove_auth"] {
            assert!(!html.contains(absent), "{absent}");
        }
        for name in ["auth_token", "auth_key", "auth_value", "auth_password"] {
            assert!(html.contains(&format!(
                "name=\"{name}\" type=\"password\" autocomplete=\"off\">"
            )));
        }
        // The same fields as the edit form: every input name of one is in the other.
        let edit = render(&chrome(), &view(EditValues::default(), None)).into_string();
        let names = |h: &str| -> std::collections::BTreeSet<String> {
            h.split(" name=\"")
                .skip(1)
                .filter_map(|r| r.split('"').next().map(str::to_owned))
                .filter(|n| n != "version" && n != "remove_auth")
                .collect()
        };
        assert_eq!(names(&html), names(&edit));
    }
}
