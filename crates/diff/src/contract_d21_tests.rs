//! One test per rule of D21 (contracts on real documents), on OpenAPI 3.0 and 3.1 documents.

use super::*;
use crate::IgnorePattern;
use serde_json::json;

type R = Result<(), Box<dyn std::error::Error>>;

/// A 3.0 document with `nullable` beside every construct.
const NULLABLE_30: &str = r##"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /orders/{id}:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Order'}
components:
  schemas:
    Order:
      type: object
      required: [id, customer, shipping, billing, payment, status, note, items]
      properties:
        id: {type: string}
        customer:
          nullable: true
          anyOf:
            - {type: string}
            - {$ref: '#/components/schemas/Customer'}
        shipping:
          nullable: true
          allOf:
            - {$ref: '#/components/schemas/Address'}
        billing:
          $ref: '#/components/schemas/Address'
          nullable: true
        payment:
          nullable: true
          oneOf:
            - {$ref: '#/components/schemas/Card'}
            - {$ref: '#/components/schemas/BankAccount'}
        status:
          type: string
          enum: [open, paid]
          nullable: true
        note:
          enum: [gift, none]
          nullable: true
        items:
          type: array
          items: {$ref: '#/components/schemas/Item'}
        plain:
          allOf:
            - {$ref: '#/components/schemas/Address'}
    Customer:
      type: object
      required: [id]
      properties:
        id: {type: string}
        email: {type: string, nullable: true}
    Address:
      type: object
      required: [city]
      properties:
        city: {type: string}
        line2: {type: string, nullable: true, description: "Second line", example: "Flat 2"}
    Card:
      type: object
      required: [object, id, last4]
      properties:
        object: {type: string, enum: [card]}
        id: {type: string}
        last4: {type: string}
    BankAccount:
      type: object
      required: [object, id, routing]
      properties:
        object: {type: string, enum: [bank_account]}
        id: {type: string}
        routing: {type: string}
    Item:
      type: object
      required: [id, quantity]
      properties:
        id: {type: integer}
        quantity: {type: integer, minimum: 1}
    Unused:
      type: object
      description: "A schema no response reaches"
      properties:
        blob: {type: string, description: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}
"##;

fn order() -> Value {
    json!({
        "id": "or_1",
        "customer": null,
        "shipping": null,
        "billing": null,
        "payment": null,
        "status": null,
        "note": null,
        "items": [{"id": 1, "quantity": 2}]
    })
}

fn with(mut base: Value, key: &str, value: Value) -> Value {
    if let Some(m) = base.as_object_mut() {
        m.insert(key.to_owned(), value);
    }
    base
}

fn paths(report: &Report) -> Vec<&str> {
    report.changes.iter().map(|c| c.path.as_str()).collect()
}

fn order_validator() -> Result<ContractValidator, ContractError> {
    Contract::from_openapi(NULLABLE_30, "GET /orders/{id}", Some(200))?.validator()
}

#[test]
fn nullable_30_admits_null_beside_every_construct() -> R {
    let v = order_validator()?;
    let o = Options::default();
    // Every member null: accepted (anyOf, allOf, $ref sibling, oneOf, enum with and without
    // type).
    assert_eq!(paths(&v.check(&order(), &o)), Vec::<&str>::new());
    // And each non-null value still has to fit.
    let full = json!({
        "id": "or_1",
        "customer": {"id": "cus_1", "email": null},
        "shipping": {"city": "Paris", "line2": null},
        "billing": {"city": "Lyon"},
        "payment": {"object": "card", "id": "card_1", "last4": "4242"},
        "status": "open",
        "note": "gift",
        "items": []
    });
    assert_eq!(paths(&v.check(&full, &o)), Vec::<&str>::new());
    assert!(
        v.check(&with(order(), "customer", json!("cus_1")), &o)
            .changes
            .is_empty()
    );
    Ok(())
}

