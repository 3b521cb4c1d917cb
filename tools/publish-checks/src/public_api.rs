//! The public API of a crate as a sorted listing, one line per item, from rustdoc's JSON output.
//!
//! The listing names every public item by each path a user can reach it by (a type defined in a
//! private module and re-exported at the root is listed at the root), with its kind and its
//! signature: struct fields, enum variants, function signatures with generics and bounds,
//! constants with their type, trait items, the trait implementations of each type (auto traits
//! included: losing `Send` is a breaking change; blanket implementations left out) and
//! re-exports of other crates' items. `#[non_exhaustive]` and `#[deprecated]` are shown.
//!
//! Types are printed as rustdoc spells them, so the listing is stable for one toolchain and one
//! set of dependency versions; a new toolchain may respell a few external paths.
//!
//! Generate the JSON with (stable toolchain, hence `RUSTC_BOOTSTRAP`):
//! `RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="-Z unstable-options --output-format json" cargo doc --no-deps
//! --all-features -p CRATE`, which writes `<target>/doc/<crate_name>.json`; see [`generate`].

use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Reduces a rustdoc JSON document (`format_version` 57 was current when this was written; other
/// versions are read on a best-effort basis) to its public-API listing: sorted, without
/// duplicates.
pub fn listing(doc: &Value) -> Result<Vec<String>, String> {
    let index = doc
        .get("index")
        .and_then(Value::as_object)
        .ok_or("not rustdoc JSON: no `index` object")?;
    let root = doc
        .get("root")
        .map(id_key)
        .ok_or("not rustdoc JSON: no `root`")?;
    let name = index
        .get(&root)
        .and_then(|item| item.get("name"))
        .and_then(Value::as_str)
        .ok_or("not rustdoc JSON: the root item has no name")?
        .to_owned();
    let names = Names::new(doc, index, &root);
    let mut walker = Walker {
        index,
        names: &names,
        lines: BTreeSet::new(),
        visiting: Vec::new(),
    };
    walker.item(&root, &name)?;
    Ok(walker.lines.into_iter().collect())
}

/// Runs rustdoc on `packages` (package names, e.g. `apidrift-model`) of the workspace at
/// `workspace`, with all features, writing into `target_dir`, and returns the listing of each, in
/// the order given. The caller serialises concurrent runs on one target directory.
pub fn generate(
    workspace: &Path,
    target_dir: &Path,
    packages: &[&str],
) -> Result<Vec<Vec<String>>, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args(["doc", "--no-deps", "--all-features", "--locked", "--quiet"])
        .arg("--target-dir")
        .arg(target_dir)
        // JSON output is unstable: the stable toolchain allows it with RUSTC_BOOTSTRAP. The flags
        // replace any RUSTDOCFLAGS of the caller (e.g. `-D warnings`, checked by its own step).
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTDOCFLAGS", "-Z unstable-options --output-format json")
        .env_remove("CARGO_ENCODED_RUSTDOCFLAGS");
    for package in packages {
        command.arg("-p").arg(package);
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo doc: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo doc failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    packages
        .iter()
        .map(|package| {
            let file = target_dir
                .join("doc")
                .join(format!("{}.json", package.replace('-', "_")));
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let doc: Value = serde_json::from_str(&text)
                .map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
            listing(&doc).map_err(|e| format!("{}: {e}", file.display()))
        })
        .collect()
}

/// The directory cargo builds into for this workspace: `CARGO_TARGET_DIR`, else the first
/// ancestor of the running executable that holds cargo's `CACHEDIR.TAG` (a test binary lives in
/// `<target>/debug/deps`), else `<workspace>/target`.
pub fn target_dir(workspace: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.is_absolute() {
            dir
        } else {
            workspace.join(dir)
        };
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|dir| dir.join("CACHEDIR.TAG").is_file())
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| workspace.join("target"))
}

/// What changed between a committed listing and a fresh one: the lines only in `old` (`-`) and
/// only in `new` (`+`), removals first.
pub fn difference(old: &[String], new: &[String]) -> Vec<String> {
    let old_set: BTreeSet<&String> = old.iter().collect();
    let new_set: BTreeSet<&String> = new.iter().collect();
    let removed = old_set.difference(&new_set).map(|l| format!("- {l}"));
    let added = new_set.difference(&old_set).map(|l| format!("+ {l}"));
    removed.chain(added).collect()
}

/// Synthetic (compiler-derived) implementations worth listing: the stable auto traits.
const AUTO_TRAITS: &[&str] = &["Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe"];
/// Implementations never listed: unstable marker traits whose presence depends on the toolchain.
const HIDDEN_TRAITS: &[&str] = &["StructuralPartialEq", "Freeze", "UnsafeUnpin"];

/// How types are named in the listing, by item id: an item of this crate by its shortest public
/// path relative to the crate root (`AuthType`, `net::AllowList`), whatever module it is defined
/// in or imported from; an item of the standard library by its name (`Option`); an item of another
/// crate as `crate::Name` (`serde_json::Value`). So the listing changes with the API, not with how
/// a signature happens to import a type.
pub struct Names {
    by_id: HashMap<String, String>,
}

