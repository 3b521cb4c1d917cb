//! A multi-file OpenAPI document read from disk, for the commands that take `--spec FILE`
//! (`validate`, `contract attach`): the `$ref`s that point into other files (`account_get.yml`,
//! `schemas/user.yaml#/User`) are resolved relative to the file that holds them, under the root
//! document's folder only (never a URL, never a file outside that folder), and the document is
//! bundled into one: each referenced part is placed once under `x-apidrift-bundled/N` of the root
//! and every `$ref` to it points there, so cycles between files end where they begin. At most
//! [`MAX_PARTS`] parts and [`MAX_DEPTH`] nested levels.
//!
//! A reference that cannot be followed (a missing file, a URL, a file outside the folder) is left
//! as it is, with the reason kept: the contract refuses it only when the operation asked for
//! reaches it, and [`Spec::explain`] then gives that reason. A document given on standard input
//! or as a URL is read as it is: its references to other files stay unresolved and the contract
//! refuses them, naming them.

use super::CliError;
use super::gate::read_input;
use apidrift_diff::contract::parse_openapi;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The most parts one document may place.
pub const MAX_PARTS: usize = 10_000;
/// The deepest nesting of values and of references between files.
pub const MAX_DEPTH: usize = 256;
/// Where the parts go in the bundled document.
const BUNDLED: &str = "x-apidrift-bundled";

/// The `--spec` document as read: its text, and why each reference left unresolved could not be
/// followed.
#[derive(Debug, Default)]
pub struct Spec {
    /// The file as it is when it refers to no other file, else the bundled document (as JSON).
    pub text: String,
    /// (reference as written, why it was not followed).
    unresolved: Vec<(String, String)>,
}

impl Spec {
    /// A refusal that names a reference left unresolved, told with the reason it was left (a
    /// missing file, a URL, a file outside the folder); any other message as it is.
    pub fn explain(&self, message: String) -> String {
        self.unresolved
            .iter()
            .find(|(r, _)| message.contains(&format!("{r:?}")))
            .map_or(message, |(_, why)| why.clone())
    }
}

/// Reads the `--spec` argument, bundling the files a document on disk refers to.
pub fn read_spec(arg: &str) -> Result<Spec, CliError> {
    let text = read_input(arg)?;
    let lower = arg.to_ascii_lowercase();
    let plain = |text: String| Spec {
        text,
        unresolved: Vec::new(),
    };
    if arg == "-" || lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(plain(text));
    }
    let mut root = match parse_openapi(&text) {
        Ok(root) => root,
        // The contract reports a document it cannot read, with its own words.
        Err(_) => return Ok(plain(text)),
    };
    if !refers_elsewhere(&root, 0) {
        return Ok(plain(text));
    }
    let path =
        std::fs::canonicalize(arg).map_err(|e| CliError(format!("cannot read {arg}: {e}")))?;
    let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut bundler = Bundler {
        root_path: path.clone(),
        root_dir: dir,
        files: HashMap::new(),
        placed: HashMap::new(),
        parts: Map::new(),
        unresolved: Vec::new(),
    };
    bundler.rewrite(&mut root, &path, true, 0)?;
    if let Value::Object(m) = &mut root {
        m.insert(BUNDLED.into(), Value::Object(bundler.parts));
    }
    let text =
        serde_json::to_string(&root).map_err(|e| CliError(format!("cannot bundle {arg}: {e}")))?;
    Ok(Spec {
        text,
        unresolved: bundler.unresolved,
    })
}

/// Whether a `$ref` of the document names another file.
fn refers_elsewhere(value: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match value {
        Value::Object(m) => {
            m.get("$ref")
                .and_then(Value::as_str)
                .is_some_and(|r| !r.starts_with('#'))
                || m.iter()
                    .filter(|(k, _)| !is_data(k))
                    .any(|(_, v)| refers_elsewhere(v, depth + 1))
        }
        Value::Array(items) => items.iter().any(|v| refers_elsewhere(v, depth + 1)),
        _ => false,
    }
}