#[test]
fn nullable_30_failures_are_reported_inside_the_value() -> R {
    let v = order_validator()?;
    let o = Options::default();
    // allOf: the wrong member of the address, not the address.
    let r = v.check(&with(order(), "shipping", json!({"city": 7})), &o);
    assert_eq!(paths(&r), vec!["$.shipping.city"]);
    assert_eq!(r.changes[0].message, "expected string, got integer");
    assert_eq!(r.changes[0].new_value, Some(json!(7)));
    // $ref sibling.
    let r = v.check(&with(order(), "billing", json!({})), &o);
    assert_eq!(paths(&r), vec!["$.billing.city"]);
    assert_eq!(r.changes[0].message, "required member is missing");
    // anyOf [string, Customer]: an object is checked as a customer.
    let r = v.check(&with(order(), "customer", json!({"id": 5})), &o);
    assert_eq!(paths(&r), vec!["$.customer.id"]);
    // No alternative has the value's type: one violation at the value, naming them.
    let r = v.check(&with(order(), "customer", json!(12345)), &o);
    assert_eq!(paths(&r), vec!["$.customer"]);
    assert_eq!(
        r.changes[0].message,
        "expected string, object or null, got integer"
    );
    // enum with and without type.
    let r = v.check(&with(order(), "status", json!("void")), &o);
    assert_eq!(paths(&r), vec!["$.status"]);
    assert!(
        r.changes[0]
            .message
            .contains("not one of the allowed values")
    );
    let r = v.check(&with(order(), "note", json!("other")), &o);
    assert_eq!(paths(&r), vec!["$.note"]);
    // Without nullable, null is refused (allOf).
    let r = v.check(&with(order(), "plain", Value::Null), &o);
    assert_eq!(paths(&r), vec!["$.plain"]);
    assert_eq!(r.changes[0].message, "expected object, got null");
    Ok(())
}

#[test]
fn one_of_failures_are_reported_at_the_best_branch_path_with_a_short_message() -> R {
    let v = order_validator()?;
    let o = Options::default();
    // A card with a wrong id: the card branch fits best (its `object` matches).
    let card = json!({"object": "card", "id": 42, "last4": "4242", "extra": "x".repeat(500)});
    let r = v.check(&with(order(), "payment", card), &o);
    assert_eq!(paths(&r), vec!["$.payment.id"]);
    let c = &r.changes[0];
    assert_eq!(c.message, "expected string, got integer");
    assert!(c.message.len() < 80);
    // A bank account missing its routing number.
    let bank = json!({"object": "bank_account", "id": "ba_1"});
    let r = v.check(&with(order(), "payment", bank), &o);
    assert_eq!(paths(&r), vec!["$.payment.routing"]);
    // In an array, at the item's path.
    let items = json!([{"id": 1, "quantity": 1}, {"id": "2", "quantity": 0}]);
    let r = v.check(&with(order(), "items", items), &o);
    assert_eq!(paths(&r), vec!["$.items[1].id", "$.items[1].quantity"]);
    // No message repeats the body.
    let body = json!({"id": 1, "secret": "s3cr3t-value"});
    let r = v.check(&body, &o);
    assert!(!r.changes.is_empty());
    assert!(r.changes.iter().all(|c| !c.message.contains("s3cr3t")));
    Ok(())
}

#[test]
fn violations_at_one_path_keep_distinct_ids() -> R {
    let v = order_validator()?;
    let o = Options::default();
    // Seven missing members: seven paths, seven ids.
    let r = v.check(&json!({"id": "or_1"}), &o);
    assert_eq!(r.changes.len(), 7);
    let ids: HashSet<&str> = r.changes.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), 7);
    // Two keywords failing at one path: one path, two ids.
    let r = v.check(
        &with(order(), "items", json!([{"id": 1, "quantity": 0.5}])),
        &o,
    );
    assert_eq!(
        paths(&r),
        vec!["$.items[0].quantity", "$.items[0].quantity"]
    );
    assert_ne!(r.changes[0].id, r.changes[1].id);
    let schema = json!({
        "openapi": "3.1.0",
        "paths": {"/a": {"get": {"responses": {"200": {"content": {"application/json": {
            "schema": {"type": "object", "properties": {"code": {"type": "string", "minLength": 3, "pattern": "^[a-z]+$"}}}
        }}}}}}}
    })
    .to_string();
    let c = Contract::from_openapi(&schema, "GET /a", None)?;
    let r = c.validator()?.check(&json!({"code": "A1"}), &o);
    assert_eq!(paths(&r), vec!["$.code", "$.code"]);
    assert_ne!(r.changes[0].id, r.changes[1].id);
    // Ids are stable and come from (path, keyword path).
    let again = c.validator()?.check(&json!({"code": "A1"}), &o);
    assert_eq!(r.changes[0].id, again.changes[0].id);
    assert_eq!(r.changes[0].id.len(), 16);
    assert_ne!(
        r.changes[0].id,
        crate::change_id("$.code", r.changes[0].change_type)
    );
    // Ignore patterns apply to the member paths.
    let ignore = Options {
        ignore: vec![IgnorePattern::parse("$.code")?],
        ..Options::default()
    };
    assert!(
        c.validator()?
            .check(&json!({"code": "A1"}), &ignore)
            .changes
            .is_empty()
    );
    Ok(())
}