impl Names {
    fn new(doc: &Value, index: &Map<String, Value>, root: &str) -> Names {
        let mut by_id = HashMap::new();
        if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
            for (id, summary) in paths {
                let segments: Vec<&str> = summary
                    .get("path")
                    .and_then(Value::as_array)
                    .map(|p| p.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let (Some(first), Some(last)) = (segments.first(), segments.last()) else {
                    continue;
                };
                let name = if summary.get("crate_id").and_then(Value::as_u64) == Some(0) {
                    segments[1..].join("::")
                } else if matches!(*first, "std" | "core" | "alloc") {
                    (*last).to_owned()
                } else {
                    format!("{first}::{last}")
                };
                by_id.insert(id.clone(), name);
            }
        }
        let mut public: HashMap<String, String> = HashMap::new();
        let mut seen = BTreeSet::new();
        collect_public(index, root, "", &mut public, &mut seen);
        by_id.extend(public);
        Names { by_id }
    }

    fn get(&self, id: &str) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }
}

/// Records the shortest public path (relative to the crate root) of every item reachable from
/// the module `id` at `prefix`.
fn collect_public(
    index: &Map<String, Value>,
    id: &str,
    prefix: &str,
    out: &mut HashMap<String, String>,
    seen: &mut BTreeSet<(String, String)>,
) {
    if !seen.insert((id.to_owned(), prefix.to_owned())) {
        return;
    }
    let Some(Some(("module", module))) = index.get(id).map(inner) else {
        return;
    };
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}::{name}")
        }
    };
    for child in ids(module.get("items")) {
        let Some(item) = index.get(&child) else {
            continue;
        };
        let (target, name, glob) = match inner(item) {
            Some(("use", using)) => {
                let Some(target) = using.get("id").filter(|v| !v.is_null()).map(id_key) else {
                    continue;
                };
                let name = using.get("name").and_then(Value::as_str).unwrap_or("?");
                (target, name.to_owned(), flag(using, "is_glob"))
            }
            _ => {
                let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
                (child.clone(), name.to_owned(), false)
            }
        };
        if glob {
            collect_public(index, &target, prefix, out, seen);
            continue;
        }
        let path = join(&name);
        let better = out.get(&target).is_none_or(|old| {
            (old.matches("::").count(), old.as_str()) > (path.matches("::").count(), path.as_str())
        });
        if better && index.contains_key(&target) {
            out.insert(target.clone(), path.clone());
        }
        collect_public(index, &target, &path, out, seen);
    }
}

struct Walker<'a> {
    index: &'a Map<String, Value>,
    names: &'a Names,
    lines: BTreeSet<String>,
    /// (id, path) pairs being walked, so a cycle of re-exports cannot recurse forever.
    visiting: Vec<(String, String)>,
}

