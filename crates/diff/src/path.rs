//! Change paths: `$.data.users[id=42].email`, `$["key with.dots"]`, `$[0]`, `$.items[]`,
//! `status`, `headers.<name>`. The engine keeps a stack of [`Seg`]ments and renders a path string
//! only when it emits a change.

use crate::node::Num;

/// One step of a body path, borrowed from the documents being compared.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seg<'a> {
    /// An object member.
    Key(&'a str),
    /// A position-paired array element (0-based).
    Index(usize),
    /// An identity-paired array element: `[key=value]`.
    Ident { key: &'a str, value: IdentValue<'a> },
    /// The merged elements of an array (schema mode): `[]`.
    Merged,
}

/// The value of an identity key: a string or a number; for items paired by their own value
/// (identity key `.`), also a boolean or `null`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum IdentValue<'a> {
    Str(&'a str),
    Num(Num<'a>),
    Bool(bool),
    Null,
}

impl IdentValue<'_> {
    /// The text the path shows (`42` and `"42"` both show `42`, `true` and `"true"` both
    /// `true`).
    pub(crate) fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            IdentValue::Str(s) => std::borrow::Cow::Borrowed(s),
            IdentValue::Num(n) => n.text(),
            IdentValue::Bool(true) => std::borrow::Cow::Borrowed("true"),
            IdentValue::Bool(false) => std::borrow::Cow::Borrowed("false"),
            IdentValue::Null => std::borrow::Cow::Borrowed("null"),
        }
    }
}

/// True when a key can be written after a dot: `[A-Za-z_][A-Za-z0-9_-]*`.
pub(crate) fn is_plain_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    matches!(bytes.next(), Some(b'A'..=b'Z' | b'a'..=b'z' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// True when an identity value can be written raw: `[A-Za-z0-9_.-]+`.
pub(crate) fn is_plain_value(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A JSON string literal with non-ASCII characters kept raw.
pub(crate) fn string_literal(text: &str, out: &mut String) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends one segment to a rendered path.
pub(crate) fn push_seg(out: &mut String, seg: &Seg<'_>) {
    match seg {
        Seg::Key(k) => push_key(out, k),
        Seg::Index(i) => {
            out.push('[');
            out.push_str(&i.to_string());
            out.push(']');
        }
        Seg::Ident { key, value } => push_ident(out, key, &value.text()),
        Seg::Merged => out.push_str("[]"),
    }
}

pub(crate) fn push_key(out: &mut String, key: &str) {
    if is_plain_key(key) {
        out.push('.');
        out.push_str(key);
    } else {
        out.push('[');
        string_literal(key, out);
        out.push(']');
    }
}

pub(crate) fn push_ident(out: &mut String, key: &str, text: &str) {
    out.push('[');
    out.push_str(key);
    out.push('=');
    if is_plain_value(text) {
        out.push_str(text);
    } else {
        string_literal(text, out);
    }
    out.push(']');
}

/// Renders a body path.
pub(crate) fn render(segs: &[Seg<'_>], last: Option<Seg<'_>>) -> String {
    let mut out = String::with_capacity(32);
    out.push('$');
    for seg in segs.iter().chain(last.as_ref()) {
        push_seg(&mut out, seg);
    }
    out
}

/// Renders a body path with every element segment (keyed or positional) written `[]`: the path
/// schema mode would report the same place at.
pub(crate) fn render_normalised(segs: &[Seg<'_>], last: Option<Seg<'_>>) -> String {
    let mut out = String::with_capacity(32);
    out.push('$');
    for seg in segs.iter().chain(last.as_ref()) {
        match seg {
            Seg::Key(k) => push_key(&mut out, k),
            Seg::Index(_) | Seg::Ident { .. } | Seg::Merged => out.push_str("[]"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_written_as_d9_says() {
        let segs = [
            Seg::Key("data"),
            Seg::Key("users"),
            Seg::Ident {
                key: "id",
                value: IdentValue::Num(Num::Token("42")),
            },
            Seg::Key("email"),
        ];
        assert_eq!(render(&segs, None), "$.data.users[id=42].email");
        assert_eq!(
            render(&[Seg::Key("a"), Seg::Key("b c")], None),
            "$.a[\"b c\"]"
        );
        assert_eq!(
            render(&[Seg::Key("key with.dots")], None),
            "$[\"key with.dots\"]"
        );
        assert_eq!(render(&[Seg::Key("héllo")], None), "$[\"héllo\"]");
        assert_eq!(render(&[Seg::Key("1a")], None), "$[\"1a\"]");
        assert_eq!(render(&[Seg::Key("_a-1")], None), "$._a-1");
        assert_eq!(render(&[Seg::Key("")], None), "$[\"\"]");
        assert_eq!(render(&[], Some(Seg::Index(0))), "$[0]");
        assert_eq!(render(&[], Some(Seg::Merged)), "$[]");
        assert_eq!(
            render(&[Seg::Key("users"), Seg::Merged, Seg::Key("email")], None),
            "$.users[].email"
        );
        let ident = |v| Seg::Ident {
            key: "slug",
            value: IdentValue::Str(v),
        };
        assert_eq!(render(&[], Some(ident("a-b.c_1"))), "$[slug=a-b.c_1]");
        assert_eq!(render(&[], Some(ident("a b"))), "$[slug=\"a b\"]");
        assert_eq!(render(&[], Some(ident("é"))), "$[slug=\"é\"]");
        assert_eq!(render(&[], Some(ident("q\"\\"))), "$[slug=\"q\\\"\\\\\"]");
        assert_eq!(render(&[], Some(ident(""))), "$[slug=\"\"]");
        let num = Seg::Ident {
            key: "id",
            value: IdentValue::Num(Num::Token("1e+5")),
        };
        assert_eq!(render(&[], Some(num)), "$[id=\"1e+5\"]");
        // Items paired by their own value (identity key `.`).
        let by_value = |value| Seg::Ident { key: ".", value };
        let tags = [Seg::Key("tags")];
        assert_eq!(
            render(&tags, Some(by_value(IdentValue::Str("beta")))),
            "$.tags[.=beta]"
        );
        assert_eq!(
            render(&tags, Some(by_value(IdentValue::Str("a b")))),
            "$.tags[.=\"a b\"]"
        );
        assert_eq!(
            render(&tags, Some(by_value(IdentValue::Bool(false)))),
            "$.tags[.=false]"
        );
        assert_eq!(
            render(&tags, Some(by_value(IdentValue::Null))),
            "$.tags[.=null]"
        );
    }

    #[test]
    fn normalised_segments_write_elements_as_brackets() {
        let segs = [
            Seg::Key("u"),
            Seg::Ident {
                key: "id",
                value: IdentValue::Str("x"),
            },
            Seg::Key("v"),
        ];
        assert_eq!(render_normalised(&segs, Some(Seg::Index(2))), "$.u[].v[]");
    }
}