/// A 3.1 document with two JSON media types, a `oneOf`, `null` in type arrays, an external
/// `$ref` in an operation and one in an unreachable schema.
const DOC_31: &str = r##"{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/repos/{owner}/{repo}/stargazers": {"get": {"responses": {"200": {"description": "ok", "content": {
      "application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/simple-user"}}},
      "application/vnd.github.v3.star+json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/stargazer"}}},
      "text/html": {"schema": {"type": "string"}}
    }}}}},
    "/pets/{id}": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
      "oneOf": [{"$ref": "#/components/schemas/Cat"}, {"$ref": "#/components/schemas/Dog"}]
    }}}}}}},
    "/remote": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
      "$ref": "common.json#/components/schemas/Thing"
    }}}}}}},
    "/remote-item": {"$ref": "paths/item.json"},
    "/xml": {"get": {"responses": {"200": {"description": "ok", "content": {"application/xml": {"schema": {"type": "object"}}}}}}}
  },
  "components": {"schemas": {
    "simple-user": {"type": "object", "required": ["login", "id"], "properties": {
      "login": {"type": "string"}, "id": {"type": "integer"}, "name": {"type": ["string", "null"]}}},
    "stargazer": {"type": "object", "required": ["starred_at", "user"], "properties": {
      "starred_at": {"type": "string"}, "user": {"anyOf": [{"type": "null"}, {"$ref": "#/components/schemas/simple-user"}]}}},
    "Cat": {"type": "object", "required": ["kind", "id", "lives"], "properties": {
      "kind": {"const": "cat"}, "id": {"type": "string"}, "lives": {"type": "integer"}}},
    "Dog": {"type": "object", "required": ["kind", "id", "breed"], "properties": {
      "kind": {"const": "dog"}, "id": {"type": "string"}, "breed": {"type": "string"}}},
    "Elsewhere": {"$ref": "other.json#/Thing"},
    "Big": {"type": "object", "description": "unreachable"}
  }}
}"##;

#[test]
fn the_media_type_of_the_response_picks_the_schema() -> R {
    let doc = OpenApiDocument::parse(DOC_31.as_bytes())?;
    let c = doc.contract("GET /repos/{owner}/{repo}/stargazers", Some(200), None)?;
    assert_eq!(c.media_type().as_deref(), Some("application/json"));
    assert_eq!(
        c.media_types(),
        vec!["application/json", "application/vnd.github.v3.star+json"]
    );
    let stars = json!([{"starred_at": "2020-01-01T00:00:00Z", "user": {"login": "a", "id": 1, "name": null}}]);
    let users = json!([{"login": "a", "id": 1}]);
    let o = Options::default();
    // Exact (parameters and case ignored).
    let star = c.validator_for(Some("application/vnd.github.v3.star+json; charset=utf-8"))?;
    assert_eq!(
        star.media_type(),
        Some("application/vnd.github.v3.star+json")
    );
    assert!(star.check(&stars, &o).changes.is_empty());
    assert!(!star.check(&users, &o).changes.is_empty());
    // The same +json family (another version segment).
    let family = c.validator_for(Some("Application/VND.github.star+json"))?;
    assert_eq!(
        family.media_type(),
        Some("application/vnd.github.v3.star+json")
    );
    // Then application/json; no content type: the default.
    for ct in [Some("application/problem+json"), Some("text/html"), None] {
        let v = c.validator_for(ct)?;
        assert_eq!(v.media_type(), Some("application/json"), "{ct:?}");
        assert!(v.check(&users, &o).changes.is_empty());
        assert!(!v.check(&stars, &o).changes.is_empty());
    }
    // Chosen when building: the default becomes the star schema.
    let c2 = doc.contract(
        "GET /repos/{owner}/{repo}/stargazers",
        None,
        Some("application/vnd.github.v3.star+json"),
    )?;
    assert!(c2.validator()?.check(&stars, &o).changes.is_empty());
    // The rules on their own, with wildcards.
    let available = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let a = available(&["application/hal+json", "*/*"]);
    assert_eq!(select_media_type(&a, "application/hal+json"), Some(0));
    assert_eq!(select_media_type(&a, "application/json"), Some(1));
    assert_eq!(
        select_media_type(&available(&["application/xml"]), "application/json"),
        None
    );
    // A JSON media type the response does not have, and no application/json: a clear error.
    let err = doc
        .contract("GET /xml", None, None)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("no JSON content with a schema") && err.contains("application/xml"),
        "{err}"
    );
    let only_star = r##"{"openapi": "3.0.3", "paths": {"/s": {"get": {"responses": {"200": {"content": {
        "application/vnd.x.v2+json": {"schema": {"type": "object"}}}}}}}}}"##;
    let doc30 = OpenApiDocument::parse(only_star.as_bytes())?;
    let err = doc30
        .contract("GET /s", None, Some("application/hal+json"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("no media type matching application/hal+json")
            && err.contains("application/vnd.x.v2+json")
            && err.contains("pass one of those"),
        "{err}"
    );
    assert_eq!(
        doc30
            .contract("GET /s", None, None)?
            .media_type()
            .as_deref(),
        Some("application/vnd.x.v2+json")
    );
    Ok(())
}