/// Keys whose values are data, not schemas or references.
fn is_data(key: &str) -> bool {
    matches!(key, "example" | "default" | "enum" | "const")
}

struct Bundler {
    root_path: PathBuf,
    root_dir: PathBuf,
    /// Each file read, parsed.
    files: HashMap<PathBuf, Value>,
    /// (file, fragment) → the pointer of its part in the root.
    placed: HashMap<(PathBuf, String), String>,
    parts: Map<String, Value>,
    /// References left as written, with why.
    unresolved: Vec<(String, String)>,
}

impl Bundler {
    /// Rewrites every `$ref` under `value`, which is in `file` (`in_root`: the root document,
    /// whose own `#…` references stay as they are).
    fn rewrite(
        &mut self,
        value: &mut Value,
        file: &Path,
        in_root: bool,
        depth: usize,
    ) -> Result<(), CliError> {
        if depth > MAX_DEPTH {
            return Err(CliError(format!(
                "{}: the document nests deeper than {MAX_DEPTH} levels",
                self.shown(file)
            )));
        }
        match value {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(Value::as_str).map(str::to_owned)
                    && let Some(target) = self.target(&r, file, in_root, depth)?
                {
                    m.insert("$ref".into(), Value::String(target));
                }
                for (k, sub) in m.iter_mut() {
                    if k != "$ref" && !is_data(k) {
                        self.rewrite(sub, file, in_root, depth + 1)?;
                    }
                }
            }
            Value::Array(items) => {
                for sub in items {
                    self.rewrite(sub, file, in_root, depth + 1)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The new reference for `r` found in `file`, or `None` to keep it.
    fn target(
        &mut self,
        r: &str,
        file: &Path,
        in_root: bool,
        depth: usize,
    ) -> Result<Option<String>, CliError> {
        let (file_part, fragment) = r.split_once('#').unwrap_or((r, ""));
        if file_part.is_empty() {
            return if in_root {
                Ok(None)
            } else {
                self.place(file.to_path_buf(), fragment, depth).map(Some)
            };
        }
        let shown = self.shown(file);
        let mut leave = |why: String| {
            self.unresolved
                .push((r.to_owned(), format!("{shown}: {why}")));
            Ok(None)
        };
        if file_part.contains("://") {
            return leave(format!(
                "the $ref {r:?} is a URL, which apidrift never fetches; save the file beside the document and refer to it by a relative path"
            ));
        }
        let joined = file
            .parent()
            .unwrap_or(Path::new("/"))
            .join(percent_decode(file_part));
        let target = match std::fs::canonicalize(&joined) {
            Ok(target) => target,
            Err(e) => {
                return leave(format!(
                    "cannot read the $ref {r:?} ({e}); put the file where the reference says (relative to {shown}), or bundle the document first (e.g. `redocly bundle openapi.yaml -o bundled.yaml`)"
                ));
            }
        };
        if !target.starts_with(&self.root_dir) {
            return leave(format!(
                "the $ref {r:?} points outside the folder of the root document, which apidrift never reads; move the file into that folder"
            ));
        }
        if target == self.root_path {
            return Ok(Some(format!("#{fragment}")));
        }
        self.place(target, fragment, depth).map(Some)
    }

    /// The pointer of the part `fragment` of `file`, placed (and its own references rewritten)
    /// the first time it is asked for.
    fn place(&mut self, file: PathBuf, fragment: &str, depth: usize) -> Result<String, CliError> {
        let key = (file.clone(), fragment.to_owned());
        if let Some(pointer) = self.placed.get(&key) {
            return Ok(pointer.clone());
        }
        if self.parts.len() >= MAX_PARTS {
            return Err(CliError(format!(
                "the document refers to more than {MAX_PARTS} parts of other files"
            )));
        }
        let index = self.placed.len().to_string();
        let pointer = format!("#/{BUNDLED}/{index}");
        // Placed before it is read, so that a reference back to it (a cycle) finds it.
        self.placed.insert(key, pointer.clone());
        let shown = self.shown(&file);
        if !self.files.contains_key(&file) {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| CliError(format!("cannot read {shown}: {e}")))?;
            let parsed = parse_openapi(&text).map_err(|e| CliError(format!("{shown}: {e}")))?;
            self.files.insert(file.clone(), parsed);
        }
        let decoded = percent_decode(fragment);
        let mut part = self
            .files
            .get(&file)
            .and_then(|doc| doc.pointer(&decoded))
            .cloned()
            .ok_or_else(|| {
                CliError(format!(
                    "{shown} has nothing at #{fragment}; fix the $ref that names it"
                ))
            })?;
        self.rewrite(&mut part, &file, false, depth + 1)?;
        self.parts.insert(index, part);
        Ok(pointer)
    }

    /// A file as the messages name it: relative to the root document's folder.
    fn shown(&self, file: &Path) -> String {
        file.strip_prefix(&self.root_dir)
            .unwrap_or(file)
            .display()
            .to_string()
    }
}

/// `%20` and the like in a reference, decoded (an invalid escape is kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// A root, an operation in its own file, a schema file that refers back to itself through a
    /// third file (a cycle), and a reference outside the folder.
    #[test]
    fn bundles_files_under_the_root_folder_and_ends_cycles() -> TestResult {
        let dir = tempfile::tempdir()?;
        let api = dir.path().join("api");
        std::fs::create_dir_all(api.join("schemas"))?;
        std::fs::write(
            api.join("root.yaml"),
            "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /account:\n    get: {$ref: 'account_get.yml'}\n",
        )?;
        std::fs::write(
            api.join("account_get.yml"),
            "responses:\n  '200':\n    description: ok\n    content:\n      application/json:\n        schema: {$ref: 'schemas/account.yaml#/Account'}\n",
        )?;
        std::fs::write(
            api.join("schemas/account.yaml"),
            "Account:\n  type: object\n  required: [id]\n  properties:\n    id: {type: string}\n    parent: {$ref: 'parent.yaml'}\n",
        )?;
        std::fs::write(
            api.join("schemas/parent.yaml"),
            "anyOf: [{type: 'null'}, {$ref: 'account.yaml#/Account'}]\n",
        )?;
        let root = api.join("root.yaml");
        let spec = read_spec(&root.to_string_lossy())?;
        let doc = apidrift_diff::contract::OpenApiDocument::parse(spec.text.as_bytes())?;
        let contract = doc.contract("GET /account", None, None)?;
        let v = contract.validator()?;
        let options = apidrift_diff::Options::default();
        let good = serde_json::json!({"id": "a", "parent": {"id": "b", "parent": null}});
        assert!(v.check(&good, &options).changes.is_empty());
        let bad = serde_json::json!({"id": "a", "parent": {"parent": null}});
        let paths: Vec<String> = v
            .check(&bad, &options)
            .changes
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(paths, vec!["$.parent.id"]);

        std::fs::write(dir.path().join("outside.yaml"), "type: string\n")?;
        std::fs::write(
            api.join("schemas/parent.yaml"),
            "$ref: '../../outside.yaml'\n",
        )?;
        let refused = |needle: &str| -> TestResult {
            let spec = read_spec(&root.to_string_lossy())?;
            let doc = apidrift_diff::contract::OpenApiDocument::parse(spec.text.as_bytes())?;
            let err = doc
                .contract("GET /account", None, None)
                .and_then(|c| c.validator().map(|_| ()))
                .err()
                .map(|e| spec.explain(e.to_string()))
                .unwrap_or_default();
            assert!(err.contains(needle), "{err}");
            Ok(())
        };
        refused("outside the folder of the root document")?;
        std::fs::write(
            api.join("schemas/parent.yaml"),
            "$ref: 'https://example.com/x.yaml'\n",
        )?;
        refused("is a URL, which apidrift never fetches")?;
        std::fs::write(api.join("schemas/parent.yaml"), "$ref: 'gone.yaml'\n")?;
        refused("cannot read the $ref \"gone.yaml\"")?;
        Ok(())
    }
}
