//! What storing contracts once per document saves, as deterministic figures:
//! `cargo run --release -p apidrift-diff --example contract_sets -- DOCUMENT [MODE]`.
//!
//! Builds the contract of every GET operation with a JSON response schema, and prints the number
//! of contracts, the bytes their inline form takes (each contract with every schema it reaches,
//! as stored before schema sets), and the bytes of the reference form (the references plus one
//! schema set). MODE picks the work done, for an instruction count under
//! `valgrind --tool=callgrind`: `parse` (the document only, the yardstick), `inline` (parse, build
//! each contract with its schemas and encode it, as the import did), `sets` (parse, build each
//! contract as a reference, build and encode the set, as the import does), `all` (default: the
//! sizes).

use apidrift_diff::contract::{ContractRef, OpenApiDocument};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: contract_sets DOCUMENT [MODE]")?;
    let mode = args.next().unwrap_or_else(|| "all".into());
    let bytes = std::fs::read(&path)?;
    if mode == "parse" {
        let v: serde_json::Value = serde_json::from_slice(&bytes)?;
        println!("parsed: {}", v.is_object());
        return Ok(());
    }
    let doc = OpenApiDocument::parse(&bytes)?;
    let labels: Vec<String> = doc
        .operations()
        .into_iter()
        .filter(|o| o.method == "GET" && o.has_json_schema())
        .map(|o| o.label())
        .collect();
    let (mut inline_bytes, mut inline_n) = (0usize, 0usize);
    if mode == "inline" || mode == "all" {
        for label in &labels {
            if let Ok(c) = doc.contract(label, None, None) {
                inline_bytes += serde_json::to_string(&c.schema)?.len();
                inline_n += 1;
            }
        }
        println!("inline: {inline_n} contracts, {inline_bytes} bytes of schemas");
    }
    if mode == "sets" || mode == "all" {
        let refs: Vec<ContractRef> = labels
            .iter()
            .filter_map(|l| doc.contract_ref(l, None, None).ok())
            .collect();
        let all: Vec<&ContractRef> = refs.iter().collect();
        let set = doc.schema_set(&all)?;
        let ref_bytes: usize = refs
            .iter()
            .map(|r| serde_json::to_string(&r.contract.schema).map_or(0, |s| s.len()))
            .sum();
        println!(
            "sets: {} references ({ref_bytes} bytes of roots), one set of {} bytes ({})",
            refs.len(),
            set.document.len(),
            set.hash
        );
    }
    if mode == "check" {
        // Each contract's own set holds what its inline form holds.
        for label in labels.iter().take(40) {
            let (Ok(c), Ok(r)) = (
                doc.contract(label, None, None),
                doc.contract_ref(label, None, None),
            ) else {
                continue;
            };
            let own = doc.schema_set(&[&r])?;
            println!(
                "{label}: inline {} bytes, own set {} bytes",
                serde_json::to_string(&c.schema)?.len(),
                own.document.len()
            );
        }
    }
    println!("document: {} bytes", bytes.len());
    Ok(())
}