#[test]
fn best_branch_paths_in_31() -> R {
    let doc = OpenApiDocument::parse(DOC_31.as_bytes())?;
    let v = doc.contract("GET /pets/{id}", None, None)?.validator()?;
    let o = Options::default();
    assert!(
        v.check(&json!({"kind": "cat", "id": "c1", "lives": 9}), &o)
            .changes
            .is_empty()
    );
    let r = v.check(&json!({"kind": "dog", "id": 7, "breed": "lab"}), &o);
    assert_eq!(paths(&r), vec!["$.id"]);
    let r = v.check(&json!({"kind": "cat", "id": "c1"}), &o);
    assert_eq!(paths(&r), vec!["$.lives"]);
    let r = v.check(&json!("cat"), &o);
    assert_eq!(paths(&r), vec!["$"]);
    assert_eq!(r.changes[0].message, "expected object, got string");
    // 3.1 `null` in a type array and in anyOf.
    let c = doc.contract("GET /repos/{owner}/{repo}/stargazers", None, None)?;
    let star = c.validator_for(Some("application/vnd.github.v3.star+json"))?;
    let r = star.check(&json!([{"starred_at": "x", "user": null}, {"starred_at": "y", "user": {"login": 1, "id": 2}}]), &o);
    assert_eq!(paths(&r), vec!["$[1].user.login"]);
    Ok(())
}

#[test]
fn external_refs_are_a_clear_error_naming_them() -> R {
    let doc = OpenApiDocument::parse(DOC_31.as_bytes())?;
    for status in [None, Some(200)] {
        let err = doc
            .contract("GET /remote", status, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("common.json#/components/schemas/Thing")
                && err.contains("bundle the document first"),
            "{err}"
        );
        assert!(!err.contains("2xx"), "{err}");
    }
    let err = doc
        .contract("GET /remote-item", Some(200), None)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("paths/item.json") && err.contains("bundle"),
        "{err}"
    );
    // An external reference no response reaches does not matter.
    assert!(doc.contract("GET /pets/{id}", None, None).is_ok());
    // 3.0 too, and a reference within the document that does not resolve.
    let doc30 = r##"{"openapi": "3.0.1", "paths": {"/a": {"get": {"responses": {"200": {"content": {"application/json": {
        "schema": {"type": "object", "properties": {"b": {"$ref": "./b.yaml"}, "c": {"$ref": "#/components/schemas/Nope"}}}}}}}}}}}"##;
    let err = Contract::from_openapi(doc30, "GET /a", Some(200))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("./b.yaml") && err.contains("bundle"), "{err}");
    Ok(())
}

