//! Contracts on a real publisher's document (D21): every Stripe fixture validated against every
//! operation whose 200 response schema is that resource must pass, and each fixture broken at
//! one typed field must be caught at exactly that path. Also two OpenAPI 3.1 documents: Redocly's
//! Museum and our own `tests/data/ferries-3.1.yaml`.

use apidrift_diff::Options;
use apidrift_diff::contract::OpenApiDocument;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

type R = Result<(), Box<dyn std::error::Error>>;

/// `<workspace root>/tests/data`: the publishers' documents are in its `realworld` folder
/// (licences there).
fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// The schema name of an operation's 200 `application/json` response when it is a plain `$ref`.
fn ref_name(doc: &Value, method: &str, path: &str) -> Option<String> {
    let schema = doc
        .get("paths")?
        .get(path)?
        .get(method.to_ascii_lowercase())?
        .get("responses")?
        .get("200")?
        .get("content")?
        .get("application/json")?
        .get("schema")?;
    schema
        .get("$ref")?
        .as_str()?
        .strip_prefix("#/components/schemas/")
        .map(str::to_owned)
}

/// A member of the fixture to break, and the broken value: a string member whose schema says
/// `type: string` gets a number; else a required, non-nullable member gets `null`.
fn breakage(
    schemas: &Map<String, Value>,
    schema: &Value,
    fixture: &Map<String, Value>,
) -> Option<(String, Value)> {
    // A union of resources (`anyOf: [bank_account, card]`): the member the fixture's `object`
    // names.
    if schema.get("properties").is_none() {
        let object = fixture.get("object")?.as_str()?;
        let branch = ["anyOf", "oneOf"]
            .iter()
            .filter_map(|k| schema.get(*k)?.as_array())
            .flatten()
            .filter_map(|b| {
                b.get("$ref")?
                    .as_str()?
                    .strip_prefix("#/components/schemas/")
            })
            .find(|name| {
                schemas[*name]
                    .pointer("/properties/object/enum/0")
                    .and_then(Value::as_str)
                    == Some(object)
            })?;
        return breakage(schemas, &schemas[branch], fixture);
    }
    let props = schema.get("properties")?.as_object()?;
    let mut names: Vec<&String> = props.keys().collect();
    names.sort_by_key(|n| (n.as_str() != "id", n.as_str()));
    for name in &names {
        let p = &props[name.as_str()];
        if p.get("type") == Some(&Value::from("string"))
            && fixture.get(name.as_str()).is_some_and(Value::is_string)
        {
            return Some(((*name).clone(), Value::from(12345)));
        }
    }
    let required = schema.get("required")?.as_array()?;
    for name in required.iter().filter_map(Value::as_str) {
        let p = props.get(name)?;
        if p.get("nullable") != Some(&Value::Bool(true))
            && fixture.get(name).is_some_and(|v| !v.is_null())
        {
            return Some((name.to_owned(), Value::Null));
        }
    }
    None
}

