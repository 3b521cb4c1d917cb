//! Load figures for an OpenAPI document, as a process:
//! `cargo run --release -p apidrift-diff --example contracts -- DOCUMENT [METHOD]`.
//! Prints the time to parse the bytes with `serde_json`/`serde_yaml_ng` alone (the yardstick),
//! to load it as an [`OpenApiDocument`], to list its operations, to build the contract of every
//! operation of METHOD (default GET) and to compile them, with the contracts' sizes.

use apidrift_diff::contract::OpenApiDocument;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: contracts DOCUMENT [METHOD]")?;
    let method = args
        .next()
        .unwrap_or_else(|| "GET".into())
        .to_ascii_uppercase();
    let bytes = std::fs::read(&path)?;
    let json = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');

    let t = Instant::now();
    let raw: serde_json::Value = if json {
        serde_json::from_slice(&bytes)?
    } else {
        serde_yaml_ng::from_slice(&bytes)?
    };
    let yardstick = t.elapsed();
    drop(raw);

    let t = Instant::now();
    let doc = OpenApiDocument::parse(&bytes)?;
    let load = t.elapsed();

    let t = Instant::now();
    let ops = doc.operations();
    let list = t.elapsed();

    let t = Instant::now();
    let mut contracts = Vec::new();
    let mut refused = 0usize;
    for op in ops
        .iter()
        .filter(|o| o.method == method && o.has_json_schema())
    {
        match doc.contract(&op.label(), None, None) {
            Ok(c) => contracts.push(c),
            Err(e) => {
                refused += 1;
                eprintln!("{}: {e}", op.label());
            }
        }
    }
    let build = t.elapsed();
    // Again: every schema translated and proven by now.
    let t = Instant::now();
    for op in ops
        .iter()
        .filter(|o| o.method == method && o.has_json_schema())
    {
        let _ = doc.contract(&op.label(), None, None);
    }
    let rebuild = t.elapsed();
    let sizes: Vec<usize> = contracts
        .iter()
        .map(|c| c.schema.to_string().len())
        .collect();
    let t = Instant::now();
    for c in &contracts {
        c.validator()?;
    }
    let compile = t.elapsed();
    let total: usize = sizes.iter().sum();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut sorted = sizes.clone();
    sorted.sort_unstable();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
    println!(
        "document {} bytes ({}), {} operations",
        bytes.len(),
        if json { "JSON" } else { "YAML" },
        ops.len()
    );
    println!("yardstick parse {:.1} ms", ms(yardstick));
    println!(
        "load {:.1} ms ({:.2}x the yardstick), list operations {:.1} ms",
        ms(load),
        ms(load) / ms(yardstick),
        ms(list)
    );
    println!(
        "{} {method} contracts built in {:.1} ms ({refused} refused), compiled in {:.1} ms",
        contracts.len(),
        ms(build),
        ms(compile)
    );
    println!(
        "the same contracts again (translations and proofs reused): {:.1} ms",
        ms(rebuild)
    );
    println!("contract sizes: median {median} bytes, max {max} bytes, total {total} bytes");
    Ok(())
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