#[test]
fn a_stored_contract_keeps_only_the_reachable_schemas() -> R {
    let c = Contract::from_openapi(NULLABLE_30, "GET /orders/{id}", None)?;
    let mut names: Vec<&String> = c.schema["components"]["schemas"]
        .as_object()
        .ok_or("no schemas")?
        .keys()
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "Address",
            "BankAccount",
            "Card",
            "Customer",
            "Item",
            "Order"
        ]
    );
    assert_eq!(c.schema["$ref"], json!("#/components/schemas/Order"));
    assert!(c.schema.get("paths").is_none());
    // Annotations are not kept; the 3.0 nullable is translated.
    let text = c.schema.to_string();
    assert!(
        !text.contains("Second line") && !text.contains("Flat 2"),
        "{text}"
    );
    assert!(!text.contains("nullable"));
    // Storable: a round trip through JSON validates the same way.
    let stored: Contract = serde_json::from_str(&serde_json::to_string(&c)?)?;
    assert_eq!(stored, c);
    assert!(
        stored
            .validator()?
            .check(&order(), &Options::default())
            .changes
            .is_empty()
    );
    // 3.1: an inline schema stays where the document has it (path templates encoded).
    let doc = OpenApiDocument::parse(DOC_31.as_bytes())?;
    let c = doc.contract("GET /repos/{owner}/{repo}/stargazers", None, None)?;
    assert_eq!(
        c.schema["$ref"],
        json!(
            "#/paths/~1repos~1%7Bowner%7D~1%7Brepo%7D~1stargazers/get/responses/200/content/application~1json/schema"
        )
    );
    let mut names: Vec<&String> = c.schema["components"]["schemas"]
        .as_object()
        .ok_or("no schemas")?
        .keys()
        .collect();
    names.sort();
    assert_eq!(names, vec!["simple-user", "stargazer"]);
    Ok(())
}

#[test]
fn moved_nullable_schemas_keep_references_into_them_valid() -> R {
    // `Wrapper` is nullable beside allOf (so translation moves it under anyOf/1) and another
    // schema refers into it.
    let doc = r##"{"openapi": "3.0.0", "paths": {"/a": {"get": {"responses": {"200": {"content": {"application/json": {
        "schema": {"type": "object", "properties": {
          "w": {"$ref": "#/components/schemas/Wrapper"},
          "inner": {"$ref": "#/components/schemas/Wrapper/allOf/0/properties/n"}}}}}}}}}},
      "components": {"schemas": {"Wrapper": {"nullable": true, "allOf": [
        {"type": "object", "properties": {"n": {"type": "integer"}}}]}}}}"##;
    let c = Contract::from_openapi(doc, "GET /a", None)?;
    let v = c.validator()?;
    let o = Options::default();
    assert!(
        v.check(&json!({"w": null, "inner": 3}), &o)
            .changes
            .is_empty()
    );
    let r = v.check(&json!({"w": {"n": "x"}, "inner": "y"}), &o);
    let mut found = paths(&r);
    found.sort();
    assert_eq!(found, vec!["$.inner", "$.w.n"]);
    Ok(())
}

#[test]
fn operations_are_listed_with_their_success_media_types() -> R {
    let doc = OpenApiDocument::parse(DOC_31.as_bytes())?;
    assert_eq!(doc.version(), "3.1.0");
    let ops = doc.operations();
    let labels: Vec<String> = ops.iter().map(Operation::label).collect();
    assert_eq!(
        labels,
        vec![
            "GET /pets/{id}",
            "GET /remote",
            "GET /repos/{owner}/{repo}/stargazers",
            "GET /xml"
        ]
    );
    let stars = &ops[2];
    assert_eq!(stars.responses.len(), 1);
    assert_eq!(stars.responses[0].status, "200");
    assert_eq!(
        stars.responses[0].contract_media_types,
        vec!["application/json", "application/vnd.github.v3.star+json"]
    );
    assert_eq!(stars.responses[0].media_types.len(), 3);
    assert!(stars.has_json_schema());
    assert!(!ops[3].has_json_schema());
    // YAML parses too, and the version is checked.
    let yaml = OpenApiDocument::parse(NULLABLE_30.as_bytes())?;
    assert!(yaml.is_30());
    assert_eq!(yaml.operations()[0].label(), "GET /orders/{id}");
    let err = OpenApiDocument::parse(b"swagger: '2.0'\ninfo: {}")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("Swagger 2.0") && err.contains("convert it"),
        "{err}"
    );
    Ok(())
}

