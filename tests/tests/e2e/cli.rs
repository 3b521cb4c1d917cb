//! The CLI frame: `--version`, `keygen`, bad input.

use apidrift_e2e::{run, stderr, stdout};
use base64::Engine as _;

#[test]
fn version_prints_name_and_version() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).trim(),
        format!("apidrift {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn keygen_prints_a_32_byte_base64_key() {
    let out = run(&["keygen"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1);
    let key = base64::engine::general_purpose::STANDARD.decode(text.trim());
    assert_eq!(key.map(|k| k.len()).ok(), Some(32));
    let again = stdout(&run(&["keygen"]));
    assert_ne!(text, again, "two keys must differ");
}

#[test]
fn unknown_subcommand_fails_with_usage() {
    let out = run(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("frobnicate"));
}