#[test]
fn every_stripe_fixture_satisfies_its_operations_and_breakage_is_caught_at_its_path() -> R {
    let dir = data().join("realworld");
    let spec_bytes = std::fs::read(dir.join("stripe-spec3-2022-04.json"))?;
    let doc = OpenApiDocument::parse(&spec_bytes)?;
    let fixtures: Value =
        serde_json::from_slice(&std::fs::read(dir.join("stripe-fixtures3-2022-04.json"))?)?;
    let resources = fixtures["resources"]
        .as_object()
        .ok_or("fixtures: no resources")?;
    let schemas = doc.value()["components"]["schemas"]
        .as_object()
        .ok_or("spec: no schemas")?;

    // Which fixtures go with which schema: the fixture's key, else its `object` field when
    // the key is not a schema name.
    let mut by_schema: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (key, fixture) in resources {
        let name = if schemas.contains_key(key) {
            Some(key.clone())
        } else {
            fixture
                .get("object")
                .and_then(Value::as_str)
                .filter(|o| schemas.contains_key(*o))
                .map(str::to_owned)
        };
        if let Some(name) = name {
            by_schema.entry(name).or_default().push(key);
        }
    }

    let options = Options::default();
    let mut pairs = 0usize;
    let mut operations = 0usize;
    let mut failures: Vec<String> = Vec::new();
    let mut broken_checked = 0usize;
    let mut broken_done: BTreeMap<&str, ()> = BTreeMap::new();
    // Operations answering the same resource get the same contract: compiled once.
    let mut compiled: BTreeMap<String, (Value, apidrift_diff::contract::ContractValidator)> =
        BTreeMap::new();
    for op in doc.operations() {
        let Some(name) = ref_name(doc.value(), &op.method, &op.path) else {
            continue;
        };
        let Some(keys) = by_schema.get(&name) else {
            continue;
        };
        let contract = doc.contract(&op.label(), Some(200), None)?;
        if !compiled.contains_key(&name) {
            let v = contract.validator()?;
            compiled.insert(name.clone(), (contract.schema.clone(), v));
        }
        let (schema, validator) = compiled.get(&name).ok_or("compiled")?;
        assert_eq!(schema, &contract.schema, "{}", op.label());
        operations += 1;
        for key in keys {
            pairs += 1;
            let fixture = &resources[*key];
            let report = validator.check(fixture, &options);
            for c in &report.changes {
                failures.push(format!("{key} vs {}: {} {}", op.label(), c.path, c.message));
            }
            // The negative control, once per fixture.
            if broken_done.contains_key(key) {
                continue;
            }
            broken_done.insert(key, ());
            let object = fixture.as_object().ok_or("fixture is not an object")?;
            let (member, bad) = breakage(schemas, &schemas[&name], object)
                .ok_or_else(|| format!("{key}: no typed member to break"))?;
            let mut broken = object.clone();
            broken.insert(member.clone(), bad.clone());
            let report = validator.check(&Value::Object(broken), &options);
            let paths: Vec<&str> = report.changes.iter().map(|c| c.path.as_str()).collect();
            let expected = format!("$.{member}");
            assert!(
                !paths.is_empty() && paths.iter().all(|p| *p == expected),
                "{key} with {member} = {bad} against {}: {:?}",
                op.label(),
                report.changes
            );
            broken_checked += 1;
        }
    }
    println!(
        "stripe: {pairs} (fixture, operation) pairs over {operations} operations and {} fixtures; {broken_checked} broken fixtures caught at their path",
        broken_done.len()
    );
    assert!(pairs >= 300, "only {pairs} pairs ran");
    assert!(
        failures.is_empty(),
        "{} false violations:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(broken_checked, broken_done.len());
    Ok(())
}

/// Every example a 3.1 document gives for a JSON success response (`example`, or each of
/// `examples`) satisfies that response's contract, and a contract keeps only what it reaches.
/// `ferries-3.1.yaml` is ours: it uses the constructs of the Train Travel example document, whose
/// licence (CC BY-NC-SA 4.0) keeps it out of the repository (tests/data/realworld/README.md).
#[test]
fn the_31_documents_own_examples_satisfy_their_contracts() -> R {
    let data = data();
    for (file, expected) in [("realworld/museum-3.1.yaml", 7), ("ferries-3.1.yaml", 7)] {
        let bytes = std::fs::read(data.join(file))?;
        let doc = OpenApiDocument::parse(&bytes)?;
        assert!(doc.version().starts_with("3.1"), "{file}");
        let all_schemas = doc.value()["components"]["schemas"]
            .as_object()
            .map_or(0, Map::len);
        let mut checked = 0usize;
        for op in doc.operations() {
            for response in &op.responses {
                for media in &response.contract_media_types {
                    let status: u16 = response.status.parse()?;
                    let contract = doc.contract(&op.label(), Some(status), Some(media))?;
                    let kept = contract.schema["components"]["schemas"]
                        .as_object()
                        .map_or(0, Map::len);
                    assert!(
                        kept < all_schemas,
                        "{file} {}: {kept} schemas kept",
                        op.label()
                    );
                    let validator = contract.validator()?;
                    let object = &doc.value()["paths"][&op.path][op.method.to_ascii_lowercase()]["responses"]
                        [&response.status]["content"][media];
                    let mut examples: Vec<&Value> = object.get("example").into_iter().collect();
                    if let Some(map) = object.get("examples").and_then(Value::as_object) {
                        for e in map.values() {
                            // An example may be a `$ref` to `#/components/examples/…`.
                            let e = match e.get("$ref").and_then(Value::as_str) {
                                Some(r) => doc
                                    .value()
                                    .pointer(r.trim_start_matches('#'))
                                    .ok_or_else(|| format!("{file}: {r}"))?,
                                None => e,
                            };
                            examples.extend(e.get("value"));
                        }
                    }
                    for example in examples {
                        let report = validator.check(example, &Options::default());
                        assert!(
                            report.changes.is_empty(),
                            "{file} {} {media}: {:?}",
                            op.label(),
                            report.changes
                        );
                        checked += 1;
                    }
                }
            }
        }
        println!("{file}: {checked} examples checked");
        assert_eq!(checked, expected, "{file}: examples checked");
    }
    Ok(())
}
