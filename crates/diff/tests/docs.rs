//! `docs/severity.md` lists exactly the engine's rules, with the same change type and severity.

use apidrift_diff::Rule;

#[test]
fn severity_doc_matches_the_rules() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/severity.md");
    let doc = std::fs::read_to_string(path)?;
    let mut rows = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line
            .split(" | ")
            .map(|c| c.trim_matches(|ch| ch == '|' || ch == ' '))
            .collect();
        let id = cells.first().ok_or("empty row")?.trim_matches('`');
        rows.push((
            id.to_owned(),
            cells.get(2).copied().unwrap_or("").to_owned(),
            cells.get(3).copied().unwrap_or("").to_owned(),
        ));
    }
    let expected: Vec<(String, String, String)> = Rule::ALL
        .iter()
        .map(|r| {
            (
                r.id().to_owned(),
                r.change_type().as_str().to_owned(),
                r.severity().as_str().to_owned(),
            )
        })
        .collect();
    assert_eq!(rows, expected);
    Ok(())
}

/// The severity table of the crate documentation (`src/lib.rs`) lists exactly the engine's rules,
/// in order, with the same change type and severity.
#[test]
fn crate_guide_table_matches_the_rules() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs");
    let text = std::fs::read_to_string(path)?;
    let mut rows = Vec::new();
    for line in text.lines().filter_map(|l| l.strip_prefix("//! | `")) {
        let cells: Vec<&str> = line.split(" | ").map(|c| c.trim_matches('`')).collect();
        let [id, change_type, severity, ..] = cells.as_slice() else {
            return Err(format!("a row without four cells: {line}").into());
        };
        rows.push((
            id.to_string(),
            change_type.to_string(),
            severity.to_string(),
        ));
    }
    let expected: Vec<(String, String, String)> = Rule::ALL
        .iter()
        .map(|r| {
            (
                r.id().to_owned(),
                r.change_type().as_str().to_owned(),
                r.severity().as_str().to_owned(),
            )
        })
        .collect();
    assert_eq!(rows, expected);
    Ok(())
}
