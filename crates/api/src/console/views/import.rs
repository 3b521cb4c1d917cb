//! The OpenAPI import: the document form, the operations it lists, and what an import created
//! or skipped.

use super::layout::{Chrome, alert, csrf_field, page};
use maud::{Markup, html};

/// The import page.
#[derive(Debug)]
pub struct Import<'a> {
    /// The document in the form: empty, or the one just submitted.
    pub document: &'a str,
    /// The methods ticked in the form (GET and HEAD unless the visitor chose others).
    pub methods: Vec<&'a str>,
    pub outcome: Option<ImportOutcome<'a>>,
    /// Whether the user may delete endpoints (admin and above): an import that created some
    /// offers to delete them again.
    pub can_delete: bool,
}

/// The methods the form offers.
pub const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// What a submit found, or why it failed.
#[derive(Debug)]
pub enum ImportOutcome<'a> {
    Listed {
        operations: Vec<Operation<'a>>,
        /// The path parameters the operations need values for.
        parameters: Vec<Parameter<'a>>,
        /// Present when the visitor asked to import.
        imported: Option<Imported<'a>>,
    },
    Failed(String),
}

/// One operation of the document.
#[derive(Debug)]
pub struct Operation<'a> {
    /// `GET /users/{id}`: the value of its checkbox.
    pub label: String,
    /// Whether its checkbox is ticked.
    pub checked: bool,
    pub name: &'a str,
    pub method: &'a str,
    /// `None` without an absolute server URL.
    pub url: Option<&'a str>,
    pub has_response_contract: bool,
    /// Why it cannot be imported as it is; `None` when it can.
    pub not_importable: Option<&'a str>,
}

/// A path parameter the document gives no example for: the form asks for its value.
#[derive(Debug)]
pub struct Parameter<'a> {
    pub name: &'a str,
    /// The value typed so far (empty: none).
    pub value: String,
    /// The operations (`GET /repos/{owner}/{repo}`) whose path needs it.
    pub needed_by: Vec<String>,
}

/// The outcome of an import.
#[derive(Debug)]
pub struct Imported<'a> {
    pub created: u32,
    /// The endpoints it created: the undo form deletes them (admins and owners).
    pub created_ids: Vec<uuid::Uuid>,
    /// The operations skipped: name and reason.
    pub skipped: Vec<(&'a str, &'a str)>,
}