impl Walker<'_> {
    fn get(&self, id: &str) -> Option<&Value> {
        self.index.get(id)
    }

    fn item(&mut self, id: &str, path: &str) -> Result<(), String> {
        let key = (id.to_owned(), path.to_owned());
        if self.visiting.contains(&key) {
            return Ok(());
        }
        self.visiting.push(key);
        let result = self.item_inner(id, path);
        self.visiting.pop();
        result
    }

    fn item_inner(&mut self, id: &str, path: &str) -> Result<(), String> {
        let cx = self.names;
        let index = self.index;
        let item = index
            .get(id)
            .ok_or_else(|| format!("item {id} ({path}) is not in the index"))?;
        let attrs = attrs(item);
        let (kind, inner) = inner(item).ok_or_else(|| format!("item {id} has no kind"))?;
        match kind {
            "module" => {
                self.lines.insert(format!("{attrs}pub mod {path}"));
                self.module_items(inner, path)?;
            }
            "use" => {
                let parent = path.rsplit_once("::").map_or(path, |(p, _)| p);
                self.reexport(inner, parent)?;
            }
            "struct" => {
                let (params, bounds) = generics(cx, inner.get("generics"));
                let kind = inner.get("kind");
                let shape = match kind.and_then(|k| k.as_str()) {
                    Some("unit") => ";".to_owned(),
                    _ => match kind.and_then(|k| k.get("tuple")) {
                        Some(fields) => format!("({})", self.tuple_fields(fields)),
                        None => {
                            let plain = kind.and_then(|k| k.get("plain"));
                            let stripped = plain
                                .and_then(|p| p.get("has_stripped_fields"))
                                .and_then(Value::as_bool)
                                .unwrap_or(false);
                            for field in ids(plain.and_then(|p| p.get("fields"))) {
                                self.field(&field, path);
                            }
                            if stripped {
                                " { /* private fields */ }".to_owned()
                            } else {
                                String::new()
                            }
                        }
                    },
                };
                self.lines
                    .insert(format!("{attrs}pub struct {path}{params}{bounds}{shape}"));
                self.impls(inner.get("impls"), path, &params);
            }
            "union" => {
                let (params, bounds) = generics(cx, inner.get("generics"));
                for field in ids(inner.get("fields")) {
                    self.field(&field, path);
                }
                self.lines
                    .insert(format!("{attrs}pub union {path}{params}{bounds}"));
                self.impls(inner.get("impls"), path, &params);
            }
            "enum" => {
                let (params, bounds) = generics(cx, inner.get("generics"));
                self.lines
                    .insert(format!("{attrs}pub enum {path}{params}{bounds}"));
                for variant in ids(inner.get("variants")) {
                    self.variant(&variant, path);
                }
                self.impls(inner.get("impls"), path, &params);
            }
            "function" => {
                self.lines
                    .insert(format!("{attrs}{}", function(cx, inner, path)));
            }
            "constant" => {
                let ty = ty(cx, inner.get("type"));
                let konst = inner.get("const");
                let literal = konst
                    .and_then(|c| c.get("is_literal"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let value = match konst.and_then(|c| c.get("expr")).and_then(Value::as_str) {
                    Some(expr) if literal => format!(" = {expr}"),
                    _ => String::new(),
                };
                self.lines
                    .insert(format!("{attrs}pub const {path}: {ty}{value}"));
            }
            "static" => {
                let mutable = if flag(inner, "is_mutable") {
                    "mut "
                } else {
                    ""
                };
                let ty = ty(cx, inner.get("type"));
                self.lines
                    .insert(format!("{attrs}pub static {mutable}{path}: {ty}"));
            }
            "type_alias" => {
                let (params, bounds) = generics(cx, inner.get("generics"));
                let ty = ty(cx, inner.get("type"));
                self.lines
                    .insert(format!("{attrs}pub type {path}{params}{bounds} = {ty}"));
            }
            "trait" => {
                let (params, bounds) = generics(cx, inner.get("generics"));
                let supertraits = bound_list(cx, inner.get("bounds"));
                let supertraits = if supertraits.is_empty() {
                    String::new()
                } else {
                    format!(": {supertraits}")
                };
                let unsafety = if flag(inner, "is_unsafe") {
                    "unsafe "
                } else {
                    ""
                };
                let auto = if flag(inner, "is_auto") { "auto " } else { "" };
                self.lines.insert(format!(
                    "{attrs}pub {unsafety}{auto}trait {path}{params}{supertraits}{bounds}"
                ));
                for member in ids(inner.get("items")) {
                    if let Some(line) = self.assoc_item(&member, path, "", true) {
                        self.lines.insert(line);
                    }
                }
                // Implementations for types of other crates; those for this crate's types are
                // listed with each type.
                for imp in ids(inner.get("implementations")) {
                    let Some(imp_inner) = self.get(&imp).and_then(inner_of("impl")) else {
                        continue;
                    };
                    let for_local = imp_inner
                        .get("for")
                        .and_then(|f| f.get("resolved_path"))
                        .map(|p| p.get("id").map(id_key).unwrap_or_default())
                        .is_some_and(|id| self.get(&id).is_some());
                    if !for_local {
                        let line = self.impl_line(imp_inner, None);
                        self.lines.insert(line);
                    }
                }
            }
            "macro" | "proc_macro" => {
                self.lines.insert(format!("{attrs}pub macro {path}"));
            }
            other => {
                self.lines.insert(format!("{attrs}pub {other} {path}"));
            }
        }
        Ok(())
    }

    fn module_items(&mut self, module: &Value, path: &str) -> Result<(), String> {
        for child in ids(module.get("items")) {
            let Some(item) = self.get(&child) else {
                continue;
            };
            match inner(item) {
                Some(("use", inner)) => {
                    let inner = inner.clone();
                    self.reexport(&inner, path)?;
                }
                _ => {
                    let name = item
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned();
                    self.item(&child, &format!("{path}::{name}"))?;
                }
            }
        }
        Ok(())
    }

    /// A `pub use` in the module at `parent`: a local item is walked under its new path, an item of
    /// another crate is listed as a re-export.
    fn reexport(&mut self, using: &Value, parent: &str) -> Result<(), String> {
        let source = using.get("source").and_then(Value::as_str).unwrap_or("?");
        let name = using.get("name").and_then(Value::as_str).unwrap_or("?");
        let target = using.get("id").filter(|v| !v.is_null()).map(id_key);
        let local = target
            .as_deref()
            .and_then(|id| self.get(id))
            .filter(|item| item.get("crate_id").and_then(Value::as_u64) == Some(0));
        let glob = using
            .get("is_glob")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        match (local, target) {
            (Some(item), Some(id)) if glob => match inner(item) {
                Some(("module", module)) => {
                    let module = module.clone();
                    self.module_items(&module, parent)
                }
                _ => self.item(&id, &format!("{parent}::{name}")),
            },
            (Some(_), Some(id)) => self.item(&id, &format!("{parent}::{name}")),
            _ if glob => {
                self.lines
                    .insert(format!("pub use {parent}::* = {source}::*"));
                Ok(())
            }
            _ => {
                self.lines
                    .insert(format!("pub use {parent}::{name} = {source}"));
                Ok(())
            }
        }
    }

    fn field(&mut self, id: &str, owner: &str) {
        let cx = self.names;
        let Some(item) = self.get(id) else {
            return;
        };
        let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
        let ty = ty(cx, item.get("inner").and_then(|i| i.get("struct_field")));
        let attrs = attrs(item);
        self.lines
            .insert(format!("{attrs}pub {owner}::{name}: {ty}"));
    }

    /// Tuple fields: their types, `_` for a private one.
    fn tuple_fields(&self, fields: &Value) -> String {
        let cx = self.names;
        fields
            .as_array()
            .map(|fields| {
                fields
                    .iter()
                    .map(|field| {
                        if field.is_null() {
                            return "_".to_owned();
                        }
                        let item = self.get(&id_key(field));
                        ty(
                            cx,
                            item.and_then(|i| i.get("inner"))
                                .and_then(|i| i.get("struct_field")),
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    }

    fn variant(&mut self, id: &str, owner: &str) {
        let cx = self.names;
        let Some(item) = self.get(id) else {
            return;
        };
        let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
        let attrs = attrs(item);
        let Some(variant) = item.get("inner").and_then(|i| i.get("variant")) else {
            return;
        };
        let kind = variant.get("kind");
        let shape = if let Some(fields) = kind.and_then(|k| k.get("tuple")) {
            format!("({})", self.tuple_fields(fields))
        } else if let Some(fields) = kind.and_then(|k| k.get("struct")) {
            let mut parts: Vec<String> = ids(fields.get("fields"))
                .iter()
                .filter_map(|f| self.get(f))
                .map(|f| {
                    let name = f.get("name").and_then(Value::as_str).unwrap_or("?");
                    let ty = ty(cx, f.get("inner").and_then(|i| i.get("struct_field")));
                    format!("{name}: {ty}")
                })
                .collect();
            if fields
                .get("has_stripped_fields")
                .and_then(Value::as_bool)
                .unwrap_or(false)
            {
                parts.push("..".to_owned());
            }
            format!(" {{ {} }}", parts.join(", "))
        } else {
            String::new()
        };
        let discriminant = variant
            .get("discriminant")
            .and_then(|d| d.get("expr"))
            .and_then(Value::as_str)
            .map(|e| format!(" = {e}"))
            .unwrap_or_default();
        self.lines
            .insert(format!("{attrs}pub {owner}::{name}{shape}{discriminant}"));
    }

    /// The implementations of a type at `owner`: inherent items one per line, trait
    /// implementations one line each.
    fn impls(&mut self, impls: Option<&Value>, owner: &str, owner_params: &str) {
        let cx = self.names;
        for imp in ids(impls) {
            let Some(imp_inner) = self.get(&imp).and_then(inner_of("impl")) else {
                continue;
            };
            if imp_inner.get("blanket_impl").is_some_and(|b| !b.is_null()) {
                continue;
            }
            let trait_name = imp_inner
                .get("trait")
                .filter(|t| !t.is_null())
                .map(|t| path_name(self.names, t));
            match trait_name {
                None => {
                    let (params, bounds) = generics(cx, imp_inner.get("generics"));
                    // An inherent impl narrower than the type (`impl<J: JsonNode> Input<J>`)
                    // is named after the item, so that its bounds are part of the listing.
                    let context =
                        if params.is_empty() || (params == owner_params && bounds.is_empty()) {
                            String::new()
                        } else {
                            format!(
                                " (in impl{params} {}{bounds})",
                                ty(cx, imp_inner.get("for"))
                            )
                        };
                    for member in ids(imp_inner.get("items")) {
                        let public = self
                            .get(&member)
                            .and_then(|m| m.get("visibility"))
                            .and_then(Value::as_str)
                            == Some("public");
                        if public
                            && let Some(line) = self.assoc_item(&member, owner, &context, false)
                        {
                            self.lines.insert(line);
                        }
                    }
                }
                Some(name) => {
                    let last = name.rsplit("::").next().unwrap_or(&name);
                    let synthetic = flag(imp_inner, "is_synthetic");
                    if HIDDEN_TRAITS.contains(&last) || synthetic && !AUTO_TRAITS.contains(&last) {
                        continue;
                    }
                    let line = self.impl_line(imp_inner, Some(owner));
                    self.lines.insert(line);
                }
            }
        }
    }

    /// `impl<G> Trait<A> for Type where … { type X = Y; }`; `owner` replaces the type's path.
    fn impl_line(&self, imp: &Value, owner: Option<&str>) -> String {
        let cx = self.names;
        let (params, bounds) = generics(cx, imp.get("generics"));
        let negative = if flag(imp, "is_negative") { "!" } else { "" };
        let unsafety = if flag(imp, "is_unsafe") {
            "unsafe "
        } else {
            ""
        };
        let trait_path = imp.get("trait").map(|p| path(cx, p)).unwrap_or_default();
        let for_type = match (owner, imp.get("for").and_then(|f| f.get("resolved_path"))) {
            (Some(owner), Some(p)) => format!("{owner}{}", args(cx, p.get("args"))),
            _ => ty(cx, imp.get("for")),
        };
        let assoc: Vec<String> = ids(imp.get("items"))
            .iter()
            .filter_map(|m| self.get(m))
            .filter_map(|m| {
                let name = m.get("name").and_then(Value::as_str)?;
                let assoc = m.get("inner").and_then(|i| i.get("assoc_type"))?;
                let ty = assoc.get("type").filter(|t| !t.is_null())?;
                let (params, bounds) = generics(cx, assoc.get("generics"));
                Some(format!(
                    "type {name}{params}{bounds} = {};",
                    self::ty(cx, Some(ty))
                ))
            })
            .collect();
        let assoc = if assoc.is_empty() {
            String::new()
        } else {
            format!(" {{ {} }}", assoc.join(" "))
        };
        format!("{unsafety}impl{params} {negative}{trait_path} for {for_type}{bounds}{assoc}")
    }

    /// A function, associated constant or associated type of a trait or an inherent impl. A trait
    /// method with a default body is marked `(provided)`: making it required is a breaking change.
    fn assoc_item(&self, id: &str, owner: &str, context: &str, in_trait: bool) -> Option<String> {
        let cx = self.names;
        let item = self.get(id)?;
        let name = item.get("name").and_then(Value::as_str)?;
        let path = format!("{owner}::{name}");
        let attrs = attrs(item);
        let (kind, inner) = inner(item)?;
        let line = match kind {
            "function" => {
                let provided = if in_trait && flag(inner, "has_body") {
                    " (provided)"
                } else {
                    ""
                };
                format!("{}{provided}", function(cx, inner, &path))
            }
            "assoc_const" => {
                let ty = ty(cx, inner.get("type"));
                format!("pub const {path}: {ty}")
            }
            "assoc_type" => {
                let (params, bounds) = generics(cx, inner.get("generics"));
                let bound_text = bound_list(cx, inner.get("bounds"));
                let bound_text = if bound_text.is_empty() {
                    String::new()
                } else {
                    format!(": {bound_text}")
                };
                let default = inner
                    .get("type")
                    .filter(|t| !t.is_null())
                    .map(|t| format!(" = {}", ty(cx, Some(t))))
                    .unwrap_or_default();
                format!("pub type {path}{params}{bound_text}{bounds}{default}")
            }
            other => format!("pub {other} {path}"),
        };
        Some(format!("{attrs}{line}{context}"))
    }
}

/// Item ids are numbers in the format of 2025 and strings before; the index is keyed by text.
fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn ids(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .map(|items| items.iter().filter(|v| !v.is_null()).map(id_key).collect())
        .unwrap_or_default()
}

/// The kind of an item (`struct`, `function`, …) and its details.
fn inner(item: &Value) -> Option<(&str, &Value)> {
    match item.get("inner")? {
        Value::Object(map) => map.iter().next().map(|(k, v)| (k.as_str(), v)),
        Value::String(kind) => Some((kind.as_str(), &Value::Null)),
        _ => None,
    }
}

fn inner_of(kind: &'static str) -> impl Fn(&Value) -> Option<&Value> {
    move |item| item.get("inner").and_then(|i| i.get(kind))
}

fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// `#[non_exhaustive] ` and `#[deprecated] ` prefixes.
fn attrs(item: &Value) -> String {
    let mut out = String::new();
    if item.get("deprecation").is_some_and(|d| !d.is_null()) {
        out.push_str("#[deprecated] ");
    }
    let non_exhaustive = item
        .get("attrs")
        .and_then(Value::as_array)
        .is_some_and(|attrs| {
            attrs.iter().any(|a| match a {
                Value::String(s) => s.contains("non_exhaustive"),
                Value::Object(map) => map
                    .get("other")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.contains("non_exhaustive")),
                _ => false,
            })
        });
    if non_exhaustive {
        out.push_str("#[non_exhaustive] ");
    }
    out
}

fn function(cx: &Names, inner: &Value, path: &str) -> String {
    let header = inner.get("header");
    let mut qualifiers = String::new();
    for (key, word) in [
        ("is_const", "const "),
        ("is_async", "async "),
        ("is_unsafe", "unsafe "),
    ] {
        if header.is_some_and(|h| flag(h, key)) {
            qualifiers.push_str(word);
        }
    }
    let (params, bounds) = generics(cx, inner.get("generics"));
    let sig = inner.get("sig");
    let inputs = sig
        .and_then(|s| s.get("inputs"))
        .and_then(Value::as_array)
        .map(|inputs| {
            inputs
                .iter()
                .map(|pair| {
                    let name = pair.get(0).and_then(Value::as_str).unwrap_or("_");
                    let ty_value = pair.get(1);
                    if name == "self" {
                        self_param(cx, ty_value)
                    } else {
                        format!("{name}: {}", ty(cx, ty_value))
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let output = sig
        .and_then(|s| s.get("output"))
        .filter(|o| !o.is_null())
        .map(|o| format!(" -> {}", ty(cx, Some(o))))
        .unwrap_or_default();
    format!("pub {qualifiers}fn {path}{params}({inputs}){output}{bounds}")
}

/// `self`, `&self`, `&mut self`, or `self: T`.
fn self_param(cx: &Names, ty_value: Option<&Value>) -> String {
    let is_self = |t: Option<&Value>| {
        t.and_then(|t| t.get("generic")).and_then(Value::as_str) == Some("Self")
    };
    if is_self(ty_value) {
        return "self".to_owned();
    }
    if let Some(r) = ty_value.and_then(|t| t.get("borrowed_ref"))
        && is_self(r.get("type"))
    {
        let lifetime = r
            .get("lifetime")
            .and_then(Value::as_str)
            .map(|l| format!("{l} "))
            .unwrap_or_default();
        let mutable = if flag(r, "is_mutable") { "mut " } else { "" };
        return format!("&{lifetime}{mutable}self");
    }
    format!("self: {}", ty(cx, ty_value))
}

/// `<'a, T: Bound>` and ` where …`.
fn generics(cx: &Names, generics: Option<&Value>) -> (String, String) {
    let params: Vec<String> = generics
        .and_then(|g| g.get("params"))
        .and_then(Value::as_array)
        .map(|params| params.iter().filter_map(|p| generic_param(cx, p)).collect())
        .unwrap_or_default();
    let preds: Vec<String> = generics
        .and_then(|g| g.get("where_predicates"))
        .and_then(Value::as_array)
        .map(|preds| preds.iter().map(|p| where_predicate(cx, p)).collect())
        .unwrap_or_default();
    let params = if params.is_empty() {
        String::new()
    } else {
        format!("<{}>", params.join(", "))
    };
    let preds = if preds.is_empty() {
        String::new()
    } else {
        format!(" where {}", preds.join(", "))
    };
    (params, preds)
}

fn generic_param(cx: &Names, param: &Value) -> Option<String> {
    let name = param.get("name").and_then(Value::as_str).unwrap_or("?");
    let kind = param.get("kind")?;
    if let Some(lifetime) = kind.get("lifetime") {
        let outlives: Vec<&str> = lifetime
            .get("outlives")
            .and_then(Value::as_array)
            .map(|o| o.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        return Some(if outlives.is_empty() {
            name.to_owned()
        } else {
            format!("{name}: {}", outlives.join(" + "))
        });
    }
    if let Some(t) = kind.get("type") {
        if flag(t, "is_synthetic") {
            return None;
        }
        let bounds = bound_list(cx, t.get("bounds"));
        let bounds = if bounds.is_empty() {
            String::new()
        } else {
            format!(": {bounds}")
        };
        let default = t
            .get("default")
            .filter(|d| !d.is_null())
            .map(|d| format!(" = {}", ty(cx, Some(d))))
            .unwrap_or_default();
        return Some(format!("{name}{bounds}{default}"));
    }
    if let Some(c) = kind.get("const") {
        let default = c
            .get("default")
            .and_then(Value::as_str)
            .map(|d| format!(" = {d}"))
            .unwrap_or_default();
        return Some(format!("const {name}: {}{default}", ty(cx, c.get("type"))));
    }
    Some(name.to_owned())
}

fn where_predicate(cx: &Names, pred: &Value) -> String {
    if let Some(b) = pred.get("bound_predicate") {
        let hrtb = higher_ranked(cx, b.get("generic_params"));
        return format!(
            "{hrtb}{}: {}",
            ty(cx, b.get("type")),
            bound_list(cx, b.get("bounds"))
        );
    }
    if let Some(l) = pred.get("lifetime_predicate") {
        let outlives: Vec<&str> = l
            .get("outlives")
            .and_then(Value::as_array)
            .map(|o| o.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        return format!(
            "{}: {}",
            l.get("lifetime").and_then(Value::as_str).unwrap_or("?"),
            outlives.join(" + ")
        );
    }
    if let Some(e) = pred.get("eq_predicate") {
        return format!("{} = {}", ty(cx, e.get("lhs")), term(cx, e.get("rhs")));
    }
    compact(pred)
}

/// `for<'a> ` from a list of generic parameter definitions.
fn higher_ranked(cx: &Names, params: Option<&Value>) -> String {
    let names: Vec<String> = params
        .and_then(Value::as_array)
        .map(|p| p.iter().filter_map(|p| generic_param(cx, p)).collect())
        .unwrap_or_default();
    if names.is_empty() {
        String::new()
    } else {
        format!("for<{}> ", names.join(", "))
    }
}

fn bound_list(cx: &Names, bounds: Option<&Value>) -> String {
    bounds
        .and_then(Value::as_array)
        .map(|b| {
            b.iter()
                .map(|b| bound(cx, b))
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .unwrap_or_default()
}

fn bound(cx: &Names, bound: &Value) -> String {
    if let Some(t) = bound.get("trait_bound") {
        let modifier = match t.get("modifier").and_then(Value::as_str) {
            Some("maybe") => "?",
            Some("maybe_const") => "~const ",
            _ => "",
        };
        let hrtb = higher_ranked(cx, t.get("generic_params"));
        return format!(
            "{hrtb}{modifier}{}",
            t.get("trait").map(|p| path(cx, p)).unwrap_or_default()
        );
    }
    if let Some(l) = bound.get("outlives").and_then(Value::as_str) {
        return l.to_owned();
    }
    if let Some(captured) = bound.get("use").and_then(Value::as_array) {
        let names: Vec<String> = captured
            .iter()
            .map(|c| match c {
                Value::String(s) => s.clone(),
                Value::Object(map) => map
                    .values()
                    .next()
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
                other => compact(other),
            })
            .collect();
        return format!("use<{}>", names.join(", "));
    }
    compact(bound)
}

/// The name of a path: see [`Names`]; for an id without a summary, as rustdoc spells it, a
/// macro-relative path (`$crate::clone::Clone`, from derives) reduced to its last segment.
fn path_name(cx: &Names, p: &Value) -> String {
    if let Some(name) = p.get("id").map(id_key).and_then(|id| cx.get(&id)) {
        return name.to_owned();
    }
    let name = p
        .get("path")
        .or_else(|| p.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    match name.strip_prefix("$crate::") {
        Some(rest) => rest.rsplit("::").next().unwrap_or(rest).to_owned(),
        None => name.to_owned(),
    }
}

/// A path with its generic arguments.
fn path(cx: &Names, p: &Value) -> String {
    format!("{}{}", path_name(cx, p), args(cx, p.get("args")))
}

fn args(cx: &Names, args: Option<&Value>) -> String {
    let Some(args) = args.filter(|a| !a.is_null()) else {
        return String::new();
    };
    if let Some(angle) = args.get("angle_bracketed") {
        let mut parts: Vec<String> = angle
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|a| generic_arg(cx, a)).collect())
            .unwrap_or_default();
        if let Some(constraints) = angle.get("constraints").and_then(Value::as_array) {
            parts.extend(constraints.iter().map(|c| constraint(cx, c)));
        }
        return if parts.is_empty() {
            String::new()
        } else {
            format!("<{}>", parts.join(", "))
        };
    }
    if let Some(paren) = args.get("parenthesized") {
        let inputs: Vec<String> = paren
            .get("inputs")
            .and_then(Value::as_array)
            .map(|i| i.iter().map(|t| ty(cx, Some(t))).collect())
            .unwrap_or_default();
        let output = paren
            .get("output")
            .filter(|o| !o.is_null())
            .map(|o| format!(" -> {}", ty(cx, Some(o))))
            .unwrap_or_default();
        return format!("({}){output}", inputs.join(", "));
    }
    if args.as_str() == Some("return_type_notation") {
        return "(..)".to_owned();
    }
    compact(args)
}

fn generic_arg(cx: &Names, arg: &Value) -> String {
    if let Some(l) = arg.get("lifetime").and_then(Value::as_str) {
        return l.to_owned();
    }
    if let Some(t) = arg.get("type") {
        return ty(cx, Some(t));
    }
    if let Some(c) = arg.get("const") {
        return c
            .get("expr")
            .and_then(Value::as_str)
            .map_or_else(|| compact(c), str::to_owned);
    }
    if arg.as_str() == Some("infer") {
        return "_".to_owned();
    }
    compact(arg)
}

fn constraint(cx: &Names, c: &Value) -> String {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
    let own_args = args(cx, c.get("args"));
    let binding = c.get("binding");
    if let Some(eq) = binding.and_then(|b| b.get("equality")) {
        return format!("{name}{own_args} = {}", term(cx, Some(eq)));
    }
    if let Some(bounds) = binding.and_then(|b| b.get("constraint")) {
        return format!("{name}{own_args}: {}", bound_list(cx, Some(bounds)));
    }
    compact(c)
}

fn term(cx: &Names, t: Option<&Value>) -> String {
    match t {
        Some(t) if t.get("type").is_some() => ty(cx, t.get("type")),
        Some(t) if t.get("constant").is_some() => t
            .get("constant")
            .and_then(|c| c.get("expr"))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned(),
        Some(other) => compact(other),
        None => "?".to_owned(),
    }
}

/// A type as Rust spells it.
fn ty(cx: &Names, t: Option<&Value>) -> String {
    let Some(t) = t else {
        return "?".to_owned();
    };
    if t.as_str() == Some("infer") {
        return "_".to_owned();
    }
    let Some((kind, v)) = t.as_object().and_then(|m| m.iter().next()) else {
        return compact(t);
    };
    match kind.as_str() {
        "resolved_path" => path(cx, v),
        "generic" | "primitive" => v.as_str().unwrap_or("?").to_owned(),
        "tuple" => {
            let items: Vec<String> = v
                .as_array()
                .map(|i| i.iter().map(|t| ty(cx, Some(t))).collect())
                .unwrap_or_default();
            if items.len() == 1 {
                format!("({},)", items.join(""))
            } else {
                format!("({})", items.join(", "))
            }
        }
        "slice" => format!("[{}]", ty(cx, Some(v))),
        "array" => format!(
            "[{}; {}]",
            ty(cx, v.get("type")),
            v.get("len").and_then(Value::as_str).unwrap_or("?")
        ),
        "pat" => ty(cx, v.get("type")),
        "borrowed_ref" => {
            let lifetime = v
                .get("lifetime")
                .and_then(Value::as_str)
                .map(|l| format!("{l} "))
                .unwrap_or_default();
            let mutable = if flag(v, "is_mutable") { "mut " } else { "" };
            format!("&{lifetime}{mutable}{}", ty(cx, v.get("type")))
        }
        "raw_pointer" => {
            let mutable = if flag(v, "is_mutable") {
                "mut"
            } else {
                "const"
            };
            format!("*{mutable} {}", ty(cx, v.get("type")))
        }
        "impl_trait" => format!("impl {}", bound_list(cx, Some(v))),
        "dyn_trait" => {
            let mut parts: Vec<String> = v
                .get("traits")
                .and_then(Value::as_array)
                .map(|traits| {
                    traits
                        .iter()
                        .map(|p| {
                            format!(
                                "{}{}",
                                higher_ranked(cx, p.get("generic_params")),
                                p.get("trait").map(|p| path(cx, p)).unwrap_or_default()
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            if let Some(l) = v.get("lifetime").and_then(Value::as_str) {
                parts.push(l.to_owned());
            }
            format!("dyn {}", parts.join(" + "))
        }
        "function_pointer" => {
            let sig = v.get("sig");
            let inputs: Vec<String> = sig
                .and_then(|s| s.get("inputs"))
                .and_then(Value::as_array)
                .map(|i| i.iter().map(|pair| ty(cx, pair.get(1))).collect())
                .unwrap_or_default();
            let output = sig
                .and_then(|s| s.get("output"))
                .filter(|o| !o.is_null())
                .map(|o| format!(" -> {}", ty(cx, Some(o))))
                .unwrap_or_default();
            format!(
                "{}fn({}){output}",
                higher_ranked(cx, v.get("generic_params")),
                inputs.join(", ")
            )
        }
        "qualified_path" => {
            let name = v.get("name").and_then(Value::as_str).unwrap_or("?");
            let self_type = ty(cx, v.get("self_type"));
            let own_args = args(cx, v.get("args"));
            // rustdoc gives `Self::Entries` written inside a trait an empty trait path.
            match v
                .get("trait")
                .filter(|t| !t.is_null() && !path_name(cx, t).is_empty())
            {
                Some(tr) => format!("<{self_type} as {}>::{name}{own_args}", path(cx, tr)),
                None => format!("{self_type}::{name}{own_args}"),
            }
        }
        _ => compact(t),
    }
}

/// A shape this reader does not know, as compact JSON (keys sorted, so still deterministic).
fn compact(v: &Value) -> String {
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A hand-written document in the shape of rustdoc JSON: a root module with a function, a
    /// non-exhaustive enum defined in a private module and re-exported, an inherent method, a
    /// trait implementation, an auto trait, a blanket implementation (left out) and a re-export of
    /// another crate's item.
    fn sample() -> Value {
        json!({
            "root": 0,
            "format_version": 57,
            "index": {
                "0": {"crate_id": 0, "name": "demo", "attrs": [], "deprecation": null,
                      "inner": {"module": {"is_crate": true, "items": [1, 2, 9]}}},
                "1": {"crate_id": 0, "name": "parse", "attrs": [], "deprecation": null,
                      "inner": {"function": {
                          "sig": {"inputs": [["text", {"borrowed_ref": {"lifetime": null,
                                  "is_mutable": false, "type": {"primitive": "str"}}}]],
                                  "output": {"resolved_path": {"path": "Result", "id": 50,
                                  "args": {"angle_bracketed": {"args": [
                                      {"type": {"resolved_path": {"path": "Level", "id": 3, "args": null}}},
                                      {"type": {"resolved_path": {"path": "String", "id": 51, "args": null}}}],
                                  "constraints": []}}}}},
                          "generics": {"params": [], "where_predicates": []},
                          "header": {"is_const": false, "is_unsafe": false, "is_async": false}}}},
                "2": {"crate_id": 0, "name": null, "attrs": [], "deprecation": null,
                      "inner": {"use": {"source": "levels::Level", "name": "Level", "id": 3,
                                        "is_glob": false}}},
                "3": {"crate_id": 0, "name": "Level", "attrs": ["non_exhaustive"], "deprecation": null,
                      "inner": {"enum": {"generics": {"params": [], "where_predicates": []},
                                         "variants": [4, 5], "impls": [6, 7, 8, 11]}}},
                "4": {"crate_id": 0, "name": "Low", "attrs": [], "deprecation": null,
                      "inner": {"variant": {"kind": "plain", "discriminant": null}}},
                "5": {"crate_id": 0, "name": "Custom", "attrs": [], "deprecation": null,
                      "inner": {"variant": {"kind": {"tuple": [12]}, "discriminant": null}}},
                "12": {"crate_id": 0, "name": "0", "attrs": [], "deprecation": null,
                       "inner": {"struct_field": {"primitive": "u8"}}},
                "6": {"crate_id": 0, "name": null, "attrs": [], "deprecation": null,
                      "inner": {"impl": {"trait": null, "for": {"resolved_path": {"path": "Level", "id": 3, "args": null}},
                                         "generics": {"params": [], "where_predicates": []},
                                         "items": [10], "is_synthetic": false, "blanket_impl": null}}},
                "10": {"crate_id": 0, "name": "as_str", "visibility": "public", "attrs": [], "deprecation": null,
                       "inner": {"function": {
                           "sig": {"inputs": [["self", {"generic": "Self"}]],
                                   "output": {"borrowed_ref": {"lifetime": "'static", "is_mutable": false,
                                              "type": {"primitive": "str"}}}},
                           "generics": {"params": [], "where_predicates": []},
                           "header": {"is_const": true, "is_unsafe": false, "is_async": false}}}},
                "7": {"crate_id": 0, "name": null, "attrs": [], "deprecation": null,
                      "inner": {"impl": {"trait": {"path": "Send", "id": 52, "args": null},
                                         "for": {"resolved_path": {"path": "Level", "id": 3, "args": null}},
                                         "generics": {"params": [], "where_predicates": []},
                                         "items": [], "is_synthetic": true, "blanket_impl": null}}},
                "8": {"crate_id": 0, "name": null, "attrs": [], "deprecation": null,
                      "inner": {"impl": {"trait": {"path": "Into", "id": 53, "args": {"angle_bracketed":
                                         {"args": [{"type": {"generic": "U"}}], "constraints": []}}},
                                         "for": {"generic": "T"},
                                         "generics": {"params": [], "where_predicates": []},
                                         "items": [], "is_synthetic": false,
                                         "blanket_impl": {"generic": "T"}}}},
                "11": {"crate_id": 0, "name": null, "attrs": [], "deprecation": null,
                       "inner": {"impl": {"trait": {"path": "FromStr", "id": 54, "args": null},
                                          "for": {"resolved_path": {"path": "Level", "id": 3, "args": null}},
                                          "generics": {"params": [], "where_predicates": []},
                                          "items": [13], "is_synthetic": false, "blanket_impl": null}}},
                "13": {"crate_id": 0, "name": "Err", "attrs": [], "deprecation": null,
                       "inner": {"assoc_type": {"generics": {"params": [], "where_predicates": []},
                                                "bounds": [], "type": {"resolved_path":
                                                {"path": "String", "id": 51, "args": null}}}}},
                "9": {"crate_id": 0, "name": null, "attrs": [], "deprecation": null,
                      "inner": {"use": {"source": "other::Thing", "name": "Thing", "id": 60,
                                        "is_glob": false}}}
            }
        })
    }

    #[test]
    fn lists_items_under_their_public_paths() -> Result<(), String> {
        let lines = listing(&sample())?;
        let expected = [
            "#[non_exhaustive] pub enum demo::Level",
            "impl FromStr for demo::Level { type Err = String; }",
            "impl Send for demo::Level",
            "pub const fn demo::Level::as_str(self) -> &'static str",
            "pub demo::Level::Custom(u8)",
            "pub demo::Level::Low",
            "pub fn demo::parse(text: &str) -> Result<Level, String>",
            "pub mod demo",
            "pub use demo::Thing = other::Thing",
        ];
        assert_eq!(lines, expected);
        Ok(())
    }

    #[test]
    fn difference_lists_removals_then_additions() {
        let old = vec!["a".to_owned(), "b".to_owned()];
        let new = vec!["b".to_owned(), "c".to_owned()];
        assert_eq!(difference(&old, &new), ["- a", "+ c"]);
        assert!(difference(&old, &old).is_empty());
    }
}
