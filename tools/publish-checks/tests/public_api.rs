//! The public API of the published crates matches the listings committed next to them
//! (`crates/model/public-api.txt`, `crates/diff/public-api.txt`), so a change to the surface is
//! a visible diff in review and cannot happen by accident.
//!
//! After an intended change, regenerate the listings:
//! `UPDATE_PUBLIC_API=1 cargo test -p apidrift-publish-checks --test public_api`, then commit
//! them with a CHANGELOG entry.

use apidrift_publish_checks::public_api::{difference, generate, target_dir};
use std::fs::{self, File};
use std::path::Path;

/// Each published crate and its committed listing, relative to the workspace root.
const CRATES: &[(&str, &str)] = &[
    ("apidrift-model", "crates/model/public-api.txt"),
    ("apidrift-diff", "crates/diff/public-api.txt"),
];

const HOW_TO_UPDATE: &str = "If the change is intended, regenerate the listings with
    UPDATE_PUBLIC_API=1 cargo test -p apidrift-publish-checks --test public_api
then commit them and describe the change in the crate's CHANGELOG.md (a removed or changed line is
a breaking change for the crate's users; a line only added is not).";

#[test]
fn public_api_matches_the_committed_listings() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()?;
    // A target directory of its own: RUSTC_BOOTSTRAP changes what some build scripts detect
    // (proc-macro2), so sharing the main one would rebuild the dependencies of every other build.
    let target = target_dir(&workspace).join("public-api");
    fs::create_dir_all(&target)?;
    // rustdoc writes `<target>/doc/<crate>.json`: one run at a time reads back its own output.
    let lock = File::create(target.join("apidrift-public-api.lock"))?;
    lock.lock()?;
    let packages: Vec<&str> = CRATES.iter().map(|(package, _)| *package).collect();
    let listings = generate(&workspace, &target, &packages)?;
    drop(lock);

    let update = std::env::var_os("UPDATE_PUBLIC_API").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for ((package, file), lines) in CRATES.iter().zip(listings) {
        let path = workspace.join(file);
        let text = format!("{}\n", lines.join("\n"));
        let committed = fs::read_to_string(&path).unwrap_or_default();
        if committed == text {
            continue;
        }
        if update {
            fs::write(&path, text)?;
            eprintln!("updated {file}");
            continue;
        }
        let old: Vec<String> = committed.lines().map(str::to_owned).collect();
        let changes = difference(&old, &lines);
        let changes = if changes.is_empty() {
            "  (same items; the file is not in the generated form)".to_owned()
        } else {
            changes.join("\n")
        };
        failures.push(format!(
            "the public API of {package} differs from {file}:\n{changes}"
        ));
    }
    if failures.is_empty() {
        return Ok(());
    }
    // Printed as text: the error of a test is shown with `Debug`, which would escape the lines.
    eprintln!("{}\n\n{HOW_TO_UPDATE}", failures.join("\n\n"));
    Err("the public API differs from the committed listing: see above".into())
}