#[test]
fn refusals_say_what_to_do_next() -> R {
    let doc = OpenApiDocument::parse(NULLABLE_30.as_bytes())?;
    let err = |op: &str, status| {
        doc.contract(op, status, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let e = err("POST /orders/{id}", None);
    assert!(e.contains("/orders/{id} has GET; pass one of them"), "{e}");
    let e = err("GET /nowhere", None);
    assert!(
        e.contains("pass one of the document's 1 paths, e.g. GET /orders/{id}"),
        "{e}"
    );
    let e = err("GET /orders/{id}", Some(404));
    assert!(
        e.contains("its responses: 200") && e.contains("pass one of those"),
        "{e}"
    );
    let no_2xx = r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"responses": {"404": {"description": "x"}}}}}}"#;
    let e = Contract::from_openapi(no_2xx, "GET /a", None)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("its responses: 404") && e.contains("pass the status"),
        "{e}"
    );
    Ok(())
}

/// A small document with a name listed twice in `required` and the 3.0 boolean bound, as
/// `version` (3.0 or 3.1) writes it.
fn lenient_doc(version: &str) -> String {
    format!(
        r##"
openapi: {version}
info: {{title: t, version: "1"}}
paths:
  /things:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [id, name, id]
                properties:
                  id: {{type: integer, minimum: 0, exclusiveMinimum: true}}
                  name: {{type: string}}
                  size: {{type: number, maximum: 10, exclusiveMaximum: false}}
"##
    )
}

#[test]
fn a_name_required_twice_is_required_once() -> R {
    for version in ["3.0.3", "3.1.0"] {
        let v = Contract::from_openapi(&lenient_doc(version), "GET /things", None)?.validator()?;
        let o = Options::default();
        let ok = json!({"id": 1, "name": "a"});
        assert_eq!(paths(&v.check(&ok, &o)), Vec::<&str>::new(), "{version}");
        let missing = v.check(&json!({"name": "a"}), &o);
        assert_eq!(paths(&missing), vec!["$.id"], "{version}");
        assert_eq!(missing.changes.len(), 1, "{version}: reported once");
    }
    Ok(())
}

#[test]
fn boolean_exclusive_bounds_in_31_keep_their_30_meaning() -> R {
    for version in ["3.0.3", "3.1.0"] {
        let v = Contract::from_openapi(&lenient_doc(version), "GET /things", None)?.validator()?;
        let o = Options::default();
        let at_bound = v.check(&json!({"id": 0, "name": "a"}), &o);
        assert_eq!(paths(&at_bound), vec!["$.id"], "{version}");
        let inclusive_max = v.check(&json!({"id": 1, "name": "a", "size": 10}), &o);
        assert_eq!(paths(&inclusive_max), Vec::<&str>::new(), "{version}");
    }
    let doc = OpenApiDocument::parse(lenient_doc("3.1.0").as_bytes())?;
    let notes = doc.lenient_readings();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with(
            "#/paths/~1things/get/responses/200/content/application~1json/schema/properties/id: boolean `exclusiveMinimum: true`"
        ),
        "{notes:?}"
    );
    let doc30 = OpenApiDocument::parse(lenient_doc("3.0.3").as_bytes())?;
    assert!(doc30.lenient_readings().is_empty());
    Ok(())
}

#[test]
fn nullable_in_31_is_read_as_30_reads_it() -> R {
    let doc31 = NULLABLE_30.replace("openapi: 3.0.3", "openapi: 3.1.0");
    let v = Contract::from_openapi(&doc31, "GET /orders/{id}", Some(200))?.validator()?;
    let o = Options::default();
    // Every member null: accepted, beside every construct, as in 3.0.
    assert_eq!(paths(&v.check(&order(), &o)), Vec::<&str>::new());
    // A non-null value still has to fit, and is reported inside the value.
    let r = v.check(&with(order(), "shipping", json!({"city": 7})), &o);
    assert_eq!(paths(&r), vec!["$.shipping.city"]);
    let notes = OpenApiDocument::parse(doc31.as_bytes())?.lenient_readings();
    assert!(
        notes
            .iter()
            .any(|n| n
                .starts_with("#/components/schemas/Order/properties/customer: `nullable: true`")),
        "{notes:?}"
    );
    // An example's data is not a schema.
    assert!(notes.iter().all(|n| !n.contains("/example")), "{notes:?}");
    Ok(())
}

#[test]
fn a_refused_schema_is_named_by_its_place_and_operation() -> R {
    let doc = r##"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /a:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/T'}
components:
  schemas:
    T:
      type: object
      properties:
        id: {type: intger}
"##;
    let err = Contract::from_openapi(doc, "GET /a", None)
        .and_then(|c| c.validator())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("(at #/components/schemas/T/properties/id/type, reached from GET /a)"),
        "{err}"
    );
    Ok(())
}
