//! `cargo bench -p apidrift-diff --bench contracts`: response contracts on Stripe's OpenAPI 3.0
//! description (`tests/data/realworld`, D21, D22). Each figure has its yardstick in the same run:
//!
//! * `validate/*`: one Stripe charge checked against its prepared (compiled) contract, next to
//!   `serde_json` parsing the same response bytes;
//! * `load_4MB/*`, `load_16MB/*`: the document loaded as an `OpenApiDocument` (and, for 4 MB, its
//!   GET contracts built), next to `serde_json` parsing the same bytes; the 16 MB document is
//!   Stripe's with its `paths` copied under other names;
//! * `load_yaml_4MB/*`: the same document written as YAML, next to `serde_json` on the JSON.

use apidrift_diff::Options;
use apidrift_diff::contract::OpenApiDocument;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

/// A file of `<workspace root>/tests/data/realworld` (licences there): a missing one is a failure.
fn realworld(file: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/realworld")
        .join(file);
    match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

/// Stripe's document with its `paths` copied until it is at least `min` bytes.
fn grown(doc: &Value, min: usize) -> Vec<u8> {
    let mut doc = doc.clone();
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    let mut copy = 1;
    loop {
        let bytes = serde_json::to_vec(&doc).unwrap_or_default();
        if bytes.len() >= min || paths.is_empty() {
            return bytes;
        }
        if let Some(all) = doc["paths"].as_object_mut() {
            for (k, v) in &paths {
                all.insert(format!("/copy{copy}{k}"), v.clone());
            }
        }
        copy += 1;
    }
}

fn bench(c: &mut Criterion) {
    let spec = realworld("stripe-spec3-2022-04.json");
    let fixtures = realworld("stripe-fixtures3-2022-04.json");
    let Ok(doc) = OpenApiDocument::parse(&spec) else {
        eprintln!("skipped: the Stripe document does not load");
        return;
    };
    let fixtures: Value = serde_json::from_slice(&fixtures).unwrap_or_default();
    let charge = fixtures["resources"]["charge"].clone();
    let charge_bytes = serde_json::to_vec(&charge).unwrap_or_default();
    let Ok(contract) = doc.contract("GET /v1/charges/{charge}", Some(200), None) else {
        eprintln!("skipped: no contract for GET /v1/charges/{{charge}}");
        return;
    };
    let Ok(validator) = contract.validator() else {
        return;
    };
    let options = Options::default();
    eprintln!(
        "charge: {} bytes; its contract: {} bytes",
        charge_bytes.len(),
        contract.schema.to_string().len()
    );

    let mut g = c.benchmark_group("validate");
    g.sample_size(50)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("yardstick_serde_json_parse", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&charge_bytes)).map(|v| v.is_object()))
    });
    g.bench_function("check_valid_charge", |b| {
        b.iter(|| validator.check(black_box(&charge), &options).changes.len())
    });
    let mut broken = charge.clone();
    broken["amount"] = Value::from("100");
    broken["customer"] = Value::from(12345);
    g.bench_function("check_charge_with_2_violations", |b| {
        b.iter(|| validator.check(black_box(&broken), &options).changes.len())
    });
    g.bench_function("compile_contract", |b| {
        b.iter(|| contract.validator().map(|v| v.media_type().is_some()))
    });
    g.finish();

    let gets: Vec<String> = doc
        .operations()
        .into_iter()
        .filter(|o| o.method == "GET" && o.has_json_schema())
        .map(|o| o.label())
        .collect();
    let mut g = c.benchmark_group("load_4MB");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    g.bench_function("yardstick_serde_json_parse", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&spec)).map(|v| v.is_object()))
    });
    g.bench_function("load_document", |b| {
        b.iter(|| OpenApiDocument::parse(black_box(&spec)).map(|d| d.version().len()))
    });
    g.bench_function(
        format!("load_and_build_{}_get_contracts", gets.len()),
        |b| {
            b.iter(|| {
                let Ok(d) = OpenApiDocument::parse(black_box(&spec)) else {
                    return 0;
                };
                gets.iter()
                    .filter_map(|op| d.contract(op, None, None).ok())
                    .count()
            })
        },
    );
    g.finish();

    let big = grown(doc.value(), 15 * 1024 * 1024);
    eprintln!("grown document: {} bytes", big.len());
    let mut g = c.benchmark_group("load_16MB");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(8));
    g.bench_function("yardstick_serde_json_parse", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&big)).map(|v| v.is_object()))
    });
    g.bench_function("load_document_and_list_operations", |b| {
        b.iter(|| OpenApiDocument::parse(black_box(&big)).map(|d| d.operations().len()))
    });
    g.finish();

    let yaml = serde_yaml_ng::to_string(doc.value()).unwrap_or_default();
    eprintln!("YAML document: {} bytes", yaml.len());
    let mut g = c.benchmark_group("load_yaml_4MB");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(10));
    g.bench_function("yardstick_serde_json_parse_of_the_json", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&spec)).map(|v| v.is_object()))
    });
    g.bench_function("load_yaml_document", |b| {
        b.iter(|| OpenApiDocument::parse(black_box(yaml.as_bytes())).map(|d| d.version().len()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
