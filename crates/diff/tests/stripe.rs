//! Real drift (D20): every Stripe resource present in the fixtures of April 2022 and of 2026
//! (`tests/data/realworld/stripe-fixtures3-*.json`, `resources.<name>`), diffed 2022 → 2026 in both
//! modes. Full mode must cover every breaking and warning change of schema mode (same normalised
//! path or an ancestor, at least the same severity). Run with `--nocapture` to see the counts and
//! the run time.

use apidrift_diff::{
    DiffMode, Json, JsonNode, Options, Severity, diff_bodies, normalise_path, parse,
};
use std::path::PathBuf;
use std::time::Instant;

type R = Result<(), Box<dyn std::error::Error>>;

/// `<workspace root>/tests/data/realworld` (licences there).
fn realworld() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/realworld")
}

/// The schema changes (breaking or warning) that full mode does not cover.
fn uncovered(
    schema: &[apidrift_diff::DiffChange],
    full: &[apidrift_diff::DiffChange],
) -> Vec<String> {
    let found: Vec<(String, Severity)> = full
        .iter()
        .map(|c| (normalise_path(&c.path).path, c.severity))
        .collect();
    let covers = |at: &str, path: &str| {
        path == at
            || (path.starts_with(at) && matches!(path.as_bytes().get(at.len()), Some(b'.' | b'[')))
    };
    schema
        .iter()
        .filter(|c| c.severity >= Severity::Warning)
        .filter(|c| {
            !found
                .iter()
                .any(|(at, severity)| *severity >= c.severity && covers(at, &c.path))
        })
        .map(|c| format!("{} {} {}", c.path, c.change_type, c.severity))
        .collect()
}

#[test]
fn full_mode_covers_schema_mode_on_every_stripe_resource_2022_to_2026() -> R {
    let dir = realworld();
    let old_text = std::fs::read_to_string(dir.join("stripe-fixtures3-2022-04.json"))?;
    let new_text = std::fs::read_to_string(dir.join("stripe-fixtures3-2026.json"))?;
    let (old, new) = (parse(&old_text)?, parse(&new_text)?);
    let resources = |doc: &'_ Json<'_>| -> Result<Vec<String>, String> {
        let r = doc.get("resources").ok_or("no `resources` object")?;
        Ok(r.entries().map(|(k, _)| k.to_owned()).collect())
    };
    let (old_res, new_res) = (
        old.get("resources").ok_or("no resources")?,
        new.get("resources").ok_or("no resources")?,
    );
    let full_options = Options::with_mode(DiffMode::Full);
    let schema_options = Options::with_mode(DiffMode::Schema);
    let started = Instant::now();
    let (mut pairs, mut full_count, mut schema_count) = (0usize, 0usize, 0usize);
    let (mut full_breaking, mut schema_breaking) = (0u32, 0u32);
    let mut misses = Vec::new();
    let mut invoice_lines = Vec::new();
    for name in resources(&old)? {
        let (Some(a), Some(b)) = (old_res.get(&name), new_res.get(&name)) else {
            continue;
        };
        pairs += 1;
        let full = diff_bodies(a, b, &full_options)?;
        let schema = diff_bodies(a, b, &schema_options)?;
        full_count += full.changes.len();
        schema_count += schema.changes.len();
        full_breaking += full.counts.breaking_count;
        schema_breaking += schema.counts.breaking_count;
        for miss in uncovered(&schema.changes, &full.changes) {
            misses.push(format!("{name}: {miss}"));
        }
        if name == "invoice" {
            invoice_lines = full
                .changes
                .iter()
                .filter(|c| {
                    c.path.starts_with("$.lines.data[].") && c.severity == Severity::Breaking
                })
                .map(|c| c.path.clone())
                .collect();
        }
    }
    let elapsed = started.elapsed();
    println!(
        "stripe 2022 -> 2026: {pairs} resources in both files; full mode {full_count} changes \
         ({full_breaking} breaking), schema mode {schema_count} changes ({schema_breaking} breaking); \
         both modes in {:.1} ms",
        elapsed.as_secs_f64() * 1000.0
    );
    assert!(pairs >= 100, "only {pairs} resources in both files");
    assert!(
        misses.is_empty(),
        "full mode misses:\n{}",
        misses.join("\n")
    );
    // The case of the issue: every line item lost 7 fields while every item's id changed.
    assert_eq!(invoice_lines.len(), 7, "{invoice_lines:?}");
    Ok(())
}