pub fn render(chrome: &Chrome, v: &Import<'_>) -> Markup {
    page(
        "Import",
        chrome,
        html! {
            h1 { "Import an OpenAPI document" }
            p { "OpenAPI 3.0, 3.1 or 3.2, JSON or YAML. Operations become endpoints with no authentication and their response contracts attached; path templates need example values (or the values you give once the operations are listed). Only GET and HEAD operations are imported unless you tick other methods; list the operations, then tick the ones to import." }
            @match &v.outcome {
                Some(ImportOutcome::Listed { imported: Some(i), .. }) => {
                    {
                        p class="flash" role="status" id="import-result" {
                            "Created " (i.created) " endpoint(s), skipped " (i.skipped.len()) "."
                        }
                        @if v.can_delete && !i.created_ids.is_empty() {
                            form method="get" action="/console/endpoints/delete" id="undo-import" {
                                @for id in &i.created_ids {
                                    input type="hidden" name="id" value=(id);
                                }
                                button type="submit" class="danger" {
                                    "Delete the " (i.created_ids.len()) " endpoint(s) this import created…"
                                }
                            }
                        }
                        @if !i.skipped.is_empty() {
                            h2 { "Skipped" }
                            ul id="import-skipped" {
                                @for (name, reason) in &i.skipped { li { (name) ": " (reason) } }
                            }
                        }
                    }
                }
                Some(ImportOutcome::Failed(message)) => (alert(message)),
                Some(ImportOutcome::Listed { imported: None, .. }) | None => {}
            }
            form method="post" action="/console/import" {
                (csrf_field(&chrome.csrf))
                label for="document" { "Document" }
                textarea id="document" name="document" rows="14" cols="80" required { (v.document) }
                fieldset id="methods" {
                    legend { "Methods to import" }
                    @for m in METHODS {
                        @let id = format!("method-{}", m.to_ascii_lowercase());
                        input type="checkbox" id=(id) name="methods" value=(m) checked[v.methods.contains(&m)];
                        " " label for=(id) { (m) } " "
                    }
                }
                @if let Some(ImportOutcome::Listed { parameters, .. }) = &v.outcome {
                @if !parameters.is_empty() {
                    fieldset id="parameters" {
                        legend { "Path values" }
                        p { "The document gives no example for these path parameters. Type a value for each (e.g. " code { "octocat" } "), tick the operations that need them, and import; List operations again shows their URLs." }
                        @for (i, p) in parameters.iter().enumerate() {
                            @let id = format!("parameter-{i}");
                            label for=(id) { code { (p.name) } " (needed by " (p.needed_by.join(", ")) ")" }
                            input id=(id) name={ "parameter." (p.name) } value=(p.value) autocomplete="off";
                        }
                    }
                }
                }
                p {
                    button type="submit" name="action" value="parse" { "List operations" }
                    " "
                    button type="submit" name="action" value="import" {
                        @if matches!(v.outcome, Some(ImportOutcome::Listed { .. })) { "Import selected" } @else { "Import" }
                    }
                }
                @if let Some(ImportOutcome::Listed { operations, .. }) = &v.outcome {
                    input type="hidden" name="listed" value="yes";
                    @for c in operations.iter().filter(|c| c.not_importable.is_none()) {
                        input type="hidden" name="importable" value=(c.label);
                    }
                    h2 { "Operations" }
                    table id="operations" {
                        thead { tr {
                            th scope="col" { "Import" }
                            th scope="col" { "Name" }
                            th scope="col" { "Method" }
                            th scope="col" { "URL" }
                            th scope="col" { "Contract" }
                            th scope="col" { "Importable" }
                        } }
                        tbody {
                            @for (i, c) in operations.iter().enumerate() {
                                @let id = format!("op-{i}");
                                tr {
                                    td {
                                        input type="checkbox" id=(id) name="operations" value=(c.label) checked[c.checked] aria-label=(c.label);
                                    }
                                    td { (c.name) }
                                    td { (c.method) }
                                    td { code { (c.url.unwrap_or("—")) } }
                                    td { @if c.has_response_contract { "yes" } @else { "no" } }
                                    td {
                                        @match c.not_importable {
                                            Some(reason) => { "no: " (reason) }
                                            None => "yes",
                                        }
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

    fn operation<'a>(name: &'a str, url: &'a str) -> Operation<'a> {
        Operation {
            label: format!("GET /{name}"),
            checked: true,
            name,
            method: "GET",
            url: Some(url),
            has_response_contract: true,
            not_importable: None,
        }
    }

    fn listed<'a>(operations: Vec<Operation<'a>>, imported: Option<Imported<'a>>) -> Import<'a> {
        Import {
            document: "{}",
            methods: vec!["GET", "HEAD"],
            outcome: Some(ImportOutcome::Listed {
                operations,
                parameters: Vec::new(),
                imported,
            }),
            can_delete: false,
        }
    }

    #[test]
    fn documents_names_urls_reasons_and_errors_are_escaped() {
        let mut refused = operation("a", "https://a.example/");
        refused.not_importable = Some(HOSTILE);
        for v in [
            Import {
                document: HOSTILE,
                methods: Vec::new(),
                outcome: None,
                can_delete: true,
            },
            listed(vec![operation(HOSTILE, "https://a.example/")], None),
            listed(vec![operation("a", HOSTILE)], None),
            listed(vec![refused], None),
            listed(
                Vec::new(),
                Some(Imported {
                    created: 0,
                    created_ids: Vec::new(),
                    skipped: vec![(HOSTILE, "r")],
                }),
            ),
            Import {
                document: "",
                methods: Vec::new(),
                outcome: Some(ImportOutcome::Failed(HOSTILE.into())),
                can_delete: true,
            },
        ] {
            assert_escaped(&render(&chrome(), &v).into_string());
        }
    }

    #[test]
    fn admins_can_undo_what_an_import_created() {
        let mut v = listed(
            Vec::new(),
            Some(Imported {
                created: 2,
                created_ids: vec![uuid::Uuid::nil(), uuid::Uuid::max()],
                skipped: Vec::new(),
            }),
        );
        assert!(!render(&chrome(), &v).into_string().contains("undo-import"));
        v.can_delete = true;
        let html = render(&chrome(), &v).into_string();
        assert!(html.contains(
            "<form method=\"get\" action=\"/console/endpoints/delete\" id=\"undo-import\">\
             <input type=\"hidden\" name=\"id\" value=\"00000000-0000-0000-0000-000000000000\">\
             <input type=\"hidden\" name=\"id\" value=\"ffffffff-ffff-ffff-ffff-ffffffffffff\">\
             <button type=\"submit\" class=\"danger\">Delete the 2 endpoint(s) this import created…</button></form>"
        ), "{html}");
    }

    #[test]
    fn operations_and_the_import_result() {
        let mut refused = operation("items", "https://a.example/items/{id}");
        refused.url = None;
        refused.has_response_contract = false;
        refused.not_importable = Some("path parameters without example values: id");
        let html = render(
            &chrome(),
            &listed(
                vec![operation("health", "https://a.example/healthz"), refused],
                Some(Imported {
                    created: 1,
                    created_ids: vec![uuid::Uuid::nil()],
                    skipped: vec![("items", "needs an example")],
                }),
            ),
        )
        .into_string();
        assert!(html.contains(
            "<tr><td><input type=\"checkbox\" id=\"op-0\" name=\"operations\" value=\"GET /health\" checked aria-label=\"GET /health\"></td>\
             <td>health</td><td>GET</td><td><code>https://a.example/healthz</code></td><td>yes</td><td>yes</td></tr>"
        ), "{html}");
        assert!(html.contains(
            "<td>items</td><td>GET</td><td><code>—</code></td><td>no</td>\
             <td>no: path parameters without example values: id</td></tr>"
        ));
        assert!(html.contains(
            "<p class=\"flash\" role=\"status\" id=\"import-result\">Created 1 endpoint(s), skipped 1.</p>\
             <h2>Skipped</h2><ul id=\"import-skipped\"><li>items: needs an example</li></ul>"
        ));
        // The method filter: GET and HEAD ticked, the others offered; the listed flag and the
        // CSRF field ride in the same form as the operations' checkboxes.
        assert!(html.contains(
            "<input type=\"checkbox\" id=\"method-get\" name=\"methods\" value=\"GET\" checked>"
        ));
        assert!(html.contains(
            "<input type=\"checkbox\" id=\"method-delete\" name=\"methods\" value=\"DELETE\">"
        ));
        assert!(html.contains("<input type=\"hidden\" name=\"listed\" value=\"yes\">"));
        assert!(html.contains("Import selected"));
        let form = html
            .split("action=\"/console/import\"")
            .nth(1)
            .and_then(|f| f.split("</form>").next())
            .unwrap_or("");
        assert!(form.contains("name=\"_csrf\"") && form.contains("id=\"op-1\""));
        assert!(html.contains("required>{}</textarea>"));
    }

    #[test]
    fn path_values_are_asked_for_by_name() {
        let mut v = listed(vec![operation("health", "https://a.example/healthz")], None);
        if let Some(ImportOutcome::Listed { parameters, .. }) = &mut v.outcome {
            parameters.push(Parameter {
                name: "owner",
                value: "octo\"cat".into(),
                needed_by: vec!["GET /repos/{owner}".into(), "GET /users/{owner}".into()],
            });
            parameters.push(Parameter {
                name: HOSTILE,
                value: String::new(),
                needed_by: vec![HOSTILE.into()],
            });
        }
        let html = render(&chrome(), &v).into_string();
        assert_escaped(&html);
        assert!(html.contains(
            "<label for=\"parameter-0\"><code>owner</code> (needed by GET /repos/{owner}, GET /users/{owner})</label>\
             <input id=\"parameter-0\" name=\"parameter.owner\" value=\"octo&quot;cat\" autocomplete=\"off\">"
        ), "{html}");
        // Inside the form, with the importable operations remembered.
        let form = html
            .split("action=\"/console/import\"")
            .nth(1)
            .and_then(|f| f.split("</form>").next())
            .unwrap_or("");
        assert!(form.contains("id=\"parameters\""));
        assert!(form.contains("<input type=\"hidden\" name=\"importable\" value=\"GET /health\">"));
        // No parameters: no fieldset.
        let html = render(&chrome(), &listed(Vec::new(), None)).into_string();
        assert!(!html.contains("id=\"parameters\""));
    }
}
