//! Normalised change paths: identity and position segments written `[]`, so that changes of
//! different items of one array share a path. Reads a change path with the pattern parser and
//! writes it with the path writer.

use crate::path::{push_ident, push_key};
use crate::pattern::{PatternSeg, parse_segments};

/// A change path with its element segments normalised to `[]`, and the element selectors that
/// were replaced (`[id=42]`, `[3]`), in path order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NormalisedPath {
    /// The path with every keyed or positional element segment written `[]`
    /// (`$.users[id=42].email` → `$.users[].email`). Paths that are not body paths (`status`,
    /// `headers.etag`) and paths that do not parse are kept as they are.
    pub path: String,
    /// The selectors replaced by `[]`, as written in the path (`[id=42]`, `[3]`).
    pub selectors: Vec<String>,
}

/// Normalises a change path: identity and position segments become `[]`, so that changes
/// of different items of one array share a path (`$.lines.data[id=il_1].price` and
/// `$.lines.data[id=il_2].price` both give `$.lines.data[].price`).
pub fn normalise_path(path: &str) -> NormalisedPath {
    let keep = || NormalisedPath {
        path: path.to_owned(),
        selectors: Vec::new(),
    };
    let Some(rest) = path.strip_prefix('$') else {
        return keep();
    };
    let Ok(segs) = parse_segments(rest) else {
        return keep();
    };
    let mut out = String::with_capacity(path.len());
    out.push('$');
    let mut selectors = Vec::new();
    for seg in segs {
        match seg {
            PatternSeg::Key(k) => push_key(&mut out, &k),
            PatternSeg::AnyElement => out.push_str("[]"),
            PatternSeg::Index(i) => {
                out.push_str("[]");
                selectors.push(format!("[{i}]"));
            }
            PatternSeg::Ident { key, value } => {
                out.push_str("[]");
                let mut s = String::new();
                push_ident(&mut s, &key, &value);
                selectors.push(s);
            }
            // Change paths never hold `..`; a path that does is kept as written.
            PatternSeg::Descendant(_) => return keep(),
        }
    }
    NormalisedPath {
        path: out,
        selectors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_paths_write_elements_as_brackets() {
        let n = normalise_path("$.data.users[id=42].tags[3].name");
        assert_eq!(n.path, "$.data.users[].tags[].name");
        assert_eq!(n.selectors, vec!["[id=42]".to_owned(), "[3]".to_owned()]);
        let n = normalise_path("$[slug=\"a b\"][\"x y\"]");
        assert_eq!(n.path, "$[][\"x y\"]");
        assert_eq!(n.selectors, vec!["[slug=\"a b\"]".to_owned()]);
        assert_eq!(normalise_path("$.a[].b").path, "$.a[].b");
        assert_eq!(normalise_path("status").path, "status");
        assert_eq!(normalise_path("headers.etag").path, "headers.etag");
        assert_eq!(normalise_path("$").path, "$");
        // Items paired by their own value (identity key `.`).
        let n = normalise_path("$.tags[.=\"a b\"]");
        assert_eq!(n.path, "$.tags[]");
        assert_eq!(n.selectors, vec!["[.=\"a b\"]".to_owned()]);
    }
}
